//! Tests written from the reference stores' code, one reference function each (named in the
//! test's name): the hub store's leases (`acquireLease`, `renewLease`, `releaseLease`,
//! `listLeases`), the peer outbox (`enqueuePeerRow`, `dueRows`, `pendingFor`, `markWaiting`,
//! `markRetry`, `claimRows`) and the host registry's fuel ledger (`charge`). Each checks the
//! outcome, the state read back through the queries, and the events appended; and the old
//! payload schemas of the events these rules changed replay to the same tables.

// The test names spell each reference function as the reference does (`listLeases`).
#![allow(non_snake_case)]

use annals::leases::events::{Acquired, AcquiredV2, Renewed, RenewedV1};
use annals::leases::{
    self, FencingToken, Lease, LeaseCommand, LeaseEvent, LeaseLabels, LeaseOutcome, LeaseRefusal,
};
use annals::outbox::events::{Enqueued, EnqueuedV1, Parked, RetryScheduled};
use annals::outbox::{
    self, ClaimToken, OutboxCommand, OutboxEvent, OutboxOutcome, OutboxRefusal, OutboxState,
    PullCommand, PullOutcome,
};
use annals::registry::events::FuelCharged;
use annals::registry::{self, ChargeFuel, FuelEntry, FuelTotal, RecordFuel, RegistryEvent};
use annals::testing::internals::event::{DomainEvent, encode_payload};
use annals::testing::setup::ExpectDone;
use annals::{Command, ExpectedVersion, NewEvent, Position, Record, Store};

use crate::common::store;

const T0: u64 = 1_767_225_600_000;
const TTL: u64 = 30_000;

/// Runs `command` and returns its outcome with the records it appended, in order.
fn run<C: Command>(store: &Store, command: &C) -> (C::Outcome, Vec<Record>) {
    let before = store.snapshot().unwrap().head().unwrap().next.0;
    let outcome = store.execute(command).unwrap();
    let after = store.snapshot().unwrap().head().unwrap().next.0;
    let records = (before..after)
        .map(|position| {
            store
                .snapshot()
                .unwrap()
                .get(Position(position))
                .unwrap()
                .unwrap()
        })
        .collect();
    (outcome, records)
}

/// The domain events of `records`, each with its kind and schema.
fn events<E: DomainEvent>(records: &[Record]) -> Vec<(String, u16, E)> {
    records
        .iter()
        .map(|record| {
            let event = E::from_record(record)
                .unwrap()
                .expect("an event of the domain");
            (record.kind.clone(), record.schema, event)
        })
        .collect()
}

fn labels(project: &str, name: &str, holder_name: &str) -> LeaseLabels {
    LeaseLabels {
        project: project.into(),
        name: name.into(),
        holder_name: holder_name.into(),
    }
}

fn acquire_labelled(
    resource: &str,
    holder: &str,
    labels: LeaseLabels,
    now_ms: u64,
) -> LeaseCommand {
    LeaseCommand::AcquireLabelled {
        resource: resource.into(),
        holder: holder.into(),
        labels,
        ttl_ms: TTL,
        now_ms,
    }
}

