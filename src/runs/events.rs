//! Run events: what the runs projection records. Kinds start with `run.`; every event of a run
//! goes to the stream `run/<run id>`.
//!
//! Times are the record's `at_ms` (the command's `now_ms`): a span's start and end, an event's
//! timestamp, a heartbeat. Everything else `apply` needs (seq, depth, event index, the capped
//! payload, the rollup) is decided once and written here.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::domain_events;

/// Free-form span attributes: name → value (typically JSON text). Ordered, so the bytes of a
/// payload or a row never depend on insertion order.
pub type Attributes = BTreeMap<String, String>;

/// What a span is a unit of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// One agent turn.
    Turn,
    /// One tool call.
    Tool,
    /// A subagent run.
    Subagent,
    /// A scheduled job run.
    Cron,
}

/// Where a run came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpanOrigin {
    /// An interactive session.
    Session,
    /// A scheduled job.
    Cron,
}

/// The terminal outcome of a span: written once, never changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
// Its serde name is not its Rust name (neither bincode nor JSON writes it): the Node package
// crosses an enum named `…Outcome` as an object tagged by `type`, and this one is a span's end.
#[serde(rename = "SpanEnd", rename_all = "snake_case")]
pub enum SpanOutcome {
    /// The work finished.
    Success,
    /// The work failed.
    Error,
    /// The work ran out of time.
    Timeout,
    /// Someone stopped the work.
    Cancelled,
    /// The work was not allowed.
    Denied,
    /// The work was cut off from outside (its writer went away or fell silent).
    Interrupted,
}

impl SpanOutcome {
    /// The six outcomes, in variant order.
    pub const ALL: [SpanOutcome; 6] = [
        SpanOutcome::Success,
        SpanOutcome::Error,
        SpanOutcome::Timeout,
        SpanOutcome::Cancelled,
        SpanOutcome::Denied,
        SpanOutcome::Interrupted,
    ];
}

/// How a run is billed, which decides its effective cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum BillingMode {
    /// Flat-rate: the run's effective cost is 0 whatever it consumed.
    Subscription,
    /// Metered: the run's effective cost is what it cost.
    Api,
}

/// Token usage and cost as a span reports it. `None` is "not reported", never zero.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpanUsage {
    /// Input tokens.
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Tokens read from a prompt cache.
    pub cache_read_tokens: Option<u64>,
    /// Tokens written to a prompt cache.
    pub cache_creation_tokens: Option<u64>,
    /// Cost in millionths of a US dollar (integers, so sums and bytes are exact).
    pub cost_micro_usd: Option<u64>,
    /// The model that consumed them.
    pub model: Option<String>,
}

impl SpanUsage {
    /// Takes every field `update` reports; keeps the others.
    pub fn merge(&mut self, update: &SpanUsage) {
        fn take<T: Clone>(slot: &mut Option<T>, update: &Option<T>) {
            if update.is_some() {
                slot.clone_from(update);
            }
        }
        take(&mut self.input_tokens, &update.input_tokens);
        take(&mut self.output_tokens, &update.output_tokens);
        take(&mut self.cache_read_tokens, &update.cache_read_tokens);
        take(
            &mut self.cache_creation_tokens,
            &update.cache_creation_tokens,
        );
        take(&mut self.cost_micro_usd, &update.cost_micro_usd);
        take(&mut self.model, &update.model);
    }
}

/// A span started (written at start, open until it ends). Its start time is the record's
/// `at_ms`; a root's first heartbeat is its start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanStarted {
    /// The run.
    pub run: String,
    /// The span: unique within its run, and (for starts decided since the rule came in)
    /// across the runs whose detail is kept.
    pub span: String,
    /// The parent span in the same run; `None` for the run's root.
    pub parent: Option<String>,
    /// What it is called.
    pub name: String,
    /// What it is a unit of.
    pub kind: SpanKind,
    /// Where its run came from.
    pub origin: SpanOrigin,
    /// The session it belongs to, if any.
    pub session_id: Option<String>,
    /// The scheduled job it belongs to, if any.
    pub job_name: Option<String>,
    /// Its attributes at start.
    pub attributes: Attributes,
    /// How its run is billed, when known at start.
    pub billing_mode: Option<BillingMode>,
    /// The process identity that writes it.
    pub writer: String,
    /// Its depth in the run's tree: 0 for the root.
    pub depth: u32,
    /// Its run's seq for this change.
    pub seq: u64,
}

