//! The runs rules that come from the reference activity store (`store.ts`), each test written
//! from one of its functions and named after it: `rollupRun`, `heartbeat`, `startSpan`'s
//! primary key, `sweepOwnOrphans`. Each checks the outcome, the state read back and the
//! records appended.

use annals::runs;
use annals::runs::events::SpanStarted;
use annals::runs::{
    BillingMode, OpenRunRollup, RunCommand, RunCommandOutcome, RunEvent, RunRefusal, RunSeq,
    SpanCommand, SpanCommandOutcome, SpanKind, SpanOrigin, SpanOutcome, SpanRefusal, SpanUsage,
    run_stream,
};
use annals::testing::internals::event::DomainEvent;
use annals::testing::internals::forge::append_sealed_unapplied;
use annals::testing::internals::record::{Placement, decode_stored, encode_stored};
use annals::testing::setup::ExpectDone;
use annals::{Direction, Position, Record, Store, log::StreamVersion};

use crate::common::store;
use crate::runs::{
    T0, TestResult, assert_sound, end, end_using, end_with, head, heartbeat, patch, prune, refused,
    run_refused, start, usage,
};

fn rollup_request(run: &str, now_ms: u64) -> RunCommand {
    RunCommand::Rollup {
        run: run.into(),
        now_ms,
    }
}

fn span_heartbeat(run: &str, span: &str, now_ms: u64) -> SpanCommand {
    SpanCommand::Heartbeat {
        run: run.into(),
        span: span.into(),
        now_ms,
    }
}

/// A root with the billing mode `billing`.
fn billed_root(run: &str, span: &str, billing: Option<BillingMode>, now_ms: u64) -> SpanCommand {
    let mut command = start(run, span, None, "w1", now_ms);
    if let SpanCommand::Start { billing_mode, .. } = &mut command {
        *billing_mode = billing;
    }
    command
}

/// The kinds of the records from position `from` on.
fn kinds_from(store: &Store, from: u64) -> Result<Vec<(String, String)>, annals::Error> {
    Ok(store
        .snapshot()?
        .read_all(Position(from), Direction::Forward, usize::MAX)?
        .into_iter()
        .map(|r| (r.stream, r.kind))
        .collect())
}

fn open_rolled_up(outcome: RunCommandOutcome) -> OpenRunRollup {
    match outcome {
        RunCommandOutcome::RolledUpWhileOpen { rollup } => *rollup,
        other => panic!("expected a rollup while open, got {other:?}"),
    }
}

/// `rollupRun` on a run whose root is open: the rollup row is written with no end, outcome
/// or duration, the span count and the root's tokens and cost as they stand; no seq is taken.
#[test]
fn rollup_run_while_the_root_is_open_stores_the_rollup_so_far() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&billed_root("r1", "r1-root", Some(BillingMode::Api), T0))?
        .expect_done();
    store
        .execute(&start("r1", "r1-a", Some("r1-root"), "w1", T0 + 1))?
        .expect_done();
    let reported = usage(120, 30, Some(700));
    store
        .execute(&patch(
            "r1",
            "r1-root",
            Default::default(),
            reported,
            T0 + 2,
        ))?
        .expect_done();
    let seq_before = runs::high_water_seq(&store.snapshot()?.state(), "r1")?;
    let before = head(&store);

    let rollup = open_rolled_up(store.execute(&rollup_request("r1", T0 + 3))?);
    assert_eq!(rollup.run, "r1");
    assert_eq!(rollup.started_at_ms, T0);
    assert_eq!(rollup.span_count, 2);
    assert_eq!(
        (rollup.input_tokens, rollup.output_tokens),
        (Some(120), Some(30))
    );
    assert_eq!(rollup.cost_micro_usd, Some(700));
    assert_eq!(rollup.effective_cost_micro_usd, Some(700), "api: the cost");
    assert_eq!(rollup.billing_mode, Some(BillingMode::Api));
    assert_eq!(rollup.failure_reason, None);

    let state = store.snapshot()?.state();
    assert_eq!(runs::open_rollup(&state, "r1")?, Some(rollup));
    assert_eq!(runs::rollup(&state, "r1")?, None, "the run is not closed");
    assert_eq!(
        runs::high_water_seq(&state, "r1")?,
        seq_before,
        "a rollup takes no seq"
    );
    assert!(runs::span(&state, "r1", "r1-root")?.is_some_and(|s| s.is_open()));
    assert_eq!(
        kinds_from(&store, before)?,
        vec![("run/r1".to_owned(), "run.rolled_up_while_open".to_owned())]
    );
    assert_sound(&store)
}

