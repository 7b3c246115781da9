//! The model's whole-run commands: heartbeats, cascade close, orphan and stale sweeps, and
//! prune, with the closing of a run's open spans (deepest first) and its rollup. It never
//! calls the runs' `decide`, `apply` or `rollup::compute`: a rule the store gets wrong must
//! not be wrong here the same way.

use super::{
    Appends, COVERAGE_GAP_REASON, GONE, Invalid, ORPHAN_REASON, Runs, STALE_REASON, end, given,
    so_far,
};
use crate::runs::decide::{ClosedRun, RunCommand, RunCommandOutcome, RunRefusal};
use crate::runs::events::{Attributes, SpanOutcome, SpanUsage};
use crate::runs::query::RunSeq;

impl Runs {
    /// What the whole-run command must do, its records added to `appends`; the field named
    /// when it is invalid.
    pub(super) fn whole(
        &mut self,
        command: &RunCommand,
        appends: &mut Appends,
    ) -> Result<RunCommandOutcome, Invalid> {
        let refused = |reason| Ok(RunCommandOutcome::Refused { reason });
        match command {
            RunCommand::Heartbeat { run, now_ms } => {
                given(run, "run")?;
                let Some(detail) = self.details.get_mut(run) else {
                    return refused(if self.rollups.contains_key(run) {
                        RunRefusal::RunClosed
                    } else {
                        RunRefusal::RunMissing
                    });
                };
                if detail.closed() {
                    return refused(RunRefusal::RunClosed);
                }
                appends.push(run, "run.heartbeat");
                let root = &mut detail.spans[0];
                // A heartbeat older than the last one never moves it back.
                let last = root.last_heartbeat_at_ms.unwrap_or(root.started_at_ms);
                root.last_heartbeat_at_ms = Some(last.max(*now_ms));
                Ok(RunCommandOutcome::HeartbeatRecorded)
            }
            RunCommand::Rollup { run, .. } => {
                given(run, "run")?;
                let Some(detail) = self.details.get(run) else {
                    return refused(if self.rollups.contains_key(run) {
                        RunRefusal::DetailPruned
                    } else {
                        RunRefusal::RunMissing
                    });
                };
                let spans = detail.spans.clone();
                if detail.closed() {
                    let rollup = self.roll_up_closed(run, &spans, appends);
                    return Ok(RunCommandOutcome::RolledUp {
                        rollup: Box::new(rollup),
                    });
                }
                // `rollupRun` on a run whose root is open: no end, outcome or duration yet.
                let rollup = so_far(&spans, self.frozen(run));
                appends.push(run, "run.rolled_up_while_open");
                self.open_rollups.insert(run.clone(), rollup.clone());
                Ok(RunCommandOutcome::RolledUpWhileOpen {
                    rollup: Box::new(rollup),
                })
            }
            RunCommand::CascadeClose {
                run,
                outcome,
                reason,
                now_ms,
            } => {
                given(run, "run")?;
                given(reason, "reason")?;
                if !self.details.contains_key(run) && !self.rollups.contains_key(run) {
                    return refused(RunRefusal::RunMissing);
                }
                let runs = self
                    .close(run, *outcome, reason, *now_ms, appends)
                    .into_iter()
                    .collect();
                Ok(RunCommandOutcome::Closed { runs })
            }
            RunCommand::SweepOrphans { writer, now_ms } => {
                given(writer, "writer")?;
                let gone: Vec<String> = self
                    .details
                    .iter()
                    .filter(|(_, d)| {
                        d.spans
                            .iter()
                            .any(|s| s.outcome.is_none() && s.writer == *writer)
                    })
                    .map(|(run, _)| run.clone())
                    .collect();
                let runs = gone
                    .iter()
                    .filter_map(|run| {
                        self.close(
                            run,
                            SpanOutcome::Interrupted,
                            ORPHAN_REASON,
                            *now_ms,
                            appends,
                        )
                    })
                    .collect();
                Ok(RunCommandOutcome::Closed { runs })
            }
            RunCommand::SweepStale {
                stale_after_ms,
                sweeper,
                now_ms,
            } => {
                // Silent: the open root's last heartbeat is more than `stale_after_ms` ago.
                let mut silent: Vec<(u64, String)> = self
                    .details
                    .iter()
                    .filter(|(_, d)| !d.closed())
                    .filter(|(_, d)| sweeper.as_deref() != Some(d.root().writer.as_str()))
                    .filter_map(|(run, d)| {
                        let root = d.root();
                        let last = root.last_heartbeat_at_ms.unwrap_or(root.started_at_ms);
                        (now_ms.checked_sub(last)? > *stale_after_ms).then(|| (last, run.clone()))
                    })
                    .collect();
                silent.sort();
                let runs = silent
                    .iter()
                    .filter_map(|(_, run)| {
                        self.close(
                            run,
                            SpanOutcome::Interrupted,
                            STALE_REASON,
                            *now_ms,
                            appends,
                        )
                    })
                    .collect();
                Ok(RunCommandOutcome::Closed { runs })
            }
            RunCommand::Prune {
                digest_floor_at_ms,
                detail_retention_ms,
                hard_ceiling_ms,
                batch,
                now_ms,
            } => {
                if *batch == 0 {
                    return Err("batch");
                }
                // Prunable: ended before the digest floor and longer ago than the retention,
                // or longer ago than the hard ceiling, covered or not; nothing open.
                let ended_ago =
                    |ended: u64, age: u64| now_ms.checked_sub(ended).is_some_and(|a| a > age);
                let mut candidates: Vec<(u64, String)> = self
                    .rollups
                    .values()
                    .filter(|rollup| !rollup.detail_pruned)
                    .filter(|rollup| {
                        let ended = rollup.ended_at_ms;
                        (ended < *digest_floor_at_ms && ended_ago(ended, *detail_retention_ms))
                            || ended_ago(ended, *hard_ceiling_ms)
                    })
                    .filter(|rollup| {
                        self.details
                            .get(&rollup.run)
                            .is_some_and(|d| d.spans.iter().all(|s| s.outcome.is_some()))
                    })
                    .map(|rollup| (rollup.ended_at_ms, rollup.run.clone()))
                    .collect();
                candidates.sort();
                candidates.truncate(*batch as usize);
                let mut runs = Vec::new();
                let mut spans_deleted = 0;
                for (ended_at_ms, run) in candidates {
                    let detail = self.details.remove(&run).ok_or(GONE)?;
                    let rollup = self.rollups.get_mut(&run).ok_or(GONE)?;
                    rollup.detail_pruned = true;
                    // Pruned past the ceiling without digest cover: the gap is the reason.
                    if ended_at_ms >= *digest_floor_at_ms && rollup.failure_reason.is_none() {
                        rollup.failure_reason = Some(COVERAGE_GAP_REASON.to_owned());
                    }
                    appends.push(&run, "run.detail_pruned");
                    spans_deleted += detail.spans.len() as u64;
                    runs.push(run);
                }
                Ok(RunCommandOutcome::Pruned {
                    runs,
                    spans_deleted,
                })
            }
        }
    }

