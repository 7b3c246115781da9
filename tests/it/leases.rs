//! Tests of the leases projection's rules: fencing tokens, refusals, lane leases with
//! cursors, and fencing enforced by the store.

use annals::leases::{
    self, FencingToken, GuardRefusal, LaneCommand, LaneOutcome, LeaseCommand, LeaseGuard,
    LeaseOutcome, LeaseRefusal,
};
use annals::testing::setup::ExpectDone;
use annals::{Error, ExpectedVersion, Store, error::StoreError};

use crate::common::{event, store};

const TTL: u64 = 1_000;

fn acquire(store: &Store, holder: &str, now_ms: u64) -> LeaseOutcome {
    let command = LeaseCommand::Acquire {
        resource: "deploy".into(),
        holder: holder.into(),
        ttl_ms: TTL,
        now_ms,
    };
    store.execute(&command).unwrap()
}

fn granted_token(outcome: LeaseOutcome) -> (u64, bool) {
    match outcome {
        LeaseOutcome::Granted { lease, renewed } => (lease.token.0, renewed),
        other => panic!("expected a grant, got {other:?}"),
    }
}

fn refusal(outcome: LeaseOutcome) -> LeaseRefusal {
    match outcome {
        LeaseOutcome::Refused { reason, .. } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn renew(store: &Store, holder: &str, token: u64, now_ms: u64) -> LeaseOutcome {
    let command = LeaseCommand::Renew {
        resource: "deploy".into(),
        holder: holder.into(),
        token: FencingToken(token),
        ttl_ms: TTL,
        now_ms,
    };
    store.execute(&command).unwrap()
}

fn release(store: &Store, holder: &str, token: u64) -> LeaseOutcome {
    let command = LeaseCommand::Release {
        resource: "deploy".into(),
        holder: holder.into(),
        token: FencingToken(token),
        now_ms: 0,
    };
    store.execute(&command).unwrap()
}

#[test]
fn a_first_acquisition_gets_token_1() {
    let (_dir, store) = store();
    assert_eq!(granted_token(acquire(&store, "a", 100)), (1, false));
    let lease = leases::lease(&store.snapshot().unwrap().state(), "deploy")
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            lease.holder.as_str(),
            lease.acquired_at_ms,
            lease.expires_at_ms
        ),
        ("a", 100, 1100)
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn the_holders_own_reacquisition_keeps_its_token_and_grant_time() {
    let (_dir, store) = store();
    acquire(&store, "a", 100).expect_done();
    assert_eq!(granted_token(acquire(&store, "a", 500)), (1, true));
    let lease = leases::lease(&store.snapshot().unwrap().state(), "deploy")
        .unwrap()
        .unwrap();
    assert_eq!((lease.acquired_at_ms, lease.expires_at_ms), (100, 1500));
}

#[test]
fn another_holders_live_lease_is_refused_held() {
    let (_dir, store) = store();
    acquire(&store, "a", 100).expect_done();
    let head = store.snapshot().unwrap().head().unwrap();
    assert_eq!(refusal(acquire(&store, "b", 1099)), LeaseRefusal::Held);
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        head,
        "a refusal appends nothing"
    );
}

#[test]
fn takeover_after_expiry_increments_token() {
    let (_dir, store) = store();
    acquire(&store, "a", 100).expect_done();
    assert_eq!(granted_token(acquire(&store, "b", 1100)), (2, false));
    assert_eq!(granted_token(acquire(&store, "a", 2100)), (3, false));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn tokens_never_repeat_even_after_a_release() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    assert!(matches!(
        release(&store, "a", 1),
        LeaseOutcome::Released { .. }
    ));
    assert_eq!(
        leases::lease(&store.snapshot().unwrap().state(), "deploy").unwrap(),
        None
    );
    assert_eq!(
        leases::last_token(&store.snapshot().unwrap().state(), "deploy").unwrap(),
        Some(FencingToken(1)),
        "a released lease's token is still the last issued"
    );
    assert_eq!(granted_token(acquire(&store, "b", 10)), (2, false));
    assert_eq!(
        leases::last_token(&store.snapshot().unwrap().state(), "deploy").unwrap(),
        Some(FencingToken(2))
    );
}

#[test]
fn renew_extends_a_live_lease_under_the_same_token() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    assert_eq!(granted_token(renew(&store, "a", 1, 999)), (1, true));
    let lease = leases::lease(&store.snapshot().unwrap().state(), "deploy")
        .unwrap()
        .unwrap();
    assert_eq!(lease.expires_at_ms, 1999);
}

#[test]
fn renew_of_no_lease_is_refused_missing() {
    let (_dir, store) = store();
    assert_eq!(refusal(renew(&store, "a", 1, 0)), LeaseRefusal::Missing);
}

