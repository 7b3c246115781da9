//! Tests of the outbox projection's rules: enqueue by idempotency key, the push lane's
//! transitions, claims and acks by a peer, expiry, pruning, and the index tables.

use annals::testing::setup::ExpectDone;
use std::collections::BTreeSet;

use annals::outbox::{self, state_json};
use annals::outbox::{
    ACK_ROWS_MAX, CLAIM_LEASE_MS, CLAIM_RETRY_MS, CLAIM_ROWS_MAX, KEY_BYTES_MAX, MAX_AGE_MS,
    PAYLOAD_BYTES_MAX, SWEEP_ROWS_MAX,
};
use annals::outbox::{
    AckRefusal, Backoff, ClaimToken, ExpiredRow, ExpiryReason, OutboxCommand, OutboxOutcome,
    OutboxRefusal, OutboxRow, OutboxState, PullCommand, PullOutcome, RowAck, SweepCommand,
    SweepOutcome,
};
use annals::{
    Direction, Error, ExpectedVersion, NewEvent, Position, Store, error::StoreError,
    log::StreamVersion,
};

use crate::common;

const T0: u64 = 1_700_000_000_000;
const MINUTE: u64 = 60_000;
const HOUR: u64 = 60 * MINUTE;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn enqueue_command(key: &str, peer: &str, payload: &[u8], now_ms: u64) -> OutboxCommand {
    OutboxCommand::Enqueue {
        key: key.into(),
        peer: peer.into(),
        kind: "event".into(),
        payload: payload.to_vec(),
        now_ms,
    }
}

fn enqueue(store: &Store, key: &str, peer: &str, now_ms: u64) -> annals::Result<OutboxOutcome> {
    store.execute(&enqueue_command(key, peer, key.as_bytes(), now_ms))
}

/// Enqueues `count` rows `<prefix>-0000…` for `peer` in one transaction, one ms apart.
fn enqueue_many(store: &Store, prefix: &str, peer: &str, count: u64, now_ms: u64) -> TestResult {
    store.write(|session| {
        for n in 0..count {
            let key = format!("{prefix}-{n:04}");
            session
                .execute(&enqueue_command(&key, peer, b"x", now_ms + n))?
                .expect_done();
        }
        Ok(())
    })?;
    Ok(())
}

fn token(name: &str) -> ClaimToken {
    ClaimToken(name.into())
}

fn claim(store: &Store, peer: &str, token_name: &str, limit: u32, now_ms: u64) -> PullOutcome {
    store
        .execute(&PullCommand::Claim {
            peer: peer.into(),
            token: token(token_name),
            limit,
            lease_ms: CLAIM_LEASE_MS,
            now_ms,
        })
        .expect("claim")
}

/// The keys a claim took; panics on a refusal.
fn claimed_keys(outcome: PullOutcome) -> Vec<String> {
    match outcome {
        PullOutcome::Claimed { rows, .. } => rows.into_iter().map(|row| row.key).collect(),
        other => panic!("expected a claim, got {other:?}"),
    }
}

fn ack(store: &Store, peer: &str, acks: &[(&str, &str)], now_ms: u64) -> PullOutcome {
    store
        .execute(&PullCommand::Ack {
            peer: peer.into(),
            acks: acks
                .iter()
                .map(|(key, token_name)| RowAck {
                    key: (*key).into(),
                    token: token(token_name),
                })
                .collect(),
            now_ms,
        })
        .expect("ack")
}

fn acked(keys: &[&str], refused: &[(&str, OutboxRefusal)]) -> PullOutcome {
    PullOutcome::Acked {
        acked: keys.iter().map(|key| (*key).to_owned()).collect(),
        refused: refused
            .iter()
            .map(|(key, reason)| AckRefusal {
                key: (*key).to_owned(),
                reason: *reason,
            })
            .collect(),
    }
}

fn row(store: &Store, key: &str) -> OutboxRow {
    outbox::row(&store.snapshot().expect("state").state(), key)
        .expect("read row")
        .expect("row exists")
}

fn state_of(store: &Store, key: &str) -> OutboxState {
    row(store, key).state
}

fn keys(rows: &[OutboxRow]) -> Vec<&str> {
    rows.iter().map(|row| row.key.as_str()).collect()
}

fn host(store: &Store, command: OutboxCommand) -> OutboxOutcome {
    store.execute(&command).expect("outbox command")
}

fn retry(key: &str, now_ms: u64) -> OutboxCommand {
    OutboxCommand::Retry {
        key: key.into(),
        backoff: Backoff {
            base_ms: 1_000,
            max_ms: 5_000,
        },
        last_error: Some("peer answered 503".into()),
        now_ms,
    }
}

fn expire(store: &Store, now_ms: u64) -> SweepOutcome {
    store
        .execute(&SweepCommand::Expire {
            now_ms,
            max_age_ms: MAX_AGE_MS,
            claim_retry_ms: CLAIM_RETRY_MS,
        })
        .expect("expire")
}

fn prune(store: &Store, now_ms: u64, older_than_ms: u64) -> SweepOutcome {
    store
        .execute(&SweepCommand::Prune {
            now_ms,
            older_than_ms,
        })
        .expect("prune")
}

fn records_in(store: &Store) -> u64 {
    store.snapshot().expect("head").head().expect("head").next.0
}

fn stream_kinds(store: &Store, key: &str) -> Vec<String> {
    store
        .snapshot()
        .expect("read stream")
        .read_stream(
            &format!("outbox/{key}"),
            StreamVersion(0),
            Direction::Forward,
            usize::MAX,
        )
        .expect("read stream")
        .into_iter()
        .map(|record| record.kind)
        .collect()
}

