//! Promotion of a follower; the old writer refused; a forked follower refused.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::replication::{Follower, FollowerOptions, ReplicatingWriter, ReplicationError};
use annals::{Durability, ExpectedVersion, NewEvent, Position, Store};

use crate::cluster::{Cluster, log};
use crate::replicate::{assert_same_log, write_records};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_promoted_follower_continues_the_log_and_the_old_writer_is_refused() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("failover");
    let old_store = Arc::new(Store::open(dir.path().join("old.redb")).unwrap());
    let old = ReplicatingWriter::start(
        Arc::clone(&old_store),
        cluster.jetstream().await,
        log.clone(),
    );
    write_records(&old_store, 2_000);
    old.replicated(Position(2_000)).await.unwrap();

    let new_store = Arc::new(Store::open(dir.path().join("new.redb")).unwrap());
    let follower = Follower::new(
        Arc::clone(&new_store),
        cluster.jetstream().await,
        log.clone(),
        FollowerOptions::default(),
    )
    .unwrap();
    let new = ReplicatingWriter::from_publisher(follower.promote().await.unwrap());
    assert_same_log(&old_store, &new_store);
    for i in 0..5u64 {
        new.write_with(Durability::Replicated, move |session| {
            session.append(
                "after",
                ExpectedVersion::Any,
                &[NewEvent::new("k", i, "promoted")],
            )
        })
        .await
        .unwrap()
        .expect_done();
    }
    let last_old = old_store
        .snapshot()
        .unwrap()
        .get(Position(1_999))
        .unwrap()
        .unwrap();
    let first_new = new_store
        .snapshot()
        .unwrap()
        .get(Position(2_000))
        .unwrap()
        .unwrap();
    assert_eq!(
        first_new.prev, last_old.hash,
        "the promoted writer chains from the stream's last"
    );

    // The old writer still runs; its next record is a late publish at position 2,000.
    let late = old
        .write_with(Durability::Replicated, |session| {
            session.append(
                "late",
                ExpectedVersion::Any,
                &[NewEvent::new("k", 9, "stale")],
            )
        })
        .await;
    assert!(
        late.is_err(),
        "a replicated write of the old writer is never acknowledged"
    );
    let status = old.status().borrow().clone();
    assert!(
        status.refused >= 1,
        "the server refused the late publish: {status:?}"
    );
    assert_eq!(status.stored, Position(2_000));
    match old.stopped().await {
        ReplicationError::Superseded { stream_records, .. } => assert_eq!(stream_records, 2_005),
        other => panic!("the old writer stopped with {other}"),
    }

    // A third host following the stream ends with the promoted writer's log.
    let third_store = Arc::new(Store::open(dir.path().join("third.redb")).unwrap());
    let third = Follower::new(
        Arc::clone(&third_store),
        cluster.jetstream().await,
        log.clone(),
        FollowerOptions::default(),
    )
    .unwrap();
    assert_eq!(third.catch_up().await.unwrap(), Position(2_005));
    assert_same_log(&new_store, &third_store);
    new.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_follower_whose_log_forks_from_the_stream_is_refused_at_the_position() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("fork");
    let writer_store = Arc::new(Store::open(dir.path().join("writer.redb")).unwrap());
    let writer = ReplicatingWriter::start(
        Arc::clone(&writer_store),
        cluster.jetstream().await,
        log.clone(),
    );
    write_records(&writer_store, 10);
    writer.replicated(Position(10)).await.unwrap();

    // The same first three records, then a different fourth.
    let forked = Arc::new(Store::open(dir.path().join("forked.redb")).unwrap());
    let first: Vec<_> = (0..3)
        .map(|p| {
            writer_store
                .snapshot()
                .unwrap()
                .get(Position(p))
                .unwrap()
                .unwrap()
        })
        .collect();
    forked
        .write(|session| {
            for record in &first {
                session.append_sealed(std::slice::from_ref(record))?;
            }
            Ok(())
        })
        .unwrap();
    forked
        .append(
            "elsewhere",
            ExpectedVersion::Any,
            &[NewEvent::new("k", 1, "fork")],
        )
        .unwrap()
        .expect_done();
    let follower = Follower::new(
        Arc::clone(&forked),
        cluster.jetstream().await,
        log,
        FollowerOptions::default(),
    )
    .unwrap();
    match follower.catch_up().await {
        Err(ReplicationError::Fork { position, .. }) => assert_eq!(position, Position(3)),
        other => panic!("the forked follower got {other:?}"),
    }
    assert_eq!(
        forked.snapshot().unwrap().head().unwrap().next,
        Position(4),
        "nothing unchecked was appended"
    );
    writer.stop();
}
