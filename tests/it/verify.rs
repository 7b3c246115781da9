//! Verification and checked reads: damage written beneath the store through raw redb is
//! found, named by its exact position, and never handed out as data.

use annals::testing::damage::{Part, flip, tamper_leases};
use annals::testing::setup::ExpectDone;
use std::path::Path;

use annals::{
    Direction, Error, ExpectedVersion, Position, Store, audit::Problem, error::MetaFault,
    error::MetaItem, error::RecordError, error::StreamRunsFault, log::StreamVersion,
};
use redb::{ReadableDatabase, ReadableTable};

use crate::common::{append_one, event};
use annals::testing::internals::checksum::{seal, stream_runs_key, unseal};

fn damaged_log(part: Part, position: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..40u32 {
            append_one(
                &store,
                &format!("s{}", i % 3),
                format!("payload {i}").as_bytes(),
            );
        }
        let batch: Vec<_> = (0..20u32)
            .map(|i| event("batch", 5, &i.to_le_bytes()))
            .collect();
        store
            .append("batch", annals::ExpectedVersion::Any, &batch)
            .unwrap()
            .expect_done();
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    }
    flip(&path, position, part);
    (dir, path)
}

#[test]
fn verify_names_the_position_of_a_flipped_payload_byte() {
    for position in [0, 17, 39, 45, 59] {
        let (_dir, path) = damaged_log(Part::Payload, position);
        assert_hash_damage_found(&path, position);
    }
}

/// Verify of the log at `path` names the record flipped at `position` (its payload or a
/// header field that decodes either way) by its hash, having checked the records before it.
fn assert_hash_damage_found(path: &Path, position: u64) {
    let report = annals::Audit::of(&Store::open(path).unwrap())
        .verify()
        .unwrap();
    let finding = report.problem.expect("the damage is found");
    assert_eq!(finding.position, Position(position));
    // A format v2 record stores no payload hash: a changed payload, like a changed header
    // field, fails the hash of its rebuilt header (schema/FORMAT.md 3.8).
    assert!(
        matches!(
            finding.problem,
            Problem::Record(RecordError::HeaderHash { .. })
        ),
        "{finding}"
    );
    assert_eq!(
        report.records, position,
        "records before the damage were checked"
    );
}

/// Verify checks the records' hashes on a second thread while it walks the chain on the
/// first, which runs ahead by up to a few dozen segments; damage only a hash finds must still
/// be named where it is, with the records before it counted, whether it lies in the first
/// segment (the walk far ahead when it is found) or far into a log of many segments.
#[test]
fn verify_names_hash_damage_anywhere_in_a_log_of_many_segments() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let records = 40_000u64;
    {
        let store = Store::open(&path).unwrap();
        for batch in 0..records / 1_000 {
            let events: Vec<_> = (0..1_000u64)
                .map(|i| event("bulk", 1, format!("{:0>180}", batch * 1_000 + i).as_bytes()))
                .collect();
            store
                .append(&format!("s{}", batch % 7), ExpectedVersion::Any, &events)
                .unwrap()
                .expect_done();
        }
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(report.is_sound(), "{report:?}");
        assert_eq!(report.records, records);
    }
    for position in [3, 31_337] {
        let damaged = dir.path().join(format!("damaged-{position}.redb"));
        std::fs::copy(&path, &damaged).unwrap();
        flip(&damaged, position, Part::Payload);
        assert_hash_damage_found(&damaged, position);
    }
}

#[test]
fn verify_names_the_position_of_a_flipped_header_byte() {
    for position in [0, 23, 41, 59] {
        let (_dir, path) = damaged_log(Part::HeaderTime, position);
        assert_hash_damage_found(&path, position);
    }
}

#[test]
fn reads_refuse_a_damaged_record_with_its_position() {
    let (_dir, path) = damaged_log(Part::Payload, 42);
    let store = Store::open(&path).unwrap();
    let corrupt_at = |error: Error| match error {
        Error::Corrupt { position, .. } => position,
        other => panic!("expected corruption, got {other:?}"),
    };
    assert_eq!(
        corrupt_at(
            store
                .snapshot()
                .and_then(|snapshot| snapshot.get(Position(42)))
                .unwrap_err()
        ),
        Position(42)
    );
    assert!(
        store
            .snapshot()
            .unwrap()
            .get(Position(41))
            .unwrap()
            .is_some(),
        "its neighbours still read"
    );
    let scan = store
        .snapshot()
        .and_then(|snapshot| snapshot.read_all(Position(0), Direction::Forward, 100))
        .unwrap_err();
    assert_eq!(corrupt_at(scan), Position(42));
    let backward = store
        .snapshot()
        .and_then(|snapshot| snapshot.read_all(Position(59), Direction::Backward, 100))
        .unwrap_err();
    assert_eq!(corrupt_at(backward), Position(42));
    let stream = store.snapshot().and_then(|snapshot| {
        snapshot.read_stream("batch", StreamVersion(0), Direction::Forward, 100)
    });
    assert_eq!(corrupt_at(stream.unwrap_err()), Position(42));
}