/// An open span was updated. Attributes are merged in (a given name replaces its value);
/// every reported usage field replaces the span's; absent fields keep theirs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanPatched {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its run's seq for this change.
    pub seq: u64,
    /// Attributes merged in.
    pub attributes: Attributes,
    /// Usage merged in.
    pub usage: SpanUsage,
    /// A new wait boundary, if given.
    pub wait_until_ms: Option<u64>,
    /// A billing mode, if given.
    pub billing_mode: Option<BillingMode>,
}

/// A span reached its terminal outcome at the record's `at_ms`. Write-once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanEnded {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its run's seq for this change.
    pub seq: u64,
    /// The outcome.
    pub outcome: SpanOutcome,
    /// Why, if said.
    pub reason: Option<String>,
    /// Final usage merged in, as for a patch.
    pub usage: SpanUsage,
    /// Final attributes merged in, as for a patch.
    pub attributes: Attributes,
}

/// An event was recorded on a span at the record's `at_ms`, its payload already capped.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventAppended {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its run's seq for this change.
    pub seq: u64,
    /// Its index within the span: 0, 1, 2, …
    pub event_index: u64,
    /// What kind of event it is.
    pub event_type: String,
    /// The payload as stored: cut to the cap when it was longer.
    pub payload: String,
    /// Whether the payload was cut.
    pub truncated: bool,
}

/// An event recorded on a span at the record's `at_ms` whose payload is personal to a subject
/// (`docs/erasure.md`): the payload is the envelope the store sealed it into, bound to the
/// run's stream and this kind, never the text. Otherwise as [`EventAppended`]; a personal
/// payload is never cut (it is sealed before the command decides), so it has no `truncated`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PersonalEventAppended {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its run's seq for this change.
    pub seq: u64,
    /// Its index within the span: 0, 1, 2, …
    pub event_index: u64,
    /// What kind of event it is (in clear: name event types so they say nothing personal).
    pub event_type: String,
    /// The payload's envelope (`schema/FORMAT.md` 1.5).
    #[serde(serialize_with = "crate::event::readable_bytes")]
    pub payload: Vec<u8>,
}

/// The writer of a run's open root said it is alive at the record's `at_ms`. Liveness only:
/// it takes no seq, as it is no activity a reader needs a delta for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heartbeat {
    /// The run.
    pub run: String,
}

/// An open span (any span of a run, its root or a child) said it is alive at the record's
/// `at_ms`. Liveness only, like [`Heartbeat`]: it takes no seq.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpanHeartbeat {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
}

/// A run's rollup was computed on request while its root is still open, as decided: the cost
/// fields already merged with any earlier rollup's frozen values. It takes no seq (a rollup is
/// no change to a span).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledUpWhileOpen {
    /// The rollup of the run so far.
    pub rollup: OpenRunRollup,
}

/// A run's rollup was written (its root is terminal), as decided: the cost fields already
/// merged with any earlier rollup's frozen values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RolledUp {
    /// The rollup row, `detail_pruned` false.
    pub rollup: RunRollup,
}

/// A finished run's detail (spans, events, changes) was deleted; its rollup stays, marked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetailPruned {
    /// The run.
    pub run: String,
    /// The rollup's failure reason from now on (set when the run was pruned uncovered).
    pub failure_reason: Option<String>,
    /// How many spans were deleted.
    pub spans_deleted: u64,
}

domain_events! {
    /// Every run event.
    pub enum RunEvent {
        /// `run.span_started`
        SpanStarted(SpanStarted) = SPAN_STARTED = "run.span_started", schema 1;
        /// `run.span_patched`
        SpanPatched(SpanPatched) = SPAN_PATCHED = "run.span_patched", schema 1;
        /// `run.span_ended`
        SpanEnded(SpanEnded) = SPAN_ENDED = "run.span_ended", schema 1;
        /// `run.event_appended`: also the kind a plain span event's payload is read as.
        EventAppended(EventAppended) = pub(crate) EVENT_APPENDED = "run.event_appended", schema 1;
        /// `run.heartbeat`
        Heartbeat(Heartbeat) = HEARTBEAT = "run.heartbeat", schema 1;
        /// `run.rolled_up`
        RolledUp(RolledUp) = ROLLED_UP = "run.rolled_up", schema 1;
        /// `run.detail_pruned`
        DetailPruned(DetailPruned) = DETAIL_PRUNED = "run.detail_pruned", schema 1;
        /// `run.span_heartbeat`
        SpanHeartbeat(SpanHeartbeat) = SPAN_HEARTBEAT = "run.span_heartbeat", schema 1;
        /// `run.rolled_up_while_open`
        RolledUpWhileOpen(RolledUpWhileOpen) = ROLLED_UP_WHILE_OPEN = "run.rolled_up_while_open",
            schema 1;
        /// `run.personal_event_appended`: also the kind a personal span event's envelope is
        /// bound to.
        PersonalEventAppended(PersonalEventAppended) =
            pub(crate) PERSONAL_EVENT_APPENDED = "run.personal_event_appended", schema 1;
    }
}

