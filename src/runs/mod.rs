//! The runs projection: spans of agent work forming one tree per run, span events with capped
//! payloads, a per-run seq, run rollups, cascade close, orphan and stale sweeps, stuck runs and
//! detail pruning. Every change is a `run.` event on the stream `run/<run id>`; it never reads
//! a clock: time comes with each command and is the record's `at_ms`.
//!
//! # Rules, from the reference
//!
//! Each rule below behaves as the reference activity store (`store.ts`) does; where annals
//! adds to it or departs from it, the next section says so.
//!
//! - **Start** (`startSpan`). A span has a run, an id, an optional parent, a name, a kind
//!   (`turn`, `tool`, `subagent`, `cron`), an origin (`session`, `cron`), an optional session
//!   and job, attributes and a writer; it starts at the command's `now_ms` and is open until
//!   it ends. A root's last heartbeat starts as its start; any other span has none until it
//!   heartbeats. **A span id is a primary key across runs**: a start naming an id that a span
//!   of any run still holds writes nothing (the reference's plain `INSERT` fails on the key
//!   and the start throws); here it is refused `span_exists` (same run) or
//!   `span_in_another_run`. A pruned run's span ids are free again, as the reference deletes
//!   their rows.
//! - **Patch** (`patchSpan`): attributes merged, each reported usage field replaces the
//!   span's, the wait boundary replaced when given, only while the span is open; a patch of
//!   an ended or unknown span writes nothing.
//! - **End** (`endSpan`) is write-once with one of six outcomes: `success`, `error`,
//!   `timeout`, `cancelled`, `denied`, `interrupted`, an optional reason, and final usage and
//!   attributes merged as a patch. A second end, or the end of an unknown span, writes
//!   nothing.
//! - **Span events** (`appendEvent`) go to any existing span, open or ended; each takes the
//!   span's next index from 0. The payload is capped at [`EVENT_PAYLOAD_BYTES_MAX`] (16 KiB); a
//!   command may lower the cap, never raise it; a longer payload is clipped and recorded with
//!   `truncated: true`.
//! - **Seq.** Every start, patch, end and span event takes its run's next seq (from 1);
//!   heartbeats and rollups take none (liveness is not activity, a rollup no change to a
//!   span). The global cursor is the log position: span, event and change rows carry the
//!   position of the record that last changed them, and [`query::snapshot`] returns the run's
//!   high-water seq with the position of its latest change, read together.
//! - **Heartbeat** (`heartbeat`): any open span, a run's root or any other, records the
//!   command's time as its last heartbeat; an ended or unknown span's heartbeat writes
//!   nothing.
//! - **Rollup** (`rollupRun`, [`RunCommand::Rollup`]): computes and stores a run's rollup from
//!   its spans as they stand, on request, its root still open or ended; a run without spans
//!   gets nothing written. The root is the parentless span. Span count; the root's start,
//!   end, outcome and duration (root end − root start; while the root is open, none of the
//!   three); tokens and reported cost are the root's (result-level accounting already
//!   includes subagents). Failure reason: the reason of the first span (start order) that
//!   ended `error` or `timeout` with one, else `interrupted` when the root was; recomputed by
//!   every rollup. The cost fields are frozen at their first non-null value, whichever rollup
//!   wrote it (one on request while open included): `cost_micro_usd`, `billing_mode`, and
//!   `effective_cost_micro_usd`, which a later rollup fills only if still empty and only
//!   under the billing mode already frozen.
//! - **Cascade close** (`cascadeClose`) ends every open span of a run with the given outcome
//!   and the reason on each, then rolls the run up; with nothing open it writes nothing.
//! - **Orphan sweep** (`sweepOwnOrphans`) cascade-closes runs as `interrupted` with the reason
//!   "server restarted" ([`ORPHAN_REASON`]).
//! - **Stale sweep** (`sweepStale`): every run whose open root's last heartbeat is older than
//!   the command's `stale_after_ms` is cascade-closed `interrupted` ("writer went silent"),
//!   judged on root heartbeat age, never span age, and sparing the sweeping writer's runs.
//! - **Stuck runs** (`findStuck`, [`query::stuck_runs`]): open roots started more than a
//!   threshold ago.
//! - **Pruning** (`prune`) deletes spans, events and changes of up to `batch` rolled-up runs
//!   with nothing open that ended before the digest floor and the retention window, or before
//!   the hard ceiling regardless; the rollup stays, marked `detail_pruned`, and a run pruned by
//!   the ceiling alone gets the failure reason "digest coverage gap" if it had none.
//!
//! # Differences from the reference
//!
//! Each stays, for the reason given.
//!
//! - **Time** is the command's `now_ms`, never a clock read inside a write: replay must
//!   reproduce every table.
//! - **Commands name the run as well as the span**: every event goes to its run's stream
//!   (`run/<run>`), so a command must know it; a (run, span) pair naming another run's span is
//!   `span_missing`.
//! - **Refusals are values.** Where the reference returns false, null or nothing, or throws
//!   (a duplicate span id), annals returns a refusal and appends nothing: the caller learns
//!   why. The state is what the reference leaves.
//! - **One root per run, placed children, closed runs.** Each run has exactly one root, its
//!   first span; a child needs a parent already in the run; a closed (or pruned) run takes no
//!   new span (`root_exists`, `parent_missing`, `run_closed`). The reference enforced none of
//!   this; a rollup and a cascade order need a well-formed tree, and a run id is used once.
//! - **Span ids in logs written before they were unique across runs**: replay accepts a start
//!   reusing an id another run holds (`apply` does not check it), so those logs rebuild the
//!   same tables; the index `runs.span_runs` then holds the id under each run, and a new start
//!   of it is refused while any of them keeps its detail.
//! - **Heartbeats** never move a span's last heartbeat back (clocks of several writers may
//!   disagree; the reference writes whatever time it is given). [`RunCommand::Heartbeat`]
//!   names a run and beats its root, refused `run_closed` once the root ended;
//!   [`SpanCommand::Heartbeat`] names any span.
//! - **Rollups are also written without a request**: when the root ends and at every later
//!   end in a closed run (the reference leaves the call to its caller, but for a cascade).
//!   A rollup on request of a pruned run is refused `detail_pruned`, of an unknown run
//!   `run_missing`.
//! - **A rollup while the root is open** is kept in `runs.open_rollups`, a row without end,
//!   outcome and duration ([`OpenRunRollup`]), instead of a row of the rollups table with
//!   those null; the root's end replaces it with the run's [`RunRollup`], costs frozen. The
//!   rows of closed runs and the `run.rolled_up` event therefore keep their bytes, so every
//!   log written before this command replays to the same tables.
//! - **Costs** are integer micro-USD, not floats, so rows and sums are exact bytes. No pricing
//!   service runs inside a decision: the effective cost is 0 under a subscription and the
//!   run's reported cost under api billing; the billing mode comes with the span (start or
//!   patch) instead of the root's attributes or the process environment, and the reference's
//!   estimate flag is absent. In place of the reference's pricing of a cron run from its
//!   children's usage, a `cron` run whose root reports no figure takes the sum its children
//!   report, for tokens and cost alike (the reference keeps the root's tokens only).
//! - **Span event payloads** are text capped in UTF-8 bytes, cut at a character boundary; the
//!   reference measures the JSON text of any value and clips that.
//! - **Personal span events** ([`SpanCommand::AppendEventFor`], `docs/erasure.md`): a payload
//!   personal to a subject is sealed under the subject's key before its event
//!   (`run.personal_event_appended`) is hashed, and is never cut: it is sealed before the
//!   command decides, so one over the cap is refused. The reference has no such event.
//! - **Cascade order**: deepest first, among equals latest started first (the reference:
//!   latest started first), so a child always ends before its parent. A cascade of an unknown
//!   run is refused `run_missing`.
//! - **The orphan sweep names the gone writer** instead of sweeping every open
//!   session-origin span: a store opened by several processes cannot tell which of them is
//!   restarting.
//! - **Pruning** takes runs earliest end first, and never deletes history: the log keeps
//!   every event; only the projection's detail rows go. The reference's trimming of its
//!   change table has no counterpart (the log is it).

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;
pub(crate) mod rollup;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::Record;

