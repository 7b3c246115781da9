//! A reference model of the rules the store must keep, small enough to be obviously right,
//! and the commands the fuzz harnesses and the simulation tests drive both with.
//!
//! This file holds the command vocabulary ([`Op`], cut into write transactions by a
//! [`Script`]), what a command did ([`Outcome`]), the [`Model`] with the log's head and stream
//! versions that every domain's records go through, and the two sides the harness compares
//! command by command: [`Model::run`] and [`run_on_store`]. What the model predicts lives
//! with the domain it models, each file's doc stating the rules it keeps:
//! - `raw.rs`: raw appends (reserved kinds, repeated keys, idempotency, expected versions);
//! - `leases.rs`: resource leases and lane leases;
//! - `registry.rs`: registry settings, fuel and instances;
//! - [`outbox`]: the outbox's rows, claims and sweeps;
//! - [`runs`]: the runs' spans, events, heartbeats, sweeps, rollups and pruning;
//! - [`ingest`]: the hub's sync ingest (accepted, duplicate, conflicts, listings, cursors);
//! - `script.rs`: seeded random scripts, the mix of commands the simulation draws.
//!
//! The model never calls a domain's `decide` or `apply`: each file restates its domain's
//! rules over its own `BTreeMap`s, so that a rule the store gets wrong is not wrong here the
//! same way.
//!
//! For every command the model predicts, the harness also checks that the store's head
//! moved by as many records as the model predicts, and after each transaction that each
//! predicted record is in its stream at its version (and of its kind, where stated).
//!
//! Registry commands and lane leases under names the model never uses ([`Op::Domain`],
//! drawn from [`random_domain_command`]) are run against the store only: the model does not
//! predict their outcomes, it only takes note of how far they moved the head. Every projection is covered by the final checks
//! (digests equal a rebuild's, `verify` passes).

pub mod ingest;
pub mod outbox;
pub mod runs;

mod leases;
mod raw;
mod registry;
mod script;

pub use raw::{EventSpec, Expect};

use std::collections::BTreeMap;

use arbitrary::Arbitrary;

use crate::demo::Rng;
use crate::error::Error;
use crate::leases::{LaneLease, Lease, LeaseRefusal};
use crate::registry::decide::{FuelOutcome, InstanceOutcome};
use crate::registry::query::Instance;
use crate::store::{StoreError, WriteSession};
use crate::testing::random::random_domain_command;

