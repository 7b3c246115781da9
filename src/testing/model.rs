//! A reference model of the rules the store must keep, small enough to be obviously right,
//! and the commands the fuzz harnesses and the simulation tests drive both with.
//!
//! What the model predicts, command by command:
//! - raw appends: reserved kinds (`lease.…`) refused, repeated keys within one append
//!   refused, idempotency (a whole repeat is a duplicate with the earlier positions; the same
//!   key with other stream, kind or payload a conflict; a mix of repeated and new events a
//!   partial duplicate), then the expected-version check (`any`, `none`, `exists`, exact),
//!   and the positions and stream versions written;
//! - resource leases: acquire (grant with the next token, extend one's own live lease,
//!   take over an expired one, refuse a live one of another's), renew (missing, superseded,
//!   expired, or extended), release (missing, superseded, or released), empty names and
//!   zero TTLs refused as invalid, and the lease streams' records;
//! - registry settings: set (with the previous value), unchanged when the value is the
//!   same (nothing appended), an empty key refused, and the setting streams' records;
//! - lane leases: claim (an unowned or expired lane/key, keeping its cursor; a live one,
//!   even one's own, refused `held`), renew, advance and release by the live owner only
//!   (`missing`, `superseded` for another owner, `expired`; a release leaves the cursor and
//!   expiry 0), an empty key or owner on a claim and a zero TTL refused as invalid, the
//!   lane lease as it then stands, and the lane streams' records;
//! - registry fuel: one call and its fuel added to the (instance, caller, op) row and so to
//!   the instance's total, the row's `updated_at_ms` the command's clock, an instance
//!   outside the handle grammar (hostname label or token id) or an empty op refused as
//!   invalid, and the fuel streams' records;
//! - registry instances: upsert (a new handle needs a non-empty store and gets the
//!   defaults — domain `localhost`, enabled, agent, knowing nobody, no topics, created at
//!   the command's clock; an existing one changes only the fields given, an empty identity or
//!   owner clearing it; `Unchanged` with nothing appended when nothing would change), set
//!   status, roster (normalized: `*` is everyone, else repeats dropped, first occurrence
//!   first) and topics (`Updated`, `Unchanged`, or `Missing` for a handle no instance has),
//!   remove (`Removed` with the instance as it was, or `Missing`), a handle outside the
//!   grammar and an empty domain or store given refused as invalid, the instance as it then
//!   stands, and the instance streams' records;
//! - the outbox ([`outbox`]): enqueue (a `pending` row due at once; a key present adds
//!   nothing and answers the row that stands), deliver, park (one attempt more, `waiting`),
//!   retry (one attempt more, due after the base wait doubled per earlier failure up to the
//!   ceiling, the first failure's time kept), give up, each refused `missing` or
//!   `wrong_state`; claim (the peer's own pending, waiting or lapsed rows in
//!   (`created_at_ms`, key) order, the limit clamped to 1..=100, refused `token_reused` when
//!   a row it would take was claimed under the token before); ack (each row in turn:
//!   `missing`, `other_peer`, `wrong_state` — a key acked earlier in the same ack too —,
//!   `other_token`, or done, a lapsed claim included); expire (`pending`/`waiting` rows
//!   older than the maximum age, lapsed claims older than the retry window) and prune
//!   (`done`/`expired` rows older than the age), oldest first; empty, control-character
//!   keys, peers and tokens, zero leases, bad backoffs and over-long errors refused as
//!   invalid, naming the first bad field; then every row, the due rows, and each peer's open and pending rows as the
//!   outbox's query functions read them; and each record's stream and kind;
//! - the runs ([`runs`]): start (a root as a run's first span, a child under a span of the
//!   run one deeper; refused `span_exists`, `run_closed` — its root ended or its detail was
//!   pruned —, `root_exists`, `parent_missing`), patch (attributes merged, each reported
//!   usage field, wait and billing mode replaced) and end (write-once, reason replaced, at
//!   the clock) of an open span (refused `span_missing`, `span_ended`), span events on any
//!   span with the next index and the payload cut at a character within the cap (at most
//!   16 KiB), each taking the run's next seq; heartbeats (never moving back; `run_missing`,
//!   `run_closed`); cascade close, orphan and stale sweeps (open spans ended deepest
//!   first, latest started first among equals; stale judged on the root's last heartbeat,
//!   sparing the sweeper's runs); the rollup at the root's end and at every later end —
//!   duration, span count, the root's tokens and cost or, for a cron root that reports
//!   none, its children's sum, the first error or timeout reason (else `interrupted`), costs
//!   and billing mode frozen at their first value; prune (runs ended before the digest
//!   floor and the retention, or the hard ceiling, nothing open, at most a batch, earliest
//!   end first; the coverage gap reason when uncovered); empty names and reasons and a zero
//!   batch refused as invalid, naming the first bad field; then each run's detail (run row, spans, events, seq, cursor
//!   position) and rollup, and the open roots, as the runs' query functions read them;
//!   and each record's stream and kind.
//!
//! For every command the model predicts, the harness also checks that the store's head
//! moved by as many records as the model predicts, and after each transaction that each
//! predicted record is in its stream at its version (and of its kind, where stated).
//!
//! Registry commands and lane leases under names the model never uses ([`Op::Domain`],
//! drawn from [`random_domain_command`]) are run against the store only: the model does not predict their outcomes, it only takes
//! note of how far they moved the head. Every projection is covered by the final checks
//! (digests equal a rebuild's, `verify` passes).

