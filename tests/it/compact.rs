//! Compaction (`Store::compact`; `annals compact`'s side is `cli/tests/cli/compact.rs`): a log
//! with free pages gives bytes back and reads the same record for record; a log a writer in
//! another process has open is refused and left as it was; and a crash at every counted operation of a compaction on the simulated disk
//! (with unsynced writes dropped, kept at random or torn) leaves a log that opens, verifies
//! sound and holds every record.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use annals::testing::internals::demo;
use annals::testing::sim::{Fault, Loss, SimDisk, Trigger};
use annals::{
    Direction, Error, Position, Sharing, Store, StoreOptions, error::StoreError, log::Digest,
};

/// The hash of every record, in order: the log's content, compared before and after.
fn record_hashes(store: &Store) -> Vec<Digest> {
    store
        .snapshot()
        .expect("read the log")
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .expect("read the log")
        .iter()
        .map(|record| record.hash)
        .collect()
}

/// What must be the same after a compaction: every record, the head and the Merkle root.
fn content(store: &Store) -> (Vec<Digest>, Digest) {
    let head = store
        .snapshot()
        .expect("the head")
        .head()
        .expect("the head");
    let root = store
        .snapshot()
        .and_then(|snapshot| snapshot.merkle_root(head.next.0))
        .expect("the root");
    (record_hashes(store), root)
}

/// A demo log written live (a durable commit per command) at `path`, then rebuilt: both leave
/// free pages behind.
fn demo_log(path: &Path, records: u64) {
    let store = Store::open(path).expect("a new log");
    demo::run(&store, records, |_| {}).expect("the demo");
    annals::maintenance::Rebuild::of(&store)
        .run(None)
        .expect("a rebuild");
    store.close().expect("close");
}

