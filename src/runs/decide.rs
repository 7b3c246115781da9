//! Run commands and their pure decisions: state + command → events or a refusal.
//!
//! Every rule is decided against the command's `now_ms`; nothing here reads a clock. Seqs,
//! depths, event indexes, capped payloads and rollups are decided here and recorded in the
//! events, so `apply` has nothing left to choose.

use super::events::{
    Attributes, BillingMode, DetailPruned, EventAppended, Heartbeat, PERSONAL_EVENT_APPENDED,
    PersonalEventAppended, RolledUp, RolledUpWhileOpen, RunEvent, SpanEnded, SpanHeartbeat,
    SpanKind, SpanOrigin, SpanOutcome, SpanPatched, SpanStarted, SpanUsage,
};
use super::query::{self, OpenRunRollup, Run, RunRollup, RunSeq, Span};
use super::rollup;
use crate::command::{Command, Decision, Emit, PersonalField, Sealing, check_sealed};
use crate::error::{Error, Result, RollupMoment, TableFault};
use crate::event::DomainEvent;
use crate::log::append::ExpectedVersion;
use crate::projection::table::TableSource;
use crate::validate;

/// The ceiling of a span event's payload, in bytes: a command may lower it, never raise it.
pub const EVENT_PAYLOAD_BYTES_MAX: u32 = 16 * 1024;

/// How many prune candidates one read takes.
const PRUNE_SCAN_PAGE: usize = 256;

/// The reason written on spans closed because their writer is gone: the reference's text (its
/// boot sweep closes what a restarted server left open).
pub const ORPHAN_REASON: &str = "server restarted";
/// The reason written on spans closed because their run's root heartbeat went stale.
pub const STALE_REASON: &str = "writer went silent";
/// The failure reason a pruned rollup gets when no digest covered its run.
pub const COVERAGE_GAP_REASON: &str = "digest coverage gap";

/// The stream of a run's events.
pub fn run_stream(run: &str) -> String {
    format!("run/{run}")
}

/// Why a span command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpanRefusal {
    /// A span with this id already exists in the run.
    SpanExists,
    /// A span with this id exists in another run: span ids are unique across runs (the
    /// reference's primary key), while that run's detail is kept.
    SpanInAnotherRun,
    /// The run is closed (its root ended, or its detail was pruned): no new span joins it.
    RunClosed,
    /// A parentless span in a run that already has its root.
    RootExists,
    /// The parent is not a span of the run (a run's first span must be its root).
    ParentMissing,
    /// No such span in the run.
    SpanMissing,
    /// The span already ended: its end is written once, and it takes no patch after.
    SpanEnded,
}

impl std::fmt::Display for SpanRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SpanRefusal::SpanExists => "span exists",
            SpanRefusal::SpanInAnotherRun => "span in another run",
            SpanRefusal::RunClosed => "run closed",
            SpanRefusal::RootExists => "root exists",
            SpanRefusal::ParentMissing => "parent missing",
            SpanRefusal::SpanMissing => "span missing",
            SpanRefusal::SpanEnded => "span ended",
        })
    }
}