/// `rollupRun`'s upsert keeps `cost_usd`, `billing_mode` and `effective_cost_usd` at their
/// first non-null value: the rollup at the root's end keeps what the request while open froze,
/// and replaces the rollup while open; the other columns are recomputed.
#[test]
fn rollup_run_freezes_costs_at_their_first_value_across_the_roots_end() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&billed_root("r1", "r1-root", Some(BillingMode::Api), T0))?
        .expect_done();
    store
        .execute(&patch(
            "r1",
            "r1-root",
            Default::default(),
            usage(10, 1, Some(100)),
            T0 + 1,
        ))?
        .expect_done();
    let first = open_rolled_up(store.execute(&rollup_request("r1", T0 + 2))?);
    assert_eq!(first.cost_micro_usd, Some(100));

    let before = head(&store);
    let ended = store.execute(&end_using(
        "r1",
        "r1-root",
        usage(50, 5, Some(900)),
        T0 + 10,
    ))?;
    let SpanCommandOutcome::Ended {
        rollup: Some(rollup),
        ..
    } = ended
    else {
        panic!("the root's end rolls the run up: {ended:?}");
    };
    assert_eq!(
        rollup.cost_micro_usd,
        Some(100),
        "frozen at the first value"
    );
    assert_eq!(rollup.effective_cost_micro_usd, Some(100));
    assert_eq!(
        (rollup.input_tokens, rollup.output_tokens),
        (Some(50), Some(5)),
        "tokens are not frozen"
    );
    assert_eq!(
        (rollup.ended_at_ms, rollup.duration_ms, rollup.outcome),
        (T0 + 10, 10, SpanOutcome::Success)
    );

    let state = store.snapshot()?.state();
    assert_eq!(runs::rollup(&state, "r1")?.as_ref(), Some(&*rollup));
    assert_eq!(
        runs::open_rollup(&state, "r1")?,
        None,
        "the run's rollup replaces the one while open"
    );
    assert_eq!(
        kinds_from(&store, before)?,
        vec![
            ("run/r1".to_owned(), "run.span_ended".to_owned()),
            ("run/r1".to_owned(), "run.rolled_up".to_owned()),
        ]
    );
    assert_sound(&store)
}

/// `rollupRun`'s upsert: `billing_mode` is first-write-wins, and an effective cost left null
/// under one classification is filled only by a later rollup under the same one (or while
/// none was frozen).
#[test]
fn rollup_run_fills_an_empty_effective_cost_only_under_the_frozen_billing_mode() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&billed_root("r1", "r1-root", None, T0))?
        .expect_done();
    let unclassified = open_rolled_up(store.execute(&rollup_request("r1", T0 + 1))?);
    assert_eq!(
        (
            unclassified.billing_mode,
            unclassified.effective_cost_micro_usd
        ),
        (None, None),
        "unclassified: unknown"
    );

    // Classified api with no cost yet: the mode freezes, the effective cost stays unknown.
    let mut classify = patch(
        "r1",
        "r1-root",
        Default::default(),
        SpanUsage::default(),
        T0 + 2,
    );
    if let SpanCommand::Patch { billing_mode, .. } = &mut classify {
        *billing_mode = Some(BillingMode::Api);
    }
    store.execute(&classify)?.expect_done();
    let api = open_rolled_up(store.execute(&rollup_request("r1", T0 + 3))?);
    assert_eq!(
        (api.billing_mode, api.effective_cost_micro_usd),
        (Some(BillingMode::Api), None)
    );

    // Reclassified subscription: its $0 must not land on the api-classified row.
    let mut reclassify = patch(
        "r1",
        "r1-root",
        Default::default(),
        SpanUsage::default(),
        T0 + 4,
    );
    if let SpanCommand::Patch { billing_mode, .. } = &mut reclassify {
        *billing_mode = Some(BillingMode::Subscription);
    }
    store.execute(&reclassify)?.expect_done();
    let kept = open_rolled_up(store.execute(&rollup_request("r1", T0 + 5))?);
    assert_eq!(
        (kept.billing_mode, kept.effective_cost_micro_usd),
        (Some(BillingMode::Api), None)
    );
    assert_eq!(
        runs::open_rollup(&store.snapshot()?.state(), "r1")?,
        Some(kept)
    );
    assert_sound(&store)
}

