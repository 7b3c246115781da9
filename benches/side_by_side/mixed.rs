//! The mixed workload: the reference stores' commands in turn (leases acquire, renew and
//! release under their fencing token; outbox enqueue, claim and ack; a span's start, event and
//! end; a registry upsert and a fuel charge), one durable commit per command, from 1, 8 and 64
//! clients. annals runs them through `Store` from OS threads (each command its own commit,
//! redb's writer serializing them) and through `Writer` from tokio tasks (group commit).
//! `mixed_sqlite.rs` runs the same cycle in SQL.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use annals::leases::{LeaseCommand, LeaseOutcome};
use annals::outbox::{ClaimToken, OutboxCommand, OutboxOutcome, PullCommand, PullOutcome, RowAck};
use annals::registry::{FuelOutcome, InstanceCommand, InstanceFields, InstanceOutcome, RecordFuel};
use annals::runs::{
    Attributes, SpanCommand, SpanCommandOutcome, SpanKind, SpanOrigin, SpanOutcome,
};
use annals::{Sharing, Store, Writer, writer::WriterOptions};

use crate::samples::{in_threads, per_second};
use crate::work::open_new;
use crate::{EPOCH_MS, TTL_MS};

/// The client counts of the mixed rows.
pub(crate) const CLIENTS: [usize; 3] = [1, 8, 64];

/// The keys of one client count's figures: annals from threads through `Store` (a commit
/// each) and through `Writer`'s blocking calls (batched), annals from tasks, SQLite with a
/// connection per client, SQLite with one shared connection, the better of the two.
pub(crate) struct MixedKeys {
    pub(crate) clients: usize,
    pub(crate) threads: &'static str,
    pub(crate) writer_threads: &'static str,
    pub(crate) tasks: &'static str,
    pub(crate) sqlite_conns: &'static str,
    pub(crate) sqlite_shared: &'static str,
    pub(crate) sqlite_best: &'static str,
}

pub(crate) const MIXED_KEYS: [MixedKeys; 3] = [
    MixedKeys {
        clients: CLIENTS[0],
        threads: "mixed.annals_threads_1",
        writer_threads: "mixed.annals_writer_threads_1",
        tasks: "mixed.annals_tasks_1",
        sqlite_conns: "mixed.sqlite_conns_1",
        sqlite_shared: "mixed.sqlite_shared_1",
        sqlite_best: "mixed.sqlite_best_1",
    },
    MixedKeys {
        clients: CLIENTS[1],
        threads: "mixed.annals_threads_8",
        writer_threads: "mixed.annals_writer_threads_8",
        tasks: "mixed.annals_tasks_8",
        sqlite_conns: "mixed.sqlite_conns_8",
        sqlite_shared: "mixed.sqlite_shared_8",
        sqlite_best: "mixed.sqlite_best_8",
    },
    MixedKeys {
        clients: CLIENTS[2],
        threads: "mixed.annals_threads_64",
        writer_threads: "mixed.annals_writer_threads_64",
        tasks: "mixed.annals_tasks_64",
        sqlite_conns: "mixed.sqlite_conns_64",
        sqlite_shared: "mixed.sqlite_shared_64",
        sqlite_best: "mixed.sqlite_best_64",
    },
];

/// One command of the cycle every client runs, in this order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Step {
    Acquire,
    Enqueue,
    Start,
    Renew,
    Event,
    Claim,
    Upsert,
    Ack,
    End,
    Fuel,
    Release,
}

pub(crate) const CYCLE: [Step; 11] = [
    Step::Acquire,
    Step::Enqueue,
    Step::Start,
    Step::Renew,
    Step::Event,
    Step::Claim,
    Step::Upsert,
    Step::Ack,
    Step::End,
    Step::Fuel,
    Step::Release,
];

/// The outbox payload's size, as the bulk events' payloads.
pub(crate) const OUTBOX_PAYLOAD_BYTES: usize = 200;

/// A client's place in the cycle and what it holds between commands. Each client works on
/// entities of its own, so every command succeeds (a refusal appends nothing and would
/// flatter annals) and clients contend only for the store.
pub(crate) struct Client {
    pub(crate) id: usize,
    /// Commands done so far.
    pub(crate) done: u64,
    /// The fencing token of the lease the client holds.
    pub(crate) token: u64,
}

impl Client {
    pub(crate) fn new(id: usize) -> Client {
        Client {
            id,
            done: 0,
            token: 0,
        }
    }