/// A command on one span. Its serde form names each variant in snake_case, the heartbeat
/// `span_heartbeat` and the event `event` (the runs' own heartbeat is another command); it may
/// leave out attributes and usage (none); a command's serde form is not stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpanCommand {
    /// Start a span at `now_ms`, open until it ends.
    Start {
        /// The run.
        run: String,
        /// The span, unique within the run.
        span: String,
        /// The parent span in the same run; `None` for the run's root (its first span).
        parent: Option<String>,
        /// What it is called.
        name: String,
        /// What it is a unit of.
        kind: SpanKind,
        /// Where its run came from.
        origin: SpanOrigin,
        /// The session it belongs to, if any.
        session_id: Option<String>,
        /// The scheduled job it belongs to, if any.
        job_name: Option<String>,
        /// Its attributes.
        #[serde(default)]
        attributes: Attributes,
        /// How its run is billed, if known.
        billing_mode: Option<BillingMode>,
        /// The process identity that writes it.
        writer: String,
        /// The caller's clock: the span's start.
        now_ms: u64,
    },
    /// Update an open span: attributes merged, reported usage fields replaced.
    Patch {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// Attributes merged in.
        #[serde(default)]
        attributes: Attributes,
        /// Usage merged in.
        #[serde(default)]
        usage: SpanUsage,
        /// A new wait boundary.
        wait_until_ms: Option<u64>,
        /// A billing mode.
        billing_mode: Option<BillingMode>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Write the span's terminal outcome, once.
    End {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// The outcome.
        outcome: SpanOutcome,
        /// Why, if said.
        reason: Option<String>,
        /// Final usage merged in.
        #[serde(default)]
        usage: SpanUsage,
        /// Final attributes merged in.
        #[serde(default)]
        attributes: Attributes,
        /// The caller's clock: the span's end.
        now_ms: u64,
    },
    /// The writer of an open span (the run's root or any other) says it is alive at
    /// `now_ms`.
    #[serde(rename = "span_heartbeat")]
    Heartbeat {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Record an event on a span (open or ended) at `now_ms`.
    #[serde(rename = "event")]
    AppendEvent {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// What kind of event it is.
        event_type: String,
        /// The payload (typically JSON text); cut to the cap if longer.
        payload: String,
        /// A lower payload cap for this call; `None` (or anything higher) is
        /// [`EVENT_PAYLOAD_BYTES_MAX`].
        payload_bytes_max: Option<u32>,
        /// The caller's clock: the event's time.
        now_ms: u64,
    },
    /// [`SpanCommand::AppendEvent`] of a payload personal to `subject` (a person's id: a
    /// prompt, a tool's output about someone): the store's write session seals it under the
    /// subject's key before its event (`run.personal_event_appended`) is hashed, and
    /// [`super::SpanEvent::payload_field`] reads it back, or as erased once the subject is
    /// (`docs/erasure.md`). A variant of its own, so that an `AppendEvent` written before
    /// personal payloads still builds and means what it meant. Its payload is never cut: it is
    /// sealed before the command decides, so one longer than [`EVENT_PAYLOAD_BYTES_MAX`] is
    /// refused (cut it first with [`cap_payload`]).
    #[serde(rename = "event_for")]
    AppendEventFor {
        /// The subject the payload belongs to.
        subject: String,
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// What kind of event it is, in clear: it must say nothing personal.
        event_type: String,
        /// The payload's bytes (typically JSON text), at most [`EVENT_PAYLOAD_BYTES_MAX`]
        /// before they are sealed.
        #[serde(with = "crate::event::bytes")]
        #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
        payload: Vec<u8>,
        /// The caller's clock: the event's time.
        now_ms: u64,
    },
}

/// What a span command got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum SpanCommandOutcome {
    /// The span started.
    Started {
        /// Its run's seq for the start.
        seq: RunSeq,
        /// Its depth in the run's tree.
        depth: u32,
    },
    /// The span was patched.
    Patched {
        /// Its run's seq for the patch.
        seq: RunSeq,
    },
    /// The span ended.
    Ended {
        /// Its run's seq for the end.
        seq: RunSeq,
        /// The run's rollup, written because its root is now terminal.
        rollup: Option<Box<RunRollup>>,
    },
    /// The span's heartbeat was recorded.
    HeartbeatRecorded,
    /// The event was recorded.
    EventAppended {
        /// Its run's seq.
        seq: RunSeq,
        /// Its index within the span.
        event_index: u64,
        /// Whether its payload was cut to the cap.
        truncated: bool,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: SpanRefusal,
    },
}

/// Why a run command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunRefusal {
    /// No such run.
    RunMissing,
    /// The run is closed: its root is terminal.
    RunClosed,
    /// The run's detail was pruned: only its rollup is left, and nothing to roll up again.
    DetailPruned,
}

impl std::fmt::Display for RunRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunRefusal::RunMissing => "run missing",
            RunRefusal::RunClosed => "run closed",
            RunRefusal::DetailPruned => "detail pruned",
        })
    }
}