#[test]
fn verify_finds_a_broken_chain_link() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..5u8 {
            append_one(&store, "s", &[i]);
        }
    }
    // Replace record 3 by a record that is well formed on its own but chained to the wrong
    // predecessor: taken from another log with the same events but a different first record.
    let other_dir = tempfile::tempdir().unwrap();
    let other_path = other_dir.path().join("log.redb");
    {
        let store = Store::open(&other_path).unwrap();
        append_one(&store, "s", b"different");
        for i in 1..5u8 {
            append_one(&store, "s", &[i]);
        }
    }
    let segment_of = |path: &Path, position: u64| -> Vec<u8> {
        let db = redb::Database::open(path).unwrap();
        let txn = db.begin_read().unwrap();
        let table = txn
            .open_table(annals::testing::internals::tables::SEGMENTS)
            .unwrap();
        table.get(position).unwrap().unwrap().value().to_vec()
    };
    let forged = segment_of(&other_path, 3);
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(annals::testing::internals::tables::SEGMENTS)
            .unwrap()
            .insert(3, forged.as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let report = annals::Audit::of(&Store::open(&path).unwrap())
        .verify()
        .unwrap();
    let finding = report.problem.expect("the forged link is found");
    assert_eq!(finding.position, Position(3));
    assert!(matches!(finding.problem, Problem::Prev { .. }), "{finding}");
}

#[test]
fn verify_finds_a_missing_segment() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..5u8 {
            append_one(&store, "s", &[i]);
        }
    }
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(annals::testing::internals::tables::SEGMENTS)
            .unwrap()
            .remove(2)
            .unwrap();
        txn.commit().unwrap();
    }
    let store = Store::open(&path).unwrap();
    let finding = annals::Audit::of(&store)
        .verify()
        .unwrap()
        .problem
        .expect("the gap is found");
    assert_eq!(finding.position, Position(2));
    assert!(
        matches!(
            finding.problem,
            Problem::Gap {
                found: Position(3),
                ..
            }
        ),
        "{finding}"
    );
    assert!(matches!(
        store
            .snapshot()
            .and_then(|snapshot| snapshot.get(Position(2))),
        Err(Error::Corrupt {
            position: Position(2),
            ..
        })
    ));
}

