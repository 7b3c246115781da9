//! Outbox apply: each event to table writes. Reads only the record and the outbox tables.
//!
//! Every event changes one row; [`created`] and [`evolve`] compute the row after it (pure
//! functions that `decide` also uses to report rows), and [`apply`] writes the row and moves its entries
//! in the three index tables, so the indexes always describe exactly the rows there are.
//!
//! Before it writes, [`apply`] checks the event against the state machine `decide` keeps
//! (see `schema/EVENTS.md`): a live command never breaks it, so a record that does was
//! written around `decide` (a forged import, a log written elsewhere) and is refused with
//! [`crate::error::ProjectionError::Invariant`] at its position.

use super::events::{Enqueued, ExpiryReason, OutboxEvent};
use super::query::{
    BY_ENQUEUE, BY_PEER, BY_STATE, Claim, DUE, OutboxRow, OutboxState, ROWS, next_enqueue_id,
};
use crate::error::{Error, Result};
use crate::projection::table::WriteTables;
use crate::record::Record;

/// An enqueue names a key no row has.
pub(crate) const KEY_UNUSED: &str = "key_unused";
/// An enqueue's id is above every row's there is.
pub(crate) const ENQUEUE_ID_INCREASES: &str = "enqueue_id_increases";
/// Every other event names a row there is.
pub(crate) const ROW_EXISTS: &str = "row_exists";
/// A row moves only from a state the event moves it from.
pub(crate) const STATE_ALLOWS: &str = "state_allows";
/// A claim is its row's own peer's, under a token the row was never claimed under.
pub(crate) const CLAIM_BY_PEER_WITH_FRESH_TOKEN: &str = "claim_by_peer_with_fresh_token";
/// An ack names the token of the row's claim.
pub(crate) const ACK_UNDER_CLAIM_TOKEN: &str = "ack_under_claim_token";

/// `record` breaks the outbox `rule`, as `detail` says.
fn broken(record: &Record, rule: &'static str, detail: String) -> Error {
    crate::projection::invariant("outbox", record, rule, detail)
}

/// Applies one outbox event recorded in `record`, refusing one the row's state does not
/// allow.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: OutboxEvent) -> Result<()> {
    let key = event.key().to_owned();
    let before = ROWS.get(tables, &key)?;
    check(record, &event, before.as_ref())?;
    if let OutboxEvent::Enqueued(e) = &event {
        let lowest = next_enqueue_id(tables)?;
        if e.enqueue_id < lowest {
            let detail = format!(
                "row {:?} enqueued with id {}, not above the highest there is, {}",
                e.key,
                e.enqueue_id,
                lowest - 1
            );
            return Err(broken(record, ENQUEUE_ID_INCREASES, detail));
        }
    }
    let after = match (&event, before.clone()) {
        (OutboxEvent::Enqueued(e), None) => Some(created(e, record.at_ms)),
        (OutboxEvent::Pruned(_), _) => None,
        (_, Some(row)) => Some(evolve(row, &event, record.at_ms)),
        // Refused by `check`: only an enqueue may find no row.
        (_, None) => None,
    };
    if before == after {
        return Ok(());
    }
    reindex(tables, before.as_ref(), after.as_ref())?;
    match &after {
        Some(new) => ROWS.insert(tables, &key, new),
        None => ROWS.remove(tables, &key).map(drop),
    }
}

/// Whether `event` at the record's time may move `row` (`None`: no row has its key): the
/// transitions `decide` makes, and no other.
fn check(record: &Record, event: &OutboxEvent, row: Option<&OutboxRow>) -> Result<()> {
    let Some(row) = row else {
        return check_no_row(record, event);
    };
    check_state_allows(record, event, row)?;
    check_claim_token(record, event, row)
}

/// Only an enqueue may name a key no row has.
fn check_no_row(record: &Record, event: &OutboxEvent) -> Result<()> {
    match event {
        OutboxEvent::Enqueued(_) => Ok(()),
        _ => Err(broken(
            record,
            ROW_EXISTS,
            format!("no row has key {:?}", event.key()),
        )),
    }
}

/// Whether `row`'s state, at the record's time, is one `event` moves a row from: an enqueue
/// never is, its key being taken.
fn check_state_allows(record: &Record, event: &OutboxEvent, row: &OutboxRow) -> Result<()> {
    let at_ms = record.at_ms;
    let lapsed = row
        .claim
        .as_ref()
        .is_none_or(|claim| claim.has_lapsed(at_ms));
    let undelivered = matches!(row.state, OutboxState::Pending | OutboxState::Waiting);
    let allowed = match event {
        OutboxEvent::Enqueued(_) => {
            let detail = format!("key {:?} already has a {} row", row.key, row.state);
            return Err(broken(record, KEY_UNUSED, detail));
        }
        OutboxEvent::Delivered(_) => undelivered,
        OutboxEvent::Parked(_) | OutboxEvent::RetryScheduled(_) => {
            row.state == OutboxState::Pending
        }
        OutboxEvent::Claimed(_) => row.is_claimable(at_ms),
        OutboxEvent::Acked(_) => row.state == OutboxState::Claimed,
        OutboxEvent::Expired(e) if e.reason == ExpiryReason::ClaimLapsed => {
            row.state == OutboxState::Claimed && lapsed
        }
        OutboxEvent::Expired(_) => undelivered,
        OutboxEvent::Pruned(_) => !row.state.is_open(),
    };
    if allowed {
        return Ok(());
    }
    let live_claim = match &row.claim {
        Some(claim) if !lapsed => format!(" under a claim live until {}", claim.expires_at_ms),
        _ => String::new(),
    };
    let detail = format!("row {:?} is {}{live_claim} at {at_ms}", row.key, row.state);
    Err(broken(record, STATE_ALLOWS, detail))
}

