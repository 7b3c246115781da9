//! The demo workload: a small simulated fleet that writes a realistic log across all six
//! projections — hosts registering instances, agents contending for leases with takeovers
//! after expiry, deliveries claimed, acked, retried and expired, runs with nested spans,
//! failures and rollups — and a downstream exporter checkpointing how far it has read (consumers).
//! Runtimes also push their runs' events to the hub's sync ingest, out of order at times,
//! with a retried duplicate and a conflict among them.
//!
//! It commits as a live host would, one durable transaction per command, so stopping it at
//! any moment leaves a log that verifies. The simulation is deterministic (a fixed clock
//! start and a seeded generator), so a fresh file always ends at the same head hash; run on
//! an existing file, it continues after the file's last clock reading with fresh names.

use std::collections::BTreeMap;

use crate::consumers::ConsumerCommand;
use crate::error::Result;
use crate::ingest::IngestCommand;
use crate::leases::{FencingToken, LeaseCommand, LeaseGuard, LeaseOutcome};
use crate::log::Head;
use crate::log::append::ExpectedVersion;
use crate::outbox::decide::{
    Backoff, OutboxCommand, PullCommand, PullOutcome, RowAck, SweepCommand,
};
use crate::outbox::query::ClaimToken;
use crate::record::NewEvent;
use crate::registry::decide::{InstanceCommand, InstanceFields, RecordFuel, SetSetting};
use crate::registry::{InstanceKind, Status};
use crate::runs::decide::{RunCommand, SpanCommand};
use crate::runs::events::{Attributes, BillingMode, SpanKind, SpanOrigin, SpanOutcome, SpanUsage};
use crate::store::{Durability, Store};

/// The simulated clock's start on an empty log: 2026-01-01T00:00:00Z.
pub const DEMO_EPOCH_MS: u64 = 1_767_225_600_000;

/// What the demo wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DemoReport {
    /// Records the demo appended.
    pub records: u64,
    /// Records appended per projection that owns their kind, plus `raw` for the rest.
    pub per_projection: BTreeMap<String, u64>,
    /// The head after the demo.
    pub head: Head,
}

/// A small deterministic generator (SplitMix64): the demo needs variety, not secrecy.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// Counts the records from `from` to the head by the projection that owns their kind.
pub fn count_by_projection(
    store: &Store,
    from: crate::record::Position,
) -> Result<BTreeMap<String, u64>> {
    let mut counts = BTreeMap::new();
    for projection in store.projections().iter() {
        counts.insert(projection.name().to_owned(), 0);
    }
    counts.insert("raw".to_owned(), 0);
    let snapshot = store.snapshot()?;
    for record in snapshot.records(from, crate::log::read::Direction::Forward)? {
        let record = record?;
        let owner = store
            .projections()
            .owner_of_kind(&record.kind)
            .unwrap_or("raw");
        *counts.entry(owner.to_owned()).or_insert(0) += 1;
    }
    Ok(counts)
}

/// Runs the demo on `store` until it has appended at least `target_records` records, calling
/// `progress` with the count so far after each command. Every command commits durably, as a
/// live host's (the command line calls [`run_with`]).
pub fn run(store: &Store, target_records: u64, progress: impl FnMut(u64)) -> Result<DemoReport> {
    run_with(store, Durability::Immediate, target_records, progress)
}

/// Records the demo writes between two durable commits when its commits are deferred.
pub const DEMO_DEFERRED_FLUSH_RECORDS: u64 = 4_096;

