//! The async writer: 64 tasks at once mixing raw appends, lease and outbox commands;
//! failures isolated inside a batch; back-pressure; closing; durability modes.

use annals::testing::setup::ExpectDone;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use annals::command::Emit;
use annals::leases::events::LeaseEvent;
use annals::leases::{FencingToken, LeaseCommand, LeaseGuard, LeaseOutcome, LeaseRefusal};
use annals::outbox::{OutboxCommand, OutboxEvent, OutboxOutcome};
use annals::projection::{TableSource, WriteTables};
use annals::testing::internals::event::DomainEvent;
use annals::writer::WriterStats;
use annals::{
    AppendOutcome, Command, Direction, Durability, Error, ExpectedVersion, NewEvent, Position,
    Record, Result, Store, StoreOptions, Writer, command::Decision, error::StoreError,
    error::WriterError, projection::Projection, writer::WriterOptions,
};
use tokio::task::JoinHandle;

use crate::common::event;

fn open(path: &std::path::Path) -> Arc<Store> {
    Arc::new(Store::open(path).unwrap())
}

fn start(store: &Arc<Store>, options: WriterOptions) -> Writer {
    Writer::start(Arc::clone(store), options).unwrap()
}

fn deferred() -> WriterOptions {
    WriterOptions {
        durability: Durability::Deferred,
        ..WriterOptions::default()
    }
}

fn all_records(store: &Store) -> Vec<Record> {
    store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
}

/// A command that holds the writer's thread inside its batch until released (its sender
/// dropped), so that a test can queue jobs that then join its batch together. Released, it
/// stays open: a re-run of its batch passes straight through.
struct Gate {
    entered: tokio::sync::mpsc::UnboundedSender<()>,
    release: std::sync::mpsc::Receiver<()>,
}

impl Command for Gate {
    type Outcome = ();
    fn decide(&self, _: &dyn TableSource) -> Result<Decision<()>> {
        // The test may have stopped listening; the gate opens either way.
        let _ = self.entered.send(());
        let _ = self.release.recv();
        Ok(Decision::nothing(()))
    }
}

/// Holds `writer` busy until the returned sender is dropped.
async fn hold(writer: &Writer) -> (JoinHandle<Result<()>>, std::sync::mpsc::Sender<()>) {
    let (entered, mut inside) = tokio::sync::mpsc::unbounded_channel();
    let (open, release) = std::sync::mpsc::channel();
    let gate = Gate { entered, release };
    let handle = tokio::spawn({
        let writer = writer.clone();
        async move { writer.execute(gate).await }
    });
    inside.recv().await.unwrap();
    (handle, open)
}

/// Spawns `job` and returns once the writer has accepted it (it is in the queue), so that
/// jobs queued one after the other keep their order.
async fn enqueue<T: Send + 'static>(
    writer: &Writer,
    job: impl Future<Output = T> + Send + 'static,
) -> JoinHandle<T> {
    let before = writer.queued();
    let handle = tokio::spawn(job);
    while writer.queued() == before {
        tokio::task::yield_now().await;
    }
    handle
}

/// A deterministic pseudo-random sequence (xorshift64), one per task.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % sides
    }
}