    /// Ends every open span of `run`, deepest first (then latest started first), as
    /// `outcome` with `reason`, and rolls the run up; `None` when nothing was open.
    fn close(
        &mut self,
        run: &str,
        outcome: SpanOutcome,
        reason: &str,
        now_ms: u64,
        appends: &mut Appends,
    ) -> Option<ClosedRun> {
        let detail = self.details.get_mut(run)?;
        let mut open: Vec<(u32, RunSeq, String)> = detail
            .spans
            .iter()
            .filter(|s| s.outcome.is_none())
            .map(|s| (s.depth, s.start_seq, s.span.clone()))
            .collect();
        if open.is_empty() {
            return None;
        }
        open.sort();
        open.reverse();
        let mut spans = Vec::new();
        for (_, _, span) in open {
            let seq = detail.seq + 1;
            let position = appends.push(run, "run.span_ended");
            let ended = detail.span_mut(&span)?;
            end(
                ended,
                outcome,
                Some(reason.to_owned()),
                &SpanUsage::default(),
                &Attributes::new(),
                now_ms,
            );
            ended.seq = RunSeq(seq);
            ended.position = position;
            detail.seq = seq;
            detail.position = position;
            spans.push(span);
        }
        let spans_now = detail.spans.clone();
        let rollup = self.roll_up_closed(run, &spans_now, appends);
        Some(ClosedRun {
            run: run.to_owned(),
            spans,
            rollup,
        })
    }
}