/// [`run`] with every command committed with `durability`. The records are the same whatever
/// the durability. With [`Durability::Deferred`] (a store open in [`crate::Sharing::Exclusive`]
/// mode) the demo makes its commits durable with [`Store::flush`] every
/// [`DEMO_DEFERRED_FLUSH_RECORDS`] records and before it returns: a large log is written in
/// minutes rather than at a durable commit per command, and redb's record of the pages that
/// non-durable commits freed, held in memory until a durable one, stays small.
pub fn run_with(
    store: &Store,
    durability: Durability,
    target_records: u64,
    mut progress: impl FnMut(u64),
) -> Result<DemoReport> {
    let start = store.head()?;
    let resume_ms = match start.next.0.checked_sub(1) {
        Some(last) => store
            .get(crate::record::Position(last))?
            .map_or(DEMO_EPOCH_MS, |r| r.at_ms),
        None => DEMO_EPOCH_MS,
    };
    let committer = Committer { store, durability };
    let mut sim = Simulation::new(committer, start.next.0, resume_ms.max(DEMO_EPOCH_MS) + 1);
    sim.setup()?;
    let mut flushed = 0;
    loop {
        let written = store.head()?.next.0 - start.next.0;
        progress(written);
        if written >= target_records {
            break;
        }
        if durability == Durability::Deferred && written - flushed >= DEMO_DEFERRED_FLUSH_RECORDS {
            store.flush()?;
            flushed = written;
        }
        sim.tick()?;
    }
    if durability == Durability::Deferred {
        store.flush()?;
    }
    let head = store.head()?;
    Ok(DemoReport {
        records: head.next.0 - start.next.0,
        per_projection: count_by_projection(store, start.next)?,
        head,
    })
}

const AGENTS: u64 = 6;
const RESOURCES: [&str; 3] = ["deploy-lock", "index-rebuild", "billing-export"];
const PEERS: [&str; 3] = ["hub-eu", "hub-us", "hub-ap"];
const LEASE_TTL_MS: u64 = 2_000;
/// How often (in ticks) a runtime pushes a run's events to the hub's sync ingest.
const INGEST_EVERY_TICKS: u64 = 41;
/// The runtimes' projects with the hub project each belongs to.
const SYNC_PROJECTS: [(&str, &str); 2] = [("web", "hub-eu"), ("api", "hub-us")];
/// The runtimes that push.
const RUNTIMES: [&str; 2] = ["runtime-a", "runtime-b"];

/// One agent's view of the lease it believes it holds.
#[derive(Clone, Debug, Default)]
struct AgentState {
    held: Option<(usize, FencingToken)>,
    /// A crashed agent stops renewing; it wakes later still believing it holds its lease.
    asleep_until_ms: u64,
}

/// The store as the simulation writes to it: each command in a transaction of its own,
/// committed with the demo's durability. Its methods are the store's, so the simulation's
/// steps read as a host's calls.
struct Committer<'s> {
    store: &'s Store,
    durability: Durability,
}

impl Committer<'_> {
    fn execute<C: crate::command::Command>(&self, command: &C) -> Result<C::Outcome> {
        self.store
            .write_with(self.durability, |session| session.execute(command))
    }

    fn append_guarded(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        guard: &LeaseGuard,
    ) -> Result<crate::log::append::AppendOutcome> {
        self.store.write_with(self.durability, |session| {
            session.guard(guard)?;
            session.append(stream, expected, events)
        })
    }

    fn head(&self) -> Result<Head> {
        self.store.head()
    }

    fn get(&self, position: crate::record::Position) -> Result<Option<crate::record::Record>> {
        self.store.get(position)
    }

    fn state(&self) -> Result<crate::projection::table::ReadTables> {
        self.store.state()
    }
}

struct Simulation<'s> {
    store: Committer<'s>,
    rng: Rng,
    now_ms: u64,
    /// Names made unique per demo session, so a rerun on the same file starts fresh entities.
    session: u64,
    agents: Vec<AgentState>,
    next_delivery: u64,
    next_claim: u64,
    next_run: u64,
    /// Open runs: (run id, writer, open spans below the root, spans started so far).
    runs: Vec<OpenRun>,
    ticks: u64,
}

/// A run the simulation is still driving.
#[derive(Clone, Debug)]
struct OpenRun {
    id: String,
    writer: String,
    open_tools: Vec<String>,
    spans: u64,
}

impl OpenRun {
    /// The span new work lands in: the deepest open tool, or the root when none is open.
    fn innermost_span(&self) -> String {
        self.open_tools
            .last()
            .cloned()
            .unwrap_or_else(|| root_span(&self.id))
    }
}

/// The root span of the run `run`: span ids are unique across runs, so each names its run.
fn root_span(run: &str) -> String {
    format!("{run}/root")
}

impl<'s> Simulation<'s> {
    fn new(store: Committer<'s>, session: u64, now_ms: u64) -> Self {
        Simulation {
            store,
            rng: Rng::new(0x00A7_7A15 ^ session),
            now_ms,
            session,
            agents: vec![AgentState::default(); AGENTS as usize],
            next_delivery: 0,
            next_claim: 0,
            next_run: 0,
            runs: Vec::new(),
            ticks: 0,
        }
    }