fn granted(outcome: LeaseOutcome) -> (Lease, bool) {
    match outcome {
        LeaseOutcome::Granted { lease, renewed } => (lease, renewed),
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn held(store: &Store, resource: &str) -> Lease {
    leases::lease(&store.snapshot().unwrap().state(), resource)
        .unwrap()
        .expect("a held lease")
}

/// `acquireLease` on a free resource: token 1, not renewed, the record carries the input's
/// project, name and holder name.
#[test]
fn acquire_lease_follows_acquireLease_and_keeps_project_name_and_holder_name() {
    let (_dir, store) = store();
    let command = acquire_labelled(
        "proj-1/deploy",
        "agent-7",
        labels("proj-1", "deploy", "Ada"),
        T0,
    );
    let (outcome, records) = run(&store, &command);
    let (lease, renewed) = granted(outcome);
    let expected = Lease {
        resource: "proj-1/deploy".into(),
        holder: "agent-7".into(),
        token: FencingToken(1),
        acquired_at_ms: T0,
        expires_at_ms: T0 + TTL,
        project: "proj-1".into(),
        name: "deploy".into(),
        holder_name: "Ada".into(),
    };
    assert!(!renewed);
    assert_eq!(lease, expected);
    assert_eq!(held(&store, "proj-1/deploy"), expected);
    assert_eq!(
        events::<LeaseEvent>(&records),
        vec![(
            "lease.acquired".into(),
            3,
            LeaseEvent::Acquired(Acquired {
                resource: "proj-1/deploy".into(),
                holder: "agent-7".into(),
                token: 1,
                expires_at_ms: T0 + TTL,
                project: "proj-1".into(),
                name: "deploy".into(),
                holder_name: "Ada".into(),
            })
        )]
    );
}

/// `acquireLease` by the holder of a live lease: the same token and grant time
/// (`acquiredAt` kept), a new deadline, and the labels of the new input (the reference
/// writes the whole record again).
#[test]
fn reacquiring_follows_acquireLease_keeping_token_and_grant_time_and_taking_the_new_labels() {
    let (_dir, store) = store();
    run(
        &store,
        &acquire_labelled("r", "agent-7", labels("p", "deploy", "Ada"), T0),
    )
    .0
    .expect_done();
    let later = T0 + 10_000;
    let new_labels = labels("q", "deploy-v2", "Ada Lovelace");
    let (outcome, records) = run(
        &store,
        &acquire_labelled("r", "agent-7", new_labels.clone(), later),
    );
    let (lease, renewed) = granted(outcome);
    assert!(renewed);
    assert_eq!(
        (lease.token, lease.acquired_at_ms, lease.expires_at_ms),
        (FencingToken(1), T0, later + TTL)
    );
    assert_eq!(
        (
            lease.project.as_str(),
            lease.name.as_str(),
            lease.holder_name.as_str()
        ),
        ("q", "deploy-v2", "Ada Lovelace")
    );
    assert_eq!(held(&store, "r"), lease);
    assert_eq!(
        events::<LeaseEvent>(&records),
        vec![(
            "lease.renewed".into(),
            2,
            LeaseEvent::Renewed(Renewed {
                resource: "r".into(),
                token: 1,
                expires_at_ms: later + TTL,
                labels: Some(new_labels),
            })
        )]
    );
}

/// `acquireLease` against another's live lease: `held`, with the lease that stands; then,
/// once it lapsed, a takeover with the next token and the taker's labels.
#[test]
fn contention_and_takeover_follow_acquireLease() {
    let (_dir, store) = store();
    run(
        &store,
        &acquire_labelled("r", "a", labels("p", "n", "A"), T0),
    )
    .0
    .expect_done();
    let (outcome, records) = run(
        &store,
        &acquire_labelled("r", "b", labels("p", "n", "B"), T0 + 1),
    );
    match outcome {
        LeaseOutcome::Refused {
            reason: LeaseRefusal::Held,
            lease: Some(lease),
        } => assert_eq!(
            (lease.holder.as_str(), lease.holder_name.as_str()),
            ("a", "A")
        ),
        other => panic!("expected held, got {other:?}"),
    }
    assert!(records.is_empty(), "a refusal appends nothing");
    assert_eq!(held(&store, "r").holder, "a");
    // `expiresAt <= now` is lapsed in the reference.
    let (outcome, records) = run(
        &store,
        &acquire_labelled("r", "b", labels("p", "n", "B"), T0 + TTL),
    );
    let (lease, renewed) = granted(outcome);
    assert!(!renewed);
    assert_eq!(
        (lease.token, lease.holder_name.as_str()),
        (FencingToken(2), "B")
    );
    assert_eq!(held(&store, "r"), lease);
    assert_eq!(events::<LeaseEvent>(&records).len(), 1);
    assert_eq!(records[0].kind, "lease.acquired");
}

/// `renewLease`: `{ ...current, expiresAt }` — the labels stay; the event carries none.
#[test]
fn renew_lease_follows_renewLease_keeping_the_labels() {
    let (_dir, store) = store();
    run(
        &store,
        &acquire_labelled("r", "a", labels("p", "n", "A"), T0),
    )
    .0
    .expect_done();
    let command = LeaseCommand::Renew {
        resource: "r".into(),
        holder: "a".into(),
        token: FencingToken(1),
        ttl_ms: TTL,
        now_ms: T0 + 5,
    };
    let (outcome, records) = run(&store, &command);
    let (lease, renewed) = granted(outcome);
    assert!(renewed);
    assert_eq!(
        (lease.project.as_str(), lease.expires_at_ms),
        ("p", T0 + 5 + TTL)
    );
    assert_eq!(held(&store, "r"), lease);
    assert_eq!(
        events::<LeaseEvent>(&records),
        vec![(
            "lease.renewed".into(),
            2,
            LeaseEvent::Renewed(Renewed {
                resource: "r".into(),
                token: 1,
                expires_at_ms: T0 + 5 + TTL,
                labels: None,
            })
        )]
    );
}

/// `listLeases(project)`: every lease of the project, lapsed ones too, by resource; other
/// projects' and released leases are not listed.
#[test]
fn list_leases_follows_listLeases() {
    let (_dir, store) = store();
    for (resource, project) in [
        ("p/zeta", "p"),
        ("q/one", "q"),
        ("p/alpha", "p"),
        ("p/gone", "p"),
    ] {
        run(
            &store,
            &acquire_labelled(resource, "a", labels(project, resource, "A"), T0),
        )
        .0
        .expect_done();
    }
    let (outcome, records) = run(
        &store,
        &LeaseCommand::Release {
            resource: "p/gone".into(),
            holder: "a".into(),
            token: FencingToken(1),
            now_ms: T0 + 1,
        },
    );
    assert!(matches!(outcome, LeaseOutcome::Released { .. }));
    assert_eq!(records[0].kind, "lease.released");
    let state = store.snapshot().unwrap().state();
    // Long after every deadline: lapsed leases are still listed, as the reference keeps
    // their rows.
    let listed: Vec<String> = leases::list_leases(&state, "p")
        .unwrap()
        .into_iter()
        .map(|lease| lease.resource)
        .collect();
    assert_eq!(listed, ["p/alpha", "p/zeta"]);
    let q = leases::list_leases(&state, "q").unwrap();
    assert_eq!(q.len(), 1);
    assert_eq!((q[0].name.as_str(), q[0].project.as_str()), ("q/one", "q"));
    assert!(leases::list_leases(&state, "none").unwrap().is_empty());
}

fn enqueue(key: &str, peer: &str, kind: &str, now_ms: u64) -> OutboxCommand {
    OutboxCommand::Enqueue {
        key: key.into(),
        peer: peer.into(),
        kind: kind.into(),
        payload: b"{}".to_vec(),
        now_ms,
    }
}

fn keys(rows: Vec<outbox::OutboxRow>) -> Vec<String> {
    rows.into_iter().map(|row| row.key).collect()
}

/// `enqueuePeerRow`: a new key is a `pending` row of its kind with the next id; the same key
/// again adds nothing, whatever its kind.
#[test]
fn enqueue_follows_enqueuePeerRow_with_a_kind_and_the_next_id() {
    let (_dir, store) = store();
    let (outcome, records) = run(&store, &enqueue("ev:1", "runtime:b", "event", T0));
    let OutboxOutcome::Enqueued { row } = outcome else {
        panic!("expected a new row");
    };
    assert_eq!(
        (row.kind.as_str(), row.enqueue_id, row.state, row.next_at_ms),
        ("event", 1, OutboxState::Pending, Some(T0))
    );
    assert_eq!(
        outbox::row(&store.snapshot().unwrap().state(), "ev:1").unwrap(),
        Some(row)
    );
    assert_eq!(
        events::<OutboxEvent>(&records),
        vec![(
            "outbox.enqueued".into(),
            2,
            OutboxEvent::Enqueued(Enqueued {
                key: "ev:1".into(),
                peer: "runtime:b".into(),
                kind: "event".into(),
                payload: b"{}".to_vec(),
                enqueue_id: 1,
            })
        )]
    );
    let (outcome, records) = run(&store, &enqueue("ev:2", "runtime:b", "report", T0));
    assert!(
        matches!(outcome, OutboxOutcome::Enqueued { row } if row.enqueue_id == 2 && row.kind == "report")
    );
    assert_eq!(records.len(), 1);
    let (outcome, records) = run(&store, &enqueue("ev:1", "runtime:c", "report", T0 + 1));
    assert!(matches!(outcome, OutboxOutcome::AlreadyEnqueued { row } if row.kind == "event"));
    assert!(records.is_empty(), "ON CONFLICT DO NOTHING appends nothing");
}

/// `dueRows`: `state = 'pending' AND next_at <= now ORDER BY id LIMIT n`. A row enqueued
/// later under an earlier clock is due no sooner in the order: under a limit of one the
/// first enqueued row comes out, as in the reference.
#[test]
fn due_follows_dueRows_in_enqueue_order_under_a_limit() {
    let (_dir, store) = store();
    run(&store, &enqueue("z-first", "p", "event", T0 + 100))
        .0
        .expect_done();
    run(&store, &enqueue("a-second", "p", "event", T0 + 50))
        .0
        .expect_done();
    run(&store, &enqueue("m-third", "p", "event", T0 + 60))
        .0
        .expect_done();
    // The third backs off past the clock: skipped, not a stop.
    let (_, records) = run(
        &store,
        &OutboxCommand::MarkRetry {
            key: "m-third".into(),
            attempts: 1,
            next_at_ms: T0 + 1_000,
            first_failed_at_ms: T0 + 60,
            now_ms: T0 + 60,
        },
    );
    assert_eq!(records.len(), 1);
    let state = store.snapshot().unwrap().state();
    let now = T0 + 200;
    assert_eq!(keys(outbox::due(&state, now, 1).unwrap()), ["z-first"]);
    assert_eq!(
        keys(outbox::due(&state, now, 10).unwrap()),
        ["z-first", "a-second"]
    );
    assert_eq!(
        keys(outbox::due(&state, T0 + 1_000, 10).unwrap()),
        ["z-first", "a-second", "m-third"]
    );
    assert!(outbox::due(&state, now, 0).unwrap().is_empty());
}

/// `markWaiting(id, attempts)`: a pending row becomes `waiting` with the caller's count and
/// no `next_at`; on a row not pending it changes nothing (here: refused, nothing appended).
#[test]
fn mark_waiting_follows_markWaiting_with_the_callers_attempts() {
    let (_dir, store) = store();
    run(&store, &enqueue("k", "p", "event", T0)).0.expect_done();
    let command = OutboxCommand::MarkWaiting {
        key: "k".into(),
        attempts: 7,
        now_ms: T0 + 1,
    };
    let (outcome, records) = run(&store, &command);
    let OutboxOutcome::Updated { row } = outcome else {
        panic!("expected the row moved");
    };
    assert_eq!(
        (row.state, row.attempts, row.next_at_ms),
        (OutboxState::Waiting, 7, None)
    );
    assert_eq!(
        outbox::row(&store.snapshot().unwrap().state(), "k").unwrap(),
        Some(row)
    );
    assert!(
        outbox::due(&store.snapshot().unwrap().state(), T0 + 10, 10)
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        events::<OutboxEvent>(&records),
        vec![(
            "outbox.parked".into(),
            1,
            OutboxEvent::Parked(Parked {
                key: "k".into(),
                attempts: 7,
            })
        )]
    );
    let (outcome, records) = run(&store, &command);
    assert!(matches!(
        outcome,
        OutboxOutcome::Refused {
            reason: OutboxRefusal::WrongState,
            ..
        }
    ));
    assert!(records.is_empty());
}

/// `markRetry(id, attempts, nextAt, firstFailedAt)`: the caller's three numbers, as given,
/// on a pending row (even a count lower than the row had, and a first failure the row had
/// not).
#[test]
fn mark_retry_follows_markRetry_with_the_callers_numbers() {
    let (_dir, store) = store();
    run(&store, &enqueue("k", "p", "event", T0)).0.expect_done();
    run(
        &store,
        &OutboxCommand::MarkRetry {
            key: "k".into(),
            attempts: 5,
            next_at_ms: T0 + 500,
            first_failed_at_ms: T0 - 100,
            now_ms: T0 + 1,
        },
    )
    .0
    .expect_done();
    let command = OutboxCommand::MarkRetry {
        key: "k".into(),
        attempts: 2,
        next_at_ms: T0 + 900,
        first_failed_at_ms: T0 + 3,
        now_ms: T0 + 2,
    };
    let (outcome, records) = run(&store, &command);
    let OutboxOutcome::Updated { row } = outcome else {
        panic!("expected the row moved");
    };
    assert_eq!(
        (
            row.state,
            row.attempts,
            row.next_at_ms,
            row.first_failed_at_ms
        ),
        (OutboxState::Pending, 2, Some(T0 + 900), Some(T0 + 3))
    );
    let state = store.snapshot().unwrap().state();
    assert_eq!(outbox::row(&state, "k").unwrap(), Some(row));
    assert!(outbox::due(&state, T0 + 899, 10).unwrap().is_empty());
    assert_eq!(keys(outbox::due(&state, T0 + 900, 10).unwrap()), ["k"]);
    assert_eq!(
        events::<OutboxEvent>(&records),
        vec![(
            "outbox.retry_scheduled".into(),
            1,
            OutboxEvent::RetryScheduled(RetryScheduled {
                key: "k".into(),
                attempts: 2,
                next_at_ms: T0 + 900,
                first_failed_at_ms: T0 + 3,
                last_error: None,
            })
        )]
    );
    let (outcome, records) = run(
        &store,
        &OutboxCommand::MarkRetry {
            key: "missing".into(),
            attempts: 1,
            next_at_ms: T0,
            first_failed_at_ms: T0,
            now_ms: T0,
        },
    );
    assert!(matches!(
        outcome,
        OutboxOutcome::Refused {
            reason: OutboxRefusal::Missing,
            row: None
        }
    ));
    assert!(records.is_empty());
}

/// `claimRows` and `pendingFor` read `ORDER BY id`; `SELECT * FROM peer_outbox ORDER BY id`
/// lists every row, finished ones too.
#[test]
fn claim_rows_pending_for_and_the_listing_follow_claimRows_and_pendingFor_in_enqueue_order() {
    let (_dir, store) = store();
    run(&store, &enqueue("z", "p", "event", T0 + 10))
        .0
        .expect_done();
    run(&store, &enqueue("a", "p", "report", T0))
        .0
        .expect_done();
    run(&store, &enqueue("other", "q", "event", T0))
        .0
        .expect_done();
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        keys(outbox::pending_for(&state, "p", T0 + 10, 1).unwrap()),
        ["z"]
    );
    drop(state);
    let claim = PullCommand::Claim {
        peer: "p".into(),
        token: ClaimToken("t1".into()),
        limit: 1,
        lease_ms: outbox::CLAIM_LEASE_MS,
        now_ms: T0 + 20,
    };
    let (outcome, records) = run(&store, &claim);
    let PullOutcome::Claimed { rows, .. } = outcome else {
        panic!("expected a claim");
    };
    assert_eq!(keys(rows), ["z"]);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].kind, "outbox.claimed");
    assert_eq!(records[0].stream, "outbox/z");
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        outbox::row(&state, "z").unwrap().map(|row| row.state),
        Some(OutboxState::Claimed)
    );
    assert_eq!(
        keys(outbox::rows_by_enqueue(&state, usize::MAX).unwrap()),
        ["z", "a", "other"]
    );
}