/// `rollupRun` on a run whose root ended recomputes the rollup row (the failure reason of a
/// child that ended later included) and writes it again.
#[test]
fn rollup_run_of_a_closed_run_writes_its_rollup_again() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&billed_root("r1", "r1-root", None, T0))?
        .expect_done();
    store
        .execute(&start("r1", "r1-a", Some("r1-root"), "w1", T0 + 1))?
        .expect_done();
    store
        .execute(&end("r1", "r1-root", SpanOutcome::Success, T0 + 5))?
        .expect_done();
    let before = head(&store);
    let outcome = store.execute(&rollup_request("r1", T0 + 6))?;
    let RunCommandOutcome::RolledUp { rollup } = outcome else {
        panic!("expected a rollup of the closed run, got {outcome:?}");
    };
    assert_eq!(
        (rollup.outcome, rollup.ended_at_ms, rollup.span_count),
        (SpanOutcome::Success, T0 + 5, 2)
    );
    assert_eq!(
        runs::rollup(&store.snapshot()?.state(), "r1")?.as_ref(),
        Some(&*rollup)
    );
    assert_eq!(
        kinds_from(&store, before)?,
        vec![("run/r1".to_owned(), "run.rolled_up".to_owned())]
    );

    // The open child ends in error later: its end rolls the run up with the reason.
    store
        .execute(&end_with(
            "r1",
            "r1-a",
            SpanOutcome::Error,
            Some("tool failed"),
            SpanUsage::default(),
            T0 + 8,
        ))?
        .expect_done();
    let again = store.execute(&rollup_request("r1", T0 + 9))?;
    let RunCommandOutcome::RolledUp { rollup } = again else {
        panic!("expected a rollup, got {again:?}");
    };
    assert_eq!(rollup.failure_reason.as_deref(), Some("tool failed"));
    assert_sound(&store)
}

/// `rollupRun` of a run without spans writes nothing (`if (spans.length === 0) return`): an
/// unknown run is refused `run_missing`, a pruned one `detail_pruned`.
#[test]
fn rollup_run_without_spans_writes_nothing() -> TestResult {
    let (_dir, store) = store();
    let before = head(&store);
    assert_eq!(
        store.execute(&rollup_request("nowhere", T0))?,
        run_refused(RunRefusal::RunMissing)
    );
    assert_eq!(head(&store), before);

    store
        .execute(&start("r1", "r1-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "r1-root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let pruned = store.execute(&prune(0, 0, 0, 10, T0 + 100))?;
    assert!(matches!(pruned, RunCommandOutcome::Pruned { ref runs, .. } if runs == &["r1"]));
    let rollup = runs::rollup(&store.snapshot()?.state(), "r1")?;
    let before = head(&store);
    assert_eq!(
        store.execute(&rollup_request("r1", T0 + 101))?,
        run_refused(RunRefusal::DetailPruned)
    );
    assert_eq!(head(&store), before, "a refusal appends nothing");
    assert_eq!(runs::rollup(&store.snapshot()?.state(), "r1")?, rollup);
    assert_sound(&store)
}

/// `rollupRun`, recorded: replay from the log rebuilds the rollup while open, byte for byte.
#[test]
fn rollup_run_while_open_is_rebuilt_by_replay() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&billed_root(
            "r1",
            "r1-root",
            Some(BillingMode::Subscription),
            T0,
        ))?
        .expect_done();
    store.execute(&rollup_request("r1", T0 + 1))?.expect_done();
    let live = runs::state_json(&store.snapshot()?.state())?;
    annals::maintenance::Rebuild::of(&store).run(Some("runs"))?;
    assert_eq!(runs::state_json(&store.snapshot()?.state())?, live);
    assert_eq!(
        live["open_rollups"][0]["effective_cost_micro_usd"], 0,
        "subscription: $0"
    );
    assert_sound(&store)
}

