//! The model's runs: each run's spans in start order, its events and its seq in a
//! `BTreeMap` by run, and the rollups beside them, moved by the rules as the runs module doc
//! and the reference activity store (`store.ts`) state them. It never calls the runs'
//! `decide`, `apply`, `rollup::compute` or the span's own `patch` and `end`: a rule the store
//! gets wrong must not be wrong here the same way.

mod spans;
mod whole;

use std::collections::BTreeMap;

use super::Op;
use crate::projection::table::TableSource;
use crate::runs::decide::{RunCommand, RunCommandOutcome, SpanCommand, SpanCommandOutcome};
use crate::runs::events::{Attributes, BillingMode, SpanKind, SpanOrigin, SpanOutcome, SpanUsage};
use crate::runs::query::{
    self, FrozenCosts, OpenRunRollup, Run, RunRollup, RunSeq, RunSnapshot, Span, SpanEvent,
};
use crate::store::WriteSession;

/// Runs: three valid ones none of which [`super::random_domain_command`] uses, then an
/// empty one (invalid).
const RUNS: [&str; 4] = ["mr1", "mr2", "mr3", ""];
/// Span ids (the empty one is invalid): unique across the runs whose detail is kept, so a
/// run reusing one another run holds is refused.
const SPANS: [&str; 5] = ["s0", "s1", "s2", "s3", ""];
/// Writers (the empty one is invalid).
const WRITERS: [&str; 3] = ["w1", "w2", ""];
/// Billing modes as given.
const BILLING: [Option<BillingMode>; 3] = [
    None,
    Some(BillingMode::Subscription),
    Some(BillingMode::Api),
];
/// Span kinds.
const KINDS: [SpanKind; 4] = [
    SpanKind::Turn,
    SpanKind::Tool,
    SpanKind::Subagent,
    SpanKind::Cron,
];
/// The most bytes a span event's payload keeps (the runs' `EVENT_PAYLOAD_BYTES_MAX`,
/// restated).
const PAYLOAD_BYTES_MAX: u32 = 16 * 1024;
/// The reason on spans an orphan sweep closes.
const ORPHAN_REASON: &str = "server restarted";
/// The reason on spans a stale sweep closes.
const STALE_REASON: &str = "writer went silent";
/// The failure reason of a pruned run no digest covered.
const COVERAGE_GAP_REASON: &str = "digest coverage gap";
/// The failure reason of a run whose root was interrupted when no span said why it failed
/// (the runs' `INTERRUPTED_REASON`, restated).
const INTERRUPTED_REASON: &str = "interrupted";

/// One runs command, of either command type.
#[derive(Clone, Debug)]
pub(super) enum Command {
    /// A command on a span.
    Span(SpanCommand),
    /// A command on whole runs.
    Run(RunCommand),
}

/// What a runs command got, of either outcome type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Done {
    /// A [`SpanCommand`]'s.
    Span(SpanCommandOutcome),
    /// A [`RunCommand`]'s.
    Run(RunCommandOutcome),
}

/// The runs as the query functions show them after a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// For each valid run: its detail (run row, spans, events, seq, cursor), its rollup and
    /// its rollup while open.
    pub runs: Vec<(
        Option<RunSnapshot>,
        Option<RunRollup>,
        Option<OpenRunRollup>,
    )>,
    /// The runs with an open root, latest start first.
    pub open_roots: Vec<String>,
}

/// A runs command's outcome and the runs it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The outcome.
    pub done: Done,
    /// The runs after it.
    pub view: View,
}