/// Checks each index table against what the rows say it must hold: `due` the pending rows,
/// `by_peer` the open rows, `by_state` and `by_enqueue` every row.
fn assert_indexes_match_rows(store: &Store) {
    let json = state_json(&store.snapshot().expect("state").state()).expect("state json");
    let text = |v: &serde_json::Value| v.as_str().expect("a string").to_owned();
    let number = |v: &serde_json::Value| v.as_u64().expect("a number");
    let mut due = BTreeSet::new();
    let mut by_peer = BTreeSet::new();
    let mut by_state = BTreeSet::new();
    let mut by_enqueue = BTreeSet::new();
    for row in json["rows"].as_array().expect("rows") {
        let (key, created) = (text(&row["key"]), number(&row["created_at_ms"]));
        let enqueue_id = number(&row["enqueue_id"]);
        by_enqueue.insert((enqueue_id, key.clone()));
        let state = text(&row["state"]);
        let code = ["pending", "waiting", "claimed", "done", "expired"]
            .iter()
            .position(|s| *s == state)
            .expect("a known state") as u64;
        if state == "pending" {
            due.insert((number(&row["next_at_ms"]), key.clone()));
        }
        if code <= 2 {
            by_peer.insert((text(&row["peer"]), enqueue_id, key.clone()));
        }
        by_state.insert((code, created, key));
    }
    let index = |name: &str| json[name].as_array().expect("an index").clone();
    let found_due: BTreeSet<_> = index("due")
        .iter()
        .map(|e| (number(&e["next_at_ms"]), text(&e["key"])))
        .collect();
    let found_by_peer: BTreeSet<_> = index("by_peer")
        .iter()
        .map(|e| (text(&e["peer"]), number(&e["enqueue_id"]), text(&e["key"])))
        .collect();
    let found_by_enqueue: BTreeSet<_> = index("by_enqueue")
        .iter()
        .map(|e| (number(&e["enqueue_id"]), text(&e["key"])))
        .collect();
    let found_by_state: BTreeSet<_> = index("by_state")
        .iter()
        .map(|e| {
            (
                number(&e["state"]),
                number(&e["created_at_ms"]),
                text(&e["key"]),
            )
        })
        .collect();
    assert_eq!(found_due, due, "outbox.due");
    assert_eq!(found_by_peer, by_peer, "outbox.by_peer");
    assert_eq!(found_by_state, by_state, "outbox.by_state");
    assert_eq!(found_by_enqueue, by_enqueue, "outbox.by_enqueue");
    assert_eq!(index("due").len(), due.len(), "no duplicate due entries");
}

fn assert_sound(store: &Store) {
    assert_indexes_match_rows(store);
    assert!(
        annals::Audit::of(store)
            .verify()
            .expect("verify")
            .is_sound()
    );
}

// ---------------------------------------------------------------------------------------
// Enqueue

#[test]
fn enqueue_adds_a_pending_row_due_at_once() -> TestResult {
    let (_dir, store) = common::store();
    let outcome = store.execute(&enqueue_command("ev:m1:d1", "runtime:b", b"{}", T0))?;
    let expected = OutboxRow {
        key: "ev:m1:d1".into(),
        peer: "runtime:b".into(),
        kind: "event".into(),
        enqueue_id: 1,
        payload: b"{}".to_vec(),
        state: OutboxState::Pending,
        attempts: 0,
        next_at_ms: Some(T0),
        first_failed_at_ms: None,
        last_error: None,
        created_at_ms: T0,
        claim: None,
        claim_tokens: Vec::new(),
    };
    assert_eq!(
        outcome,
        OutboxOutcome::Enqueued {
            row: expected.clone()
        }
    );
    assert_eq!(row(&store, "ev:m1:d1"), expected);
    assert_eq!(stream_kinds(&store, "ev:m1:d1"), ["outbox.enqueued"]);
    assert_sound(&store);
    Ok(())
}

#[test]
fn repeated_enqueue_adds_nothing_and_says_the_row_exists() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:b", T0)?.expect_done();
    let before = records_in(&store);
    // Another peer, payload and time: still the same key, so nothing is added.
    let outcome = store.execute(&enqueue_command("k", "runtime:c", b"other", T0 + 5))?;
    let OutboxOutcome::AlreadyEnqueued { row: existing } = outcome else {
        panic!("expected AlreadyEnqueued, got {outcome:?}");
    };
    assert_eq!(existing.peer, "runtime:b");
    assert_eq!(existing.payload, b"k");
    assert_eq!(records_in(&store), before, "no event appended");
    assert_sound(&store);
    Ok(())
}

#[test]
fn repeated_enqueue_of_a_finished_row_adds_nothing() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:b", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Deliver {
            key: "k".into(),
            now_ms: T0 + 1,
        },
    )
    .expect_done();
    let outcome = enqueue(&store, "k", "runtime:b", T0 + 2)?;
    assert!(
        matches!(outcome, OutboxOutcome::AlreadyEnqueued { row } if row.state == OutboxState::Done)
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn a_pruned_key_can_be_enqueued_again() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:b", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Deliver {
            key: "k".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    prune(&store, T0 + 2 * HOUR, HOUR).expect_done();
    assert!(matches!(
        enqueue(&store, "k", "runtime:b", T0 + 3 * HOUR)?,
        OutboxOutcome::Enqueued { .. }
    ));
    assert_eq!(
        stream_kinds(&store, "k"),
        [
            "outbox.enqueued",
            "outbox.delivered",
            "outbox.pruned",
            "outbox.enqueued"
        ]
    );
    assert_eq!(row(&store, "k").created_at_ms, T0 + 3 * HOUR);
    assert_sound(&store);
    Ok(())
}

#[test]
fn enqueue_refuses_bad_input_naming_the_field() -> TestResult {
    let (_dir, store) = common::store();
    let long_key = "k".repeat(KEY_BYTES_MAX + 1);
    let big = vec![0u8; PAYLOAD_BYTES_MAX + 1];
    let cases: [(&str, &str, &[u8], &str); 6] = [
        ("", "runtime:b", b"x", "key"),
        (&long_key, "runtime:b", b"x", "key"),
        ("a\nb", "runtime:b", b"x", "key"),
        ("k", "", b"x", "peer"),
        ("k", "runtime:\u{7}", b"x", "peer"),
        ("k", "runtime:b", &big, "payload"),
    ];
    for (key, peer, payload, field) in cases {
        match store.execute(&enqueue_command(key, peer, payload, T0)) {
            Err(Error::InvalidCommand { field: named, .. }) => {
                assert_eq!(named, field, "for key {key:?} peer {peer:?}");
            }
            other => panic!("expected InvalidCommand({field}), got {other:?}"),
        }
    }
    assert_eq!(records_in(&store), 0, "nothing appended");
    Ok(())
}