    fn agent_handle(&self, agent: u64) -> String {
        format!("agent-{agent}-s{}", self.session)
    }

    fn setup(&mut self) -> Result<()> {
        for agent in 0..AGENTS {
            let fields = InstanceFields {
                store: Some(format!("/var/lib/annals/agent-{agent}")),
                identity: Some(crate::hash::hex(&agent.to_le_bytes()).repeat(4)),
                topics: Some(vec!["builds".into()]),
                ..InstanceFields::default()
            };
            let handle = self.agent_handle(agent);
            let _ = self.store.execute(&InstanceCommand::Upsert {
                handle,
                fields,
                now_ms: self.now_ms,
            })?;
            let mailbox = InstanceFields {
                store: Some(format!("/var/lib/annals/mailbox-{agent}")),
                kind: Some(InstanceKind::Mailbox),
                owner: Some(crate::hash::hex(&agent.to_le_bytes()).repeat(4)),
                ..InstanceFields::default()
            };
            let handle = format!("mailbox-{agent}-s{}", self.session);
            let _ = self.store.execute(&InstanceCommand::Upsert {
                handle,
                fields: mailbox,
                now_ms: self.now_ms,
            })?;
        }
        let setting = SetSetting {
            key: "fleet.region".into(),
            value: format!("eu-west-{}", self.session % 3),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&setting)?;
        Ok(())
    }

    fn tick(&mut self) -> Result<()> {
        self.ticks += 1;
        self.now_ms += 50 + self.rng.below(150);
        let agent = self.rng.below(AGENTS);
        self.lease_step(agent)?;
        if self.rng.chance(45) {
            self.enqueue()?;
        }
        if self.rng.chance(35) {
            self.pull()?;
        }
        if self.rng.chance(40) {
            self.charge_fuel(agent)?;
        }
        self.run_step(agent)?;
        if self.ticks.is_multiple_of(97) {
            self.toggle_status()?;
        }
        if self.ticks.is_multiple_of(53) {
            let sweep = SweepCommand::Expire {
                now_ms: self.now_ms,
                max_age_ms: 60_000,
                claim_retry_ms: 20_000,
            };
            let _ = self.store.execute(&sweep)?;
        }
        if self.ticks.is_multiple_of(127) {
            self.checkpoint_consumer()?;
        }
        // The reference hub's labelled leases, pre-summed fuel charges, report rows and the
        // caller-counted `markWaiting` / `markRetry`: on a tick schedule, drawing nothing from
        // the generator, so every other step keeps writing what it wrote before.
        if self.ticks.is_multiple_of(5) {
            self.project_lease_step()?;
        }
        if self.ticks.is_multiple_of(11) {
            self.charge_presummed_fuel()?;
        }
        if self.ticks.is_multiple_of(13) {
            self.report_and_mark()?;
        }
        if self.ticks.is_multiple_of(INGEST_EVERY_TICKS) {
            self.sync_ingest()?;
        }
        if self.ticks.is_multiple_of(211) {
            let prune = SweepCommand::Prune {
                now_ms: self.now_ms,
                older_than_ms: 120_000,
            };
            let _ = self.store.execute(&prune)?;
        }
        Ok(())
    }

    /// Agents contend for leases: holders renew or release, some fall asleep past their
    /// deadline and are taken over, and every holder writes guarded work records.
    fn lease_step(&mut self, agent: u64) -> Result<()> {
        let state = self.agents[agent as usize].clone();
        if state.asleep_until_ms > self.now_ms {
            return Ok(());
        }
        let holder = self.agent_handle(agent);
        match state.held {
            Some((resource, token)) => self.work_under_lease(agent, holder, resource, token),
            None => {
                let resource = self.rng.below(RESOURCES.len() as u64) as usize;
                let command = LeaseCommand::Acquire {
                    resource: RESOURCES[resource].into(),
                    holder,
                    ttl_ms: LEASE_TTL_MS,
                    now_ms: self.now_ms,
                };
                if let LeaseOutcome::Granted { lease, .. } = self.store.execute(&command)? {
                    self.agents[agent as usize].held = Some((resource, lease.token));
                }
                Ok(())
            }
        }
    }

