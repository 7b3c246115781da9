//! One writer, two followers, a node killed with SIGKILL and restarted mid-way.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::replication::ReplicatingWriter;
use annals::{Durability, ExpectedVersion, NewEvent, Position, Store};

use crate::cluster::{Cluster, follower, log};

const RECORDS: u64 = 100_000;
const RECORDS_PER_COMMIT: u64 = 1_000;
/// Every commit also runs this many lease commands, so the followers' projections have rows.
const LEASES_PER_COMMIT: u64 = 4;

/// Writes `RECORDS` records in commits of `RECORDS_PER_COMMIT`, some of them lease commands.
pub fn write_records(store: &Store, records: u64) {
    let mut written = 0;
    while written < records {
        let commit = RECORDS_PER_COMMIT.min(records - written);
        store
            .write(|session| {
                for lease in 0..LEASES_PER_COMMIT.min(commit) {
                    let outcome = session.execute(&LeaseCommand::Acquire {
                        resource: format!("lock-{lease}"),
                        holder: format!("worker-{}", written % 7),
                        ttl_ms: 10,
                        now_ms: 1_000_000 + written,
                    })?;
                    assert!(matches!(
                        outcome,
                        LeaseOutcome::Granted { .. } | LeaseOutcome::Refused { .. }
                    ));
                }
                let raw = commit - LEASES_PER_COMMIT.min(commit);
                let events: Vec<NewEvent> = (0..raw)
                    .map(|i| NewEvent::new("job.done", 1_000 + written + i, vec![b'x'; 100]))
                    .collect();
                if !events.is_empty() {
                    let stream = format!("jobs/{}", written / RECORDS_PER_COMMIT % 16);
                    session
                        .append(&stream, ExpectedVersion::Any, &events)?
                        .expect_done();
                }
                Ok(())
            })
            .expect("a local commit");
        written += commit;
    }
}

/// What two logs must share: head, Merkle root, and each projection's state.
pub fn assert_same_log(a: &Store, b: &Store) {
    let (head_a, head_b) = (
        a.snapshot().unwrap().head().unwrap(),
        b.snapshot().unwrap().head().unwrap(),
    );
    assert_eq!(head_a, head_b);
    let size = head_a.next.0;
    assert_eq!(
        a.snapshot().unwrap().merkle_root(size).unwrap(),
        b.snapshot().unwrap().merkle_root(size).unwrap()
    );
    for projection in ["leases", "registry", "outbox", "runs"] {
        assert_eq!(
            annals::Audit::of(a).state_json(projection, None).unwrap(),
            annals::Audit::of(b).state_json(projection, None).unwrap(),
            "projection {projection}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn followers_end_with_the_writers_head_and_root_through_a_node_killed_and_restarted() {
    let mut cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("replicate");
    let writer_store = Arc::new(Store::open(dir.path().join("writer.redb")).unwrap());
    let writer = ReplicatingWriter::start(
        Arc::clone(&writer_store),
        cluster.jetstream().await,
        log.clone(),
    );
    // The stream exists once the first record is replicated.
    writer
        .write_with(Durability::Replicated, |session| {
            session.append(
                "hello",
                ExpectedVersion::NoStream,
                &[NewEvent::new("hi", 1, "x")],
            )
        })
        .await
        .unwrap()
        .expect_done();
    let mut followers = Vec::new();
    for name in ["a", "b"] {
        let store = Arc::new(Store::open(dir.path().join(format!("{name}.redb"))).unwrap());
        let follower = Arc::new(follower(&store, cluster.jetstream().await, &log));
        let running = Arc::clone(&follower);
        let task = tokio::spawn(async move { running.run().await });
        followers.push((follower, task));
    }
    let writing = {
        let store = Arc::clone(&writer_store);
        tokio::task::spawn_blocking(move || write_records(&store, RECORDS - 1))
    };
    // SIGKILL a node while the followers are a third of the way, restart it at two thirds.
    let mut head_a = followers[0].0.head();
    head_a.wait_for(|head| head.0 >= RECORDS / 3).await.unwrap();
    cluster.kill(1);
    let killed_at = *head_a.borrow();
    head_a
        .wait_for(|head| head.0 >= 2 * RECORDS / 3)
        .await
        .unwrap();
    cluster.restart(1);
    writing.await.unwrap();
    assert!(
        killed_at.0 < RECORDS,
        "the node died while records were still being replicated ({killed_at} of {RECORDS})"
    );
    for (follower, _) in &followers {
        follower
            .head()
            .wait_for(|head| head.0 >= RECORDS)
            .await
            .unwrap();
    }
    assert_eq!(
        writer_store.snapshot().unwrap().head().unwrap().next,
        Position(RECORDS)
    );
    for (follower, task) in &followers {
        assert!(!task.is_finished(), "a follower stopped");
        assert_same_log(&writer_store, follower.store());
        assert!(
            annals::Audit::of(follower.store())
                .verify()
                .unwrap()
                .is_sound()
        );
    }
    for (_, task) in followers {
        task.abort();
    }
    writer.stop();
}