/// A closed run's summary, written when its root ends and rewritten when any of its spans
/// ends later; it outlives the run's detail.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunRollup {
    /// The run.
    pub run: String,
    /// Where it came from (the root's origin).
    pub origin: SpanOrigin,
    /// The root's name.
    pub name: String,
    /// The root's session, if any.
    pub session_id: Option<String>,
    /// The root's job, if any.
    pub job_name: Option<String>,
    /// When the root started.
    pub started_at_ms: u64,
    /// When the root ended.
    pub ended_at_ms: u64,
    /// The root's outcome.
    pub outcome: SpanOutcome,
    /// `ended_at_ms - started_at_ms`.
    pub duration_ms: u64,
    /// Spans in the run.
    pub span_count: u64,
    /// Input tokens (root-level accounting; see the module rules).
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Cache-read tokens.
    pub cache_read_tokens: Option<u64>,
    /// Cache-creation tokens.
    pub cache_creation_tokens: Option<u64>,
    /// What the run reported it cost, micro-USD: frozen at its first non-null value.
    pub cost_micro_usd: Option<u64>,
    /// What the run effectively cost, micro-USD (0 under a subscription, `None` unknown):
    /// frozen at its first non-null value.
    pub effective_cost_micro_usd: Option<u64>,
    /// The billing classification behind the effective cost: frozen at first non-null.
    pub billing_mode: Option<BillingMode>,
    /// Why the run failed, if it did.
    pub failure_reason: Option<String>,
    /// Whether its detail (spans, events) was pruned.
    pub detail_pruned: bool,
}

/// A run's rollup computed on request while its root is still open: a [`RunRollup`] without
/// the root's end, outcome and duration (the reference keeps these null). Kept in
/// `runs.open_rollups` until the root ends and the run's [`RunRollup`] replaces it, its cost
/// fields frozen into that one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OpenRunRollup {
    /// The run.
    pub run: String,
    /// Where it came from (the root's origin).
    pub origin: SpanOrigin,
    /// The root's name.
    pub name: String,
    /// The root's session, if any.
    pub session_id: Option<String>,
    /// The root's job, if any.
    pub job_name: Option<String>,
    /// When the root started.
    pub started_at_ms: u64,
    /// Spans in the run so far.
    pub span_count: u64,
    /// Input tokens (root-level accounting, as for [`RunRollup`]).
    pub input_tokens: Option<u64>,
    /// Output tokens.
    pub output_tokens: Option<u64>,
    /// Cache-read tokens.
    pub cache_read_tokens: Option<u64>,
    /// Cache-creation tokens.
    pub cache_creation_tokens: Option<u64>,
    /// What the run reported it cost so far, micro-USD: frozen at its first non-null value.
    pub cost_micro_usd: Option<u64>,
    /// What the run effectively cost, micro-USD: frozen at its first non-null value.
    pub effective_cost_micro_usd: Option<u64>,
    /// The billing classification behind the effective cost: frozen at first non-null.
    pub billing_mode: Option<BillingMode>,
    /// Why the run failed so far, if a span ended `error` or `timeout` with a reason.
    pub failure_reason: Option<String>,
}

impl OpenRunRollup {
    /// The closed run's rollup: these figures with the root's end and outcome.
    pub fn closed(self, outcome: SpanOutcome, ended_at_ms: u64) -> RunRollup {
        RunRollup {
            duration_ms: ended_at_ms.saturating_sub(self.started_at_ms),
            run: self.run,
            origin: self.origin,
            name: self.name,
            session_id: self.session_id,
            job_name: self.job_name,
            started_at_ms: self.started_at_ms,
            ended_at_ms,
            outcome,
            span_count: self.span_count,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            cache_read_tokens: self.cache_read_tokens,
            cache_creation_tokens: self.cache_creation_tokens,
            cost_micro_usd: self.cost_micro_usd,
            effective_cost_micro_usd: self.effective_cost_micro_usd,
            billing_mode: self.billing_mode,
            failure_reason: self.failure_reason,
            detail_pruned: false,
        }
    }
}