    /// A holder works under the fence of its lease on `resource`, then releases, renews, or
    /// falls asleep; one that slept through a takeover is refused and lets the lease go.
    fn work_under_lease(
        &mut self,
        agent: u64,
        holder: String,
        resource: usize,
        token: FencingToken,
    ) -> Result<()> {
        let guard = LeaseGuard {
            resource: RESOURCES[resource].into(),
            token,
            now_ms: self.now_ms,
        };
        let step = NewEvent::new(
            "work.step",
            self.now_ms,
            format!("{holder} token {}", token.0),
        );
        let fenced = self
            .store
            .append_guarded(
                &format!("work/{}", RESOURCES[resource]),
                ExpectedVersion::Any,
                &[step],
                &guard,
            )
            .is_err();
        let command = if fenced || self.rng.chance(25) {
            self.agents[agent as usize].held = None;
            if fenced {
                return Ok(());
            }
            LeaseCommand::Release {
                resource: RESOURCES[resource].into(),
                holder,
                token,
                now_ms: self.now_ms,
            }
        } else {
            if self.rng.chance(10) {
                self.agents[agent as usize].asleep_until_ms = self.now_ms + 3 * LEASE_TTL_MS;
                return Ok(());
            }
            LeaseCommand::Renew {
                resource: RESOURCES[resource].into(),
                holder,
                token,
                ttl_ms: LEASE_TTL_MS,
                now_ms: self.now_ms,
            }
        };
        if !matches!(self.store.execute(&command)?, LeaseOutcome::Granted { .. }) {
            self.agents[agent as usize].held = None;
        }
        Ok(())
    }

    fn enqueue(&mut self) -> Result<()> {
        self.next_delivery += 1;
        let peer = PEERS[self.rng.below(PEERS.len() as u64) as usize];
        let key = format!("delivery-s{}-{}", self.session, self.next_delivery);
        let payload = format!("{{\"to\":\"{peer}\",\"seq\":{}}}", self.next_delivery).into_bytes();
        let command = OutboxCommand::Enqueue {
            key,
            peer: peer.into(),
            kind: "event".into(),
            payload,
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&command)?;
        Ok(())
    }

    /// A peer claims a few rows, acks most, and sends the rest back for a retry.
    fn pull(&mut self) -> Result<()> {
        self.next_claim += 1;
        let peer = PEERS[self.rng.below(PEERS.len() as u64) as usize];
        let token = ClaimToken(format!("claim-s{}-{}", self.session, self.next_claim));
        let claim = PullCommand::Claim {
            peer: peer.into(),
            token: token.clone(),
            limit: 4,
            lease_ms: 5_000,
            now_ms: self.now_ms,
        };
        let PullOutcome::Claimed { rows, .. } = self.store.execute(&claim)? else {
            return Ok(());
        };
        if self.rng.chance(10) {
            return Ok(()); // The peer vanishes; its claims lapse and are taken again.
        }
        let mut acks = Vec::new();
        for row in rows {
            if self.rng.chance(80) {
                acks.push(RowAck {
                    key: row.key,
                    token: token.clone(),
                });
            } else {
                let retry = OutboxCommand::Retry {
                    key: row.key,
                    backoff: Backoff {
                        base_ms: 1_000,
                        max_ms: 30_000,
                    },
                    last_error: Some("peer answered 503".into()),
                    now_ms: self.now_ms,
                };
                let _ = self.store.execute(&retry)?;
            }
        }
        if !acks.is_empty() {
            let _ = self.store.execute(&PullCommand::Ack {
                peer: peer.into(),
                acks,
                now_ms: self.now_ms,
            })?;
        }
        Ok(())
    }

    /// Agents run turns: a root span with nested tool spans and their events, usage patched
    /// in, outcomes of every kind; some runs are abandoned and closed by a cascade or a sweep.
    ///
    /// Each step draws from the generator in a fixed order, so the dispatch below and every
    /// step it calls must keep that order for a seed to keep writing the same log.
    fn run_step(&mut self, agent: u64) -> Result<()> {
        if self.runs.len() < 4 && self.rng.chance(30) {
            return self.start_run(agent);
        }
        if self.runs.is_empty() {
            return Ok(());
        }
        let index = self.rng.below(self.runs.len() as u64) as usize;
        let run = self.runs[index].clone();
        match self.rng.below(10) {
            0..=2 if run.open_tools.len() < 3 => self.start_tool_span(index, &run)?,
            3..=4 => self.append_span_event(&run)?,
            5 => self.heartbeat_run(&run)?,
            6..=8 => self.end_innermost_span(index, &run)?,
            // A draw of 0..=2 on a run already three tools deep lands here too.
            _ => self.maybe_cancel_run(index, &run)?,
        }
        // Ticks that start a run or find none open skip the sweep; sweeping on them too
        // would change the log every seed writes.
        if self.ticks.is_multiple_of(301) {
            self.sweep_stale_runs()?;
        }
        Ok(())
    }

