//! Run reads from the projection tables: no replay, usable on a snapshot or inside a write
//! (where commands decide). Rows carry the run's `seq` of their latest change and the log
//! `position` of the record that made it: the log position is the global change cursor.

use serde::{Deserialize, Serialize};

use super::events::{
    Attributes, BillingMode, EVENT_APPENDED, PERSONAL_EVENT_APPENDED, RunEvent, SpanKind,
    SpanOrigin, SpanOutcome, SpanUsage,
};
// The rollups are defined with the events that carry them; the queries hand them out.
pub use super::events::{OpenRunRollup, RunRollup};
use crate::error::{Error, Result};
use crate::event::DomainEvent;
use crate::log::read::Direction;
use crate::projection::table::{Table, TableSource};
use crate::record::Position;

/// A run's sequence number: every change to a run's spans and events takes the next one, from
/// 1, so a reader holding a run snapshot at seq `n` discards deltas at or below `n`.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunSeq(pub u64);

/// Where a run stands: its root, its high-water seq and its span counts. Deleted when the
/// run's detail is pruned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Run {
    /// The run.
    pub run: String,
    /// Its root span (the run's first span).
    pub root_span: String,
    /// The seq of its latest change.
    pub high_water_seq: RunSeq,
    /// Spans started in it.
    pub span_count: u64,
    /// Spans still open in it.
    pub open_span_count: u64,
    /// Whether its root span has ended: the run is closed, and its rollup written.
    pub closed: bool,
}

/// A span as it stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Span {
    /// The run.
    pub run: String,
    /// The span, unique within its run.
    pub span: String,
    /// The parent span; `None` for the run's root.
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
    /// Its attributes.
    pub attributes: Attributes,
    /// How its run is billed, if known.
    pub billing_mode: Option<BillingMode>,
    /// The process identity that writes it.
    pub writer: String,
    /// When it started.
    pub started_at_ms: u64,
    /// The wait boundary it reported, if any.
    pub wait_until_ms: Option<u64>,
    /// When it ended; `None` while open.
    pub ended_at_ms: Option<u64>,
    /// Its terminal outcome; `None` while open.
    pub outcome: Option<SpanOutcome>,
    /// Why it ended so, if said.
    pub outcome_reason: Option<String>,
    /// Its usage.
    pub usage: SpanUsage,
    /// The latest heartbeat: a root's is its start until one comes; any other span's is
    /// `None` until it heartbeats.
    pub last_heartbeat_at_ms: Option<u64>,
    /// Its depth in the run's tree: 0 for the root.
    pub depth: u32,
    /// The seq of its start: spans of a run in this order are in start order.
    pub start_seq: RunSeq,
    /// The seq of its latest change (start, patch or end).
    pub seq: RunSeq,
    /// The log position of its latest change.
    pub position: u64,
    /// How many events it has (the next event's index).
    pub event_count: u64,
}

impl Span {
    /// Whether it is still open (no outcome yet).
    pub fn is_open(&self) -> bool {
        self.outcome.is_none()
    }

    /// Whether it is its run's root.
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }

    /// Merges a patch in. Shared by `apply` and by decisions that foresee a span's state, so
    /// both agree.
    pub(crate) fn patch(
        &mut self,
        attributes: &Attributes,
        usage: &SpanUsage,
        wait_until_ms: Option<u64>,
        billing_mode: Option<BillingMode>,
    ) {
        self.attributes
            .extend(attributes.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.usage.merge(usage);
        if wait_until_ms.is_some() {
            self.wait_until_ms = wait_until_ms;
        }
        if billing_mode.is_some() {
            self.billing_mode = billing_mode;
        }
    }

    /// Ends the span at `ended_at_ms`. Shared like [`Span::patch`].
    pub(crate) fn end(
        &mut self,
        outcome: SpanOutcome,
        reason: Option<&str>,
        usage: &SpanUsage,
        attributes: &Attributes,
        ended_at_ms: u64,
    ) {
        self.patch(attributes, usage, None, None);
        self.outcome = Some(outcome);
        self.outcome_reason = reason.map(str::to_owned);
        self.ended_at_ms = Some(ended_at_ms);
    }
}

