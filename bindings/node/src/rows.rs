//! The rows the queries return, typed in JavaScript's conventions: counts and milliseconds as
//! `number`, positions, run seqs, tokens and ids as `bigint`, bytes as `Buffer`, annals' enum
//! values as the names `annals state --json` prints (`'pending'`, `'success'`, …).

use std::collections::HashMap;

use annals::outbox::{Claim as CoreClaim, OutboxRow as CoreOutboxRow};
use annals::registry::{FuelEntry as CoreFuelEntry, Instance as CoreInstance, Knows};
use annals::runs::{
    OpenRunRollup as CoreOpenRunRollup, Run as CoreRun, RunChange as CoreRunChange,
    RunRollup as CoreRunRollup, RunSnapshot as CoreRunSnapshot, Span as CoreSpan,
    SpanEvent as CoreSpanEvent, SpanUsage as CoreSpanUsage,
};
use napi::bindgen_prelude::{BigInt, Buffer};
use napi_derive::napi;

use crate::convert::name_of;

/// Milliseconds or a count read back from the log. Every value the binding writes is at
/// most 2^53 - 1, so it is exact; a larger one written from Rust reads as the nearest number.
pub fn number(value: u64) -> f64 {
    value as f64
}

fn optional_number(value: Option<u64>) -> Option<f64> {
    value.map(number)
}

fn optional_name(value: Option<impl serde::Serialize>) -> Option<String> {
    value.as_ref().map(name_of)
}

fn attributes(map: &std::collections::BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A claim on an outbox row.
#[napi(object)]
pub struct Claim {
    /// The claim's token.
    pub token: String,
    /// When it was claimed.
    pub claimed_at_ms: f64,
    /// When it lapses.
    pub expires_at_ms: f64,
}

/// An outbox row: a delivery owed to a peer.
#[napi(object)]
pub struct OutboxRow {
    /// Its idempotency key.
    pub key: String,
    /// The peer it is owed to.
    pub peer: String,
    /// What kind of row it is.
    pub kind: String,
    /// Its place in enqueue order.
    pub enqueue_id: BigInt,
    /// What is delivered.
    pub payload: Buffer,
    /// `'pending'`, `'waiting'`, `'claimed'`, `'done'` or `'expired'`.
    #[napi(ts_type = "OutboxState")]
    pub state: String,
    /// Failed pushes so far.
    pub attempts: u32,
    /// When a `pending` row is due again after a failure.
    pub next_at_ms: Option<f64>,
    /// When it first failed.
    pub first_failed_at_ms: Option<f64>,
    /// What last went wrong.
    pub last_error: Option<String>,
    /// When it was enqueued.
    pub created_at_ms: f64,
    /// The claim it is under, if claimed.
    pub claim: Option<Claim>,
    /// Every token it was ever claimed under (a token is never reused).
    pub claim_tokens: Vec<String>,
}

fn claim_js(claim: &CoreClaim) -> Claim {
    Claim {
        token: claim.token.0.clone(),
        claimed_at_ms: number(claim.claimed_at_ms),
        expires_at_ms: number(claim.expires_at_ms),
    }
}

pub fn outbox_row_js(row: &CoreOutboxRow) -> OutboxRow {
    OutboxRow {
        key: row.key.clone(),
        peer: row.peer.clone(),
        kind: row.kind.clone(),
        enqueue_id: BigInt::from(row.enqueue_id),
        payload: Buffer::from(row.payload.clone()),
        state: name_of(&row.state),
        attempts: row.attempts,
        next_at_ms: optional_number(row.next_at_ms),
        first_failed_at_ms: optional_number(row.first_failed_at_ms),
        last_error: row.last_error.clone(),
        created_at_ms: number(row.created_at_ms),
        claim: row.claim.as_ref().map(claim_js),
        claim_tokens: row.claim_tokens.iter().map(|t| t.0.clone()).collect(),
    }
}

/// An instance the host registers.
#[napi(object)]
pub struct Instance {
    /// Its handle.
    pub handle: String,
    /// Its domain.
    pub domain: String,
    /// Its identity key (hex), if any.
    pub identity: Option<String>,
    /// Its store.
    pub store: String,
    /// The root of the tree deployed, if any.
    pub tree: Option<String>,
    /// The directory it came from, if any.
    pub source: Option<String>,
    /// Whom it knows: handles, or `['*']` for every other enabled instance.
    pub knows: Vec<String>,
    /// `'enabled'` or `'disabled'`.
    #[napi(ts_type = "InstanceStatus")]
    pub status: String,
    /// `'agent'` or `'mailbox'`.
    #[napi(ts_type = "InstanceKind")]
    pub kind: String,
    /// A mailbox's owner (hex identity), if any.
    pub owner: Option<String>,
    /// Overlay names routed to it.
    pub topics: Vec<String>,
    /// When it was registered.
    pub created_at_ms: f64,
}

pub fn instance_js(instance: &CoreInstance) -> Instance {
    Instance {
        handle: instance.handle.as_str().to_owned(),
        domain: instance.domain.clone(),
        identity: instance.identity.clone(),
        store: instance.store.clone(),
        tree: instance.tree.clone(),
        source: instance.source.clone(),
        knows: match &instance.knows {
            Knows::All => vec![annals::registry::KNOWS_ALL.to_owned()],
            Knows::Handles(handles) => handles.clone(),
        },
        status: name_of(&instance.status),
        kind: name_of(&instance.kind),
        owner: instance.owner.clone(),
        topics: instance.topics.clone(),
        created_at_ms: number(instance.created_at_ms),
    }
}

/// One entry of the fuel ledger: what `caller` doing `op` used on `instance`.
#[napi(object)]
pub struct FuelEntry {
    /// The instance charged.
    pub instance: String,
    /// Who called.
    pub caller: String,
    /// The operation.
    pub op: String,
    /// Calls in all.
    pub calls: f64,
    /// Fuel in all.
    pub fuel: f64,
    /// When it last changed.
    pub updated_at_ms: f64,
}

pub fn fuel_entry_js(entry: &CoreFuelEntry) -> FuelEntry {
    FuelEntry {
        instance: entry.instance.clone(),
        caller: entry.caller.clone(),
        op: entry.op.clone(),
        calls: number(entry.calls),
        fuel: number(entry.fuel),
        updated_at_ms: number(entry.updated_at_ms),
    }
}

/// An instance's fuel in all.
#[napi(object)]
pub struct FuelTotal {
    /// Calls in all.
    pub calls: f64,
    /// Fuel in all.
    pub fuel: f64,
}

pub fn fuel_total_js(total: &annals::registry::FuelTotal) -> FuelTotal {
    FuelTotal {
        calls: number(total.calls),
        fuel: number(total.fuel),
    }
}

/// A host setting.
#[napi(object)]
pub struct Setting {
    /// Its key.
    pub key: String,
    /// Its value.
    pub value: String,
}

/// Tokens and cost a span reported.
#[napi(object)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: Option<f64>,
    /// Output tokens.
    pub output_tokens: Option<f64>,
    /// Tokens read from a prompt cache.
    pub cache_read_tokens: Option<f64>,
    /// Tokens written to a prompt cache.
    pub cache_creation_tokens: Option<f64>,
    /// Cost in millionths of a US dollar.
    pub cost_micro_usd: Option<f64>,
    /// The model that consumed them.
    pub model: Option<String>,
}