/// The runs command `op` states at `now_ms`, if it is one.
pub(super) fn command(op: &Op, now_ms: u64) -> Option<Command> {
    let Op::Run {
        action,
        run,
        span,
        parent,
        writer,
        outcome,
        usage,
        number,
        other,
    } = *op
    else {
        return None;
    };
    let run = super::pick(&RUNS, run).to_owned();
    let span = super::pick(&SPANS, span).to_owned();
    let writer = super::pick(&WRITERS, writer).to_owned();
    let choice = outcome;
    let outcome = SpanOutcome::ALL[usize::from(choice) % SpanOutcome::ALL.len()];
    let billing = |n: u8| BILLING[usize::from(n) % BILLING.len()];
    // Two keys, so that a merge that replaced would lose one.
    let attributes = |n: u8| {
        let value = format!("v{}", n % 4);
        match n % 4 {
            0 => Attributes::new(),
            1 => Attributes::from([("k".to_owned(), value)]),
            2 => Attributes::from([("a".to_owned(), value)]),
            _ => Attributes::from([("a".to_owned(), value.clone()), ("k".to_owned(), value)]),
        }
    };
    // Each set bit of the mask reports one field, each its own value.
    let reported = |mask: Option<u8>| {
        let mask = mask.unwrap_or(0);
        let value = |bit: u8| (mask & (1 << bit) != 0).then(|| u64::from(number) + u64::from(bit));
        SpanUsage {
            input_tokens: value(0),
            output_tokens: value(1),
            cache_read_tokens: value(2),
            cache_creation_tokens: value(3),
            cost_micro_usd: value(4),
            model: (mask & 0b10_0000 != 0).then(|| format!("m{}", mask >> 6)),
        }
    };
    let reason = match other % 4 {
        0 => None,
        1 => Some("why".to_owned()),
        2 => Some("because".to_owned()),
        _ => Some(String::new()),
    };
    Some(Command::Span(match action % 14 {
        0..=2 => SpanCommand::Start {
            run,
            span,
            // A root a third of the time, so that runs begin.
            parent: (!action.is_multiple_of(12)).then(|| super::pick(&SPANS, parent).to_owned()),
            name: if number % 16 == 15 {
                String::new()
            } else {
                "n".into()
            },
            kind: KINDS[usize::from(choice) % KINDS.len()],
            origin: if number % 2 == 1 {
                SpanOrigin::Cron
            } else {
                SpanOrigin::Session
            },
            session_id: (number & 2 != 0).then(|| "session".into()),
            job_name: (number & 4 != 0).then(|| "job".into()),
            attributes: attributes(number >> 3),
            billing_mode: billing(other),
            writer,
            now_ms,
        },
        3 => SpanCommand::Patch {
            run,
            span,
            attributes: attributes(parent),
            usage: reported(usage),
            wait_until_ms: (other % 2 == 1).then(|| now_ms + u64::from(other)),
            billing_mode: billing(other / 2),
            now_ms,
        },
        4 | 5 => SpanCommand::End {
            run,
            span,
            outcome,
            reason,
            usage: reported(usage),
            attributes: attributes(parent),
            now_ms,
        },
        6 => SpanCommand::AppendEvent {
            run,
            span,
            event_type: if number % 16 == 15 {
                String::new()
            } else {
                "e".into()
            },
            // Two-byte characters, so that a cap can fall inside one; now and then one over
            // the 16 KiB ceiling, cut inside a character.
            payload: if number >= 250 {
                format!("x{}", "é".repeat(8192))
            } else {
                format!(
                    "{}{}",
                    "é".repeat(usize::from(number % 8)),
                    "x".repeat(usize::from(number % 3))
                )
            },
            payload_bytes_max: (!other.is_multiple_of(4)).then(|| u32::from(other % 24)),
            now_ms,
        },
        13 => SpanCommand::Heartbeat { run, span, now_ms },
        action => {
            return Some(Command::Run(match action {
                7 => RunCommand::Heartbeat { run, now_ms },
                12 => RunCommand::Rollup { run, now_ms },
                8 => RunCommand::CascadeClose {
                    run,
                    outcome,
                    reason: reason.unwrap_or_else(|| "stop".into()),
                    now_ms,
                },
                9 => RunCommand::SweepOrphans { writer, now_ms },
                10 => RunCommand::SweepStale {
                    stale_after_ms: u64::from(number),
                    sweeper: (!other.is_multiple_of(3)).then_some(writer),
                    now_ms,
                },
                _ => RunCommand::Prune {
                    digest_floor_at_ms: now_ms.saturating_sub(u64::from(number)),
                    detail_retention_ms: u64::from(other),
                    hard_ceiling_ms: u64::from(parent) * 8,
                    batch: u32::from(choice % 4),
                    now_ms,
                },
            }));
        }
    }))
}

