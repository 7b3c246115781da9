//! Appending and reading the log: expected versions, atomic multi-event appends,
//! idempotency, reads in both directions, snapshots beside a writer.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;
use std::thread;

use annals::{
    AppendOutcome, Direction, Error, ExpectedVersion, Position, Store, error::AppendError,
    log::StreamVersion,
};

use annals::testing::internals::stream_index::{RUNS_PER_BLOCK, StreamRun};

use crate::common::{append_one, event, store};

fn payload_bytes(records: &[annals::Record]) -> Vec<u8> {
    records.iter().map(|r| r.payload[0]).collect()
}

fn wrong_version(error: Error) -> (ExpectedVersion, Option<StreamVersion>) {
    match error {
        Error::Append(AppendError::WrongExpectedVersion {
            expected, current, ..
        }) => (expected, current),
        other => panic!("expected a version mismatch, got {other:?}"),
    }
}

#[test]
fn appended_records_read_back_forward_and_backward() {
    let (_dir, store) = store();
    for i in 0..5u8 {
        let position = append_one(&store, if i % 2 == 0 { "even" } else { "odd" }, &[i]);
        assert_eq!(position, Position(u64::from(i)));
    }
    let forward = store
        .snapshot()
        .unwrap()
        .read_all(Position(1), Direction::Forward, 100)
        .unwrap();
    assert_eq!(payload_bytes(&forward), [1, 2, 3, 4]);
    let backward = store
        .snapshot()
        .unwrap()
        .read_all(Position(3), Direction::Backward, 100)
        .unwrap();
    assert_eq!(payload_bytes(&backward), [3, 2, 1, 0]);
    let from_past_head = store
        .snapshot()
        .unwrap()
        .read_all(Position(99), Direction::Backward, 2)
        .unwrap();
    assert_eq!(payload_bytes(&from_past_head), [4, 3]);
    assert!(
        store
            .snapshot()
            .unwrap()
            .read_all(Position(5), Direction::Forward, 9)
            .unwrap()
            .is_empty()
    );
    let even = store
        .snapshot()
        .unwrap()
        .read_stream("even", StreamVersion(1), Direction::Forward, 100)
        .unwrap();
    assert_eq!(payload_bytes(&even), [2, 4]);
    let even_back = store
        .snapshot()
        .unwrap()
        .read_stream("even", StreamVersion(9), Direction::Backward, 100)
        .unwrap();
    assert_eq!(payload_bytes(&even_back), [4, 2, 0]);
    assert!(
        store
            .snapshot()
            .unwrap()
            .read_stream("none", StreamVersion(0), Direction::Forward, 9)
            .unwrap()
            .is_empty()
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn get_returns_one_record_and_none_past_the_head() {
    let (_dir, store) = store();
    append_one(&store, "s", b"a");
    append_one(&store, "s", b"b");
    let record = store.snapshot().unwrap().get(Position(1)).unwrap().unwrap();
    assert_eq!(
        (record.position, record.version, record.payload.as_slice()),
        (Position(1), StreamVersion(1), &b"b"[..])
    );
    assert_eq!(
        record.prev,
        store
            .snapshot()
            .unwrap()
            .get(Position(0))
            .unwrap()
            .unwrap()
            .hash
    );
    assert_eq!(store.snapshot().unwrap().get(Position(2)).unwrap(), None);
    let head = store.snapshot().unwrap().head().unwrap();
    assert_eq!((head.next, head.hash), (Position(2), record.hash));
}

#[test]
fn an_empty_log_has_a_zero_head() {
    let (_dir, store) = store();
    let head = store.snapshot().unwrap().head().unwrap();
    assert_eq!(
        (head.next, head.hash),
        (Position(0), annals::log::Digest::ZERO)
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn expected_version_rules_are_enforced() {
    let (_dir, store) = store();
    let one = |expected| store.append("s", expected, &[event("k", 1, b"x")]);
    let (expected, current) = wrong_version(one(ExpectedVersion::StreamExists).unwrap_err());
    assert_eq!((expected, current), (ExpectedVersion::StreamExists, None));
    let (_, current) = wrong_version(one(ExpectedVersion::Exact(StreamVersion(0))).unwrap_err());
    assert_eq!(current, None);
    one(ExpectedVersion::NoStream).unwrap().expect_done();
    let (_, current) = wrong_version(one(ExpectedVersion::NoStream).unwrap_err());
    assert_eq!(current, Some(StreamVersion(0)));
    one(ExpectedVersion::Exact(StreamVersion(0)))
        .unwrap()
        .expect_done();
    let (_, current) = wrong_version(one(ExpectedVersion::Exact(StreamVersion(0))).unwrap_err());
    assert_eq!(current, Some(StreamVersion(1)));
    one(ExpectedVersion::StreamExists).unwrap().expect_done();
    one(ExpectedVersion::Any).unwrap().expect_done();
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(4));
}

#[test]
fn a_version_mismatch_writes_nothing() {
    let (_dir, store) = store();
    append_one(&store, "s", b"a");
    let before = store.snapshot().unwrap().head().unwrap();
    let events = [
        event("k", 1, b"x"),
        event("k", 1, b"y").with_idempotency_key("k1"),
    ];
    assert!(
        store
            .append("s", ExpectedVersion::NoStream, &events)
            .is_err()
    );
    assert_eq!(store.snapshot().unwrap().head().unwrap(), before);
    assert_eq!(
        store.snapshot().unwrap().stream_version("s").unwrap(),
        Some(StreamVersion(0))
    );
    // The key of the refused append was not taken: it appends fresh now.
    let outcome = store
        .append("t", ExpectedVersion::Any, &events[1..])
        .unwrap();
    assert!(matches!(outcome, AppendOutcome::Appended(_)));
}

#[test]
fn several_events_in_one_append_are_contiguous() {
    let (_dir, store) = store();
    append_one(&store, "other", b"o");
    let events: Vec<_> = (0..5u8).map(|i| event("k", 7, &[i])).collect();
    let AppendOutcome::Appended(appended) = store
        .append("s", ExpectedVersion::NoStream, &events)
        .unwrap()
    else {
        panic!("expected an append");
    };
    assert_eq!(
        (
            appended.first_position,
            appended.first_version,
            appended.count
        ),
        (Position(1), StreamVersion(0), 5)
    );
    append_one(&store, "other", b"p");
    let records = store
        .snapshot()
        .unwrap()
        .read_stream("s", StreamVersion(0), Direction::Forward, 10)
        .unwrap();
    let placed: Vec<_> = records
        .iter()
        .map(|r| (r.position.0, r.version.0))
        .collect();
    assert_eq!(placed, [(1, 0), (2, 1), (3, 2), (4, 3), (5, 4)]);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn appends_larger_than_a_segment_read_back_across_segment_boundaries() {
    let (_dir, store) = store();
    let events: Vec<_> = (0..3000u32)
        .map(|i| event("bulk", 1, &i.to_le_bytes()))
        .collect();
    store
        .append("bulk", ExpectedVersion::NoStream, &events)
        .unwrap()
        .expect_done();
    append_one(&store, "tail", b"t");
    let value = |r: &annals::Record| u32::from_le_bytes(r.payload[..4].try_into().unwrap());
    let forward = store
        .snapshot()
        .unwrap()
        .read_all(Position(1020), Direction::Forward, 10)
        .unwrap();
    assert_eq!(
        forward.iter().map(value).collect::<Vec<_>>(),
        (1020..1030).collect::<Vec<_>>()
    );
    let backward = store
        .snapshot()
        .unwrap()
        .read_all(Position(2050), Direction::Backward, 100)
        .unwrap();
    assert_eq!(backward.len(), 100);
    assert!(
        backward
            .windows(2)
            .all(|w| value(&w[0]) == value(&w[1]) + 1)
    );
    let stream = store
        .snapshot()
        .unwrap()
        .read_stream("bulk", StreamVersion(2990), Direction::Forward, 100)
        .unwrap();
    assert_eq!(stream.len(), 10);
    let all: Vec<_> = store
        .snapshot()
        .unwrap()
        .records(Position(0), Direction::Forward)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(all.len(), 3001);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn the_same_key_and_content_is_a_duplicate_that_writes_nothing() {
    let (_dir, store) = store();
    let first = event("k", 1, b"body").with_idempotency_key("req-1");
    store
        .append("s", ExpectedVersion::NoStream, &[first])
        .unwrap()
        .expect_done();
    let head = store.snapshot().unwrap().head().unwrap();
    // A retry carries its own clock: the time is not part of the content.
    let retry = event("k", 99, b"body").with_idempotency_key("req-1");
    let outcome = store
        .append("s", ExpectedVersion::NoStream, &[retry])
        .unwrap();
    assert_eq!(
        outcome,
        AppendOutcome::Duplicate {
            positions: vec![Position(0)]
        }
    );
    assert_eq!(store.snapshot().unwrap().head().unwrap(), head);
}

#[test]
fn the_same_key_with_other_content_is_a_conflict() {
    let (_dir, store) = store();
    store
        .append(
            "s",
            ExpectedVersion::Any,
            &[event("k", 1, b"body").with_idempotency_key("req")],
        )
        .unwrap()
        .expect_done();
    let cases = [
        ("s", event("k", 1, b"other").with_idempotency_key("req")),
        (
            "s",
            event("other-kind", 1, b"body").with_idempotency_key("req"),
        ),
        (
            "other-stream",
            event("k", 1, b"body").with_idempotency_key("req"),
        ),
    ];
    for (stream, event) in cases {
        match store.append(stream, ExpectedVersion::Any, &[event]) {
            Err(Error::Append(AppendError::Conflict { key, position })) => {
                assert_eq!((key.as_str(), position), ("req", Position(0)));
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(1));
}

#[test]
fn an_append_of_only_duplicates_returns_every_earlier_position() {
    let (_dir, store) = store();
    let events = [
        event("k", 1, b"a").with_idempotency_key("a"),
        event("k", 1, b"b").with_idempotency_key("b"),
    ];
    store
        .append("s", ExpectedVersion::Any, &events)
        .unwrap()
        .expect_done();
    let outcome = store.append("s", ExpectedVersion::Any, &events).unwrap();
    assert_eq!(
        outcome,
        AppendOutcome::Duplicate {
            positions: vec![Position(0), Position(1)]
        }
    );
}

#[test]
fn mixing_duplicate_and_new_events_is_refused() {
    let (_dir, store) = store();
    store
        .append(
            "s",
            ExpectedVersion::Any,
            &[event("k", 1, b"a").with_idempotency_key("a")],
        )
        .unwrap()
        .expect_done();
    let mixed = [
        event("k", 1, b"a").with_idempotency_key("a"),
        event("k", 1, b"new"),
    ];
    match store.append("s", ExpectedVersion::Any, &mixed) {
        Err(Error::Append(AppendError::PartialDuplicate { key, position })) => {
            assert_eq!((key.as_str(), position), ("a", Position(0)));
        }
        other => panic!("expected a partial duplicate, got {other:?}"),
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(1));
}

#[test]
fn a_key_repeated_within_one_append_is_refused() {
    let (_dir, store) = store();
    let events = [
        event("k", 1, b"a").with_idempotency_key("x"),
        event("k", 1, b"b").with_idempotency_key("x"),
    ];
    let error = store
        .append("s", ExpectedVersion::Any, &events)
        .unwrap_err();
    assert!(matches!(error, Error::Append(AppendError::RepeatedKey { key }) if key == "x"));
}

#[test]
fn an_append_of_no_events_is_refused() {
    let (_dir, store) = store();
    let error = store.append("s", ExpectedVersion::Any, &[]).unwrap_err();
    assert!(matches!(error, Error::Append(AppendError::NoEvents)));
}

#[test]
fn idempotency_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let keyed = event("k", 1, b"once").with_idempotency_key("deliver-9");
    {
        let store = Store::open(&path).unwrap();
        append_one(&store, "s", b"before");
        store
            .append("s", ExpectedVersion::Any, std::slice::from_ref(&keyed))
            .unwrap()
            .expect_done();
    }
    let store = Store::open(&path).unwrap();
    let outcome = store.append("s", ExpectedVersion::Any, &[keyed]).unwrap();
    assert_eq!(
        outcome,
        AppendOutcome::Duplicate {
            positions: vec![Position(1)]
        }
    );
    let conflict = event("k", 1, b"twice").with_idempotency_key("deliver-9");
    assert!(matches!(
        store.append("s", ExpectedVersion::Any, &[conflict]),
        Err(Error::Append(AppendError::Conflict { .. }))
    ));
}

#[test]
fn ten_thousand_appends_across_a_hundred_streams_survive_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let head = {
        let store = Store::open(&path).unwrap();
        for i in 0..10_000u32 {
            let stream = format!("stream-{}", i % 100);
            let expected = match i / 100 {
                0 => ExpectedVersion::NoStream,
                round => ExpectedVersion::Exact(StreamVersion(u64::from(round - 1))),
            };
            store
                .append(
                    &stream,
                    expected,
                    &[event("e", u64::from(i), &i.to_le_bytes())],
                )
                .unwrap()
                .expect_done();
        }
        store.snapshot().unwrap().head().unwrap()
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(store.snapshot().unwrap().head().unwrap(), head);
    assert_eq!(head.next, Position(10_000));
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    assert_eq!((report.records, report.streams), (10_000, 100));
    let stream = store
        .snapshot()
        .unwrap()
        .read_stream("stream-7", StreamVersion(0), Direction::Forward, 1000)
        .unwrap();
    assert_eq!(stream.len(), 100);
    for (version, record) in stream.iter().enumerate() {
        let i = u32::from_le_bytes(record.payload[..4].try_into().unwrap());
        assert_eq!(
            (i % 100, i / 100, record.version.0),
            (7, version as u32, version as u64)
        );
    }
}

#[test]
fn racing_writers_with_the_same_expected_version_win_exactly_once_each() {
    let (_dir, store) = store();
    let store = Arc::new(store);
    let writers: Vec<_> = (0..4u8)
        .map(|writer| {
            let store = Arc::clone(&store);
            thread::spawn(move || {
                let mut won = Vec::new();
                for attempt in 0..200u32 {
                    let snapshot = store.snapshot().unwrap();
                    let current = snapshot.stream_version("race").unwrap();
                    let expected =
                        current.map_or(ExpectedVersion::NoStream, ExpectedVersion::Exact);
                    let payload = [writer, attempt as u8];
                    match store.append("race", expected, &[event("try", 1, &payload)]) {
                        Ok(AppendOutcome::Appended(a)) => won.push(a.first_version.0),
                        Ok(other) => panic!("unexpected {other:?}"),
                        Err(Error::Append(AppendError::WrongExpectedVersion { .. })) => {}
                        Err(other) => panic!("unexpected {other:?}"),
                    }
                }
                won
            })
        })
        .collect();
    let mut versions: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    versions.sort_unstable();
    let expected: Vec<u64> = (0..versions.len() as u64).collect();
    assert_eq!(versions, expected, "every version won exactly once");
    let last = store.snapshot().unwrap().stream_version("race").unwrap();
    assert_eq!(last.map(|v| v.0 + 1), Some(versions.len() as u64));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_snapshot_reads_one_committed_state_while_a_writer_appends() {
    let (_dir, store) = store();
    let store = Arc::new(store);
    append_one(&store, "s", b"first");
    let snapshot = store.snapshot().unwrap();
    let writer = {
        let store = Arc::clone(&store);
        thread::spawn(move || {
            for i in 0..500u32 {
                append_one(&store, "s", &i.to_le_bytes());
            }
        })
    };
    let mut readers_checked = 0;
    while !writer.is_finished() || readers_checked == 0 {
        let live = store.snapshot().unwrap();
        let head = live.head().unwrap();
        let records: Vec<_> = live
            .records(Position(0), Direction::Forward)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(
            records.len() as u64,
            head.next.0,
            "a snapshot sees whole appends only"
        );
        assert_eq!(records.last().map(|r| r.hash), Some(head.hash));
        readers_checked += 1;
    }
    writer.join().unwrap();
    assert_eq!(
        snapshot.head().unwrap().next,
        Position(1),
        "an old snapshot is unchanged"
    );
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        Position(501)
    );
}

#[test]
fn appends_in_one_transaction_share_a_segment_and_see_each_others_versions() {
    let (dir, store) = store();
    append_one(&store, "a", &[0]);
    store
        .write(|session| {
            for i in 1..=6u8 {
                let stream = if i % 2 == 0 { "a" } else { "b" };
                session
                    .append(stream, ExpectedVersion::Any, &[event("x", 1, &[i])])?
                    .expect_done();
            }
            // The third append to "a" in this transaction must see the two before it.
            session.append(
                "a",
                ExpectedVersion::Exact(StreamVersion(3)),
                &[event("x", 1, &[7])],
            )
        })
        .unwrap()
        .expect_done();
    let snapshot = store.snapshot().unwrap();
    assert_eq!(
        snapshot.stream_version("a").unwrap(),
        Some(StreamVersion(4))
    );
    assert_eq!(
        snapshot.stream_version("b").unwrap(),
        Some(StreamVersion(2))
    );
    assert_eq!(snapshot.stream_count().unwrap(), 2);
    drop(snapshot);
    let all = store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, 100)
        .unwrap();
    assert_eq!(payload_bytes(&all), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    drop(store);
    let db = redb::Database::open(dir.path().join("log.redb")).unwrap();
    let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
    let segments = txn
        .open_table(annals::testing::internals::tables::SEGMENTS)
        .unwrap();
    let keys: Vec<u64> = redb::ReadableTable::iter(&segments)
        .unwrap()
        .map(|entry| entry.unwrap().0.value())
        .collect();
    assert_eq!(keys, vec![0, 1], "one segment per transaction");
}

fn run(first_version: u64, first_position: u64, count: u64) -> StreamRun {
    StreamRun {
        first_version,
        first_position,
        count,
    }
}

#[test]
fn consecutive_appends_to_a_stream_extend_its_run_and_interleaved_ones_start_new_runs() {
    let (_dir, store) = store();
    for i in 0..3u8 {
        append_one(&store, "alone", &[i]);
    }
    append_one(&store, "other", &[3]);
    append_one(&store, "alone", &[4]);
    let read = |stream: &str| {
        store
            .snapshot()
            .unwrap()
            .read_stream(stream, StreamVersion(0), Direction::Forward, 10)
            .unwrap()
    };
    assert_eq!(payload_bytes(&read("alone")), vec![0, 1, 2, 4]);
    let backward = store
        .snapshot()
        .unwrap()
        .read_stream("alone", StreamVersion(3), Direction::Backward, 10)
        .unwrap();
    assert_eq!(payload_bytes(&backward), vec![4, 2, 1, 0]);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    let snapshot = store.snapshot().unwrap();
    assert_eq!(
        snapshot.stream_runs("alone").unwrap(),
        [run(0, 0, 3), run(3, 4, 1)]
    );
    assert_eq!(snapshot.stream_runs("other").unwrap(), [run(0, 3, 1)]);
    assert!(snapshot.stream_runs("none").unwrap().is_empty());
}

/// Three streams written in turn: each append starts a run, so every stream's tail fills and
/// is archived several times over. Reads from every version in both directions must give
/// what the appends wrote.
#[test]
fn streams_written_in_turn_read_back_across_archived_blocks() {
    let (_dir, store) = store();
    let per_stream = 3 * RUNS_PER_BLOCK as u64 + 5;
    let streams = ["a", "b", "c"];
    for i in 0..per_stream {
        for (s, stream) in streams.iter().enumerate() {
            // Every fourth turn appends two records at once, so runs differ in length.
            let events: Vec<_> = (0..1 + u64::from(i % 4 == 0))
                .map(|_| event("x", i, &(i * 3 + s as u64).to_le_bytes()))
                .collect();
            store
                .append(stream, ExpectedVersion::Any, &events)
                .unwrap()
                .expect_done();
        }
    }
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    let snapshot = store.snapshot().unwrap();
    let runs = snapshot.stream_runs("b").unwrap();
    assert_eq!(runs.len() as u64, per_stream);
    let length = runs.iter().map(|run| run.count).sum::<u64>();
    let all: Vec<annals::Record> = store
        .snapshot()
        .unwrap()
        .read_stream("b", StreamVersion(0), Direction::Forward, 1_000)
        .unwrap();
    assert_eq!(all.len() as u64, length);
    for (version, record) in (0u64..).zip(&all) {
        assert_eq!(record.version, StreamVersion(version));
        assert_eq!(record.stream, "b");
    }
    for from in 0..=length {
        let forward = store
            .snapshot()
            .unwrap()
            .read_stream("b", StreamVersion(from), Direction::Forward, 1_000)
            .unwrap();
        assert_eq!(
            forward,
            all[from.min(length) as usize..],
            "forward from {from}"
        );
        let backward = store
            .snapshot()
            .unwrap()
            .read_stream("b", StreamVersion(from), Direction::Backward, 1_000)
            .unwrap();
        let expected: Vec<_> = all[..=from.min(length - 1) as usize]
            .iter()
            .rev()
            .cloned()
            .collect();
        assert_eq!(backward, expected, "backward from {from}");
    }
    assert_eq!(
        snapshot.stream_version("b").unwrap(),
        Some(StreamVersion(length - 1))
    );
}

/// Random appends to a few streams, several per transaction at times, then every stream read
/// whole both ways and from random versions, against the positions the appends returned;
/// and again after a reopen.
#[test]
fn random_interleavings_read_back_as_appended() {
    for seed in 1..=12u64 {
        let (dir, store) = store();
        let mut dice = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut roll = |sides: u64| {
            dice ^= dice << 13;
            dice ^= dice >> 7;
            dice ^= dice << 17;
            dice % sides
        };
        let streams = ["p", "q", "r", "s", "t"];
        let mut positions: std::collections::BTreeMap<&str, Vec<Position>> = Default::default();
        for _ in 0..150 {
            let appends: Vec<(&str, usize)> = (0..1 + roll(3))
                .map(|_| (streams[roll(1 + seed % 5) as usize], 1 + roll(3) as usize))
                .collect();
            let outcomes = store
                .write(|session| {
                    let mut firsts = Vec::new();
                    for (stream, count) in &appends {
                        let events: Vec<_> = (0..*count).map(|_| event("x", 1, b"e")).collect();
                        match session.append(stream, ExpectedVersion::Any, &events)? {
                            AppendOutcome::Appended(appended) => {
                                firsts.push(appended.first_position)
                            }
                            other => panic!("a fresh append: {other:?}"),
                        }
                    }
                    Ok(firsts)
                })
                .unwrap();
            for ((stream, count), first) in appends.iter().zip(outcomes) {
                let written = positions.entry(stream).or_default();
                written.extend((0..*count as u64).map(|i| Position(first.0 + i)));
            }
        }
        check_streams(&store, &positions, &mut roll);
        drop(store);
        let store = Store::open(dir.path().join("log.redb")).unwrap();
        check_streams(&store, &positions, &mut roll);
        assert!(
            annals::Audit::of(&store).verify().unwrap().is_sound(),
            "seed {seed}"
        );
    }
}

/// Each stream of `positions` read forward and backward, whole and from random versions.
fn check_streams(
    store: &Store,
    positions: &std::collections::BTreeMap<&str, Vec<Position>>,
    roll: &mut impl FnMut(u64) -> u64,
) {
    let read = |stream: &str, from: u64, direction: Direction| -> Vec<Position> {
        let records = store
            .snapshot()
            .unwrap()
            .read_stream(stream, StreamVersion(from), direction, usize::MAX)
            .unwrap();
        for record in &records {
            assert_eq!(record.stream, stream);
        }
        records.iter().map(|record| record.position).collect()
    };
    for (stream, written) in positions {
        let length = written.len() as u64;
        assert_eq!(read(stream, 0, Direction::Forward), *written, "{stream}");
        let mut backward = written.clone();
        backward.reverse();
        assert_eq!(read(stream, u64::MAX, Direction::Backward), backward);
        for _ in 0..10 {
            let from = roll(length + 2);
            let start = from.min(length) as usize;
            assert_eq!(read(stream, from, Direction::Forward), written[start..]);
            let end = (from + 1).min(length) as usize;
            let expected: Vec<_> = written[..end].iter().rev().copied().collect();
            assert_eq!(read(stream, from, Direction::Backward), expected);
        }
    }
}