#[test]
fn renew_with_a_stale_token_or_by_another_holder_is_refused_superseded() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    acquire(&store, "b", 1000).expect_done();
    assert_eq!(
        refusal(renew(&store, "a", 1, 1001)),
        LeaseRefusal::Superseded
    );
    assert_eq!(
        refusal(renew(&store, "a", 2, 1001)),
        LeaseRefusal::Superseded
    );
    assert_eq!(
        refusal(renew(&store, "b", 1, 1001)),
        LeaseRefusal::Superseded
    );
}

#[test]
fn renew_after_the_deadline_is_refused_expired() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    assert_eq!(refusal(renew(&store, "a", 1, 1000)), LeaseRefusal::Expired);
}

#[test]
fn release_by_another_holder_or_token_is_refused() {
    let (_dir, store) = store();
    assert_eq!(refusal(release(&store, "a", 1)), LeaseRefusal::Missing);
    acquire(&store, "a", 0).expect_done();
    assert_eq!(refusal(release(&store, "b", 1)), LeaseRefusal::Superseded);
    assert_eq!(refusal(release(&store, "a", 7)), LeaseRefusal::Superseded);
    assert!(
        leases::lease(&store.snapshot().unwrap().state(), "deploy")
            .unwrap()
            .is_some()
    );
}

#[test]
fn commands_with_empty_inputs_or_zero_ttl_are_invalid() {
    let (_dir, store) = store();
    let cases = [
        LeaseCommand::Acquire {
            resource: "".into(),
            holder: "a".into(),
            ttl_ms: 1,
            now_ms: 0,
        },
        LeaseCommand::Acquire {
            resource: "r".into(),
            holder: "".into(),
            ttl_ms: 1,
            now_ms: 0,
        },
        LeaseCommand::Acquire {
            resource: "r".into(),
            holder: "a".into(),
            ttl_ms: 0,
            now_ms: 0,
        },
    ];
    for command in cases {
        let error = store.execute(&command).unwrap_err();
        assert!(matches!(error, Error::InvalidCommand { .. }), "{error:?}");
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 0);
}

#[test]
fn lease_events_cannot_be_appended_raw() {
    let (_dir, store) = store();
    let error = store.append(
        "lease/x",
        ExpectedVersion::Any,
        &[event("lease.acquired", 0, b"")],
    );
    assert!(
        matches!(error, Err(Error::Store(StoreError::ReservedKind { .. }))),
        "{error:?}"
    );
}

fn guard(token: u64, now_ms: u64) -> LeaseGuard {
    LeaseGuard {
        resource: "deploy".into(),
        token: FencingToken(token),
        now_ms,
    }
}

#[test]
fn a_guarded_append_under_the_live_token_is_written() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    let events = [event("deploy.step", 10, b"one")];
    store
        .append_guarded("deploy/log", ExpectedVersion::Any, &events, &guard(1, 10))
        .unwrap()
        .expect_done();
    assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 2);
}

#[test]
fn a_holder_that_woke_after_a_takeover_cannot_write_behind_its_successor() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    acquire(&store, "b", 5000).expect_done();
    let head = store.snapshot().unwrap().head().unwrap();
    let events = [event("deploy.step", 5001, b"stale")];
    let error = store
        .append_guarded("deploy/log", ExpectedVersion::Any, &events, &guard(1, 5001))
        .unwrap_err();
    match error {
        Error::Store(StoreError::Fenced { resource, reason }) => {
            assert_eq!(
                (resource.as_str(), reason),
                ("deploy", GuardRefusal::Superseded)
            );
        }
        other => panic!("expected a fence, got {other:?}"),
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        head,
        "the fenced append wrote nothing"
    );
    store
        .append_guarded("deploy/log", ExpectedVersion::Any, &events, &guard(2, 5001))
        .unwrap()
        .expect_done();
}

#[test]
fn a_guard_past_the_deadline_or_without_a_lease_is_refused() {
    let (_dir, store) = store();
    let events = [event("deploy.step", 0, b"x")];
    let fenced = |guard: &LeaseGuard| match store.append_guarded(
        "deploy/log",
        ExpectedVersion::Any,
        &events,
        guard,
    ) {
        Err(Error::Store(StoreError::Fenced { reason, .. })) => reason,
        other => panic!("expected a fence, got {other:?}"),
    };
    assert_eq!(fenced(&guard(1, 0)), GuardRefusal::Missing);
    acquire(&store, "a", 0).expect_done();
    assert_eq!(fenced(&guard(1, 1000)), GuardRefusal::Expired);
}

#[test]
fn a_guarded_command_is_fenced_too() {
    let (_dir, store) = store();
    acquire(&store, "a", 0).expect_done();
    acquire(&store, "b", 2000).expect_done();
    let claim = LaneCommand::Claim {
        lane: "sync".into(),
        key: "k".into(),
        owner: "a".into(),
        ttl_ms: TTL,
        now_ms: 2001,
    };
    let error = store.execute_guarded(&claim, &guard(1, 2001)).unwrap_err();
    assert!(
        matches!(error, Error::Store(StoreError::Fenced { .. })),
        "{error:?}"
    );
    assert!(
        leases::lane(&store.snapshot().unwrap().state(), "sync", "k")
            .unwrap()
            .is_none()
    );
}