/// A command of the model's vocabulary.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A raw append of one or two events.
    Append {
        /// The stream, modulo the streams.
        stream: u8,
        /// The expected version.
        expect: Expect,
        /// The first event.
        first: EventSpec,
        /// A second event.
        second: Option<EventSpec>,
    },
    /// `LeaseCommand::Acquire`.
    Acquire {
        /// The resource, modulo the resources.
        resource: u8,
        /// The holder, modulo the holders.
        holder: u8,
        /// The TTL (0 is invalid).
        ttl_ms: u8,
    },
    /// `LeaseCommand::Renew`.
    Renew {
        /// The resource, modulo the resources.
        resource: u8,
        /// The holder, modulo the holders.
        holder: u8,
        /// The token, modulo 4.
        token: u8,
        /// The TTL (0 is invalid).
        ttl_ms: u8,
    },
    /// `LeaseCommand::Release`.
    Release {
        /// The resource, modulo the resources.
        resource: u8,
        /// The holder, modulo the holders.
        holder: u8,
        /// The token, modulo 4.
        token: u8,
    },
    /// `SetSetting` of the registry.
    SetSetting {
        /// The key, modulo the keys.
        key: u8,
        /// The value, modulo the values.
        value: u8,
    },
    /// A `LaneCommand` on the model's lane: claim, renew, advance or release, by `action`
    /// modulo 4.
    Lane {
        /// Which command, modulo 4.
        action: u8,
        /// The key, modulo the keys.
        key: u8,
        /// The owner, modulo the owners.
        owner: u8,
        /// The TTL of a claim or renewal (0 is invalid).
        ttl_ms: u8,
        /// The cursor of an advance, modulo the cursors.
        cursor: Option<u8>,
    },
    /// `RecordFuel` of the registry.
    Fuel {
        /// The instance, modulo the instances.
        instance: u8,
        /// The caller, modulo the callers.
        caller: u8,
        /// The op, modulo the ops.
        op: u8,
        /// The fuel.
        fuel: u8,
    },
    /// An `InstanceCommand` of the registry, by `action` modulo 6: upsert (0 and 1), set
    /// status, knows or topics, remove.
    Instance {
        /// Which command, modulo 6.
        action: u8,
        /// The handle, modulo the handles.
        handle: u8,
        /// An upsert's store, modulo the stores.
        store: Option<u8>,
        /// An upsert's domain, modulo the domains.
        domain: Option<u8>,
        /// An upsert's identity, modulo the identities.
        identity: Option<u8>,
        /// An upsert's owner, modulo the identities.
        owner: Option<u8>,
        /// The status (given to an upsert if `Some`): disabled if true.
        disabled: Option<bool>,
        /// An upsert's kind: mailbox if true.
        mailbox: Option<bool>,
        /// The roster (given to an upsert if `Some`), modulo the rosters.
        knows: Option<u8>,
        /// The topics (given to an upsert if `Some`), modulo the topic lists.
        topics: Option<u8>,
    },
    /// Moves the clock on.
    Tick(u8),
    /// A random command of another domain, drawn from this seed.
    Domain(u64),
    /// A command of the outbox, by `action` modulo 10: enqueue (0 and 1), deliver, park,
    /// retry, give up, claim, ack, expire, prune.
    Outbox {
        /// Which command, modulo 10.
        action: u8,
        /// The row's key (an ack's first), modulo the keys.
        key: u8,
        /// The peer of an enqueue, claim or ack, modulo the peers.
        peer: u8,
        /// The token of a claim (an ack's first), modulo the tokens.
        token: u8,
        /// An ack's second row: its key and token.
        second: Option<(u8, u8)>,
        /// An enqueue's payload byte, a retry's backoff base (0 is invalid), a claim's
        /// limit (modulo 4, plus 100 from 128 on: 0 and over 100 are clamped), an expiry's
        /// maximum age, a prune's age.
        number: u8,
        /// A retry's backoff ceiling (below the base is invalid) and, modulo 3, its error
        /// (none, short, over the limit with an odd `number`), a claim's lease (0 is
        /// invalid), an expiry's claim retry window.
        other: u8,
    },
    /// A command of the runs, by `action` modulo 14: start a root (0) or a child (1 and 2),
    /// patch, end (4 and 5), append an event, heartbeat, cascade close, sweep orphans,
    /// sweep stale runs, prune, roll up on request (12), heartbeat a span (13).
    Run {
        /// Which command, modulo 14.
        action: u8,
        /// The run, modulo the runs.
        run: u8,
        /// The span, modulo the spans.
        span: u8,
        /// A child's parent, modulo the spans; the attributes of a patch or end; a
        /// prune's hard ceiling (in units of 8 ms).
        parent: u8,
        /// The writer of a start, an orphan sweep or (sometimes) a stale sweep.
        writer: u8,
        /// The outcome of an end or cascade close; a start's kind; a prune's batch
        /// (modulo 4: 0 is invalid).
        outcome: u8,
        /// Which usage fields a patch or end reports, one bit each.
        usage: Option<u8>,
        /// Usage values, a start's origin, ids and attributes (15 modulo 16: an empty
        /// name), an event's payload length, a stale sweep's silence, a prune's digest
        /// floor (before the clock).
        number: u8,
        /// Billing modes, a patch's wait, a reason (modulo 4: none, two, an empty one), an
        /// event's payload cap, a stale sweep's sparing, a prune's retention.
        other: u8,
    },
    /// `LeaseCommand::AcquireLabelled`.
    AcquireLabelled {
        /// The resource, modulo the resources.
        resource: u8,
        /// The holder, modulo the holders.
        holder: u8,
        /// The project, modulo the projects.
        project: u8,
        /// The lease's name, modulo the names.
        name: u8,
        /// The holder's display name, modulo the names.
        holder_name: u8,
        /// The TTL (0 is invalid).
        ttl_ms: u8,
    },
    /// `leases::list_leases` of a project: compared, appends nothing.
    ListLeases {
        /// The project, modulo the projects.
        project: u8,
    },
    /// `OutboxCommand::MarkRetry` if `retry`, else `OutboxCommand::MarkWaiting`.
    OutboxMark {
        /// Which command.
        retry: bool,
        /// The row's key, modulo the keys.
        key: u8,
        /// The attempt count the row takes.
        attempts: u8,
        /// The next time, around the clock (`now + next_at - 128`).
        next_at: u8,
        /// The first failure time.
        first_failed: u8,
    },
    /// `ChargeFuel` of the registry: pre-summed calls.
    Charge {
        /// The instance, modulo the instances.
        instance: u8,
        /// The caller, modulo the callers.
        caller: u8,
        /// The op, modulo the ops.
        op: u8,
        /// The calls, modulo the choices (0, 1, 7, `u64::MAX`).
        calls: u8,
        /// The fuel.
        fuel: u8,
    },
    /// `IngestCommand`: a runtime's event pushed to the hub.
    Ingest {
        /// The project, modulo the projects.
        project: u8,
        /// The run, modulo the runs.
        run: u8,
        /// The sequence, modulo 5 (0 is invalid).
        sequence: u8,
        /// The hub project, modulo the hub projects.
        hub: u8,
        /// The home runtime, modulo the runtimes.
        runtime: u8,
        /// The event type, modulo the types.
        event_type: u8,
        /// The event's one byte, modulo 3.
        content: u8,
    },
}