/// `charge(rows)`: `calls = calls + excluded.calls, fuel = fuel + excluded.fuel` — the
/// caller's pre-summed calls, zero included, and `updated_at` moved by every charge.
#[test]
fn charge_follows_charge_adding_presummed_calls() {
    let (_dir, store) = store();
    let charge = |calls, fuel, now_ms| ChargeFuel {
        instance: "alpha".into(),
        caller: "aa".into(),
        op: "tool.call".into(),
        calls,
        fuel,
        now_ms,
    };
    let (outcome, records) = run(&store, &charge(5, 120, T0));
    assert_eq!(
        (outcome.entry.calls, outcome.entry.fuel, outcome.total),
        (
            5,
            120,
            FuelTotal {
                calls: 5,
                fuel: 120
            }
        )
    );
    assert_eq!(
        events::<RegistryEvent>(&records),
        vec![(
            "registry.fuel_charged".into(),
            1,
            RegistryEvent::FuelCharged(FuelCharged {
                instance: "alpha".into(),
                caller: "aa".into(),
                op: "tool.call".into(),
                calls: 5,
                fuel: 120,
            })
        )]
    );
    let (outcome, records) = run(&store, &charge(0, 0, T0 + 7));
    let expected = FuelEntry {
        instance: "alpha".into(),
        caller: "aa".into(),
        op: "tool.call".into(),
        calls: 5,
        fuel: 120,
        updated_at_ms: T0 + 7,
    };
    assert_eq!(outcome.entry, expected);
    assert_eq!(records.len(), 1, "a charge of no calls is still a charge");
    let one = RecordFuel {
        instance: "alpha".into(),
        caller: "aa".into(),
        op: "tool.call".into(),
        fuel: 3,
        now_ms: T0 + 8,
    };
    run(&store, &one).0.expect_done();
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        registry::fuel_ledger(&state, "alpha").unwrap(),
        vec![FuelEntry {
            calls: 6,
            fuel: 123,
            updated_at_ms: T0 + 8,
            ..expected
        }]
    );
    assert_eq!(
        registry::fuel_total(&state, "alpha").unwrap(),
        FuelTotal {
            calls: 6,
            fuel: 123
        }
    );
    let error = store.execute(&charge(u64::MAX, 0, T0 + 9)).unwrap_err();
    assert!(
        matches!(error, annals::Error::InvalidCommand { field: "calls", .. }),
        "{error:?}"
    );
}