/// `heartbeat(spanId)`: any open span, not only a root, records its last heartbeat; the
/// reference does not change-log it, so no seq is taken.
#[test]
fn heartbeat_records_the_last_heartbeat_of_any_open_span() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "r1-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "r1-a", Some("r1-root"), "w1", T0 + 1))?
        .expect_done();
    let seq = runs::high_water_seq(&store.snapshot()?.state(), "r1")?;
    let before = head(&store);

    assert_eq!(
        store.execute(&span_heartbeat("r1", "r1-a", T0 + 50))?,
        SpanCommandOutcome::HeartbeatRecorded
    );
    let state = store.snapshot()?.state();
    let child = runs::span(&state, "r1", "r1-a")?.expect("child");
    assert_eq!(child.last_heartbeat_at_ms, Some(T0 + 50));
    let root = runs::span(&state, "r1", "r1-root")?.expect("root");
    assert_eq!(root.last_heartbeat_at_ms, Some(T0), "the root's is its own");
    assert_eq!(runs::high_water_seq(&state, "r1")?, seq);
    assert_eq!(
        kinds_from(&store, before)?,
        vec![("run/r1".to_owned(), "run.span_heartbeat".to_owned())]
    );

    // The root heartbeats by its span id too.
    store
        .execute(&span_heartbeat("r1", "r1-root", T0 + 60))?
        .expect_done();
    let root = runs::span(&store.snapshot()?.state(), "r1", "r1-root")?.expect("root");
    assert_eq!(root.last_heartbeat_at_ms, Some(T0 + 60));
    assert_sound(&store)
}

/// `heartbeat`'s `WHERE span_id = ? AND outcome IS NULL`: an ended or unknown span's
/// heartbeat changes nothing (refused, appending nothing) — a child still open in a closed run
/// does heartbeat.
#[test]
fn heartbeat_of_an_ended_or_unknown_span_writes_nothing() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "r1-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "r1-a", Some("r1-root"), "w1", T0 + 1))?
        .expect_done();
    store
        .execute(&end("r1", "r1-root", SpanOutcome::Success, T0 + 2))?
        .expect_done();
    let before = head(&store);
    assert_eq!(
        store.execute(&span_heartbeat("r1", "r1-root", T0 + 3))?,
        refused(SpanRefusal::SpanEnded)
    );
    assert_eq!(
        store.execute(&span_heartbeat("r1", "r1-nobody", T0 + 3))?,
        refused(SpanRefusal::SpanMissing)
    );
    assert_eq!(head(&store), before);
    let root = runs::span(&store.snapshot()?.state(), "r1", "r1-root")?.expect("root");
    assert_eq!(root.last_heartbeat_at_ms, Some(T0));

    assert_eq!(
        store.execute(&span_heartbeat("r1", "r1-a", T0 + 4))?,
        SpanCommandOutcome::HeartbeatRecorded,
        "the child is open though its run is closed"
    );
    assert_eq!(head(&store), before + 1);
    assert_sound(&store)
}