/// The command line's `annals compact` and its report: `cli/tests/cli/compact.rs`.
#[test]
fn compaction_reclaims_free_pages_and_the_log_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    demo_log(&path, 2_000);
    let before = content(&Store::open_read_only(&path).unwrap());
    let bytes_before = std::fs::metadata(&path).unwrap().len();

    let compaction =
        annals::maintenance::Compaction::of_file(&path, std::time::Duration::ZERO).unwrap();
    let bytes_after = std::fs::metadata(&path).unwrap().len();
    assert!(
        compaction.bytes_after < compaction.bytes_before,
        "nothing reclaimed: {compaction:?}"
    );
    assert_eq!(compaction.bytes_before, bytes_before);
    assert_eq!(compaction.bytes_after, bytes_after);

    let store = Store::open_read_only(&path).unwrap();
    assert_eq!(content(&store), before);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn compact_needs_an_exclusive_store() {
    let (_dir, mut store) = crate::common::store();
    let refused = annals::maintenance::Compaction::run(&mut store).unwrap_err();
    assert!(
        matches!(
            refused,
            Error::Store(StoreError::CompactionNeedsExclusive {
                sharing: Sharing::SingleWriter
            })
        ),
        "{refused}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut exclusive = crate::common::open_exclusive(&dir.path().join("log.redb"));
    crate::common::append_one(&exclusive, "s", b"x");
    let snapshot = exclusive.snapshot().unwrap();
    // A snapshot of this process pins pages: compaction waits for none.
    let busy = annals::maintenance::Compaction::run(&mut exclusive).unwrap_err();
    assert!(
        matches!(busy, Error::Store(StoreError::CompactionBusy)),
        "{busy}"
    );
    drop(snapshot);
    assert!(annals::maintenance::Compaction::run(&mut exclusive).is_ok());
}

/// Beside a writer in another process, compaction is refused as held; once nobody has the log
/// open it compacts. (`annals compact` beside a reader: `cli/tests/cli/compact.rs`.)
#[test]
fn compaction_is_refused_while_another_process_has_the_log_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    demo_log(&path, 500);

    // A writer in another process, single-writer.
    let mut writer = Command::new(crate::annals_bin::testing())
        .arg("crash-writer")
        .arg(&path)
        .args(["--tasks", "1", "--sharing", "single-writer"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut reports = BufReader::new(writer.stdout.take().unwrap()).lines();
    let first = reports.next().expect("the writer reports").unwrap();
    assert!(first.starts_with("durable "), "{first}");
    // Its further reports are read and dropped, so that a full pipe never stops it.
    let drain = std::thread::spawn(move || reports.for_each(drop));
    let held =
        annals::maintenance::Compaction::of_file(&path, std::time::Duration::ZERO).unwrap_err();
    assert!(
        matches!(held, Error::Store(StoreError::CompactionHeld { .. })),
        "{held}"
    );
    writer.kill().unwrap();
    writer.wait().unwrap();
    drain.join().unwrap();

    // Once nobody has it open, it compacts.
    let compacted =
        annals::maintenance::Compaction::of_file(&path, std::time::Duration::ZERO).unwrap();
    assert!(compacted.bytes_after <= compacted.bytes_before);
    assert!(
        annals::Audit::of(&Store::open_read_only(&path).unwrap())
            .verify()
            .unwrap()
            .is_sound()
    );
}

fn options() -> StoreOptions {
    StoreOptions {
        create: true,
        ..StoreOptions::default()
    }
}

/// The image of a small demo log on the simulated disk, written live and rebuilt.
fn demo_image(records: u64) -> Vec<u8> {
    let disk = SimDisk::new(Vec::new(), Fault::None);
    let store = Store::open_with_backend(disk.backend(), options()).unwrap();
    demo::run(&store, records, |_| {}).unwrap();
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    store.close().unwrap();
    disk.image_after_restart()
}

/// Opens `image`, compacts it and closes it while `fault` strikes. Returns the disk and the
/// counted operations made before the compaction began.
fn compact_on(image: &[u8], fault: Fault) -> (SimDisk, u64, bool) {
    let disk = SimDisk::new(image.to_vec(), fault);
    let Ok(mut store) = Store::open_with_backend(disk.backend(), options()) else {
        return (disk, 0, false);
    };
    let opened_at = disk.ops();
    let compacted = annals::maintenance::Compaction::run(&mut store)
        .is_ok_and(|compaction| compaction.moved_pages);
    let closed = store.close().is_ok();
    (disk, opened_at, compacted && closed)
}

/// Opens `image` after a restart and checks it holds `expected`, verifies sound and can be
/// compacted again.
fn check_whole(image: &[u8], expected: &(Vec<Digest>, Digest), at: &str) {
    let disk = SimDisk::new(image.to_vec(), Fault::None);
    let mut store = Store::open_with_backend(disk.backend(), options())
        .unwrap_or_else(|error| panic!("{at}: the log does not reopen: {error}"));
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{at}: {:?}", report.problem);
    assert!(&content(&store) == expected, "{at}: the records changed");
    // What compacting reclaims is not this check's concern: only that it succeeds and
    // leaves the records as they were.
    let _ = annals::maintenance::Compaction::run(&mut store)
        .unwrap_or_else(|error| panic!("{at}: compacting again: {error}"));
    assert!(&content(&store) == expected, "{at}: the records changed");
}

#[test]
fn a_crash_at_any_point_of_a_compaction_leaves_every_record() {
    let image = demo_image(600);
    let expected = {
        let disk = SimDisk::new(image.clone(), Fault::None);
        content(&Store::open_with_backend(disk.backend(), options()).unwrap())
    };
    // A run without a fault: the compaction moves pages and shrinks the image; its counted
    // operations are the crash points.
    let (dry, opened_at, compacted) = compact_on(&image, Fault::None);
    assert!(compacted, "the compaction moved no page");
    let after = dry.image_after_restart();
    assert!(
        after.len() < image.len(),
        "{} -> {}",
        image.len(),
        after.len()
    );
    check_whole(&after, &expected, "no fault");
    let ops = dry.ops();
    let mut struck = 0;
    for k in opened_at + 1..=ops {
        let loss = match k % 3 {
            0 => Loss::DropUnsynced,
            1 => Loss::KeepSome(k),
            _ => Loss::TearLast(k),
        };
        let (disk, _, _) = compact_on(&image, Fault::Crash(Trigger::Op(k), loss));
        assert!(disk.struck(), "the crash at operation {k} never struck");
        struck += 1;
        check_whole(
            &disk.image_after_restart(),
            &expected,
            &format!("crash at operation {k} ({loss:?})"),
        );
    }
    assert_eq!(struck, ops - opened_at);
    eprintln!("compaction: crashed at each of its {struck} operations");
}
