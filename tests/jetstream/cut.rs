//! A cut log replicated: the cut's record goes out as any other record does, a follower that
//! held the whole history keeps it and stays sound, and a new follower starts from the
//! cut's archive (imported) and the stream's messages from the cut on, even once the stream
//! no longer holds the messages before the cut.

use std::sync::Arc;

use annals::replication::{
    Follower, FollowerOptions, ReplicatedLog, ReplicatingWriter, ReplicationError, SEED_OBJECT,
    SeedProblem, fetch_seed, publish_seed, wire,
};
use annals::{Error, Position, Store, error::StoreError};

use crate::cluster::{Cluster, log};
use crate::replicate::{assert_same_log, write_records};

fn assert_sound(store: &Store) {
    let report = annals::Audit::of(store).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cut_replicates_and_a_new_follower_starts_from_its_archive() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("cut");
    let leader = Arc::new(Store::open(dir.path().join("leader.redb")).unwrap());
    let writer =
        ReplicatingWriter::start(Arc::clone(&leader), cluster.jetstream().await, log.clone());
    write_records(&leader, 3_000);
    writer.replicated(Position(3_000)).await.unwrap();
    let follow = |store: &Arc<Store>, jetstream| {
        Follower::new(
            Arc::clone(store),
            jetstream,
            log.clone(),
            FollowerOptions::default(),
        )
        .unwrap()
    };
    let early = Arc::new(Store::open(dir.path().join("early.redb")).unwrap());
    assert_eq!(
        follow(&early, cluster.jetstream().await)
            .catch_up()
            .await
            .unwrap(),
        Position(3_000)
    );

    // The leader cuts beside its publisher, then writes on.
    let archive = dir.path().join("leader-0.archive");
    let report = annals::archive::Archives::of(&leader)
        .archive_before(Position(1_500), &archive)
        .unwrap();
    assert_eq!(report.cut.before, Position(1_500));
    write_records(&leader, 500);
    let head = leader.snapshot().unwrap().head().unwrap().next;
    assert!(head > Position(3_001), "the cut record and more: {head:?}");
    writer.replicated(head).await.unwrap();
    assert_sound(&leader);

    // The follower that held everything takes the cut record as a record of the log's: it
    // keeps every record, and its verify checks the cut's claims by replaying to it.
    assert_eq!(
        follow(&early, cluster.jetstream().await)
            .catch_up()
            .await
            .unwrap(),
        head
    );
    assert_same_log(&leader, &early);
    assert_sound(&early);
    let cut_record = early
        .snapshot()
        .unwrap()
        .get(Position(3_000))
        .unwrap()
        .unwrap();
    assert_eq!(cut_record.kind, "annals.cut");

    // A new host starts from the archive, imported, and follows the stream from the cut.
    let late_path = dir.path().join("late.redb");
    let _summary = annals::maintenance::Import::run(&archive, &late_path, &mut |_, _| {}).unwrap();
    let late = Arc::new(Store::open(&late_path).unwrap());
    assert_eq!(
        late.snapshot().unwrap().head().unwrap().next,
        Position(1_500)
    );
    assert_eq!(
        follow(&late, cluster.jetstream().await)
            .catch_up()
            .await
            .unwrap(),
        head
    );
    assert_same_log(&leader, &late);
    assert_sound(&late);
    // The stream's first messages removed (by limits its operator sets), up to the one
    // holding the cut's first kept record: a new host with nothing is told what it lacks, and
    // one that imported the archive still starts.
    let jetstream = cluster.jetstream().await;
    let (holding, first) = trim_to(&jetstream, &log, Position(1_500)).await;
    let empty = Arc::new(Store::open(dir.path().join("empty.redb")).unwrap());
    match follow(&empty, cluster.jetstream().await).catch_up().await {
        Err(ReplicationError::Trimmed {
            needed,
            sequence,
            first: from,
        }) => {
            assert_eq!((needed, sequence, from), (Position(0), holding, first));
        }
        other => panic!("a follower with nothing, on a trimmed stream: {other:?}"),
    }
    assert_eq!(
        empty.snapshot().unwrap().head().unwrap().next,
        Position(0),
        "nothing appended"
    );
    let again_path = dir.path().join("again.redb");
    let _summary = annals::maintenance::Import::run(&archive, &again_path, &mut |_, _| {}).unwrap();
    let again = Arc::new(Store::open(&again_path).unwrap());
    assert_eq!(
        follow(&again, cluster.jetstream().await)
            .catch_up()
            .await
            .unwrap(),
        head
    );
    assert_same_log(&leader, &again);
    assert_sound(&again);
    // The follower that is up to date starts as before.
    assert_eq!(
        follow(&early, cluster.jetstream().await)
            .catch_up()
            .await
            .unwrap(),
        head
    );

    // The leader's archives are its history: replaying them reaches the cut's digests.
    assert_eq!(
        annals::archive::Archives::of(&leader)
            .verify(&[archive], &mut |_| {})
            .unwrap(),
        None
    );
    writer.stop();
}