fn usage_js(usage: &CoreSpanUsage) -> Usage {
    Usage {
        input_tokens: optional_number(usage.input_tokens),
        output_tokens: optional_number(usage.output_tokens),
        cache_read_tokens: optional_number(usage.cache_read_tokens),
        cache_creation_tokens: optional_number(usage.cache_creation_tokens),
        cost_micro_usd: optional_number(usage.cost_micro_usd),
        model: usage.model.clone(),
    }
}

/// A run: its root span and counters.
#[napi(object)]
pub struct Run {
    /// The run.
    pub run: String,
    /// Its root span.
    pub root_span: String,
    /// The last seq written in the run.
    pub high_water_seq: BigInt,
    /// Spans started in all.
    pub span_count: f64,
    /// Spans still open.
    pub open_span_count: f64,
    /// Whether its root has ended.
    pub closed: bool,
}

pub fn run_js(run: &CoreRun) -> Run {
    Run {
        run: run.run.clone(),
        root_span: run.root_span.clone(),
        high_water_seq: BigInt::from(run.high_water_seq.0),
        span_count: number(run.span_count),
        open_span_count: number(run.open_span_count),
        closed: run.closed,
    }
}

/// A span of a run's tree.
#[napi(object)]
pub struct Span {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its parent, `undefined` for the root.
    pub parent: Option<String>,
    /// Its name.
    pub name: String,
    /// `'turn'`, `'tool'`, `'subagent'`, `'llm_call'`, …
    #[napi(ts_type = "SpanKind")]
    pub kind: String,
    /// `'session'` or `'cron'`.
    #[napi(ts_type = "SpanOrigin")]
    pub origin: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// Its scheduled job, if any.
    pub job_name: Option<String>,
    /// Its attributes.
    pub attributes: HashMap<String, String>,
    /// `'subscription'` or `'api'`, if known.
    pub billing_mode: Option<String>,
    /// The process identity that writes it.
    pub writer: String,
    /// When it started.
    pub started_at_ms: f64,
    /// Its wait boundary, if any.
    pub wait_until_ms: Option<f64>,
    /// When it ended, if it has.
    pub ended_at_ms: Option<f64>,
    /// How it ended, if it has.
    #[napi(ts_type = "SpanEnd")]
    pub outcome: Option<String>,
    /// Why, if said.
    pub outcome_reason: Option<String>,
    /// What it used.
    pub usage: Usage,
    /// Its writer's last heartbeat, if any.
    pub last_heartbeat_at_ms: Option<f64>,
    /// Its depth in the tree (0 for the root).
    pub depth: u32,
    /// The run's seq at its start.
    pub start_seq: BigInt,
    /// The run's seq at its last change.
    pub seq: BigInt,
    /// The log position of its last change.
    pub position: BigInt,
    /// Events recorded on it.
    pub event_count: f64,
}

