//! A cut survives a crash at any point: on the simulated disk, a crash at every sync and at
//! every write of the cut's transaction (losing all, some, or a torn part of what was not
//! synced), and an I/O error at each; and SIGKILL of the real `annals archive` at seeded
//! moments. Afterwards the log is either as before the cut or cut, it verifies, and when it
//! is cut its archive file is whole and is the log's history (`verify --archive`).

use std::path::Path;
use std::process::{Command, Stdio};

use annals::testing::internals::demo::Rng;
use annals::testing::setup::ExpectDone;
use annals::testing::sim::{Fault, Loss, SimDisk, Trigger};
use annals::{ExpectedVersion, NewEvent, Position, Store, StoreOptions};

/// Records in the log cut, and where the cut falls.
const RECORDS: u64 = 300;
const CUT: Position = Position(170);

fn open_on(disk: &SimDisk) -> annals::Result<Store> {
    Store::open_with_backend(
        disk.backend(),
        StoreOptions {
            create: true,
            ..StoreOptions::default()
        },
    )
}

/// The image of a log of [`RECORDS`] records over interleaved streams.
fn base_image() -> Vec<u8> {
    let disk = SimDisk::new(Vec::new(), Fault::None);
    let store = open_on(&disk).expect("open");
    for n in 0..RECORDS {
        let mut event = NewEvent::new("test.event", n, format!("record {n}"));
        if n.is_multiple_of(4) {
            event = event.with_idempotency_key(format!("key-{n}"));
        }
        store
            .append(&format!("s-{}", n % 7), ExpectedVersion::Any, &[event])
            .expect("append")
            .expect_done();
    }
    store.close().expect("close");
    disk.image_after_restart()
}