pub use decide::*;
pub use decide::{
    ClosedRun, EVENT_PAYLOAD_BYTES_MAX, RunCommand, RunCommandOutcome, RunRefusal, SpanCommand,
    SpanCommandOutcome, SpanRefusal,
};
pub use events::{Attributes, BillingMode, RunEvent, SpanKind, SpanOrigin, SpanOutcome, SpanUsage};
pub use query::*;
pub use query::{
    ChangeKind, PersonalPayload, Run, RunChange, RunRollup, RunSeq, RunSnapshot, Span, SpanEvent,
};

/// The runs projection.
pub struct Runs;

/// `runs.events`, each row shown as the span event its record holds.
static RUN_EVENTS: crate::projection::shown::Resolved<(String, String, u64), u64, SpanEvent> =
    crate::projection::shown::Resolved {
        table: query::EVENTS,
        resolve: query::event_at,
    };

impl Projection for Runs {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![
            ShownTable::new(&query::RUNS, &["run"], "run_state"),
            ShownTable::new(&query::SPANS, &["run", "span"], "span_state"),
            ShownTable::new(&RUN_EVENTS, &["run", "span", "index"], "event"),
            ShownTable::new(&query::CHANGES, &["run", "seq"], "change"),
            ShownTable::new(&query::ROLLUPS, &["run"], "rollup"),
            ShownTable::new(&query::OPEN_ROLLUPS, &["run"], "rollup_while_open"),
        ]
    }

    fn name(&self) -> &'static str {
        "runs"
    }

    fn version(&self) -> u32 {
        // 2: the open-rollup and span-id tables (`runs.open_rollups`, `runs.span_runs`).
        // 3: `runs.events` rows hold the position of the event's record, not a copy of it.
        3
    }

    fn tables(&self) -> &'static [&'static str] {
        &query::TABLE_NAMES
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("run.")
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        RunEvent::from_record(record).map(drop)
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

    fn entities(&self) -> &'static [EntityKind] {
        &[EntityKind {
            kind: "run",
            shape: "run:<run>",
            streams: |parts| vec![decide::run_stream(parts[0])],
        }]
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }

    fn records_read(
        &self,
        state: &dyn TableSource,
        below: crate::Position,
        found: &mut dyn FnMut(crate::Position),
    ) -> Result<()> {
        query::event_positions_below(state, below, found)
    }
}
