//! Tests of the runs projection's rules.

use annals::runs;
use annals::runs::{
    Attributes, BillingMode, ChangeKind, EVENT_PAYLOAD_BYTES_MAX, RunCommand, RunCommandOutcome,
    RunRefusal, RunSeq, SpanCommand, SpanCommandOutcome, SpanKind, SpanOrigin, SpanOutcome,
    SpanRefusal, SpanUsage,
};
use annals::testing::setup::ExpectDone;
use annals::{
    Direction, Error, ExpectedVersion, NewEvent, Store, error::StoreError, log::StreamVersion,
};

use crate::common::store;

pub(crate) type TestResult = Result<(), Box<dyn std::error::Error>>;

pub(crate) const T0: u64 = 1_700_000_000_000;

pub(crate) fn start(
    run: &str,
    span: &str,
    parent: Option<&str>,
    writer: &str,
    now_ms: u64,
) -> SpanCommand {
    SpanCommand::Start {
        run: run.into(),
        span: span.into(),
        parent: parent.map(Into::into),
        name: format!("{span} work"),
        kind: if parent.is_none() {
            SpanKind::Turn
        } else {
            SpanKind::Tool
        },
        origin: SpanOrigin::Session,
        session_id: Some("session-1".into()),
        job_name: None,
        attributes: Attributes::new(),
        billing_mode: None,
        writer: writer.into(),
        now_ms,
    }
}

pub(crate) fn cron_root(
    run: &str,
    span: &str,
    billing: Option<BillingMode>,
    now_ms: u64,
) -> SpanCommand {
    let mut command = start(run, span, None, "cron-wrapper", now_ms);
    if let SpanCommand::Start {
        kind,
        origin,
        job_name,
        billing_mode,
        ..
    } = &mut command
    {
        (*kind, *origin) = (SpanKind::Cron, SpanOrigin::Cron);
        *job_name = Some("nightly".into());
        *billing_mode = billing;
    }
    command
}

/// An api-billed cron run `run` whose root has the open children `children`.
fn api_cron_run(store: &Store, run: &str, children: &[&str]) -> TestResult {
    store
        .execute(&cron_root(run, "root", Some(BillingMode::Api), T0))?
        .expect_done();
    for child in children {
        store
            .execute(&start(run, child, Some("root"), "cron-wrapper", T0))?
            .expect_done();
    }
    Ok(())
}

pub(crate) fn end_with(
    run: &str,
    span: &str,
    outcome: SpanOutcome,
    reason: Option<&str>,
    usage: SpanUsage,
    now_ms: u64,
) -> SpanCommand {
    SpanCommand::End {
        run: run.into(),
        span: span.into(),
        outcome,
        reason: reason.map(Into::into),
        usage,
        attributes: Attributes::new(),
        now_ms,
    }
}

/// A successful end reporting `usage`.
pub(crate) fn end_using(run: &str, span: &str, usage: SpanUsage, now_ms: u64) -> SpanCommand {
    end_with(run, span, SpanOutcome::Success, None, usage, now_ms)
}

pub(crate) fn end(run: &str, span: &str, outcome: SpanOutcome, now_ms: u64) -> SpanCommand {
    end_with(run, span, outcome, None, SpanUsage::default(), now_ms)
}

pub(crate) fn patch(
    run: &str,
    span: &str,
    attributes: Attributes,
    usage: SpanUsage,
    now_ms: u64,
) -> SpanCommand {
    SpanCommand::Patch {
        run: run.into(),
        span: span.into(),
        attributes,
        usage,
        wait_until_ms: None,
        billing_mode: None,
        now_ms,
    }
}

fn event(run: &str, span: &str, payload: &str, cap: Option<u32>, now_ms: u64) -> SpanCommand {
    SpanCommand::AppendEvent {
        run: run.into(),
        span: span.into(),
        event_type: "message".into(),
        payload: payload.into(),
        payload_bytes_max: cap,
        now_ms,
    }
}

pub(crate) fn usage(input: u64, output: u64, cost_micro_usd: Option<u64>) -> SpanUsage {
    SpanUsage {
        input_tokens: Some(input),
        output_tokens: Some(output),
        cost_micro_usd,
        ..SpanUsage::default()
    }
}

fn attributes(pairs: &[(&str, &str)]) -> Attributes {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

pub(crate) fn heartbeat(run: &str, now_ms: u64) -> RunCommand {
    RunCommand::Heartbeat {
        run: run.into(),
        now_ms,
    }
}

pub(crate) fn prune(
    floor: u64,
    retention: u64,
    ceiling: u64,
    batch: u32,
    now_ms: u64,
) -> RunCommand {
    RunCommand::Prune {
        digest_floor_at_ms: floor,
        detail_retention_ms: retention,
        hard_ceiling_ms: ceiling,
        batch,
        now_ms,
    }
}

pub(crate) fn run_refused(reason: RunRefusal) -> RunCommandOutcome {
    RunCommandOutcome::Refused { reason }
}

pub(crate) fn refused(reason: SpanRefusal) -> SpanCommandOutcome {
    SpanCommandOutcome::Refused { reason }
}

pub(crate) fn closed_spans(outcome: RunCommandOutcome) -> Vec<(String, Vec<String>)> {
    match outcome {
        RunCommandOutcome::Closed { runs } => runs.into_iter().map(|r| (r.run, r.spans)).collect(),
        other => panic!("expected runs closed, got {other:?}"),
    }
}

pub(crate) fn head(store: &Store) -> u64 {
    store.snapshot().expect("head").head().expect("head").next.0
}

pub(crate) fn assert_sound(store: &Store) -> TestResult {
    assert!(annals::Audit::of(store).verify()?.is_sound());
    Ok(())
}

/// The id of the span `name` in `run`: span ids are unique across runs, so `r1`'s spans keep
/// their plain names and every other run's carry the run.
pub(crate) fn span_id(run: &str, name: &str) -> String {
    if run == "r1" {
        name.to_owned()
    } else {
        format!("{run}-{name}")
    }
}

/// A root `root` in `run` with children `a` (with child `a1`) and `b`, started one ms apart.
fn tree(store: &Store, run: &str, writer: &str, at_ms: u64) -> TestResult {
    let id = |name| span_id(run, name);
    store
        .execute(&start(run, &id("root"), None, writer, at_ms))?
        .expect_done();
    store
        .execute(&start(run, &id("a"), Some(&id("root")), writer, at_ms + 1))?
        .expect_done();
    store
        .execute(&start(run, &id("a1"), Some(&id("a")), writer, at_ms + 2))?
        .expect_done();
    store
        .execute(&start(run, &id("b"), Some(&id("root")), writer, at_ms + 3))?
        .expect_done();
    Ok(())
}

#[test]
fn start_records_an_open_span_at_now_ms_on_the_run_stream() -> TestResult {
    let (_dir, store) = store();
    let outcome = store.execute(&start("r1", "root", None, "w1", T0))?;
    assert_eq!(
        outcome,
        SpanCommandOutcome::Started {
            seq: RunSeq(1),
            depth: 0
        }
    );
    let span = runs::span(&store.snapshot()?.state(), "r1", "root")?.expect("span");
    assert_eq!(span.started_at_ms, T0);
    assert_eq!(span.writer, "w1");
    assert!(span.is_open() && span.is_root());
    assert_eq!(span.last_heartbeat_at_ms, Some(T0));
    let records =
        store
            .snapshot()?
            .read_stream("run/r1", StreamVersion(0), Direction::Forward, 10)?;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].kind, "run.span_started");
    assert_eq!(span.position, records[0].position.0);

    let child = store.execute(&start("r1", "a", Some("root"), "w1", T0 + 5))?;
    assert_eq!(
        child,
        SpanCommandOutcome::Started {
            seq: RunSeq(2),
            depth: 1
        }
    );
    let child = runs::span(&store.snapshot()?.state(), "r1", "a")?.expect("child");
    assert_eq!(child.last_heartbeat_at_ms, None, "only roots heartbeat");
    assert_eq!(child.parent.as_deref(), Some("root"));
    assert_sound(&store)
}

