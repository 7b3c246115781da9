//! Subscriptions (history, then live, each record once, in order) and durable consumer
//! checkpoints.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::consumers::{self, ConsumerCommand, ConsumerError, ConsumerOutcome, ConsumerRefusal};
use annals::subscribe::{CHUNK_RECORDS_MAX, subscribe, subscribe_stream};
use annals::{
    Direction, Durability, Error, ExpectedVersion, Position, Record, Store, Writer,
    error::StoreError, log::StreamVersion, subscribe::Subscription, writer::WriterOptions,
};

use crate::common::event;

fn deferred_writer(store: &Arc<Store>) -> Writer {
    let options = WriterOptions {
        durability: Durability::Deferred,
        ..WriterOptions::default()
    };
    Writer::start(Arc::clone(store), options).unwrap()
}

fn all_records(store: &Store) -> Vec<Record> {
    store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
}

async fn take(subscription: &mut Subscription, count: usize) -> Vec<Record> {
    let mut records = Vec::with_capacity(count);
    while records.len() < count {
        records.push(subscription.next().await.unwrap());
    }
    records
}

fn summary(records: &[Record]) -> Vec<(Position, annals::log::Digest)> {
    records.iter().map(|r| (r.position, r.hash)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn subscribers_see_exactly_the_log_in_order_while_8_writers_append_50_000_events() {
    const WRITERS: u64 = 8;
    const APPENDS: u64 = 125;
    const EVENTS_PER_APPEND: u64 = 50;
    const TOTAL: usize = (WRITERS * APPENDS * EVENTS_PER_APPEND) as usize;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(crate::common::open_exclusive(&dir.path().join("log.redb")));
    store
        .append(
            "before",
            ExpectedVersion::Any,
            &[event("test.before", 0, b"")],
        )
        .unwrap()
        .expect_done();
    let writer = deferred_writer(&store);

    // One subscriber from the start, reading while the writers run; one that is not polled
    // at all until they are done (the slowest possible); one on a single stream.
    let mut live = writer.subscribe(Position(0));
    let mut idle = writer.subscribe(Position(0));
    let mut stream = writer.subscribe_stream("w/3", StreamVersion(0));
    let reader = tokio::spawn(async move { take(&mut live, TOTAL + 1).await });
    let stream_reader =
        tokio::spawn(
            async move { take(&mut stream, (APPENDS * EVENTS_PER_APPEND) as usize).await },
        );

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let writer = writer.clone();
            tokio::spawn(async move {
                for a in 0..APPENDS {
                    let events = (0..EVENTS_PER_APPEND)
                        .map(|e| event("test.load", a, format!("{w}/{a}/{e}").as_bytes()))
                        .collect();
                    writer
                        .append(format!("w/{w}"), ExpectedVersion::Any, events)
                        .await
                        .unwrap()
                        .expect_done();
                }
            })
        })
        .collect();
    for task in writers {
        task.await.unwrap();
    }
    writer.close().await.unwrap();

    let log = all_records(&store);
    assert_eq!(log.len(), TOTAL + 1);
    let seen = reader.await.unwrap();
    assert_eq!(summary(&seen), summary(&log));
    assert_eq!(summary(&take(&mut idle, TOTAL + 1).await), summary(&log));
    let stream_log: Vec<Record> = log.iter().filter(|r| r.stream == "w/3").cloned().collect();
    let stream_seen = stream_reader.await.unwrap();
    assert_eq!(stream_seen, stream_log);
    assert!(
        stream_seen
            .iter()
            .zip(0..)
            .all(|(r, v)| r.version == StreamVersion(v))
    );

    // Starting in the middle of the log, off a chunk boundary.
    let from = Position(CHUNK_RECORDS_MAX as u64 * 3 + 17);
    let mut middle = subscribe(Arc::clone(&store), from);
    let rest = take(&mut middle, TOTAL + 1 - from.0 as usize).await;
    assert_eq!(summary(&rest), summary(&log[from.0 as usize..]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_from_past_the_head_waits_for_the_log_to_reach_it() {
    let (_dir, store) = crate::common::store();
    let store = Arc::new(store);
    let mut ahead = subscribe(Arc::clone(&store), Position(3));
    let mut other_stream = subscribe_stream(Arc::clone(&store), "b", StreamVersion(1));
    let waiting = tokio::spawn(async move {
        let record = ahead.next().await.unwrap();
        let stream_record = other_stream.next().await.unwrap();
        (record, stream_record)
    });
    // Plain store appends, not through a writer: every commit is announced.
    for (stream, payload) in [("a", "0"), ("b", "1"), ("a", "2"), ("b", "3"), ("a", "4")] {
        store
            .append(
                stream,
                ExpectedVersion::Any,
                &[event("k", 0, payload.as_bytes())],
            )
            .unwrap()
            .expect_done();
    }
    let (record, stream_record) = waiting.await.unwrap();
    assert_eq!(
        (record.position, record.payload),
        (Position(3), b"3".to_vec())
    );
    assert_eq!(
        (stream_record.stream.as_str(), stream_record.version),
        ("b", StreamVersion(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consumer_resumes_where_it_stopped_after_the_store_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = Arc::new(Store::open(&path).unwrap());
    assert_eq!(
        consumers::resume(&store.snapshot().unwrap(), "mailer").unwrap(),
        Position(0)
    );
    let writer = Writer::start(Arc::clone(&store), WriterOptions::default()).unwrap();
    for i in 0..100u8 {
        writer
            .append(
                "mail",
                ExpectedVersion::Any,
                vec![event("mail.queued", 0, &[i])],
            )
            .await
            .unwrap()
            .expect_done();
    }
    let mut mail = writer.subscribe_stream("mail", StreamVersion(0));
    let handled = take(&mut mail, 60).await;
    let last = handled.last().unwrap();
    let checkpoint = ConsumerCommand::checkpoint_after("mailer", last, 5_000);
    let recorded = writer.execute(checkpoint.clone()).await.unwrap();
    assert!(matches!(recorded, ConsumerOutcome::Checkpointed { .. }));
    assert!(matches!(
        writer.execute(checkpoint).await.unwrap(),
        ConsumerOutcome::Unchanged { .. }
    ));
    let stale = ConsumerCommand::checkpoint_after("mailer", &handled[10], 6_000);
    assert!(matches!(
        writer.execute(stale).await.unwrap(),
        ConsumerOutcome::Refused {
            reason: ConsumerRefusal::Behind,
            ..
        }
    ));
    let raw = writer
        .append(
            "consumer/mailer",
            ExpectedVersion::Any,
            vec![event("consumer.checkpointed", 0, b"")],
        )
        .await;
    assert!(matches!(
        raw,
        Err(Error::Store(StoreError::ReservedKind { .. }))
    ));
    drop(mail);
    writer.close().await.unwrap();
    drop(store);

    let store = Arc::new(Store::open(&path).unwrap());
    let from = consumers::resume(&store.snapshot().unwrap(), "mailer").unwrap();
    assert_eq!(from, Position(60));
    let next = subscribe(Arc::clone(&store), from).next().await.unwrap();
    assert_eq!((next.position, next.payload), (Position(60), vec![60]));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    let state = annals::Audit::of(&store)
        .state_json("consumers", None)
        .unwrap();
    assert_eq!(state["positions"][0]["position"], 59);
}

/// Writes `payloads` as the log at `path`, then a checkpoint of `consumer` copied from
/// elsewhere, as an import of a rewritten log would carry it.
fn rewritten_log(path: &std::path::Path, payloads: &[&[u8]], checkpoint: &Record) {
    let store = Store::open(path).unwrap();
    for payload in payloads {
        store
            .append(
                "mail",
                ExpectedVersion::Any,
                &[event("mail.queued", 0, payload)],
            )
            .unwrap()
            .expect_done();
    }
    store
        .execute(&ConsumerCommand::checkpoint_after("mailer", checkpoint, 1))
        .unwrap()
        .expect_done();
}

#[test]
fn resuming_after_the_log_was_replaced_beneath_the_consumer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let handled = {
        let store = Store::open(&path).unwrap();
        for payload in [b"a", b"b", b"c", b"d"] {
            store
                .append(
                    "mail",
                    ExpectedVersion::Any,
                    &[event("mail.queued", 0, payload)],
                )
                .unwrap()
                .expect_done();
        }
        let handled = store.snapshot().unwrap().get(Position(2)).unwrap().unwrap();
        store
            .execute(&ConsumerCommand::checkpoint_after("mailer", &handled, 1))
            .unwrap()
            .expect_done();
        assert_eq!(
            consumers::resume(&store.snapshot().unwrap(), "mailer").unwrap(),
            Position(3)
        );
        handled
    };

    // Another log, rewritten at position 2, moved into the original's place.
    let other = dir.path().join("other.redb");
    rewritten_log(&other, &[b"a", b"b", b"X", b"d"], &handled);
    std::fs::rename(&other, &path).unwrap();
    let store = Store::open(&path).unwrap();
    let found = store
        .snapshot()
        .unwrap()
        .get(Position(2))
        .unwrap()
        .unwrap()
        .hash;
    match consumers::resume(&store.snapshot().unwrap(), "mailer") {
        Err(Error::Consumer(ConsumerError::Diverged {
            consumer,
            position,
            stored,
            found: Some(now),
        })) => {
            assert_eq!((consumer.as_str(), position), ("mailer", Position(2)));
            assert_eq!((stored, now), (handled.hash, found));
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    drop(store);

    // A log that now ends before the checkpoint's position.
    let short = dir.path().join("short.redb");
    rewritten_log(&short, &[b"a"], &handled);
    let store = Store::open(&short).unwrap();
    assert!(matches!(
        consumers::resume(&store.snapshot().unwrap(), "mailer"),
        Err(Error::Consumer(ConsumerError::Diverged { found: None, .. }))
    ));
}