/// Runs `command` in `session`, and reads the runs back through their queries.
pub(super) fn run_on_store(
    command: &Command,
    session: &mut WriteSession<'_>,
) -> crate::error::Result<Seen> {
    let done = match command {
        Command::Span(command) => Done::Span(session.execute(command)?),
        Command::Run(command) => Done::Run(session.execute(command)?),
    };
    let view = store_view(session.state())?;
    Ok(Seen { done, view })
}

/// The runs as the store's query functions read them.
fn store_view(state: &dyn TableSource) -> crate::error::Result<View> {
    let mut runs = Vec::new();
    for run in &RUNS[..3] {
        runs.push((
            query::snapshot(state, run)?,
            query::rollup(state, run)?,
            query::open_rollup(state, run)?,
        ));
    }
    let open_roots = query::open_roots(state)?
        .into_iter()
        .map(|root| root.run)
        .collect();
    Ok(View { runs, open_roots })
}

/// A run whose detail the model keeps.
#[derive(Clone, Debug)]
struct Detail {
    /// Its spans, in start order; the first is its root. Never empty: a detail is made by
    /// its root's start and removed whole by a prune, so indexing the root cannot fail.
    spans: Vec<Span>,
    /// Its span events, in seq order.
    events: Vec<SpanEvent>,
    /// Its latest seq.
    seq: u64,
    /// The position of the record of its latest seq.
    position: u64,
}

impl Detail {
    fn root(&self) -> &Span {
        &self.spans[0]
    }

    fn closed(&self) -> bool {
        self.root().outcome.is_some()
    }

    fn span_mut(&mut self, span: &str) -> Option<&mut Span> {
        self.spans.iter_mut().find(|s| s.span == span)
    }
}

/// The model's runs.
#[derive(Clone, Debug, Default)]
pub(super) struct Runs {
    /// Runs with their detail.
    details: BTreeMap<String, Detail>,
    /// Rollups of runs whose root ended, pruned detail or not.
    rollups: BTreeMap<String, RunRollup>,
    /// Rollups requested while the run's root was open, until it ends.
    open_rollups: BTreeMap<String, OpenRunRollup>,
}