#[test]
fn starting_the_same_span_twice_is_refused() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let before = head(&store);
    let again = store.execute(&start("r1", "root", None, "w1", T0 + 1))?;
    assert_eq!(again, refused(SpanRefusal::SpanExists));
    assert_eq!(head(&store), before, "a refusal appends nothing");
    assert_sound(&store)
}

#[test]
fn a_second_root_in_a_run_is_refused() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let second = store.execute(&start("r1", "other-root", None, "w1", T0 + 1))?;
    assert_eq!(second, refused(SpanRefusal::RootExists));
    assert_sound(&store)
}

#[test]
fn a_child_needs_its_parent_in_the_run() -> TestResult {
    let (_dir, store) = store();
    let orphan = store.execute(&start("r1", "a", Some("root"), "w1", T0))?;
    assert_eq!(
        orphan,
        refused(SpanRefusal::ParentMissing),
        "a run's first span is its root"
    );
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r2", "elsewhere", None, "w1", T0))?
        .expect_done();
    let foreign = store.execute(&start("r1", "a", Some("elsewhere"), "w1", T0 + 1))?;
    assert_eq!(foreign, refused(SpanRefusal::ParentMissing));
    assert_sound(&store)
}

#[test]
fn a_closed_run_takes_no_new_span() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 10))?
        .expect_done();
    let late = store.execute(&start("r1", "late", Some("root"), "w1", T0 + 11))?;
    assert_eq!(late, refused(SpanRefusal::RunClosed));
    assert_sound(&store)
}

#[test]
fn empty_required_fields_are_invalid_commands() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let check = |command: &dyn Fn(&Store) -> annals::Result<()>, field: &str| match command(&store)
    {
        Err(Error::InvalidCommand { field: got, .. }) => assert_eq!(got, field),
        other => panic!("expected an invalid {field}, got {other:?}"),
    };
    let span = |c: SpanCommand| move |s: &Store| s.execute(&c).map(drop);
    let run = |c: RunCommand| move |s: &Store| s.execute(&c).map(drop);
    check(&span(start("", "root", None, "w1", T0)), "run");
    check(&span(start("r2", "", None, "w1", T0)), "span");
    check(&span(start("r2", "root", None, "", T0)), "writer");
    check(&span(start("r2", "root", Some(""), "w1", T0)), "parent");
    let mut nameless = start("r2", "root", None, "w1", T0);
    if let SpanCommand::Start { name, .. } = &mut nameless {
        name.clear();
    }
    check(&span(nameless), "name");
    check(&span(end("r1", "", SpanOutcome::Success, T0)), "span");
    let typeless = SpanCommand::AppendEvent {
        run: "r1".into(),
        span: "root".into(),
        event_type: String::new(),
        payload: "{}".into(),
        payload_bytes_max: None,
        now_ms: T0,
    };
    check(&span(typeless), "event_type");
    check(&run(heartbeat("", T0)), "run");
    check(
        &run(RunCommand::CascadeClose {
            run: "r1".into(),
            outcome: SpanOutcome::Cancelled,
            reason: String::new(),
            now_ms: T0,
        }),
        "reason",
    );
    check(
        &run(RunCommand::SweepOrphans {
            writer: String::new(),
            now_ms: T0,
        }),
        "writer",
    );
    check(&run(prune(T0, 0, 0, 0, T0)), "batch");
    assert_eq!(head(&store), 1, "no invalid command appended anything");
    assert_sound(&store)
}

#[test]
fn patch_merges_attributes_and_reported_usage() -> TestResult {
    let (_dir, store) = store();
    let mut command = start("r1", "root", None, "w1", T0);
    if let SpanCommand::Start { attributes: a, .. } = &mut command {
        *a = attributes(&[("model", "m1"), ("mode", "plan")]);
    }
    store.execute(&command)?.expect_done();
    store
        .execute(&patch(
            "r1",
            "root",
            attributes(&[("mode", "act")]),
            usage(10, 20, None),
            T0 + 1,
        ))?
        .expect_done();
    let outcome = store.execute(&SpanCommand::Patch {
        run: "r1".into(),
        span: "root".into(),
        attributes: Attributes::new(),
        usage: SpanUsage {
            output_tokens: Some(25),
            ..SpanUsage::default()
        },
        wait_until_ms: Some(T0 + 500),
        billing_mode: Some(BillingMode::Api),
        now_ms: T0 + 2,
    })?;
    assert_eq!(outcome, SpanCommandOutcome::Patched { seq: RunSeq(3) });
    let span = runs::span(&store.snapshot()?.state(), "r1", "root")?.expect("span");
    assert_eq!(
        span.attributes,
        attributes(&[("model", "m1"), ("mode", "act")])
    );
    assert_eq!(
        span.usage.input_tokens,
        Some(10),
        "an absent field keeps its value"
    );
    assert_eq!(
        span.usage.output_tokens,
        Some(25),
        "a reported field replaces it"
    );
    assert_eq!(span.wait_until_ms, Some(T0 + 500));
    assert_eq!(span.billing_mode, Some(BillingMode::Api));
    assert!(span.is_open());
    assert_sound(&store)
}

#[test]
fn patch_after_end_is_refused() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let before = runs::span(&store.snapshot()?.state(), "r1", "root")?;
    let late = store.execute(&patch(
        "r1",
        "root",
        attributes(&[("k", "v")]),
        usage(1, 1, None),
        T0 + 2,
    ))?;
    assert_eq!(late, refused(SpanRefusal::SpanEnded));
    assert_eq!(
        runs::span(&store.snapshot()?.state(), "r1", "root")?,
        before
    );
    assert_sound(&store)
}

#[test]
fn patch_of_an_unknown_span_is_refused() -> TestResult {
    let (_dir, store) = store();
    let outcome = store.execute(&patch(
        "r1",
        "nope",
        Attributes::new(),
        SpanUsage::default(),
        T0,
    ))?;
    assert_eq!(outcome, refused(SpanRefusal::SpanMissing));
    assert_eq!(head(&store), 0);
    Ok(())
}