/// Whether the tokens of a claim or an ack fit `row`: a claim by the row's own peer under a
/// token it was never claimed under, an ack under the token of its claim.
fn check_claim_token(record: &Record, event: &OutboxEvent, row: &OutboxRow) -> Result<()> {
    match event {
        OutboxEvent::Claimed(e) if e.peer != row.peer => {
            let detail = format!(
                "row {:?} of peer {:?} claimed by {:?}",
                row.key, row.peer, e.peer
            );
            Err(broken(record, CLAIM_BY_PEER_WITH_FRESH_TOKEN, detail))
        }
        OutboxEvent::Claimed(e) if row.claim_tokens.contains(&e.token) => {
            let detail = format!(
                "row {:?} claimed again under token {:?}",
                row.key, e.token.0
            );
            Err(broken(record, CLAIM_BY_PEER_WITH_FRESH_TOKEN, detail))
        }
        OutboxEvent::Acked(e)
            if row
                .claim
                .as_ref()
                .is_none_or(|claim| claim.token != e.token) =>
        {
            let detail = format!(
                "row {:?} acked under token {:?}, claimed under {:?}",
                row.key,
                e.token.0,
                row.claim.as_ref().map(|claim| &claim.token.0)
            );
            Err(broken(record, ACK_UNDER_CLAIM_TOKEN, detail))
        }
        _ => Ok(()),
    }
}

/// The row an enqueue at `at_ms` adds: `pending`, due at once.
pub(crate) fn created(event: &Enqueued, at_ms: u64) -> OutboxRow {
    OutboxRow {
        key: event.key.clone(),
        peer: event.peer.clone(),
        kind: event.kind.clone(),
        enqueue_id: event.enqueue_id,
        payload: event.payload.clone(),
        state: OutboxState::Pending,
        attempts: 0,
        next_at_ms: Some(at_ms),
        first_failed_at_ms: None,
        last_error: None,
        created_at_ms: at_ms,
        claim: None,
        claim_tokens: Vec::new(),
    }
}

/// `row` after `event` at `at_ms`. An enqueue of a key present adds nothing; a prune is
/// the removal of the row, which [`apply`] does.
pub(crate) fn evolve(mut row: OutboxRow, event: &OutboxEvent, at_ms: u64) -> OutboxRow {
    match event {
        OutboxEvent::Enqueued(_) | OutboxEvent::Pruned(_) => {}
        OutboxEvent::Delivered(_) | OutboxEvent::Acked(_) => close(&mut row, OutboxState::Done),
        OutboxEvent::Parked(e) => {
            row.state = OutboxState::Waiting;
            row.attempts = e.attempts;
            row.next_at_ms = None;
        }
        OutboxEvent::RetryScheduled(e) => {
            row.attempts = e.attempts;
            row.next_at_ms = Some(e.next_at_ms);
            row.first_failed_at_ms = Some(e.first_failed_at_ms);
            row.last_error = e.last_error.clone();
        }
        OutboxEvent::Claimed(e) => {
            row.state = OutboxState::Claimed;
            row.next_at_ms = None;
            row.claim = Some(Claim {
                token: e.token.clone(),
                claimed_at_ms: at_ms,
                expires_at_ms: e.expires_at_ms,
            });
            if !row.claim_tokens.contains(&e.token) {
                row.claim_tokens.push(e.token.clone());
            }
        }
        OutboxEvent::Expired(_) => close(&mut row, OutboxState::Expired),
    }
    row
}

/// Ends a row's delivery: no longer due, no longer claimed.
fn close(row: &mut OutboxRow, state: OutboxState) {
    row.state = state;
    row.next_at_ms = None;
    row.claim = None;
}

/// Moves the index entries of a row from what it was (`None`: no row) to what it becomes,
/// touching only those that change.
fn reindex(
    tables: &WriteTables<'_>,
    old: Option<&OutboxRow>,
    new: Option<&OutboxRow>,
) -> Result<()> {
    DUE.move_entry(tables, old.and_then(due_entry), new.and_then(due_entry))?;
    let peer = |row: &OutboxRow| peer_key(row).map(|key| (key, ()));
    BY_PEER.move_entry(tables, old.and_then(peer), new.and_then(peer))?;
    let enqueue = |row: &OutboxRow| (row.enqueue_id, row.key.clone());
    BY_ENQUEUE.move_entry(tables, old.map(enqueue), new.map(enqueue))?;
    let state = |row: &OutboxRow| (state_key(row), ());
    BY_STATE.move_entry(tables, old.map(state), new.map(state))
}

fn due_entry(row: &OutboxRow) -> Option<((u64, String), u64)> {
    match (row.state, row.next_at_ms) {
        (OutboxState::Pending, Some(next_at_ms)) => {
            Some(((row.enqueue_id, row.key.clone()), next_at_ms))
        }
        _ => None,
    }
}

fn peer_key(row: &OutboxRow) -> Option<(String, u64, String)> {
    row.state
        .is_open()
        .then(|| (row.peer.clone(), row.enqueue_id, row.key.clone()))
}

fn state_key(row: &OutboxRow) -> (u8, u64, String) {
    (row.state.code(), row.created_at_ms, row.key.clone())
}