/// Bounds the log's stream (which denies purges) by limits, as its operator would, to the
/// messages from the one holding `position` on; returns that message's sequence and the
/// position it starts at.
async fn trim_to(
    jetstream: &async_nats::jetstream::Context,
    log: &ReplicatedLog,
    position: Position,
) -> (u64, Position) {
    let stream = jetstream.get_stream(log.stream_name()).await.unwrap();
    let mut holding = 1;
    loop {
        let message = stream.get_raw_message(holding).await.unwrap();
        let (first, records) = wire::frame_span(&message.payload).unwrap();
        if first.0 + u64::from(records) > position.0 {
            break;
        }
        holding += 1;
    }
    let mut config = stream.get_info().await.unwrap().config;
    let last = stream.get_info().await.unwrap().state.last_sequence;
    config.max_messages = (last - holding + 1) as i64;
    let _updated = jetstream.update_stream(config).await.unwrap();
    let state = stream.get_info().await.unwrap().state;
    assert_eq!(
        state.first_sequence, holding,
        "the stream trimmed to its limit"
    );
    let (first, _) =
        wire::frame_span(&stream.get_raw_message(holding).await.unwrap().payload).unwrap();
    (holding, first)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_follower_starts_from_the_seed_alone() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let log = log("seeded");
    let jetstream = cluster.jetstream().await;
    let leader = Arc::new(Store::open(dir.path().join("leader.redb")).unwrap());
    let writer = ReplicatingWriter::start(Arc::clone(&leader), jetstream.clone(), log.clone());
    let late_path = dir.path().join("late.redb");
    // A log with no seed: nothing fetched, nothing written.
    assert_eq!(
        fetch_seed(&jetstream, &log, &late_path).await.unwrap(),
        None
    );
    assert!(!late_path.exists());

    write_records(&leader, 3_000);
    // The writer cuts once the stream holds what the cut removes (the publisher reads its
    // records from the log), however far behind the publisher is when it asks.
    let report = writer
        .archive_before(Position(1_500), dir.path().join("leader-0.archive"))
        .await
        .unwrap();
    assert_eq!(report.cut.before, Position(1_500));
    write_records(&leader, 300);
    let seed = publish_seed(Arc::clone(&leader), &jetstream, &log)
        .await
        .unwrap();
    assert_eq!(seed.head, leader.snapshot().unwrap().head().unwrap());
    assert_eq!(seed.start, Position(1_500));
    // The leader writes on after the seed; the stream keeps only the messages from the cut.
    write_records(&leader, 200);
    let head = leader.snapshot().unwrap().head().unwrap().next;
    writer.replicated(head).await.unwrap();
    let (_, first) = trim_to(&jetstream, &log, Position(1_500)).await;
    assert!(first <= Position(1_500) && first > Position(0), "{first:?}");

    // A new host with nothing but the seed: fetched, checked, and followed from its head.
    let fetched = fetch_seed(&jetstream, &log, &late_path)
        .await
        .unwrap()
        .expect("the seed");
    assert_eq!(fetched, seed);
    let late = Arc::new(Store::open(&late_path).unwrap());
    assert_eq!(late.snapshot().unwrap().start(), Position(1_500));
    let follower = Follower::new(
        Arc::clone(&late),
        jetstream.clone(),
        log.clone(),
        FollowerOptions::default(),
    )
    .unwrap();
    assert_eq!(follower.catch_up().await.unwrap(), head);
    assert_same_log(&leader, &late);
    assert_sound(&late);
    // The seeded log is the cut log: the leader's archive replays to its cut.
    assert_eq!(
        annals::archive::Archives::of(&late)
            .verify(&[dir.path().join("leader-0.archive")], &mut |_| {})
            .unwrap(),
        None
    );
    // A seed is fetched only into a new file.
    match fetch_seed(&jetstream, &log, &late_path).await {
        Err(ReplicationError::Store(error)) => assert!(
            matches!(*error, Error::Store(StoreError::BackupTargetExists { .. })),
            "{error}"
        ),
        other => panic!("a fetch over a log: {other:?}"),
    }

    // A seed whose bytes are not the ones its metadata names is refused, and nothing of it
    // kept at the target.
    let objects = jetstream.get_object_store(log.seed_bucket()).await.unwrap();
    let info = objects.info(SEED_OBJECT).await.unwrap();
    let other = Store::open(dir.path().join("other.redb")).unwrap();
    write_records(&other, 10);
    let other_copy =
        annals::maintenance::Backup::write(&other, dir.path().join("other-copy.redb")).unwrap();
    let mut forged = std::fs::read(&other_copy.path).unwrap();
    let meta = async_nats::jetstream::object_store::ObjectMetadata {
        name: SEED_OBJECT.to_owned(),
        metadata: info.metadata.clone(),
        ..Default::default()
    };
    let _put = objects.put(meta, &mut forged.as_slice()).await.unwrap();
    let refused_path = dir.path().join("refused.redb");
    match fetch_seed(&jetstream, &log, &refused_path).await {
        Err(ReplicationError::SeedRefused {
            problem: SeedProblem::Digest { expected, .. },
            ..
        }) => assert_eq!(expected, seed.digest),
        other => panic!("a forged seed: {other:?}"),
    }
    assert!(!refused_path.exists());
    // With the digest its bytes have, it is still not the log its metadata names.
    let mut metadata = info.metadata.clone();
    let _digest = metadata.insert(
        "annals-blake3".to_owned(),
        blake3::hash(&forged).to_hex().to_string(),
    );
    let meta = async_nats::jetstream::object_store::ObjectMetadata {
        name: SEED_OBJECT.to_owned(),
        metadata,
        ..Default::default()
    };
    forged = std::fs::read(&other_copy.path).unwrap();
    let _put = objects.put(meta, &mut forged.as_slice()).await.unwrap();
    match fetch_seed(&jetstream, &log, &refused_path).await {
        Err(ReplicationError::SeedRefused {
            problem: SeedProblem::Head { claimed, found, .. },
            ..
        }) => assert_eq!((claimed, found), (seed.head.next, Position(10))),
        other => panic!("a seed of another log: {other:?}"),
    }
    assert!(!refused_path.exists());
    writer.stop();
}