#[test]
fn enqueue_accepts_a_key_and_payload_at_their_limits() -> TestResult {
    let (_dir, store) = common::store();
    let key = "k".repeat(KEY_BYTES_MAX);
    let payload = vec![7u8; PAYLOAD_BYTES_MAX];
    let outcome = store.execute(&enqueue_command(&key, "runtime:b", &payload, T0))?;
    assert!(matches!(outcome, OutboxOutcome::Enqueued { .. }));
    assert_eq!(row(&store, &key).payload, payload);
    assert_sound(&store);
    Ok(())
}

#[test]
fn raw_appends_of_outbox_kinds_are_refused() -> TestResult {
    let (_dir, store) = common::store();
    let event = NewEvent::new("outbox.enqueued", T0, Vec::new());
    let refused = store.append("outbox/k", ExpectedVersion::Any, &[event]);
    assert!(matches!(
        refused,
        Err(Error::Store(StoreError::ReservedKind { .. }))
    ));
    Ok(())
}

#[test]
fn an_outbox_event_that_does_not_decode_is_refused_and_writes_nothing() -> TestResult {
    let (_dir, store) = common::store();
    let garbage = NewEvent::new("outbox.enqueued", T0, vec![0xFF; 3]);
    let refused = store
        .write(|session| session.append_unchecked("outbox/k", ExpectedVersion::Any, &[garbage]));
    assert!(matches!(refused, Err(Error::UndecodableEvent { .. })));
    assert_eq!(records_in(&store), 0);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Due rows and pending rows of a peer

#[test]
fn due_rows_are_pending_rows_past_next_at_in_enqueue_order() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "b", "runtime:p", T0)?.expect_done();
    enqueue(&store, "a", "runtime:p", T0)?.expect_done();
    enqueue(&store, "c", "runtime:q", T0 - 10)?.expect_done();
    enqueue(&store, "later", "runtime:p", T0 + 100)?.expect_done();
    let state = store.snapshot()?.state();
    assert_eq!(keys(&outbox::due(&state, T0, 10)?), ["b", "a", "c"]);
    assert_eq!(keys(&outbox::due(&state, T0, 2)?), ["b", "a"], "limit");
    assert_eq!(keys(&outbox::due(&state, T0 - 11, 10)?), Vec::<&str>::new());
    assert_eq!(
        keys(&outbox::due(&state, T0 + 100, 10)?),
        ["b", "a", "c", "later"],
        "next_at <= now is due, in enqueue order whatever the next_at"
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn a_retried_row_is_due_again_only_after_its_backoff() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    host(&store, retry("k", T0 + 10)).expect_done();
    let state = store.snapshot()?.state();
    assert!(outbox::due(&state, T0 + 10, 10)?.is_empty());
    assert_eq!(keys(&outbox::due(&state, T0 + 1_010, 10)?), ["k"]);
    assert_sound(&store);
    Ok(())
}

#[test]
fn waiting_claimed_done_and_expired_rows_are_never_due() -> TestResult {
    let (_dir, store) = common::store();
    for key in ["waiting", "claimed", "done", "expired", "pending"] {
        enqueue(
            &store,
            key,
            if key == "claimed" {
                "runtime:c"
            } else {
                "runtime:p"
            },
            T0,
        )?
        .expect_done();
    }
    host(
        &store,
        OutboxCommand::Park {
            key: "waiting".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    claimed_keys(claim(&store, "runtime:c", "t1", 10, T0));
    host(
        &store,
        OutboxCommand::Deliver {
            key: "done".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    host(
        &store,
        OutboxCommand::GiveUp {
            key: "expired".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    let state = store.snapshot()?.state();
    assert_eq!(keys(&outbox::due(&state, u64::MAX, 100)?), ["pending"]);
    assert_sound(&store);
    Ok(())
}

#[test]
fn pending_for_lists_a_peers_new_or_due_pending_rows_in_creation_order() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "z-first", "runtime:p", T0)?.expect_done();
    enqueue(&store, "a-second", "runtime:p", T0 + 1)?.expect_done();
    enqueue(&store, "failed", "runtime:p", T0 + 2)?.expect_done();
    enqueue(&store, "parked", "runtime:p", T0 + 3)?.expect_done();
    enqueue(&store, "other-peer", "runtime:q", T0)?.expect_done();
    enqueue(&store, "prefix-peer", "runtime:pp", T0)?.expect_done();
    host(&store, retry("failed", T0 + 10)).expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "parked".into(),
            now_ms: T0 + 10,
        },
    )
    .expect_done();
    let state = store.snapshot()?.state();
    assert_eq!(
        keys(&outbox::pending_for(&state, "runtime:p", T0 + 10, 10)?),
        ["z-first", "a-second"],
        "a failed row waits for its backoff; a parked one is not pending"
    );
    assert_eq!(
        keys(&outbox::pending_for(&state, "runtime:p", T0 + 1_010, 10)?),
        ["z-first", "a-second", "failed"]
    );
    assert_eq!(
        keys(&outbox::pending_for(&state, "runtime:p", T0 + 1_010, 1)?),
        ["z-first"],
        "limit"
    );
    assert_eq!(
        keys(&outbox::open_for(&state, "runtime:p", 10)?),
        ["z-first", "a-second", "failed", "parked"]
    );
    assert_sound(&store);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The push lane: deliver, park, retry, give up

#[test]
fn deliver_marks_a_pending_or_waiting_row_done() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "pending", "runtime:p", T0)?.expect_done();
    enqueue(&store, "waiting", "runtime:p", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "waiting".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    for key in ["pending", "waiting"] {
        let outcome = host(
            &store,
            OutboxCommand::Deliver {
                key: key.into(),
                now_ms: T0 + 1,
            },
        );
        let OutboxOutcome::Updated { row: moved } = outcome else {
            panic!("expected Updated, got {outcome:?}");
        };
        assert_eq!(moved.state, OutboxState::Done);
        assert_eq!(moved.next_at_ms, None);
        assert_eq!(row(&store, key), moved);
    }
    assert_sound(&store);
    Ok(())
}

#[test]
fn deliver_of_a_claimed_row_is_refused_wrong_state() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    let before = records_in(&store);
    let outcome = host(
        &store,
        OutboxCommand::Deliver {
            key: "k".into(),
            now_ms: T0 + 1,
        },
    );
    assert!(matches!(
        outcome,
        OutboxOutcome::Refused { reason: OutboxRefusal::WrongState, row: Some(r) } if r.state == OutboxState::Claimed
    ));
    assert_eq!(records_in(&store), before);
    assert_sound(&store);
    Ok(())
}

#[test]
fn a_command_on_a_missing_row_is_refused_missing() -> TestResult {
    let (_dir, store) = common::store();
    let commands = [
        OutboxCommand::Deliver {
            key: "nope".into(),
            now_ms: T0,
        },
        OutboxCommand::Park {
            key: "nope".into(),
            now_ms: T0,
        },
        retry("nope", T0),
        OutboxCommand::GiveUp {
            key: "nope".into(),
            now_ms: T0,
        },
    ];
    for command in commands {
        assert_eq!(
            host(&store, command),
            OutboxOutcome::Refused {
                reason: OutboxRefusal::Missing,
                row: None
            }
        );
    }
    assert_eq!(records_in(&store), 0);
    Ok(())
}

#[test]
fn park_moves_a_pending_row_to_waiting_with_one_more_attempt() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    host(&store, retry("k", T0)).expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "k".into(),
            now_ms: T0 + 5_000,
        },
    )
    .expect_done();
    let parked = row(&store, "k");
    assert_eq!(parked.state, OutboxState::Waiting);
    assert_eq!(parked.attempts, 2);
    assert_eq!(parked.next_at_ms, None);
    assert_eq!(parked.first_failed_at_ms, Some(T0), "kept from the retry");
    assert_eq!(
        stream_kinds(&store, "k").last().map(String::as_str),
        Some("outbox.parked")
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn park_or_retry_of_a_waiting_row_is_refused_wrong_state() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "k".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    let again = host(
        &store,
        OutboxCommand::Park {
            key: "k".into(),
            now_ms: T0 + 1,
        },
    );
    assert!(matches!(
        again,
        OutboxOutcome::Refused {
            reason: OutboxRefusal::WrongState,
            ..
        }
    ));
    assert!(matches!(
        host(&store, retry("k", T0 + 1)),
        OutboxOutcome::Refused {
            reason: OutboxRefusal::WrongState,
            ..
        }
    ));
    assert_eq!(row(&store, "k").attempts, 1);
    assert_sound(&store);
    Ok(())
}