    /// An agent opens a run with its root span: a turn in a session, or now and then a cron job.
    fn start_run(&mut self, agent: u64) -> Result<()> {
        self.next_run += 1;
        let id = format!("run-s{}-{}", self.session, self.next_run);
        let writer = self.agent_handle(agent);
        let cron = self.rng.chance(15);
        let start = SpanCommand::Start {
            run: id.clone(),
            span: root_span(&id),
            parent: None,
            name: if cron {
                "nightly-report".into()
            } else {
                "answer-ticket".into()
            },
            kind: if cron { SpanKind::Cron } else { SpanKind::Turn },
            origin: if cron {
                SpanOrigin::Cron
            } else {
                SpanOrigin::Session
            },
            session_id: (!cron).then(|| format!("session-{agent}")),
            job_name: cron.then(|| "nightly".into()),
            attributes: Attributes::new(),
            billing_mode: Some(if self.rng.chance(50) {
                BillingMode::Api
            } else {
                BillingMode::Subscription
            }),
            writer: writer.clone(),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&start)?;
        self.runs.push(OpenRun {
            id,
            writer,
            open_tools: Vec::new(),
            spans: 1,
        });
        Ok(())
    }

    /// The run calls a tool (or a subagent) inside its innermost open span.
    fn start_tool_span(&mut self, index: usize, run: &OpenRun) -> Result<()> {
        let span = format!("{}/tool-{}", run.id, run.spans);
        let start = SpanCommand::Start {
            run: run.id.clone(),
            span: span.clone(),
            parent: Some(run.innermost_span()),
            name: ["search", "fetch", "compile", "ask-model"][self.rng.below(4) as usize].into(),
            kind: if self.rng.chance(20) {
                SpanKind::Subagent
            } else {
                SpanKind::Tool
            },
            origin: SpanOrigin::Session,
            session_id: None,
            job_name: None,
            attributes: Attributes::new(),
            billing_mode: None,
            writer: run.writer.clone(),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&start)?;
        self.runs[index].open_tools.push(span);
        self.runs[index].spans += 1;
        Ok(())
    }

    /// The innermost open span logs an event of up to 20,000 bytes.
    fn append_span_event(&mut self, run: &OpenRun) -> Result<()> {
        let event = SpanCommand::AppendEvent {
            run: run.id.clone(),
            span: run.innermost_span(),
            event_type: "log".into(),
            payload: "x".repeat(self.rng.below(20_000) as usize),
            payload_bytes_max: None,
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&event)?;
        Ok(())
    }

    /// The innermost open span ends with its usage and an outcome of any kind; ending the
    /// root ends the run.
    fn end_innermost_span(&mut self, index: usize, run: &OpenRun) -> Result<()> {
        let usage = SpanUsage {
            input_tokens: Some(100 + self.rng.below(5_000)),
            output_tokens: Some(10 + self.rng.below(800)),
            cost_micro_usd: Some(self.rng.below(20_000)),
            model: Some("model-m".into()),
            ..SpanUsage::default()
        };
        let outcomes = [
            SpanOutcome::Success,
            SpanOutcome::Success,
            SpanOutcome::Error,
            SpanOutcome::Timeout,
            SpanOutcome::Denied,
        ];
        let outcome = outcomes[self.rng.below(outcomes.len() as u64) as usize];
        let root = run.open_tools.is_empty();
        let end = SpanCommand::End {
            run: run.id.clone(),
            span: run.innermost_span(),
            outcome,
            reason: (outcome != SpanOutcome::Success).then(|| format!("{outcome:?} in a tool")),
            usage,
            attributes: Attributes::new(),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&end)?;
        if root {
            self.runs.remove(index);
        } else {
            self.runs[index].open_tools.pop();
        }
        Ok(())
    }