/// A command on whole runs: liveness, closing and retention. Its serde form names each variant
/// in snake_case, the pruning `prune_runs` (the outbox's own pruning is another command); a
/// command's serde form is not stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RunCommand {
    /// The writer of the run's open root says it is alive at `now_ms`.
    Heartbeat {
        /// The run.
        run: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Compute and store the run's rollup from its spans as they stand, its root open or
    /// ended (the reference's `rollupRun`); its cost fields keep any earlier rollup's values.
    Rollup {
        /// The run.
        run: String,
        /// The caller's clock (the record's time; the rollup reads none).
        now_ms: u64,
    },
    /// End every open span of the run as `outcome` with `reason`, children first, and roll
    /// the run up.
    CascadeClose {
        /// The run.
        run: String,
        /// The outcome written on every open span.
        outcome: SpanOutcome,
        /// The reason written on every open span.
        reason: String,
        /// The caller's clock: the spans' end.
        now_ms: u64,
    },
    /// Close, as `interrupted`, every run with an open span written by `writer`, a writer
    /// that is gone (a previous life of a restarted process).
    SweepOrphans {
        /// The gone writer.
        writer: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Close, as `interrupted`, every run whose open root's last heartbeat is more than
    /// `stale_after_ms` before `now_ms`.
    SweepStale {
        /// How long a root may stay silent.
        stale_after_ms: u64,
        /// The sweeping writer: its own runs are live by definition and are spared.
        sweeper: Option<String>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Delete the detail of up to `batch` finished runs, keeping their rollups, marked.
    #[serde(rename = "prune_runs")]
    Prune {
        /// Runs that ended before this (absolute ms) are covered by a digest and prunable
        /// once also older than the retention window.
        digest_floor_at_ms: u64,
        /// The least age since its end before a covered run's detail is pruned.
        detail_retention_ms: u64,
        /// Runs that ended more than this before `now_ms` are pruned, covered or not.
        hard_ceiling_ms: u64,
        /// Most runs pruned by one command, so writers are not starved.
        batch: u32,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// A run a command closed.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClosedRun {
    /// The run.
    pub run: String,
    /// The spans ended, in the order they were (deepest first).
    pub spans: Vec<String>,
    /// The run's rollup as written.
    pub rollup: RunRollup,
}

/// What a run command got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum RunCommandOutcome {
    /// The heartbeat was recorded.
    HeartbeatRecorded,
    /// The rollup of a run whose root has ended was computed and stored.
    RolledUp {
        /// The rollup as written.
        rollup: Box<RunRollup>,
    },
    /// The rollup of a run whose root is still open was computed and stored.
    RolledUpWhileOpen {
        /// The rollup as written.
        rollup: Box<OpenRunRollup>,
    },
    /// Runs closed (none when nothing was open).
    Closed {
        /// The runs, in the order they were closed.
        runs: Vec<ClosedRun>,
    },
    /// Runs whose detail was pruned.
    Pruned {
        /// The runs, earliest end first.
        runs: Vec<String>,
        /// Spans deleted in all.
        spans_deleted: u64,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: RunRefusal,
    },
}

fn next_seq(run: &Run) -> Result<u64> {
    seq_after(run.high_water_seq.0)
}

fn seq_after(seq: u64) -> Result<u64> {
    validate::next_counter("run", seq)
}

fn emit<O>(run: &str, now_ms: u64, events: &[RunEvent], outcome: O) -> Decision<O> {
    Decision::emit(run_stream(run), new_events(events, now_ms), outcome)
}

fn new_events(events: &[RunEvent], now_ms: u64) -> Vec<crate::record::NewEvent> {
    events.iter().map(|e| e.to_new_event(now_ms)).collect()
}

fn refused_span(reason: SpanRefusal) -> Result<Decision<SpanCommandOutcome>> {
    Ok(Decision::nothing(SpanCommandOutcome::Refused { reason }))
}

/// The payload as stored and whether it was cut: at most `bytes_max` bytes (capped at
/// [`EVENT_PAYLOAD_BYTES_MAX`]), cut at a character boundary so it stays UTF-8.
pub fn cap_payload(payload: &str, bytes_max: Option<u32>) -> (String, bool) {
    let limit = bytes_max.map_or(EVENT_PAYLOAD_BYTES_MAX, |m| m.min(EVENT_PAYLOAD_BYTES_MAX));
    let limit = limit as usize;
    if payload.len() <= limit {
        return (payload.to_owned(), false);
    }
    let cut = payload.floor_char_boundary(limit);
    (payload[..cut].to_owned(), true)
}

/// The run and the span, or why not.
fn find_span(
    state: &dyn TableSource,
    run: &str,
    span: &str,
) -> Result<std::result::Result<(Run, Span), SpanRefusal>> {
    validate::non_empty("run", run)?;
    validate::non_empty("span", span)?;
    Ok(
        match (query::run(state, run)?, query::span(state, run, span)?) {
            (Some(current), Some(found)) => Ok((current, found)),
            _ => Err(SpanRefusal::SpanMissing),
        },
    )
}

/// The run and the span if it is still open, or why not.
fn find_open_span(
    state: &dyn TableSource,
    run: &str,
    span: &str,
) -> Result<std::result::Result<(Run, Span), SpanRefusal>> {
    Ok(find_span(state, run, span)?.and_then(|(current, found)| {
        if found.is_open() {
            Ok((current, found))
        } else {
            Err(SpanRefusal::SpanEnded)
        }
    }))
}

impl Command for SpanCommand {
    type Outcome = SpanCommandOutcome;

    /// A personal span event, with its payload sealed for its subject into the event
    /// `run.personal_event_appended` of stream `run/<run>`.
    fn sealed(
        &self,
        seal: &mut dyn FnMut(PersonalField<'_>) -> Result<Vec<u8>>,
    ) -> Result<Option<Self>> {
        let SpanCommand::AppendEventFor {
            subject,
            run,
            payload,
            ..
        } = self
        else {
            return Ok(None);
        };
        // Refused on the plaintext, before a key is made for it.
        validate::non_empty("run", run)?;
        validate::at_most_bytes("payload", payload.len(), EVENT_PAYLOAD_BYTES_MAX as usize)?;
        let envelope = seal(PersonalField {
            subject,
            stream: &run_stream(run),
            kind: PERSONAL_EVENT_APPENDED,
            plaintext: payload,
            sealing: Sealing::Random,
        })?;
        let mut sealed = self.clone();
        if let SpanCommand::AppendEventFor { payload, .. } = &mut sealed {
            *payload = envelope;
        }
        Ok(Some(sealed))
    }

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<SpanCommandOutcome>> {
        match self {
            SpanCommand::Start { now_ms, .. } => decide_start(state, self.started(), *now_ms),
            SpanCommand::Patch { now_ms, .. } => decide_patch(state, self.patched(), *now_ms),
            SpanCommand::End { now_ms, .. } => decide_end(state, self.ended(), *now_ms),
            SpanCommand::AppendEvent {
                run,
                span,
                event_type,
                payload,
                payload_bytes_max,
                now_ms,
            } => {
                let (payload, truncated) = cap_payload(payload, *payload_bytes_max);
                let requested = RequestedEvent {
                    run,
                    span,
                    event_type,
                    now_ms: *now_ms,
                };
                let kept = KeptPayload::Text { payload, truncated };
                decide_append_event(state, requested, kept)
            }
            SpanCommand::AppendEventFor {
                subject,
                run,
                span,
                event_type,
                payload,
                now_ms,
            } => {
                check_sealed("payload", payload, subject)?;
                let requested = RequestedEvent {
                    run,
                    span,
                    event_type,
                    now_ms: *now_ms,
                };
                let kept = KeptPayload::Sealed(payload.clone());
                decide_append_event(state, requested, kept)
            }
            SpanCommand::Heartbeat { run, span, now_ms } => {
                decide_span_heartbeat(state, run, span, *now_ms)
            }
        }
    }
}

impl SpanCommand {
    /// The event a [`SpanCommand::Start`] asks for, its depth and seq still undecided.
    fn started(&self) -> SpanStarted {
        let SpanCommand::Start {
            run,
            span,
            parent,
            name,
            kind,
            origin,
            session_id,
            job_name,
            attributes,
            billing_mode,
            writer,
            now_ms: _,
        } = self
        else {
            unreachable!("started() of a command that is no start: {self:?}")
        };
        SpanStarted {
            run: run.clone(),
            span: span.clone(),
            parent: parent.clone(),
            name: name.clone(),
            kind: *kind,
            origin: *origin,
            session_id: session_id.clone(),
            job_name: job_name.clone(),
            attributes: attributes.clone(),
            billing_mode: *billing_mode,
            writer: writer.clone(),
            depth: UNDECIDED_DEPTH,
            seq: UNDECIDED_SEQ,
        }
    }

    /// The event a [`SpanCommand::Patch`] asks for, its seq still undecided.
    fn patched(&self) -> SpanPatched {
        let SpanCommand::Patch {
            run,
            span,
            attributes,
            usage,
            wait_until_ms,
            billing_mode,
            now_ms: _,
        } = self
        else {
            unreachable!("patched() of a command that is no patch: {self:?}")
        };
        SpanPatched {
            run: run.clone(),
            span: span.clone(),
            seq: UNDECIDED_SEQ,
            attributes: attributes.clone(),
            usage: usage.clone(),
            wait_until_ms: *wait_until_ms,
            billing_mode: *billing_mode,
        }
    }

    /// The event a [`SpanCommand::End`] asks for, its seq still undecided.
    fn ended(&self) -> SpanEnded {
        let SpanCommand::End {
            run,
            span,
            outcome,
            reason,
            usage,
            attributes,
            now_ms: _,
        } = self
        else {
            unreachable!("ended() of a command that is no end: {self:?}")
        };
        SpanEnded {
            run: run.clone(),
            span: span.clone(),
            seq: UNDECIDED_SEQ,
            outcome: *outcome,
            reason: reason.clone(),
            usage: usage.clone(),
            attributes: attributes.clone(),
        }
    }
}

// A span command's fields are its event's, less what the decision adds: the dispatch
// copies them into the event with these placeholders, and each `decide_*` overwrites them
// before the event is emitted. (The alternative, a dozen arguments per function, hides
// which fields the decision reads.)
const UNDECIDED_SEQ: u64 = 0;
const UNDECIDED_DEPTH: u32 = 0;

/// [`SpanCommand::Start`]: `started` as the command gives it; its depth and seq are decided
/// here.
fn decide_start(
    state: &dyn TableSource,
    mut started: SpanStarted,
    now_ms: u64,
) -> Result<Decision<SpanCommandOutcome>> {
    let (run, span) = (started.run.as_str(), started.span.as_str());
    validate::non_empty("run", run)?;
    validate::non_empty("span", span)?;
    validate::non_empty("name", &started.name)?;
    validate::non_empty("writer", &started.writer)?;
    if let Some(parent) = &started.parent {
        validate::non_empty("parent", parent)?;
    }
    if query::span(state, run, span)?.is_some() {
        return refused_span(SpanRefusal::SpanExists);
    }
    // Span ids are a primary key across runs, as in the reference: while another run keeps a
    // span of this id, a start here is refused.
    if !query::runs_of_span(state, span)?.is_empty() {
        return refused_span(SpanRefusal::SpanInAnotherRun);
    }
    let current = query::run(state, run)?;
    let closed = match &current {
        Some(current) => current.closed,
        None => query::rollup(state, run)?.is_some(),
    };
    if closed {
        return refused_span(SpanRefusal::RunClosed);
    }
    let (depth, seq) = match place_span(state, run, started.parent.as_deref(), current.as_ref())? {
        Ok(placed) => placed,
        Err(refusal) => return refused_span(refusal),
    };
    (started.depth, started.seq) = (depth, seq);
    let outcome = SpanCommandOutcome::Started {
        seq: RunSeq(seq),
        depth,
    };
    let run = started.run.clone();
    Ok(emit(
        &run,
        now_ms,
        &[RunEvent::SpanStarted(started)],
        outcome,
    ))
}

/// The depth and seq of a span starting under `parent` in the run `current` (`None`: no
/// run yet), or why it cannot start: a root joins only a run without one, a child only a
/// run holding its parent.
fn place_span(
    state: &dyn TableSource,
    run: &str,
    parent: Option<&str>,
    current: Option<&Run>,
) -> Result<std::result::Result<(u32, u64), SpanRefusal>> {
    Ok(match (parent, current) {
        (None, Some(_)) => Err(SpanRefusal::RootExists),
        (None, None) => Ok((0, 1)),
        (Some(_), None) => Err(SpanRefusal::ParentMissing),
        (Some(parent), Some(current)) => match query::span(state, run, parent)? {
            None => Err(SpanRefusal::ParentMissing),
            Some(parent) => {
                let depth = validate::next_counter("parent", parent.depth)?;
                Ok((depth, next_seq(current)?))
            }
        },
    })
}

/// [`SpanCommand::Patch`]: `patched` as the command gives it; its seq is decided here.
fn decide_patch(
    state: &dyn TableSource,
    mut patched: SpanPatched,
    now_ms: u64,
) -> Result<Decision<SpanCommandOutcome>> {
    let (current, _) = match find_open_span(state, &patched.run, &patched.span)? {
        Ok(found) => found,
        Err(refusal) => return refused_span(refusal),
    };
    patched.seq = next_seq(&current)?;
    let outcome = SpanCommandOutcome::Patched {
        seq: RunSeq(patched.seq),
    };
    let run = patched.run.clone();
    Ok(emit(
        &run,
        now_ms,
        &[RunEvent::SpanPatched(patched)],
        outcome,
    ))
}

/// [`SpanCommand::End`]: `ended` as the command gives it; its seq is decided here, and the
/// run's rollup when its root is (or now becomes) terminal.
fn decide_end(
    state: &dyn TableSource,
    mut ended: SpanEnded,
    now_ms: u64,
) -> Result<Decision<SpanCommandOutcome>> {
    let (run, span) = (ended.run.clone(), ended.span.clone());
    let (current, found) = match find_open_span(state, &run, &span)? {
        Ok(found) => found,
        Err(refusal) => return refused_span(refusal),
    };
    let seq = next_seq(&current)?;
    ended.seq = seq;
    // A run is rolled up once its root is terminal, and again at every later end in it, on
    // the spans as they will stand after this end.
    let rollup = if found.is_root() || current.closed {
        let mut spans = query::spans(state, &run)?;
        if let Some(ending) = spans.iter_mut().find(|s| s.span == span) {
            let reason = ended.reason.as_deref();
            ending.end(
                ended.outcome,
                reason,
                &ended.usage,
                &ended.attributes,
                now_ms,
            );
        }
        rollup::compute(&spans, query::frozen_costs(state, &run)?)
    } else {
        None
    };
    let mut events = vec![RunEvent::SpanEnded(ended)];
    if let Some(rollup) = &rollup {
        events.push(RunEvent::RolledUp(RolledUp {
            rollup: rollup.clone(),
        }));
    }
    let outcome = SpanCommandOutcome::Ended {
        seq: RunSeq(seq),
        rollup: rollup.map(Box::new),
    };
    Ok(emit(&run, now_ms, &events, outcome))
}

/// What a span event command names: where the event goes, what it is, and when.
struct RequestedEvent<'c> {
    run: &'c str,
    span: &'c str,
    event_type: &'c str,
    now_ms: u64,
}

/// A span event's payload as its event keeps it.
enum KeptPayload {
    /// Text, cut to the cap (`truncated` when it was).
    Text { payload: String, truncated: bool },
    /// A personal payload's envelope, never cut.
    Sealed(Vec<u8>),
}

/// [`SpanCommand::AppendEvent`] and [`SpanCommand::AppendEventFor`]: the event's seq and its
/// index within the span, its payload as already kept.
fn decide_append_event(
    state: &dyn TableSource,
    requested: RequestedEvent<'_>,
    kept: KeptPayload,
) -> Result<Decision<SpanCommandOutcome>> {
    let RequestedEvent {
        run,
        span,
        event_type,
        now_ms,
    } = requested;
    validate::non_empty("event_type", event_type)?;
    let (current, found) = match find_span(state, run, span)? {
        Ok(found) => found,
        Err(refusal) => return refused_span(refusal),
    };
    let seq = next_seq(&current)?;
    let event_index = found.event_count;
    let stream = run_stream(run);
    let (run, span, event_type) = (run.to_owned(), span.to_owned(), event_type.to_owned());
    let (event, truncated) = match kept {
        KeptPayload::Text { payload, truncated } => {
            let event = RunEvent::EventAppended(EventAppended {
                run,
                span,
                seq,
                event_index,
                event_type,
                payload,
                truncated,
            });
            (event, truncated)
        }
        KeptPayload::Sealed(payload) => {
            let event = RunEvent::PersonalEventAppended(PersonalEventAppended {
                run,
                span,
                seq,
                event_index,
                event_type,
                payload,
            });
            (event, false)
        }
    };
    let outcome = SpanCommandOutcome::EventAppended {
        seq: RunSeq(seq),
        event_index,
        truncated,
    };
    Ok(Decision::event(stream, now_ms, event, outcome))
}

/// [`SpanCommand::Heartbeat`]: recorded while the span is open, whether its run is open or
/// closed (a child may outlive its root).
fn decide_span_heartbeat(
    state: &dyn TableSource,
    run: &str,
    span: &str,
    now_ms: u64,
) -> Result<Decision<SpanCommandOutcome>> {
    if let Err(refusal) = find_open_span(state, run, span)? {
        return refused_span(refusal);
    }
    let event = RunEvent::SpanHeartbeat(SpanHeartbeat {
        run: run.to_owned(),
        span: span.to_owned(),
    });
    Ok(emit(
        run,
        now_ms,
        &[event],
        SpanCommandOutcome::HeartbeatRecorded,
    ))
}

/// Ends every open span of `run` (deepest first; among equals, latest started first) and
/// rolls the run up; `None` when nothing is open.
fn close_run(
    state: &dyn TableSource,
    run: &Run,
    outcome: SpanOutcome,
    reason: &str,
    now_ms: u64,
) -> Result<Option<(Emit, ClosedRun)>> {
    let mut spans = query::spans(state, &run.run)?;
    let mut open: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].is_open()).collect();
    if open.is_empty() {
        return Ok(None);
    }
    open.sort_by(|&a, &b| {
        (spans[b].depth, spans[b].start_seq).cmp(&(spans[a].depth, spans[a].start_seq))
    });
    let mut seq = run.high_water_seq.0;
    let mut events = Vec::with_capacity(open.len() + 1);
    let mut closed = Vec::with_capacity(open.len());
    let (usage, attributes) = (SpanUsage::default(), Attributes::new());
    for index in open {
        seq = seq_after(seq)?;
        let span = &mut spans[index];
        span.end(outcome, Some(reason), &usage, &attributes, now_ms);
        events.push(RunEvent::SpanEnded(SpanEnded {
            run: run.run.clone(),
            span: span.span.clone(),
            seq,
            outcome,
            reason: Some(reason.to_owned()),
            usage: usage.clone(),
            attributes: attributes.clone(),
        }));
        closed.push(span.span.clone());
    }
    let frozen = query::frozen_costs(state, &run.run)?;
    // Every span of the run is terminal now, its root included, so there is a rollup.
    let rollup = rollup::compute(&spans, frozen).ok_or_else(|| Error::CorruptProjection {
        table: "runs.spans".into(),
        fault: TableFault::NoRollup {
            run: run.run.clone(),
            when: RollupMoment::EverySpanEnded,
        },
    })?;
    events.push(RunEvent::RolledUp(RolledUp {
        rollup: rollup.clone(),
    }));
    let emit = Emit {
        stream: run_stream(&run.run),
        expected: ExpectedVersion::Any,
        events: new_events(&events, now_ms),
    };
    let closed = ClosedRun {
        run: run.run.clone(),
        spans: closed,
        rollup,
    };
    Ok(Some((emit, closed)))
}