/// Appends `payload` as an older program wrote `kind` at `schema`.
fn append_old(store: &Store, stream: &str, kind: &str, schema: u16, at_ms: u64, payload: Vec<u8>) {
    let event = NewEvent::new(kind, at_ms, payload).with_schema(schema);
    store
        .write(|session| session.append_unchecked(stream, ExpectedVersion::Any, &[event]))
        .unwrap()
        .expect_done();
}

/// A log written before labels, kinds and enqueue ids: `lease.acquired` schema 2,
/// `lease.renewed` schema 1 and `outbox.enqueued` schema 1 upcast (empty labels and kind, ids
/// `position + 1`), replay to the same tables, and later commands continue above them.
#[test]
fn logs_from_before_labels_and_kinds_replay_to_the_same_tables() {
    let (_dir, store) = store();
    let acquired = AcquiredV2 {
        resource: "r".into(),
        holder: "a".into(),
        token: 1,
        expires_at_ms: T0 + TTL,
    };
    append_old(
        &store,
        "lease/r",
        "lease.acquired",
        2,
        T0,
        encode_payload(&acquired),
    );
    let renewed = RenewedV1 {
        resource: "r".into(),
        token: 1,
        expires_at_ms: T0 + 2 * TTL,
    };
    append_old(
        &store,
        "lease/r",
        "lease.renewed",
        1,
        T0 + 1,
        encode_payload(&renewed),
    );
    for key in ["old-b", "old-a"] {
        let enqueued = EnqueuedV1 {
            key: key.into(),
            peer: "p".into(),
            payload: b"x".to_vec(),
        };
        append_old(
            &store,
            &format!("outbox/{key}"),
            "outbox.enqueued",
            1,
            T0,
            encode_payload(&enqueued),
        );
    }
    let state = store.snapshot().unwrap().state();
    let lease = held(&store, "r");
    assert_eq!(
        (
            lease.expires_at_ms,
            lease.project.as_str(),
            lease.holder_name.as_str()
        ),
        (T0 + 2 * TTL, "", "")
    );
    assert_eq!(leases::list_leases(&state, "").unwrap(), vec![lease]);
    let old_b = outbox::row(&state, "old-b").unwrap().unwrap();
    let old_a = outbox::row(&state, "old-a").unwrap().unwrap();
    assert_eq!((old_b.kind.as_str(), old_b.enqueue_id), ("", 3));
    assert_eq!((old_a.kind.as_str(), old_a.enqueue_id), ("", 4));
    assert_eq!(keys(outbox::due(&state, T0, 1).unwrap()), ["old-b"]);
    drop(state);
    let (outcome, _) = run(&store, &enqueue("new", "p", "event", T0));
    assert!(matches!(outcome, OutboxOutcome::Enqueued { row } if row.enqueue_id == 5));
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(
        report.is_sound(),
        "a replay upcasts the same way: {report:?}"
    );
}
