//! A full disk is an error, never a success: on a real, small tmpfs every writing command
//! fails naming the full device, the log stays readable as it was, and everything works
//! again once space is freed. (The library on a simulated disk filling up at every
//! operation: `tests/it/full_disk.rs`.)

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use annals::Store;

use crate::annals;

/// What the command line says when the disk is full, before the log's path.
const NO_SPACE: &str = "no space left on the device holding";

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
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    drop(store);
}
