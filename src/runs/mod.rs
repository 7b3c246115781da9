//! The runs projection: spans of agent work forming one tree per run, span events with capped
//! payloads, a per-run seq, run rollups, cascade close, orphan and stale sweeps, stuck runs and
//! detail pruning. Every change is a `run.` event on the stream `run/<run id>`; it never reads
//! a clock: time comes with each command and is the record's `at_ms`.
//!
//! # Rules (from the reference activity store, event-sourced)
//!
//! - **Start.** A span has a run, an id unique within the run, an optional parent, a name, a
//!   kind (`turn`, `tool`, `subagent`, `cron`), an origin (`session`, `cron`), an optional
//!   session and job, attributes, an optional billing mode and a writer; it starts at the
//!   command's `now_ms` and is open until it ends. A root's last heartbeat starts as its start.
//!   Refused: `span_exists` (the same id again), `run_closed`, `root_exists`,
//!   `parent_missing`.
//! - **Patch** (attributes merged, each reported usage field replaces the span's, wait
//!   boundary and billing mode replaced when given) only while the span is open: a patch
//!   after its end is refused `span_ended`; an unknown span `span_missing`.
//! - **End** is write-once with one of six outcomes: `success`, `error`, `timeout`,
//!   `cancelled`, `denied`, `interrupted`, an optional reason, and final usage and attributes
//!   merged as a patch. A second end is refused `span_ended` and appends nothing (the
//!   reference returns false and writes nothing).
//! - **Span events** go to any existing span, open or ended (as in the reference); each takes
//!   the span's next index from 0. The payload is capped at [`EVENT_PAYLOAD_BYTES_MAX`]
//!   (16 KiB); a command may lower the cap, never raise it. A longer payload is cut, in the
//!   decision, at a character boundary and recorded with `truncated: true`.
//! - **Seq.** Every start, patch, end and span event takes its run's next seq (from 1),
//!   decided from the projection and recorded in the event; heartbeats take none (liveness is
//!   not activity). The global cursor is the log position: span, event and change rows carry
//!   the position of the record that last changed them, and [`query::snapshot`] returns the
//!   run's high-water seq with the position of its latest change, read together.
//! - **Rollup.** A run closes when its root ends; the decision then computes the rollup from
//!   the spans as they will stand and records it in `run.rolled_up`. Any later end in the run
//!   rolls it up again. Span count and duration (root end − root start); tokens and cost are
//!   the root's (result-level accounting already includes subagents: summing the tree would
//!   count fan-outs twice), except that a `cron` run whose root reports none sums its
//!   children's. Failure reason: the reason of the first span (start order) that ended
//!   `error` or `timeout` with one, else `interrupted` when the root was. The cost fields are
//!   frozen at their first non-null value: `cost_micro_usd`, `billing_mode`, and
//!   `effective_cost_micro_usd`, which a later rollup fills only if still empty and only
//!   under the billing mode already frozen.
//! - **Cascade close** ends every open span of a run with the given outcome and reason on
//!   each, deepest first (ties: latest started first), then rolls the run up.
//! - **Orphan sweep**: every run with an open span written by a gone writer is cascade-closed
//!   `interrupted` ("writer gone").
//! - **Stale sweep**: every run whose open root's last heartbeat is older than the command's
//!   `stale_after_ms` is cascade-closed `interrupted` ("writer went silent"), judged on root
//!   heartbeat age, never span age, and sparing the sweeping writer's own runs.
//! - **Stuck runs** ([`query::stuck_runs`]): open roots started more than a threshold ago.
//! - **Pruning** deletes spans, events and changes of up to `batch` closed runs with nothing
//!   open that ended before the digest floor and the retention window, or before the hard
//!   ceiling regardless; the rollup stays, marked `detail_pruned`, and a run pruned by the
//!   ceiling alone gets the failure reason "digest coverage gap" if it had none.
//!
//! # Where this differs from the reference, and why
//!
//! - Time is the command's `now_ms`, never a clock read inside a write.
//! - Commands name the run as well as the span: span ids are unique within a run, and every
//!   event goes to the run's stream.
//! - Each run has exactly one root, its first span; a child needs a parent already in the run,
//!   and a closed (or pruned) run takes no new span. The reference enforced none of this; a
//!   rollup and a cascade order need a well-formed tree, and a run id is used once.
//! - Heartbeats name the run (its root); one for an unknown or closed run is refused as a
//!   value instead of silently ignored, and an older heartbeat never moves the last one back.
//! - Costs are integer micro-USD, not floats, so rows and sums are exact bytes. No pricing
//!   service runs inside a decision: the effective cost is 0 under a subscription and the
//!   run's reported cost under api billing; the billing mode comes with the span instead of
//!   the process environment, and the reference's estimate flag is absent.
//! - The orphan sweep names the gone writer instead of sweeping every session-origin span.
//! - Pruning never deletes history: the log keeps every event; only the projection's detail
//!   rows go. The reference's trimming of its change table has no counterpart (the log is it).

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;
pub(crate) mod rollup;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::Projection;
use crate::projection::table::{TableSource, WriteTables};
use crate::record::Record;

pub use decide::*;
pub use decide::{
    ClosedRun, EVENT_PAYLOAD_BYTES_MAX, RunCommand, RunCommandOutcome, RunRefusal, SpanCommand,
    SpanCommandOutcome, SpanRefusal,
};
pub use events::{Attributes, BillingMode, RunEvent, SpanKind, SpanOrigin, SpanOutcome, SpanUsage};
pub use query::*;
pub use query::{ChangeKind, Run, RunChange, RunRollup, RunSeq, RunSnapshot, Span, SpanEvent};

/// The runs projection.
pub struct Runs;

impl Projection for Runs {
    fn name(&self) -> &'static str {
        "runs"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        &query::TABLE_NAMES
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("run.")
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match RunEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn catalogue(&self) -> &'static [EventKind] {
        RunEvent::CATALOGUE
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