#[test]
fn end_is_written_once_and_a_second_end_is_refused() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "a", Some("root"), "w1", T0))?
        .expect_done();
    let first = store.execute(&end_with(
        "r1",
        "a",
        SpanOutcome::Error,
        Some("tool crashed"),
        SpanUsage::default(),
        T0 + 7,
    ))?;
    assert_eq!(
        first,
        SpanCommandOutcome::Ended {
            seq: RunSeq(3),
            rollup: None
        },
        "a child's end leaves an open run without rollup"
    );
    let before = head(&store);
    let second = store.execute(&end("r1", "a", SpanOutcome::Success, T0 + 9))?;
    assert_eq!(second, refused(SpanRefusal::SpanEnded));
    assert_eq!(head(&store), before);
    let span = runs::span(&store.snapshot()?.state(), "r1", "a")?.expect("span");
    assert_eq!(span.outcome, Some(SpanOutcome::Error));
    assert_eq!(span.outcome_reason.as_deref(), Some("tool crashed"));
    assert_eq!(span.ended_at_ms, Some(T0 + 7));
    let unknown = store.execute(&end("r1", "zz", SpanOutcome::Success, T0 + 9))?;
    assert_eq!(unknown, refused(SpanRefusal::SpanMissing));
    assert_sound(&store)
}

#[test]
fn a_span_ends_with_each_of_the_six_outcomes() -> TestResult {
    let (_dir, store) = store();
    let names: Vec<serde_json::Value> = SpanOutcome::ALL
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    assert_eq!(
        names,
        [
            "success",
            "error",
            "timeout",
            "cancelled",
            "denied",
            "interrupted"
        ]
    );
    for (i, outcome) in SpanOutcome::ALL.into_iter().enumerate() {
        let run = format!("r{i}");
        let root = span_id(&run, "root");
        store
            .execute(&start(&run, &root, None, "w1", T0))?
            .expect_done();
        store
            .execute(&end(&run, &root, outcome, T0 + 1))?
            .expect_done();
        let span = runs::span(&store.snapshot()?.state(), &run, &root)?.expect("span");
        assert_eq!(span.outcome, Some(outcome));
        assert_eq!(
            runs::rollup(&store.snapshot()?.state(), &run)?
                .expect("rollup")
                .outcome,
            outcome
        );
    }
    assert_sound(&store)
}

#[test]
fn end_merges_final_usage_and_attributes() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&patch(
            "r1",
            "root",
            attributes(&[("a", "1")]),
            usage(5, 6, None),
            T0 + 1,
        ))?
        .expect_done();
    store
        .execute(&SpanCommand::End {
            run: "r1".into(),
            span: "root".into(),
            outcome: SpanOutcome::Success,
            reason: None,
            usage: SpanUsage {
                cost_micro_usd: Some(1_500),
                ..SpanUsage::default()
            },
            attributes: attributes(&[("b", "2")]),
            now_ms: T0 + 3,
        })?
        .expect_done();
    let span = runs::span(&store.snapshot()?.state(), "r1", "root")?.expect("span");
    assert_eq!(span.attributes, attributes(&[("a", "1"), ("b", "2")]));
    assert_eq!(span.usage, usage(5, 6, Some(1_500)));
    assert_sound(&store)
}

#[test]
fn events_take_the_next_index_of_their_span() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "a", Some("root"), "w1", T0))?
        .expect_done();
    for (i, span) in ["root", "a", "root", "root"].into_iter().enumerate() {
        store
            .execute(&event(
                "r1",
                span,
                &format!("\"e{i}\""),
                None,
                T0 + i as u64,
            ))?
            .expect_done();
    }
    let state = store.snapshot()?.state();
    let root_events = runs::events(&state, "r1", "root")?;
    let indexes: Vec<u64> = root_events.iter().map(|e| e.event_index).collect();
    assert_eq!(indexes, [0, 1, 2]);
    assert_eq!(root_events[1].payload, "\"e2\"");
    assert_eq!(root_events[1].at_ms, T0 + 2);
    assert_eq!(runs::events(&state, "r1", "a")?[0].event_index, 0);
    assert_sound(&store)
}

#[test]
fn an_event_payload_over_the_cap_is_cut_and_flagged_truncated() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let cap = EVENT_PAYLOAD_BYTES_MAX as usize;
    assert_eq!(cap, 16 * 1024);
    let exact = "x".repeat(cap);
    let over = "y".repeat(cap + 100);
    let fits = store.execute(&event("r1", "root", &exact, None, T0))?;
    let cut = store.execute(&event("r1", "root", &over, None, T0))?;
    assert!(matches!(
        fits,
        SpanCommandOutcome::EventAppended {
            truncated: false,
            ..
        }
    ));
    assert!(matches!(
        cut,
        SpanCommandOutcome::EventAppended {
            truncated: true,
            ..
        }
    ));
    let events = runs::events(&store.snapshot()?.state(), "r1", "root")?;
    assert_eq!((events[0].payload.len(), events[0].truncated), (cap, false));
    assert_eq!((events[1].payload.len(), events[1].truncated), (cap, true));
    assert_sound(&store)
}

#[test]
fn a_lower_payload_cap_applies_and_a_higher_one_is_clamped() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let big = "z".repeat(40_000);
    store
        .execute(&event("r1", "root", "0123456789", Some(4), T0))?
        .expect_done();
    store
        .execute(&event("r1", "root", &big, Some(1 << 20), T0))?
        .expect_done();
    let events = runs::events(&store.snapshot()?.state(), "r1", "root")?;
    assert_eq!(
        (events[0].payload.as_str(), events[0].truncated),
        ("0123", true)
    );
    assert_eq!(events[1].payload.len(), EVENT_PAYLOAD_BYTES_MAX as usize);
    assert!(events[1].truncated);
    assert_sound(&store)
}

#[test]
fn a_cut_payload_stays_utf8() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    // "é" is two bytes: a cap of 3 falls inside the second one.
    store
        .execute(&event("r1", "root", "éé", Some(3), T0))?
        .expect_done();
    let events = runs::events(&store.snapshot()?.state(), "r1", "root")?;
    assert_eq!(
        (events[0].payload.as_str(), events[0].truncated),
        ("é", true)
    );
    assert_sound(&store)
}

#[test]
fn events_go_to_ended_spans_but_not_to_unknown_ones() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let late = store.execute(&event("r1", "root", "{}", None, T0 + 2))?;
    assert!(matches!(
        late,
        SpanCommandOutcome::EventAppended { event_index: 0, .. }
    ));
    let unknown = store.execute(&event("r1", "zz", "{}", None, T0 + 2))?;
    assert_eq!(unknown, refused(SpanRefusal::SpanMissing));
    assert_sound(&store)
}

