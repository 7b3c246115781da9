//! A cut survives a crash at any point: on the simulated disk, a crash at every sync and at
//! every write of the cut's transaction (losing all, some, or a torn part of what was not
//! synced), and an I/O error at each. Afterwards the log is either as before the cut or cut,
//! it verifies, and when it is cut its archive file is whole and is the log's history
//! (`verify --archive`). (SIGKILL of the real `annals archive` at seeded moments, and its
//! rerun: `cli/tests/cli/crash.rs`.)

use std::path::Path;

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
    let report = annals::Audit::of(&store)
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
            let found = annals::archive::Archives::of(&store)
                .verify(&[archive.to_owned()], &mut |_| {})
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
    let _cut = annals::archive::Archives::of(&store)
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
        let result = annals::archive::Archives::of(&store).archive_before(CUT, &archive);
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

/// Every position below `before` that reads back after a cut, with its record's hash: the
/// records a projection still reads, which the cut kept.
fn kept_records(store: &Store, before: Position) -> Vec<(Position, annals::log::Digest)> {
    let snapshot = store.snapshot().expect("snapshot");
    (0..before.0)
        .map(Position)
        .filter_map(|position| match snapshot.get(position) {
            Ok(Some(record)) => Some((position, record.hash)),
            Ok(None) => panic!("position {position} below the head reads as past it"),
            Err(annals::Error::Archive(annals::error::ArchiveError::Archived { .. })) => None,
            Err(error) => panic!("position {position}: {error}"),
        })
        .collect()
}

/// The rows of a table of the log, from its footprint.
fn rows(store: &Store, table: &str) -> u64 {
    let footprint = annals::maintenance::Footprint::of(store).expect("footprint");
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
    let before = Position(store.snapshot().expect("head").head().expect("head").next.0 - 300);
    store.close().expect("close");
    let image = disk.image_after_restart();
    let dir = tempfile::tempdir().expect("folder");

    let dry = SimDisk::new(image.clone(), Fault::None);
    let store = open_on(&dry).expect("open");
    let syncs_open = dry.syncs();
    let _cut = annals::archive::Archives::of(&store)
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
            let _crashed = annals::archive::Archives::of(&store).archive_before(before, &archive);
            drop(store);
            let disk = SimDisk::new(disk.image_after_power_loss(), Fault::None);
            let store = open_on(&disk).unwrap_or_else(|error| panic!("{what}: reopen: {error}"));
            let report = annals::Audit::of(&store).verify().expect("verify");
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
            let _done = annals::archive::Archives::of(&store)
                .archive_before(before, &archive)
                .expect("the rerun");
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
