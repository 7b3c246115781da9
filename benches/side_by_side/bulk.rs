//! Bulk appends: 1,000 events to a durable commit, to one stream or over many streams in
//! turn (every event its own run of its stream).

use std::path::Path;
use std::time::{Duration, Instant};

use annals::leases::events::{Acquired, LeaseEvent};
use annals::{ExpectedVersion, NewEvent, Store};

use crate::samples::per_second;
use crate::sqlite::Sqlite;
use crate::work::{bulk_event, decode_lease, stored_bytes_in};
use crate::{BATCH_EVENTS, RAW};

/// Streams the interleaved bulk events go to, round-robin: every event is its own run.
pub(crate) const INTERLEAVED_STREAMS: usize = 10_000;

/// Where the `i`-th bulk event goes over `streams` streams (1: the one stream `bulk`), and
/// its version there.
pub(crate) fn placed(i: usize, streams: usize) -> (String, u64) {
    let version = (i / streams) as u64;
    if streams == 1 {
        ("bulk".into(), version)
    } else {
        (format!("bulk/{:05}", i % streams), version)
    }
}

/// Appends `events` bulk events from number `from` to one stream, 1,000 per durable commit,
/// each applied to the projections. Events are built outside the timing.
pub(crate) fn bulk_annals(path: &Path, events: usize, from: usize) -> f64 {
    bulk_annals_over(path, events, from, 1)
}

/// [`bulk_annals`] over `streams` streams round-robin: each event its own append.
pub(crate) fn bulk_annals_over(path: &Path, events: usize, from: usize, streams: usize) -> f64 {
    let store = Store::open(path).expect("a store");
    let mut elapsed = Duration::ZERO;
    for batch_first in (from..from + events).step_by(BATCH_EVENTS) {
        let numbers = batch_first..batch_first + BATCH_EVENTS;
        let started = if streams == 1 {
            let batch: Vec<NewEvent> = numbers.map(bulk_event).collect();
            let started = Instant::now();
            let _ = store
                .write(|session| session.append_unchecked("bulk", ExpectedVersion::Any, &batch))
                .expect("a bulk append");
            started
        } else {
            let batch: Vec<(String, [NewEvent; 1])> = numbers
                .map(|i| (placed(i, streams).0, [bulk_event(i)]))
                .collect();
            let started = Instant::now();
            store
                .write(|session| {
                    for (stream, event) in &batch {
                        let _ = session.append_unchecked(stream, ExpectedVersion::Any, event)?;
                    }
                    Ok(())
                })
                .expect("a bulk append");
            started
        };
        elapsed += started.elapsed();
    }
    per_second(events as u64, elapsed)
}

/// Raw redb: each record's bytes (encoded as annals would, for its stream) under one key.
pub(crate) fn bulk_redb(path: &Path, events: usize, streams: usize) -> f64 {
    let db = redb::Database::create(path).expect("a redb file");
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<Vec<u8>> = (batch_first..batch_first + BATCH_EVENTS)
            .map(|i| {
                let (stream, version) = placed(i, streams);
                stored_bytes_in(&stream, version, &bulk_event(i), i as u64)
            })
            .collect();
        let started = Instant::now();
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            for (i, record) in (batch_first as u64..).zip(&batch) {
                table.insert(i, record.as_slice()).expect("insert");
            }
        }
        txn.commit().expect("commit");
        elapsed += started.elapsed();
    }
    per_second(events as u64, elapsed)
}

/// SQLite: each event's row chained by hash, indexed by stream and version, and its lease
/// row upserted.
pub(crate) fn bulk_sqlite(path: &Path, events: usize, streams: usize) -> f64 {
    let mut sqlite = Sqlite::open(path);
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<(NewEvent, String, u64, Acquired)> = (batch_first
            ..batch_first + BATCH_EVENTS)
            .map(|i| {
                let event = bulk_event(i);
                let Some(LeaseEvent::Acquired(acquired)) = decode_lease(&event) else {
                    unreachable!("bulk events are acquisitions")
                };
                let (stream, version) = placed(i, streams);
                (event, stream, version, acquired)
            })
            .collect();
        let started = Instant::now();
        let txn = sqlite.conn.transaction().expect("a transaction");
        for (event, stream, version, a) in &batch {
            Sqlite::event(
                &txn,
                &mut sqlite.prev,
                &mut sqlite.position,
                stream,
                *version as i64,
                event,
                (&a.resource, &a.holder, a.token, a.expires_at_ms),
            );
        }
        txn.commit().expect("commit");
        elapsed += started.elapsed();
    }
    // Fold the WAL into the database so the file size is the data's.
    sqlite
        .conn
        .pragma_update(None, "wal_checkpoint", "TRUNCATE")
        .ok();
    per_second(events as u64, elapsed)
}