#[test]
fn every_change_takes_the_next_seq_of_its_run_and_carries_its_position() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r2", "r2-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "a", Some("root"), "w1", T0 + 1))?
        .expect_done();
    store
        .execute(&patch(
            "r1",
            "a",
            Attributes::new(),
            usage(1, 1, None),
            T0 + 2,
        ))?
        .expect_done();
    store
        .execute(&event("r1", "a", "{}", None, T0 + 3))?
        .expect_done();
    store
        .execute(&end("r1", "a", SpanOutcome::Success, T0 + 4))?
        .expect_done();
    let state = store.snapshot()?.state();
    let changes = runs::changes_since(&state, "r1", RunSeq(0), 100)?;
    let seqs: Vec<u64> = changes.iter().map(|c| c.seq.0).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    let kinds: Vec<ChangeKind> = changes.iter().map(|c| c.kind).collect();
    assert_eq!(
        kinds,
        [
            ChangeKind::SpanStarted,
            ChangeKind::SpanStarted,
            ChangeKind::SpanPatched,
            ChangeKind::EventAppended,
            ChangeKind::SpanEnded
        ]
    );
    for change in &changes {
        let record = store
            .snapshot()?
            .get(annals::Position(change.position))?
            .expect("record");
        assert_eq!(record.stream, "run/r1", "the position is the global cursor");
    }
    assert_eq!(runs::high_water_seq(&state, "r1")?, RunSeq(5));
    assert_eq!(
        runs::high_water_seq(&state, "r2")?,
        RunSeq(1),
        "seq is per run"
    );
    let since = runs::changes_since(&state, "r1", RunSeq(3), 100)?;
    assert_eq!(since.iter().map(|c| c.seq.0).collect::<Vec<_>>(), [4, 5]);
    assert_eq!(since[0].event_index, Some(0));
    let span = runs::span(&state, "r1", "a")?.expect("span");
    assert_eq!((span.start_seq, span.seq), (RunSeq(2), RunSeq(5)));
    assert_eq!(span.position, changes[4].position);
    assert_sound(&store)
}

#[test]
fn heartbeats_take_no_seq() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    let outcome = store.execute(&heartbeat("r1", T0 + 1_000))?;
    assert_eq!(outcome, RunCommandOutcome::HeartbeatRecorded);
    let state = store.snapshot()?.state();
    assert_eq!(runs::high_water_seq(&state, "r1")?, RunSeq(1));
    let root = runs::span(&state, "r1", "root")?.expect("root");
    assert_eq!(root.last_heartbeat_at_ms, Some(T0 + 1_000));
    let records =
        store
            .snapshot()?
            .read_stream("run/r1", StreamVersion(0), Direction::Forward, 10)?;
    assert_eq!(records[1].kind, "run.heartbeat");
    assert_sound(&store)
}

#[test]
fn a_heartbeat_of_an_unknown_or_closed_run_is_refused() -> TestResult {
    let (_dir, store) = store();
    let unknown = store.execute(&heartbeat("r1", T0))?;
    assert_eq!(unknown, run_refused(RunRefusal::RunMissing));
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let closed = store.execute(&heartbeat("r1", T0 + 2))?;
    assert_eq!(closed, run_refused(RunRefusal::RunClosed));
    assert_sound(&store)
}

#[test]
fn an_older_heartbeat_does_not_move_the_last_one_back() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store.execute(&heartbeat("r1", T0 + 5_000))?.expect_done();
    store.execute(&heartbeat("r1", T0 + 2_000))?.expect_done();
    let root = runs::span(&store.snapshot()?.state(), "r1", "root")?.expect("root");
    assert_eq!(root.last_heartbeat_at_ms, Some(T0 + 5_000));
    let stale = store.execute(&RunCommand::SweepStale {
        stale_after_ms: 4_000,
        sweeper: None,
        now_ms: T0 + 8_000,
    })?;
    assert!(
        closed_spans(stale).is_empty(),
        "judged on the latest heartbeat"
    );
    assert_sound(&store)
}

#[test]
fn a_snapshot_reads_spans_events_seq_and_cursor_together() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "a", Some("root"), "w1", T0 + 1))?
        .expect_done();
    store
        .execute(&event("r1", "a", "{}", None, T0 + 2))?
        .expect_done();
    store
        .execute(&event("r1", "root", "{}", None, T0 + 3))?
        .expect_done();
    let snapshot = runs::snapshot(&store.snapshot()?.state(), "r1")?.expect("snapshot");
    let spans: Vec<&str> = snapshot.spans.iter().map(|s| s.span.as_str()).collect();
    assert_eq!(spans, ["root", "a"], "start order");
    let events: Vec<&str> = snapshot.events.iter().map(|e| e.span.as_str()).collect();
    assert_eq!(events, ["a", "root"], "seq order");
    assert_eq!(snapshot.high_water_seq, RunSeq(4));
    assert_eq!(snapshot.position, Some(head(&store) - 1));
    assert_eq!(runs::snapshot(&store.snapshot()?.state(), "r9")?, None);
    assert_sound(&store)
}

#[test]
fn ending_the_root_writes_the_rollup() -> TestResult {
    let (_dir, store) = store();
    tree(&store, "r1", "w1", T0)?;
    for span in ["a1", "a", "b"] {
        store
            .execute(&end("r1", span, SpanOutcome::Success, T0 + 50))?
            .expect_done();
    }
    let ended = store.execute(&end_using(
        "r1",
        "root",
        usage(100, 40, Some(2_000)),
        T0 + 90,
    ))?;
    let SpanCommandOutcome::Ended {
        rollup: Some(rollup),
        ..
    } = ended
    else {
        panic!("expected a rollup, got {ended:?}");
    };
    assert_eq!(rollup.span_count, 4);
    assert_eq!(rollup.duration_ms, 90);
    assert_eq!((rollup.started_at_ms, rollup.ended_at_ms), (T0, T0 + 90));
    assert_eq!(
        (rollup.input_tokens, rollup.output_tokens),
        (Some(100), Some(40))
    );
    assert_eq!(rollup.cost_micro_usd, Some(2_000));
    assert_eq!(rollup.failure_reason, None);
    assert_eq!(rollup.name, "root work");
    assert_eq!(rollup.session_id.as_deref(), Some("session-1"));
    assert!(!rollup.detail_pruned);
    let state = store.snapshot()?.state();
    assert_eq!(runs::rollup(&state, "r1")?.as_ref(), Some(&*rollup));
    assert!(runs::run(&state, "r1")?.expect("run").closed);
    let records =
        store
            .snapshot()?
            .read_stream("run/r1", StreamVersion(0), Direction::Forward, 100)?;
    let kinds: Vec<&str> = records
        .iter()
        .rev()
        .take(2)
        .map(|r| r.kind.as_str())
        .collect();
    assert_eq!(kinds, ["run.rolled_up", "run.span_ended"]);
    assert_sound(&store)
}

#[test]
fn rollup_tokens_are_the_roots_not_the_trees_sum() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("r1", "sub", Some("root"), "w1", T0))?
        .expect_done();
    store
        .execute(&end_using("r1", "sub", usage(7, 7, Some(70)), T0 + 1))?
        .expect_done();
    store
        .execute(&end_using("r1", "root", usage(10, 20, Some(300)), T0 + 2))?
        .expect_done();
    let rollup = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        (rollup.input_tokens, rollup.output_tokens),
        (Some(10), Some(20))
    );
    assert_eq!(rollup.cost_micro_usd, Some(300));
    assert_sound(&store)
}