    pub(crate) fn step(&self) -> Step {
        CYCLE[(self.done % CYCLE.len() as u64) as usize]
    }

    /// Which pass through the cycle this is: names a fresh outbox row, claim and run.
    pub(crate) fn pass(&self) -> u64 {
        self.done / CYCLE.len() as u64
    }

    pub(crate) fn now_ms(&self) -> u64 {
        EPOCH_MS + self.done
    }

    pub(crate) fn resource(&self) -> String {
        format!("mixed-{}", self.id)
    }

    pub(crate) fn holder(&self) -> String {
        format!("client-{}", self.id)
    }

    pub(crate) fn peer(&self) -> String {
        format!("peer-{}", self.id)
    }

    pub(crate) fn outbox_key(&self) -> String {
        format!("row-{}-{}", self.id, self.pass())
    }

    pub(crate) fn claim_token(&self) -> String {
        format!("claim-{}-{}", self.id, self.pass())
    }

    pub(crate) fn run(&self) -> String {
        format!("run-{}-{}", self.id, self.pass())
    }

    /// The run's root span: span ids are unique across runs, so it is named after its run.
    pub(crate) fn root_span(&self) -> String {
        format!("{}/root", self.run())
    }

    pub(crate) fn handle(&self) -> String {
        format!("agent-{}", self.id)
    }

    /// The instance's deployed tree, new each pass so the upsert changes something.
    pub(crate) fn tree(&self) -> String {
        format!("tree-{}", self.pass())
    }

    pub(crate) fn outbox_payload(&self) -> Vec<u8> {
        let mut payload = format!(
            "{{\"client\":{},\"pass\":{},\"pad\":\"",
            self.id,
            self.pass()
        )
        .into_bytes();
        payload.resize(OUTBOX_PAYLOAD_BYTES - 2, b'x');
        payload.extend_from_slice(b"\"}");
        payload
    }

    /// The command of this step, as annals takes it.
    pub(crate) fn command(&self) -> Mixed {
        let now_ms = self.now_ms();
        match self.step() {
            Step::Acquire => Mixed::Lease(LeaseCommand::Acquire {
                resource: self.resource(),
                holder: self.holder(),
                ttl_ms: TTL_MS,
                now_ms,
            }),
            Step::Renew => Mixed::Lease(LeaseCommand::Renew {
                resource: self.resource(),
                holder: self.holder(),
                token: annals::leases::FencingToken(self.token),
                ttl_ms: TTL_MS,
                now_ms,
            }),
            Step::Release => Mixed::Lease(LeaseCommand::Release {
                resource: self.resource(),
                holder: self.holder(),
                token: annals::leases::FencingToken(self.token),
                now_ms,
            }),
            Step::Enqueue => Mixed::Outbox(OutboxCommand::Enqueue {
                key: self.outbox_key(),
                peer: self.peer(),
                kind: "event".into(),
                payload: self.outbox_payload(),
                now_ms,
            }),
            Step::Claim => Mixed::Pull(PullCommand::Claim {
                peer: self.peer(),
                token: ClaimToken(self.claim_token()),
                limit: 1,
                lease_ms: annals::outbox::CLAIM_LEASE_MS,
                now_ms,
            }),
            Step::Ack => Mixed::Pull(PullCommand::Ack {
                peer: self.peer(),
                acks: vec![RowAck {
                    key: self.outbox_key(),
                    token: ClaimToken(self.claim_token()),
                }],
                now_ms,
            }),
            Step::Start => Mixed::Span(SpanCommand::Start {
                run: self.run(),
                span: self.root_span(),
                parent: None,
                name: "turn".into(),
                kind: SpanKind::Turn,
                origin: SpanOrigin::Session,
                session_id: Some(format!("session-{}", self.id)),
                job_name: None,
                attributes: Attributes::new(),
                billing_mode: None,
                writer: self.holder(),
                now_ms,
            }),
            Step::Event => Mixed::Span(SpanCommand::AppendEvent {
                run: self.run(),
                span: self.root_span(),
                event_type: "tool_call".into(),
                payload: r#"{"tool":"read","path":"README.md"}"#.into(),
                payload_bytes_max: None,
                now_ms,
            }),
            Step::End => Mixed::Span(SpanCommand::End {
                run: self.run(),
                span: self.root_span(),
                outcome: SpanOutcome::Success,
                reason: None,
                usage: annals::runs::SpanUsage {
                    input_tokens: Some(1_200),
                    output_tokens: Some(300),
                    ..Default::default()
                },
                attributes: Attributes::new(),
                now_ms,
            }),
            Step::Upsert => Mixed::Instance(InstanceCommand::Upsert {
                handle: self.handle(),
                fields: InstanceFields {
                    store: Some(format!("/var/lib/agents/{}.db", self.handle())),
                    tree: Some(self.tree()),
                    ..InstanceFields::default()
                },
                now_ms,
            }),
            Step::Fuel => Mixed::Fuel(RecordFuel {
                instance: self.handle(),
                caller: String::new(),
                op: "read".into(),
                fuel: 7,
                now_ms,
            }),
        }
    }