/// What a task was told, to be found in the log.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Told {
    Appended(Vec<u8>),
    Lease(&'static str, String, u64, u64),
    Outbox(&'static str, String),
}

/// Outbox keys the tasks share, so that most enqueues find the key already there.
const OUTBOX_KEYS: u64 = 150;

const RESOURCES: [&str; 3] = ["alpha", "beta", "gamma"];
const TTL_MS: u64 = 40;

async fn busy_task(writer: Writer, task: u64, steps: u64) -> Vec<Told> {
    let mut dice = Dice(0x9E37_79B9_7F4A_7C15 ^ (task + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let holder = format!("task-{task}");
    let mut now_ms = 1_000_000 + dice.roll(100);
    let mut held: BTreeMap<&str, FencingToken> = BTreeMap::new();
    let mut told = Vec::new();
    for step in 0..steps {
        now_ms += 1 + dice.roll(30);
        let resource = RESOURCES[dice.roll(3) as usize];
        let roll = dice.roll(10);
        if roll < 2 {
            let key = format!("mail-{}", dice.roll(OUTBOX_KEYS));
            let command = if dice.roll(2) == 0 {
                OutboxCommand::Enqueue {
                    key,
                    peer: format!("peer-{}", task % 4),
                    kind: "event".into(),
                    payload: holder.clone().into_bytes(),
                    now_ms,
                }
            } else {
                OutboxCommand::Deliver { key, now_ms }
            };
            let delivering = matches!(command, OutboxCommand::Deliver { .. });
            match writer.execute(command).await.unwrap() {
                OutboxOutcome::Enqueued { row } => {
                    told.push(Told::Outbox("outbox.enqueued", row.key))
                }
                OutboxOutcome::Updated { row } if delivering => {
                    told.push(Told::Outbox("outbox.delivered", row.key))
                }
                OutboxOutcome::AlreadyEnqueued { .. } | OutboxOutcome::Refused { .. } => {}
                other => panic!("unexpected outbox outcome {other:?}"),
            }
            continue;
        }
        if roll < 5 {
            let payload = format!("{holder}/{step}").into_bytes();
            let stream = format!("app/{}", task % 8);
            let events = vec![event("app.step", now_ms, &payload)];
            match writer.append(stream, ExpectedVersion::Any, events).await {
                Ok(AppendOutcome::Appended(_)) => told.push(Told::Appended(payload)),
                other => panic!("a raw append failed: {other:?}"),
            }
            continue;
        }
        let command = match held.get(resource) {
            Some(&token) if roll < 8 => LeaseCommand::Renew {
                resource: resource.into(),
                holder: holder.clone(),
                token,
                ttl_ms: TTL_MS,
                now_ms,
            },
            Some(&token) => LeaseCommand::Release {
                resource: resource.into(),
                holder: holder.clone(),
                token,
                now_ms,
            },
            None => LeaseCommand::Acquire {
                resource: resource.into(),
                holder: holder.clone(),
                ttl_ms: TTL_MS,
                now_ms,
            },
        };
        match writer.execute(command).await.unwrap() {
            LeaseOutcome::Granted { lease, renewed } => {
                assert_eq!(lease.holder, holder);
                let kind = if renewed {
                    "lease.renewed"
                } else {
                    "lease.acquired"
                };
                told.push(Told::Lease(
                    kind,
                    lease.resource,
                    lease.token.0,
                    lease.expires_at_ms,
                ));
                held.insert(resource, lease.token);
            }
            LeaseOutcome::Released { lease } => {
                told.push(Told::Lease(
                    "lease.released",
                    lease.resource,
                    lease.token.0,
                    0,
                ));
                held.remove(resource);
            }
            LeaseOutcome::Refused { .. } => {
                held.remove(resource);
            }
        }
    }
    told
}

/// Replays the lease events in log order: every grant of a new token comes after the previous
/// holder's lease lapsed (by the grant's own clock) or was released, tokens strictly increase,
/// and renewals and releases name the live token.
fn check_fencing(records: &[Record]) {
    #[derive(Default)]
    struct Resource {
        last_token: u64,
        live: Option<(u64, u64)>,
    }
    let mut resources: BTreeMap<String, Resource> = BTreeMap::new();
    for record in records {
        let Some(event) = LeaseEvent::from_record(record).unwrap() else {
            continue;
        };
        let at = record.at_ms;
        match event {
            LeaseEvent::Acquired(e) => {
                let r = resources.entry(e.resource).or_default();
                assert!(
                    e.token > r.last_token,
                    "token reused at {}",
                    record.position
                );
                if let Some((_, expires_at_ms)) = r.live {
                    assert!(
                        expires_at_ms <= at,
                        "two live holders at {}",
                        record.position
                    );
                }
                r.last_token = e.token;
                r.live = Some((e.token, e.expires_at_ms));
            }
            LeaseEvent::Renewed(e) => {
                let r = resources.get_mut(&e.resource).unwrap();
                let (token, expires_at_ms) = r.live.unwrap();
                assert_eq!(
                    token, e.token,
                    "renewed a dead token at {}",
                    record.position
                );
                assert!(
                    at < expires_at_ms,
                    "renewed a lapsed lease at {}",
                    record.position
                );
                r.live = Some((token, e.expires_at_ms));
            }
            LeaseEvent::Released(e) => {
                let r = resources.get_mut(&e.resource).unwrap();
                assert_eq!(r.live.map(|(token, _)| token), Some(e.token));
                r.live = None;
            }
            other => panic!("unexpected lease event {other:?}"),
        }
    }
}

fn told_by_log(records: &[Record]) -> Vec<Told> {
    let mut told = Vec::new();
    for record in records {
        match OutboxEvent::from_record(record).unwrap() {
            Some(OutboxEvent::Enqueued(e)) => {
                told.push(Told::Outbox("outbox.enqueued", e.key));
                continue;
            }
            Some(OutboxEvent::Delivered(e)) => {
                told.push(Told::Outbox("outbox.delivered", e.key));
                continue;
            }
            Some(other) => panic!("unexpected outbox event {other:?}"),
            None => {}
        }
        match LeaseEvent::from_record(record).unwrap() {
            Some(LeaseEvent::Acquired(e)) => told.push(Told::Lease(
                "lease.acquired",
                e.resource,
                e.token,
                e.expires_at_ms,
            )),
            Some(LeaseEvent::Renewed(e)) => told.push(Told::Lease(
                "lease.renewed",
                e.resource,
                e.token,
                e.expires_at_ms,
            )),
            Some(LeaseEvent::Released(e)) => {
                told.push(Told::Lease("lease.released", e.resource, e.token, 0))
            }
            Some(other) => panic!("unexpected lease event {other:?}"),
            None => told.push(Told::Appended(record.payload.clone())),
        }
    }
    told
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_tasks_commit_every_accepted_command_exactly_once_with_sound_fencing() {
    const TASKS: u64 = 64;
    const STEPS: u64 = 40;
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let writer = start(&store, WriterOptions::default());
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| tokio::spawn(busy_task(writer.clone(), task, STEPS)))
        .collect();
    let mut told = Vec::new();
    for task in tasks {
        told.extend(task.await.unwrap());
    }
    let stats = writer.stats();
    writer.close().await.unwrap();

    let records = all_records(&store);
    for (index, record) in records.iter().enumerate() {
        assert_eq!(
            record.position,
            Position(index as u64),
            "positions are gapless"
        );
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        Position(records.len() as u64)
    );
    let mut logged = told_by_log(&records);
    logged.sort();
    told.sort();
    assert_eq!(logged, told, "every accepted command is in the log once");
    let outbox: Vec<&Told> = logged
        .iter()
        .filter(|t| matches!(t, Told::Outbox(..)))
        .collect();
    let mut distinct = outbox.clone();
    distinct.dedup();
    assert_eq!(
        distinct, outbox,
        "each key enqueued and delivered at most once"
    );
    assert!(
        outbox.len() > 100,
        "the outbox saw real work: {}",
        outbox.len()
    );
    check_fencing(&records);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    assert_eq!(stats.jobs, TASKS * STEPS);
    assert!(
        stats.batches < stats.jobs,
        "concurrent jobs share batches: {stats:?}"
    );
}

/// A command that appends to a good stream, then to one whose name is over the limit: the
/// second append is refused after the first has written.
struct HalfWritten;

impl Command for HalfWritten {
    type Outcome = ();
    fn decide(&self, _: &dyn TableSource) -> Result<Decision<()>> {
        let emit = |stream: String| Emit {
            stream,
            expected: ExpectedVersion::Any,
            events: vec![event("test.half", 7, b"half")],
        };
        Ok(Decision {
            emits: vec![emit("s/half".into()), emit("x".repeat(1000))],
            outcome: (),
        })
    }
}

/// A command that panics while it decides.
struct Panics;

impl Command for Panics {
    type Outcome = ();
    fn decide(&self, _: &dyn TableSource) -> Result<Decision<()>> {
        panic!("a command that panics (on purpose, in a test)")
    }
}

/// A projection whose `apply` fails on `test.poison`, after the record is in the log.
struct Picky;

impl Projection for Picky {
    fn name(&self) -> &'static str {
        "picky"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    fn apply(&self, _: &WriteTables<'_>, record: &Record) -> Result<()> {
        if record.kind == "test.poison" {
            return Err(Error::UndecodableEvent {
                kind: record.kind.clone(),
                schema: record.schema,
                problem: annals::error::PayloadProblem::Undecodable {
                    cause: "picky refuses test.poison".into(),
                },
            });
        }
        Ok(())
    }
}

fn open_picky(path: &std::path::Path) -> Store {
    let options = StoreOptions {
        create: true,
        projections: vec![Arc::new(Picky)],
        ..StoreOptions::default()
    };
    Store::open_with(path, options).unwrap()
}

/// One job of the mixed batch, runnable through the writer or directly on a store.
#[derive(Clone)]
enum Step {
    Append(&'static str, ExpectedVersion, NewEvent),
    Guarded(&'static str, NewEvent, LeaseGuard),
    Lease(LeaseCommand),
    HalfWritten,
    Panics,
}

impl Step {
    async fn through(self, writer: Writer) -> String {
        match self {
            Step::Append(stream, expected, e) => {
                format!("{:?}", writer.append(stream, expected, vec![e]).await)
            }
            Step::Guarded(stream, e, guard) => format!(
                "{:?}",
                writer
                    .append_guarded(stream, ExpectedVersion::Any, vec![e], guard)
                    .await
            ),
            Step::Lease(command) => format!("{:?}", writer.execute(command).await),
            Step::HalfWritten => format!("{:?}", writer.execute(HalfWritten).await),
            Step::Panics => format!("{:?}", writer.execute(Panics).await),
        }
    }

    /// Run alone, in its own transaction; `None` for the panicking step.
    fn alone(&self, store: &Store) -> Option<String> {
        Some(match self {
            Step::Append(stream, expected, e) => {
                format!(
                    "{:?}",
                    store.append(stream, *expected, std::slice::from_ref(e))
                )
            }
            Step::Guarded(stream, e, guard) => format!(
                "{:?}",
                store.append_guarded(stream, ExpectedVersion::Any, std::slice::from_ref(e), guard)
            ),
            Step::Lease(command) => format!("{:?}", store.execute(command)),
            Step::HalfWritten => format!("{:?}", store.execute(&HalfWritten)),
            Step::Panics => return None,
        })
    }
}

fn acquire(holder: &str, now_ms: u64) -> LeaseCommand {
    LeaseCommand::Acquire {
        resource: "r".into(),
        holder: holder.into(),
        ttl_ms: 1_000,
        now_ms,
    }
}

fn guard(token: u64) -> LeaseGuard {
    LeaseGuard {
        resource: "r".into(),
        token: FencingToken(token),
        now_ms: 1_002,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_jobs_fail_alone_and_leave_no_trace_in_their_batch() {
    let keyed = |payload: &[u8]| event("test.keyed", 3, payload).with_idempotency_key("k");
    let steps = vec![
        Step::Append("s/a", ExpectedVersion::NoStream, event("test.a", 1, b"0")),
        // The stream exists by now: the job before created it, in the same batch.
        Step::Append("s/a", ExpectedVersion::NoStream, event("test.a", 1, b"1")),
        Step::Lease(acquire("x", 1_000)),
        Step::Append(
            "s/long",
            ExpectedVersion::Any,
            event("test.big", 2, &vec![0; 2 * 1024 * 1024]),
        ),
        Step::Append("s/b", ExpectedVersion::Any, keyed(b"one")),
        Step::Append("s/b", ExpectedVersion::Any, keyed(b"two")),
        Step::HalfWritten,
        Step::Append("s/d", ExpectedVersion::Any, event("test.poison", 4, b"")),
        Step::Lease(acquire("y", 1_001)),
        Step::Guarded("s/e", event("test.e", 5, b"stale"), guard(2)),
        Step::Panics,
        Step::Guarded("s/e", event("test.e", 5, b"live"), guard(1)),
        Step::Append("s/b", ExpectedVersion::Any, keyed(b"one")),
        Step::Append(
            "s/a",
            ExpectedVersion::Exact(annals::log::StreamVersion(0)),
            event("test.a", 6, b"2"),
        ),
    ];

    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open_picky(&dir.path().join("batched.redb")));
    let writer = start(&store, WriterOptions::default());
    let (gate, open_gate) = hold(&writer).await;
    let mut answers = Vec::new();
    for step in steps.clone() {
        answers.push(enqueue(&writer, step.through(writer.clone())).await);
    }
    drop(open_gate);
    gate.await.unwrap().unwrap();
    let mut batched = Vec::new();
    for answer in answers {
        batched.push(answer.await.unwrap());
    }
    assert_eq!(
        writer.stats(),
        WriterStats {
            batches: 1,
            jobs: 1 + steps.len() as u64,
            reruns: 3,
        },
        "every step queued while the gate held the writer joins the gate's batch, re-run \
         after each of the three jobs that failed after writing"
    );
    writer.close().await.unwrap();

    let alone = open_picky(&dir.path().join("alone.redb"));
    for (step, answer) in steps.iter().zip(&batched) {
        match step.alone(&alone) {
            Some(expected) => assert_eq!(*answer, expected),
            None => assert_eq!(
                *answer,
                format!("{:?}", Err::<(), _>(Error::from(WriterError::Panicked)))
            ),
        }
    }
    for (index, outcome) in [1, 3, 5, 6, 7, 9, 10].map(|i| (i, &batched[i])) {
        assert!(outcome.starts_with("Err("), "step {index} fails: {outcome}");
    }
    assert!(
        batched[8].contains("Held"),
        "a refusal is an outcome, not an error"
    );
    assert!(
        batched[12].contains("Duplicate"),
        "the refused conflict left the key as it was"
    );

    let (batched_log, alone_log) = (all_records(&store), all_records(&alone));
    assert_eq!(batched_log.len(), 5);
    assert_eq!(batched_log, alone_log, "the same records, hashes and chain");
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        alone.snapshot().unwrap().head().unwrap()
    );
    assert!(
        batched_log
            .iter()
            .all(|r| r.kind != "test.half" && r.kind != "test.poison")
    );
    assert!(
        annals::Audit::of(&store).verify().unwrap().is_sound(),
        "projections match a replay"
    );
    for projection in ["leases", "consumers"] {
        assert_eq!(
            annals::Audit::of(&store)
                .state_json(projection, None)
                .unwrap(),
            annals::Audit::of(&alone)
                .state_json(projection, None)
                .unwrap()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_makes_callers_wait_and_drops_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let options = WriterOptions {
        batch_max: 1,
        queue_depth: 1,
        ..WriterOptions::default()
    };
    let writer = start(&store, options);
    let (gate, open_gate) = hold(&writer).await;
    let first = enqueue(&writer, {
        let writer = writer.clone();
        async move {
            writer
                .append("s", ExpectedVersion::Any, vec![event("k", 0, b"first")])
                .await
        }
    })
    .await;
    assert_eq!(writer.queued(), 1);

    let second = {
        let writer = writer.clone();
        async move {
            writer
                .append("s", ExpectedVersion::Any, vec![event("k", 0, b"second")])
                .await
        }
    };
    tokio::pin!(second);
    tokio::select! {
        biased;
        answer = &mut second => panic!("the queue is full, yet the job was answered: {answer:?}"),
        () = std::future::ready(()) => {}
    }
    let waiting: Vec<_> = (0..20u8)
        .map(|i| {
            let writer = writer.clone();
            tokio::spawn(async move {
                writer
                    .append("t", ExpectedVersion::Any, vec![event("k", 0, &[i])])
                    .await
            })
        })
        .collect();
    assert_eq!(writer.queued(), 1, "nobody got past the full queue");

    drop(open_gate);
    gate.await.unwrap().unwrap();
    assert_eq!(first.await.unwrap().unwrap().first_position(), Position(0));
    assert_eq!(second.await.unwrap().first_position(), Position(1));
    for job in waiting {
        job.await.unwrap().unwrap().expect_done();
    }
    writer.close().await.unwrap();
    let records = all_records(&store);
    assert_eq!(records.len(), 22);
    assert_eq!(records[0].payload, b"first");
    assert_eq!(records[1].payload, b"second");
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_answers_every_accepted_job_makes_it_durable_and_releases_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = Arc::new(crate::common::open_exclusive(&path));
    let writer = start(&store, deferred());
    let (gate, open_gate) = hold(&writer).await;
    let mut accepted = Vec::new();
    for i in 0..10u8 {
        let job = {
            let writer = writer.clone();
            async move {
                writer
                    .append("s", ExpectedVersion::Any, vec![event("k", 0, &[i])])
                    .await
            }
        };
        accepted.push(enqueue(&writer, job).await);
    }
    let late = writer.clone();
    let closing = tokio::spawn(writer.close());
    drop(open_gate);
    gate.await.unwrap().unwrap();
    closing.await.unwrap().unwrap();
    for job in accepted {
        job.await.unwrap().unwrap().expect_done();
    }
    let refused = late
        .append("s", ExpectedVersion::Any, vec![event("k", 0, b"late")])
        .await;
    assert!(matches!(refused, Err(Error::Writer(WriterError::Closed))));
    assert!(matches!(
        late.flush().await,
        Err(Error::Writer(WriterError::Closed))
    ));
    assert_eq!(
        late.stats().jobs,
        11,
        "the gate and the ten appends; closing is not a job"
    );
    drop(late);

    drop(store);
    let reopened = Store::open(&path).expect("the writer released the file");
    assert_eq!(all_records(&reopened).len(), 10);
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_last_handle_answers_every_accepted_job() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let writer = start(&store, WriterOptions::default());
    let (gate, open_gate) = hold(&writer).await;
    let mut accepted = Vec::new();
    for i in 0..5u8 {
        let job = {
            let writer = writer.clone();
            async move {
                writer
                    .append("s", ExpectedVersion::Any, vec![event("k", 0, &[i])])
                    .await
            }
        };
        accepted.push(enqueue(&writer, job).await);
    }
    drop(writer);
    drop(open_gate);
    gate.await.unwrap().unwrap();
    for job in accepted {
        job.await.unwrap().unwrap().expect_done();
    }
    assert_eq!(all_records(&store).len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_batches_are_visible_at_once_and_durable_after_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = Arc::new(crate::common::open_exclusive(&path));
    let writer = start(&store, deferred());
    for i in 0..100u8 {
        writer
            .append("s", ExpectedVersion::Any, vec![event("k", 0, &[i])])
            .await
            .unwrap()
            .expect_done();
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        Position(100)
    );
    writer.flush().await.unwrap();
    writer.close().await.unwrap();
    drop(store);
    let reopened = Store::open(&path).unwrap();
    assert_eq!(
        reopened.snapshot().unwrap().head().unwrap().next,
        Position(100)
    );
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_append_through_the_writer_is_the_stores_own_error() {
    let (_dir, store) = crate::common::store();
    let store = Arc::new(store);
    let writer = start(&store, WriterOptions::default());
    let reserved = writer
        .append(
            "s",
            ExpectedVersion::Any,
            vec![event("lease.acquired", 0, b"")],
        )
        .await;
    assert!(matches!(
        reserved,
        Err(Error::Store(StoreError::ReservedKind { .. }))
    ));
    let held = writer.execute(acquire("a", 0)).await.unwrap();
    let token = match held {
        LeaseOutcome::Granted { lease, .. } => lease.token,
        other => panic!("{other:?}"),
    };
    let stale = LeaseGuard {
        resource: "r".into(),
        token: FencingToken(token.0 + 1),
        now_ms: 1,
    };
    let fenced = writer.execute_guarded(acquire("a", 1), stale).await;
    assert!(matches!(
        fenced,
        Err(Error::Store(StoreError::Fenced { .. }))
    ));
    let refused = writer.execute(acquire("b", 1)).await.unwrap();
    assert!(matches!(
        refused,
        LeaseOutcome::Refused {
            reason: LeaseRefusal::Held,
            ..
        }
    ));
    writer.close().await.unwrap();
}

#[test]
fn options_out_of_range_and_read_only_stores_are_refused() {
    let (dir, store) = crate::common::store();
    let store = Arc::new(store);
    for options in [
        WriterOptions {
            batch_max: 0,
            ..WriterOptions::default()
        },
        WriterOptions {
            queue_depth: annals::writer::QUEUE_DEPTH_CAP + 1,
            ..WriterOptions::default()
        },
    ] {
        let refused = Writer::start(Arc::clone(&store), options);
        assert!(matches!(
            refused,
            Err(Error::Writer(WriterError::InvalidOption { .. }))
        ));
    }
    drop(store);
    let read_only = Store::open_read_only(dir.path().join("log.redb")).unwrap();
    let refused = Writer::start(Arc::new(read_only), WriterOptions::default());
    assert!(matches!(refused, Err(Error::ReadOnly)));
}

/// OS threads and no runtime anywhere: `execute_blocking` and `append_blocking` answer each
/// thread with its own outcome, and the sixteen threads that queued while a batch was held
/// open commit in at most one more batch rather than one each.
#[test]
fn threads_without_a_runtime_share_batches_through_the_blocking_calls() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let writer = start(&store, WriterOptions::default());
    let (entered, mut inside) = tokio::sync::mpsc::unbounded_channel();
    let (open_gate, release) = std::sync::mpsc::channel::<()>();
    let gate = std::thread::spawn({
        let writer = writer.clone();
        move || writer.execute_blocking(Gate { entered, release })
    });
    inside.blocking_recv().unwrap();

    let leases: Vec<_> = (0..8u8)
        .map(|n| {
            let writer = writer.clone();
            std::thread::spawn(move || {
                writer.execute_blocking(LeaseCommand::Acquire {
                    resource: format!("r{n}"),
                    holder: format!("h{n}"),
                    ttl_ms: 1_000,
                    now_ms: 10,
                })
            })
        })
        .collect();
    let appends: Vec<_> = (0..8u8)
        .map(|n| {
            let writer = writer.clone();
            std::thread::spawn(move || {
                writer.append_blocking(
                    format!("s{n}"),
                    ExpectedVersion::NoStream,
                    vec![event("k", 0, &[n])],
                )
            })
        })
        .collect();
    // Every thread's job waits in the queue behind the held batch.
    while writer.queued() < 16 {
        std::thread::yield_now();
    }

    drop(open_gate);
    gate.join().unwrap().unwrap();
    for (n, lease) in leases.into_iter().enumerate() {
        match lease.join().unwrap().unwrap() {
            LeaseOutcome::Granted { lease, renewed } => {
                assert!(!renewed);
                assert_eq!(lease.holder, format!("h{n}"));
            }
            other => panic!("thread {n}: {other:?}"),
        }
    }
    let mut positions: Vec<Position> = appends
        .into_iter()
        .map(|append| append.join().unwrap().unwrap().first_position())
        .collect();
    positions.sort();
    positions.dedup();
    assert_eq!(positions.len(), 8, "each append has a position of its own");
    let stats = writer.stats();
    assert_eq!(stats.jobs, 17);
    assert!(stats.batches <= 2, "one batch per thread: {stats:?}");
    writer.flush_blocking().unwrap();

    let records = all_records(&store);
    assert_eq!(records.len(), 16);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

/// `Writer::queued` counts a job once its send has put it in the queue, not once its room is
/// reserved: a caller that waits for the count to rise has its job queued, so jobs queued one
/// after the other from different tasks run in that order. Counting reserved room (a69ee89)
/// let the next job's send overtake one whose room was reserved but not yet filled, and the
/// jobs ran out of order now and then; this queues 16 rounds of 32 jobs, each from its own task
/// on four worker threads, and checks every record's place.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn jobs_queued_one_after_another_run_in_that_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("order.redb"));
    let writer = start(&store, WriterOptions::default());
    let rounds = 16u32;
    let per_round = 32u32;
    for round in 0..rounds {
        let (gate, open_gate) = hold(&writer).await;
        let mut answers = Vec::new();
        for job in 0..per_round {
            let writer = writer.clone();
            let payload = (round * per_round + job).to_le_bytes().to_vec();
            answers.push(
                enqueue(&writer.clone(), async move {
                    writer
                        .append(
                            "ordered",
                            ExpectedVersion::Any,
                            vec![event("k", 0, &payload)],
                        )
                        .await
                })
                .await,
            );
        }
        drop(open_gate);
        gate.await.unwrap().unwrap();
        for answer in answers {
            assert!(answer.await.unwrap().is_ok());
        }
    }
    writer.close().await.unwrap();
    let payloads: Vec<u32> = store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
        .iter()
        .map(|record| u32::from_le_bytes(record.payload[..4].try_into().unwrap()))
        .collect();
    let expected: Vec<u32> = (0..rounds * per_round).collect();
    assert_eq!(
        payloads, expected,
        "the jobs ran in the order they were queued"
    );
}
