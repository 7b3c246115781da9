//! Sharing modes inside one process: what each mode allows and refuses with a typed error,
//! a read-only open that never writes the file, and multi-writer stores that keep every
//! projection true when the other writer runs other projections. Processes proper are in
//! `processes.rs`.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::projection::{Table, WriteTables};
use annals::{
    Durability, Error, ExpectedVersion, Record, Result, Sharing, Store, StoreOptions, Writer,
    error::OpenError, error::StoreError, projection::Projection, writer::WriterOptions,
};

use crate::common::{append_one, event};

#[test]
fn sharing_modes_parse_from_their_names_and_print_them() {
    for sharing in [
        Sharing::Exclusive,
        Sharing::SingleWriter,
        Sharing::MultiWriter,
    ] {
        assert_eq!(sharing.to_string().parse::<Sharing>(), Ok(sharing));
    }
    assert_eq!(Sharing::default(), Sharing::SingleWriter);
    assert!("shared".parse::<Sharing>().is_err());
}

#[test]
fn a_deferred_commit_in_a_shared_mode_is_refused_naming_the_mode_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(Store::open(dir.path().join("log.redb")).unwrap());
    let deferred = store.write_with(Durability::Deferred, |session| {
        session.append("s", ExpectedVersion::Any, &[event("test.kind", 0, b"")])
    });
    match deferred {
        Err(Error::Store(StoreError::DeferredNeedsExclusive { sharing })) => {
            assert_eq!(sharing, Sharing::SingleWriter)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 0);
    let options = WriterOptions {
        durability: Durability::Deferred,
        ..WriterOptions::default()
    };
    assert!(matches!(
        Writer::start(Arc::clone(&store), options),
        Err(Error::Store(StoreError::DeferredNeedsExclusive { .. }))
    ));
}

#[test]
fn a_read_only_open_and_close_leave_the_file_byte_for_byte_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..20 {
            append_one(&store, "s", format!("{i}").as_bytes());
        }
    }
    let before = std::fs::read(&path).unwrap();
    {
        let store = Store::open_read_only(&path).unwrap();
        assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 20);
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
        assert!(matches!(
            store.append("s", ExpectedVersion::Any, &[event("test.kind", 0, b"")]),
            Err(Error::ReadOnly)
        ));
    }
    assert!(
        std::fs::read(&path).unwrap() == before,
        "a read-only open changed the file"
    );
}

#[test]
fn a_read_only_open_of_a_missing_file_a_directory_or_a_foreign_file_is_typed_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.redb");
    assert!(matches!(
        Store::open_read_only(&missing),
        Err(Error::Open(OpenError::Missing { .. }))
    ));
    assert!(!missing.exists(), "a read-only open created a file");
    let folder = dir.path().join("folder.redb");
    std::fs::create_dir(&folder).unwrap();
    assert!(matches!(
        Store::open_read_only(&folder),
        Err(Error::Open(OpenError::NotAnnalsLog { .. }))
    ));
    let foreign = dir.path().join("foreign.redb");
    std::fs::write(&foreign, b"not a log at all").unwrap();
    assert!(matches!(
        Store::open_read_only(&foreign),
        Err(Error::Open(OpenError::NotAnnalsLog { .. }))
    ));
    let half_made = dir.path().join("empty.redb");
    std::fs::write(&half_made, b"").unwrap();
    assert!(matches!(
        Store::open_read_only(&half_made),
        Err(Error::Open(OpenError::NotAnnalsLog { .. }))
    ));
    let mut names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["empty.redb", "folder.redb", "foreign.redb"]);
}

/// Counts records per kind.
struct KindCounts;
const COUNTS: Table<String, u64> = Table::new("kind_counts.counts");

impl Projection for KindCounts {
    fn name(&self) -> &'static str {
        "kind_counts"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["kind_counts.counts"]
    }
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        let count = COUNTS.get(tables, &record.kind)?.unwrap_or(0);
        COUNTS.insert(tables, &record.kind, &(count + 1))
    }
}

fn multi_writer(path: &std::path::Path, projections: Vec<Arc<dyn Projection>>) -> Store {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::MultiWriter,
        projections,
        ..StoreOptions::default()
    };
    Store::open_with(path, options).unwrap()
}