/// A command sequence cut into write transactions.
#[derive(Arbitrary, Clone, Debug)]
pub struct Script {
    /// The transactions, each a list of commands.
    pub transactions: Vec<Vec<Op>>,
}

impl Script {
    /// At most `max` commands, in at most `max` transactions: fuzzer input stays cheap.
    pub fn bounded(mut self, max: usize) -> Script {
        let mut left = max;
        self.transactions.truncate(max);
        for transaction in &mut self.transactions {
            transaction.truncate(left);
            left -= transaction.len();
        }
        self.transactions.retain(|t| !t.is_empty());
        self
    }
}

/// What a command did, in terms both the store and the model can state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Records written at `first` onwards, the first with stream version `version`.
    Appended {
        /// The first position.
        first: u64,
        /// The first stream version.
        version: u64,
        /// How many.
        count: u64,
    },
    /// A whole repeat of an earlier append.
    Duplicate(Vec<u64>),
    /// An append refused, by the name of its error.
    AppendRefused(&'static str),
    /// A command with an invalid input.
    Invalid,
    /// A command with an invalid input, by the field named (the outbox and the runs).
    InvalidField(&'static str),
    /// A lease granted.
    Granted {
        /// Its holder.
        holder: String,
        /// Its token.
        token: u64,
        /// Its expiry.
        expires_at_ms: u64,
        /// Whether an existing lease was extended.
        renewed: bool,
    },
    /// A lease released.
    Released {
        /// Its token.
        token: u64,
    },
    /// A setting set, with the value it had.
    SettingSet(Option<String>),
    /// A setting already had the value.
    SettingUnchanged,
    /// A lane command done: the lane lease as it now stands.
    LaneDone(LaneLease),
    /// A lane command refused.
    LaneRefused {
        /// Why.
        reason: LeaseRefusal,
        /// The lane lease that stands.
        lane: Option<LaneLease>,
    },
    /// Fuel charged: the ledger row and the instance's total after it.
    Fuel(FuelOutcome),
    /// The leases of a project, as `list_leases` reads them.
    Leases(Vec<Lease>),
    /// What an instance command did.
    Instance(Box<InstanceOutcome>),
    /// A lease command refused.
    Refused {
        /// Why.
        reason: LeaseRefusal,
        /// The token of the lease that stands.
        token: Option<u64>,
    },
    /// What an outbox command did, and the outbox it left.
    Outbox(Box<outbox::Seen>),
    /// What a runs command did, and the runs it left.
    Runs(Box<runs::Seen>),
    /// What an ingest did, and the listings and cursors it left.
    Ingest(Box<ingest::Seen>),
    /// The clock moved, or a command of another domain ran: not compared.
    Unmodelled,
    /// Any other error (I/O, corruption): the run stops being comparable.
    Failed(String),
}

/// What a command the store refused with `error` did, as the model states it.
fn failed(error: Error) -> Outcome {
    match error {
        Error::Append(error) => Outcome::AppendRefused(raw::append_error_name(&error)),
        Error::Store(StoreError::ReservedKind { .. }) => Outcome::AppendRefused("reserved_kind"),
        Error::Store(StoreError::Fenced { .. }) => Outcome::AppendRefused("fenced"),
        Error::InvalidCommand { .. } => Outcome::Invalid,
        other => Outcome::Failed(other.to_string()),
    }
}

fn pick(names: &[&'static str], index: u8) -> &'static str {
    names[usize::from(index) % names.len()]
}

/// Runs `op` in `session` at `*now_ms` (which a tick moves on), and states what it did.
pub fn run_on_store(op: &Op, session: &mut WriteSession<'_>, now_ms: &mut u64) -> Outcome {
    match op {
        Op::Tick(ms) => {
            *now_ms += u64::from(*ms);
            Outcome::Unmodelled
        }
        Op::Domain(seed) => {
            random_domain_command(&mut Rng::new(*seed), session, *now_ms);
            Outcome::Unmodelled
        }
        Op::Append { .. } => raw::append_command(op).map_or(Outcome::Unmodelled, |append| {
            raw::append_on_store(&append, session, *now_ms)
        }),
        Op::Acquire { .. } | Op::Renew { .. } | Op::Release { .. } => {
            leases::lease_command(op, *now_ms).map_or(Outcome::Unmodelled, |command| {
                leases::lease_on_store(&command, session)
            })
        }
        Op::AcquireLabelled { .. } => leases::lease_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                leases::lease_on_store(&command, session)
            }),
        Op::ListLeases { .. } => leases::listed_project(op)
            .map_or(Outcome::Unmodelled, |project| {
                leases::list_on_store(project, session)
            }),
        Op::OutboxMark { .. } => {
            let Some(command) = outbox::mark_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match outbox::run_on_store(&command, session, *now_ms) {
                Ok(seen) => Outcome::Outbox(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
        Op::Charge { .. } => registry::charge_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                registry::charge_on_store(&command, session)
            }),
        Op::Lane { .. } => leases::lane_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                leases::lane_on_store(&command, session)
            }),
        Op::SetSetting { .. } => registry::setting_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                registry::setting_on_store(&command, session)
            }),
        Op::Fuel { .. } => registry::fuel_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                registry::fuel_on_store(&command, session)
            }),
        Op::Instance { .. } => registry::instance_command(op, *now_ms)
            .map_or(Outcome::Unmodelled, |command| {
                registry::instance_on_store(&command, session)
            }),
        Op::Outbox { .. } => {
            let Some(command) = outbox::command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match outbox::run_on_store(&command, session, *now_ms) {
                Ok(seen) => Outcome::Outbox(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
        Op::Run { .. } => {
            let Some(command) = runs::command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match runs::run_on_store(&command, session) {
                Ok(seen) => Outcome::Runs(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
        Op::Ingest { .. } => {
            let Some(command) = ingest::command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match ingest::run_on_store(&command, session) {
                Ok(seen) => Outcome::Ingest(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
    }
}

/// The reference model: the log's positions and stream versions, and each domain's rows (the
/// idempotency keys, leases, lanes, settings, fuel, instances, outbox and runs), which the
/// domain's file moves.
#[derive(Clone, Debug, Default)]
pub struct Model {
    next: u64,
    streams: BTreeMap<String, u64>,
    keys: BTreeMap<String, raw::Keyed>,
    leases: BTreeMap<String, leases::ModelLease>,
    tokens: BTreeMap<String, u64>,
    settings: BTreeMap<String, String>,
    /// Lane leases by (lane, key).
    lanes: BTreeMap<(String, String), LaneLease>,
    /// The fuel ledger: (calls, fuel) by (instance, caller, op).
    fuel: BTreeMap<(String, String, String), (u64, u64)>,
    /// Registered instances by handle.
    instances: BTreeMap<String, Instance>,
    /// The outbox.
    outbox: outbox::Outbox,
    /// The runs.
    runs: runs::Runs,
    /// The sync ingest.
    ingest: ingest::Ingest,
    /// The records predicted since the journal was last taken.
    written: Vec<Written>,
}

impl Model {
    /// What the outbox command must do at `now_ms`, applied to the model, with the outbox it
    /// leaves.
    fn outbox_command(&mut self, command: &outbox::Command, now_ms: u64) -> Outcome {
        let (done, records) = match self.outbox.run(command) {
            Ok(done) => done,
            Err(field) => return Outcome::InvalidField(field),
        };
        for (stream, kind) in records {
            self.write_kind(&stream, Some(kind));
        }
        let view = self.outbox.view(now_ms);
        Outcome::Outbox(Box::new(outbox::Seen { done, view }))
    }
}

/// A record the model predicts: where it goes, and its kind where the model states it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Its position.
    pub position: u64,
    /// Its stream.
    pub stream: String,
    /// Its version in the stream.
    pub version: u64,
    /// Its kind, if the model states it.
    pub kind: Option<&'static str>,
}

impl Model {
    /// Takes note of the head after a command the model does not predict.
    pub fn observe_head(&mut self, next: u64) {
        self.next = next;
    }

    /// The position the next record takes.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// The records predicted since the last call, oldest first.
    pub fn take_written(&mut self) -> Vec<Written> {
        std::mem::take(&mut self.written)
    }

    fn write(&mut self, stream: &str, count: u64) -> Outcome {
        let (first, version) = (self.next, self.streams.get(stream).copied().unwrap_or(0));
        for _ in 0..count {
            self.write_kind(stream, None);
        }
        Outcome::Appended {
            first,
            version,
            count,
        }
    }

    /// Predicts one record of `kind` (if stated) at the end of `stream`.
    fn write_kind(&mut self, stream: &str, kind: Option<&'static str>) {
        let version = self.streams.get(stream).copied().unwrap_or(0);
        self.written.push(Written {
            position: self.next,
            stream: stream.to_owned(),
            version,
            kind,
        });
        self.next += 1;
        self.streams.insert(stream.to_owned(), version + 1);
    }

    /// What `op` must do at `*now_ms`, applied to the model.
    pub fn run(&mut self, op: &Op, now_ms: &mut u64) -> Outcome {
        match op {
            Op::Tick(ms) => {
                *now_ms += u64::from(*ms);
                Outcome::Unmodelled
            }
            Op::Domain(_) => Outcome::Unmodelled,
            Op::Append { .. } => {
                raw::append_command(op).map_or(Outcome::Unmodelled, |append| self.append(append))
            }
            Op::Acquire { .. } | Op::Renew { .. } | Op::Release { .. } => {
                leases::lease_command(op, *now_ms)
                    .map_or(Outcome::Unmodelled, |command| self.lease(command))
            }
            Op::AcquireLabelled { .. } => leases::lease_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.lease(command)),
            Op::ListLeases { .. } => leases::listed_project(op)
                .map_or(Outcome::Unmodelled, |project| self.list_leases(project)),
            Op::OutboxMark { .. } => outbox::mark_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| {
                    self.outbox_command(&command, *now_ms)
                }),
            Op::Charge { .. } => registry::charge_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.charge(command)),
            Op::Lane { .. } => leases::lane_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.lane(command)),
            Op::SetSetting { .. } => registry::setting_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.setting(&command)),
            Op::Fuel { .. } => registry::fuel_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.fuel(command)),
            Op::Instance { .. } => registry::instance_command(op, *now_ms)
                .map_or(Outcome::Unmodelled, |command| self.instance(command)),
            Op::Outbox { .. } => {
                let Some(command) = outbox::command(op, *now_ms) else {
                    return Outcome::Unmodelled;
                };
                let (done, records) = match self.outbox.run(&command) {
                    Ok(done) => done,
                    Err(field) => return Outcome::InvalidField(field),
                };
                for (stream, kind) in records {
                    self.write_kind(&stream, Some(kind));
                }
                let view = self.outbox.view(*now_ms);
                Outcome::Outbox(Box::new(outbox::Seen { done, view }))
            }
            Op::Run { .. } => {
                let Some(command) = runs::command(op, *now_ms) else {
                    return Outcome::Unmodelled;
                };
                let (done, records) = match self.runs.run(&command, self.next) {
                    Ok(done) => done,
                    Err(field) => return Outcome::InvalidField(field),
                };
                for (stream, kind) in records {
                    self.write_kind(&stream, Some(kind));
                }
                Outcome::Runs(Box::new(runs::Seen {
                    done,
                    view: self.runs.view(),
                }))
            }
            Op::Ingest { .. } => {
                let Some(command) = ingest::command(op, *now_ms) else {
                    return Outcome::Unmodelled;
                };
                let (seen, records) = match self.ingest.run(&command) {
                    Ok(done) => done,
                    Err(field) => return Outcome::InvalidField(field),
                };
                for (stream, kind) in records {
                    self.write_kind(&stream, Some(kind));
                }
                Outcome::Ingest(Box::new(seen))
            }
        }
    }
}
