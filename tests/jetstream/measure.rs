//! Figures for docs/replication.md: printed, never asserted on (timings depend
//! on the machine). Run with `cargo test --features jetstream,testing --test jetstream --release
//! -- --ignored --nocapture measure`.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;
use std::time::{Duration, Instant};

use annals::replication::{Follower, FollowerOptions, ReplicatingWriter, SharedLog, SharedOptions};
use annals::{Durability, ExpectedVersion, NewEvent, Position, Store};

use crate::cluster::{Cluster, log};
use crate::replicate::write_records;
use crate::shared::run_host;

const CATCH_UP_RECORDS: u64 = 50_000;
const LATENCY_COMMITS: usize = 1_000;
const SHARED_COMMANDS: u64 = 2_000;

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * fraction).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement: prints figures and takes a minute; run it with --ignored"]
async fn measure_replication_and_the_shared_log() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();

    // Records per second to a follower catching up with a stream the writer filled.
    let log_a = log("measure");
    let writer_store = Arc::new(Store::open(dir.path().join("writer.redb")).unwrap());
    let writer = ReplicatingWriter::start(
        Arc::clone(&writer_store),
        cluster.jetstream().await,
        log_a.clone(),
    );
    write_records(&writer_store, CATCH_UP_RECORDS);
    writer.replicated(Position(CATCH_UP_RECORDS)).await.unwrap();
    let store = Arc::new(Store::open(dir.path().join("follower.redb")).unwrap());
    let follower = Arc::new(
        Follower::new(
            store,
            cluster.jetstream().await,
            log_a,
            FollowerOptions::default(),
        )
        .unwrap(),
    );
    let started = Instant::now();
    follower.catch_up().await.unwrap();
    let elapsed = started.elapsed();
    println!(
        "replication to a follower: {CATCH_UP_RECORDS} records in {elapsed:.2?}, {:.0} records/s",
        CATCH_UP_RECORDS as f64 / elapsed.as_secs_f64()
    );

    // Commit to replica: from a durable local commit until the follower has appended it.
    let running = Arc::clone(&follower);
    let following = tokio::spawn(async move { running.run().await });
    let mut head = follower.head();
    let mut latencies = Vec::with_capacity(LATENCY_COMMITS);
    for i in 0..LATENCY_COMMITS {
        let started = Instant::now();
        let store = Arc::clone(&writer_store);
        let position = tokio::task::spawn_blocking(move || {
            store
                .append(
                    "latency",
                    ExpectedVersion::Any,
                    &[NewEvent::new("k", i as u64, vec![0; 200])],
                )
                .unwrap()
                .first_position()
        })
        .await
        .unwrap();
        head.wait_for(|head| head.0 > position.0).await.unwrap();
        latencies.push(started.elapsed());
    }
    latencies.sort();
    println!(
        "commit to replica: median {:.2?}, p99 {:.2?} over {LATENCY_COMMITS} single-record commits",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    let started = Instant::now();
    for i in 0..LATENCY_COMMITS {
        writer
            .write_with(Durability::Replicated, move |session| {
                session.append(
                    "replicated",
                    ExpectedVersion::Any,
                    &[NewEvent::new("k", i as u64, vec![0; 200])],
                )
            })
            .await
            .unwrap()
            .expect_done();
    }
    println!(
        "Durability::Replicated writes, one at a time: {:.0}/s",
        LATENCY_COMMITS as f64 / started.elapsed().as_secs_f64()
    );
    following.abort();
    writer.stop();

    // Shared log: two hosts, commands per second in all.
    let log_b = log("measure-shared");
    let mut tasks = Vec::new();
    let started = Instant::now();
    for name in ["east", "west"] {
        let store = Arc::new(Store::open(dir.path().join(format!("{name}.redb"))).unwrap());
        let host = SharedLog::open(
            store,
            cluster.jetstream().await,
            log_b.clone(),
            SharedOptions::default(),
        )
        .await
        .unwrap();
        tasks.push(tokio::spawn(run_host(host, name, SHARED_COMMANDS)));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let elapsed = started.elapsed();
    println!(
        "shared log, two hosts: {} commands in {elapsed:.2?}, {:.0} commands/s",
        2 * SHARED_COMMANDS,
        (2 * SHARED_COMMANDS) as f64 / elapsed.as_secs_f64()
    );
}