pub mod outbox;
pub mod runs;

use std::collections::BTreeMap;

use arbitrary::Arbitrary;

use crate::demo::Rng;
use crate::error::Error;
use crate::leases::decide::lane_stream;
use crate::leases::{
    FencingToken, LaneCommand, LaneLease, LaneOutcome, LeaseCommand, LeaseOutcome, LeaseRefusal,
};
use crate::log::append::{AppendError, AppendOutcome, ExpectedVersion};
use crate::record::{NewEvent, StreamVersion};
use crate::registry::decide::{
    FuelOutcome, InstanceCommand, InstanceFields, InstanceOutcome, RecordFuel, SetSetting,
    SettingOutcome, fuel_stream, instance_stream, setting_stream,
};
use crate::registry::handle::Handle;
use crate::registry::query::{FuelEntry, FuelTotal, Instance, InstanceKind, Knows, Status};
use crate::store::{StoreError, WriteSession};
use crate::testing::random::random_domain_command;

/// Streams of raw appends.
const STREAMS: [&str; 3] = ["app/a", "app/b", "app/c"];
/// Kinds of raw appends; the last is reserved by the leases projection.
const KINDS: [&str; 3] = ["app.x", "app.y", "lease.acquired"];
/// Idempotency keys.
const KEYS: [&str; 3] = ["k1", "k2", "k3"];
/// Lease resources.
const RESOURCES: [&str; 3] = ["r1", "r2", ""];
/// Lease holders.
const HOLDERS: [&str; 3] = ["h1", "h2", ""];
/// Registry setting keys: none of them is one [`random_domain_command`] sets.
const SETTING_KEYS: [&str; 3] = ["model/a", "model/b", ""];
/// Registry setting values.
const SETTING_VALUES: [&str; 2] = ["on", "off"];
/// The lane of lane leases: not the one [`random_domain_command`] claims.
const LANE: &str = "model-lane";
/// Keys of the lane (the empty one is invalid to claim).
const LANE_KEYS: [&str; 3] = ["mk1", "mk2", ""];
/// Lane owners (the empty one is invalid to claim).
const LANE_OWNERS: [&str; 3] = ["o1", "o2", ""];
/// Lane cursors.
const LANE_CURSORS: [&str; 2] = ["c1", "c2"];
/// A token id: 64 lower-case hex digits, `_`, a decimal index.
const TOKEN_ID: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff_7";
/// Instances charged fuel: valid handles none of which [`random_domain_command`] uses, then
/// handles outside the grammar.
const FUEL_INSTANCES: [&str; 7] = ["m-1", "m2", TOKEN_ID, "-m", "m3-", "M4", ""];
/// Fuel callers (empty: nobody known).
const FUEL_CALLERS: [&str; 2] = ["aa", ""];
/// Fuel ops (the empty one is invalid).
const FUEL_OPS: [&str; 3] = ["op-x", "op-y", ""];
/// Instance handles: two valid ones none of which [`random_domain_command`] uses, then two
/// outside the grammar.
const INSTANCE_HANDLES: [&str; 4] = ["m-a", "m-b", "m_a", ""];
/// Instance stores (the empty one is invalid).
const INSTANCE_STORES: [&str; 3] = ["/m/1", "/m/2", ""];
/// Instance domains (the empty one is invalid).
const INSTANCE_DOMAINS: [&str; 3] = ["localhost", "example.org", ""];
/// Identities and owners (the empty one clears the field).
const INSTANCE_IDS: [&str; 3] = ["aa", "bb", ""];
/// Rosters as given, before normalization.
const ROSTERS: [&[&str]; 5] = [&[], &["m-a"], &["m-b", "m-a", "m-b"], &["m-a", "*"], &["*"]];
/// Topic lists.
const TOPICS: [&[&str]; 3] = [&[], &["t1"], &["t1", "t2"]];

/// The expected version of a raw append.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Expect {
    /// `ExpectedVersion::Any`.
    Any,
    /// `ExpectedVersion::NoStream`.
    NoStream,
    /// `ExpectedVersion::StreamExists`.
    StreamExists,
    /// `ExpectedVersion::Exact` of the version given modulo 4.
    Exact(u8),
}

impl Expect {
    fn version(self) -> ExpectedVersion {
        match self {
            Expect::Any => ExpectedVersion::Any,
            Expect::NoStream => ExpectedVersion::NoStream,
            Expect::StreamExists => ExpectedVersion::StreamExists,
            Expect::Exact(v) => ExpectedVersion::Exact(StreamVersion(u64::from(v % 4))),
        }
    }
}

