//! The model's span commands: start (a root as a run's first span, a child under a span of
//! the run one deeper), patch and end of an open span, and span events with the next index
//! and the payload cut within the cap, each taking the run's next seq. It never calls the
//! runs' `decide`, `apply` or the span's own `patch` and `end`: a rule the store gets wrong
//! must not be wrong here the same way.

use std::collections::BTreeMap;

use super::{Appends, Detail, GONE, Invalid, PAYLOAD_BYTES_MAX, Runs, end, given, merge};
use crate::runs::decide::{SpanCommand, SpanCommandOutcome, SpanRefusal};
use crate::runs::events::SpanUsage;
use crate::runs::query::{RunSeq, Span, SpanEvent};

impl Runs {
    /// What the span command must do, its records added to `appends`; the field named when
    /// it is invalid.
    pub(super) fn span(
        &mut self,
        command: &SpanCommand,
        appends: &mut Appends,
    ) -> Result<SpanCommandOutcome, Invalid> {
        let refused = |reason| Ok(SpanCommandOutcome::Refused { reason });
        match command {
            SpanCommand::Start {
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
                now_ms,
            } => {
                given(run, "run")?;
                given(span, "span")?;
                given(name, "name")?;
                given(writer, "writer")?;
                if let Some(parent) = parent {
                    given(parent, "parent")?;
                }
                let detail = self.details.get(run);
                if detail.is_some_and(|d| d.spans.iter().any(|s| s.span == *span)) {
                    return refused(SpanRefusal::SpanExists);
                }
                // `startSpan`'s INSERT: the span id is the primary key of every kept span.
                if self
                    .details
                    .values()
                    .any(|d| d.spans.iter().any(|s| s.span == *span))
                {
                    return refused(SpanRefusal::SpanInAnotherRun);
                }
                let closed = match detail {
                    Some(detail) => detail.closed(),
                    None => self.rollups.contains_key(run),
                };
                if closed {
                    return refused(SpanRefusal::RunClosed);
                }
                let (depth, seq) = match (parent, detail) {
                    (None, Some(_)) => return refused(SpanRefusal::RootExists),
                    (None, None) => (0, 1),
                    (Some(parent), detail) => {
                        let Some(detail) = detail else {
                            return refused(SpanRefusal::ParentMissing);
                        };
                        let Some(parent) = detail.spans.iter().find(|s| s.span == *parent) else {
                            return refused(SpanRefusal::ParentMissing);
                        };
                        (parent.depth + 1, detail.seq + 1)
                    }
                };
                let position = appends.push(run, "run.span_started");
                let started = Span {
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
                    started_at_ms: *now_ms,
                    wait_until_ms: None,
                    ended_at_ms: None,
                    outcome: None,
                    outcome_reason: None,
                    usage: SpanUsage::default(),
                    last_heartbeat_at_ms: parent.is_none().then_some(*now_ms),
                    depth,
                    start_seq: RunSeq(seq),
                    seq: RunSeq(seq),
                    position,
                    event_count: 0,
                };
                let detail = self.details.entry(run.clone()).or_insert_with(|| Detail {
                    spans: Vec::new(),
                    events: Vec::new(),
                    seq: 0,
                    position: 0,
                });
                detail.spans.push(started);
                detail.seq = seq;
                detail.position = position;
                Ok(SpanCommandOutcome::Started {
                    seq: RunSeq(seq),
                    depth,
                })
            }
            SpanCommand::Patch {
                run,
                span,
                attributes,
                usage,
                wait_until_ms,
                billing_mode,
                ..
            } => {
                given(run, "run")?;
                given(span, "span")?;
                let detail = match open_span(&mut self.details, run, span) {
                    Ok(detail) => detail,
                    Err(reason) => return refused(reason),
                };
                let seq = detail.seq + 1;
                let position = appends.push(run, "run.span_patched");
                let changed = detail.span_mut(span).ok_or(GONE)?;
                merge(changed, attributes, usage);
                if wait_until_ms.is_some() {
                    changed.wait_until_ms = *wait_until_ms;
                }
                if billing_mode.is_some() {
                    changed.billing_mode = *billing_mode;
                }
                changed.seq = RunSeq(seq);
                changed.position = position;
                detail.seq = seq;
                detail.position = position;
                Ok(SpanCommandOutcome::Patched { seq: RunSeq(seq) })
            }
            SpanCommand::End {
                run,
                span,
                outcome,
                reason,
                usage,
                attributes,
                now_ms,
            } => {
                given(run, "run")?;
                given(span, "span")?;
                let detail = match open_span(&mut self.details, run, span) {
                    Ok(detail) => detail,
                    Err(reason) => return refused(reason),
                };
                let seq = detail.seq + 1;
                let position = appends.push(run, "run.span_ended");
                let ended = detail.span_mut(span).ok_or(GONE)?;
                end(ended, *outcome, reason.clone(), usage, attributes, *now_ms);
                ended.seq = RunSeq(seq);
                ended.position = position;
                detail.seq = seq;
                detail.position = position;
                // Once the root is terminal, every end rolls the run up again.
                let rollup = if detail.closed() {
                    let spans = detail.spans.clone();
                    Some(Box::new(self.roll_up_closed(run, &spans, appends)))
                } else {
                    None
                };
                Ok(SpanCommandOutcome::Ended {
                    seq: RunSeq(seq),
                    rollup,
                })
            }
            SpanCommand::Heartbeat { run, span, now_ms } => {
                given(run, "run")?;
                given(span, "span")?;
                let detail = match open_span(&mut self.details, run, span) {
                    Ok(detail) => detail,
                    Err(reason) => return refused(reason),
                };
                appends.push(run, "run.span_heartbeat");
                let beating = detail.span_mut(span).ok_or(GONE)?;
                // A heartbeat older than the last one never moves it back; a child's first
                // one is its first.
                beating.last_heartbeat_at_ms = Some(
                    beating
                        .last_heartbeat_at_ms
                        .map_or(*now_ms, |last| last.max(*now_ms)),
                );
                Ok(SpanCommandOutcome::HeartbeatRecorded)
            }
            SpanCommand::AppendEvent {
                run,
                span,
                event_type,
                payload,
                payload_bytes_max,
                now_ms,
            } => {
                given(event_type, "event_type")?;
                given(run, "run")?;
                given(span, "span")?;
                let Some(detail) = self
                    .details
                    .get_mut(run)
                    .filter(|d| d.spans.iter().any(|s| s.span == *span))
                else {
                    return refused(SpanRefusal::SpanMissing);
                };
                let seq = detail.seq + 1;
                let position = appends.push(run, "run.event_appended");
                let target = detail.span_mut(span).ok_or(GONE)?;
                let event_index = target.event_count;
                target.event_count += 1;
                let cap = payload_bytes_max
                    .unwrap_or(PAYLOAD_BYTES_MAX)
                    .min(PAYLOAD_BYTES_MAX);
                let (kept, truncated) = cut(payload, cap as usize);
                detail.events.push(SpanEvent {
                    run: run.clone(),
                    span: span.clone(),
                    event_index,
                    at_ms: *now_ms,
                    event_type: event_type.clone(),
                    payload: kept,
                    truncated,
                    seq: RunSeq(seq),
                    position,
                    personal: None,
                });
                detail.seq = seq;
                detail.position = position;
                Ok(SpanCommandOutcome::EventAppended {
                    seq: RunSeq(seq),
                    event_index,
                    truncated,
                })
            }
            // The reference has no personal payloads, and the model makes no such command.
            SpanCommand::AppendEventFor { .. } => {
                unreachable!("the model makes no personal span event")
            }
        }
    }
}

/// The detail of `run` if `span` is an open span of it, or why not.
fn open_span<'a>(
    details: &'a mut BTreeMap<String, Detail>,
    run: &str,
    span: &str,
) -> std::result::Result<&'a mut Detail, SpanRefusal> {
    let detail = details.get_mut(run).ok_or(SpanRefusal::SpanMissing)?;
    match detail.spans.iter().find(|s| s.span == span) {
        None => Err(SpanRefusal::SpanMissing),
        Some(found) if found.outcome.is_some() => Err(SpanRefusal::SpanEnded),
        Some(_) => Ok(detail),
    }
}

/// The longest prefix of `payload` of at most `cap` bytes that ends on a character, and
/// whether anything was cut.
fn cut(payload: &str, cap: usize) -> (String, bool) {
    let mut kept = String::new();
    for c in payload.chars() {
        if kept.len() + c.len_utf8() > cap {
            return (kept, true);
        }
        kept.push(c);
    }
    (kept, false)
}
