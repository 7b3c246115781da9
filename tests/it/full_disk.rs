//! A full disk is an error, never a success. On the simulated disk filling up at every
//! operation of a workload (open, append, command, the async writer, rebuild, close), each
//! call either succeeds or fails with `Error::NoSpace` naming the log; a fault that struck is
//! reported by some call (closing included); the log restarts sound with everything
//! acknowledged, and takes writes once space is freed. On a real, small tmpfs every writing
//! command of the CLI fails naming the full device, the log stays readable as it was, and
//! everything works again once space is freed.

use annals::testing::setup::ExpectDone;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use annals::leases::LeaseCommand;
use annals::testing::faults::base_image;
use annals::testing::sim::{Fault, SimDisk, Trigger};
use annals::writer::{Writer, WriterOptions};
use annals::{ExpectedVersion, Head, Position, Store, StoreOptions};

use crate::common::event;

fn options() -> StoreOptions {
    StoreOptions {
        create: true,
        ..StoreOptions::default()
    }
}

const NO_SPACE: &str = "no space left on the device holding";

/// Each call of the workload: `Ok` with the head it left when it wrote, or the error's text.
fn workload(disk: &SimDisk) -> Vec<Result<Option<Head>, String>> {
    let mut calls = Vec::new();
    let store = match Store::open_with_backend(disk.backend(), options()) {
        Ok(store) => Arc::new(store),
        Err(error) => return vec![Err(error.to_string())],
    };
    let head = |store: &Store| store.head().ok();
    let appended = store.append(
        "disk/raw",
        ExpectedVersion::Any,
        &[event("disk.raw", 1, b"x")],
    );
    calls.push(appended.map(|_| head(&store)).map_err(|e| e.to_string()));
    let command = LeaseCommand::Acquire {
        resource: "disk".into(),
        holder: "a".into(),
        ttl_ms: 1_000,
        now_ms: 5_000,
    };
    calls.push(
        store
            .execute(&command)
            .map(|_| head(&store))
            .map_err(|e| e.to_string()),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    match Writer::start(Arc::clone(&store), WriterOptions::default()) {
        Ok(writer) => {
            let written = runtime.block_on(writer.append(
                "disk/writer",
                ExpectedVersion::Any,
                vec![event("disk.writer", 2, b"y")],
            ));
            calls.push(written.map(|_| head(&store)).map_err(|e| e.to_string()));
            let closed = runtime.block_on(writer.close());
            calls.push(closed.map(|()| None).map_err(|e| e.to_string()));
        }
        Err(error) => calls.push(Err(error.to_string())),
    }
    calls.push(
        store
            .rebuild(None)
            .map(|()| head(&store))
            .map_err(|e| e.to_string()),
    );
    match Arc::try_unwrap(store) {
        Ok(store) => calls.push(store.close().map(|()| None).map_err(|e| e.to_string())),
        Err(_) => panic!("the writer still holds the store"),
    }
    calls
}

fn reopened(image: Vec<u8>) -> Store {
    Store::open_with_backend(SimDisk::new(image, Fault::None).backend(), options())
        .unwrap_or_else(|error| panic!("the log does not reopen: {error}"))
}

#[test]
fn a_simulated_disk_filling_up_at_any_operation_is_an_error_naming_it_and_loses_nothing() {
    let (mut k, mut struck, mut close_alone) = (1, 0, 0);
    loop {
        let disk = SimDisk::new(base_image().to_vec(), Fault::NoSpace(Trigger::Op(k)));
        let calls = workload(&disk);
        if !disk.struck() {
            assert!(calls.iter().all(Result::is_ok), "{calls:?}");
            break;
        }
        struck += 1;
        let failed: Vec<&String> = calls.iter().filter_map(|c| c.as_ref().err()).collect();
        assert!(
            !failed.is_empty(),
            "op {k}: the disk filled up, every call succeeded"
        );
        for error in &failed {
            assert!(error.contains(NO_SPACE), "op {k}: {error}: {calls:?}");
        }
        if failed.len() == 1 && calls.last().is_some_and(Result::is_err) {
            close_alone += 1;
        }
        // A restart finds every acknowledged write, and catches up what a failed rebuild
        // left behind.
        let store = reopened(disk.image_after_restart());
        let report = store.verify().unwrap();
        assert!(
            report.is_sound() && report.behind.is_empty(),
            "op {k}: {report:?}"
        );
        for head in calls.iter().filter_map(|c| c.clone().ok().flatten()) {
            let last = store
                .get(Position(head.next.0 - 1))
                .unwrap()
                .map(|r| r.hash);
            assert_eq!(
                last,
                Some(head.hash),
                "op {k}: an acknowledged write is lost"
            );
        }
        drop(store);
        // Without a restart: space freed, the same disk takes writes again.
        disk.free_space();
        let store = reopened(disk.image_after_restart());
        store
            .append(
                "disk/after",
                ExpectedVersion::Any,
                &[event("disk.after", 3, b"z")],
            )
            .unwrap()
            .expect_done();
        assert!(store.verify().unwrap().is_sound(), "op {k}");
        k += 1;
        assert!(k < 5_000, "the workload never completes");
    }
    assert!(struck > 20, "the disk filled up only {struck} times");
    assert!(close_alone > 0, "no fault struck while the store closed");
    eprintln!("full simulated disk: {struck} fill points, {close_alone} reported only by close");
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Mounts a tmpfs of `kib` KiB at `dir`; `None` (with the reason printed) where this
/// process may not mount (not root).
fn small_tmpfs(dir: &Path, kib: u64) -> Option<Mount> {
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
        .arg(dir)
        .output();
    match mounted {
        Ok(output) if output.status.success() => Some(Mount(dir.to_path_buf())),
        Ok(output) => {
            eprintln!(
                "skipped: cannot mount a tmpfs (not root?): {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
            None
        }
        Err(error) => {
            eprintln!("skipped: cannot run mount: {error}");
            None
        }
    }
}

fn annals(args: &[&str]) -> Output {
    Command::new(crate::annals_bin::annals())
        .args(args)
        .output()
        .expect("run annals")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Fills the file system holding `path` with the file at `path` until it refuses more.
/// What `annals stats` says of the records (not of the file's size, which a failed write
/// may change).
fn records_of(db: &str) -> String {
    let output = annals(&["stats", db]);
    assert!(output.status.success(), "stats: {}", text(&output.stderr));
    text(&output.stdout)
        .lines()
        .filter(|line| !line.starts_with("file bytes"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn fill(path: &Path) {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    let chunk = vec![0xA5u8; 4096];
    while file.write_all(&chunk).is_ok() {}
    let _ = file.sync_all();
}

#[test]
fn every_writing_command_on_a_full_tmpfs_fails_naming_the_disk_and_the_log_recovers() {
    let scratch = tempfile::tempdir().unwrap();
    let mount = scratch.path().join("disk");
    fs::create_dir(&mount).unwrap();
    let Some(_mount) = small_tmpfs(&mount, 24 * 1024) else {
        return;
    };
    let log = mount.join("log.redb");
    let db = log.to_str().unwrap();
    let made = annals(&["demo", db, "--records", "2000"]);
    assert!(made.status.success(), "{}", text(&made.stderr));
    // An export kept off the full disk, to import from.
    let export = scratch.path().join("log.export");
    let exported = annals(&["export", db, export.to_str().unwrap()]);
    assert!(exported.status.success(), "{}", text(&exported.stderr));
    let mut stats = records_of(db);
    let mut leases = annals(&["state", db, "leases", "--json"]).stdout;
    let filler = mount.join("filler");
    fill(&filler);
    let new_log = mount.join("new.redb");
    let imported = mount.join("imported.redb");
    let commands: [(&str, Vec<&str>, &Path); 5] = [
        (
            "demo",
            vec!["demo", db, "--records", "3000", "--force"],
            &log,
        ),
        ("rebuild", vec!["rebuild", db], &log),
        (
            "append creating a log",
            vec!["append", new_log.to_str().unwrap(), "s", "k", "x"],
            &new_log,
        ),
        (
            "import into a new log",
            vec![
                "import",
                export.to_str().unwrap(),
                imported.to_str().unwrap(),
            ],
            &imported,
        ),
        ("append", vec!["append", db, "s", "k", "x"], &log),
    ];
    for (what, args, path) in &commands {
        // Whatever a failed command gave back (redb trims the file it grew) is taken again.
        fill(&filler);
        let output = annals(args);
        let said = text(&output.stderr);
        let named = format!("{NO_SPACE} {}", path.display());
        match output.status.code() {
            // A single append may fit in pages the file had free; what succeeds is there.
            Some(0) if *what == "append" => {}
            Some(2) if said.contains(&named) => {}
            code => panic!("{what} on a full disk: exit {code:?}: {said}"),
        }
        // The log reads as it did: stats and verify work, and a projection is shown as it
        // was or refused as behind, never half-built.
        let verify = annals(&["verify", db]);
        assert_eq!(
            verify.status.code(),
            Some(0),
            "{what}: {}",
            text(&verify.stdout)
        );
        if output.status.success() {
            continue;
        }
        if *what == "demo" {
            // The demo's transactions before the one that found the disk full stand.
            stats = records_of(db);
            leases = annals(&["state", db, "leases", "--json"]).stdout;
        }
        assert_eq!(records_of(db), stats, "{what} changed the log");
        let state = annals(&["state", db, "leases", "--json"]);
        match state.status.code() {
            Some(0) => assert_eq!(state.stdout, leases, "{what}: rows changed"),
            Some(1) => assert!(text(&state.stderr).contains("is behind the log")),
            code => panic!("{what}: state exit {code:?}: {}", text(&state.stderr)),
        }
        assert!(!new_log.exists() || *what != "append creating a log");
    }
    fs::remove_file(&filler).unwrap();
    // Space freed: the same commands work, and a writable open catches up the projections.
    for (what, args, _) in &commands {
        let output = annals(args);
        assert!(output.status.success(), "{what}: {}", text(&output.stderr));
    }
    let verify = annals(&["verify", db]);
    let said = text(&verify.stdout);
    assert!(
        verify.status.success() && !said.contains("behind"),
        "{said}"
    );
    let store = Store::open_read_only(&log).unwrap();
    assert!(store.verify().unwrap().is_sound());
    drop(store);
}
