//! What each call of `bench/calls.js` costs from Rust, on a log prepared the same way: the
//! other half of the binding's call-cost table. Prints one JSON object of nanoseconds per
//! call. Run by `bench/calls.js`; by hand:
//!
//! ```sh
//! cargo run --release -p annals-node --example call_cost -- /tmp/calls.redb
//! ```

use std::time::Instant;

use annals::leases::LeaseCommand;
use annals::outbox::OutboxCommand;
use annals::{Direction, ExpectedVersion, NewEvent, Position, Store, StoreOptions};

/// Records appended before timing (the same as `calls.js`).
const RECORDS: u64 = 1000;
const READS: u32 = 20_000;
const WRITES: u32 = 200;
const DEFERRED_WRITES: u32 = 5_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .ok_or("usage: call_cost <fresh log path>")?;
    let store = Store::open_with(
        &path,
        StoreOptions {
            create: true,
            ..StoreOptions::default()
        },
    )?;
    prepare(&store)?;
    let mut timings = Vec::new();
    timings.push((
        "head",
        per_call(READS, || {
            store
                .snapshot()
                .and_then(|snapshot| snapshot.head())
                .map(drop)
        })?,
    ));
    timings.push((
        "get",
        per_call(READS, || {
            store
                .snapshot()
                .and_then(|snapshot| snapshot.get(Position(RECORDS / 2)))
                .map(drop)
        })?,
    ));
    timings.push((
        "readAll100",
        per_call(READS / 10, || {
            store
                .snapshot()
                .and_then(|snapshot| snapshot.read_all(Position(0), Direction::Forward, 100))
                .map(drop)
        })?,
    ));
    timings.push((
        "leaseOf",
        per_call(READS, || {
            annals::leases::lease(&store.snapshot()?.state(), "resource-7").map(drop)
        })?,
    ));
    timings.push((
        "outboxRow",
        per_call(READS, || {
            annals::outbox::row(&store.snapshot()?.state(), "key-7").map(drop)
        })?,
    ));
    let mut now_ms = 10_000_000;
    timings.push((
        "leaseAcquire",
        per_call(WRITES, || {
            now_ms += 1;
            store
                .execute(&LeaseCommand::Acquire {
                    resource: "bench".to_owned(),
                    holder: "holder".to_owned(),
                    ttl_ms: 60_000,
                    now_ms,
                })
                .map(drop)
        })?,
    ));
    drop(store);
    let deferred = Store::open_with(
        format!("{path}.deferred"),
        StoreOptions {
            create: true,
            sharing: annals::Sharing::Exclusive,
            ..StoreOptions::default()
        },
    )?;
    let mut resource = 0;
    timings.push((
        "leaseAcquireDeferred",
        per_call(DEFERRED_WRITES, || {
            resource += 1;
            let command = LeaseCommand::Acquire {
                resource: format!("cpu-{resource}"),
                holder: "holder".to_owned(),
                ttl_ms: 60_000,
                now_ms: 1,
            };
            // As the binding commits a command: a write session, at the store's durability.
            deferred
                .write_with(annals::Durability::Deferred, |session| {
                    session.execute(&command)
                })
                .map(drop)
        })?,
    ));
    deferred.close()?;
    let fields: Vec<String> = timings
        .iter()
        .map(|(name, ns)| format!("\"{name}\":{ns:.0}"))
        .collect();
    println!("{{{}}}", fields.join(","));
    Ok(())
}

/// The log `calls.js` builds: `RECORDS` appends of 200 bytes over 10 streams, 10 leases and
/// 10 outbox rows.
fn prepare(store: &Store) -> annals::Result<()> {
    for i in 0..RECORDS {
        let event = NewEvent::new("bench.event", i, vec![b'x'; 200]);
        let _ = store.append(
            &format!("stream-{}", i % 10),
            ExpectedVersion::Any,
            &[event],
        )?;
    }
    for i in 0..10 {
        let _ = store.execute(&LeaseCommand::Acquire {
            resource: format!("resource-{i}"),
            holder: "holder".to_owned(),
            ttl_ms: 60_000_000,
            now_ms: 1,
        })?;
        let _ = store.execute(&OutboxCommand::Enqueue {
            key: format!("key-{i}"),
            peer: "peer".to_owned(),
            kind: "note".to_owned(),
            payload: vec![b'y'; 200],
            now_ms: 1,
        })?;
    }
    Ok(())
}

/// Mean nanoseconds per call of `call`, over `count` calls after a tenth as many to warm up.
fn per_call(count: u32, mut call: impl FnMut() -> annals::Result<()>) -> annals::Result<f64> {
    for _ in 0..count / 10 {
        call()?;
    }
    let started = Instant::now();
    for _ in 0..count {
        call()?;
    }
    Ok(started.elapsed().as_nanos() as f64 / f64::from(count))
}