#[test]
fn a_cron_rollup_sums_its_children_when_the_root_reports_none() -> TestResult {
    let (_dir, store) = store();
    api_cron_run(&store, "r1", &["a", "b", "tool"])?;
    store
        .execute(&end_using("r1", "a", usage(10, 1, Some(100)), T0 + 1))?
        .expect_done();
    store
        .execute(&end_using("r1", "b", usage(20, 2, Some(200)), T0 + 2))?
        .expect_done();
    store
        .execute(&end("r1", "tool", SpanOutcome::Success, T0 + 3))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 4))?
        .expect_done();
    let rollup = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        (rollup.input_tokens, rollup.output_tokens),
        (Some(30), Some(3))
    );
    assert_eq!(
        rollup.cache_read_tokens, None,
        "nobody reported any: unknown, not 0"
    );
    assert_eq!(rollup.cost_micro_usd, Some(300));
    assert_eq!(rollup.effective_cost_micro_usd, Some(300));
    assert_eq!(rollup.job_name.as_deref(), Some("nightly"));
    assert_sound(&store)
}

#[test]
fn the_rollup_failure_reason_is_the_first_error_or_timeout_reason() -> TestResult {
    let (_dir, store) = store();
    tree(&store, "r1", "w1", T0)?;
    store
        .execute(&end_with(
            "r1",
            "b",
            SpanOutcome::Timeout,
            Some("b too slow"),
            SpanUsage::default(),
            T0 + 5,
        ))?
        .expect_done();
    store
        .execute(&end_with(
            "r1",
            "a1",
            SpanOutcome::Denied,
            Some("not allowed"),
            SpanUsage::default(),
            T0 + 6,
        ))?
        .expect_done();
    store
        .execute(&end_with(
            "r1",
            "a",
            SpanOutcome::Error,
            Some("a broke"),
            SpanUsage::default(),
            T0 + 7,
        ))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Error, T0 + 8))?
        .expect_done();
    let rollup = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        rollup.failure_reason.as_deref(),
        Some("a broke"),
        "a started before b; a denial is no failure reason"
    );
    assert_sound(&store)
}

#[test]
fn the_rollup_failure_reason_is_interrupted_when_the_root_was() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Interrupted, T0 + 1))?
        .expect_done();
    store
        .execute(&start("r2", "r2-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r2", "r2-root", SpanOutcome::Cancelled, T0 + 1))?
        .expect_done();
    let state = store.snapshot()?.state();
    let interrupted = runs::rollup(&state, "r1")?.expect("rollup");
    assert_eq!(interrupted.failure_reason.as_deref(), Some("interrupted"));
    assert_eq!(
        runs::rollup(&state, "r2")?.expect("rollup").failure_reason,
        None
    );
    assert_sound(&store)
}

#[test]
fn a_later_end_rolls_up_again_with_costs_frozen_at_their_first_value() -> TestResult {
    let (_dir, store) = store();
    api_cron_run(&store, "r1", &["a", "b"])?;
    store
        .execute(&end_using("r1", "a", usage(10, 1, Some(100)), T0 + 1))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 2))?
        .expect_done();
    let first = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        (first.cost_micro_usd, first.effective_cost_micro_usd),
        (Some(100), Some(100))
    );
    let late = store.execute(&end_using("r1", "b", usage(5, 5, Some(50)), T0 + 3))?;
    assert!(matches!(
        late,
        SpanCommandOutcome::Ended {
            rollup: Some(_),
            ..
        }
    ));
    let second = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(second.input_tokens, Some(15), "tokens follow the spans");
    assert_eq!(second.cost_micro_usd, Some(100), "the cost stays frozen");
    assert_eq!(second.effective_cost_micro_usd, Some(100));
    assert_sound(&store)
}

#[test]
fn an_unknown_cost_is_filled_by_a_later_rollup() -> TestResult {
    let (_dir, store) = store();
    api_cron_run(&store, "r1", &["a"])?;
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let first = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        (first.cost_micro_usd, first.effective_cost_micro_usd),
        (None, None)
    );
    store
        .execute(&end_using("r1", "a", usage(1, 1, Some(42)), T0 + 2))?
        .expect_done();
    let second = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    assert_eq!(
        (second.cost_micro_usd, second.effective_cost_micro_usd),
        (Some(42), Some(42))
    );
    assert_sound(&store)
}

#[test]
fn the_effective_cost_follows_the_billing_mode() -> TestResult {
    let (_dir, store) = store();
    for (run, mode) in [
        ("sub", Some(BillingMode::Subscription)),
        ("api", Some(BillingMode::Api)),
        ("unknown", None),
    ] {
        let root = span_id(run, "root");
        store
            .execute(&start(run, &root, None, "w1", T0))?
            .expect_done();
        store
            .execute(&SpanCommand::Patch {
                run: run.into(),
                span: root.clone(),
                attributes: Attributes::new(),
                usage: SpanUsage::default(),
                wait_until_ms: None,
                billing_mode: mode,
                now_ms: T0,
            })?
            .expect_done();
        store
            .execute(&end_using(run, &root, usage(1, 1, Some(900)), T0 + 1))?
            .expect_done();
    }
    let state = store.snapshot()?.state();
    let effective = |run| -> annals::Result<(Option<u64>, Option<BillingMode>)> {
        let rollup = runs::rollup(&state, run)?.expect("rollup");
        Ok((rollup.effective_cost_micro_usd, rollup.billing_mode))
    };
    assert_eq!(
        effective("sub")?,
        (Some(0), Some(BillingMode::Subscription))
    );
    assert_eq!(effective("api")?, (Some(900), Some(BillingMode::Api)));
    assert_eq!(
        effective("unknown")?,
        (None, None),
        "unknown is never passed off as 0"
    );
    assert_sound(&store)
}

#[test]
fn cascade_close_ends_open_spans_deepest_first() -> TestResult {
    let (_dir, store) = store();
    tree(&store, "r1", "w1", T0)?;
    store
        .execute(&start("r1", "b1", Some("b"), "w1", T0 + 4))?
        .expect_done();
    store
        .execute(&end("r1", "b1", SpanOutcome::Success, T0 + 5))?
        .expect_done();
    let outcome = store.execute(&RunCommand::CascadeClose {
        run: "r1".into(),
        outcome: SpanOutcome::Cancelled,
        reason: "user stopped it".into(),
        now_ms: T0 + 100,
    })?;
    let RunCommandOutcome::Closed { runs } = outcome else {
        panic!("expected a close, got {outcome:?}");
    };
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0].spans,
        ["a1", "b", "a", "root"],
        "deepest first, then latest started"
    );
    assert_eq!(runs[0].rollup.outcome, SpanOutcome::Cancelled);
    let state = store.snapshot()?.state();
    for span in runs::spans(&state, "r1")? {
        assert!(!span.is_open());
        if span.span != "b1" {
            assert_eq!(span.outcome, Some(SpanOutcome::Cancelled));
            assert_eq!(span.outcome_reason.as_deref(), Some("user stopped it"));
            assert_eq!(span.ended_at_ms, Some(T0 + 100));
        }
    }
    let b1 = runs::span(&state, "r1", "b1")?.expect("b1");
    assert_eq!(
        b1.outcome,
        Some(SpanOutcome::Success),
        "an ended span keeps its end"
    );
    let ends: Vec<(String, u64)> = runs::changes_since(&state, "r1", RunSeq(6), 10)?
        .into_iter()
        .map(|c| (c.span, c.seq.0))
        .collect();
    let expected = [("a1", 7), ("b", 8), ("a", 9), ("root", 10)].map(|(s, q)| (s.to_owned(), q));
    assert_eq!(ends, expected);
    assert_eq!(runs::rollup(&state, "r1")?.as_ref(), Some(&runs[0].rollup));
    assert_sound(&store)
}

