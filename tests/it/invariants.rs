//! Import respects the domains: a forged export whose every hash, link, head and root is
//! recomputed, but whose domain events no command would have emitted (a lease re-granted
//! under an old token, an outbox row claimed after it was done, a span ended twice, …), is
//! refused at the record and rule it breaks, into an existing log and as a new one, and
//! nothing is written; the same records written beneath the projections make `verify`
//! report the log unsound at that record.

use annals::testing::setup::{ExpectDone, head_of};
use std::fs;
use std::path::{Path, PathBuf};

use annals::consumers::{ConsumerCommand, consumer_stream, events::Checkpointed};
use annals::leases::events::{LaneClaimed, LaneRenewed, Released, Renewed};
use annals::leases::{
    FencingToken, GuardRefusal, LeaseEvent, LeaseGuard, lane_stream, lease_stream,
};
use annals::outbox::events::{Acked, Claimed, Enqueued};
use annals::outbox::{ClaimToken, OutboxCommand, OutboxEvent, PullCommand, row_stream};
use annals::registry::events::{FuelCharged, InstanceAdded, StatusChanged};
use annals::registry::{
    InstanceCommand, InstanceFields, InstanceKind, Knows, RecordFuel, RegistryEvent, Status,
    fuel_stream, instance_stream,
};
use annals::runs::events::{
    DetailPruned, EventAppended, Heartbeat, RolledUp, SpanEnded, SpanPatched, SpanStarted,
};
use annals::runs::{
    Attributes, RunEvent, SpanCommand, SpanKind, SpanOrigin, SpanOutcome, SpanUsage, run_stream,
};
use annals::testing::forgery::{forged_continuation, regrant_to_a, superseded_lease};
use annals::testing::internals::demo::Rng;
use annals::testing::internals::forge::append_sealed_unapplied;
use annals::testing::random::random_command;
use annals::{
    Error, ExpectedVersion, NewEvent, Position, Record, Store, audit::Problem,
    command::DomainEvent, error::ProjectionError, error::StoreError,
};
use tempfile::TempDir;

use crate::common::event;

const T0: u64 = annals::testing::forgery::SUPERSEDED_AT_MS;

/// A forged record: its stream and its event.
type Forged = (String, NewEvent);

/// A log in a fresh folder, built by `build` through commands only.
fn base_log(build: impl FnOnce(&Store)) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("base.redb");
    let store = Store::open(&path).unwrap();
    build(&store);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    (dir, path)
}

fn import(file: &Path, target: &Path) -> annals::Result<()> {
    annals::maintenance::Import::run(file, target, &mut |_, _| {}).map(drop)
}

/// The projection, position and rule of an invariant refusal.
fn broken_rule(result: annals::Result<()>) -> (String, Position, &'static str) {
    match result {
        Err(Error::Projection(ProjectionError::Invariant {
            projection,
            position,
            rule,
            ..
        })) => (projection, position, rule),
        other => panic!("expected an invariant refusal, got {other:?}"),
    }
}

/// What the case expects: the projection and rule broken, by the forged record `offset`
/// places after the first.
struct Expected {
    projection: &'static str,
    rule: &'static str,
    offset: u64,
}

/// Whether `schema/EVENTS.md` lists `rule` among the invariants of `projection`'s section.
fn documented(projection: &str, rule: &str) -> bool {
    let document =
        fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/EVENTS.md")).unwrap();
    let section = document
        .split(&format!("\n## {projection}\n"))
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next());
    section.is_some_and(|section| section.contains(&format!("| `{rule}` |")))
}