#[test]
fn retry_schedules_the_next_push_by_a_doubling_backoff_capped_at_its_max() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    // base 1 s, max 5 s: waits of 1, 2, 4, 5, 5 seconds.
    let waits = [1_000, 2_000, 4_000, 5_000, 5_000];
    let mut now = T0;
    for (n, wait) in waits.into_iter().enumerate() {
        let OutboxOutcome::Updated { row: retried } = host(&store, retry("k", now)) else {
            panic!("retry refused");
        };
        assert_eq!(retried.attempts, n as u32 + 1);
        assert_eq!(
            retried.next_at_ms,
            Some(now + wait),
            "after failure {}",
            n + 1
        );
        assert_eq!(retried.state, OutboxState::Pending);
        assert_eq!(retried.last_error.as_deref(), Some("peer answered 503"));
        now += wait;
    }
    assert_eq!(stream_kinds(&store, "k").len(), 1 + waits.len());
    assert_sound(&store);
    Ok(())
}

#[test]
fn backoff_doubles_from_its_base_and_never_passes_its_max() {
    let backoff = Backoff {
        base_ms: 30_000,
        max_ms: HOUR,
    };
    assert_eq!(backoff.delay_ms(1), 30_000);
    assert_eq!(backoff.delay_ms(2), 60_000);
    assert_eq!(backoff.delay_ms(7), HOUR.min(30_000 << 6));
    assert_eq!(
        backoff.delay_ms(64),
        HOUR,
        "a shift past 64 bits is the max"
    );
    assert_eq!(backoff.delay_ms(u32::MAX), HOUR);
    let huge = Backoff {
        base_ms: u64::MAX / 2,
        max_ms: u64::MAX,
    };
    assert_eq!(
        huge.delay_ms(3),
        u64::MAX,
        "an overflowing product is the max"
    );
}

#[test]
fn retry_sets_first_failed_at_on_the_first_failure_only() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    host(&store, retry("k", T0 + 100)).expect_done();
    host(&store, retry("k", T0 + 5_000)).expect_done();
    let retried = row(&store, "k");
    assert_eq!(retried.first_failed_at_ms, Some(T0 + 100));
    assert_eq!(retried.attempts, 2);
    assert_sound(&store);
    Ok(())
}

#[test]
fn retry_with_a_zero_base_or_a_max_below_it_is_invalid() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    let with = |base_ms, max_ms| OutboxCommand::Retry {
        key: "k".into(),
        backoff: Backoff { base_ms, max_ms },
        last_error: None,
        now_ms: T0,
    };
    for (command, field) in [
        (with(0, 10), "backoff.base_ms"),
        (with(10, 9), "backoff.max_ms"),
    ] {
        match store.execute(&command) {
            Err(Error::InvalidCommand { field: named, .. }) => assert_eq!(named, field),
            other => panic!("expected InvalidCommand({field}), got {other:?}"),
        }
    }
    let long_error = OutboxCommand::Retry {
        key: "k".into(),
        backoff: Backoff::DEFAULT,
        last_error: Some("e".repeat(1025)),
        now_ms: T0,
    };
    assert!(matches!(
        store.execute(&long_error),
        Err(Error::InvalidCommand {
            field: "last_error",
            ..
        })
    ));
    assert_eq!(row(&store, "k").attempts, 0);
    Ok(())
}