/// The log in `image` is either as before the cut or cut before [`CUT`]; it verifies, and a
/// cut one's archive at `archive` is whole and its history.
fn before_or_cut(image: Vec<u8>, archive: &Path, what: &str) -> bool {
    let disk = SimDisk::new(image, Fault::None);
    let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: reopen: {error}"));
    let report = store
        .verify()
        .unwrap_or_else(|error| panic!("{what}: verify: {error}"));
    assert!(report.is_sound(), "{what}: {:?}", report.problem);
    let snapshot = store.snapshot().expect("snapshot");
    let head = snapshot.head().expect("head").next;
    let start = snapshot.start();
    match (start, head) {
        (Position(0), Position(RECORDS)) => false,
        (CUT, Position(next)) if next == RECORDS + 1 => {
            // A crash between the commit and the archive's rename leaves it whole under its
            // temporary name, which a rerun gives it.
            let partial = archive.with_file_name(format!(
                "{}.partial",
                archive.file_name().unwrap().to_str().unwrap()
            ));
            if !archive.exists() {
                std::fs::rename(&partial, archive)
                    .unwrap_or_else(|error| panic!("{what}: no archive, whole or not: {error}"));
            }
            let _whole = annals::export::check(archive, &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: the archive: {error}"));
            let found = store
                .verify_archives(&[archive.to_owned()], &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: verify --archive: {error}"));
            assert_eq!(found, None, "{what}");
            true
        }
        other => panic!("{what}: neither before nor cut: start and head {other:?}"),
    }
}

#[test]
fn a_cut_crashed_or_failed_at_any_write_or_sync_leaves_the_log_before_or_cut() {
    let image = base_image();
    let dir = tempfile::tempdir().expect("folder");
    // A dry run counts the operations of the open and of the cut.
    let dry = SimDisk::new(image.clone(), Fault::None);
    let store = open_on(&dry).expect("open");
    let (ops_open, syncs_open) = (dry.ops(), dry.syncs());
    let _cut = store
        .archive_before(CUT, dir.path().join("dry"))
        .expect("cut");
    let (ops_cut, syncs_cut) = (dry.ops(), dry.syncs());
    drop(store);
    assert!(syncs_cut > syncs_open, "the cut syncs");
    let (mut cut, mut before) = (0, 0);
    let faults = crate::common::sweep_faults(syncs_open + 1..=syncs_cut, ops_open + 1..=ops_cut);
    for (n, fault) in faults.into_iter().enumerate() {
        let what = format!("{fault:?}");
        let archive = dir.path().join(format!("archive-{n}"));
        let disk = SimDisk::new(image.clone(), fault);
        let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let result = store.archive_before(CUT, &archive);
        drop(store);
        let survived = match fault {
            Fault::FailOnce(_) => disk.image_after_restart(),
            _ => disk.image_after_power_loss(),
        };
        if result.is_ok() && !matches!(fault, Fault::Crash(..)) {
            // Acknowledged: it must be there.
            assert!(
                before_or_cut(survived, &archive, &what),
                "{what}: acknowledged, not cut"
            );
            cut += 1;
            continue;
        }
        if before_or_cut(survived, &archive, &what) {
            cut += 1;
        } else {
            before += 1;
        }
    }
    // Both outcomes were reached: the sweep crossed the commit.
    assert!(cut > 0 && before > 0, "cut {cut}, before {before}");
}

fn crash_seed() -> u64 {
    // A seed given replaces the test's own: the kills are as many and checked the same.
    let seed =
        annals::testing::random::seed_to_replay("ANNALS_CRASH_SEED").unwrap_or(0x000C_0A7C_0034);
    eprintln!("crash seed {seed} (ANNALS_CRASH_SEED={seed} replays it)");
    seed
}

/// Kills of `annals archive`.
const KILLS: u64 = 16;

#[test]
fn annals_archive_killed_at_seeded_moments_leaves_the_log_before_or_cut() {
    let seed = crash_seed();
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().expect("folder");
    let source = dir.path().join("source.redb");
    let store = Store::open(&source).expect("open");
    annals::testing::internals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let head = store.head().expect("head").next;
    store.close().expect("close");
    let before = Position(head.0 / 2);
    let (mut cut, mut uncut) = (0, 0);
    for kill in 0..KILLS {
        let log = dir.path().join(format!("log-{kill}.redb"));
        std::fs::copy(&source, &log).expect("copy the log");
        let archive = dir.path().join(format!("log-{kill}.archive"));
        let mut child = Command::new(crate::annals_bin::annals())
            .arg("archive")
            .arg(&log)
            .arg("--before")
            .arg(before.0.to_string())
            .arg(&archive)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start annals");
        // Not a timing assertion: the pause only picks the moment of the kill (the first
        // kill at once, so one is always cut short).
        let delay =
            std::time::Duration::from_micros(if kill == 0 { 0 } else { rng.below(400_000) });
        std::thread::sleep(delay);
        child.kill().expect("kill");
        let _status = child.wait().expect("reap");
        let what = format!("kill {kill} after {delay:?} (seed {seed})");
        let partial = dir.path().join(format!("log-{kill}.archive.partial"));
        let store = Store::open(&log).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let report = store.verify().expect("verify");
        assert!(report.is_sound(), "{what}: {:?}", report.problem);
        let snapshot = store.snapshot().expect("snapshot");
        match (snapshot.start(), snapshot.head().expect("head").next) {
            (Position(0), found) if found == head => {
                uncut += 1;
                // The archive takes its name only once the cut has committed.
                assert!(!archive.exists(), "{what}: an archive beside an uncut log");
            }
            (start, found) if start == before && found.0 == head.0 + 1 => {
                cut += 1;
                // Whole under its name, or (killed between the commit and the rename) under
                // its temporary one.
                let whole = if archive.exists() { &archive } else { &partial };
                let _whole = annals::export::check(whole, &mut |_| {})
                    .unwrap_or_else(|error| panic!("{what}: the archive: {error}"));
            }
            other => panic!("{what}: neither before nor cut: {other:?}"),
        }
        drop(snapshot);
        drop(store);
        // The same command run again completes the cut, whatever moment the kill hit.
        let rerun = Command::new(crate::annals_bin::annals())
            .arg("archive")
            .arg(&log)
            .arg("--before")
            .arg(before.0.to_string())
            .arg(&archive)
            .output()
            .expect("run annals again");
        assert!(
            rerun.status.success(),
            "{what}: the rerun: {}",
            String::from_utf8_lossy(&rerun.stderr)
        );
        let store = Store::open(&log).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let snapshot = store.snapshot().expect("snapshot");
        assert_eq!(snapshot.start(), before, "{what}: the rerun cut the log");
        assert_eq!(
            store
                .verify_archives(std::slice::from_ref(&archive), &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: {error}")),
            None,
            "{what}"
        );
        assert!(!partial.exists(), "{what}: a temporary archive left");
    }
    eprintln!("annals archive killed {KILLS} times: {cut} cut, {uncut} before");
    assert!(uncut > 0, "the first kill, at once, leaves the log uncut");
}

/// The moment between a cut's commit and its archive's rename, made exactly: a cut whose
/// archive is put back under its temporary name. A rerun names it; a rerun of a cut that
/// finished says so and changes nothing; a different cut is refused as before.
#[test]
fn a_rerun_names_the_archive_of_a_cut_that_committed_before_a_kill() {
    let dir = tempfile::tempdir().expect("folder");
    let log = dir.path().join("log.redb");
    let store = Store::open(&log).expect("open");
    annals::testing::internals::demo::run(&store, 1_000, |_| {}).expect("demo");
    let archive = dir.path().join("log.archive");
    let report = store
        .archive_before(Position(500), &archive)
        .expect("the cut");
    store.close().expect("close");
    let partial = dir.path().join("log.archive.partial");
    std::fs::rename(&archive, &partial).expect("unname the archive");

    let run = |before: &str| {
        Command::new(crate::annals_bin::annals())
            .arg("archive")
            .arg(&log)
            .args(["--before", before])
            .arg(&archive)
            .arg("--json")
            .output()
            .expect("run annals")
    };
    let rerun = run("500");
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    assert!(archive.exists() && !partial.exists());
    let store = Store::open(&log).expect("open");
    assert_eq!(
        store.snapshot().expect("snapshot").start(),
        report.cut.before
    );
    assert_eq!(
        store
            .verify_archives(std::slice::from_ref(&archive), &mut |_| {})
            .expect("verify the archive"),
        None
    );
    drop(store);
    // Once more: the cut is done, and nothing changes.
    let again = run("500");
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(archive.exists() && !partial.exists());
    // Another cut into the same file is refused: it exists.
    let other = run("600");
    assert_eq!(
        other.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
}

/// Every position below `before` that reads back after a cut, with its record's hash: the
/// records a projection still reads, which the cut kept.
fn kept_records(store: &Store, before: Position) -> Vec<(Position, annals::Digest)> {
    let snapshot = store.snapshot().expect("snapshot");
    (0..before.0)
        .map(Position)
        .filter_map(|position| match snapshot.get(position) {
            Ok(Some(record)) => Some((position, record.hash)),
            Ok(None) => panic!("position {position} below the head reads as past it"),
            Err(annals::Error::Archive(annals::ArchiveError::Archived { .. })) => None,
            Err(error) => panic!("position {position}: {error}"),
        })
        .collect()
}

/// The rows of a table of the log, from its footprint.
fn rows(store: &Store, table: &str) -> u64 {
    let footprint = store.footprint().expect("footprint");
    footprint
        .tables
        .iter()
        .find(|found| found.name == table)
        .map_or(0, |found| found.rows)
}

#[test]
fn a_cut_crashed_while_its_segments_go_in_steps_reads_every_kept_record_and_a_rerun_finishes() {
    // A demo log: its runs read their span events back, so the cut keeps those records, and
    // its archived segments take several steps to go (about 256 KiB each on this disk).
    let disk = SimDisk::new(Vec::new(), Fault::None);
    let store = open_on(&disk).expect("open");
    annals::testing::internals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let before = Position(store.head().expect("head").next.0 - 300);
    store.close().expect("close");
    let image = disk.image_after_restart();
    let dir = tempfile::tempdir().expect("folder");

    let dry = SimDisk::new(image.clone(), Fault::None);
    let store = open_on(&dry).expect("open");
    let syncs_open = dry.syncs();
    let _cut = store
        .archive_before(before, dir.path().join("dry"))
        .expect("cut");
    let syncs_cut = dry.syncs();
    let kept = kept_records(&store, before);
    let finished = (rows(&store, "annals.segments"), rows(&store, "annals.kept"));
    drop(store);
    assert!(!kept.is_empty(), "the demo's runs keep records");

    let mut unfinished = 0;
    for sync in syncs_open + 1..=syncs_cut {
        for loss in [Loss::DropUnsynced, Loss::KeepSome(sync)] {
            let fault = Fault::Crash(Trigger::Sync(sync), loss);
            let what = format!("{fault:?}");
            // The archive's name is the dry run's, in a folder of its own.
            let folder = dir.path().join(format!("{sync}-{loss:?}"));
            std::fs::create_dir(&folder).expect("a folder");
            let archive = folder.join("dry");
            let disk = SimDisk::new(image.clone(), fault);
            let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: open: {error}"));
            let _crashed = store.archive_before(before, &archive);
            drop(store);
            let disk = SimDisk::new(disk.image_after_power_loss(), Fault::None);
            let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: reopen: {error}"));
            let report = store.verify().expect("verify");
            assert!(report.is_sound(), "{what}: {:?}", report.problem);
            if store.snapshot().expect("snapshot").start() != before {
                continue;
            }
            // Cut, finished or not: every kept record reads back whole, nothing else below.
            assert_eq!(kept_records(&store, before), kept, "{what}");
            if rows(&store, "annals.segments") > finished.0 {
                unfinished += 1;
            }
            // The same cut asked again finishes it: the file holds what an uncrashed cut left.
            let _done = store.archive_before(before, &archive).expect("the rerun");
            let found = (rows(&store, "annals.segments"), rows(&store, "annals.kept"));
            assert_eq!(found, finished, "{what}");
            assert_eq!(kept_records(&store, before), kept, "{what}");
        }
    }
    // The sweep crashed between the steps, not only before or after them.
    assert!(
        unfinished > 2,
        "{unfinished} crashes left the cut unfinished"
    );
}
