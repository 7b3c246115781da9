//! Run apply: each event to table writes. Reads only the record (its `at_ms` is every time a
//! row gets, its `position` the global cursor a row carries) and the runs tables.

use super::events::{
    DetailPruned, EventAppended, Heartbeat, RolledUp, RunEvent, SpanEnded, SpanPatched, SpanStarted,
};
use super::query::{
    CHANGES, ChangeKind, EVENTS, OPEN_BY_WRITER, OPEN_ROOTS_BY_HEARTBEAT, OPEN_ROOTS_BY_START,
    ROLLUPS, RUNS, Run, RunChange, RunSeq, SPANS, Span, SpanEvent, UNPRUNED_BY_END,
};
use crate::error::Result;
use crate::log::read::Direction;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Applies one run event recorded in `record`.
pub fn apply(tables: &WriteTables<'_>, record: &Record, event: RunEvent) -> Result<()> {
    match event {
        RunEvent::SpanStarted(e) => started(tables, record, e),
        RunEvent::SpanPatched(e) => patched(tables, record, e),
        RunEvent::SpanEnded(e) => ended(tables, record, e),
        RunEvent::EventAppended(e) => event_appended(tables, record, e),
        RunEvent::Heartbeat(e) => heartbeat(tables, record, e),
        RunEvent::RolledUp(e) => rolled_up(tables, e),
        RunEvent::DetailPruned(e) => detail_pruned(tables, e),
    }
}

/// Moves the run's high-water seq and indexes the change.
fn record_change(
    tables: &WriteTables<'_>,
    record: &Record,
    mut run: Run,
    seq: u64,
    span: &str,
    kind: ChangeKind,
    event_index: Option<u64>,
) -> Result<()> {
    run.high_water_seq = run.high_water_seq.max(RunSeq(seq));
    let change = RunChange {
        run: run.run.clone(),
        seq: RunSeq(seq),
        position: record.position.0,
        span: span.to_owned(),
        kind,
        event_index,
    };
    CHANGES.insert(tables, &(run.run.clone(), seq), &change)?;
    RUNS.insert(tables, &run.run.clone(), &run)
}

fn started(tables: &WriteTables<'_>, record: &Record, e: SpanStarted) -> Result<()> {
    let at_ms = record.at_ms;
    let is_root = e.parent.is_none();
    let span = Span {
        run: e.run.clone(),
        span: e.span.clone(),
        parent: e.parent,
        name: e.name,
        kind: e.kind,
        origin: e.origin,
        session_id: e.session_id,
        job_name: e.job_name,
        attributes: e.attributes,
        billing_mode: e.billing_mode,
        writer: e.writer.clone(),
        started_at_ms: at_ms,
        wait_until_ms: None,
        ended_at_ms: None,
        outcome: None,
        outcome_reason: None,
        usage: Default::default(),
        last_heartbeat_at_ms: is_root.then_some(at_ms),
        depth: e.depth,
        start_seq: RunSeq(e.seq),
        seq: RunSeq(e.seq),
        // Set with the change, below.
        position: 0,
        event_count: 0,
    };
    let mut run = RUNS.get(tables, &e.run)?.unwrap_or_else(|| Run {
        run: e.run.clone(),
        root_span: e.span.clone(),
        high_water_seq: RunSeq(0),
        span_count: 0,
        open_span_count: 0,
        closed: false,
    });
    run.span_count = run.span_count.saturating_add(1);
    run.open_span_count = run.open_span_count.saturating_add(1);
    OPEN_BY_WRITER.insert(tables, &(e.writer, e.run.clone(), e.span.clone()), &())?;
    if is_root {
        OPEN_ROOTS_BY_HEARTBEAT.insert(tables, &(at_ms, e.run.clone()), &e.span)?;
        OPEN_ROOTS_BY_START.insert(tables, &(at_ms, e.run), &e.span)?;
    }
    span_changed(tables, record, run, span, e.seq, ChangeKind::SpanStarted)
}

/// The run and its open span `span`; `None` when either is missing or the span ended (which
/// a decision never emits for, so such an event changes nothing).
fn open_span(tables: &WriteTables<'_>, run: &str, span: &str) -> Result<Option<(Run, Span)>> {
    let key = (run.to_owned(), span.to_owned());
    Ok(
        match (RUNS.get(tables, &key.0)?, SPANS.get(tables, &key)?) {
            (Some(run), Some(span)) if span.is_open() => Some((run, span)),
            _ => None,
        },
    )
}

fn patched(tables: &WriteTables<'_>, record: &Record, e: SpanPatched) -> Result<()> {
    let Some((run, mut span)) = open_span(tables, &e.run, &e.span)? else {
        return Ok(());
    };
    span.patch(&e.attributes, &e.usage, e.wait_until_ms, e.billing_mode);
    span_changed(tables, record, run, span, e.seq, ChangeKind::SpanPatched)
}

/// Stores a span a change of `seq` made, and records the change.
fn span_changed(
    tables: &WriteTables<'_>,
    record: &Record,
    run: Run,
    mut span: Span,
    seq: u64,
    kind: ChangeKind,
) -> Result<()> {
    span.seq = RunSeq(seq);
    span.position = record.position.0;
    SPANS.insert(tables, &(span.run.clone(), span.span.clone()), &span)?;
    record_change(tables, record, run, seq, &span.span, kind, None)
}