/// Closes each run of `runs` (skipping those without detail or open spans) as `interrupted`.
fn close_runs(
    state: &dyn TableSource,
    runs: impl IntoIterator<Item = String>,
    reason: &str,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    let mut emits = Vec::new();
    let mut closed = Vec::new();
    for run in runs {
        let Some(current) = query::run(state, &run)? else {
            continue;
        };
        if let Some((emit, run)) =
            close_run(state, &current, SpanOutcome::Interrupted, reason, now_ms)?
        {
            emits.push(emit);
            closed.push(run);
        }
    }
    Ok(Decision {
        emits,
        outcome: RunCommandOutcome::Closed { runs: closed },
    })
}

impl Command for RunCommand {
    type Outcome = RunCommandOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<RunCommandOutcome>> {
        match self {
            RunCommand::Heartbeat { run, now_ms } => decide_heartbeat(state, run, *now_ms),
            RunCommand::Rollup { run, now_ms } => decide_rollup(state, run, *now_ms),
            RunCommand::CascadeClose {
                run,
                outcome,
                reason,
                now_ms,
            } => decide_cascade_close(state, run, *outcome, reason, *now_ms),
            RunCommand::SweepOrphans { writer, now_ms } => {
                decide_sweep_orphans(state, writer, *now_ms)
            }
            RunCommand::SweepStale {
                stale_after_ms,
                sweeper,
                now_ms,
            } => decide_sweep_stale(state, *stale_after_ms, sweeper.as_deref(), *now_ms),
            RunCommand::Prune {
                digest_floor_at_ms,
                detail_retention_ms,
                hard_ceiling_ms,
                batch,
                now_ms,
            } => decide_prune(
                state,
                *digest_floor_at_ms,
                *detail_retention_ms,
                *hard_ceiling_ms,
                *batch,
                *now_ms,
            ),
        }
    }
}