/// Rewrites the segment that starts at `first` through raw redb, after `damage` changed it.
fn rewrite_segment(path: &Path, first: u64, damage: impl FnOnce(&mut Vec<u8>)) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut segments = txn
            .open_table(annals::testing::internals::tables::SEGMENTS)
            .unwrap();
        let mut bytes = segments.get(first).unwrap().unwrap().value().to_vec();
        damage(&mut bytes);
        segments.insert(first, bytes.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn a_damaged_segment_digest_is_refused_by_scans_and_found_by_verify() {
    let (_dir, path) = damaged_log(Part::Payload, 0);
    // Undo the payload damage at 0, then damage the digest of the batch's segment (40..60).
    flip(&path, 0, Part::Payload);
    rewrite_segment(&path, 40, |bytes| bytes[5] ^= 0x80);
    let store = Store::open(&path).unwrap();
    match store
        .snapshot()
        .and_then(|snapshot| snapshot.read_all(Position(0), Direction::Forward, 100))
    {
        Err(Error::Corrupt { position, problem }) => {
            assert_eq!(position, Position(40));
            assert!(
                problem.to_string().contains("segment digest mismatch"),
                "{problem}"
            );
        }
        other => panic!("expected corruption at 40, got {other:?}"),
    }
    let finding = annals::Audit::of(&store)
        .verify()
        .unwrap()
        .problem
        .expect("the damage is found");
    assert_eq!(finding.position, Position(40));
    assert!(finding.to_string().contains("segment digest"), "{finding}");
    // Point reads check each record's own hashes, which are intact.
    assert!(
        store
            .snapshot()
            .unwrap()
            .get(Position(45))
            .unwrap()
            .is_some()
    );
}

#[test]
fn verify_finds_a_changed_payload_even_under_a_recomputed_segment_digest() {
    let (_dir, path) = damaged_log(Part::Payload, 45);
    rewrite_segment(&path, 40, |bytes| {
        let digest = annals::testing::internals::hash::segment_v2_digest(&bytes[32..]);
        bytes[..32].copy_from_slice(digest.as_bytes());
    });
    let store = Store::open(&path).unwrap();
    let finding = annals::Audit::of(&store)
        .verify()
        .unwrap()
        .problem
        .expect("the forgery is found");
    assert_eq!(finding.position, Position(45));
    assert!(
        matches!(
            finding.problem,
            Problem::Record(RecordError::HeaderHash { .. })
        ),
        "{finding}"
    );
    assert!(
        store
            .snapshot()
            .and_then(|snapshot| snapshot.get(Position(45)))
            .is_err(),
        "a point read checks the record's own hashes"
    );
}

#[test]
fn borrowed_reads_refuse_a_damaged_record_once_with_its_position() {
    let (_dir, path) = damaged_log(Part::HeaderTime, 47);
    let store = Store::open(&path).unwrap();
    let snapshot = store.snapshot().unwrap();
    let mut records = snapshot.records(Position(0), Direction::Forward).unwrap();
    let mut sound = 0;
    let error = loop {
        match records.next_view() {
            Some(Ok(view)) => {
                assert_eq!(view.position, Position(sound));
                sound += 1;
            }
            Some(Err(error)) => break error,
            None => panic!("the damage is not reported"),
        }
    };
    assert_eq!(
        sound, 40,
        "the records before the damaged segment are handed out"
    );
    match error {
        Error::Corrupt { position, .. } => assert_eq!(position, Position(47)),
        other => panic!("expected corruption, got {other:?}"),
    }
    assert!(
        records.next_view().is_none(),
        "the error ends the iteration"
    );
}

/// A log of two streams written in turn, long enough that each has archived blocks of runs.
fn interleaved_log() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = Store::open(&path).unwrap();
    for i in 0..2 * annals::testing::internals::stream_index::RUNS_PER_BLOCK as u32 + 3 {
        append_one(&store, "a", &i.to_le_bytes());
        append_one(&store, "b", &i.to_le_bytes());
    }
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    (dir, path)
}