/// Checks one forgery of `base` three ways: imported as the continuation of `base` and as a
/// new log, it is refused at its record with its rule and writes nothing; written beneath the
/// projections, `verify` reports the log unsound at that record with that rule. The rule is
/// listed in its domain's section of `schema/EVENTS.md`.
fn check_forgery(base: &Path, forged: &[Forged], expected: &Expected) {
    assert!(
        documented(expected.projection, expected.rule),
        "EVENTS.md lists {} among the {} invariants",
        expected.rule,
        expected.projection
    );
    let dir = base.parent().unwrap();
    let name = format!("{}-{}", expected.rule, expected.offset);
    let continuation = dir.join(format!("{name}.continuation"));
    let first = forged_continuation(base, head_of(base), forged, &continuation);
    let position = Position(first.0 + expected.offset);
    let wanted = (expected.projection.to_owned(), position, expected.rule);

    // Into a copy of the log it continues: refused in its one transaction.
    let target = dir.join(format!("{name}.redb"));
    fs::copy(base, &target).unwrap();
    assert_eq!(
        broken_rule(import(&continuation, &target)),
        wanted,
        "{name}: continuation"
    );
    let store = Store::open_read_only(&target).unwrap();
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        first,
        "{name}: nothing is appended"
    );
    assert!(
        annals::Audit::of(&store).verify().unwrap().is_sound(),
        "{name}: the target stays sound"
    );
    drop(store);

    // As a new log: refused while built under a temporary name, and no log appears.
    let whole = dir.join(format!("{name}.whole"));
    let _ = forged_continuation(base, 0, forged, &whole);
    let fresh = dir.join(format!("{name}-new.redb"));
    let before: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        broken_rule(import(&whole, &fresh)),
        wanted,
        "{name}: new log"
    );
    let after: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after, "{name}: no file is left behind");

    // Beneath the projections: the chain is sound, the domain is not.
    let records: Vec<Record> = {
        let mut reader = annals::export::open(&continuation).unwrap();
        std::iter::from_fn(|| reader.next_record().unwrap())
            .filter(|record| record.position >= first)
            .collect()
    };
    let forged_log = dir.join(format!("{name}-forged.redb"));
    fs::copy(base, &forged_log).unwrap();
    append_sealed_unapplied(&forged_log, &records).unwrap();
    let report = annals::Audit::of(&Store::open_read_only(&forged_log).unwrap())
        .verify()
        .unwrap();
    let finding = report
        .problem
        .expect("verify reports the forged log unsound");
    assert_eq!(finding.position, position, "{name}: {finding}");
    match finding.problem {
        Problem::Invariant {
            projection, rule, ..
        } => assert_eq!(
            (projection.as_str(), rule),
            (expected.projection, expected.rule)
        ),
        other => panic!("{name}: expected an invariant finding, got {other}"),
    }
}

fn at(stream: String, event: impl DomainEvent, at_ms: u64) -> Forged {
    (stream, event.to_new_event(at_ms))
}

fn expect(projection: &'static str, rule: &'static str) -> Expected {
    Expected {
        projection,
        rule,
        offset: 0,
    }
}

// ---------------------------------------------------------------------------------------
// Leases

fn lease(event: LeaseEvent, at_ms: u64) -> Forged {
    at(lease_stream("r"), event, at_ms)
}

#[test]
fn a_forged_regrant_to_a_superseded_holder_is_refused_and_its_guarded_append_stays_fenced() {
    let (dir, base) = base_log(superseded_lease);
    let file = dir.path().join("regrant");
    let from = head_of(&base);
    let first = forged_continuation(&base, from, &[lease(regrant_to_a(1), T0 + 1_500)], &file);
    let target = dir.path().join("target.redb");
    fs::copy(&base, &target).unwrap();
    let (projection, position, rule) = broken_rule(import(&file, &target));
    assert_eq!(
        (projection.as_str(), position, rule),
        ("leases", first, "token_increases")
    );
    // The import wrote nothing, so the stale holder's token is still superseded.
    let store = Store::open(&target).unwrap();
    let stale = LeaseGuard {
        resource: "r".into(),
        token: FencingToken(1),
        now_ms: T0 + 2_000,
    };
    let refused = store.append_guarded(
        "work",
        ExpectedVersion::Any,
        &[event("work.done", T0 + 2_000, b"a")],
        &stale,
    );
    assert!(
        matches!(
            refused,
            Err(Error::Store(StoreError::Fenced {
                reason: GuardRefusal::Superseded,
                ..
            }))
        ),
        "{refused:?}"
    );
    let current = LeaseGuard {
        token: FencingToken(2),
        ..stale
    };
    store
        .append_guarded(
            "work",
            ExpectedVersion::Any,
            &[event("work.done", T0 + 2_000, b"b")],
            &current,
        )
        .unwrap()
        .expect_done();
}