pub fn span_js(span: &CoreSpan) -> Span {
    Span {
        run: span.run.clone(),
        span: span.span.clone(),
        parent: span.parent.clone(),
        name: span.name.clone(),
        kind: name_of(&span.kind),
        origin: name_of(&span.origin),
        session_id: span.session_id.clone(),
        job_name: span.job_name.clone(),
        attributes: attributes(&span.attributes),
        billing_mode: optional_name(span.billing_mode),
        writer: span.writer.clone(),
        started_at_ms: number(span.started_at_ms),
        wait_until_ms: optional_number(span.wait_until_ms),
        ended_at_ms: optional_number(span.ended_at_ms),
        outcome: optional_name(span.outcome),
        outcome_reason: span.outcome_reason.clone(),
        usage: usage_js(&span.usage),
        last_heartbeat_at_ms: optional_number(span.last_heartbeat_at_ms),
        depth: span.depth,
        start_seq: BigInt::from(span.start_seq.0),
        seq: BigInt::from(span.seq.0),
        position: BigInt::from(span.position),
        event_count: number(span.event_count),
    }
}

/// An event recorded on a span.
#[napi(object)]
pub struct SpanEvent {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its index within the span, from 0.
    pub event_index: f64,
    /// Its time.
    pub at_ms: f64,
    /// What kind of event it is.
    pub event_type: String,
    /// Its payload, cut to the cap.
    pub payload: String,
    /// Whether the payload was cut.
    pub truncated: bool,
    /// The run's seq for it.
    pub seq: BigInt,
    /// Its log position.
    pub position: BigInt,
}

pub fn span_event_js(event: &CoreSpanEvent) -> SpanEvent {
    SpanEvent {
        run: event.run.clone(),
        span: event.span.clone(),
        event_index: number(event.event_index),
        at_ms: number(event.at_ms),
        event_type: event.event_type.clone(),
        payload: event.payload.clone(),
        truncated: event.truncated,
        seq: BigInt::from(event.seq.0),
        position: BigInt::from(event.position),
    }
}

/// One change of a run, for a follower catching up by seq.
#[napi(object)]
pub struct RunChange {
    /// The run.
    pub run: String,
    /// Its seq.
    pub seq: BigInt,
    /// Its log position.
    pub position: BigInt,
    /// The span it changed.
    pub span: String,
    /// `'span_started'`, `'span_patched'`, `'span_ended'` or `'event_appended'`.
    #[napi(ts_type = "RunChangeKind")]
    pub kind: String,
    /// The event's index, for `'event_appended'`.
    pub event_index: Option<f64>,
}

pub fn run_change_js(change: &CoreRunChange) -> RunChange {
    RunChange {
        run: change.run.clone(),
        seq: BigInt::from(change.seq.0),
        position: BigInt::from(change.position),
        span: change.span.clone(),
        kind: name_of(&change.kind),
        event_index: optional_number(change.event_index),
    }
}

/// A run whole: the run, its spans and their events.
#[napi(object)]
pub struct RunSnapshot {
    /// The run.
    pub run: Run,
    /// Its spans.
    pub spans: Vec<Span>,
    /// Their events.
    pub events: Vec<SpanEvent>,
    /// The last seq it holds.
    pub high_water_seq: BigInt,
    /// The log position it was read at, if known.
    pub position: Option<BigInt>,
}

pub fn snapshot_js(snapshot: &CoreRunSnapshot) -> RunSnapshot {
    RunSnapshot {
        run: run_js(&snapshot.run),
        spans: snapshot.spans.iter().map(span_js).collect(),
        events: snapshot.events.iter().map(span_event_js).collect(),
        high_water_seq: BigInt::from(snapshot.high_water_seq.0),
        position: snapshot.position.map(BigInt::from),
    }
}

