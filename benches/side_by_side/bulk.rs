//! Bulk appends: 1,000 events to a durable commit.

use std::path::Path;
use std::time::{Duration, Instant};

use annals::leases::events::LeaseEvent;
use annals::{ExpectedVersion, NewEvent, Store};

use crate::samples::per_second;
use crate::sqlite::Sqlite;
use crate::work::{bulk_event, decode_lease, stored_bytes};
use crate::{BATCH_EVENTS, RAW};

/// Appends `events` bulk events from number `from`, 1,000 per durable commit, each applied to
/// the projections. Events are built outside the timing.
pub(crate) fn bulk_annals(path: &Path, events: usize, from: usize) -> f64 {
    let store = Store::open(path).expect("a store");
    let mut elapsed = Duration::ZERO;
    for batch_first in (from..from + events).step_by(BATCH_EVENTS) {
        let batch: Vec<NewEvent> = (batch_first..batch_first + BATCH_EVENTS)
            .map(bulk_event)
            .collect();
        let started = Instant::now();
        let _ = store
            .write(|session| session.append_unchecked("bulk", ExpectedVersion::Any, &batch))
            .expect("a bulk append");
        elapsed += started.elapsed();
    }
    per_second(events as u64, elapsed)
}

pub(crate) fn bulk_redb(path: &Path, events: usize) -> f64 {
    let db = redb::Database::create(path).expect("a redb file");
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<Vec<u8>> = (batch_first..batch_first + BATCH_EVENTS)
            .map(|i| stored_bytes(&bulk_event(i), i as u64))
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

pub(crate) fn bulk_sqlite(path: &Path, events: usize) -> f64 {
    let mut sqlite = Sqlite::open(path);
    let mut elapsed = Duration::ZERO;
    for batch_first in (0..events).step_by(BATCH_EVENTS) {
        let batch: Vec<(NewEvent, String, String, u64, u64)> = (batch_first
            ..batch_first + BATCH_EVENTS)
            .map(|i| {
                let event = bulk_event(i);
                let Some(LeaseEvent::Acquired(a)) = decode_lease(&event) else {
                    unreachable!("bulk events are acquisitions")
                };
                (event, a.resource, a.holder, a.token, a.expires_at_ms)
            })
            .collect();
        let started = Instant::now();
        let txn = sqlite.conn.transaction().expect("a transaction");
        for (event, resource, holder, token, expires_at_ms) in &batch {
            Sqlite::event(
                &txn,
                &mut sqlite.prev,
                &mut sqlite.position,
                "bulk",
                event,
                (resource, holder, *token, *expires_at_ms),
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
