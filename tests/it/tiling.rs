//! Scans check that the segments they read tile the log: a segment whose redb key was changed
//! (a one-byte flip moves it elsewhere in the key order) leaves a hole that every scan,
//! forward or backward, from the start or the middle, refuses, naming the first position it
//! needed and did not find; none of them returns with a record missing. The commands that scan
//! (`log`, `log --from`, `state --at`, `rebuild`): `cli/tests/cli/damaged.rs`.

use annals::testing::damage::move_segment;
use std::path::Path;

use redb::ReadableTable;

use annals::testing::internals::checksum::{seal_meta, unseal_meta};
use annals::testing::internals::tables::{HEAD_KEY, META};
use annals::{Direction, Position, Record, Store, audit::Problem, log::StreamVersion};

/// Commits of three records each, so segments start at 0, 3, 6, … and the head is 30.
const COMMITS: u64 = 10;
const RECORDS_PER_COMMIT: u64 = 3;
const HEAD: u64 = COMMITS * RECORDS_PER_COMMIT;

/// Writes the log: ten commits of three records, to two streams in turn.
fn write_log(path: &Path) -> Vec<Record> {
    annals::testing::setup::log_of_commits(path, COMMITS, RECORDS_PER_COMMIT)
}

/// The position a corrupt-log error names; anything else fails the test.
fn corrupt_at<T: std::fmt::Debug>(result: annals::Result<T>) -> Position {
    match result {
        Err(annals::Error::Corrupt { position, problem }) => {
            assert!(
                matches!(*problem, Problem::OutOfPlace { .. } | Problem::Missing),
                "{problem:?}"
            );
            position
        }
        other => panic!("expected a corrupt log, got {other:?}"),
    }
}

/// Every scan of the library, from `from` in `direction`: `read_all`, the `Records`
/// iterator, and its borrowing `next_view`. Each must fail at `expected`.
fn scans_fail_at(store: &Store, from: u64, direction: Direction, expected: u64) {
    let what = format!("{direction:?} from {from}");
    let read = store
        .snapshot()
        .and_then(|snapshot| snapshot.read_all(Position(from), direction, 100));
    assert_eq!(corrupt_at(read), Position(expected), "read_all {what}");
    let snapshot = store.snapshot().unwrap();
    let collected: annals::Result<Vec<Record>> = snapshot
        .records(Position(from), direction)
        .unwrap()
        .collect();
    assert_eq!(corrupt_at(collected), Position(expected), "records {what}");
    let mut records = snapshot.records(Position(from), direction).unwrap();
    let viewed = loop {
        match records.next_view() {
            Some(Ok(_)) => {}
            Some(Err(error)) => break Err::<(), _>(error),
            None => break Ok(()),
        }
    };
    assert_eq!(corrupt_at(viewed), Position(expected), "next_view {what}");
    assert!(records.next_view().is_none(), "an error ends the scan");
}

#[test]
fn a_segment_moved_past_the_head_fails_every_scan_naming_the_hole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let original = write_log(&path);
    // A flip of bit 0 of the key's sixth byte: the segment of 12..15 now sorts after the head.
    move_segment(&path, 12, 12 ^ (1 << 40));
    let store = Store::open_read_only(&path).unwrap();
    scans_fail_at(&store, 0, Direction::Forward, 12);
    scans_fail_at(&store, 5, Direction::Forward, 12);
    scans_fail_at(&store, 12, Direction::Forward, 12);
    scans_fail_at(&store, 13, Direction::Forward, 13);
    // Backward from the end, the moved segment is the first read: it lies past the head.
    scans_fail_at(&store, u64::MAX, Direction::Backward, HEAD);
    scans_fail_at(&store, 20, Direction::Backward, 14);
    scans_fail_at(&store, 14, Direction::Backward, 14);
    // Scans that do not reach the hole hand out the records they read, unchanged.
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .read_all(Position(15), Direction::Forward, 4)
            .unwrap(),
        original[15..19]
    );
    assert_eq!(
        store
            .snapshot()
            .unwrap()
            .read_all(Position(11), Direction::Backward, 100)
            .unwrap(),
        original[..12].iter().rev().cloned().collect::<Vec<_>>()
    );
    // Point and stream reads go through the index and refuse the hole too.
    assert_eq!(
        corrupt_at(
            store
                .snapshot()
                .and_then(|snapshot| snapshot.get(Position(13)))
        ),
        Position(13)
    );
    let stream = store.snapshot().and_then(|snapshot| {
        snapshot.read_stream("even", StreamVersion(0), Direction::Forward, 100)
    });
    assert_eq!(corrupt_at(stream), Position(12));
    // Replays stop at the hole: `state --at` and `rebuild` build nothing from such a log.
    let at = annals::Audit::of(&store).state_json("leases", Some(Position(20)));
    assert_eq!(corrupt_at(at), Position(12));
    assert!(
        annals::Audit::of(&store)
            .state_json("leases", Some(Position(12)))
            .is_ok()
    );
    drop(store);
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    let before = annals::Audit::of(&store)
        .state_json("leases", None)
        .unwrap();
    assert_eq!(
        corrupt_at(annals::maintenance::Rebuild::of(&store).run(None)),
        Position(12)
    );
    // Refused before anything was cleared: the projections read as they did.
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("leases", None)
            .unwrap(),
        before
    );
    drop(store);
    let store = Store::open_read_only(&path).unwrap();
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("leases", None)
            .unwrap(),
        before
    );
}

#[test]
fn a_segment_moved_onto_its_neighbour_fails_every_scan_naming_the_hole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    write_log(&path);
    // A flip of bit 1: the segment of 12..15 now claims 14..17, overlapping 15..18.
    move_segment(&path, 12, 12 ^ 0b10);
    let store = Store::open_read_only(&path).unwrap();
    scans_fail_at(&store, 0, Direction::Forward, 12);
    scans_fail_at(&store, 12, Direction::Forward, 12);
    scans_fail_at(&store, u64::MAX, Direction::Backward, 14);
    scans_fail_at(&store, 16, Direction::Backward, 14);
    assert_eq!(
        corrupt_at(annals::Audit::of(&store).state_json("leases", Some(Position(HEAD)))),
        Position(12)
    );
}

#[test]
fn a_segment_past_the_head_fails_every_scan_naming_the_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    write_log(&path);
    // The head moved back over the last segment, as if it had lost its last commit.
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn.open_table(META).unwrap();
            let stored = meta.get(HEAD_KEY).unwrap().unwrap().value().to_vec();
            let mut head = unseal_meta(HEAD_KEY, &stored).unwrap().to_vec();
            head[..8].copy_from_slice(&(HEAD - 3).to_le_bytes());
            // Sealed again: the damage is the head's, not its checksum's.
            meta.insert(HEAD_KEY, seal_meta(HEAD_KEY, &head).as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let store = Store::open_read_only(&path).unwrap();
    scans_fail_at(&store, 0, Direction::Forward, HEAD - 3);
    scans_fail_at(&store, HEAD - 3, Direction::Forward, HEAD - 3);
    scans_fail_at(&store, u64::MAX, Direction::Backward, HEAD - 3);
}