#[test]
fn cascade_close_of_an_unknown_run_is_refused_and_of_a_finished_one_closes_nothing() -> TestResult {
    let (_dir, store) = store();
    let close = |run: &str| RunCommand::CascadeClose {
        run: run.into(),
        outcome: SpanOutcome::Cancelled,
        reason: "stop".into(),
        now_ms: T0 + 10,
    };
    assert_eq!(
        store.execute(&close("r1"))?,
        run_refused(RunRefusal::RunMissing)
    );
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?
        .expect_done();
    let before = head(&store);
    assert!(closed_spans(store.execute(&close("r1"))?).is_empty());
    assert_eq!(head(&store), before);
    assert_sound(&store)
}

#[test]
fn the_orphan_sweep_closes_every_run_with_an_open_span_of_the_gone_writer() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "old", T0))?
        .expect_done();
    store
        .execute(&start("r2", "r2-root", None, "other", T0))?
        .expect_done();
    store
        .execute(&start("r2", "r2-a", Some("r2-root"), "old", T0 + 1))?
        .expect_done();
    store
        .execute(&start("r3", "r3-root", None, "other", T0))?
        .expect_done();
    store
        .execute(&start("r4", "r4-root", None, "old", T0))?
        .expect_done();
    store
        .execute(&end("r4", "r4-root", SpanOutcome::Success, T0 + 2))?
        .expect_done();
    let outcome = store.execute(&RunCommand::SweepOrphans {
        writer: "old".into(),
        now_ms: T0 + 10,
    })?;
    let closed = closed_spans(outcome);
    let runs: Vec<&str> = closed.iter().map(|(r, _)| r.as_str()).collect();
    assert_eq!(runs, ["r1", "r2"], "the whole run of an orphan closes");
    let state = store.snapshot()?.state();
    for run in ["r1", "r2"] {
        let rollup = runs::rollup(&state, run)?.expect("rollup");
        assert_eq!(rollup.outcome, SpanOutcome::Interrupted);
        assert_eq!(rollup.failure_reason.as_deref(), Some("interrupted"));
        let root = runs::span(&state, run, &span_id(run, "root"))?.expect("root");
        assert_eq!(
            root.outcome_reason.as_deref(),
            Some(annals::runs::ORPHAN_REASON)
        );
    }
    assert!(runs::span(&state, "r3", "r3-root")?.expect("r3").is_open());
    assert_eq!(
        runs::runs_with_open_spans_of(&state, "old")?,
        Vec::<String>::new()
    );
    assert_sound(&store)
}

#[test]
fn the_stale_sweep_closes_runs_whose_root_heartbeat_went_stale() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("quiet", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("alive", "alive-root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("alive", "long", Some("alive-root"), "w1", T0))?
        .expect_done();
    store
        .execute(&heartbeat("alive", T0 + 50_000))?
        .expect_done();
    let outcome = store.execute(&RunCommand::SweepStale {
        stale_after_ms: 30_000,
        sweeper: None,
        now_ms: T0 + 60_000,
    })?;
    assert_eq!(
        closed_spans(outcome),
        [("quiet".to_owned(), vec!["root".to_owned()])]
    );
    let state = store.snapshot()?.state();
    let root = runs::span(&state, "quiet", "root")?.expect("root");
    assert_eq!(root.outcome, Some(SpanOutcome::Interrupted));
    assert_eq!(
        root.outcome_reason.as_deref(),
        Some(annals::runs::STALE_REASON)
    );
    assert!(
        runs::span(&state, "alive", "long")?
            .expect("long")
            .is_open(),
        "a long, quiet span under a live root is judged by the root's heartbeat"
    );
    assert_sound(&store)
}

#[test]
fn the_stale_sweep_spares_the_sweepers_own_runs() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("mine", "root", None, "me", T0))?
        .expect_done();
    store
        .execute(&start("theirs", "theirs-root", None, "them", T0))?
        .expect_done();
    let outcome = store.execute(&RunCommand::SweepStale {
        stale_after_ms: 1_000,
        sweeper: Some("me".into()),
        now_ms: T0 + 10_000,
    })?;
    let runs: Vec<String> = closed_spans(outcome).into_iter().map(|(r, _)| r).collect();
    assert_eq!(runs, ["theirs"]);
    assert_sound(&store)
}

#[test]
fn stuck_runs_are_open_roots_started_longer_ago_than_the_threshold() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("old", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&start("older", "older-root", None, "w1", T0 - 5_000))?
        .expect_done();
    store
        .execute(&start("young", "young-root", None, "w1", T0 + 9_000))?
        .expect_done();
    store
        .execute(&start("done", "done-root", None, "w1", T0 - 9_000))?
        .expect_done();
    store
        .execute(&end("done", "done-root", SpanOutcome::Success, T0))?
        .expect_done();
    store.execute(&heartbeat("old", T0 + 9_999))?.expect_done();
    let state = store.snapshot()?.state();
    let stuck: Vec<String> = runs::stuck_runs(&state, 5_000, T0 + 10_000)?
        .into_iter()
        .map(|s| s.run)
        .collect();
    assert_eq!(
        stuck,
        ["older", "old"],
        "age since start, heartbeats or not"
    );
    let open: Vec<String> = runs::open_roots(&state)?
        .into_iter()
        .map(|s| s.run)
        .collect();
    assert_eq!(open, ["young", "old", "older"]);
    assert_sound(&store)
}

/// A finished run `run` of two spans whose root ended at `ended_at_ms`.
fn finished(store: &Store, run: &str, ended_at_ms: u64) -> TestResult {
    let (root, a) = (span_id(run, "root"), span_id(run, "a"));
    store
        .execute(&start(run, &root, None, "w1", ended_at_ms - 10))?
        .expect_done();
    store
        .execute(&start(run, &a, Some(&root), "w1", ended_at_ms - 5))?
        .expect_done();
    store
        .execute(&event(run, &a, "{}", None, ended_at_ms - 4))?
        .expect_done();
    store
        .execute(&end(run, &a, SpanOutcome::Success, ended_at_ms - 1))?
        .expect_done();
    store
        .execute(&end(run, &root, SpanOutcome::Success, ended_at_ms))?
        .expect_done();
    Ok(())
}

const DAY: u64 = 86_400_000;