    /// The run's writer reports that it is still alive, for its root and for the tool it is
    /// in (any open span heartbeats), patches the usage so far onto the root, and a dashboard
    /// asks for the run's rollup so far.
    fn heartbeat_run(&mut self, run: &OpenRun) -> Result<()> {
        let _ = self.store.execute(&RunCommand::Heartbeat {
            run: run.id.clone(),
            now_ms: self.now_ms,
        })?;
        if let Some(tool) = run.open_tools.last() {
            let _ = self.store.execute(&SpanCommand::Heartbeat {
                run: run.id.clone(),
                span: tool.clone(),
                now_ms: self.now_ms,
            })?;
        }
        // The usage so far is patched onto the root (enrichment, not an end).
        let _ = self.store.execute(&SpanCommand::Patch {
            run: run.id.clone(),
            span: root_span(&run.id),
            attributes: Attributes::new(),
            usage: SpanUsage {
                output_tokens: Some(run.spans * 10),
                ..SpanUsage::default()
            },
            wait_until_ms: None,
            billing_mode: None,
            now_ms: self.now_ms,
        })?;
        let _ = self.store.execute(&RunCommand::Rollup {
            run: run.id.clone(),
            now_ms: self.now_ms,
        })?;
        Ok(())
    }

    /// A sweeper closes the runs whose writers have gone quiet for 30 seconds.
    fn sweep_stale_runs(&mut self) -> Result<()> {
        let sweep = RunCommand::SweepStale {
            stale_after_ms: 30_000,
            sweeper: Some("demo-sweeper".into()),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&sweep)?;
        Ok(())
    }

    /// Now and then the agent gives up on the run: it closes it, children first.
    fn maybe_cancel_run(&mut self, index: usize, run: &OpenRun) -> Result<()> {
        if !self.rng.chance(30) {
            return Ok(());
        }
        let close = RunCommand::CascadeClose {
            run: run.id.clone(),
            outcome: SpanOutcome::Cancelled,
            reason: "operator cancelled".into(),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&close)?;
        self.runs.remove(index);
        Ok(())
    }

    /// A downstream exporter that has read the log so far records where it stands, with the
    /// hash of the record there, so that it can resume after a restart.
    fn checkpoint_consumer(&mut self) -> Result<()> {
        let head = self.store.head()?;
        let Some(last) = head.next.0.checked_sub(1) else {
            return Ok(());
        };
        if let Some(record) = self.store.get(crate::record::Position(last))? {
            let consumer = format!("exporter-s{}", self.session);
            let _ = self.store.execute(&ConsumerCommand::checkpoint_after(
                consumer,
                &record,
                self.now_ms,
            ))?;
        }
        Ok(())
    }

    /// A runtime pushes one run's first three events to the hub: sequence 3 before 2 (the
    /// cursor waits at 1, then moves to 3), then a retry of 3 (a duplicate), then a conflict,
    /// by turns: 3 again with other bytes, the run from another runtime, or the project under
    /// another hub project. Drawn from the tick count alone, so the rest of the workload draws
    /// what it did before.
    fn sync_ingest(&mut self) -> Result<()> {
        let step = self.ticks / INGEST_EVERY_TICKS;
        let (project, hub) = SYNC_PROJECTS[(step % 2) as usize];
        let project = format!("{project}-s{}", self.session);
        let run = format!("run-{step}");
        let runtime = RUNTIMES[(step % 2) as usize];
        let types = ["run.started", "tool.called", "tool.returned"];
        let event = |sequence: u64, received_at_ms: u64| IngestCommand {
            project: project.clone(),
            run: run.clone(),
            sequence,
            hub_project: hub.into(),
            home_runtime: runtime.into(),
            event_type: types[(sequence - 1) as usize].into(),
            bytes: format!("{{\"run\":\"{run}\",\"seq\":{sequence}}}").into_bytes(),
            received_at_ms,
            subject: None,
        };
        for sequence in [1, 3, 2] {
            let _ = self.store.execute(&event(sequence, self.now_ms))?;
        }
        let _ = self.store.execute(&event(3, self.now_ms + 5))?;
        let mut conflict = event(3, self.now_ms + 7);
        match step % 3 {
            0 => conflict.bytes.extend_from_slice(b" "),
            1 => {
                conflict.sequence = 4;
                conflict.home_runtime = RUNTIMES[((step + 1) % 2) as usize].into();
            }
            _ => {
                conflict.run = format!("run-{step}-b");
                conflict.sequence = 1;
                conflict.hub_project = SYNC_PROJECTS[((step + 1) % 2) as usize].1.into();
            }
        }
        let _ = self.store.execute(&conflict)?;
        Ok(())
    }