/// `sweepStale` judges a run on its ROOT's heartbeat age: a child's heartbeat does not keep
/// a run whose root went silent, the root's own heartbeat (by span id) does.
#[test]
fn heartbeat_of_a_child_does_not_keep_a_silent_root_from_sweep_stale() -> TestResult {
    let (_dir, store) = store();
    for run in ["r1", "r2"] {
        let root = format!("{run}-root");
        store
            .execute(&start(run, &root, None, "w1", T0))?
            .expect_done();
        store
            .execute(&start(run, &format!("{run}-a"), Some(&root), "w1", T0))?
            .expect_done();
    }
    store
        .execute(&span_heartbeat("r1", "r1-a", T0 + 90))?
        .expect_done();
    store
        .execute(&span_heartbeat("r2", "r2-root", T0 + 90))?
        .expect_done();
    let sweep = RunCommand::SweepStale {
        stale_after_ms: 50,
        sweeper: None,
        now_ms: T0 + 100,
    };
    let outcome = store.execute(&sweep)?;
    let RunCommandOutcome::Closed { runs: closed } = outcome else {
        panic!("expected runs closed, got {outcome:?}");
    };
    let closed: Vec<&str> = closed.iter().map(|r| r.run.as_str()).collect();
    assert_eq!(closed, ["r1"]);
    let state = store.snapshot()?.state();
    assert!(runs::span(&state, "r2", "r2-root")?.is_some_and(|s| s.is_open()));
    assert_eq!(
        runs::span(&state, "r1", "r1-a")?.and_then(|s| s.outcome_reason),
        Some(runs::STALE_REASON.to_owned())
    );
    assert_sound(&store)
}

/// `startSpan`'s plain INSERT into a table whose primary key is `span_id`: a span id another
/// run holds fails the insert and writes nothing. Here the refusal is a value.
#[test]
fn start_span_refuses_a_span_id_another_run_holds() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "shared", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "tool", Some("shared"), "w1", T0 + 1))?
        .expect_done();
    let before = head(&store);
    assert_eq!(
        store.execute(&start("r2", "shared", None, "w1", T0 + 2))?,
        refused(SpanRefusal::SpanInAnotherRun)
    );
    store
        .execute(&start("r2", "r2-root", None, "w1", T0 + 3))?
        .expect_done();
    let after_root = head(&store);
    assert_eq!(
        store.execute(&start("r2", "tool", Some("r2-root"), "w1", T0 + 4))?,
        refused(SpanRefusal::SpanInAnotherRun),
        "children's ids too"
    );
    assert_eq!(head(&store), after_root);
    assert_eq!(after_root, before + 1, "only r2's own root was written");
    let state = store.snapshot()?.state();
    assert_eq!(runs::runs_of_span(&state, "shared")?, ["r1"]);
    assert_eq!(runs::span(&state, "r2", "shared")?, None);
    assert_eq!(runs::spans(&state, "r2")?.len(), 1);
    // The same id again in its own run is the same key: refused as it was.
    assert_eq!(
        store.execute(&start("r1", "shared", None, "w1", T0 + 5))?,
        refused(SpanRefusal::SpanExists)
    );
    assert_sound(&store)
}

/// `prune` deletes a run's `activity_spans` rows, which frees their primary keys: a pruned
/// run's span id starts a span in another run.
#[test]
fn start_span_takes_a_pruned_runs_span_id_again() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "shared", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "shared", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    store.execute(&prune(0, 0, 0, 10, T0 + 100))?.expect_done();
    assert!(runs::runs_of_span(&store.snapshot()?.state(), "shared")?.is_empty());
    let outcome = store.execute(&start("r2", "shared", None, "w1", T0 + 101))?;
    assert_eq!(
        outcome,
        SpanCommandOutcome::Started {
            seq: RunSeq(1),
            depth: 0
        }
    );
    assert_eq!(
        runs::runs_of_span(&store.snapshot()?.state(), "shared")?,
        ["r2"]
    );
    assert_sound(&store)
}