#[test]
fn pruning_deletes_the_detail_and_keeps_the_rollup_marked() -> TestResult {
    let (_dir, store) = store();
    finished(&store, "r1", T0)?;
    let rollup = runs::rollup(&store.snapshot()?.state(), "r1")?.expect("rollup");
    let outcome = store.execute(&prune(T0 + 1, DAY, 30 * DAY, 50, T0 + 2 * DAY))?;
    assert_eq!(
        outcome,
        RunCommandOutcome::Pruned {
            runs: vec!["r1".into()],
            spans_deleted: 2
        }
    );
    let state = store.snapshot()?.state();
    assert_eq!(runs::run(&state, "r1")?, None);
    assert!(runs::spans(&state, "r1")?.is_empty());
    assert!(runs::events(&state, "r1", "a")?.is_empty());
    assert!(runs::changes_since(&state, "r1", RunSeq(0), 10)?.is_empty());
    let kept = runs::rollup(&state, "r1")?.expect("rollup kept");
    assert!(kept.detail_pruned);
    assert_eq!(
        kept.failure_reason, None,
        "a covered run gets no gap reason"
    );
    assert_eq!(kept.span_count, rollup.span_count);
    let again = store.execute(&prune(T0 + 1, DAY, 30 * DAY, 50, T0 + 3 * DAY))?;
    assert_eq!(
        again,
        RunCommandOutcome::Pruned {
            runs: vec![],
            spans_deleted: 0
        }
    );
    assert_sound(&store)
}

#[test]
fn pruning_waits_for_both_the_digest_floor_and_the_retention_window() -> TestResult {
    let (_dir, store) = store();
    finished(&store, "r1", T0)?;
    let nothing = RunCommandOutcome::Pruned {
        runs: vec![],
        spans_deleted: 0,
    };
    // Old enough, but no digest covers it yet.
    assert_eq!(
        store.execute(&prune(T0, DAY, 30 * DAY, 50, T0 + 2 * DAY))?,
        nothing
    );
    // Covered, but still inside the retention window.
    assert_eq!(
        store.execute(&prune(T0 + 1, DAY, 30 * DAY, 50, T0 + DAY))?,
        nothing
    );
    let both = store.execute(&prune(T0 + 1, DAY, 30 * DAY, 50, T0 + DAY + 1))?;
    assert!(matches!(both, RunCommandOutcome::Pruned { runs, .. } if runs == ["r1"]));
    assert_sound(&store)
}

#[test]
fn pruning_past_the_hard_ceiling_marks_a_coverage_gap() -> TestResult {
    let (_dir, store) = store();
    finished(&store, "r1", T0)?;
    store
        .execute(&start("r2", "r2-root", None, "w1", T0 - 10))?
        .expect_done();
    store
        .execute(&end_with(
            "r2",
            "r2-root",
            SpanOutcome::Error,
            Some("boom"),
            SpanUsage::default(),
            T0,
        ))?
        .expect_done();
    let outcome = store.execute(&prune(0, DAY, 7 * DAY, 50, T0 + 7 * DAY + 1))?;
    assert!(matches!(&outcome, RunCommandOutcome::Pruned { runs, .. } if runs.len() == 2));
    let state = store.snapshot()?.state();
    let gap = runs::rollup(&state, "r1")?.expect("rollup");
    assert_eq!(
        gap.failure_reason.as_deref(),
        Some(annals::runs::COVERAGE_GAP_REASON)
    );
    let failed = runs::rollup(&state, "r2")?.expect("rollup");
    assert_eq!(
        failed.failure_reason.as_deref(),
        Some("boom"),
        "a failure reason is kept"
    );
    assert_sound(&store)
}

#[test]
fn pruning_skips_runs_with_an_open_span() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0 - 10))?
        .expect_done();
    store
        .execute(&start("r1", "a", Some("root"), "w1", T0 - 5))?
        .expect_done();
    store
        .execute(&end("r1", "root", SpanOutcome::Success, T0))?
        .expect_done();
    let outcome = store.execute(&prune(T0 + 1, 0, DAY, 50, T0 + 2 * DAY))?;
    assert_eq!(
        outcome,
        RunCommandOutcome::Pruned {
            runs: vec![],
            spans_deleted: 0
        }
    );
    assert!(runs::span(&store.snapshot()?.state(), "r1", "a")?.is_some());
    assert_sound(&store)
}

#[test]
fn pruning_takes_at_most_a_batch_earliest_end_first() -> TestResult {
    let (_dir, store) = store();
    finished(&store, "late", T0 + 300)?;
    finished(&store, "early", T0 + 100)?;
    finished(&store, "middle", T0 + 200)?;
    let first = store.execute(&prune(T0 + 1_000, 0, DAY, 2, T0 + 1_000))?;
    assert_eq!(
        first,
        RunCommandOutcome::Pruned {
            runs: vec!["early".into(), "middle".into()],
            spans_deleted: 4
        }
    );
    let second = store.execute(&prune(T0 + 1_000, 0, DAY, 2, T0 + 1_000))?;
    assert!(matches!(second, RunCommandOutcome::Pruned { runs, .. } if runs == ["late"]));
    assert_sound(&store)
}

#[test]
fn pruning_reaches_past_runs_it_must_skip() -> TestResult {
    let (_dir, store) = store();
    // More still-open runs than one candidate read holds, all ending before the finished one.
    store.write(|session| {
        for i in 0..300u64 {
            let run = format!("busy-{i:03}");
            let (root, a) = (span_id(&run, "root"), span_id(&run, "a"));
            session
                .execute(&start(&run, &root, None, "w1", T0))?
                .expect_done();
            session
                .execute(&start(&run, &a, Some(&root), "w1", T0))?
                .expect_done();
            session
                .execute(&end(&run, &root, SpanOutcome::Success, T0 + i))?
                .expect_done();
        }
        Ok(())
    })?;
    finished(&store, "done", T0 + 500)?;
    let outcome = store.execute(&prune(T0 + 1_000, 0, DAY, 1, T0 + 1_000))?;
    assert!(matches!(outcome, RunCommandOutcome::Pruned { runs, .. } if runs == ["done"]));
    assert_sound(&store)
}

#[test]
fn a_pruned_run_takes_no_new_span_or_heartbeat() -> TestResult {
    let (_dir, store) = store();
    finished(&store, "r1", T0)?;
    store
        .execute(&prune(T0 + 1, 0, DAY, 50, T0 + 1))?
        .expect_done();
    let restart = store.execute(&start("r1", "root", None, "w1", T0 + 2))?;
    assert_eq!(restart, refused(SpanRefusal::RunClosed));
    assert_eq!(
        store.execute(&heartbeat("r1", T0 + 2))?,
        run_refused(RunRefusal::RunClosed)
    );
    assert_sound(&store)
}

#[test]
fn run_kinds_cannot_be_appended_raw() -> TestResult {
    let (_dir, store) = store();
    let forged = NewEvent::new("run.span_started", T0, vec![0; 8]);
    match store.append("run/r1", ExpectedVersion::Any, &[forged]) {
        Err(Error::Store(StoreError::ReservedKind { projection, .. })) => {
            assert_eq!(projection, "runs")
        }
        other => panic!("expected a reserved kind, got {other:?}"),
    }
    Ok(())
}