/// The rollup of a run whose root ended: its spans' usage and cost summed.
#[napi(object)]
pub struct RunRollup {
    /// The run.
    pub run: String,
    /// `'session'` or `'cron'`.
    #[napi(ts_type = "SpanOrigin")]
    pub origin: String,
    /// The root's name.
    pub name: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// Its scheduled job, if any.
    pub job_name: Option<String>,
    /// When the root started.
    pub started_at_ms: f64,
    /// When it ended.
    pub ended_at_ms: f64,
    /// How it ended.
    #[napi(ts_type = "SpanEnd")]
    pub outcome: String,
    /// `endedAtMs - startedAtMs`.
    pub duration_ms: f64,
    /// Spans in the run.
    pub span_count: f64,
    /// Input tokens summed, if any span reported them.
    pub input_tokens: Option<f64>,
    /// Output tokens summed.
    pub output_tokens: Option<f64>,
    /// Cache-read tokens summed.
    pub cache_read_tokens: Option<f64>,
    /// Cache-creation tokens summed.
    pub cache_creation_tokens: Option<f64>,
    /// Cost summed, millionths of a US dollar.
    pub cost_micro_usd: Option<f64>,
    /// What the run costs under its billing mode.
    pub effective_cost_micro_usd: Option<f64>,
    /// `'subscription'` or `'api'`, if known.
    pub billing_mode: Option<String>,
    /// Why it failed, if it did.
    pub failure_reason: Option<String>,
    /// Whether its detail (spans, events) has been pruned.
    pub detail_pruned: bool,
}

pub fn rollup_js(rollup: &CoreRunRollup) -> RunRollup {
    RunRollup {
        run: rollup.run.clone(),
        origin: name_of(&rollup.origin),
        name: rollup.name.clone(),
        session_id: rollup.session_id.clone(),
        job_name: rollup.job_name.clone(),
        started_at_ms: number(rollup.started_at_ms),
        ended_at_ms: number(rollup.ended_at_ms),
        outcome: name_of(&rollup.outcome),
        duration_ms: number(rollup.duration_ms),
        span_count: number(rollup.span_count),
        input_tokens: optional_number(rollup.input_tokens),
        output_tokens: optional_number(rollup.output_tokens),
        cache_read_tokens: optional_number(rollup.cache_read_tokens),
        cache_creation_tokens: optional_number(rollup.cache_creation_tokens),
        cost_micro_usd: optional_number(rollup.cost_micro_usd),
        effective_cost_micro_usd: optional_number(rollup.effective_cost_micro_usd),
        billing_mode: optional_name(rollup.billing_mode),
        failure_reason: rollup.failure_reason.clone(),
        detail_pruned: rollup.detail_pruned,
    }
}

/// The rollup of a run whose root is still open.
#[napi(object)]
pub struct OpenRunRollup {
    /// The run.
    pub run: String,
    /// `'session'` or `'cron'`.
    #[napi(ts_type = "SpanOrigin")]
    pub origin: String,
    /// The root's name.
    pub name: String,
    /// Its session, if any.
    pub session_id: Option<String>,
    /// Its scheduled job, if any.
    pub job_name: Option<String>,
    /// When the root started.
    pub started_at_ms: f64,
    /// Spans so far.
    pub span_count: f64,
    /// Input tokens summed so far.
    pub input_tokens: Option<f64>,
    /// Output tokens summed so far.
    pub output_tokens: Option<f64>,
    /// Cache-read tokens summed so far.
    pub cache_read_tokens: Option<f64>,
    /// Cache-creation tokens summed so far.
    pub cache_creation_tokens: Option<f64>,
    /// Cost summed so far.
    pub cost_micro_usd: Option<f64>,
    /// What it costs so far under its billing mode.
    pub effective_cost_micro_usd: Option<f64>,
    /// `'subscription'` or `'api'`, if known.
    pub billing_mode: Option<String>,
    /// Why a span failed, if one did.
    pub failure_reason: Option<String>,
}

pub fn open_rollup_js(rollup: &CoreOpenRunRollup) -> OpenRunRollup {
    OpenRunRollup {
        run: rollup.run.clone(),
        origin: name_of(&rollup.origin),
        name: rollup.name.clone(),
        session_id: rollup.session_id.clone(),
        job_name: rollup.job_name.clone(),
        started_at_ms: number(rollup.started_at_ms),
        span_count: number(rollup.span_count),
        input_tokens: optional_number(rollup.input_tokens),
        output_tokens: optional_number(rollup.output_tokens),
        cache_read_tokens: optional_number(rollup.cache_read_tokens),
        cache_creation_tokens: optional_number(rollup.cache_creation_tokens),
        cost_micro_usd: optional_number(rollup.cost_micro_usd),
        effective_cost_micro_usd: optional_number(rollup.effective_cost_micro_usd),
        billing_mode: optional_name(rollup.billing_mode),
        failure_reason: rollup.failure_reason.clone(),
    }
}