#[test]
fn forged_lease_events_are_refused_at_the_rule_they_break() {
    let (_dir, base) = base_log(superseded_lease);
    let during_b = T0 + 1_500;
    let renew = |token, at_ms| {
        lease(
            LeaseEvent::Renewed(Renewed {
                resource: "r".into(),
                token,
                expires_at_ms: at_ms + 1_000,
                labels: None,
            }),
            at_ms,
        )
    };
    let cases: Vec<(Vec<Forged>, Expected)> = vec![
        // The issue's forgery, after a valid renewal by the current holder.
        (
            vec![renew(2, during_b), lease(regrant_to_a(1), during_b)],
            Expected {
                offset: 1,
                ..expect("leases", "token_increases")
            },
        ),
        (
            vec![lease(regrant_to_a(3), during_b)],
            expect("leases", "grant_only_when_free"),
        ),
        (
            vec![renew(1, during_b)],
            expect("leases", "current_token_only"),
        ),
        (
            vec![lease(
                LeaseEvent::Released(Released {
                    resource: "r".into(),
                    token: 1,
                }),
                during_b,
            )],
            expect("leases", "current_token_only"),
        ),
        (
            vec![renew(2, T0 + 50_000)],
            expect("leases", "renew_only_live"),
        ),
        (
            vec![at(
                lane_stream("l", "k"),
                LeaseEvent::LaneClaimed(LaneClaimed {
                    lane: "l".into(),
                    key: "k".into(),
                    owner: "b".into(),
                    expires_at_ms: T0 + 100_000,
                }),
                during_b,
            )],
            expect("leases", "lane_claim_only_when_free"),
        ),
        (
            vec![at(
                lane_stream("l", "other"),
                LeaseEvent::LaneRenewed(LaneRenewed {
                    lane: "l".into(),
                    key: "other".into(),
                    expires_at_ms: T0 + 100_000,
                }),
                during_b,
            )],
            expect("leases", "lane_change_only_live"),
        ),
    ];
    for (forged, expected) in &cases {
        check_forgery(&base, forged, expected);
    }
}

// ---------------------------------------------------------------------------------------
// Outbox

/// `done` was delivered; `held` is claimed by its peer under `t1` until T0 + 10,000.
fn outbox_rows(store: &Store) {
    for key in ["done", "held"] {
        store
            .execute(&OutboxCommand::Enqueue {
                key: key.into(),
                peer: "p".into(),
                kind: "event".into(),
                payload: b"x".to_vec(),
                now_ms: T0,
            })
            .unwrap()
            .expect_done();
    }
    store
        .execute(&OutboxCommand::Deliver {
            key: "done".into(),
            now_ms: T0 + 1,
        })
        .unwrap()
        .expect_done();
    store
        .execute(&PullCommand::Claim {
            peer: "p".into(),
            token: ClaimToken("t1".into()),
            limit: 10,
            lease_ms: 10_000,
            now_ms: T0,
        })
        .unwrap()
        .expect_done();
}

fn outbox(event: OutboxEvent, at_ms: u64) -> Forged {
    at(row_stream(event.key()), event, at_ms)
}

fn claim(key: &str, peer: &str, token: &str) -> OutboxEvent {
    OutboxEvent::Claimed(Claimed {
        key: key.into(),
        peer: peer.into(),
        token: ClaimToken(token.into()),
        expires_at_ms: T0 + 100_000,
    })
}