/// An event recorded on a span. Its row in `runs.events` holds only the position of the
/// record that appended it; the rest is read back from that record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpanEvent {
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
    /// Its index within the span.
    pub event_index: u64,
    /// When it happened.
    pub at_ms: u64,
    /// What kind of event it is.
    pub event_type: String,
    /// The payload as stored (cut when `truncated`).
    pub payload: String,
    /// Whether the payload was cut to the cap.
    pub truncated: bool,
    /// Its run's seq.
    pub seq: RunSeq,
    /// The log position of the record that appended it.
    pub position: u64,
    /// For an event whose payload is personal to a subject
    /// ([`super::SpanCommand::AppendEventFor`]): the payload as the log keeps it, sealed, and
    /// `payload` is then empty. [`SpanEvent::payload_field`] reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub personal: Option<PersonalPayload>,
}

/// A span event's payload personal to a subject, as the log keeps it: an envelope
/// (`schema/FORMAT.md` 1.5), never the text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct PersonalPayload {
    /// The subject it belongs to.
    pub subject: String,
    /// The envelope.
    #[serde(with = "crate::event::bytes")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub envelope: Vec<u8>,
}

impl SpanEvent {
    /// Its payload as [`crate::erasure::PayloadReader::open_field`] reads it (`docs/erasure.md`): the
    /// text's bytes of an event appended with no subject ([`crate::erasure::Payload::Plain`]); for a
    /// personal one, the text while the subject's key stands, and [`crate::erasure::Payload::Erased`]
    /// once the subject is erased or where the store holds no key for it.
    pub fn payload_field(&self) -> crate::record::envelope::SealedField<'_> {
        let (bytes, kind) = match &self.personal {
            Some(personal) => (personal.envelope.as_slice(), PERSONAL_EVENT_APPENDED),
            None => (self.payload.as_bytes(), EVENT_APPENDED),
        };
        crate::record::envelope::SealedField {
            bytes,
            stream: super::run_stream(&self.run),
            kind,
        }
    }
}

/// What a run change changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(
    feature = "schema",
    derive(schemars::JsonSchema),
    schemars(rename = "RunChangeKind")
)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A span started.
    SpanStarted,
    /// A span was patched.
    SpanPatched,
    /// A span ended.
    SpanEnded,
    /// An event was appended to a span.
    EventAppended,
}

/// One seq'd change of a run: the per-run delta index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunChange {
    /// The run.
    pub run: String,
    /// Its seq within the run.
    pub seq: RunSeq,
    /// The log position of its record: the global cursor.
    pub position: u64,
    /// The span it concerns.
    pub span: String,
    /// What it changed.
    pub kind: ChangeKind,
    /// The event's index, for [`ChangeKind::EventAppended`].
    pub event_index: Option<u64>,
}

/// The cost fields of a run's earlier rollup, open or closed: every later rollup keeps them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrozenCosts {
    /// The reported cost, micro-USD.
    pub cost_micro_usd: Option<u64>,
    /// The effective cost, micro-USD.
    pub effective_cost_micro_usd: Option<u64>,
    /// The billing classification.
    pub billing_mode: Option<BillingMode>,
}

impl From<&RunRollup> for FrozenCosts {
    fn from(rollup: &RunRollup) -> Self {
        FrozenCosts {
            cost_micro_usd: rollup.cost_micro_usd,
            effective_cost_micro_usd: rollup.effective_cost_micro_usd,
            billing_mode: rollup.billing_mode,
        }
    }
}

impl From<&OpenRunRollup> for FrozenCosts {
    fn from(rollup: &OpenRunRollup) -> Self {
        FrozenCosts {
            cost_micro_usd: rollup.cost_micro_usd,
            effective_cost_micro_usd: rollup.effective_cost_micro_usd,
            billing_mode: rollup.billing_mode,
        }
    }
}

/// A run's detail in one consistent read: what a live reader starts from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunSnapshot {
    /// The run.
    pub run: Run,
    /// Its spans in start order.
    pub spans: Vec<Span>,
    /// Its events in seq order.
    pub events: Vec<SpanEvent>,
    /// The seq of its latest change: deltas at or below it are in the snapshot.
    pub high_water_seq: RunSeq,
    /// The log position of its latest change, if it still has one: the global cursor to read
    /// the log on from.
    pub position: Option<u64>,
}

