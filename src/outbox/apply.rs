//! Outbox apply: each event to table writes. Reads only the record and the outbox tables.
//!
//! Every event changes one row; [`created`] and [`evolve`] compute the row after it (pure
//! functions that `decide` also uses to report rows), and [`apply`] writes the row and moves its entries
//! in the three index tables, so the indexes always describe exactly the rows there are.

use super::events::{Enqueued, OutboxEvent};
use super::query::{BY_PEER, BY_STATE, Claim, DUE, OutboxRow, OutboxState, ROWS};
use crate::error::Result;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Applies one outbox event recorded in `record`.
pub fn apply(tables: &WriteTables<'_>, record: &Record, event: OutboxEvent) -> Result<()> {
    let key = event.key().to_owned();
    let before = ROWS.get(tables, &key)?;
    let after = match (&event, before.clone()) {
        (OutboxEvent::Enqueued(e), None) => Some(created(e, record.at_ms)),
        (OutboxEvent::Pruned(_), _) => None,
        (_, Some(row)) => Some(evolve(row, &event, record.at_ms)),
        // An event about a row there is not (which `decide` never emits) changes nothing.
        (_, None) => None,
    };
    if before == after {
        return Ok(());
    }
    if let Some(old) = &before {
        unindex(tables, old)?;
    }
    match &after {
        Some(new) => {
            ROWS.insert(tables, &key, new)?;
            index(tables, new)
        }
        None => ROWS.remove(tables, &key).map(drop),
    }
}

/// The row an enqueue at `at_ms` adds: `pending`, due at once.
pub fn created(event: &Enqueued, at_ms: u64) -> OutboxRow {
    OutboxRow {
        key: event.key.clone(),
        peer: event.peer.clone(),
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
pub fn evolve(mut row: OutboxRow, event: &OutboxEvent, at_ms: u64) -> OutboxRow {
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

/// Adds the index entries `row` has.
fn index(tables: &WriteTables<'_>, row: &OutboxRow) -> Result<()> {
    if let Some(key) = due_key(row) {
        DUE.insert(tables, &key, &())?;
    }
    if let Some(key) = peer_key(row) {
        BY_PEER.insert(tables, &key, &())?;
    }
    BY_STATE.insert(tables, &state_key(row), &())
}

/// Removes the index entries `row` has.
fn unindex(tables: &WriteTables<'_>, row: &OutboxRow) -> Result<()> {
    if let Some(key) = due_key(row) {
        DUE.remove(tables, &key)?;
    }
    if let Some(key) = peer_key(row) {
        BY_PEER.remove(tables, &key)?;
    }
    BY_STATE.remove(tables, &state_key(row)).map(drop)
}

fn due_key(row: &OutboxRow) -> Option<(u64, String)> {
    match (row.state, row.next_at_ms) {
        (OutboxState::Pending, Some(next_at_ms)) => Some((next_at_ms, row.key.clone())),
        _ => None,
    }
}

fn peer_key(row: &OutboxRow) -> Option<(String, u64, String)> {
    row.state
        .is_open()
        .then(|| (row.peer.clone(), row.created_at_ms, row.key.clone()))
}

fn state_key(row: &OutboxRow) -> (u8, u64, String) {
    (row.state.code(), row.created_at_ms, row.key.clone())
}