    /// After a command: the token a lease grant carries is the one to renew and release.
    pub(crate) fn advance(&mut self, token: Option<u64>) {
        if let Some(token) = token {
            self.token = token;
        }
        self.done += 1;
    }
}

/// A command of the cycle, of whichever domain.
pub(crate) enum Mixed {
    Lease(LeaseCommand),
    Outbox(OutboxCommand),
    Pull(PullCommand),
    Span(SpanCommand),
    Instance(InstanceCommand),
    Fuel(RecordFuel),
}

// Each outcome must be the success the cycle expects: a refused command appends nothing.

fn leased(outcome: LeaseOutcome) -> Option<u64> {
    match outcome {
        LeaseOutcome::Granted { lease, .. } => Some(lease.token.0),
        LeaseOutcome::Released { .. } => None,
        refused => panic!("each client owns its resource: {refused:?}"),
    }
}

fn enqueued(outcome: OutboxOutcome) -> Option<u64> {
    assert!(
        matches!(outcome, OutboxOutcome::Enqueued { .. }),
        "a fresh key: {outcome:?}"
    );
    None
}

fn pulled(outcome: PullOutcome) -> Option<u64> {
    match outcome {
        PullOutcome::Claimed { rows, .. } => assert_eq!(rows.len(), 1, "the row enqueued"),
        PullOutcome::Acked { acked, .. } => assert_eq!(acked.len(), 1, "the row claimed"),
        refused => panic!("the client's own row: {refused:?}"),
    }
    None
}

fn spanned(outcome: SpanCommandOutcome) -> Option<u64> {
    assert!(
        matches!(
            outcome,
            SpanCommandOutcome::Started { .. }
                | SpanCommandOutcome::EventAppended { .. }
                | SpanCommandOutcome::Ended { .. }
        ),
        "the client's own span: {outcome:?}"
    );
    None
}

fn registered(outcome: InstanceOutcome) -> Option<u64> {
    assert!(
        matches!(
            outcome,
            InstanceOutcome::Added { .. } | InstanceOutcome::Updated { .. }
        ),
        "a new tree each pass: {outcome:?}"
    );
    None
}

fn charged(_: FuelOutcome) -> Option<u64> {
    None
}

/// Runs a mixed command through `$run`, an expression of the command `$c` that returns its
/// outcome as a `Result`, and reads the outcome: the lease token granted, if any.
macro_rules! dispatch {
    ($command:expr, |$c:ident| $run:expr) => {{
        let failed = "a mixed command";
        match $command {
            Mixed::Lease($c) => leased($run.expect(failed)),
            Mixed::Outbox($c) => enqueued($run.expect(failed)),
            Mixed::Pull($c) => pulled($run.expect(failed)),
            Mixed::Span($c) => spanned($run.expect(failed)),
            Mixed::Instance($c) => registered($run.expect(failed)),
            Mixed::Fuel($c) => charged($run.expect(failed)),
        }
    }};
}

/// Runs `command` in its own durable transaction; the lease token it was granted, if any.
pub(crate) fn execute(store: &Store, command: Mixed) -> Option<u64> {
    dispatch!(command, |c| store.execute(&c))
}

/// [`execute`] committed in memory ([`annals::Durability::Deferred`], exclusive mode): a redb
/// commit per command with no sync.
pub(crate) fn execute_deferred(store: &Store, command: Mixed) -> Option<u64> {
    let deferred = annals::Durability::Deferred;
    dispatch!(command, |c| store.write_with(deferred, |s| s.execute(&c)))
}