#[test]
fn forged_outbox_events_are_refused_at_the_rule_they_break() {
    let (_dir, base) = base_log(outbox_rows);
    let later = T0 + 20_000;
    let cases: Vec<(Vec<Forged>, Expected)> = vec![
        (
            vec![outbox(claim("done", "p", "t2"), T0 + 5)],
            expect("outbox", "state_allows"),
        ),
        (
            vec![outbox(claim("held", "p", "t2"), T0 + 5)],
            expect("outbox", "state_allows"),
        ),
        (
            vec![outbox(claim("held", "q", "t2"), later)],
            expect("outbox", "claim_by_peer_with_fresh_token"),
        ),
        (
            vec![outbox(claim("held", "p", "t1"), later)],
            expect("outbox", "claim_by_peer_with_fresh_token"),
        ),
        (
            vec![outbox(
                OutboxEvent::Acked(Acked {
                    key: "held".into(),
                    token: ClaimToken("t9".into()),
                }),
                T0 + 5,
            )],
            expect("outbox", "ack_under_claim_token"),
        ),
        (
            vec![outbox(
                OutboxEvent::Enqueued(Enqueued {
                    key: "done".into(),
                    peer: "p".into(),
                    kind: "event".into(),
                    payload: b"again".to_vec(),
                    enqueue_id: 99,
                }),
                T0 + 5,
            )],
            expect("outbox", "key_unused"),
        ),
        (
            vec![outbox(claim("never", "p", "t2"), T0 + 5)],
            expect("outbox", "row_exists"),
        ),
    ];
    for (forged, expected) in &cases {
        check_forgery(&base, forged, expected);
    }
}

// ---------------------------------------------------------------------------------------
// Runs

/// The root span of `run`: span ids are unique across runs, so each root is named after its
/// run.
fn root_of(run: &str) -> String {
    format!("{run}-root")
}

/// Run `closed` started and ended its root (seqs 1 and 2); run `open` has an open root.
fn runs(store: &Store) {
    for run in ["closed", "open"] {
        store
            .execute(&SpanCommand::Start {
                run: run.into(),
                span: root_of(run),
                parent: None,
                name: "turn".into(),
                kind: SpanKind::Turn,
                origin: SpanOrigin::Session,
                session_id: None,
                job_name: None,
                attributes: Attributes::new(),
                billing_mode: None,
                writer: "w".into(),
                now_ms: T0,
            })
            .unwrap()
            .expect_done();
    }
    store
        .execute(&SpanCommand::End {
            run: "closed".into(),
            span: root_of("closed"),
            outcome: SpanOutcome::Success,
            reason: None,
            usage: SpanUsage::default(),
            attributes: Attributes::new(),
            now_ms: T0 + 10,
        })
        .unwrap()
        .expect_done();
}

fn end(run: &str, seq: u64) -> Forged {
    let event = RunEvent::SpanEnded(SpanEnded {
        run: run.into(),
        span: root_of(run),
        seq,
        outcome: SpanOutcome::Error,
        reason: Some("forged".into()),
        usage: SpanUsage::default(),
        attributes: Attributes::new(),
    });
    at(run_stream(run), event, T0 + 20)
}

fn child(run: &str, parent: &str, depth: u32, seq: u64) -> Forged {
    let event = RunEvent::SpanStarted(SpanStarted {
        run: run.into(),
        span: "child".into(),
        parent: Some(parent.into()),
        name: "tool".into(),
        kind: SpanKind::Tool,
        origin: SpanOrigin::Session,
        session_id: None,
        job_name: None,
        attributes: Attributes::new(),
        billing_mode: None,
        writer: "w".into(),
        depth,
        seq,
    });
    at(run_stream(run), event, T0 + 20)
}

fn patch(run: &str, seq: u64) -> Forged {
    let event = RunEvent::SpanPatched(SpanPatched {
        run: run.into(),
        span: root_of(run),
        seq,
        attributes: Attributes::new(),
        usage: SpanUsage::default(),
        wait_until_ms: None,
        billing_mode: None,
    });
    at(run_stream(run), event, T0 + 20)
}

fn heartbeat(run: &str) -> RunEvent {
    RunEvent::Heartbeat(Heartbeat { run: run.into() })
}

fn pruned(run: &str) -> RunEvent {
    RunEvent::DetailPruned(DetailPruned {
        run: run.into(),
        failure_reason: None,
        spans_deleted: 1,
    })
}