#[test]
fn multi_writers_with_other_projections_keep_each_projection_true_to_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let counting = multi_writer(&path, vec![Arc::new(KindCounts)]);
    let plain = multi_writer(&path, Vec::new());
    // Turn by turn: the plain writer's records never pass through KindCounts' apply there.
    for round in 0..5u64 {
        plain
            .append(
                "plain",
                ExpectedVersion::Any,
                &[event("test.plain", round, b"")],
            )
            .unwrap()
            .expect_done();
        counting
            .append(
                "counting",
                ExpectedVersion::Any,
                &[event("test.counting", round, b"")],
            )
            .unwrap()
            .expect_done();
    }
    plain
        .append(
            "plain",
            ExpectedVersion::Any,
            &[event("test.plain", 9, b"")],
        )
        .unwrap()
        .expect_done();
    let count = |kind: &str| {
        COUNTS
            .get(&counting.snapshot().unwrap().state(), &kind.to_owned())
            .unwrap()
    };
    // Until a drain, the counting store reads the plain writer's commits from the journal
    // they share, through its own projections: KindCounts counts them.
    assert_eq!(
        COUNTS
            .get(
                &counting.snapshot().unwrap().state(),
                &"test.plain".to_owned()
            )
            .unwrap(),
        Some(6)
    );
    // The plain writer's drain takes its commits into the file without KindCounts: a snapshot
    // refuses to read it behind until the counting store catches it up.
    plain.flush().unwrap();
    let behind = COUNTS.get(
        &counting.snapshot().unwrap().state(),
        &"test.plain".to_owned(),
    );
    assert!(
        matches!(
            behind,
            Err(annals::Error::Projection(
                annals::projection::ProjectionError::Behind { .. }
            ))
        ),
        "{behind:?}"
    );
    // Reads never write: the counting store catches up when told, or at its next write.
    annals::maintenance::Rebuild::of(&counting)
        .catch_up()
        .unwrap();
    assert_eq!(count("test.plain"), Some(6));
    counting
        .append(
            "counting",
            ExpectedVersion::Any,
            &[event("test.counting", 9, b"")],
        )
        .unwrap()
        .expect_done();
    assert_eq!(count("test.plain"), Some(6));
    assert_eq!(count("test.counting"), Some(6));
    assert!(
        annals::Audit::of(&counting).verify().unwrap().is_sound(),
        "KindCounts differs from a replay"
    );
    drop((counting, plain));
    let reopened = multi_writer(&path, vec![Arc::new(KindCounts)]);
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}

#[test]
fn a_reader_holding_a_snapshot_does_not_stop_the_writer_committing_and_sees_its_own_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let writer = Store::open(&path).unwrap();
    append_one(&writer, "s", b"first");
    let reader = Store::open_read_only(&path).unwrap();
    let held = reader.snapshot().unwrap();
    // Every commit below returns while the reader's snapshot pins the first one's pages.
    for i in 0..200u64 {
        writer
            .append("s", ExpectedVersion::Any, &[event("test.kind", i, b"more")])
            .unwrap()
            .expect_done();
    }
    assert_eq!(held.head().unwrap().next.0, 1, "a held snapshot moved");
    assert_eq!(reader.snapshot().unwrap().head().unwrap().next.0, 201);
    drop(held);
    assert!(annals::Audit::of(&reader).verify().unwrap().is_sound());
}

#[test]
fn a_multi_writer_idle_while_another_drains_and_empties_the_journal_decides_on_its_commits() {
    use annals::leases::{LeaseCommand, LeaseOutcome};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let (first, second) = (
        multi_writer(&path, Vec::new()),
        multi_writer(&path, Vec::new()),
    );
    let acquire = |resource: &str, holder: &str| LeaseCommand::Acquire {
        resource: resource.into(),
        holder: holder.into(),
        ttl_ms: 60_000,
        now_ms: 1_000_000,
    };
    let granted = |outcome: annals::Result<LeaseOutcome>| {
        assert!(
            matches!(outcome, Ok(LeaseOutcome::Granted { .. })),
            "{outcome:?}"
        );
    };
    // The first writer's commands in a row: what it knows of the file (its latest commit, its
    // projections' checkpoints following the head) it keeps while nothing commits to the file.
    for round in 0..3 {
        granted(first.execute(&acquire(&format!("warm-{round}"), "first")));
    }
    // The second takes the lease, drains it into the file, and with its next command empties
    // the journal: the lease is now only in a commit of the file the first has not read.
    granted(second.execute(&acquire("contested", "second")));
    second.flush().unwrap();
    granted(second.execute(&acquire("other", "second")));
    let outcome = first.execute(&acquire("contested", "first"));
    assert!(
        matches!(
            outcome,
            Ok(LeaseOutcome::Refused { lease: Some(ref lease), .. }) if lease.holder == "second"
        ),
        "the first writer decided without the second's drained commit: {outcome:?}"
    );
    assert!(annals::Audit::of(&first).verify().unwrap().is_sound());
}