fn refused_run(reason: RunRefusal) -> Result<Decision<RunCommandOutcome>> {
    Ok(Decision::nothing(RunCommandOutcome::Refused { reason }))
}

/// [`RunCommand::Heartbeat`]: recorded while the run is open.
fn decide_heartbeat(
    state: &dyn TableSource,
    run: &str,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    validate::non_empty("run", run)?;
    match query::run(state, run)? {
        None if query::rollup(state, run)?.is_some() => refused_run(RunRefusal::RunClosed),
        None => refused_run(RunRefusal::RunMissing),
        Some(current) if current.closed => refused_run(RunRefusal::RunClosed),
        Some(_) => {
            let event = RunEvent::Heartbeat(Heartbeat {
                run: run.to_owned(),
            });
            let outcome = RunCommandOutcome::HeartbeatRecorded;
            Ok(emit(run, now_ms, &[event], outcome))
        }
    }
}

/// [`RunCommand::Rollup`]: the run's rollup from its spans as they stand, open root or not.
fn decide_rollup(
    state: &dyn TableSource,
    run: &str,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    validate::non_empty("run", run)?;
    if query::run(state, run)?.is_none() {
        return refused_run(if query::rollup(state, run)?.is_some() {
            RunRefusal::DetailPruned
        } else {
            RunRefusal::RunMissing
        });
    }
    let spans = query::spans(state, run)?;
    let frozen = query::frozen_costs(state, run)?;
    if let Some(rollup) = rollup::compute(&spans, frozen) {
        let event = RunEvent::RolledUp(RolledUp {
            rollup: rollup.clone(),
        });
        let outcome = RunCommandOutcome::RolledUp {
            rollup: Box::new(rollup),
        };
        return Ok(emit(run, now_ms, &[event], outcome));
    }
    // A run's detail holds its root from its first start on, so there is a rollup so far.
    let rollup = rollup::so_far(&spans, frozen).ok_or_else(|| Error::CorruptProjection {
        table: "runs.spans".into(),
        fault: TableFault::NoRollup {
            run: run.to_owned(),
            when: RollupMoment::WhileOpen,
        },
    })?;
    let event = RunEvent::RolledUpWhileOpen(RolledUpWhileOpen {
        rollup: rollup.clone(),
    });
    let outcome = RunCommandOutcome::RolledUpWhileOpen {
        rollup: Box::new(rollup),
    };
    Ok(emit(run, now_ms, &[event], outcome))
}