#[test]
fn forged_run_events_are_refused_at_the_rule_they_break() {
    let (_dir, base) = base_log(runs);
    // The closed run's rollup, claimed for the run whose root is still open.
    let mut rollup = {
        let store = Store::open_read_only(&base).unwrap();
        annals::runs::rollup(&store.snapshot().unwrap().state(), "closed")
            .unwrap()
            .unwrap()
    };
    rollup.run = "open".into();
    let rolled_up_open = RunEvent::RolledUp(RolledUp { rollup });
    let event_at = |index| {
        let event = RunEvent::EventAppended(EventAppended {
            run: "open".into(),
            span: root_of("open"),
            seq: 2,
            event_index: index,
            event_type: "note".into(),
            payload: "{}".into(),
            truncated: false,
        });
        at(run_stream("open"), event, T0 + 20)
    };
    let cases: Vec<(Vec<Forged>, Expected)> = vec![
        (vec![end("closed", 3)], expect("runs", "span_ends_once")),
        (vec![end("open", 1)], expect("runs", "seq_increases")),
        (
            vec![child("closed", &root_of("closed"), 1, 3)],
            expect("runs", "run_open"),
        ),
        (
            vec![child("open", "nobody", 1, 2)],
            expect("runs", "span_placed"),
        ),
        (
            vec![child("open", &root_of("open"), 3, 2)],
            expect("runs", "span_placed"),
        ),
        (
            vec![event_at(0), event_at(7)],
            Expected {
                offset: 1,
                ..expect("runs", "event_index_next")
            },
        ),
        (vec![end("missing", 1)], expect("runs", "span_exists")),
        (vec![patch("closed", 3)], expect("runs", "span_open")),
        (
            vec![at(run_stream("closed"), heartbeat("closed"), T0 + 20)],
            expect("runs", "run_open"),
        ),
        (
            vec![at(run_stream("open"), rolled_up_open, T0 + 20)],
            expect("runs", "rollup_after_root_end"),
        ),
        (
            vec![at(run_stream("open"), pruned("open"), T0 + 20)],
            expect("runs", "prune_only_finished"),
        ),
    ];
    for (forged, expected) in &cases {
        check_forgery(&base, forged, expected);
    }
}

// ---------------------------------------------------------------------------------------
// Registry and consumers

/// `martha` is registered, and charged all the fuel a ledger row can count.
fn martha(store: &Store) {
    store
        .execute(&RecordFuel {
            instance: "martha".into(),
            caller: String::new(),
            op: "/run".into(),
            fuel: u64::MAX,
            now_ms: T0,
        })
        .unwrap()
        .expect_done();
    store
        .execute(&InstanceCommand::Upsert {
            handle: "martha".into(),
            fields: InstanceFields {
                store: Some("stores/martha".into()),
                ..InstanceFields::default()
            },
            now_ms: T0,
        })
        .unwrap()
        .expect_done();
}

#[test]
fn forged_registry_events_are_refused_at_the_rule_they_break() {
    let (_dir, base) = base_log(martha);
    let added = RegistryEvent::InstanceAdded(InstanceAdded {
        handle: "martha".into(),
        domain: "localhost".into(),
        identity: None,
        store: "stores/elsewhere".into(),
        tree: None,
        source: None,
        knows: Knows::nobody(),
        status: Status::Enabled,
        kind: InstanceKind::Agent,
        owner: None,
        topics: Vec::new(),
    });
    let disabled = RegistryEvent::StatusChanged(StatusChanged {
        handle: "ghost".into(),
        status: Status::Disabled,
    });
    let charged = RegistryEvent::FuelCharged(FuelCharged {
        instance: "martha".into(),
        caller: String::new(),
        op: "/run".into(),
        calls: 1,
        fuel: 1,
    });
    let cases: Vec<(Vec<Forged>, Expected)> = vec![
        (
            vec![at(fuel_stream("martha"), charged, T0 + 5)],
            expect("registry", "fuel_fits"),
        ),
        (
            vec![at(instance_stream("martha"), added, T0 + 5)],
            expect("registry", "handle_unused"),
        ),
        (
            vec![at(instance_stream("ghost"), disabled, T0 + 5)],
            expect("registry", "instance_exists"),
        ),
    ];
    for (forged, expected) in &cases {
        check_forgery(&base, forged, expected);
    }
}