fn ended(tables: &WriteTables<'_>, record: &Record, e: SpanEnded) -> Result<()> {
    let Some((mut run, mut span)) = open_span(tables, &e.run, &e.span)? else {
        return Ok(());
    };
    span.end(
        e.outcome,
        e.reason.as_deref(),
        &e.usage,
        &e.attributes,
        record.at_ms,
    );
    run.open_span_count = run.open_span_count.saturating_sub(1);
    OPEN_BY_WRITER.remove(
        tables,
        &(span.writer.clone(), e.run.clone(), e.span.clone()),
    )?;
    if span.is_root() {
        run.closed = true;
        let heartbeat = span.last_heartbeat_at_ms.unwrap_or(span.started_at_ms);
        OPEN_ROOTS_BY_HEARTBEAT.remove(tables, &(heartbeat, e.run.clone()))?;
        OPEN_ROOTS_BY_START.remove(tables, &(span.started_at_ms, e.run.clone()))?;
    }
    span_changed(tables, record, run, span, e.seq, ChangeKind::SpanEnded)
}

fn event_appended(tables: &WriteTables<'_>, record: &Record, e: EventAppended) -> Result<()> {
    let span_key = (e.run.clone(), e.span.clone());
    let (Some(run), Some(mut span)) = (RUNS.get(tables, &e.run)?, SPANS.get(tables, &span_key)?)
    else {
        return Ok(());
    };
    span.event_count = span.event_count.max(e.event_index.saturating_add(1));
    SPANS.insert(tables, &span_key, &span)?;
    let event = SpanEvent {
        run: e.run.clone(),
        span: e.span.clone(),
        event_index: e.event_index,
        at_ms: record.at_ms,
        event_type: e.event_type,
        payload: e.payload,
        truncated: e.truncated,
        seq: RunSeq(e.seq),
        position: record.position.0,
    };
    EVENTS.insert(tables, &(e.run, e.span.clone(), e.event_index), &event)?;
    record_change(
        tables,
        record,
        run,
        e.seq,
        &e.span,
        ChangeKind::EventAppended,
        Some(e.event_index),
    )
}

fn heartbeat(tables: &WriteTables<'_>, record: &Record, e: Heartbeat) -> Result<()> {
    let Some(run) = RUNS.get(tables, &e.run)? else {
        return Ok(());
    };
    let Some((_, mut root)) = open_span(tables, &e.run, &run.root_span)? else {
        return Ok(());
    };
    let previous = root.last_heartbeat_at_ms.unwrap_or(root.started_at_ms);
    // Heartbeats from clocks that disagree may arrive out of order; the latest one counts.
    let latest = previous.max(record.at_ms);
    root.last_heartbeat_at_ms = Some(latest);
    OPEN_ROOTS_BY_HEARTBEAT.remove(tables, &(previous, e.run.clone()))?;
    OPEN_ROOTS_BY_HEARTBEAT.insert(tables, &(latest, e.run.clone()), &root.span)?;
    SPANS.insert(tables, &(e.run, root.span.clone()), &root)
}

fn rolled_up(tables: &WriteTables<'_>, e: RolledUp) -> Result<()> {
    let rollup = e.rollup;
    if let Some(previous) = ROLLUPS.get(tables, &rollup.run)? {
        UNPRUNED_BY_END.remove(tables, &(previous.ended_at_ms, previous.run))?;
    }
    if !rollup.detail_pruned {
        UNPRUNED_BY_END.insert(tables, &(rollup.ended_at_ms, rollup.run.clone()), &())?;
    }
    ROLLUPS.insert(tables, &rollup.run.clone(), &rollup)
}

fn detail_pruned(tables: &WriteTables<'_>, e: DetailPruned) -> Result<()> {
    let prefix = (e.run.clone(),);
    for (key, span) in SPANS.scan_prefix(tables, &prefix, Direction::Forward, usize::MAX)? {
        // A decision prunes only runs with nothing open; these keep the indexes exact anyway.
        if span.is_open() {
            OPEN_BY_WRITER.remove(tables, &(span.writer.clone(), key.0.clone(), key.1.clone()))?;
            if span.is_root() {
                let heartbeat = span.last_heartbeat_at_ms.unwrap_or(span.started_at_ms);
                OPEN_ROOTS_BY_HEARTBEAT.remove(tables, &(heartbeat, key.0.clone()))?;
                OPEN_ROOTS_BY_START.remove(tables, &(span.started_at_ms, key.0.clone()))?;
            }
        }
        SPANS.remove(tables, &key)?;
    }
    for (key, _) in EVENTS.scan_prefix(tables, &prefix, Direction::Forward, usize::MAX)? {
        EVENTS.remove(tables, &key)?;
    }
    for (key, _) in CHANGES.scan_prefix(tables, &prefix, Direction::Forward, usize::MAX)? {
        CHANGES.remove(tables, &key)?;
    }
    RUNS.remove(tables, &e.run)?;
    if let Some(mut rollup) = ROLLUPS.get(tables, &e.run)? {
        UNPRUNED_BY_END.remove(tables, &(rollup.ended_at_ms, e.run.clone()))?;
        rollup.detail_pruned = true;
        rollup.failure_reason = e.failure_reason;
        ROLLUPS.insert(tables, &e.run, &rollup)?;
    }
    Ok(())
}