/// [`execute`] through the overlay, with no redb transaction per command (issue 51).
pub(crate) fn execute_overlay(
    store: &mut annals::testing::internals::overlay::OverlayStore<'_>,
    command: Mixed,
) -> Option<u64> {
    dispatch!(command, |c| store.execute(&c))
}

/// [`execute`] through the writer: answered once its batch's commit is durable.
async fn submit(writer: &Writer, command: Mixed) -> Option<u64> {
    dispatch!(command, |c| writer.execute(c).await)
}

/// [`submit`] from an OS thread, blocking it until the batch's commit is durable.
fn submit_blocking(writer: &Writer, command: Mixed) -> Option<u64> {
    let failed = "a mixed command";
    match command {
        Mixed::Lease(c) => leased(writer.execute_blocking(c).expect(failed)),
        Mixed::Outbox(c) => enqueued(writer.execute_blocking(c).expect(failed)),
        Mixed::Pull(c) => pulled(writer.execute_blocking(c).expect(failed)),
        Mixed::Span(c) => spanned(writer.execute_blocking(c).expect(failed)),
        Mixed::Instance(c) => registered(writer.execute_blocking(c).expect(failed)),
        Mixed::Fuel(c) => charged(writer.execute_blocking(c).expect(failed)),
    }
}

/// What a timed mixed run did.
pub(crate) struct MixedRun {
    pub(crate) per_s: f64,
    pub(crate) commands: u64,
    /// Write transactions committed: a commit per command through `Store`, a batch's through
    /// a `Writer`.
    pub(crate) commits: u64,
}

/// `clients` OS threads each running the cycle through `Store::execute` for `run_for`.
pub(crate) fn mixed_threads(path: &Path, clients: usize, run_for: Duration) -> MixedRun {
    let store = Arc::new(open_new(path, Sharing::default()));
    let (commands, elapsed) = in_threads(clients, run_for, |id| {
        let store = Arc::clone(&store);
        let mut client = Client::new(id);
        move || {
            let token = execute(&store, client.command());
            client.advance(token);
        }
    });
    MixedRun {
        per_s: per_second(commands, elapsed),
        commands,
        commits: commands,
    }
}

/// `clients` OS threads each running the cycle through one `Writer`'s blocking calls for
/// `run_for`: what a threaded host does for group commit.
pub(crate) fn mixed_writer_threads(path: &Path, clients: usize, run_for: Duration) -> MixedRun {
    let store = Arc::new(open_new(path, Sharing::default()));
    let writer = Writer::start(store, WriterOptions::default()).expect("a writer");
    let (commands, elapsed) = in_threads(clients, run_for, |id| {
        let writer = writer.clone();
        let mut client = Client::new(id);
        move || {
            let token = submit_blocking(&writer, client.command());
            client.advance(token);
        }
    });
    writer.flush_blocking().expect("a flush");
    MixedRun {
        per_s: per_second(commands, elapsed),
        commands,
        commits: writer.stats().batches,
    }
}

/// `clients` tokio tasks each running the cycle through one `Writer` for `run_for`.
pub(crate) async fn mixed_tasks(path: &Path, clients: usize, run_for: Duration) -> MixedRun {
    mixed_tasks_on(
        Arc::new(open_new(path, Sharing::default())),
        clients,
        run_for,
    )
    .await
}

/// [`mixed_tasks`] on `store`, opened as the caller wants it.
pub(crate) async fn mixed_tasks_on(
    store: Arc<Store>,
    clients: usize,
    run_for: Duration,
) -> MixedRun {
    let writer = Writer::start(store, WriterOptions::default()).expect("a writer");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|id| {
            let writer = writer.clone();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut client = Client::new(id);
                while !stop.load(Ordering::Relaxed) {
                    let token = submit(&writer, client.command()).await;
                    client.advance(token);
                }
                client.done
            })
        })
        .collect();
    tokio::time::sleep(run_for).await;
    stop.store(true, Ordering::Relaxed);
    let mut commands = 0;
    for worker in workers {
        commands += worker.await.expect("a client task");
    }
    let elapsed = started.elapsed();
    let commits = writer.stats().batches;
    writer.close().await.expect("close");
    MixedRun {
        per_s: per_second(commands, elapsed),
        commands,
        commits,
    }
}

/// The size of a new store's file, taken off the mixed runs' files before dividing by their
/// commands.
pub(crate) fn empty_bytes_annals(path: &Path) -> f64 {
    drop(open_new(path, Sharing::default()));
    crate::samples::disk_bytes(path)
}