#[test]
fn commands_in_one_write_see_each_other() -> TestResult {
    let (_dir, store) = store();
    let outcomes = store.write(|session| {
        let started = session.execute(&start("r1", "root", None, "w1", T0))?;
        let child = session.execute(&start("r1", "a", Some("root"), "w1", T0))?;
        let ended = session.execute(&end("r1", "root", SpanOutcome::Success, T0 + 1))?;
        Ok((started, child, ended))
    })?;
    assert!(matches!(
        outcomes.1,
        SpanCommandOutcome::Started { seq: RunSeq(2), .. }
    ));
    assert!(matches!(
        outcomes.2,
        SpanCommandOutcome::Ended {
            seq: RunSeq(3),
            rollup: Some(_)
        }
    ));
    assert_sound(&store)
}

/// A workload touching every kind of run event.
fn workload(store: &Store) -> TestResult {
    tree(store, "r1", "w1", T0)?;
    store
        .execute(&patch(
            "r1",
            "a",
            attributes(&[("k", "v")]),
            usage(3, 4, Some(5)),
            T0 + 4,
        ))?
        .expect_done();
    store
        .execute(&event("r1", "a1", &"p".repeat(20_000), None, T0 + 5))?
        .expect_done();
    store.execute(&heartbeat("r1", T0 + 6))?.expect_done();
    store
        .execute(&end("r1", "a1", SpanOutcome::Success, T0 + 7))?
        .expect_done();
    store
        .execute(&RunCommand::CascadeClose {
            run: "r1".into(),
            outcome: SpanOutcome::Cancelled,
            reason: "stop".into(),
            now_ms: T0 + 8,
        })?
        .expect_done();
    tree(store, "r2", "gone", T0)?;
    store
        .execute(&RunCommand::SweepOrphans {
            writer: "gone".into(),
            now_ms: T0 + 9,
        })?
        .expect_done();
    store
        .execute(&cron_root(
            "r3",
            "r3-root",
            Some(BillingMode::Subscription),
            T0,
        ))?
        .expect_done();
    store
        .execute(&RunCommand::SweepStale {
            stale_after_ms: 100,
            sweeper: None,
            now_ms: T0 + 1_000,
        })?
        .expect_done();
    finished(store, "r4", T0 + 5)?;
    store
        .execute(&prune(T0 + 6, 0, DAY, 1, T0 + 2_000))?
        .expect_done();
    tree(store, "r5", "w2", T0 + 3_000)?;
    store
        .execute(&event("r5", "r5-b", "{\"ok\":true}", None, T0 + 3_010))?
        .expect_done();
    Ok(())
}

#[test]
fn the_runs_state_survives_reopening_the_store() -> TestResult {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("log.redb");
    let before = {
        let store = Store::open(&path)?;
        workload(&store)?;
        runs::state_json(&store.snapshot()?.state())?
    };
    let store = Store::open_with(&path, annals::StoreOptions::default())?;
    assert_eq!(runs::state_json(&store.snapshot()?.state())?, before);
    assert!(
        runs::rollup(&store.snapshot()?.state(), "r4")?
            .expect("r4")
            .detail_pruned
    );
    let next = store.execute(&start("r5", "r5-c", Some("r5-root"), "w2", T0 + 4_000))?;
    assert!(matches!(
        next,
        SpanCommandOutcome::Started { seq: RunSeq(6), .. }
    ));
    assert_sound(&store)
}

#[test]
fn rebuild_reproduces_the_runs_state() -> TestResult {
    let (_dir, store) = store();
    workload(&store)?;
    let before = runs::state_json(&store.snapshot()?.state())?;
    assert!(before["rollups"].as_array().is_some_and(|r| r.len() == 4));
    annals::maintenance::Rebuild::of(&store).run(Some("runs"))?;
    assert_eq!(runs::state_json(&store.snapshot()?.state())?, before);
    assert_sound(&store)
}

/// Inside one write transaction, the events read back from the log: one committed before it
/// and one appended in it (still in the log writer's pending segment).
#[test]
fn a_write_session_reads_events_committed_before_it_and_appended_in_it() -> TestResult {
    let (_dir, store) = store();
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&event("r1", "root", "committed", None, T0 + 1))?
        .expect_done();
    let payloads = store.write(|session| {
        session
            .execute(&event("r1", "root", "pending", None, T0 + 2))?
            .expect_done();
        let events = runs::events(session.state(), "r1", "root")?;
        let snapshot = runs::snapshot(session.state(), "r1")?.expect("run r1");
        assert_eq!(snapshot.events, events);
        Ok(events
            .into_iter()
            .map(|e| (e.payload, e.at_ms))
            .collect::<Vec<_>>())
    })?;
    assert_eq!(
        payloads,
        [
            ("committed".to_owned(), T0 + 1),
            ("pending".to_owned(), T0 + 2)
        ]
    );
    Ok(())
}

/// A log written when `runs.events` rows copied each event (runs version 2) is rebuilt when
/// it is opened: its rows then hold the positions of the events' records, and the events
/// read the same.
#[test]
fn a_log_whose_event_rows_copy_the_events_is_rebuilt_on_open() -> TestResult {
    use redb::{ReadableDatabase, ReadableTable, TableDefinition};
    let rows = TableDefinition::<&[u8], &[u8]>::new("runs.events");
    use annals::testing::internals::checksum::{CHECKSUM_BYTES, seal, seal_checkpoint};
    let checkpoints = TableDefinition::<&str, [u8; 20]>::new("annals.checkpoints");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("log.redb");
    let store = Store::open(&path)?;
    store
        .execute(&start("r1", "root", None, "w1", T0))?
        .expect_done();
    store
        .execute(&event("r1", "root", "first", None, T0 + 1))?
        .expect_done();
    store
        .execute(&event("r1", "root", "second", None, T0 + 2))?
        .expect_done();
    let events = runs::events(&store.snapshot()?.state(), "r1", "root")?;
    store.close()?;
    // Rewrite the rows as version 2 wrote them: each a copy of its event.
    {
        let db = redb::Database::open(&path)?;
        let txn = db.begin_write()?;
        {
            let mut table = txn.open_table(rows)?;
            let keys = table
                .iter()?
                .map(|row| row.map(|(key, _)| key.value().to_vec()))
                .collect::<Result<Vec<_>, _>>()?;
            assert_eq!(keys.len(), events.len());
            let config = bincode::config::standard()
                .with_little_endian()
                .with_fixed_int_encoding();
            for (key, event) in keys.iter().zip(&events) {
                let copy = bincode::serde::encode_to_vec(event, config)?;
                let sealed = seal("runs.events", key, &copy);
                let _ = table.insert(key.as_slice(), sealed.as_slice())?;
            }
            let stored = seal_checkpoint("runs", (2, u64::MAX));
            let _ = txn.open_table(checkpoints)?.insert("runs", stored)?;
        }
        txn.commit()?;
    }
    let store = Store::open(&path)?;
    assert_eq!(
        store.snapshot()?.checkpoint("runs")?.map(|c| c.version),
        Some(3)
    );
    assert_eq!(
        runs::events(&store.snapshot()?.state(), "r1", "root")?,
        events
    );
    store.close()?;
    let db = redb::Database::open(&path)?;
    let txn = db.begin_read()?;
    let table = txn.open_table(rows)?;
    for row in table.iter()? {
        // The position of the event's record, eight bytes, and its checksum.
        assert_eq!(row?.1.value().len(), 8 + CHECKSUM_BYTES);
    }
    Ok(())
}
