//! A refused write leaves the log as it was: every record, the head, the Merkle root, every
//! projection's tables (by digest) and checkpoints, and the file's bytes. Whatever can be
//! decided from the arguments, a read-only look at the log or the input file is decided
//! before the log is opened writable (redb rewrites its header and allocator state on a
//! writable open): an import that does not continue the log, is damaged, or holds a stream
//! version, idempotency key or payload the log cannot take; an append of a reserved kind, a
//! used key or a wrong expected version; a cut the log cannot make. The store's own refusals
//! come before it begins a write transaction, or abort it.

use annals::testing::setup::ExpectDone;
use std::fs;
use std::path::Path;

use annals::projection::Checkpoint;
use annals::testing::forgery::{
    export_range, files_named, forged_export, lease_event_from, undecodable_at,
};
use annals::testing::internals::audit::digest;
use annals::{
    Direction, Error, ExpectedVersion, NewEvent, Position, Record, Store, StoreOptions,
    error::AppendError,
    log::{Digest, Head},
};
use tempfile::TempDir;

/// Everything a log holds that a write could change, read through a read-only store.
#[derive(Debug, PartialEq)]
struct Content {
    records: Vec<Record>,
    head: Head,
    root: Digest,
    projections: Vec<(String, Digest, Option<Checkpoint>)>,
}

fn content(path: &Path) -> Content {
    let store = Store::open_read_only(path).unwrap();
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap();
    let state = store.snapshot().unwrap().state();
    Content {
        records: store
            .snapshot()
            .unwrap()
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap(),
        head,
        root: snapshot.merkle_root(head.next.0).unwrap(),
        projections: store
            .projections()
            .iter()
            .map(|p| {
                (
                    p.name().to_owned(),
                    digest(&state, p.as_ref()).unwrap(),
                    snapshot.checkpoint(p.name()).unwrap(),
                )
            })
            .collect(),
    }
}

/// A demo log of about 300 records (every domain writes), its folder, and its records.
fn demo_log() -> (TempDir, std::path::PathBuf, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    let records = annals::testing::setup::demo_log_at(&source, 300).unwrap();
    (dir, source, records)
}