#[test]
fn give_up_expires_a_pending_or_waiting_row_but_not_a_claimed_one() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "pending", "runtime:p", T0)?.expect_done();
    enqueue(&store, "waiting", "runtime:p", T0 + 1)?.expect_done();
    enqueue(&store, "claimed", "runtime:c", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "waiting".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    claimed_keys(claim(&store, "runtime:c", "t1", 10, T0));
    for key in ["pending", "waiting"] {
        host(
            &store,
            OutboxCommand::GiveUp {
                key: key.into(),
                now_ms: T0 + 2,
            },
        )
        .expect_done();
        assert_eq!(state_of(&store, key), OutboxState::Expired);
    }
    let outcome = host(
        &store,
        OutboxCommand::GiveUp {
            key: "claimed".into(),
            now_ms: T0 + 2,
        },
    );
    assert!(matches!(
        outcome,
        OutboxOutcome::Refused {
            reason: OutboxRefusal::WrongState,
            ..
        }
    ));
    assert_sound(&store);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Claims

#[test]
fn claim_takes_only_the_peers_own_claimable_rows_in_enqueue_order() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "p-2", "runtime:p", T0 + 2)?.expect_done();
    enqueue(&store, "p-1", "runtime:p", T0 + 1)?.expect_done();
    enqueue(&store, "p-waiting", "runtime:p", T0 + 3)?.expect_done();
    enqueue(&store, "p-done", "runtime:p", T0)?.expect_done();
    enqueue(&store, "q-1", "runtime:q", T0)?.expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "p-waiting".into(),
            now_ms: T0 + 3,
        },
    )
    .expect_done();
    host(
        &store,
        OutboxCommand::Deliver {
            key: "p-done".into(),
            now_ms: T0 + 3,
        },
    )
    .expect_done();
    let outcome = claim(&store, "runtime:p", "t1", 10, T0 + 10);
    let PullOutcome::Claimed {
        token: claimed_token,
        expires_at_ms,
        rows,
    } = outcome
    else {
        panic!("expected a claim, got {outcome:?}");
    };
    assert_eq!(claimed_token, token("t1"));
    assert_eq!(expires_at_ms, T0 + 10 + CLAIM_LEASE_MS);
    assert_eq!(keys(&rows), ["p-2", "p-1", "p-waiting"]);
    for claimed in &rows {
        assert_eq!(row(&store, &claimed.key), *claimed);
        assert_eq!(claimed.state, OutboxState::Claimed);
        assert_eq!(claimed.next_at_ms, None);
        let held = claimed.claim.as_ref().expect("a claim");
        assert_eq!(
            (held.claimed_at_ms, held.expires_at_ms),
            (T0 + 10, expires_at_ms)
        );
        assert_eq!(
            stream_kinds(&store, &claimed.key)
                .last()
                .map(String::as_str),
            Some("outbox.claimed")
        );
    }
    assert_eq!(
        state_of(&store, "q-1"),
        OutboxState::Pending,
        "another peer's row"
    );
    assert_eq!(state_of(&store, "p-done"), OutboxState::Done);
    assert_sound(&store);
    Ok(())
}

#[test]
fn claim_limit_is_clamped_between_one_and_the_maximum() -> TestResult {
    let (_dir, store) = common::store();
    enqueue_many(&store, "r", "runtime:p", u64::from(CLAIM_ROWS_MAX) + 5, T0)?;
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t0", 0, T0 + 500)),
        ["r-0000"]
    );
    let many = claimed_keys(claim(&store, "runtime:p", "t1", 1_000, T0 + 500));
    assert_eq!(many.len(), CLAIM_ROWS_MAX as usize);
    assert_eq!(many.first().map(String::as_str), Some("r-0001"));
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t2", 3, T0 + 500)).len(),
        3
    );
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t3", 3, T0 + 500)),
        ["r-0104"],
        "only what is left"
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn claim_with_nothing_to_take_claims_nothing_and_appends_nothing() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:q", T0)?.expect_done();
    let before = records_in(&store);
    assert!(claimed_keys(claim(&store, "runtime:p", "t1", 10, T0)).is_empty());
    assert_eq!(records_in(&store), before);
    Ok(())
}

#[test]
fn claim_leaves_a_row_under_a_live_claim_alone() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "held", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    enqueue(&store, "new", "runtime:p", T0 + 1)?.expect_done();
    let just_before_lapse = T0 + CLAIM_LEASE_MS - 1;
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t2", 10, just_before_lapse)),
        ["new"]
    );
    let held = row(&store, "held");
    assert_eq!(held.claim.map(|c| c.token), Some(token("t1")));
    assert_sound(&store);
    Ok(())
}

#[test]
fn a_lapsed_claim_can_be_claimed_again_under_a_new_token() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    let at_lapse = T0 + CLAIM_LEASE_MS;
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t2", 10, at_lapse)),
        ["k"]
    );
    let retaken = row(&store, "k");
    let held = retaken.claim.expect("claimed");
    assert_eq!(held.token, token("t2"));
    assert_eq!(held.expires_at_ms, at_lapse + CLAIM_LEASE_MS);
    assert_eq!(retaken.claim_tokens, [token("t1"), token("t2")]);
    assert_sound(&store);
    Ok(())
}

#[test]
fn claim_under_a_token_a_row_was_claimed_under_before_is_refused() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    let lapse = CLAIM_LEASE_MS;
    let before = records_in(&store);
    // The same token again, once the claim lapsed.
    assert_eq!(
        claim(&store, "runtime:p", "t1", 10, T0 + lapse),
        PullOutcome::Refused {
            reason: OutboxRefusal::TokenReused,
            key: "k".into()
        }
    );
    assert_eq!(records_in(&store), before);
    // And after another token took it in between (t1, t2, t1).
    claimed_keys(claim(&store, "runtime:p", "t2", 10, T0 + lapse));
    assert!(matches!(
        claim(&store, "runtime:p", "t1", 10, T0 + 2 * lapse),
        PullOutcome::Refused {
            reason: OutboxRefusal::TokenReused,
            ..
        }
    ));
    assert_eq!(row(&store, "k").claim.map(|c| c.token), Some(token("t2")));
    assert_sound(&store);
    Ok(())
}