/// `runs.runs`: run → where it stands.
pub(crate) const RUNS: Table<String, Run> = Table::new("runs.runs");
/// `runs.spans`: (run, span) → span.
pub(crate) const SPANS: Table<(String, String), Span> = Table::new("runs.spans");
/// `runs.events`: (run, span, event index) → the log position of the record that appended the
/// event. The event's type, payload, time and seq are that record's: the row points at them
/// rather than copying them ([`event_at`] reads them back).
pub(crate) const EVENTS: Table<(String, String, u64), u64> = Table::new("runs.events");
/// `runs.changes`: (run, seq) → change.
pub(crate) const CHANGES: Table<(String, u64), RunChange> = Table::new("runs.changes");
/// `runs.open_by_writer`: (writer, run, span) of every open span.
pub(crate) const OPEN_BY_WRITER: Table<(String, String, String), ()> =
    Table::new("runs.open_by_writer");
/// `runs.open_roots_by_heartbeat`: (last heartbeat, run) → root span, for open roots.
pub(crate) const OPEN_ROOTS_BY_HEARTBEAT: Table<(u64, String), String> =
    Table::new("runs.open_roots_by_heartbeat");
/// `runs.open_roots_by_start`: (start, run) → root span, for open roots.
pub(crate) const OPEN_ROOTS_BY_START: Table<(u64, String), String> =
    Table::new("runs.open_roots_by_start");
/// `runs.rollups`: run → rollup (kept when the detail is pruned).
pub(crate) const ROLLUPS: Table<String, RunRollup> = Table::new("runs.rollups");
/// `runs.unpruned_by_end`: (root end, run) of every rollup whose detail is still kept.
pub(crate) const UNPRUNED_BY_END: Table<(u64, String), ()> = Table::new("runs.unpruned_by_end");

/// `runs.open_rollups`: run → its rollup computed on request while its root is open; removed
/// when the root ends.
pub(crate) const OPEN_ROLLUPS: Table<String, OpenRunRollup> = Table::new("runs.open_rollups");
/// `runs.span_runs`: (span, run) of every span whose detail is kept: which run holds a span
/// id. One run per span id for every start decided since span ids are unique across runs;
/// older logs may hold a span id in several runs, and replay keeps them all.
pub(crate) const SPAN_RUNS: Table<(String, String), ()> = Table::new("runs.span_runs");

/// Every table name, in the order `state_json` dumps them.
pub(crate) const TABLE_NAMES: [&str; 11] = [
    "runs.runs",
    "runs.spans",
    "runs.events",
    "runs.changes",
    "runs.open_by_writer",
    "runs.open_roots_by_heartbeat",
    "runs.open_roots_by_start",
    "runs.rollups",
    "runs.unpruned_by_end",
    "runs.open_rollups",
    "runs.span_runs",
];

fn values<K, V>(rows: Vec<(K, V)>) -> Vec<V> {
    rows.into_iter().map(|(_, v)| v).collect()
}

/// The run `run`, while its detail is kept.
pub fn run(state: &dyn TableSource, run: &str) -> Result<Option<Run>> {
    RUNS.get(state, &run.to_owned())
}

/// The span `span` of `run`.
pub fn span(state: &dyn TableSource, run: &str, span: &str) -> Result<Option<Span>> {
    SPANS.get(state, &(run.to_owned(), span.to_owned()))
}

/// Every span of `run`, in start order.
pub fn spans(state: &dyn TableSource, run: &str) -> Result<Vec<Span>> {
    let rows = SPANS.scan_prefix(state, &(run.to_owned(),), Direction::Forward, usize::MAX)?;
    let mut spans = values(rows);
    spans.sort_by_key(|s| s.start_seq);
    Ok(spans)
}

/// The events of `span` in `run`, in index order.
pub fn events(state: &dyn TableSource, run: &str, span: &str) -> Result<Vec<SpanEvent>> {
    let prefix = (run.to_owned(), span.to_owned());
    let rows = EVENTS.scan_prefix(state, &prefix, Direction::Forward, usize::MAX)?;
    events_at(state, rows)
}

/// Calls `found` with the position of each `runs.events` row's record below `below` (each
/// row's record is read back by [`events`]). Walks the table a page at a time.
pub(crate) fn event_positions_below(
    state: &dyn TableSource,
    below: Position,
    found: &mut dyn FnMut(Position),
) -> Result<()> {
    const PAGE: usize = 1024;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let lower = match &after {
            Some(key) => std::ops::Bound::Excluded(key.as_slice()),
            None => std::ops::Bound::Unbounded,
        };
        let rows = state.range_raw(
            EVENTS.name(),
            lower,
            std::ops::Bound::Unbounded,
            Direction::Forward,
            PAGE,
        )?;
        for (_, value) in &rows {
            let position: u64 =
                crate::record::decode_bounded(value).map_err(|cause| Error::CorruptProjection {
                    table: EVENTS.name().to_owned(),
                    fault: crate::error::TableFault::UndecodableValue { cause },
                })?;
            if position < below.0 {
                found(Position(position));
            }
        }
        if rows.len() < PAGE {
            return Ok(());
        }
        after = rows.last().map(|(key, _)| key.clone());
    }
}