/// One event of a raw append: indexes into small sets of names, so that commands collide.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct EventSpec {
    /// The kind, modulo the kinds.
    pub kind: u8,
    /// The payload: this one byte, modulo 3.
    pub payload: u8,
    /// The idempotency key, modulo the keys.
    pub key: Option<u8>,
}

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
    /// A command of the runs, by `action` modulo 12: start a root (0) or a child (1 and 2),
    /// patch, end (4 and 5), append an event, heartbeat, cascade close, sweep orphans,
    /// sweep stale runs, prune.
    Run {
        /// Which command, modulo 12.
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

    /// A seeded random script of `transactions` transactions.
    pub fn random(seed: u64, transactions: u64) -> Script {
        let mut rng = Rng::new(seed);
        let byte = |rng: &mut Rng| rng.below(256) as u8;
        let transactions = (0..transactions)
            .map(|_| {
                (0..1 + rng.below(4))
                    .map(|_| {
                        let spec = |rng: &mut Rng| EventSpec {
                            kind: rng.below(8) as u8,
                            payload: rng.below(3) as u8,
                            key: rng.chance(40).then(|| rng.below(3) as u8),
                        };
                        match rng.below(23) {
                            0 | 1 => Op::Append {
                                stream: byte(&mut rng),
                                expect: match rng.below(4) {
                                    0 => Expect::Any,
                                    1 => Expect::NoStream,
                                    2 => Expect::StreamExists,
                                    _ => Expect::Exact(rng.below(3) as u8),
                                },
                                first: spec(&mut rng),
                                second: rng.chance(25).then(|| spec(&mut rng)),
                            },
                            2 => Op::Acquire {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                ttl_ms: byte(&mut rng) % 60,
                            },
                            3 => Op::Renew {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                token: byte(&mut rng),
                                ttl_ms: byte(&mut rng) % 60,
                            },
                            4 => Op::Release {
                                resource: byte(&mut rng),
                                holder: byte(&mut rng),
                                token: byte(&mut rng),
                            },
                            5 if rng.chance(50) => Op::SetSetting {
                                key: byte(&mut rng),
                                value: byte(&mut rng),
                            },
                            5 => Op::Tick(byte(&mut rng) % 40),
                            6 | 7 => Op::Lane {
                                // Claims half the time, on the first key mostly, so that
                                // the others find a lane lease to act on.
                                action: if rng.chance(50) { 0 } else { byte(&mut rng) },
                                key: if rng.chance(70) { 0 } else { byte(&mut rng) },
                                owner: if rng.chance(10) {
                                    2
                                } else {
                                    rng.below(2) as u8
                                },
                                ttl_ms: byte(&mut rng) % 60,
                                cursor: rng.chance(80).then(|| byte(&mut rng)),
                            },
                            9 | 10 => {
                                let maybe = |rng: &mut Rng, n: u64| {
                                    rng.chance(50).then(|| rng.below(n) as u8)
                                };
                                Op::Instance {
                                    action: if rng.chance(40) {
                                        0
                                    } else {
                                        rng.below(6) as u8
                                    },
                                    handle: if rng.chance(80) {
                                        rng.below(2) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    store: if rng.chance(70) {
                                        Some(rng.below(2) as u8)
                                    } else {
                                        maybe(&mut rng, 3)
                                    },
                                    domain: maybe(&mut rng, 3),
                                    identity: maybe(&mut rng, 3),
                                    owner: maybe(&mut rng, 3),
                                    disabled: rng.chance(50).then(|| rng.chance(50)),
                                    mailbox: rng.chance(30).then(|| rng.chance(50)),
                                    knows: maybe(&mut rng, 5),
                                    topics: maybe(&mut rng, 3),
                                }
                            }
                            8 => Op::Fuel {
                                instance: if rng.chance(70) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                caller: byte(&mut rng),
                                op: byte(&mut rng),
                                fuel: byte(&mut rng),
                            },
                            12..=15 => Op::Outbox {
                                // Mostly enqueues, claims, retries and acks, on valid names
                                // and short times, so that rows go through their states.
                                action: match rng.below(10) {
                                    0..=2 => 0,
                                    3 | 4 => 6,
                                    5 => 4,
                                    6 => 7,
                                    _ => byte(&mut rng),
                                },
                                key: if rng.chance(90) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                peer: if rng.chance(90) {
                                    rng.below(2) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                token: if rng.chance(90) {
                                    rng.below(3) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                second: rng
                                    .chance(30)
                                    .then(|| (rng.below(3) as u8, rng.below(4) as u8)),
                                number: if rng.chance(70) {
                                    rng.below(40) as u8
                                } else {
                                    byte(&mut rng)
                                },
                                // Short leases, so that claims lapse and rows are claimed
                                // again.
                                other: if rng.chance(70) {
                                    rng.below(12) as u8
                                } else {
                                    byte(&mut rng)
                                },
                            },
                            16 => Op::Tick(byte(&mut rng) % 40),
                            17..=22 => {
                                // Mostly a root on `s0`, children on the other spans under
                                // spans started before them, ends (of children more
                                // often than roots), patches and events, on valid names,
                                // so that runs grow trees before they close.
                                let action = match rng.below(12) {
                                    0..=2 => 0,
                                    3..=6 => 1,
                                    7 | 8 => 4,
                                    9 => 3,
                                    10 => 6,
                                    _ => byte(&mut rng),
                                };
                                let span = match action % 12 {
                                    0 => 0,
                                    _ if rng.chance(25) => 0,
                                    _ => 1 + rng.below(3) as u8,
                                };
                                Op::Run {
                                    action,
                                    run: if rng.chance(80) {
                                        rng.below(2) as u8
                                    } else if rng.chance(50) {
                                        2
                                    } else {
                                        byte(&mut rng)
                                    },
                                    span: if rng.chance(95) { span } else { byte(&mut rng) },
                                    parent: if rng.chance(50) {
                                        0
                                    } else if rng.chance(80) {
                                        rng.below(u64::from(span.max(1))) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    writer: if rng.chance(90) {
                                        rng.below(2) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    outcome: byte(&mut rng),
                                    usage: rng.chance(60).then(|| byte(&mut rng)),
                                    number: if rng.chance(70) {
                                        rng.below(40) as u8
                                    } else {
                                        byte(&mut rng)
                                    },
                                    other: byte(&mut rng),
                                }
                            }
                            _ => Op::Domain(rng.next_u64()),
                        }
                    })
                    .collect()
            })
            .collect();
        Script { transactions }
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
    /// The clock moved, or a command of another domain ran: not compared.
    Unmodelled,
    /// Any other error (I/O, corruption): the run stops being comparable.
    Failed(String),
}

fn append_error_name(error: &AppendError) -> &'static str {
    match error {
        AppendError::WrongExpectedVersion { .. } => "wrong_expected_version",
        AppendError::Conflict { .. } => "conflict",
        AppendError::PartialDuplicate { .. } => "partial_duplicate",
        AppendError::RepeatedKey { .. } => "repeated_key",
        AppendError::NoEvents => "no_events",
        AppendError::Limit(_) => "limit",
        AppendError::LogFull => "log_full",
        AppendError::NotSealable { .. } => "not_sealable",
    }
}

fn pick(names: &[&'static str], index: u8) -> &'static str {
    names[usize::from(index) % names.len()]
}

fn new_event(spec: EventSpec, now_ms: u64) -> NewEvent {
    let event = NewEvent::new(pick(&KINDS, spec.kind), now_ms, vec![spec.payload % 3]);
    match spec.key {
        Some(key) => event.with_idempotency_key(pick(&KEYS, key)),
        None => event,
    }
}

fn lane_command(op: &Op, now_ms: u64) -> Option<LaneCommand> {
    let Op::Lane {
        action,
        key,
        owner,
        ttl_ms,
        cursor,
    } = *op
    else {
        return None;
    };
    let (lane, key, owner) = (
        LANE.to_owned(),
        pick(&LANE_KEYS, key).to_owned(),
        pick(&LANE_OWNERS, owner).to_owned(),
    );
    let ttl_ms = u64::from(ttl_ms);
    Some(match action % 4 {
        0 => LaneCommand::Claim {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        },
        1 => LaneCommand::Renew {
            lane,
            key,
            owner,
            ttl_ms,
            now_ms,
        },
        2 => LaneCommand::Advance {
            lane,
            key,
            owner,
            cursor: cursor.map(|c| pick(&LANE_CURSORS, c).to_owned()),
            now_ms,
        },
        _ => LaneCommand::Release {
            lane,
            key,
            owner,
            now_ms,
        },
    })
}

fn fuel_command(op: &Op, now_ms: u64) -> Option<RecordFuel> {
    let Op::Fuel {
        instance,
        caller,
        op,
        fuel,
    } = *op
    else {
        return None;
    };
    Some(RecordFuel {
        instance: pick(&FUEL_INSTANCES, instance).into(),
        caller: pick(&FUEL_CALLERS, caller).into(),
        op: pick(&FUEL_OPS, op).into(),
        fuel: u64::from(fuel),
        now_ms,
    })
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn instance_command(op: &Op, now_ms: u64) -> Option<InstanceCommand> {
    let Op::Instance {
        action,
        handle,
        store,
        domain,
        identity,
        owner,
        disabled,
        mailbox,
        knows,
        topics,
    } = *op
    else {
        return None;
    };
    let handle = pick(&INSTANCE_HANDLES, handle).to_owned();
    let status = |disabled: bool| {
        if disabled {
            Status::Disabled
        } else {
            Status::Enabled
        }
    };
    let roster = |knows: u8| Knows::Handles(strings(ROSTERS[usize::from(knows) % ROSTERS.len()]));
    let topics = topics.map(|t| strings(TOPICS[usize::from(t) % TOPICS.len()]));
    Some(match action % 6 {
        0 | 1 => InstanceCommand::Upsert {
            handle,
            fields: InstanceFields {
                domain: domain.map(|d| pick(&INSTANCE_DOMAINS, d).to_owned()),
                identity: identity.map(|i| pick(&INSTANCE_IDS, i).to_owned()),
                store: store.map(|s| pick(&INSTANCE_STORES, s).to_owned()),
                knows: knows.map(roster),
                status: disabled.map(status),
                kind: mailbox.map(|m| {
                    if m {
                        InstanceKind::Mailbox
                    } else {
                        InstanceKind::Agent
                    }
                }),
                owner: owner.map(|o| pick(&INSTANCE_IDS, o).to_owned()),
                topics,
                ..InstanceFields::default()
            },
            now_ms,
        },
        2 => InstanceCommand::SetStatus {
            handle,
            status: status(disabled.unwrap_or(false)),
            now_ms,
        },
        3 => InstanceCommand::SetKnows {
            handle,
            knows: roster(knows.unwrap_or(0)),
            now_ms,
        },
        4 => InstanceCommand::SetTopics {
            handle,
            topics: topics.unwrap_or_default(),
            now_ms,
        },
        _ => InstanceCommand::Remove { handle, now_ms },
    })
}

fn outbox_command(op: &Op, now_ms: u64) -> Option<outbox::Command> {
    let Op::Outbox {
        action,
        key,
        peer,
        token,
        second,
        number,
        other,
    } = *op
    else {
        return None;
    };
    Some(outbox::command(
        action, key, peer, token, second, number, other, now_ms,
    ))
}

fn runs_command(op: &Op, now_ms: u64) -> Option<runs::Command> {
    let Op::Run {
        action,
        run,
        span,
        parent,
        writer,
        outcome,
        usage,
        number,
        other,
    } = *op
    else {
        return None;
    };
    Some(runs::command(
        action, run, span, parent, writer, outcome, usage, number, other, now_ms,
    ))
}

fn lease_command(op: &Op, now_ms: u64) -> Option<LeaseCommand> {
    Some(match *op {
        Op::Acquire {
            resource,
            holder,
            ttl_ms,
        } => LeaseCommand::Acquire {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            ttl_ms: u64::from(ttl_ms),
            now_ms,
        },
        Op::Renew {
            resource,
            holder,
            token,
            ttl_ms,
        } => LeaseCommand::Renew {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            token: FencingToken(u64::from(token % 4)),
            ttl_ms: u64::from(ttl_ms),
            now_ms,
        },
        Op::Release {
            resource,
            holder,
            token,
        } => LeaseCommand::Release {
            resource: pick(&RESOURCES, resource).into(),
            holder: pick(&HOLDERS, holder).into(),
            token: FencingToken(u64::from(token % 4)),
            now_ms,
        },
        _ => return None,
    })
}

/// Runs `op` in `session` at `*now_ms` (which a tick moves on), and states what it did.
pub fn run_on_store(op: &Op, session: &mut WriteSession<'_>, now_ms: &mut u64) -> Outcome {
    let failed = |error: Error| match error {
        Error::Append(error) => Outcome::AppendRefused(append_error_name(&error)),
        Error::Store(StoreError::ReservedKind { .. }) => Outcome::AppendRefused("reserved_kind"),
        Error::Store(StoreError::Fenced { .. }) => Outcome::AppendRefused("fenced"),
        Error::InvalidCommand { .. } => Outcome::Invalid,
        other => Outcome::Failed(other.to_string()),
    };
    match op {
        Op::Append {
            stream,
            expect,
            first,
            second,
        } => {
            let events: Vec<NewEvent> = std::iter::once(first)
                .chain(second)
                .map(|spec| new_event(*spec, *now_ms))
                .collect();
            match session.append(pick(&STREAMS, *stream), expect.version(), &events) {
                Ok(AppendOutcome::Appended(appended)) => Outcome::Appended {
                    first: appended.first_position.0,
                    version: appended.first_version.0,
                    count: appended.count,
                },
                Ok(AppendOutcome::Duplicate { positions }) => {
                    Outcome::Duplicate(positions.iter().map(|p| p.0).collect())
                }
                Err(error) => failed(error),
            }
        }
        Op::Tick(ms) => {
            *now_ms += u64::from(*ms);
            Outcome::Unmodelled
        }
        Op::SetSetting { key, value } => {
            let command = SetSetting {
                key: pick(&SETTING_KEYS, *key).into(),
                value: pick(&SETTING_VALUES, *value).into(),
                now_ms: *now_ms,
            };
            match session.execute(&command) {
                Ok(SettingOutcome::Set { previous }) => Outcome::SettingSet(previous),
                Ok(SettingOutcome::Unchanged) => Outcome::SettingUnchanged,
                Err(error) => failed(error),
            }
        }
        Op::Domain(seed) => {
            random_domain_command(&mut Rng::new(*seed), session, *now_ms);
            Outcome::Unmodelled
        }
        Op::Lane { .. } => {
            let Some(command) = lane_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match session.execute(&command) {
                Ok(LaneOutcome::Done { lane }) => Outcome::LaneDone(lane),
                Ok(LaneOutcome::Refused { reason, lane }) => Outcome::LaneRefused { reason, lane },
                Err(error) => failed(error),
            }
        }
        Op::Instance { .. } => {
            let Some(command) = instance_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match session.execute(&command) {
                Ok(outcome) => Outcome::Instance(Box::new(outcome)),
                Err(error) => failed(error),
            }
        }
        Op::Fuel { .. } => {
            let Some(command) = fuel_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match session.execute(&command) {
                Ok(outcome) => Outcome::Fuel(outcome),
                Err(error) => failed(error),
            }
        }
        Op::Outbox { .. } => {
            let Some(command) = outbox_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match outbox::run_on_store(&command, session, *now_ms) {
                Ok(seen) => Outcome::Outbox(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
        Op::Run { .. } => {
            let Some(command) = runs_command(op, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match runs::run_on_store(&command, session) {
                Ok(seen) => Outcome::Runs(Box::new(seen)),
                Err(Error::InvalidCommand { field, .. }) => Outcome::InvalidField(field),
                Err(error) => failed(error),
            }
        }
        lease => {
            let Some(command) = lease_command(lease, *now_ms) else {
                return Outcome::Unmodelled;
            };
            match session.execute(&command) {
                Ok(LeaseOutcome::Granted { lease, renewed }) => Outcome::Granted {
                    holder: lease.holder,
                    token: lease.token.0,
                    expires_at_ms: lease.expires_at_ms,
                    renewed,
                },
                Ok(LeaseOutcome::Released { lease }) => Outcome::Released {
                    token: lease.token.0,
                },
                Ok(LeaseOutcome::Refused { reason, lease }) => Outcome::Refused {
                    reason,
                    token: lease.map(|l| l.token.0),
                },
                Err(error) => failed(error),
            }
        }
    }
}

#[derive(Clone, Debug)]
struct ModelLease {
    holder: String,
    token: u64,
    expires_at_ms: u64,
}

#[derive(Clone, Debug)]
struct Keyed {
    position: u64,
    content: (String, String, Vec<u8>),
}

/// The reference model: the log's positions, stream versions and idempotency keys, the
/// resource leases and the registry settings.
#[derive(Clone, Debug, Default)]
pub struct Model {
    next: u64,
    streams: BTreeMap<String, u64>,
    keys: BTreeMap<String, Keyed>,
    leases: BTreeMap<String, ModelLease>,
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
    /// The records predicted since the journal was last taken.
    written: Vec<Written>,
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
            Op::Append {
                stream,
                expect,
                first,
                second,
            } => self.append(
                pick(&STREAMS, *stream),
                expect.version(),
                std::iter::once(first).chain(second).copied().collect(),
            ),
            Op::Tick(ms) => {
                *now_ms += u64::from(*ms);
                Outcome::Unmodelled
            }
            Op::SetSetting { key, value } => {
                let (key, value) = (pick(&SETTING_KEYS, *key), pick(&SETTING_VALUES, *value));
                if key.is_empty() {
                    return Outcome::Invalid;
                }
                let previous = self.settings.get(key).cloned();
                if previous.as_deref() == Some(value) {
                    return Outcome::SettingUnchanged;
                }
                self.settings.insert(key.to_owned(), value.to_owned());
                self.write(&setting_stream(key), 1);
                Outcome::SettingSet(previous)
            }
            Op::Domain(_) => Outcome::Unmodelled,
            Op::Lane { .. } => match lane_command(op, *now_ms) {
                Some(command) => self.lane(command),
                None => Outcome::Unmodelled,
            },
            Op::Instance { .. } => match instance_command(op, *now_ms) {
                Some(command) => self.instance(command),
                None => Outcome::Unmodelled,
            },
            Op::Fuel { .. } => match fuel_command(op, *now_ms) {
                Some(command) => self.fuel(command),
                None => Outcome::Unmodelled,
            },
            Op::Outbox { .. } => {
                let Some(command) = outbox_command(op, *now_ms) else {
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
                let Some(command) = runs_command(op, *now_ms) else {
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
            lease => match lease_command(lease, *now_ms) {
                Some(command) => self.lease(command),
                None => Outcome::Unmodelled,
            },
        }
    }

    fn append(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        specs: Vec<EventSpec>,
    ) -> Outcome {
        if specs
            .iter()
            .any(|s| pick(&KINDS, s.kind).starts_with("lease."))
        {
            return Outcome::AppendRefused("reserved_kind");
        }
        let keys: Vec<Option<&str>> = specs
            .iter()
            .map(|s| s.key.map(|k| pick(&KEYS, k)))
            .collect();
        if keys.len() == 2 && keys[0].is_some() && keys[0] == keys[1] {
            return Outcome::AppendRefused("repeated_key");
        }
        let mut duplicates = Vec::new();
        for (spec, key) in specs.iter().zip(&keys) {
            let Some(key) = key else { continue };
            let Some(keyed) = self.keys.get(*key) else {
                continue;
            };
            let content = (
                stream.to_owned(),
                pick(&KINDS, spec.kind).to_owned(),
                vec![spec.payload % 3],
            );
            if keyed.content != content {
                return Outcome::AppendRefused("conflict");
            }
            duplicates.push(keyed.position);
        }
        if !duplicates.is_empty() {
            return if duplicates.len() == specs.len() {
                Outcome::Duplicate(duplicates)
            } else {
                Outcome::AppendRefused("partial_duplicate")
            };
        }
        let current = self.streams.get(stream).map(|count| count - 1);
        let matches = match expected {
            ExpectedVersion::Any => true,
            ExpectedVersion::NoStream => current.is_none(),
            ExpectedVersion::StreamExists => current.is_some(),
            ExpectedVersion::Exact(v) => current == Some(v.0),
        };
        if !matches {
            return Outcome::AppendRefused("wrong_expected_version");
        }
        for (offset, (spec, key)) in specs.iter().zip(&keys).enumerate() {
            if let Some(key) = key {
                let keyed = Keyed {
                    position: self.next + offset as u64,
                    content: (
                        stream.to_owned(),
                        pick(&KINDS, spec.kind).to_owned(),
                        vec![spec.payload % 3],
                    ),
                };
                self.keys.insert((*key).to_owned(), keyed);
            }
        }
        self.write(stream, specs.len() as u64)
    }

    fn lease(&mut self, command: LeaseCommand) -> Outcome {
        match command {
            LeaseCommand::Acquire {
                resource,
                holder,
                ttl_ms,
                now_ms,
            } => {
                if resource.is_empty() || holder.is_empty() || ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                let expires_at_ms = now_ms.saturating_add(ttl_ms);
                let stream = format!("lease/{resource}");
                match self.leases.get_mut(&resource) {
                    Some(lease) if now_ms < lease.expires_at_ms && lease.holder != holder => {
                        Outcome::Refused {
                            reason: LeaseRefusal::Held,
                            token: Some(lease.token),
                        }
                    }
                    Some(lease) if now_ms < lease.expires_at_ms => {
                        lease.expires_at_ms = expires_at_ms;
                        let token = lease.token;
                        self.write(&stream, 1);
                        Outcome::Granted {
                            holder,
                            token,
                            expires_at_ms,
                            renewed: true,
                        }
                    }
                    _ => {
                        let token = self.tokens.get(&resource).copied().unwrap_or(0) + 1;
                        self.tokens.insert(resource.clone(), token);
                        let lease = ModelLease {
                            holder: holder.clone(),
                            token,
                            expires_at_ms,
                        };
                        self.leases.insert(resource, lease);
                        self.write(&stream, 1);
                        Outcome::Granted {
                            holder,
                            token,
                            expires_at_ms,
                            renewed: false,
                        }
                    }
                }
            }
            LeaseCommand::Renew {
                resource,
                holder,
                token,
                ttl_ms,
                now_ms,
            } => {
                if resource.is_empty() || ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                let lease = match self.held_by(&resource, &holder, token.0) {
                    Ok(lease) => lease,
                    Err(refused) => return refused,
                };
                if now_ms >= lease.expires_at_ms {
                    return Outcome::Refused {
                        reason: LeaseRefusal::Expired,
                        token: Some(lease.token),
                    };
                }
                let expires_at_ms = now_ms.saturating_add(ttl_ms);
                let granted = Outcome::Granted {
                    holder: lease.holder.clone(),
                    token: lease.token,
                    expires_at_ms,
                    renewed: true,
                };
                if let Some(lease) = self.leases.get_mut(&resource) {
                    lease.expires_at_ms = expires_at_ms;
                }
                self.write(&format!("lease/{resource}"), 1);
                granted
            }
            LeaseCommand::Release {
                resource,
                holder,
                token,
                ..
            } => {
                if resource.is_empty() {
                    return Outcome::Invalid;
                }
                if let Err(refused) = self.held_by(&resource, &holder, token.0) {
                    return refused;
                }
                self.leases.remove(&resource);
                self.write(&format!("lease/{resource}"), 1);
                Outcome::Released { token: token.0 }
            }
        }
    }

    fn lane(&mut self, command: LaneCommand) -> Outcome {
        match command {
            LaneCommand::Claim {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => {
                if lane.is_empty() || key.is_empty() || owner.is_empty() || ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                let id = (lane, key);
                let cursor = match self.lanes.get(&id) {
                    Some(current) if now_ms < current.expires_at_ms => {
                        return Outcome::LaneRefused {
                            reason: LeaseRefusal::Held,
                            lane: Some(current.clone()),
                        };
                    }
                    Some(current) => current.cursor.clone(),
                    None => None,
                };
                let claimed = LaneLease {
                    lane: id.0.clone(),
                    key: id.1.clone(),
                    owner,
                    expires_at_ms: now_ms + ttl_ms,
                    cursor,
                };
                self.lanes.insert(id.clone(), claimed.clone());
                self.write(&lane_stream(&id.0, &id.1), 1);
                Outcome::LaneDone(claimed)
            }
            LaneCommand::Renew {
                lane,
                key,
                owner,
                ttl_ms,
                now_ms,
            } => {
                if ttl_ms == 0 {
                    return Outcome::Invalid;
                }
                self.as_lane_owner(lane, key, &owner, now_ms, |l| {
                    l.expires_at_ms = now_ms + ttl_ms
                })
            }
            LaneCommand::Advance {
                lane,
                key,
                owner,
                cursor,
                now_ms,
            } => self.as_lane_owner(lane, key, &owner, now_ms, |l| l.cursor = cursor),
            LaneCommand::Release {
                lane,
                key,
                owner,
                now_ms,
            } => self.as_lane_owner(lane, key, &owner, now_ms, |l| l.expires_at_ms = 0),
        }
    }

    /// Changes the lane lease if `owner` holds it live at `now_ms`; the refusal otherwise.
    fn as_lane_owner(
        &mut self,
        lane: String,
        key: String,
        owner: &str,
        now_ms: u64,
        change: impl FnOnce(&mut LaneLease),
    ) -> Outcome {
        let stream = lane_stream(&lane, &key);
        let Some(current) = self.lanes.get_mut(&(lane, key)) else {
            return Outcome::LaneRefused {
                reason: LeaseRefusal::Missing,
                lane: None,
            };
        };
        let reason = if current.owner != owner {
            LeaseRefusal::Superseded
        } else if now_ms >= current.expires_at_ms {
            LeaseRefusal::Expired
        } else {
            change(current);
            let done = current.clone();
            self.write(&stream, 1);
            return Outcome::LaneDone(done);
        };
        Outcome::LaneRefused {
            reason,
            lane: Some(current.clone()),
        }
    }

    fn fuel(&mut self, command: RecordFuel) -> Outcome {
        let RecordFuel {
            instance,
            caller,
            op,
            fuel,
            now_ms,
        } = command;
        if !is_handle(&instance) || op.is_empty() {
            return Outcome::Invalid;
        }
        let row = (instance.clone(), caller.clone(), op.clone());
        let (calls, spent) = self.fuel.get(&row).copied().unwrap_or_default();
        self.fuel.insert(row, (calls + 1, spent + fuel));
        let mut total = FuelTotal::default();
        for (_, &(calls, fuel)) in self.fuel.iter().filter(|(row, _)| row.0 == instance) {
            total.calls += calls;
            total.fuel += fuel;
        }
        self.write(&fuel_stream(&instance), 1);
        Outcome::Fuel(FuelOutcome {
            entry: FuelEntry {
                instance,
                caller,
                op,
                calls: calls + 1,
                fuel: spent + fuel,
                updated_at_ms: now_ms,
            },
            total,
        })
    }

    fn instance(&mut self, command: InstanceCommand) -> Outcome {
        let (handle, now_ms) = match &command {
            InstanceCommand::Upsert { handle, now_ms, .. }
            | InstanceCommand::SetStatus { handle, now_ms, .. }
            | InstanceCommand::SetKnows { handle, now_ms, .. }
            | InstanceCommand::SetTopics { handle, now_ms, .. }
            | InstanceCommand::Remove { handle, now_ms } => (handle.clone(), *now_ms),
        };
        if !is_handle(&handle) {
            return Outcome::Invalid;
        }
        let current = self.instances.get(&handle).cloned();
        // An empty text field given is the clearing of it.
        let text = |given: &String| (!given.is_empty()).then(|| given.clone());
        let wanted = match command {
            InstanceCommand::Upsert { fields, .. } => {
                if fields.domain.as_deref() == Some("") || fields.store.as_deref() == Some("") {
                    return Outcome::Invalid;
                }
                let mut instance = match current.clone() {
                    Some(instance) => instance,
                    None => {
                        let Some(store) = fields.store.clone() else {
                            return Outcome::Invalid;
                        };
                        let Ok(handle) = Handle::parse("handle", &handle) else {
                            return Outcome::Failed(format!("model: {handle:?} is a handle"));
                        };
                        Instance {
                            handle,
                            domain: "localhost".into(),
                            identity: None,
                            store,
                            tree: None,
                            source: None,
                            knows: Knows::Handles(Vec::new()),
                            status: Status::Enabled,
                            kind: InstanceKind::Agent,
                            owner: None,
                            topics: Vec::new(),
                            created_at_ms: now_ms,
                        }
                    }
                };
                if let Some(domain) = fields.domain {
                    instance.domain = domain;
                }
                if let Some(identity) = &fields.identity {
                    instance.identity = text(identity);
                }
                if let Some(store) = fields.store {
                    instance.store = store;
                }
                if let Some(tree) = &fields.tree {
                    instance.tree = text(tree);
                }
                if let Some(source) = &fields.source {
                    instance.source = text(source);
                }
                if let Some(knows) = &fields.knows {
                    instance.knows = roster(knows);
                }
                if let Some(status) = fields.status {
                    instance.status = status;
                }
                if let Some(kind) = fields.kind {
                    instance.kind = kind;
                }
                if let Some(owner) = &fields.owner {
                    instance.owner = text(owner);
                }
                if let Some(topics) = fields.topics {
                    instance.topics = topics;
                }
                instance
            }
            InstanceCommand::Remove { .. } => {
                let Some(instance) = self.instances.remove(&handle) else {
                    return Outcome::Instance(Box::new(InstanceOutcome::Missing));
                };
                self.write(&instance_stream(&handle), 1);
                return Outcome::Instance(Box::new(InstanceOutcome::Removed { instance }));
            }
            other => {
                let Some(mut instance) = current.clone() else {
                    return Outcome::Instance(Box::new(InstanceOutcome::Missing));
                };
                match other {
                    InstanceCommand::SetStatus { status, .. } => instance.status = status,
                    InstanceCommand::SetKnows { knows, .. } => instance.knows = roster(&knows),
                    InstanceCommand::SetTopics { topics, .. } => instance.topics = topics,
                    _ => unreachable!("upsert and remove are decided above"),
                }
                instance
            }
        };
        let outcome = match current {
            Some(current) if current == wanted => {
                return Outcome::Instance(Box::new(InstanceOutcome::Unchanged {
                    instance: current,
                }));
            }
            Some(_) => InstanceOutcome::Updated {
                instance: wanted.clone(),
            },
            None => InstanceOutcome::Added {
                instance: wanted.clone(),
            },
        };
        self.instances.insert(handle.clone(), wanted);
        self.write(&instance_stream(&handle), 1);
        Outcome::Instance(Box::new(outcome))
    }

    /// The lease of `resource` if `holder` holds it under `token`, the refusal otherwise.
    fn held_by(&self, resource: &str, holder: &str, token: u64) -> Result<ModelLease, Outcome> {
        match self.leases.get(resource) {
            None => Err(Outcome::Refused {
                reason: LeaseRefusal::Missing,
                token: None,
            }),
            Some(lease) if lease.holder != holder || lease.token != token => {
                Err(Outcome::Refused {
                    reason: LeaseRefusal::Superseded,
                    token: Some(lease.token),
                })
            }
            Some(lease) => Ok(lease.clone()),
        }
    }
}

/// Whether `handle` is a hostname label (1 to 63 of `a-z`, `0-9`, `-`, no `-` at either end)
/// or a token id (64 lower-case hex digits, `_`, 1 to 20 decimal digits).
fn is_handle(handle: &str) -> bool {
    let label = (1..=63).contains(&handle.len())
        && !handle.starts_with('-')
        && !handle.ends_with('-')
        && handle
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let token_id = handle.split_once('_').is_some_and(|(txid, index)| {
        txid.len() == 64
            && txid
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && (1..=20).contains(&index.len())
            && index.bytes().all(|b| b.is_ascii_digit())
    });
    label || token_id
}

/// A roster in its one form: everyone if it names `*`, else its handles without repeats,
/// each where it first occurs.
fn roster(knows: &Knows) -> Knows {
    let Knows::Handles(handles) = knows else {
        return Knows::All;
    };
    if handles.iter().any(|h| h == "*") {
        return Knows::All;
    }
    let mut kept: Vec<String> = Vec::new();
    for handle in handles {
        if !kept.contains(handle) {
            kept.push(handle.clone());
        }
    }
    Knows::Handles(kept)
}