fn refused_at(result: annals::Result<annals::export::ExportSummary>) -> Position {
    match result {
        Err(Error::Export(error)) => error
            .position()
            .unwrap_or_else(|| panic!("refused without a position: {error}")),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn import(file: &Path, target: &Path) -> annals::Result<annals::export::ExportSummary> {
    annals::maintenance::Import::run(file, target, &mut |_, _| {})
}

#[test]
fn an_undecodable_domain_payload_is_refused_at_its_position_and_no_log_is_made() {
    let (dir, source, records) = demo_log();
    let at = lease_event_from(&records, 20);
    let file = dir.path().join("forged");
    forged_export(&source, &records, (0, 200), &file, undecodable_at(at));
    let target = dir.path().join("copy.redb");
    assert_eq!(refused_at(import(&file, &target)), at);
    assert!(!target.exists());
    let leftovers = files_named(dir.path(), "copy.redb");
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_import_refused_before_it_writes_leaves_the_target_byte_for_byte_as_it_was() {
    let (dir, source, _) = demo_log();
    let target = dir.path().join("copy.redb");
    let first = dir.path().join("first");
    export_range(&source, &first, 0, 100);
    import(&first, &target).unwrap().expect_done();
    let before = fs::read(&target).unwrap();
    // A file that does not continue the log: it starts past its head.
    let gap = dir.path().join("gap");
    export_range(&source, &gap, 150, 200);
    assert!(matches!(import(&gap, &target), Err(Error::Export(_))));
    assert_eq!(fs::read(&target).unwrap(), before);
    // A damaged continuation: a flipped byte in its last record.
    let damaged = dir.path().join("damaged");
    export_range(&source, &damaged, 100, 200);
    let mut bytes = fs::read(&damaged).unwrap();
    let at = bytes.len() - 16 - 8 - 64 - 10;
    bytes[at] ^= 0x01;
    fs::write(&damaged, &bytes).unwrap();
    assert!(matches!(import(&damaged, &target), Err(Error::Export(_))));
    assert_eq!(fs::read(&target).unwrap(), before);
}

#[test]
fn an_import_the_log_cannot_take_is_refused_before_it_writes() {
    let (dir, source, records) = demo_log();
    let target = dir.path().join("copy.redb");
    let first = dir.path().join("first");
    export_range(&source, &first, 0, 100);
    import(&first, &target).unwrap().expect_done();
    let before = content(&target);
    let file = dir.path().join("forged");
    // A domain event whose payload does not decode, found only when it is applied.
    let at = lease_event_from(&records, 120);
    forged_export(&source, &records, (100, 200), &file, undecodable_at(at));
    let bytes = fs::read(&target).unwrap();
    assert_eq!(refused_at(import(&file, &target)), at);
    assert_eq!(content(&target), before);
    assert_eq!(
        fs::read(&target).unwrap(),
        bytes,
        "the refused import wrote"
    );
    // An idempotency key the export holds twice, found by reading the file before the log is
    // opened writable.
    forged_export(&source, &records, (100, 200), &file, |record| {
        [130, 140].contains(&record.position.0).then(|| {
            let event = NewEvent {
                kind: record.kind.clone(),
                schema: record.schema,
                at_ms: record.at_ms,
                idempotency_key: Some("twice".to_owned()),
                payload: record.payload.clone(),
            };
            (event, record.version.0)
        })
    });
    assert_eq!(refused_at(import(&file, &target)), Position(140));
    assert_eq!(
        fs::read(&target).unwrap(),
        bytes,
        "the refused import wrote"
    );
    // A stream version that skips one, found by reading the log before it is opened writable:
    // not a byte of the file changes.
    let skipped = Position(150);
    forged_export(&source, &records, (100, 200), &file, |record| {
        (record.position >= skipped && record.stream == records[150].stream).then(|| {
            let event = NewEvent {
                kind: record.kind.clone(),
                schema: record.schema,
                at_ms: record.at_ms,
                idempotency_key: record.idempotency_key.clone(),
                payload: record.payload.clone(),
            };
            (event, record.version.0 + 1)
        })
    });
    let bytes = fs::read(&target).unwrap();
    assert_eq!(refused_at(import(&file, &target)), skipped);
    assert_eq!(content(&target), before);
    assert_eq!(
        fs::read(&target).unwrap(),
        bytes,
        "the refused import wrote"
    );
    // And the log still takes the true continuation.
    let rest = dir.path().join("rest");
    export_range(&source, &rest, 100, 200);
    import(&rest, &target).unwrap().expect_done();
    assert_eq!(content(&target).records, records[..200].to_vec());
}

#[test]
fn a_refused_append_leaves_the_log_content_as_it_was() {
    let (_dir, source, records) = demo_log();
    let open = || {
        let limits = annals::log::Limits {
            payload_bytes_max: 16,
            ..annals::log::Limits::default()
        };
        let options = StoreOptions {
            limits,
            ..StoreOptions::default()
        };
        Store::open_with(&source, options).unwrap()
    };
    let keyed = |payload: &[u8]| {
        NewEvent::new("test.keyed", 1, payload.to_vec()).with_idempotency_key("the-key")
    };
    let store = open();
    store
        .append("keyed", ExpectedVersion::Any, &[keyed(b"first")])
        .unwrap()
        .expect_done();
    drop(store);
    let before = content(&source);
    let store = open();
    let late = annals::log::StreamVersion(records[0].version.0 + 1_000);
    let refusals = [
        store.append(
            &records[0].stream,
            ExpectedVersion::Exact(late),
            &[NewEvent::new("test.late", 1, b"x".to_vec())],
        ),
        store.append(
            "big",
            ExpectedVersion::Any,
            &[NewEvent::new("test.big", 1, vec![7; 17])],
        ),
        store.append("keyed", ExpectedVersion::Any, &[keyed(b"other")]),
    ];
    let kinds: Vec<String> = refusals
        .iter()
        .map(|refusal| match refusal {
            Err(Error::Append(AppendError::WrongExpectedVersion { .. })) => "version".into(),
            Err(Error::Append(AppendError::Limit(_))) => "limit".into(),
            Err(Error::Append(AppendError::Conflict { .. })) => "conflict".into(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["version", "limit", "conflict"]);
    drop(store);
    assert_eq!(content(&source), before);
}

#[test]
fn the_stores_refusals_leave_the_file_bytes_as_they_were() {
    let (dir, source, records) = demo_log();
    let store = Store::open(&source).unwrap();
    let keyed = |payload: &[u8]| {
        NewEvent::new("test.keyed", 1, payload.to_vec()).with_idempotency_key("the-key")
    };
    store
        .append("keyed", ExpectedVersion::Any, &[keyed(b"first")])
        .unwrap()
        .expect_done();
    let bytes = fs::read(&source).unwrap();
    let late = annals::log::StreamVersion(records[0].version.0 + 1_000);
    let event = |kind: &str| [NewEvent::new(kind, 1, b"x".to_vec())];
    let appends = [
        ("s", ExpectedVersion::Any, event("lease.acquired").to_vec()),
        ("s", ExpectedVersion::Any, event("annals.cut").to_vec()),
        ("keyed", ExpectedVersion::Any, vec![keyed(b"other")]),
        (
            records[0].stream.as_str(),
            ExpectedVersion::Exact(late),
            event("test.late").to_vec(),
        ),
    ];
    for (stream, expected, events) in &appends {
        let checked = store.check_append(stream, *expected, events);
        let refused = store.append(stream, *expected, events);
        assert!(
            checked.is_err() && refused.is_err(),
            "{events:?}: {refused:?}"
        );
        assert_eq!(
            checked.unwrap_err().to_string(),
            refused.unwrap_err().to_string()
        );
        assert_eq!(fs::read(&source).unwrap(), bytes, "{events:?}");
    }
    let head = store.snapshot().unwrap().head().unwrap().next;
    let exists = dir.path().join("exists");
    fs::write(&exists, b"x").unwrap();
    let cuts = [
        (Position(head.0 + 1), dir.path().join("a")),
        (Position(10), exists),
        (Position(10), source.clone()),
        (Position(10), dir.path().join("missing").join("a")),
    ];
    for (before, path) in &cuts {
        let checked = annals::archive::Archives::of(&store).check(*before, path);
        let refused = annals::archive::Archives::of(&store).archive_before(*before, path);
        assert!(
            checked.is_err() && refused.is_err(),
            "{path:?}: {refused:?}"
        );
        assert_eq!(
            checked.unwrap_err().to_string(),
            refused.unwrap_err().to_string()
        );
        assert_eq!(fs::read(&source).unwrap(), bytes, "{path:?}");
    }
    let missing = annals::archive::Archives::of(&store)
        .archive_before(Position(10), dir.path().join("missing").join("a"));
    assert!(
        missing.unwrap_err().to_string().contains("missing"),
        "the refusal names the folder"
    );
}