/// The span event of the `runs.events` row `key`, read back from the record at `position`
/// that appended it. A record that is not that event is [`Error::CorruptProjection`].
pub(crate) fn event_at(
    state: &dyn TableSource,
    (run, span, event_index): (String, String, u64),
    position: u64,
) -> Result<SpanEvent> {
    let record = state.log_record(Position(position))?;
    let found = |e_run: &str, e_span: &str, e_index: u64| {
        e_run == run && e_span == span && e_index == event_index
    };
    match RunEvent::from_record(&record)? {
        Some(RunEvent::EventAppended(e)) if found(&e.run, &e.span, e.event_index) => {
            Ok(SpanEvent {
                run: e.run,
                span: e.span,
                event_index: e.event_index,
                at_ms: record.at_ms,
                event_type: e.event_type,
                payload: e.payload,
                truncated: e.truncated,
                seq: RunSeq(e.seq),
                position,
                personal: None,
            })
        }
        Some(RunEvent::PersonalEventAppended(e)) if found(&e.run, &e.span, e.event_index) => {
            let subject = crate::record::envelope::Envelope::parse(&e.payload)
                .map(|envelope| envelope.subject.to_owned())
                .unwrap_or_default();
            Ok(SpanEvent {
                run: e.run,
                span: e.span,
                event_index: e.event_index,
                at_ms: record.at_ms,
                event_type: e.event_type,
                payload: String::new(),
                truncated: false,
                seq: RunSeq(e.seq),
                position,
                personal: Some(PersonalPayload {
                    subject,
                    envelope: e.payload,
                }),
            })
        }
        _ => Err(Error::CorruptProjection {
            table: EVENTS.name().to_owned(),
            fault: crate::error::TableFault::NotTheEvent {
                run: run.to_owned(),
                span: span.to_owned(),
                event_index,
                position: Position(position),
                found_kind: record.kind.clone(),
            },
        }),
    }
}

/// The span events of `runs.events` rows, in the rows' order.
fn events_at(
    state: &dyn TableSource,
    rows: Vec<((String, String, u64), u64)>,
) -> Result<Vec<SpanEvent>> {
    rows.into_iter()
        .map(|(key, position)| event_at(state, key, position))
        .collect()
}

/// The seq of `run`'s latest change; 0 when it has none (or its detail was pruned).
pub fn high_water_seq(state: &dyn TableSource, run: &str) -> Result<RunSeq> {
    Ok(self::run(state, run)?.map_or(RunSeq(0), |r| r.high_water_seq))
}

/// Up to `limit` changes of `run` with a seq above `after`, in seq order.
pub fn changes_since(
    state: &dyn TableSource,
    run: &str,
    after: RunSeq,
    limit: usize,
) -> Result<Vec<RunChange>> {
    let Some(from) = after.0.checked_add(1) else {
        return Ok(Vec::new());
    };
    let rows = CHANGES.scan_between(
        state,
        &(run.to_owned(), from),
        &(run.to_owned(), u64::MAX),
        Direction::Forward,
        limit,
    )?;
    Ok(values(rows))
}

/// `run`'s spans, events, high-water seq and cursor, read together; `None` when the run has no
/// detail (unknown, or pruned).
pub fn snapshot(state: &dyn TableSource, run: &str) -> Result<Option<RunSnapshot>> {
    let Some(current) = self::run(state, run)? else {
        return Ok(None);
    };
    let spans = spans(state, run)?;
    let rows = EVENTS.scan_prefix(state, &(run.to_owned(),), Direction::Forward, usize::MAX)?;
    let mut events = events_at(state, rows)?;
    events.sort_by_key(|e| e.seq);
    let latest = CHANGES.scan_prefix(state, &(run.to_owned(),), Direction::Backward, 1)?;
    Ok(Some(RunSnapshot {
        high_water_seq: current.high_water_seq,
        position: latest.first().map(|(_, change)| change.position),
        run: current,
        spans,
        events,
    }))
}

