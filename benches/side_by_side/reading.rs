//! Reading the log back: scans, verify, rebuild, and the cost of encoding and hashing.

use std::path::Path;
use std::time::Instant;

use annals::testing::internals::record::{Placement, header_bytes};
use annals::{
    Direction, NewEvent, Position, Store,
    log::{Digest, StreamVersion},
};
use redb::{ReadableDatabase, ReadableTable};

use crate::samples::per_second;
use crate::sqlite::chain_hash;
use crate::work::bulk_event;
use crate::{RAW, SAMPLE_EVENTS_MAX};

pub(crate) fn scan_annals(path: &Path) -> f64 {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the bulk log");
    let started = Instant::now();
    let snapshot = store.snapshot().expect("a snapshot");
    let mut count = 0u64;
    let mut bytes = 0usize;
    let mut records = snapshot
        .records(Position(0), Direction::Forward)
        .expect("records");
    // Borrowed views, as raw redb's scan borrows its values: each segment's digest and each
    // header are checked, nothing is copied.
    while let Some(record) = records.next_view() {
        let record = record.expect("a sound record");
        bytes += record.payload.len();
        count += 1;
    }
    std::hint::black_box(bytes);
    per_second(count, started.elapsed())
}

/// The same scan through `Iterator::next`, which copies each record into an owned `Record`:
/// what a rebuild reads through.
pub(crate) fn scan_annals_owned(path: &Path) -> f64 {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the bulk log");
    let started = Instant::now();
    let snapshot = store.snapshot().expect("a snapshot");
    let mut count = 0u64;
    for record in snapshot
        .records(Position(0), Direction::Forward)
        .expect("records")
    {
        std::hint::black_box(record.expect("a sound record"));
        count += 1;
    }
    per_second(count, started.elapsed())
}

pub(crate) fn scan_redb(path: &Path) -> f64 {
    let db = redb::Database::open(path).expect("the raw log");
    let started = Instant::now();
    let txn = db.begin_read().expect("a read");
    let table = txn.open_table(RAW).expect("the table");
    let mut count = 0u64;
    let mut bytes = 0usize;
    for entry in table.iter().expect("iterate") {
        let (_, value) = entry.expect("a row");
        bytes += value.value().len();
        count += 1;
    }
    std::hint::black_box(bytes);
    per_second(count, started.elapsed())
}

/// The log's hash check (`verify_log`: every header and payload hash, the chain, the indexes),
/// and blake3 alone over the same bytes: each record's payload, and its header in derive-key
/// mode. Both in bytes hashed per second.
pub(crate) fn verify_and_blake3(path: &Path) -> (f64, f64) {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the bulk log");
    let snapshot = store.snapshot().expect("a snapshot");
    // The bytes verify hashes: each header and payload. Measured, not timed.
    let mut total_bytes = 0u64;
    let mut sample = Vec::new();
    for record in snapshot
        .records(Position(0), Direction::Forward)
        .expect("records")
    {
        let record = record.expect("a sound record");
        let event = NewEvent {
            kind: record.kind.clone(),
            schema: record.schema,
            at_ms: record.at_ms,
            idempotency_key: record.idempotency_key.clone(),
            payload: record.payload.clone(),
        };
        let placement = Placement {
            stream: &record.stream,
            position: record.position,
            version: record.version,
            prev: record.prev,
        };
        let header = header_bytes(&event, placement, record.payload_hash).expect("a header");
        total_bytes += (header.len() + record.payload.len()) as u64;
        if sample.len() < SAMPLE_EVENTS_MAX {
            sample.push((header, record.payload));
        }
    }
    let started = Instant::now();
    let report = annals::testing::internals::audit::verify_log(&snapshot).expect("verify");
    let verify = per_second(total_bytes, started.elapsed());
    assert!(report.is_sound(), "the bulk log verifies");

    let sample_bytes: usize = sample.iter().map(|(h, p)| h.len() + p.len()).sum();
    let started = Instant::now();
    for (header, payload) in &sample {
        std::hint::black_box(blake3::hash(payload));
        let mut hasher =
            blake3::Hasher::new_derive_key(annals::testing::internals::hash::RECORD_HEADER_CONTEXT);
        hasher.update(header);
        std::hint::black_box(hasher.finalize());
    }
    let blake3 = per_second(sample_bytes as u64, started.elapsed());
    (verify, blake3)
}

pub(crate) fn rebuild(path: &Path) -> f64 {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the bulk log");
    let events = store
        .snapshot()
        .expect("the head")
        .head()
        .expect("the head")
        .next
        .0;
    let started = Instant::now();
    annals::maintenance::Rebuild::of(&store)
        .run(None)
        .expect("a rebuild");
    per_second(events, started.elapsed())
}

