//! The whole command path through the overlay, held against redb: the same random commands
//! (every domain's, raw appends, refusals, partial writes) run in one store's redb write
//! transactions and, in another store, in write sessions over a [`Writer`] into the overlay,
//! each acknowledged command published as the next generation and drained into redb now and
//! then. Every read through the overlay (the head, every record, every projection's state)
//! answers as the first store does, and after the last drain both files hold the same log.

use std::sync::Arc;

use redb::backends::InMemoryBackend;

use super::{Durability, Sharing, Store, StoreOptions, WriteSession};
use crate::demo::Rng;
use crate::log::read::{Direction, Snapshot};
use crate::projection::digest::digest;
use crate::projection::table::TableSource;
use crate::record::Position;
use crate::storage::{Generation, Reader, Writer};
use crate::testing::random::random_command;

fn store() -> Store {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        journal: None,
        ..StoreOptions::default()
    };
    Store::open_with_backend(InMemoryBackend::new(), options).expect("an in-memory store")
}

/// The overlay's store: redb's last commit under `generation`.
fn reader(store: &Store, generation: &Generation) -> Reader {
    let txn = store.db.begin_read().expect("a read");
    Reader::over(Arc::new(txn), generation.clone())
}

/// Runs `command` in a write session over the overlay of `store` at `generation`: the next
/// generation when the command committed something, `None` when it wrote nothing or failed.
fn run_over(
    store: &Store,
    generation: &Generation,
    command: impl FnOnce(&mut WriteSession<'_>),
) -> Option<Generation> {
    let writer = Writer::overlay(reader(store, generation));
    let finished = {
        let database = store.database().expect("writable");
        let mut session =
            WriteSession::open(&writer, database, &store.projections, &store.limits, None)
                .expect("a session");
        command(&mut session);
        session.finish()
    };
    match finished {
        Ok(finished) if finished.appended => {
            Some(generation.with(writer.into_scratch().expect("the overlay's changes")))
        }
        _ => None,
    }
}

/// What a read of `snapshot` shows: every record, and each projection's state digest.
fn shown(snapshot: &Snapshot, store: &Store) -> (Vec<crate::Record>, Vec<String>) {
    let records = snapshot
        .records(Position(0), Direction::Forward)
        .expect("records")
        .collect::<crate::error::Result<Vec<_>>>()
        .expect("sound records");
    let state = snapshot.state();
    let digests = store
        .projections
        .iter()
        .map(|projection| {
            let source: &dyn TableSource = &state;
            format!(
                "{:?}",
                digest(source, projection.as_ref()).expect("a digest")
            )
        })
        .collect();
    (records, digests)
}

#[test]
fn commands_through_the_overlay_read_and_drain_as_redb_commits_them() {
    for seed in 1..=3u64 {
        let oracle = store();
        let overlaid = store();
        let mut generation = Generation::default();
        let mut drains = 0;
        let mut now_ms = 1_700_000_000_000u64;
        for step in 0..600u64 {
            now_ms += 1 + step % 7;
            let draw = seed * 1_000_003 + step;
            let committed = oracle
                .write_with(Durability::Immediate, |session| {
                    random_command(&mut Rng::new(draw), session, now_ms);
                    Ok(())
                })
                .is_ok();
            let next = run_over(&overlaid, &generation, |session| {
                random_command(&mut Rng::new(draw), session, now_ms);
            });
            let head = oracle.head().expect("the head");
            if let Some(next) = next {
                generation = next;
            }
            let snapshot = Snapshot::over(reader(&overlaid, &generation)).expect("a snapshot");
            assert_eq!(
                snapshot.head().expect("the head"),
                head,
                "seed {seed}, step {step}: the overlay's head (the command committed: {committed})"
            );
            if step % 40 == 39 {
                let expected = shown(&oracle.snapshot().expect("a snapshot"), &oracle);
                assert_eq!(
                    shown(&snapshot, &overlaid),
                    expected,
                    "seed {seed}, step {step}"
                );
            }
            drop(snapshot);
            if step % 53 == 52 {
                let database = overlaid.database().expect("writable");
                let txn = database.begin_write().expect("a drain");
                generation.drain_into(&txn).expect("drain");
                txn.commit().expect("commit the drain");
                generation = Generation::default();
                drains += 1;
            }
        }
        let database = overlaid.database().expect("writable");
        let txn = database.begin_write().expect("the last drain");
        generation.drain_into(&txn).expect("drain");
        txn.commit().expect("commit the drain");
        assert!(drains > 0);
        let expected = shown(&oracle.snapshot().expect("a snapshot"), &oracle);
        let drained = overlaid.snapshot().expect("a snapshot of redb alone");
        assert!(
            expected.0.len() > 200,
            "seed {seed} wrote {} records",
            expected.0.len()
        );
        assert_eq!(shown(&drained, &overlaid), expected, "seed {seed}, drained");
        assert!(overlaid.verify().expect("verify").is_sound(), "seed {seed}");
    }
}
