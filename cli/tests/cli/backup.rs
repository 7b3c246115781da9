//! `annals backup` beside a journaling writer (the test's own store): its copy holds the
//! commits only the journal holds yet. (The writer's own backup, and every other backup:
//! `tests/it/backup.rs`.)

use annals::{Direction, Position, Store};

/// `annals backup` in another process reads the journal's synced frames with the file: its
/// copy is sound and is the same log, every record, index, tree and projection row.
#[test]
fn a_backup_in_another_process_holds_the_commits_only_the_journal_holds_yet() {
    let log = crate::Log::new();
    let store = annals::testing::setup::journal_only_log(&log.db);
    let theirs = log.dir.path().join("theirs.redb");
    log.ok("backup", &[crate::path(&theirs)]);
    // The reader applied the frames as recovery does, several to a transaction, so its copy
    // packs them into fewer segments than the writer's commits did: the same log, every
    // record, index, tree and projection row, in segments of its own.
    let theirs = Store::open_read_only(&theirs).unwrap();
    let report = annals::Audit::of(&theirs).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
    assert_eq!(
        theirs.snapshot().unwrap().head().unwrap(),
        store.snapshot().unwrap().head().unwrap()
    );
    let hashes = |store: &Store| -> Vec<_> {
        store
            .snapshot()
            .unwrap()
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|record| record.hash)
            .collect()
    };
    assert_eq!(hashes(&theirs), hashes(&store));
    let rows_but_segments = |store: &Store| -> Vec<(String, u64)> {
        let mut tables: Vec<(String, u64)> = annals::maintenance::Footprint::of(store)
            .unwrap()
            .tables
            .into_iter()
            .filter(|table| table.name != "annals.segments")
            .map(|table| (table.name, table.rows))
            .collect();
        tables.sort();
        tables
    };
    assert_eq!(rows_but_segments(&theirs), rows_but_segments(&store));
}