#[test]
fn a_forged_consumer_checkpoint_that_moves_back_is_refused() {
    let (_dir, base) = base_log(|store| {
        for i in 0..3u8 {
            store
                .append("s", ExpectedVersion::Any, &[event("app.x", T0, &[i])])
                .unwrap()
                .expect_done();
        }
        let handled = store.snapshot().unwrap().get(Position(2)).unwrap().unwrap();
        store
            .execute(&ConsumerCommand::checkpoint_after("mailer", &handled, T0))
            .unwrap()
            .expect_done();
    });
    let back = annals::consumers::ConsumerEvent::Checkpointed(Checkpointed {
        consumer: "mailer".into(),
        position: 1,
        hash: [0; 32],
    });
    check_forgery(
        &base,
        &[at(consumer_stream("mailer"), back, T0 + 5)],
        &expect("consumers", "checkpoint_advances"),
    );
}

/// `p` run `r` holds sequence 1 for hub project `h` from runtime `t`.
fn ingested(store: &Store) {
    store
        .execute(&forged_ingest_command())
        .unwrap()
        .expect_done();
}

fn forged_ingest_command() -> annals::ingest::IngestCommand {
    annals::ingest::IngestCommand {
        project: "p".into(),
        run: "r".into(),
        sequence: 1,
        hub_project: "h".into(),
        home_runtime: "t".into(),
        event_type: "x".into(),
        bytes: b"a".to_vec(),
        received_at_ms: T0,
        subject: None,
    }
}

#[test]
fn forged_ingest_events_are_refused_at_the_rule_they_break() {
    use annals::ingest::events::{Accepted, IngestEvent};
    let (_dir, base) = base_log(ingested);
    let accepted = |change: &dyn Fn(&mut Accepted)| {
        let mut event = Accepted {
            project: "p".into(),
            run: "r".into(),
            sequence: 2,
            hub_project: "h".into(),
            home_runtime: "t".into(),
            event_type: "x".into(),
            content_hash: *blake3::hash(b"b").as_bytes(),
            bytes: b"b".to_vec(),
        };
        change(&mut event);
        let stream = annals::ingest::ingest_stream(&event.project, &event.run);
        vec![at(stream, IngestEvent::Accepted(event), T0 + 5)]
    };
    let cases = [
        (
            accepted(&|e| e.sequence = 0),
            expect("ingest", "sequence_from_one"),
        ),
        (
            accepted(&|e| e.content_hash = [0; 32]),
            expect("ingest", "hash_of_bytes"),
        ),
        (
            accepted(&|e| e.sequence = 1),
            expect("ingest", "sequence_once"),
        ),
        (
            accepted(&|e| e.hub_project = "other".into()),
            expect("ingest", "project_one_hub"),
        ),
        (
            accepted(&|e| e.home_runtime = "other".into()),
            expect("ingest", "run_one_home"),
        ),
    ];
    for (forged, expected) in &cases {
        check_forgery(&base, forged, expected);
    }
}

// ---------------------------------------------------------------------------------------
// Commands never trip a rule

/// Random commands of every domain, with clocks that let leases, claims and lanes lapse,
/// and the demo's fleet: every record they write keeps every rule, which `verify` checks by
/// replaying them (a live apply that tripped one would leave its record in the log, as the
/// random commands ignore errors, and the replay would name it).
#[test]
fn commands_never_break_an_invariant() {
    for seed in 0..100 {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("log.redb")).unwrap();
        let mut rng = Rng::new(seed);
        let mut now_ms = T0;
        store
            .write(|session| {
                for _ in 0..150 {
                    let step = if rng.chance(20) { 500 } else { 30 };
                    now_ms += rng.below(step);
                    random_command(&mut rng, session, now_ms);
                }
                Ok(())
            })
            .unwrap();
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(report.is_sound(), "seed {seed}: {:?}", report.problem);
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("demo.redb")).unwrap();
    annals::testing::internals::demo::run(&store, 500, |_| {}).unwrap();
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "the demo: {:?}", report.problem);
}