/// The start of `span` as the root of `run`, sealed as the record after `previous`: what a
/// log written before span ids were unique across runs holds.
fn sealed_root_start(previous: &Record, run: &str, span: &str) -> Record {
    let event = RunEvent::SpanStarted(SpanStarted {
        run: run.into(),
        span: span.into(),
        parent: None,
        name: "old".into(),
        kind: SpanKind::Turn,
        origin: SpanOrigin::Session,
        session_id: None,
        job_name: None,
        attributes: Default::default(),
        billing_mode: None,
        writer: "w1".into(),
        depth: 0,
        seq: 1,
    })
    .to_new_event(previous.at_ms + 1);
    let position = Position(previous.position.0 + 1);
    let stream = run_stream(run);
    let placement = Placement {
        stream: &stream,
        position,
        version: StreamVersion(0),
        prev: previous.hash,
    };
    let mut stored = Vec::new();
    encode_stored(&mut stored, &event, placement).unwrap();
    decode_stored(&stored, position).unwrap()
}

/// A log from before the rule (`startSpan`'s primary key), holding one span id in two runs,
/// still replays: both spans are kept, the index names both runs, replay rebuilds the same
/// tables, and a new start of that id is refused.
#[test]
fn start_span_of_a_log_written_before_the_rule_replays_unchanged() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("old.redb");
    {
        let store = Store::open(&path)?;
        store
            .execute(&start("r1", "shared", None, "w1", T0))?
            .expect_done();
    }
    let previous = {
        let store = Store::open_read_only(&path)?;
        store
            .snapshot()?
            .get(Position(0))?
            .expect("the first start")
    };
    append_sealed_unapplied(&path, &[sealed_root_start(&previous, "r2", "shared")])?;
    let store = Store::open(&path)?;
    annals::maintenance::Rebuild::of(&store).run(Some("runs"))?;
    let state = store.snapshot()?.state();
    assert_eq!(runs::runs_of_span(&state, "shared")?, ["r1", "r2"]);
    assert!(runs::span(&state, "r2", "shared")?.is_some());
    let rebuilt = runs::state_json(&state)?;
    annals::maintenance::Rebuild::of(&store).run(Some("runs"))?;
    assert_eq!(runs::state_json(&store.snapshot()?.state())?, rebuilt);
    assert_eq!(
        store.execute(&start("r3", "shared", None, "w1", T0 + 5))?,
        refused(SpanRefusal::SpanInAnotherRun)
    );
    assert_sound(&store)
}

/// `sweepOwnOrphans` closes the leftover open spans as `interrupted` with the reason
/// "server restarted", and rolls their runs up.
#[test]
fn sweep_own_orphans_closes_with_the_reason_server_restarted() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "r1-root", None, "gone", T0))?
        .expect_done();
    store
        .execute(&start("r1", "r1-a", Some("r1-root"), "gone", T0 + 1))?
        .expect_done();
    let before = head(&store);
    let outcome = store.execute(&RunCommand::SweepOrphans {
        writer: "gone".into(),
        now_ms: T0 + 10,
    })?;
    let RunCommandOutcome::Closed { runs: closed } = outcome else {
        panic!("expected runs closed, got {outcome:?}");
    };
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0].spans, ["r1-a", "r1-root"]);
    let state = store.snapshot()?.state();
    for span in ["r1-root", "r1-a"] {
        let span = runs::span(&state, "r1", span)?.expect("span");
        assert_eq!(span.outcome, Some(SpanOutcome::Interrupted));
        assert_eq!(span.outcome_reason.as_deref(), Some("server restarted"));
    }
    assert_eq!(
        runs::rollup(&state, "r1")?.and_then(|r| r.failure_reason),
        Some("interrupted".to_owned())
    );
    assert_eq!(
        kinds_from(&store, before)?,
        vec![
            ("run/r1".to_owned(), "run.span_ended".to_owned()),
            ("run/r1".to_owned(), "run.span_ended".to_owned()),
            ("run/r1".to_owned(), "run.rolled_up".to_owned()),
        ]
    );
    assert_eq!(runs::ORPHAN_REASON, "server restarted");
    // The run's root heartbeat command still names the run.
    assert_eq!(
        store.execute(&heartbeat("r1", T0 + 11))?,
        run_refused(RunRefusal::RunClosed)
    );
    assert_sound(&store)
}