/// The rollup of `run`, if it has closed.
pub fn rollup(state: &dyn TableSource, run: &str) -> Result<Option<RunRollup>> {
    ROLLUPS.get(state, &run.to_owned())
}

/// The rollup of `run` computed on request while its root is open, if one was.
pub fn open_rollup(state: &dyn TableSource, run: &str) -> Result<Option<OpenRunRollup>> {
    OPEN_ROLLUPS.get(state, &run.to_owned())
}

/// The cost fields a new rollup of `run` keeps: its closed rollup's, else its open one's.
pub fn frozen_costs(state: &dyn TableSource, run: &str) -> Result<Option<FrozenCosts>> {
    if let Some(rollup) = rollup(state, run)? {
        return Ok(Some(FrozenCosts::from(&rollup)));
    }
    Ok(open_rollup(state, run)?.as_ref().map(FrozenCosts::from))
}

/// The runs whose kept detail holds a span with the id `span`, in run order: at most one for
/// spans started since span ids are unique across runs.
pub fn runs_of_span(state: &dyn TableSource, span: &str) -> Result<Vec<String>> {
    let rows = SPAN_RUNS.scan_prefix(state, &(span.to_owned(),), Direction::Forward, usize::MAX)?;
    Ok(rows.into_iter().map(|((_, run), ())| run).collect())
}

/// Up to `limit` rollups in run order.
pub fn rollups(state: &dyn TableSource, limit: usize) -> Result<Vec<RunRollup>> {
    Ok(values(ROLLUPS.scan_prefix(
        state,
        &(),
        Direction::Forward,
        limit,
    )?))
}

fn spans_of_roots(
    state: &dyn TableSource,
    rows: Vec<((u64, String), String)>,
) -> Result<Vec<Span>> {
    let mut spans = Vec::with_capacity(rows.len());
    for ((_, run), root) in rows {
        if let Some(span) = span(state, &run, &root)? {
            spans.push(span);
        }
    }
    Ok(spans)
}

/// Every open root span, latest start first: what is running.
pub fn open_roots(state: &dyn TableSource) -> Result<Vec<Span>> {
    let rows = OPEN_ROOTS_BY_START.scan_prefix(state, &(), Direction::Backward, usize::MAX)?;
    spans_of_roots(state, rows)
}

/// Open root spans that started more than `threshold_ms` before `now_ms` (strictly), oldest
/// first: the watchdog's stuck runs. Judged on age since start, heartbeats or not.
pub fn stuck_runs(state: &dyn TableSource, threshold_ms: u64, now_ms: u64) -> Result<Vec<Span>> {
    let cutoff = now_ms.saturating_sub(threshold_ms);
    let rows = OPEN_ROOTS_BY_START.scan_between(
        state,
        &(0, String::new()),
        &(cutoff, String::new()),
        Direction::Forward,
        usize::MAX,
    )?;
    spans_of_roots(state, rows)
}

/// Open root spans whose last heartbeat is before `cutoff_ms`, oldest heartbeat first.
pub fn silent_roots(state: &dyn TableSource, cutoff_ms: u64) -> Result<Vec<Span>> {
    let rows = OPEN_ROOTS_BY_HEARTBEAT.scan_between(
        state,
        &(0, String::new()),
        &(cutoff_ms, String::new()),
        Direction::Forward,
        usize::MAX,
    )?;
    spans_of_roots(state, rows)
}

/// The runs with an open span written by `writer`, in run order.
pub fn runs_with_open_spans_of(state: &dyn TableSource, writer: &str) -> Result<Vec<String>> {
    let rows =
        OPEN_BY_WRITER.scan_prefix(state, &(writer.to_owned(),), Direction::Forward, usize::MAX)?;
    let mut runs: Vec<String> = rows.into_iter().map(|((_, run, _), ())| run).collect();
    runs.dedup();
    Ok(runs)
}

/// Up to `limit` rollups whose detail is kept, keyed (root end, run), from `from` on and ending
/// before `before_ms`, earliest end first.
pub(crate) fn unpruned_ended_before(
    state: &dyn TableSource,
    from: &(u64, String),
    before_ms: u64,
    limit: usize,
) -> Result<Vec<(u64, String)>> {
    let rows = UNPRUNED_BY_END.scan_between(
        state,
        from,
        &(before_ms, String::new()),
        Direction::Forward,
        limit,
    )?;
    Ok(rows.into_iter().map(|(key, ())| key).collect())
}

