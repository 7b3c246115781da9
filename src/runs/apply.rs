//! Run apply: each event to table writes. Reads only the record (its `at_ms` is every time a
//! row gets, its `position` the global cursor a row carries) and the runs tables.
//!
//! Before it writes, apply checks the event against the rules `decide` keeps (see
//! `schema/EVENTS.md`): a live command never breaks one, so a record that does was written
//! around `decide` (a forged import, a log written elsewhere) and is refused with
//! [`crate::error::ProjectionError::Invariant`] at its position.

use super::events::{
    DetailPruned, EventAppended, Heartbeat, PersonalEventAppended, RolledUp, RolledUpWhileOpen,
    RunEvent, SpanEnded, SpanHeartbeat, SpanPatched, SpanStarted,
};
use super::query::{
    CHANGES, ChangeKind, EVENTS, OPEN_BY_WRITER, OPEN_ROLLUPS, OPEN_ROOTS_BY_HEARTBEAT,
    OPEN_ROOTS_BY_START, ROLLUPS, RUNS, Run, RunChange, RunRollup, RunSeq, SPAN_RUNS, SPANS, Span,
    UNPRUNED_BY_END,
};
use crate::error::{Error, Result};
use crate::log::read::Direction;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// A start names a span its run does not have yet. (A span id another run holds is refused
/// by `decide` only: logs written before span ids were unique across runs hold such starts,
/// and they must replay.)
pub(crate) const SPAN_UNIQUE: &str = "span_unique";
/// No span starts in a closed run (its root ended, or its detail was pruned), a heartbeat
/// names a run that is open, and a rollup while open names a run whose root is open.
pub(crate) const RUN_OPEN: &str = "run_open";
/// A root starts its run; any other span starts under a span of its run, one level deeper.
pub(crate) const SPAN_PLACED: &str = "span_placed";
/// Each change of a run carries a seq above every seq of the run before it.
pub(crate) const SEQ_INCREASES: &str = "seq_increases";
/// A patch, an end or an event names a span of its run.
pub(crate) const SPAN_EXISTS: &str = "span_exists";
/// A span takes no patch (and no heartbeat) once it ended.
pub(crate) const SPAN_OPEN: &str = "span_open";
/// A span ends once.
pub(crate) const SPAN_ENDS_ONCE: &str = "span_ends_once";
/// A span's events are numbered 0, 1, 2, … in the order they are recorded.
pub(crate) const EVENT_INDEX_NEXT: &str = "event_index_next";
/// A personal span event's payload is an envelope (`schema/FORMAT.md` 1.5), never text.
pub(crate) const PERSONAL_SEALED: &str = "personal_sealed";
/// A rollup is written for a run whose root has ended, before its detail is pruned.
pub(crate) const ROLLUP_AFTER_ROOT_END: &str = "rollup_after_root_end";
/// Only a rolled-up run with its detail and no open span is pruned.
pub(crate) const PRUNE_ONLY_FINISHED: &str = "prune_only_finished";

/// `record` breaks the runs `rule`, as `detail` says.
fn broken(record: &Record, rule: &'static str, detail: String) -> Error {
    crate::projection::invariant("runs", record, rule, detail)
}

/// Refuses a change of `run` whose `seq` does not rise above the run's high-water seq.
fn check_seq(record: &Record, run: &Run, seq: u64) -> Result<()> {
    if seq > run.high_water_seq.0 {
        return Ok(());
    }
    let detail = format!(
        "run {:?} change with seq {seq}, at or below its high-water seq {}",
        run.run, run.high_water_seq.0
    );
    Err(broken(record, SEQ_INCREASES, detail))
}

/// The run and its span `span`, which a patch, an end or an event names.
fn existing_span(
    tables: &WriteTables<'_>,
    record: &Record,
    run: &str,
    span: &str,
) -> Result<(Run, Span)> {
    let key = (run.to_owned(), span.to_owned());
    match (RUNS.get(tables, &key.0)?, SPANS.get(tables, &key)?) {
        (Some(run), Some(span)) => Ok((run, span)),
        _ => Err(broken(
            record,
            SPAN_EXISTS,
            format!("run {run:?} has no span {span:?}"),
        )),
    }
}