#[test]
fn claim_refuses_bad_input_naming_the_field() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    let with = |peer: &str, token_name: &str, lease_ms| PullCommand::Claim {
        peer: peer.into(),
        token: token(token_name),
        limit: 10,
        lease_ms,
        now_ms: T0,
    };
    let long_token = "t".repeat(129);
    for (command, field) in [
        (with("", "t1", CLAIM_LEASE_MS), "peer"),
        (with("runtime:p", "", CLAIM_LEASE_MS), "token"),
        (with("runtime:p", &long_token, CLAIM_LEASE_MS), "token"),
        (with("runtime:p", "t\t1", CLAIM_LEASE_MS), "token"),
        (with("runtime:p", "t1", 0), "lease_ms"),
    ] {
        match store.execute(&command) {
            Err(Error::InvalidCommand { field: named, .. }) => assert_eq!(named, field),
            other => panic!("expected InvalidCommand({field}), got {other:?}"),
        }
    }
    assert_eq!(state_of(&store, "k"), OutboxState::Pending);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Acks

#[test]
fn ack_with_the_claims_peer_and_token_marks_the_rows_done_and_returns_their_keys() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "a", "runtime:p", T0)?.expect_done();
    enqueue(&store, "b", "runtime:p", T0 + 1)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0 + 2));
    assert_eq!(
        ack(&store, "runtime:p", &[("b", "t1"), ("a", "t1")], T0 + 3),
        acked(&["b", "a"], &[])
    );
    for key in ["a", "b"] {
        let done = row(&store, key);
        assert_eq!(done.state, OutboxState::Done);
        assert_eq!(done.claim, None);
        assert_eq!(
            stream_kinds(&store, key).last().map(String::as_str),
            Some("outbox.acked")
        );
    }
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_with_another_peers_name_is_refused_other_peer() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    let before = records_in(&store);
    assert_eq!(
        ack(&store, "runtime:q", &[("k", "t1")], T0 + 1),
        acked(&[], &[("k", OutboxRefusal::OtherPeer)])
    );
    assert_eq!(records_in(&store), before);
    assert_eq!(state_of(&store, "k"), OutboxState::Claimed);
    Ok(())
}

#[test]
fn ack_with_another_token_is_refused_other_token() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    assert_eq!(
        ack(&store, "runtime:p", &[("k", "guess")], T0 + 1),
        acked(&[], &[("k", OutboxRefusal::OtherToken)])
    );
    assert_eq!(state_of(&store, "k"), OutboxState::Claimed);
    Ok(())
}

#[test]
fn ack_by_the_earlier_claimant_after_a_takeover_is_refused() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    claimed_keys(claim(&store, "runtime:p", "t2", 10, T0 + CLAIM_LEASE_MS));
    assert_eq!(
        ack(&store, "runtime:p", &[("k", "t1")], T0 + CLAIM_LEASE_MS + 1),
        acked(&[], &[("k", OutboxRefusal::OtherToken)])
    );
    assert_eq!(
        ack(&store, "runtime:p", &[("k", "t2")], T0 + CLAIM_LEASE_MS + 2),
        acked(&["k"], &[])
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_of_a_lapsed_claim_nobody_took_again_is_accepted() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    assert_eq!(
        ack(&store, "runtime:p", &[("k", "t1")], T0 + 3 * CLAIM_LEASE_MS),
        acked(&["k"], &[])
    );
    assert_eq!(state_of(&store, "k"), OutboxState::Done);
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_of_a_row_that_is_not_claimed_is_refused_wrong_state() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "pending", "runtime:p", T0)?.expect_done();
    enqueue(&store, "acked", "runtime:p", T0 + 1)?.expect_done();
    // Claim only "acked": the oldest row is "pending", so deliver it first.
    host(
        &store,
        OutboxCommand::Deliver {
            key: "pending".into(),
            now_ms: T0 + 1,
        },
    )
    .expect_done();
    enqueue(&store, "still-pending", "runtime:q", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0 + 2));
    ack(&store, "runtime:p", &[("acked", "t1")], T0 + 3).expect_done();
    assert_eq!(
        ack(
            &store,
            "runtime:p",
            &[("acked", "t1"), ("pending", "t1")],
            T0 + 4
        ),
        acked(
            &[],
            &[
                ("acked", OutboxRefusal::WrongState),
                ("pending", OutboxRefusal::WrongState)
            ]
        ),
        "an ack repeated after it succeeded, and a row delivered by push"
    );
    assert_eq!(
        ack(&store, "runtime:q", &[("still-pending", "t1")], T0 + 4),
        acked(&[], &[("still-pending", OutboxRefusal::WrongState)])
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_of_a_missing_row_is_refused_missing() -> TestResult {
    let (_dir, store) = common::store();
    assert_eq!(
        ack(&store, "runtime:p", &[("nope", "t1")], T0),
        acked(&[], &[("nope", OutboxRefusal::Missing)])
    );
    assert_eq!(records_in(&store), 0);
    Ok(())
}

#[test]
fn ack_naming_a_row_twice_acks_it_once() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    assert_eq!(
        ack(&store, "runtime:p", &[("k", "t1"), ("k", "t1")], T0 + 1),
        acked(&["k"], &[("k", OutboxRefusal::WrongState)])
    );
    assert_eq!(
        stream_kinds(&store, "k"),
        ["outbox.enqueued", "outbox.claimed", "outbox.acked"]
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_mixes_acked_and_refused_rows_in_the_order_named() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "a", "runtime:p", T0)?.expect_done();
    enqueue(&store, "b", "runtime:p", T0 + 1)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0 + 2));
    assert_eq!(
        ack(
            &store,
            "runtime:p",
            &[("a", "wrong"), ("b", "t1"), ("c", "t1")],
            T0 + 3
        ),
        acked(
            &["b"],
            &[
                ("a", OutboxRefusal::OtherToken),
                ("c", OutboxRefusal::Missing)
            ]
        )
    );
    assert_eq!(state_of(&store, "a"), OutboxState::Claimed);
    assert_sound(&store);
    Ok(())
}

