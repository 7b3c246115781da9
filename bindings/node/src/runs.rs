//! The runs domain: span commands (a run's tree of spans, their usage and events), run
//! commands (heartbeats, rollups, closing, sweeps, pruning), and their outcomes.

use std::collections::HashMap;

use annals::runs::{
    Attributes, RunCommand as CoreRunCommand, RunCommandOutcome, SpanCommand as CoreSpanCommand,
    SpanCommandOutcome,
};
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::convert::{name_of, named, optional_ms, optional_u32, u32_of, u64_of_ms};
use crate::rows::{OpenRunRollup, RunRollup, number, open_rollup_js, rollup_js};

/// Tokens and cost a span reports; an absent field is left as it is.
#[napi(object)]
pub struct SpanUsage {
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

/// A span command (`type`: `start`, `patch`, `end`, `spanHeartbeat` or `event`) of a run's
/// span tree.
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum SpanCommand {
    /// Start a span (the run's root when `parent` is absent).
    Start {
        /// The run.
        run: String,
        /// The span's id, unique within the run.
        span: String,
        /// Its parent span, if any.
        parent: Option<String>,
        /// Its name.
        name: String,
        /// What it is a unit of: `'turn'`, `'tool'`, `'subagent'` or `'cron'`.
        #[napi(ts_type = "SpanKind")]
        kind: String,
        /// Where its run came from: `'session'` or `'cron'`.
        #[napi(ts_type = "SpanOrigin")]
        origin: String,
        /// Its writer: the process identity that writes it.
        writer: String,
        /// The session it belongs to, if any.
        session_id: Option<String>,
        /// The scheduled job it belongs to, if any.
        job_name: Option<String>,
        /// `'subscription'` or `'api'`, if known.
        billing_mode: Option<String>,
        /// Free-form attributes.
        attributes: Option<HashMap<String, String>>,
        /// The caller's clock: the span's start.
        now_ms: f64,
    },
    /// Update an open span: attributes merged, the usage fields given replaced.
    Patch {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// Attributes merged in.
        attributes: Option<HashMap<String, String>>,
        /// Usage merged in.
        usage: Option<SpanUsage>,
        /// A new wait boundary.
        wait_until_ms: Option<f64>,
        /// A billing mode.
        billing_mode: Option<String>,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Write the span's terminal outcome, once: `'success'`, `'error'`, `'timeout'`,
    /// `'cancelled'`, `'denied'` or `'interrupted'`.
    End {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// How it ended.
        #[napi(ts_type = "SpanEnd")]
        outcome: String,
        /// Why, if said.
        reason: Option<String>,
        /// Final usage merged in.
        usage: Option<SpanUsage>,
        /// Final attributes merged in.
        attributes: Option<HashMap<String, String>>,
        /// The caller's clock: the span's end.
        now_ms: f64,
    },
    /// The writer of an open span says it is alive.
    SpanHeartbeat {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Record an event on a span, open or ended; a payload over the cap is cut.
    Event {
        /// The run.
        run: String,
        /// The span.
        span: String,
        /// What kind of event it is.
        event_type: String,
        /// Its payload (typically JSON text).
        payload: String,
        /// A lower cap for this call, in bytes (the cap is 16 KiB).
        payload_bytes_max: Option<f64>,
        /// The caller's clock: the event's time.
        now_ms: f64,
    },
}

/// What a span command got: `started` (its run seq and depth), `patched`, `ended` (with the
/// run's rollup when the root is now terminal), `heartbeatRecorded`, `eventAppended`, or
/// `refused` with the reason (`span_exists`, `parent_missing`, `span_ended`, …).
// Converted to a JavaScript object once, by value: boxing the rollup would save nothing.
#[allow(clippy::large_enum_variant)]
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum SpanOutcome {
    /// The span started.
    Started {
        /// Its run's seq for the start.
        seq: BigInt,
        /// Its depth in the run's tree.
        depth: u32,
    },
    /// The span was patched.
    Patched {
        /// Its run's seq for the patch.
        seq: BigInt,
    },
    /// The span ended.
    Ended {
        /// Its run's seq for the end.
        seq: BigInt,
        /// The run's rollup, when its root is now terminal.
        rollup: Option<RunRollup>,
    },
    /// The heartbeat was recorded.
    HeartbeatRecorded {},
    /// The event was recorded.
    EventAppended {
        /// Its run's seq.
        seq: BigInt,
        /// Its index within the span.
        event_index: f64,
        /// Whether its payload was cut to the cap.
        truncated: bool,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        #[napi(ts_type = "SpanRefusal")]
        reason: String,
    },
}

fn attributes(map: Option<HashMap<String, String>>) -> Attributes {
    map.unwrap_or_default().into_iter().collect()
}

fn usage(usage: Option<SpanUsage>) -> napi::Result<annals::runs::SpanUsage> {
    let Some(usage) = usage else {
        return Ok(annals::runs::SpanUsage::default());
    };
    Ok(annals::runs::SpanUsage {
        input_tokens: optional_ms(usage.input_tokens, "usage.inputTokens")?,
        output_tokens: optional_ms(usage.output_tokens, "usage.outputTokens")?,
        cache_read_tokens: optional_ms(usage.cache_read_tokens, "usage.cacheReadTokens")?,
        cache_creation_tokens: optional_ms(
            usage.cache_creation_tokens,
            "usage.cacheCreationTokens",
        )?,
        cost_micro_usd: optional_ms(usage.cost_micro_usd, "usage.costMicroUsd")?,
        model: usage.model,
    })
}

fn billing(mode: Option<String>) -> napi::Result<Option<annals::runs::BillingMode>> {
    mode.map(|mode| named(mode, "billingMode")).transpose()
}

pub fn span_command(command: SpanCommand) -> napi::Result<CoreSpanCommand> {
    Ok(match command {
        SpanCommand::Start {
            run,
            span,
            parent,
            name,
            kind,
            origin,
            writer,
            session_id,
            job_name,
            billing_mode,
            attributes: given,
            now_ms,
        } => CoreSpanCommand::Start {
            run,
            span,
            parent,
            name,
            kind: named(kind, "kind")?,
            origin: named(origin, "origin")?,
            session_id,
            job_name,
            attributes: attributes(given),
            billing_mode: billing(billing_mode)?,
            writer,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        SpanCommand::Patch {
            run,
            span,
            attributes: given,
            usage: reported,
            wait_until_ms,
            billing_mode,
            now_ms,
        } => CoreSpanCommand::Patch {
            run,
            span,
            attributes: attributes(given),
            usage: usage(reported)?,
            wait_until_ms: optional_ms(wait_until_ms, "waitUntilMs")?,
            billing_mode: billing(billing_mode)?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        SpanCommand::End {
            run,
            span,
            outcome,
            reason,
            usage: reported,
            attributes: given,
            now_ms,
        } => CoreSpanCommand::End {
            run,
            span,
            outcome: named(outcome, "outcome")?,
            reason,
            usage: usage(reported)?,
            attributes: attributes(given),
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        SpanCommand::SpanHeartbeat { run, span, now_ms } => CoreSpanCommand::Heartbeat {
            run,
            span,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        SpanCommand::Event {
            run,
            span,
            event_type,
            payload,
            payload_bytes_max,
            now_ms,
        } => CoreSpanCommand::AppendEvent {
            run,
            span,
            event_type,
            payload,
            payload_bytes_max: optional_u32(payload_bytes_max, "payloadBytesMax")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
    })
}

pub fn span_outcome(outcome: SpanCommandOutcome) -> SpanOutcome {
    match outcome {
        SpanCommandOutcome::Started { seq, depth } => SpanOutcome::Started {
            seq: BigInt::from(seq.0),
            depth,
        },
        SpanCommandOutcome::Patched { seq } => SpanOutcome::Patched {
            seq: BigInt::from(seq.0),
        },
        SpanCommandOutcome::Ended { seq, rollup } => SpanOutcome::Ended {
            seq: BigInt::from(seq.0),
            rollup: rollup.as_deref().map(rollup_js),
        },
        SpanCommandOutcome::HeartbeatRecorded => SpanOutcome::HeartbeatRecorded {},
        SpanCommandOutcome::EventAppended {
            seq,
            event_index,
            truncated,
        } => SpanOutcome::EventAppended {
            seq: BigInt::from(seq.0),
            event_index: number(event_index),
            truncated,
        },
        SpanCommandOutcome::Refused { reason } => SpanOutcome::Refused {
            reason: name_of(&reason),
        },
    }
}

/// A command on whole runs (`type`: `heartbeat`, `rollup`, `cascadeClose`, `sweepOrphans`,
/// `sweepStale` or `pruneRuns`).
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum RunCommand {
    /// The writer of the run's open root says it is alive.
    Heartbeat {
        /// The run.
        run: String,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Compute and store the run's rollup as it stands, its root open or ended.
    Rollup {
        /// The run.
        run: String,
        /// The caller's clock.
        now_ms: f64,
    },
    /// End every open span of the run as `outcome` with `reason`, children first, and roll
    /// the run up.
    CascadeClose {
        /// The run.
        run: String,
        /// The outcome written on every open span.
        #[napi(ts_type = "SpanEnd")]
        outcome: String,
        /// The reason written on every open span.
        reason: String,
        /// The caller's clock: the spans' end.
        now_ms: f64,
    },
    /// Close as `interrupted` every run with an open span written by `writer`, a writer
    /// that is gone (a previous life of a restarted process).
    SweepOrphans {
        /// The gone writer.
        writer: String,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Close as `interrupted` every run whose open root has been silent for more than
    /// `staleAfterMs`.
    SweepStale {
        /// How long a root may stay silent.
        stale_after_ms: f64,
        /// The sweeping writer, whose own runs are spared.
        sweeper: Option<String>,
        /// The caller's clock.
        now_ms: f64,
    },
    /// Delete the detail of up to `batch` finished runs, keeping their rollups, marked.
    PruneRuns {
        /// Runs that ended before this (absolute ms) are covered by a digest.
        digest_floor_at_ms: f64,
        /// The least age since its end before a covered run's detail is pruned.
        detail_retention_ms: f64,
        /// Runs that ended more than this before `nowMs` are pruned, covered or not.
        hard_ceiling_ms: f64,
        /// Most runs pruned by one command.
        batch: f64,
        /// The caller's clock.
        now_ms: f64,
    },
}

/// A run a command closed.
#[napi(object)]
pub struct ClosedRun {
    /// The run.
    pub run: String,
    /// The spans ended, deepest first.
    pub spans: Vec<String>,
    /// The run's rollup as written.
    pub rollup: RunRollup,
}

/// What a run command got: `heartbeatRecorded`, `rolledUp` (root ended), `rolledUpWhileOpen`,
/// `closed` (the runs closed, none when nothing was open), `pruned`, or `refused` with the
/// reason (`run_missing`, `run_closed`, `detail_pruned`).
#[napi(discriminant = "type", discriminant_case = "camelCase")]
pub enum RunOutcome {
    /// The heartbeat was recorded.
    HeartbeatRecorded {},
    /// The rollup of a run whose root has ended.
    RolledUp {
        /// The rollup as written.
        rollup: RunRollup,
    },
    /// The rollup of a run whose root is still open.
    RolledUpWhileOpen {
        /// The rollup as written.
        rollup: OpenRunRollup,
    },
    /// Runs closed.
    Closed {
        /// The runs, in the order they were closed.
        runs: Vec<ClosedRun>,
    },
    /// Runs whose detail was pruned.
    Pruned {
        /// The runs, earliest end first.
        runs: Vec<String>,
        /// Spans deleted in all.
        spans_deleted: f64,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        #[napi(ts_type = "RunRefusal")]
        reason: String,
    },
}

pub fn run_command(command: RunCommand) -> napi::Result<CoreRunCommand> {
    Ok(match command {
        RunCommand::Heartbeat { run, now_ms } => CoreRunCommand::Heartbeat {
            run,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        RunCommand::Rollup { run, now_ms } => CoreRunCommand::Rollup {
            run,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        RunCommand::CascadeClose {
            run,
            outcome,
            reason,
            now_ms,
        } => CoreRunCommand::CascadeClose {
            run,
            outcome: named(outcome, "outcome")?,
            reason,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        RunCommand::SweepOrphans { writer, now_ms } => CoreRunCommand::SweepOrphans {
            writer,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        RunCommand::SweepStale {
            stale_after_ms,
            sweeper,
            now_ms,
        } => CoreRunCommand::SweepStale {
            stale_after_ms: u64_of_ms(stale_after_ms, "staleAfterMs")?,
            sweeper,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        RunCommand::PruneRuns {
            digest_floor_at_ms,
            detail_retention_ms,
            hard_ceiling_ms,
            batch,
            now_ms,
        } => CoreRunCommand::Prune {
            digest_floor_at_ms: u64_of_ms(digest_floor_at_ms, "digestFloorAtMs")?,
            detail_retention_ms: u64_of_ms(detail_retention_ms, "detailRetentionMs")?,
            hard_ceiling_ms: u64_of_ms(hard_ceiling_ms, "hardCeilingMs")?,
            batch: u32_of(batch, "batch")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
    })
}

pub fn run_outcome(outcome: RunCommandOutcome) -> RunOutcome {
    match outcome {
        RunCommandOutcome::HeartbeatRecorded => RunOutcome::HeartbeatRecorded {},
        RunCommandOutcome::RolledUp { rollup } => RunOutcome::RolledUp {
            rollup: rollup_js(&rollup),
        },
        RunCommandOutcome::RolledUpWhileOpen { rollup } => RunOutcome::RolledUpWhileOpen {
            rollup: open_rollup_js(&rollup),
        },
        RunCommandOutcome::Closed { runs } => RunOutcome::Closed {
            runs: runs
                .into_iter()
                .map(|closed| ClosedRun {
                    rollup: rollup_js(&closed.rollup),
                    run: closed.run,
                    spans: closed.spans,
                })
                .collect(),
        },
        RunCommandOutcome::Pruned {
            runs,
            spans_deleted,
        } => RunOutcome::Pruned {
            runs,
            spans_deleted: number(spans_deleted),
        },
        RunCommandOutcome::Refused { reason } => RunOutcome::Refused {
            reason: name_of(&reason),
        },
    }
}