/// Every row of the runs projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('runs')` gives.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunTables {
    /// Every run whose detail is kept, by name.
    pub runs: Vec<Run>,
    /// Every span, by run and name.
    pub spans: Vec<Span>,
    /// Every span event, by run, span and seq.
    pub events: Vec<SpanEvent>,
    /// Every change, by run and seq.
    pub changes: Vec<RunChange>,
    /// The open spans of each writer.
    pub open_by_writer: Vec<WriterSpanRow>,
    /// The open roots by their last heartbeat.
    pub open_roots_by_heartbeat: Vec<HeartbeatRow>,
    /// The open roots by when they started.
    pub open_roots_by_start: Vec<StartRow>,
    /// The rollups of closed runs.
    pub rollups: Vec<RunRollup>,
    /// The ended runs whose detail is not yet pruned, by when they ended.
    pub unpruned_by_end: Vec<EndedRow>,
    /// The rollups computed while a run's root is open.
    pub open_rollups: Vec<OpenRunRollup>,
    /// The run each span name is in.
    pub span_runs: Vec<SpanRunRow>,
}

/// An open span of a writer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct WriterSpanRow {
    /// The writer.
    pub writer: String,
    /// The run.
    pub run: String,
    /// The span.
    pub span: String,
}

/// An open root by its last heartbeat.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HeartbeatRow {
    /// Its last heartbeat.
    pub heartbeat_at_ms: u64,
    /// The run.
    pub run: String,
    /// The root span.
    pub span: String,
}

/// An open root by when it started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StartRow {
    /// When it started.
    pub started_at_ms: u64,
    /// The run.
    pub run: String,
    /// The root span.
    pub span: String,
}

/// An ended run whose detail is not yet pruned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct EndedRow {
    /// When it ended.
    pub ended_at_ms: u64,
    /// The run.
    pub run: String,
}

/// The run a span name is in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SpanRunRow {
    /// The span.
    pub span: String,
    /// The run.
    pub run: String,
}

/// Every row of the runs projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<RunTables> {
    let all = Direction::Forward;
    let open_by_writer = OPEN_BY_WRITER
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((writer, run, span), ())| WriterSpanRow { writer, run, span })
        .collect();
    let open_roots_by_heartbeat = OPEN_ROOTS_BY_HEARTBEAT
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((heartbeat_at_ms, run), span)| HeartbeatRow {
            heartbeat_at_ms,
            run,
            span,
        })
        .collect();
    let open_roots_by_start = OPEN_ROOTS_BY_START
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((started_at_ms, run), span)| StartRow {
            started_at_ms,
            run,
            span,
        })
        .collect();
    let unpruned_by_end = UNPRUNED_BY_END
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((ended_at_ms, run), ())| EndedRow { ended_at_ms, run })
        .collect();
    let span_runs = SPAN_RUNS
        .scan_prefix(state, &(), all, usize::MAX)?
        .into_iter()
        .map(|((span, run), ())| SpanRunRow { span, run })
        .collect();
    Ok(RunTables {
        runs: values(RUNS.scan_prefix(state, &(), all, usize::MAX)?),
        spans: values(SPANS.scan_prefix(state, &(), all, usize::MAX)?),
        events: events_at(state, EVENTS.scan_prefix(state, &(), all, usize::MAX)?)?,
        changes: values(CHANGES.scan_prefix(state, &(), all, usize::MAX)?),
        open_by_writer,
        open_roots_by_heartbeat,
        open_roots_by_start,
        rollups: rollups(state, usize::MAX)?,
        unpruned_by_end,
        open_rollups: values(OPEN_ROLLUPS.scan_prefix(state, &(), all, usize::MAX)?),
        span_runs,
    })
}

/// Every row of the runs projection as JSON, in key order: what `annals state` prints.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_declared_table_names_are_the_tables() {
        let names = [
            RUNS.name(),
            SPANS.name(),
            EVENTS.name(),
            CHANGES.name(),
            OPEN_BY_WRITER.name(),
            OPEN_ROOTS_BY_HEARTBEAT.name(),
            OPEN_ROOTS_BY_START.name(),
            ROLLUPS.name(),
            UNPRUNED_BY_END.name(),
            OPEN_ROLLUPS.name(),
            SPAN_RUNS.name(),
        ];
        assert_eq!(names, TABLE_NAMES);
    }
}