/// Applies one run event recorded in `record`, refusing one that breaks a run rule.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: RunEvent) -> Result<()> {
    match event {
        RunEvent::SpanStarted(e) => started(tables, record, e),
        RunEvent::SpanPatched(e) => patched(tables, record, e),
        RunEvent::SpanEnded(e) => ended(tables, record, e),
        RunEvent::EventAppended(e) => {
            event_appended(tables, record, SpanEventAt::of(&e), &e.run, &e.span)
        }
        RunEvent::PersonalEventAppended(e) => personal_event_appended(tables, record, e),
        RunEvent::Heartbeat(e) => heartbeat(tables, record, e),
        RunEvent::RolledUp(e) => rolled_up(tables, record, e),
        RunEvent::DetailPruned(e) => detail_pruned(tables, record, e),
        RunEvent::SpanHeartbeat(e) => span_heartbeat(tables, record, e),
        RunEvent::RolledUpWhileOpen(e) => rolled_up_while_open(tables, record, e),
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

/// The run a start joins (`None`: it starts one), refusing a start `decide` never emits.
fn check_start(tables: &WriteTables<'_>, record: &Record, e: &SpanStarted) -> Result<Option<Run>> {
    let (run, span) = (&e.run, &e.span);
    if SPANS.get(tables, &(run.clone(), span.clone()))?.is_some() {
        let detail = format!("run {run:?} already has span {span:?}");
        return Err(broken(record, SPAN_UNIQUE, detail));
    }
    let current = RUNS.get(tables, run)?;
    let closed = match &current {
        Some(current) => current.closed,
        None => ROLLUPS.get(tables, run)?.is_some(),
    };
    if closed {
        let detail = format!("span {span:?} starts in run {run:?}, which is closed");
        return Err(broken(record, RUN_OPEN, detail));
    }
    let placed = match (&e.parent, &current) {
        (None, Some(current)) => Err(format!(
            "root span {span:?} starts in run {run:?}, whose root is {:?}",
            current.root_span
        )),
        (None, None) if e.depth != 0 => Err(format!("root span {span:?} at depth {}", e.depth)),
        (None, None) => Ok(()),
        (Some(parent), None) => Err(format!(
            "span {span:?} starts under {parent:?} in run {run:?}, which has no spans"
        )),
        (Some(parent), Some(_)) => match SPANS.get(tables, &(run.clone(), parent.clone()))? {
            None => Err(format!(
                "span {span:?} starts under {parent:?}, which run {run:?} does not have"
            )),
            Some(found) if u64::from(found.depth) + 1 != u64::from(e.depth) => Err(format!(
                "span {span:?} at depth {} under {parent:?} at depth {}",
                e.depth, found.depth
            )),
            Some(_) => Ok(()),
        },
    };
    if let Err(detail) = placed {
        return Err(broken(record, SPAN_PLACED, detail));
    }
    match &current {
        Some(current) => check_seq(record, current, e.seq)?,
        None if e.seq == 0 => {
            let detail = format!("run {run:?} starts with seq 0");
            return Err(broken(record, SEQ_INCREASES, detail));
        }
        None => {}
    }
    Ok(current)
}

fn started(tables: &WriteTables<'_>, record: &Record, e: SpanStarted) -> Result<()> {
    let current = check_start(tables, record, &e)?;
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
    let mut run = current.unwrap_or_else(|| Run {
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
    SPAN_RUNS.insert(tables, &(e.span.clone(), e.run.clone()), &())?;
    if is_root {
        OPEN_ROOTS_BY_HEARTBEAT.insert(tables, &(at_ms, e.run.clone()), &e.span)?;
        OPEN_ROOTS_BY_START.insert(tables, &(at_ms, e.run), &e.span)?;
    }
    span_changed(tables, record, run, span, e.seq, ChangeKind::SpanStarted)
}

fn patched(tables: &WriteTables<'_>, record: &Record, e: SpanPatched) -> Result<()> {
    let (run, mut span) = existing_span(tables, record, &e.run, &e.span)?;
    if !span.is_open() {
        let detail = format!(
            "span {:?} of run {:?} patched after it ended",
            e.span, e.run
        );
        return Err(broken(record, SPAN_OPEN, detail));
    }
    check_seq(record, &run, e.seq)?;
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
    let (mut run, mut span) = existing_span(tables, record, &e.run, &e.span)?;
    if !span.is_open() {
        let detail = format!("span {:?} of run {:?} ended already", e.span, e.run);
        return Err(broken(record, SPAN_ENDS_ONCE, detail));
    }
    check_seq(record, &run, e.seq)?;
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

/// Where a span event goes: its index within the span and its run's seq.
struct SpanEventAt {
    event_index: u64,
    seq: u64,
}

impl SpanEventAt {
    fn of(e: &EventAppended) -> Self {
        SpanEventAt {
            event_index: e.event_index,
            seq: e.seq,
        }
    }
}

fn event_appended(
    tables: &WriteTables<'_>,
    record: &Record,
    at: SpanEventAt,
    run_id: &str,
    span_id: &str,
) -> Result<()> {
    let (run, mut span) = existing_span(tables, record, run_id, span_id)?;
    if at.event_index != span.event_count {
        let detail = format!(
            "event {} on span {span_id:?} of run {run_id:?}, which has {} events",
            at.event_index, span.event_count
        );
        return Err(broken(record, EVENT_INDEX_NEXT, detail));
    }
    check_seq(record, &run, at.seq)?;
    span.event_count = span.event_count.max(at.event_index.saturating_add(1));
    SPANS.insert(tables, &(run_id.to_owned(), span_id.to_owned()), &span)?;
    // The row points at this record, which holds the event's type, payload and seq.
    EVENTS.insert(
        tables,
        &(run_id.to_owned(), span_id.to_owned(), at.event_index),
        &record.position.0,
    )?;
    record_change(
        tables,
        record,
        run,
        at.seq,
        span_id,
        ChangeKind::EventAppended,
        Some(at.event_index),
    )
}

/// A personal span event: as any other, once its payload is checked to be an envelope (the
/// row points at the record, which keeps it).
fn personal_event_appended(
    tables: &WriteTables<'_>,
    record: &Record,
    e: PersonalEventAppended,
) -> Result<()> {
    if crate::record::envelope::Envelope::parse(&e.payload).is_none() {
        let detail = format!("event {} on span {:?} is not sealed", e.event_index, e.span);
        return Err(broken(record, PERSONAL_SEALED, detail));
    }
    let at = SpanEventAt {
        event_index: e.event_index,
        seq: e.seq,
    };
    event_appended(tables, record, at, &e.run, &e.span)
}

fn heartbeat(tables: &WriteTables<'_>, record: &Record, e: Heartbeat) -> Result<()> {
    let run = RUNS.get(tables, &e.run)?.filter(|run| !run.closed);
    let root = match &run {
        Some(run) => SPANS.get(tables, &(e.run.clone(), run.root_span.clone()))?,
        None => None,
    };
    // An open run's root is open: the run closes when its root ends.
    let Some(root) = root.filter(Span::is_open) else {
        let detail = format!("heartbeat of run {:?}, which is missing or closed", e.run);
        return Err(broken(record, RUN_OPEN, detail));
    };
    beat(tables, record, root)
}

fn span_heartbeat(tables: &WriteTables<'_>, record: &Record, e: SpanHeartbeat) -> Result<()> {
    let (_, span) = existing_span(tables, record, &e.run, &e.span)?;
    if !span.is_open() {
        let detail = format!(
            "heartbeat of span {:?} of run {:?}, which ended",
            e.span, e.run
        );
        return Err(broken(record, SPAN_OPEN, detail));
    }
    beat(tables, record, span)
}

/// Moves the open `span`'s last heartbeat to the record's time, and a root's place in the
/// index the stale sweep reads.
fn beat(tables: &WriteTables<'_>, record: &Record, mut span: Span) -> Result<()> {
    // Heartbeats from clocks that disagree may arrive out of order; the latest one counts.
    let latest = span
        .last_heartbeat_at_ms
        .map_or(record.at_ms, |previous| previous.max(record.at_ms));
    if span.is_root() {
        let previous = span.last_heartbeat_at_ms.unwrap_or(span.started_at_ms);
        let entry = |at_ms| Some(((at_ms, span.run.clone()), span.span.clone()));
        OPEN_ROOTS_BY_HEARTBEAT.move_entry(tables, entry(previous), entry(latest))?;
    }
    span.last_heartbeat_at_ms = Some(latest);
    SPANS.insert(tables, &(span.run.clone(), span.span.clone()), &span)
}

fn rolled_up(tables: &WriteTables<'_>, record: &Record, e: RolledUp) -> Result<()> {
    let rollup = e.rollup;
    if !RUNS.get(tables, &rollup.run)?.is_some_and(|run| run.closed) {
        let detail = format!(
            "rollup of run {:?}, which has no detail or an open root",
            rollup.run
        );
        return Err(broken(record, ROLLUP_AFTER_ROOT_END, detail));
    }
    // A rollup whose detail is kept is listed by its end; a pruned one is not.
    let unpruned = |rollup: &RunRollup| {
        (!rollup.detail_pruned).then(|| ((rollup.ended_at_ms, rollup.run.clone()), ()))
    };
    let previous = ROLLUPS.get(tables, &rollup.run)?;
    UNPRUNED_BY_END.move_entry(
        tables,
        previous.as_ref().and_then(unpruned),
        unpruned(&rollup),
    )?;
    // The run's rollup while it was open, if one was requested, is replaced by this one.
    OPEN_ROLLUPS.remove(tables, &rollup.run)?;
    ROLLUPS.insert(tables, &rollup.run.clone(), &rollup)
}

fn rolled_up_while_open(
    tables: &WriteTables<'_>,
    record: &Record,
    e: RolledUpWhileOpen,
) -> Result<()> {
    let rollup = e.rollup;
    if RUNS.get(tables, &rollup.run)?.is_none_or(|run| run.closed) {
        let detail = format!(
            "rollup while open of run {:?}, which is missing or closed",
            rollup.run
        );
        return Err(broken(record, RUN_OPEN, detail));
    }
    OPEN_ROLLUPS.insert(tables, &rollup.run.clone(), &rollup)
}

fn detail_pruned(tables: &WriteTables<'_>, record: &Record, e: DetailPruned) -> Result<()> {
    let open_spans = RUNS.get(tables, &e.run)?.map(|run| run.open_span_count);
    let rolled_up = ROLLUPS.get(tables, &e.run)?.is_some();
    if open_spans != Some(0) || !rolled_up {
        let detail = match open_spans {
            None => format!("run {:?} pruned without detail to prune", e.run),
            Some(0) => format!("run {:?} pruned without a rollup", e.run),
            Some(open) => format!("run {:?} pruned with {open} spans open", e.run),
        };
        return Err(broken(record, PRUNE_ONLY_FINISHED, detail));
    }
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
        SPAN_RUNS.remove(tables, &(key.1.clone(), key.0.clone()))?;
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