/// Rewrites the value under `key` of `table` through raw redb, unsealed before `change` sees
/// it and sealed again after, under `key`'s bytes as its checksum covers them
/// (`sealed_under`): the damage is the value's, not its checksum's.
fn rewrite<K: redb::Key + 'static>(
    path: &Path,
    table: redb::TableDefinition<K, &'static [u8]>,
    key: K::SelfType<'_>,
    sealed_under: &[u8],
    change: impl FnOnce(Option<Vec<u8>>) -> Vec<u8>,
) where
    for<'a> K::SelfType<'a>: std::borrow::Borrow<K::SelfType<'a>>,
{
    use redb::TableHandle;
    let name = table.name().to_owned();
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut opened = txn.open_table(table).unwrap();
        let old = opened
            .get(&key)
            .unwrap()
            .map(|value| unseal(&name, sealed_under, value.value()).unwrap().to_vec());
        let new = seal(&name, sealed_under, &change(old));
        opened.insert(&key, new.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

fn stream_index_problem(path: &Path) -> (String, String) {
    let report = annals::Audit::of(&Store::open(path).unwrap())
        .verify()
        .unwrap();
    match report.problem.map(|finding| finding.problem) {
        Some(Problem::StreamIndex { stream, fault }) => (stream, fault.to_string()),
        other => panic!("expected a stream index problem, got {other:?}"),
    }
}

#[test]
fn verify_finds_a_tail_run_moved_to_another_position() {
    let (_dir, path) = interleaved_log();
    rewrite(
        &path,
        annals::testing::internals::tables::META,
        "stream:b",
        b"stream:b",
        |tail| {
            let mut tail = tail.expect("b has a tail");
            // The tail's first run: its first position, after the tail's first version.
            tail[8] ^= 0x02;
            tail
        },
    );
    let (stream, detail) = stream_index_problem(&path);
    assert_eq!(stream, "b");
    assert!(detail.contains("puts version"), "{detail}");
    let reads = Store::open(&path).unwrap().snapshot().and_then(|snapshot| {
        snapshot.read_stream("b", StreamVersion(u64::MAX), Direction::Backward, 1_000)
    });
    assert!(
        matches!(reads, Err(Error::Corrupt { .. })),
        "a read through the damaged tail is refused: {reads:?}"
    );
}

#[test]
fn verify_finds_a_malformed_archived_block_and_a_stray_one() {
    let (_dir, path) = interleaved_log();
    rewrite(
        &path,
        annals::testing::internals::tables::STREAM_RUNS,
        ("a", 0),
        &stream_runs_key("a", 0),
        |block| {
            let mut block = block.expect("a's first block is archived");
            block.pop();
            block
        },
    );
    let (stream, detail) = stream_index_problem(&path);
    assert_eq!(stream, "a");
    assert!(detail.contains("a block of"), "{detail}");

    let (_dir, path) = interleaved_log();
    rewrite(
        &path,
        annals::testing::internals::tables::STREAM_RUNS,
        ("ghost", 0),
        &stream_runs_key("ghost", 0),
        |_| vec![0; 16],
    );
    let (stream, detail) = stream_index_problem(&path);
    assert_eq!(stream, "ghost");
    assert!(detail.contains("no record belongs to"), "{detail}");
}

#[test]
fn an_append_to_a_stream_whose_tail_ends_past_the_head_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        append_one(&store, "a", b"0");
        append_one(&store, "b", b"1");
    }
    // a's tail: from version 0, one run of one record at position 1,000, past the head (2).
    // It decodes; only the head says it cannot be.
    rewrite(
        &path,
        annals::testing::internals::tables::META,
        "stream:a",
        b"stream:a",
        |_| {
            let mut tail = 0u64.to_le_bytes().to_vec();
            tail.extend_from_slice(&[0xE8, 0x07, 1]);
            tail
        },
    );
    let store = Store::open(&path).unwrap();
    let head = store.snapshot().unwrap().head().unwrap();
    let appended = store.append("a", ExpectedVersion::Any, &[event("test.event", 2, b"2")]);
    match appended {
        Err(Error::CorruptMeta {
            item: MetaItem::StreamIndex {
                stream: Some(stream),
            },
            fault: MetaFault::StreamRuns(StreamRunsFault::EndsPastNext { end, next }),
        }) => assert!(stream == "a" && end == 1001 && next == 2, "{end} {next}"),
        other => panic!("expected the damaged tail to be refused, got {other:?}"),
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        head,
        "the refused append wrote nothing"
    );
    assert_eq!(
        store.snapshot().unwrap().stream_runs("a").unwrap().len(),
        1,
        "a's tail is as the damage left it"
    );
    // The damage is a's alone: b still takes appends.
    append_one(&store, "b", b"3");
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(3));
}

/// A log of many leases in a fresh folder ([`paged_lease_log`]).
fn paged_lease_log() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    annals::testing::setup::paged_lease_log(&path);
    (dir, path)
}

/// The key (in hex) and the difference `verify` reports of the paged lease log at `path`,
/// which must be a difference of the leases' `leases.held` table.
fn held_lease_difference(path: &Path) -> (String, String) {
    let report = annals::Audit::of(&Store::open(path).unwrap())
        .verify()
        .unwrap();
    match report.problem.map(|finding| finding.problem) {
        Some(Problem::Projection {
            projection,
            table,
            key_hex,
            difference,
            ..
        }) => {
            assert_eq!(
                (projection.as_str(), table.as_str()),
                ("leases", "leases.held")
            );
            (key_hex, difference.to_string())
        }
        other => panic!("expected a projection difference, got {other:?}"),
    }
}

/// The command line's side, its JSON message: `cli/tests/cli/damaged.rs`.
#[test]
fn verify_names_the_first_differing_key_of_a_projection_walked_page_by_page() {
    let (_dir, path) = paged_lease_log();
    // Past the first pages of the walk, a changed row, then a removed one after it.
    let keys = tamper_leases(&path, &[530], &[610]);
    let (key_hex, detail) = held_lease_difference(&path);
    assert_eq!(key_hex, annals::testing::internals::hash::hex(&keys[0]));
    assert!(detail.contains("other value bytes"), "{detail}");
}

#[test]
fn verify_names_a_row_missing_from_a_live_table_past_its_first_pages() {
    let (_dir, path) = paged_lease_log();
    let keys = tamper_leases(&path, &[], &[455]);
    let (key_hex, detail) = held_lease_difference(&path);
    assert_eq!(key_hex, annals::testing::internals::hash::hex(&keys[0]));
    assert!(detail.contains("missing from the live table"), "{detail}");
}
