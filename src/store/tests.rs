//! The whole command path through the overlay, held against redb: the same random commands
//! (every domain's, raw appends, refusals, partial writes) run in one store's redb write
//! transactions and, in another store, in write sessions over a [`Writer`] into the overlay,
//! each acknowledged command published as the next generation and drained into redb now and
//! then. Every read through the overlay (the head, every record, every projection's state)
//! answers as the first store does, and after the last drain both files hold the same log.

use redb::backends::InMemoryBackend;

use super::{Durability, Sharing, Store, StoreOptions};
use crate::demo::Rng;
use crate::log::read::{Direction, Snapshot};
use crate::projection::digest::digest;
use crate::projection::table::TableSource;
use crate::record::Position;
use crate::storage::Generation;
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
            // A failure leaves the generation as it was: what a refused command leaves.
            let _ = overlaid.write_over_overlay(&mut generation, |session| {
                random_command(&mut Rng::new(draw), session, now_ms);
                Ok(())
            });
            let head = oracle.head().expect("the head");
            let snapshot = overlaid.snapshot_over(&generation).expect("a snapshot");
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
                overlaid
                    .drain_overlay(&mut generation, true)
                    .expect("a drain");
                drains += 1;
            }
        }
        overlaid
            .drain_overlay(&mut generation, true)
            .expect("the last drain");
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