fn lane(store: &Store, command: LaneCommand) -> LaneOutcome {
    store.execute(&command).unwrap()
}

fn claim(owner: &str, now_ms: u64) -> LaneCommand {
    LaneCommand::Claim {
        lane: "sync".into(),
        key: "k".into(),
        owner: owner.into(),
        ttl_ms: TTL,
        now_ms,
    }
}

fn advance(owner: &str, cursor: &str, now_ms: u64) -> LaneCommand {
    LaneCommand::Advance {
        lane: "sync".into(),
        key: "k".into(),
        owner: owner.into(),
        cursor: Some(cursor.into()),
        now_ms,
    }
}

fn lane_refusal(outcome: LaneOutcome) -> LeaseRefusal {
    match outcome {
        LaneOutcome::Refused { reason, .. } => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_unowned_lane_key_is_claimed_and_a_live_one_is_refused() {
    let (_dir, store) = store();
    assert!(matches!(
        lane(&store, claim("a", 0)),
        LaneOutcome::Done { .. }
    ));
    assert_eq!(
        lane_refusal(lane(&store, claim("b", 999))),
        LeaseRefusal::Held
    );
    assert_eq!(
        lane_refusal(lane(&store, claim("a", 999))),
        LeaseRefusal::Held
    );
}

#[test]
fn the_cursor_survives_a_change_of_owner() {
    let (_dir, store) = store();
    lane(&store, claim("a", 0)).expect_done();
    assert!(matches!(
        lane(&store, advance("a", "page-7", 10)),
        LaneOutcome::Done { .. }
    ));
    let LaneOutcome::Done { lane: claimed } = lane(&store, claim("b", 1000)) else {
        panic!("an expired claim can be taken");
    };
    assert_eq!(
        (claimed.owner.as_str(), claimed.cursor.as_deref()),
        ("b", Some("page-7"))
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn only_the_live_owner_advances_renews_or_releases() {
    let (_dir, store) = store();
    assert_eq!(
        lane_refusal(lane(&store, advance("a", "x", 0))),
        LeaseRefusal::Missing
    );
    lane(&store, claim("a", 0)).expect_done();
    assert_eq!(
        lane_refusal(lane(&store, advance("b", "x", 10))),
        LeaseRefusal::Superseded
    );
    assert_eq!(
        lane_refusal(lane(&store, advance("a", "x", 1000))),
        LeaseRefusal::Expired
    );
    let renew = LaneCommand::Renew {
        lane: "sync".into(),
        key: "k".into(),
        owner: "a".into(),
        ttl_ms: TTL,
        now_ms: 500,
    };
    assert!(matches!(lane(&store, renew), LaneOutcome::Done { .. }));
    assert!(matches!(
        lane(&store, advance("a", "x", 1400)),
        LaneOutcome::Done { .. }
    ));
    let release = |owner: &str| LaneCommand::Release {
        lane: "sync".into(),
        key: "k".into(),
        owner: owner.into(),
        now_ms: 1450,
    };
    assert_eq!(
        lane_refusal(lane(&store, release("b"))),
        LeaseRefusal::Superseded
    );
    assert!(matches!(
        lane(&store, release("a")),
        LaneOutcome::Done { .. }
    ));
    // A release frees the key at once and keeps the cursor for the next owner.
    let LaneOutcome::Done { lane: next } = lane(&store, claim("b", 1451)) else {
        panic!("a released key can be claimed");
    };
    assert_eq!(next.cursor.as_deref(), Some("x"));
    let rows = leases::lanes(&store.snapshot().unwrap().state(), "sync", 10).unwrap();
    assert_eq!(rows.len(), 1);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn leases_survive_a_reopen_and_a_rebuild_reproduces_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let before = {
        let store = Store::open(&path).unwrap();
        acquire(&store, "a", 0).expect_done();
        acquire(&store, "b", 2000).expect_done();
        lane(&store, claim("a", 0)).expect_done();
        lane(&store, advance("a", "c1", 1)).expect_done();
        leases::state_json(&store.snapshot().unwrap().state()).unwrap()
    };
    let store = Store::open(&path).unwrap();
    assert_eq!(
        leases::state_json(&store.snapshot().unwrap().state()).unwrap(),
        before
    );
    annals::maintenance::Rebuild::of(&store)
        .run(Some("leases"))
        .unwrap();
    assert_eq!(
        leases::state_json(&store.snapshot().unwrap().state()).unwrap(),
        before
    );
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(
        leases::state_json(&store.snapshot().unwrap().state()).unwrap(),
        before
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}