/// [`RunCommand::CascadeClose`]: ends every open span of the run; a pruned run has none.
fn decide_cascade_close(
    state: &dyn TableSource,
    run: &str,
    outcome: SpanOutcome,
    reason: &str,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    validate::non_empty("run", run)?;
    validate::non_empty("reason", reason)?;
    let nothing_closed = || Decision::nothing(RunCommandOutcome::Closed { runs: Vec::new() });
    let current = match query::run(state, run)? {
        Some(current) => current,
        None if query::rollup(state, run)?.is_some() => return Ok(nothing_closed()),
        None => return refused_run(RunRefusal::RunMissing),
    };
    Ok(match close_run(state, &current, outcome, reason, now_ms)? {
        Some((emit, closed)) => Decision {
            emits: vec![emit],
            outcome: RunCommandOutcome::Closed { runs: vec![closed] },
        },
        None => nothing_closed(),
    })
}

/// [`RunCommand::SweepOrphans`]: closes every run with an open span of the gone writer.
fn decide_sweep_orphans(
    state: &dyn TableSource,
    writer: &str,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    validate::non_empty("writer", writer)?;
    let runs = query::runs_with_open_spans_of(state, writer)?;
    close_runs(state, runs, ORPHAN_REASON, now_ms)
}

/// [`RunCommand::SweepStale`]: closes every run whose open root went silent, but the
/// sweeper's own.
fn decide_sweep_stale(
    state: &dyn TableSource,
    stale_after_ms: u64,
    sweeper: Option<&str>,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    let cutoff = now_ms.saturating_sub(stale_after_ms);
    let runs = query::silent_roots(state, cutoff)?
        .into_iter()
        .filter(|root| sweeper != Some(root.writer.as_str()))
        .map(|root| root.run);
    close_runs(state, runs, STALE_REASON, now_ms)
}