    fn charge_fuel(&mut self, agent: u64) -> Result<()> {
        let ops = ["tool.call", "model.tokens", "fetch"];
        let command = RecordFuel {
            instance: self.agent_handle(agent),
            caller: self.agent_handle((agent + 1) % AGENTS),
            op: ops[self.rng.below(ops.len() as u64) as usize].into(),
            fuel: 1 + self.rng.below(500),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&command)?;
        Ok(())
    }

    /// An agent takes, renews (by re-acquiring) or releases a lease of the `demo` project,
    /// labelled with its name and the holder's display name.
    fn project_lease_step(&mut self) -> Result<()> {
        let round = self.ticks / 5;
        let agent = round % AGENTS;
        let name = ["deploy", "schema-migration"][(round % 2) as usize];
        let resource = format!("demo/{name}");
        let holder = self.agent_handle(agent);
        let held = crate::leases::lease(&self.store.state()?, &resource)?;
        if let Some(lease) = held.filter(|lease| lease.holder == holder && round.is_multiple_of(3))
        {
            let _ = self.store.execute(&LeaseCommand::Release {
                resource,
                holder,
                token: lease.token,
                now_ms: self.now_ms,
            })?;
            return Ok(());
        }
        let _ = self.store.execute(&LeaseCommand::AcquireLabelled {
            resource,
            holder,
            labels: crate::leases::LeaseLabels {
                project: "demo".into(),
                name: name.into(),
                holder_name: format!("Agent {agent}"),
            },
            ttl_ms: LEASE_TTL_MS,
            now_ms: self.now_ms,
        })?;
        Ok(())
    }

    /// A batch of calls summed by the caller, charged at once (some batches are empty).
    fn charge_presummed_fuel(&mut self) -> Result<()> {
        let round = self.ticks / 11;
        let calls = round % 4;
        let command = crate::registry::decide::ChargeFuel {
            instance: self.agent_handle(round % AGENTS),
            caller: String::new(),
            op: "batch.sync".into(),
            calls,
            fuel: calls * 40,
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&command)?;
        Ok(())
    }

    /// A `report` row, and the push lane's outcome for the first row due, counted by the
    /// lane itself: parked for the peer's pull, or scheduled again.
    fn report_and_mark(&mut self) -> Result<()> {
        self.next_delivery += 1;
        let peer = PEERS[((self.ticks / 13) % PEERS.len() as u64) as usize];
        let command = OutboxCommand::Enqueue {
            key: format!("report-s{}-{}", self.session, self.next_delivery),
            peer: peer.into(),
            kind: "report".into(),
            payload: format!("{{\"report\":{}}}", self.next_delivery).into_bytes(),
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&command)?;
        let due = crate::outbox::due(&self.store.state()?, self.now_ms, 1)?;
        let Some(row) = due.into_iter().next() else {
            return Ok(());
        };
        let attempts = row.attempts + 1;
        let command = if (self.ticks / 13).is_multiple_of(2) {
            OutboxCommand::MarkWaiting {
                key: row.key,
                attempts,
                now_ms: self.now_ms,
            }
        } else {
            OutboxCommand::MarkRetry {
                key: row.key,
                attempts,
                next_at_ms: self.now_ms + 2_000,
                first_failed_at_ms: row.first_failed_at_ms.unwrap_or(self.now_ms),
                now_ms: self.now_ms,
            }
        };
        let _ = self.store.execute(&command)?;
        Ok(())
    }

    fn toggle_status(&mut self) -> Result<()> {
        let agent = self.rng.below(AGENTS);
        let status = if self.rng.chance(50) {
            Status::Disabled
        } else {
            Status::Enabled
        };
        let command = InstanceCommand::SetStatus {
            handle: self.agent_handle(agent),
            status,
            now_ms: self.now_ms,
        };
        let _ = self.store.execute(&command)?;
        Ok(())
    }
}