/// What the model predicts a command appends: (stream, kind) per record, in order.
pub(super) type Records = Vec<(String, &'static str)>;

/// The records of one command, and the positions they take from `next` on.
struct Appends {
    next: u64,
    records: Records,
}

impl Appends {
    /// Adds a record of `kind` to `run`'s stream; its position.
    fn push(&mut self, run: &str, kind: &'static str) -> u64 {
        let position = self.next + self.records.len() as u64;
        self.records.push((format!("run/{run}"), kind));
        position
    }
}

impl Runs {
    /// What `command` must do when the next record goes to position `next`: the field
    /// named when it is invalid, else its outcome and its records.
    pub(super) fn run(&mut self, command: &Command, next: u64) -> Result<(Done, Records), Invalid> {
        let mut appends = Appends {
            next,
            records: Records::new(),
        };
        let done = match command {
            Command::Span(command) => Done::Span(self.span(command, &mut appends)?),
            Command::Run(command) => Done::Run(self.whole(command, &mut appends)?),
        };
        Ok((done, appends.records))
    }

    /// The cost fields a new rollup of `run` keeps: its rollup's, else its rollup while open.
    fn frozen(&self, run: &str) -> Option<FrozenCosts> {
        let costs = |cost, effective, billing_mode| FrozenCosts {
            cost_micro_usd: cost,
            effective_cost_micro_usd: effective,
            billing_mode,
        };
        match (self.rollups.get(run), self.open_rollups.get(run)) {
            (Some(r), _) => Some(costs(
                r.cost_micro_usd,
                r.effective_cost_micro_usd,
                r.billing_mode,
            )),
            (None, Some(r)) => Some(costs(
                r.cost_micro_usd,
                r.effective_cost_micro_usd,
                r.billing_mode,
            )),
            (None, None) => None,
        }
    }

    /// Rolls the closed `run` up from `spans` (its root ended) and stores it in place of any
    /// rollup while open; the rollup.
    fn roll_up_closed(&mut self, run: &str, spans: &[Span], appends: &mut Appends) -> RunRollup {
        let rollup = rollup(spans, self.frozen(run));
        appends.push(run, "run.rolled_up");
        self.open_rollups.remove(run);
        self.rollups.insert(run.to_owned(), rollup.clone());
        rollup
    }

    /// The runs as the model sees them.
    pub(super) fn view(&self) -> View {
        let runs = RUNS[..3]
            .iter()
            .map(|run| {
                let snapshot = self.details.get(*run).map(|detail| RunSnapshot {
                    run: Run {
                        run: (*run).to_owned(),
                        root_span: detail.root().span.clone(),
                        high_water_seq: RunSeq(detail.seq),
                        span_count: detail.spans.len() as u64,
                        open_span_count: detail.spans.iter().filter(|s| s.outcome.is_none()).count()
                            as u64,
                        closed: detail.closed(),
                    },
                    spans: detail.spans.clone(),
                    events: detail.events.clone(),
                    high_water_seq: RunSeq(detail.seq),
                    position: Some(detail.position),
                });
                (
                    snapshot,
                    self.rollups.get(*run).cloned(),
                    self.open_rollups.get(*run).cloned(),
                )
            })
            .collect();
        let mut open: Vec<(u64, &String)> = self
            .details
            .iter()
            .filter(|(_, detail)| !detail.closed())
            .map(|(run, detail)| (detail.root().started_at_ms, run))
            .collect();
        open.sort();
        View {
            runs,
            open_roots: open.into_iter().rev().map(|(_, run)| run.clone()).collect(),
        }
    }
}

/// The field an invalid command names.
pub(super) type Invalid = &'static str;

/// What the model answers if its own state lost something it holds (never, unless the
/// model is wrong): no field of the store's is called that, so the comparison fails.
const GONE: Invalid = "(the model lost a run or span)";

/// Refuses an empty `value` as `field`.
fn given(value: &str, field: Invalid) -> Result<(), Invalid> {
    if value.is_empty() { Err(field) } else { Ok(()) }
}

/// Merges attributes and reported usage into `span`: each reported field replaces.
fn merge(span: &mut Span, attributes: &Attributes, usage: &SpanUsage) {
    for (key, value) in attributes {
        span.attributes.insert(key.clone(), value.clone());
    }
    let u = &mut span.usage;
    let take = |slot: &mut Option<u64>, given: Option<u64>| {
        if given.is_some() {
            *slot = given;
        }
    };
    take(&mut u.input_tokens, usage.input_tokens);
    take(&mut u.output_tokens, usage.output_tokens);
    take(&mut u.cache_read_tokens, usage.cache_read_tokens);
    take(&mut u.cache_creation_tokens, usage.cache_creation_tokens);
    take(&mut u.cost_micro_usd, usage.cost_micro_usd);
    if usage.model.is_some() {
        u.model.clone_from(&usage.model);
    }
}

/// Ends `span` at `now_ms`: the final attributes and usage merged, the outcome and reason
/// written.
fn end(
    span: &mut Span,
    outcome: SpanOutcome,
    reason: Option<String>,
    usage: &SpanUsage,
    attributes: &Attributes,
    now_ms: u64,
) {
    merge(span, attributes, usage);
    span.outcome = Some(outcome);
    span.outcome_reason = reason;
    span.ended_at_ms = Some(now_ms);
}

/// The rollup of a run whose root ended, from its spans (start order, root first: a
/// [`Detail`]'s, never empty) and the cost fields of the rollup before it.
fn rollup(spans: &[Span], frozen: Option<FrozenCosts>) -> RunRollup {
    let root = &spans[0];
    let so_far = so_far(spans, frozen);
    let outcome = root.outcome.unwrap_or(SpanOutcome::Success);
    let ended_at_ms = root.ended_at_ms.unwrap_or(root.started_at_ms);
    RunRollup {
        run: so_far.run,
        origin: so_far.origin,
        name: so_far.name,
        session_id: so_far.session_id,
        job_name: so_far.job_name,
        started_at_ms: so_far.started_at_ms,
        ended_at_ms,
        outcome,
        duration_ms: ended_at_ms.saturating_sub(root.started_at_ms),
        span_count: so_far.span_count,
        input_tokens: so_far.input_tokens,
        output_tokens: so_far.output_tokens,
        cache_read_tokens: so_far.cache_read_tokens,
        cache_creation_tokens: so_far.cache_creation_tokens,
        cost_micro_usd: so_far.cost_micro_usd,
        effective_cost_micro_usd: so_far.effective_cost_micro_usd,
        billing_mode: so_far.billing_mode,
        failure_reason: so_far.failure_reason,
        detail_pruned: false,
    }
}

/// The rollup of a run as its spans stand (start order, root first), its root open or
/// ended, and the cost fields of the rollup before it: what `rollupRun` writes.
fn so_far(spans: &[Span], frozen: Option<FrozenCosts>) -> OpenRunRollup {
    let tally = spans.iter().fold(Tally::default(), Tally::count);
    let root = spans[0].clone();
    let [input, output, cache_read, cache_creation, cost] = tally.figures;
    let reckoned = FrozenCosts {
        cost_micro_usd: cost,
        effective_cost_micro_usd: root.billing_mode.and_then(|mode| match mode {
            BillingMode::Api => cost,
            BillingMode::Subscription => Some(0),
        }),
        billing_mode: root.billing_mode,
    };
    let costs = frozen.map_or(reckoned, |earlier| kept(earlier, reckoned));
    let failure_reason = match (tally.failure_reason, root.outcome) {
        (Some(reason), _) => Some(reason),
        (None, Some(SpanOutcome::Interrupted)) => Some(INTERRUPTED_REASON.to_owned()),
        (None, _) => None,
    };
    OpenRunRollup {
        span_count: tally.span_count,
        failure_reason,
        input_tokens: input,
        run: root.run,
        output_tokens: output,
        origin: root.origin,
        cache_read_tokens: cache_read,
        name: root.name,
        cache_creation_tokens: cache_creation,
        session_id: root.session_id,
        cost_micro_usd: costs.cost_micro_usd,
        job_name: root.job_name,
        effective_cost_micro_usd: costs.effective_cost_micro_usd,
        started_at_ms: root.started_at_ms,
        billing_mode: costs.billing_mode,
    }
}

/// What one pass over a run's spans, root first, gathers for its rollup.
#[derive(Default)]
struct Tally {
    /// The spans passed.
    span_count: u64,
    /// Input, output, cache-read and cache-creation tokens, then the cost in micro-USD: the
    /// root's figure where it reports one; where it reports none, for a cron run the
    /// saturating sum of what its children report (`None` until one does), else `None`.
    figures: [Option<u64>; 5],
    /// Which of the figures sum the children's: those a cron root leaves unreported.
    summed: [bool; 5],
    /// The first reason given by a span that ended in error or timeout.
    failure_reason: Option<String>,
}

impl Tally {
    /// The tally with `span`, the next in start order, counted in.
    fn count(mut self, span: &Span) -> Self {
        let usage = &span.usage;
        let reported = [
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_creation_tokens,
            usage.cost_micro_usd,
        ];
        if self.span_count == 0 {
            self.figures = reported;
            self.summed = reported.map(|r| r.is_none() && span.origin == SpanOrigin::Cron);
        } else {
            let slots = self.figures.iter_mut().zip(self.summed);
            for ((figure, summed), value) in slots.zip(reported) {
                if let (true, Some(value)) = (summed, value) {
                    *figure = Some(figure.map_or(value, |sum| sum.saturating_add(value)));
                }
            }
        }
        let failed = matches!(
            span.outcome,
            Some(SpanOutcome::Error | SpanOutcome::Timeout)
        );
        if failed && self.failure_reason.is_none() {
            self.failure_reason.clone_from(&span.outcome_reason);
        }
        self.span_count += 1;
        self
    }
}

/// The cost fields a rollup records over the `earlier` rollup's, from the `reckoned` ones:
/// each field keeps its first value, and an effective cost still empty is filled only if the
/// billing mode already recorded (if any) is the one it was reckoned under.
fn kept(earlier: FrozenCosts, reckoned: FrozenCosts) -> FrozenCosts {
    let classified_alike = earlier
        .billing_mode
        .is_none_or(|mode| reckoned.billing_mode == Some(mode));
    let fillable = reckoned
        .effective_cost_micro_usd
        .filter(|_| classified_alike);
    FrozenCosts {
        cost_micro_usd: earlier.cost_micro_usd.or(reckoned.cost_micro_usd),
        effective_cost_micro_usd: earlier.effective_cost_micro_usd.or(fillable),
        billing_mode: earlier.billing_mode.or(reckoned.billing_mode),
    }
}