/// [`RunCommand::Prune`]: deletes the detail of up to `batch` finished runs that ended
/// before the bound, earliest end first.
fn decide_prune(
    state: &dyn TableSource,
    digest_floor_at_ms: u64,
    detail_retention_ms: u64,
    hard_ceiling_ms: u64,
    batch: u32,
    now_ms: u64,
) -> Result<Decision<RunCommandOutcome>> {
    validate::positive("batch", u64::from(batch))?;
    let floor = digest_floor_at_ms;
    let retention_cutoff = now_ms.saturating_sub(detail_retention_ms);
    let ceiling_cutoff = now_ms.saturating_sub(hard_ceiling_ms);
    // Covered and old enough, or past the hard ceiling regardless.
    let bound = floor.min(retention_cutoff).max(ceiling_cutoff);
    let mut emits = Vec::new();
    let mut pruned = Vec::new();
    let mut spans_deleted = 0u64;
    // Paged, so a long backlog is not read whole to prune one batch.
    let mut from = (0, String::new());
    'pages: loop {
        let page = query::unpruned_ended_before(state, &from, bound, PRUNE_SCAN_PAGE)?;
        let full = page.len() == PRUNE_SCAN_PAGE;
        if let Some((ended_at_ms, run)) = page.last() {
            // The least key after the last one read.
            from = (*ended_at_ms, format!("{run}\0"));
        }
        for (ended_at_ms, run) in page {
            if pruned.len() >= batch as usize {
                break 'pages;
            }
            let covered = ended_at_ms < floor;
            if let Some((emit, deleted)) = prune_run(state, &run, covered, now_ms)? {
                emits.push(emit);
                spans_deleted = spans_deleted.saturating_add(deleted);
                pruned.push(run);
            }
        }
        if !full {
            break;
        }
    }
    Ok(Decision {
        emits,
        outcome: RunCommandOutcome::Pruned {
            runs: pruned,
            spans_deleted,
        },
    })
}

/// The pruning of `run`'s detail and the spans it deletes; `None` for a run without detail
/// or rollup, or with a span still open. A run no digest `covered` keeps a failure reason
/// that says so.
fn prune_run(
    state: &dyn TableSource,
    run: &str,
    covered: bool,
    now_ms: u64,
) -> Result<Option<(Emit, u64)>> {
    let (Some(current), Some(rollup)) = (query::run(state, run)?, query::rollup(state, run)?)
    else {
        return Ok(None);
    };
    if current.open_span_count > 0 {
        return Ok(None);
    }
    let failure_reason = if covered {
        rollup.failure_reason
    } else {
        rollup
            .failure_reason
            .or_else(|| Some(COVERAGE_GAP_REASON.to_owned()))
    };
    let event = RunEvent::DetailPruned(DetailPruned {
        run: run.to_owned(),
        failure_reason,
        spans_deleted: current.span_count,
    });
    let emit = Emit {
        stream: run_stream(run),
        expected: ExpectedVersion::Any,
        events: new_events(&[event], now_ms),
    };
    Ok(Some((emit, current.span_count)))
}