#[test]
fn ack_of_too_many_rows_or_a_malformed_key_is_invalid() -> TestResult {
    let (_dir, store) = common::store();
    let too_many = PullCommand::Ack {
        peer: "runtime:p".into(),
        acks: (0..=ACK_ROWS_MAX)
            .map(|n| RowAck {
                key: format!("k{n}"),
                token: token("t1"),
            })
            .collect(),
        now_ms: T0,
    };
    assert!(matches!(
        store.execute(&too_many),
        Err(Error::InvalidCommand { field: "acks", .. })
    ));
    let empty_key = PullCommand::Ack {
        peer: "runtime:p".into(),
        acks: vec![RowAck {
            key: String::new(),
            token: token("t1"),
        }],
        now_ms: T0,
    };
    assert!(matches!(
        store.execute(&empty_key),
        Err(Error::InvalidCommand { field: "key", .. })
    ));
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Expiry

#[test]
fn expire_gives_up_on_pending_and_waiting_rows_older_than_the_maximum_age() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "old-pending", "runtime:p", T0)?.expect_done();
    enqueue(&store, "old-waiting", "runtime:p", T0 + 1)?.expect_done();
    enqueue(&store, "at-the-age", "runtime:p", T0 + 2)?.expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "old-waiting".into(),
            now_ms: T0 + 1,
        },
    )
    .expect_done();
    let now = T0 + 2 + MAX_AGE_MS;
    let outcome = expire(&store, now);
    assert_eq!(
        outcome,
        SweepOutcome::Expired {
            rows: vec![
                ExpiredRow {
                    key: "old-pending".into(),
                    reason: ExpiryReason::MaxAge
                },
                ExpiredRow {
                    key: "old-waiting".into(),
                    reason: ExpiryReason::MaxAge
                },
            ],
            more: false,
        }
    );
    assert_eq!(state_of(&store, "old-pending"), OutboxState::Expired);
    assert_eq!(state_of(&store, "old-waiting"), OutboxState::Expired);
    assert_eq!(
        state_of(&store, "at-the-age"),
        OutboxState::Pending,
        "created exactly max_age ago is not older"
    );
    assert_eq!(
        stream_kinds(&store, "old-pending")
            .last()
            .map(String::as_str),
        Some("outbox.expired")
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn expire_gives_up_on_lapsed_claims_only_past_the_claim_retry_window() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "old-lapsed", "runtime:p", T0)?.expect_done();
    enqueue(&store, "old-live", "runtime:q", T0)?.expect_done();
    enqueue(&store, "young-lapsed", "runtime:r", T0 + 2 * HOUR)?.expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 10, T0));
    claimed_keys(claim(&store, "runtime:r", "t1", 10, T0 + 2 * HOUR));
    let now = T0 + CLAIM_RETRY_MS + HOUR;
    claimed_keys(claim(&store, "runtime:q", "t1", 10, now - 1));
    let outcome = expire(&store, now);
    assert_eq!(
        outcome,
        SweepOutcome::Expired {
            rows: vec![ExpiredRow {
                key: "old-lapsed".into(),
                reason: ExpiryReason::ClaimLapsed
            }],
            more: false,
        }
    );
    assert_eq!(state_of(&store, "old-lapsed"), OutboxState::Expired);
    assert_eq!(
        state_of(&store, "old-live"),
        OutboxState::Claimed,
        "a live claim"
    );
    assert_eq!(
        state_of(&store, "young-lapsed"),
        OutboxState::Claimed,
        "still within the retry window"
    );
    assert_eq!(
        ack(&store, "runtime:p", &[("old-lapsed", "t1")], now + 1),
        acked(&[], &[("old-lapsed", OutboxRefusal::WrongState)]),
        "an expired row can no longer be acked"
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn expire_with_nothing_old_appends_nothing() -> TestResult {
    let (_dir, store) = common::store();
    enqueue(&store, "k", "runtime:p", T0)?.expect_done();
    let before = records_in(&store);
    assert_eq!(
        expire(&store, T0 + HOUR),
        SweepOutcome::Expired {
            rows: Vec::new(),
            more: false
        }
    );
    assert_eq!(records_in(&store), before);
    Ok(())
}

#[test]
fn a_sweep_takes_at_most_its_maximum_oldest_first_and_says_more_are_left() -> TestResult {
    let (_dir, store) = common::store();
    enqueue_many(&store, "r", "runtime:p", SWEEP_ROWS_MAX as u64 + 2, T0)?;
    let now = T0 + MAX_AGE_MS + HOUR;
    let SweepOutcome::Expired { rows, more } = expire(&store, now) else {
        panic!("expected Expired");
    };
    assert_eq!(rows.len(), SWEEP_ROWS_MAX);
    assert!(more);
    assert_eq!(rows.first().map(|r| r.key.as_str()), Some("r-0000"));
    let SweepOutcome::Expired { rows, more } = expire(&store, now) else {
        panic!("expected Expired");
    };
    let left: Vec<&str> = rows.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(left, ["r-1000", "r-1001"]);
    assert!(!more);
    let SweepOutcome::Pruned { keys: pruned, more } = prune(&store, now, 0) else {
        panic!("expected Pruned");
    };
    assert_eq!((pruned.len(), more), (SWEEP_ROWS_MAX, true));
    assert_sound(&store);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Pruning

#[test]
fn prune_removes_done_and_expired_rows_older_than_the_window_with_their_index_entries() -> TestResult
{
    let (_dir, store) = common::store();
    enqueue(&store, "done-old", "runtime:p", T0)?.expect_done();
    enqueue(&store, "expired-old", "runtime:p", T0 + 1)?.expect_done();
    enqueue(&store, "done-young", "runtime:p", T0 + 2 * HOUR)?.expect_done();
    enqueue(&store, "open-old", "runtime:p", T0)?.expect_done();
    for key in ["done-old", "done-young"] {
        host(
            &store,
            OutboxCommand::Deliver {
                key: key.into(),
                now_ms: T0 + 2 * HOUR,
            },
        )
        .expect_done();
    }
    host(
        &store,
        OutboxCommand::GiveUp {
            key: "expired-old".into(),
            now_ms: T0 + 1,
        },
    )
    .expect_done();
    let outcome = prune(&store, T0 + 2 * HOUR, HOUR);
    assert_eq!(
        outcome,
        SweepOutcome::Pruned {
            keys: vec!["done-old".into(), "expired-old".into()],
            more: false
        }
    );
    let state = store.snapshot()?.state();
    assert_eq!(outbox::row(&state, "done-old")?, None);
    assert_eq!(outbox::row(&state, "expired-old")?, None);
    assert_eq!(
        keys(&outbox::rows(&state, 10)?),
        ["done-young", "open-old"],
        "young and open rows stay"
    );
    let json = state_json(&state)?;
    for index in ["due", "by_peer", "by_state"] {
        let named: Vec<&str> = json[index]
            .as_array()
            .expect("an index")
            .iter()
            .filter_map(|e| e["key"].as_str())
            .collect();
        assert!(
            !named.contains(&"done-old") && !named.contains(&"expired-old"),
            "{index} still names a pruned row: {named:?}"
        );
    }
    assert_eq!(
        stream_kinds(&store, "done-old").last().map(String::as_str),
        Some("outbox.pruned")
    );
    assert_sound(&store);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Durability and replay

/// A store with rows in every state.
fn busy_store() -> Result<(tempfile::TempDir, Store), Box<dyn std::error::Error>> {
    let (dir, store) = common::store();
    for (n, key) in ["a", "b", "c", "d", "e", "f"].into_iter().enumerate() {
        enqueue(&store, key, "runtime:p", T0 + n as u64)?.expect_done();
    }
    enqueue(&store, "q", "runtime:q", T0)?.expect_done();
    host(&store, retry("q", T0 + 10)).expect_done();
    host(
        &store,
        OutboxCommand::Park {
            key: "a".into(),
            now_ms: T0 + 10,
        },
    )
    .expect_done();
    host(
        &store,
        OutboxCommand::Deliver {
            key: "b".into(),
            now_ms: T0 + 10,
        },
    )
    .expect_done();
    host(
        &store,
        OutboxCommand::GiveUp {
            key: "c".into(),
            now_ms: T0 + 10,
        },
    )
    .expect_done();
    claimed_keys(claim(&store, "runtime:p", "t1", 2, T0 + 20));
    ack(&store, "runtime:p", &[("d", "t1")], T0 + 30).expect_done();
    Ok((dir, store))
}

#[test]
fn outbox_state_survives_reopening_the_store() -> TestResult {
    let (dir, store) = busy_store()?;
    let before = state_json(&store.snapshot()?.state())?;
    let path = store.path().to_path_buf();
    drop(store);
    let reopened = Store::open_with(&path, annals::StoreOptions::default())?;
    assert_eq!(state_json(&reopened.snapshot()?.state())?, before);
    assert_eq!(state_of(&reopened, "a"), OutboxState::Claimed);
    assert_eq!(state_of(&reopened, "d"), OutboxState::Done);
    assert_sound(&reopened);
    drop(dir);
    Ok(())
}

#[test]
fn rebuild_reproduces_the_outbox_state_exactly() -> TestResult {
    let (_dir, store) = busy_store()?;
    let before = state_json(&store.snapshot()?.state())?;
    annals::maintenance::Rebuild::of(&store).run(Some("outbox"))?;
    assert_eq!(state_json(&store.snapshot()?.state())?, before);
    assert_sound(&store);
    Ok(())
}

#[test]
fn commands_in_one_write_see_each_others_rows() -> TestResult {
    let (_dir, store) = common::store();
    let outcome = store.write(|session| {
        session
            .execute(&enqueue_command("k", "runtime:p", b"x", T0))?
            .expect_done();
        session.execute(&PullCommand::Claim {
            peer: "runtime:p".into(),
            token: token("t1"),
            limit: 10,
            lease_ms: CLAIM_LEASE_MS,
            now_ms: T0,
        })
    })?;
    assert_eq!(claimed_keys(outcome), ["k"]);
    assert_eq!(
        store.snapshot()?.get(Position(1))?.map(|r| r.kind),
        Some("outbox.claimed".into())
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn claim_and_expire_look_past_any_number_of_live_claims() -> TestResult {
    let (_dir, store) = common::store();
    // More live claims than one page of an index scan, all created before the lapsed one.
    enqueue_many(&store, "r", "runtime:p", 300, T0)?;
    enqueue(&store, "z-lapsed", "runtime:q", T0 + 400)?.expect_done();
    claimed_keys(claim(&store, "runtime:q", "tq", 10, T0 + 400));
    let now = T0 + CLAIM_RETRY_MS + HOUR;
    for name in ["t1", "t2", "t3"] {
        assert_eq!(
            claimed_keys(claim(&store, "runtime:p", name, 100, now - 1)).len(),
            100
        );
    }
    enqueue(&store, "late", "runtime:p", now)?.expect_done();
    assert_eq!(
        claimed_keys(claim(&store, "runtime:p", "t4", 100, now)),
        ["late"]
    );
    assert_eq!(
        expire(&store, now),
        SweepOutcome::Expired {
            rows: vec![ExpiredRow {
                key: "z-lapsed".into(),
                reason: ExpiryReason::ClaimLapsed
            }],
            more: false,
        }
    );
    let state = store.snapshot()?.state();
    assert_eq!(
        outbox::open_for(&state, "runtime:p", usize::MAX)?.len(),
        301
    );
    assert_sound(&store);
    Ok(())
}

#[test]
fn payloads_follow_the_documented_layout() -> TestResult {
    let (_dir, store) = common::store();
    store
        .execute(&enqueue_command("k", "p", b"ab", T0))?
        .expect_done();
    host(
        &store,
        OutboxCommand::GiveUp {
            key: "k".into(),
            now_ms: T0,
        },
    )
    .expect_done();
    let records =
        store
            .snapshot()?
            .read_stream("outbox/k", StreamVersion(0), Direction::Forward, 10)?;
    let (enqueued, expired) = (&records[0], &records[1]);
    assert_eq!(
        (enqueued.kind.as_str(), enqueued.schema),
        ("outbox.enqueued", 2)
    );
    assert_eq!(enqueued.at_ms, T0);
    let mut expected = Vec::new();
    for field in [&b"k"[..], b"p", b"event", b"ab"] {
        expected.extend_from_slice(&(field.len() as u64).to_le_bytes());
        expected.extend_from_slice(field);
    }
    expected.extend_from_slice(&1u64.to_le_bytes());
    assert_eq!(
        enqueued.payload, expected,
        "key, peer, kind, payload: u64 length then bytes; the enqueue id"
    );
    assert_eq!(expired.kind, "outbox.expired");
    let mut expected = 1u64.to_le_bytes().to_vec();
    expected.push(b'k');
    expected.extend_from_slice(&2u32.to_le_bytes());
    assert_eq!(
        expired.payload, expected,
        "key, then reason given_up as u32 index 2"
    );
    Ok(())
}