/// Per-event cost of encoding a record's header and of hashing it and its payload, alone.
pub(crate) fn encode_and_hash_ns(events: usize) -> (f64, f64) {
    let batch: Vec<NewEvent> = (0..events).map(bulk_event).collect();
    let placement = |i: usize| Placement {
        stream: "bulk",
        position: Position(i as u64),
        version: StreamVersion(i as u64),
        prev: Digest::ZERO,
    };
    let started = Instant::now();
    let mut headers = Vec::with_capacity(events);
    for (i, event) in batch.iter().enumerate() {
        headers.push(header_bytes(event, placement(i), Digest::ZERO).expect("a header"));
    }
    let encode = started.elapsed().as_nanos() as f64 / events as f64;
    let started = Instant::now();
    for (event, header) in batch.iter().zip(&headers) {
        std::hint::black_box(annals::testing::internals::hash::payload_hash(
            &event.payload,
        ));
        std::hint::black_box(annals::testing::internals::hash::record_hash(header));
    }
    let hash = started.elapsed().as_nanos() as f64 / events as f64;
    (encode, hash)
}

/// An events row read whole: position, stream, version, kind, time, payload, prev, hash.
type SqliteRow = (i64, String, i64, String, i64, Vec<u8>, Vec<u8>, Vec<u8>);

/// SQLite's scan of the whole events table in order, each row read into owned values as
/// `Records` copies each record into a `Record`.
pub(crate) fn scan_sqlite(path: &Path) -> f64 {
    let conn = rusqlite::Connection::open(path).expect("the SQLite log");
    let started = Instant::now();
    let mut statement = conn
        .prepare(
            "SELECT position, stream, version, kind, at_ms, payload, prev, hash FROM events
             ORDER BY position",
        )
        .expect("prepare");
    let mut rows = statement.query([]).expect("a scan");
    let mut count = 0u64;
    while let Some(row) = rows.next().expect("a row") {
        let record: SqliteRow = (
            row.get(0).expect("position"),
            row.get(1).expect("stream"),
            row.get(2).expect("version"),
            row.get(3).expect("kind"),
            row.get(4).expect("at_ms"),
            row.get(5).expect("payload"),
            row.get(6).expect("prev"),
            row.get(7).expect("hash"),
        );
        std::hint::black_box(record);
        count += 1;
    }
    per_second(count, started.elapsed())
}

/// Verify of the log at `path`, split: the log walk alone (`verify_log`: every record's
/// hashes, the chain, stream versions, the indexes and the Merkle tree) and the whole
/// `Audit::verify` (that walk, then the projections replayed into memory and compared). Both
/// in events per second; the replay's share is the whole's time less the walk's.
pub(crate) fn verify_split(path: &Path) -> VerifySplit {
    let store = Store::open_with(path, annals::StoreOptions::default()).expect("the verify log");
    let snapshot = store.snapshot().expect("a snapshot");
    let events = snapshot.head().expect("the head").next.0;
    let started = Instant::now();
    let report = annals::testing::internals::audit::verify_log(&snapshot).expect("verify");
    let walk = started.elapsed();
    assert!(report.is_sound(), "the verify log walks clean");
    drop(snapshot);
    let started = Instant::now();
    let report = annals::Audit::of(&store).verify().expect("verify");
    let whole = started.elapsed();
    assert!(report.is_sound(), "the verify log verifies");
    let replay = whole.saturating_sub(walk);
    VerifySplit {
        walk: per_second(events, walk),
        whole: per_second(events, whole),
        replay: per_second(events, replay),
    }
}

/// Events per second of each part of a verify.
pub(crate) struct VerifySplit {
    pub(crate) walk: f64,
    pub(crate) whole: f64,
    /// The projections' replay and comparison: the whole's time less the walk's.
    pub(crate) replay: f64,
}

/// SQLite's counterpart of verify's walk: every events row in order, its hash recomputed and
/// its link to the previous row checked. Events per second.
pub(crate) fn chain_sqlite(path: &Path) -> f64 {
    let conn = rusqlite::Connection::open(path).expect("the SQLite log");
    let started = Instant::now();
    let mut statement = conn
        .prepare(
            "SELECT position, stream, kind, at_ms, payload, prev, hash FROM events
             ORDER BY position",
        )
        .expect("prepare");
    let mut rows = statement.query([]).expect("a scan");
    let mut expected = [0u8; 32];
    let mut count = 0u64;
    while let Some(row) = rows.next().expect("a row") {
        let position: i64 = row.get(0).expect("position");
        let stream: String = row.get(1).expect("stream");
        let kind: String = row.get(2).expect("kind");
        let at_ms: i64 = row.get(3).expect("at_ms");
        let payload: Vec<u8> = row.get(4).expect("payload");
        let prev: Vec<u8> = row.get(5).expect("prev");
        let hash: Vec<u8> = row.get(6).expect("hash");
        assert_eq!(prev, expected, "row {position} links to the one before");
        expected = chain_hash(&expected, position, &stream, &kind, at_ms as u64, &payload);
        assert_eq!(hash, expected, "row {position} has its own hash");
        count += 1;
    }
    per_second(count, started.elapsed())
}
