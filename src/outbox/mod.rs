//! The outbox projection: rows owed to peers, each keyed by an idempotency key, pushed by
//! the host's lane or pulled by the peer itself under a fenced claim. It owns the tables
//! `outbox.rows`, `outbox.due`, `outbox.by_peer`, `outbox.by_state` and `outbox.by_enqueue`;
//! it never reads a clock, and it never makes up a token: time and claim tokens come with
//! the commands.
//!
//! # Rules, from the reference peer outbox (`outbox-store.js`, `receiver.js`)
//!
//! - **Enqueue** (`enqueuePeerRow`): a new key adds a `pending` row of the given `kind` with
//!   0 attempts, due at once (`next_at_ms = created_at_ms = now_ms`), and the next enqueue
//!   id (the reference's autoincrement `id`). A key already present adds nothing, whatever
//!   its state, peer, kind or payload: no event, and the outcome is `AlreadyEnqueued` with
//!   the row that stands. Once a row is pruned its key is free again (the reference deletes
//!   it).
//! - **States**. `pending`: the push lane may push it when due. `waiting`: only the peer's
//!   own pull may take it. `claimed`: a pull holds it under a claim token until the claim
//!   lapses. `done`: delivered. `expired`: given up on. Transitions:
//!   `Deliver` (`markDone`) pending|waiting → done; `MarkWaiting` (`markWaiting`) pending →
//!   waiting with the caller's attempt count, no `next_at`; `MarkRetry` (`markRetry`)
//!   pending → pending with the caller's attempt count, `next_at_ms` and
//!   `first_failed_at_ms`; `GiveUp` (`markExpired`) pending|waiting → expired; `Claim`
//!   pending|waiting|lapsed claimed → claimed; `Ack` claimed → done; `Expire` sweep
//!   pending|waiting|lapsed claimed → expired; `Prune` done|expired → removed.
//! - **Due rows** ([`query::due`], `dueRows`) are the `pending` rows with
//!   `next_at_ms <= now`, in enqueue order, at most a limit: under a limit the same rows as
//!   the reference's. `waiting`, `claimed`, `done` and `expired` rows carry no `next_at_ms`
//!   (the reference sets it NULL), so they are never due. **Pending for a peer**
//!   ([`query::pending_for`], `pendingFor`) are its `pending` rows never tried or past their
//!   backoff, in enqueue order. [`query::rows_by_enqueue`] lists every row in enqueue order.
//! - **Claim** (`claimRows`) takes only the claiming peer's own rows, in enqueue order:
//!   `pending`, `waiting`, and `claimed` rows whose claim lapsed; a live claim is left alone.
//!   The limit is clamped to 1..=100. With the reference's lease ([`CLAIM_LEASE_MS`]) a claim
//!   lapses when the reference's does (`claimed_at <= now - CLAIM_LEASE_MS`).
//! - **Ack** (`ackRows`) marks `done` each named row that is the acking peer's, still
//!   `claimed`, under the named token, and answers the keys acked. A lapsed claim nobody has
//!   taken again can still be acked: the peer did deliver the row.
//! - **Expire** (`expireOld`) gives up on `pending`/`waiting` rows created more than
//!   `max_age_ms` ago (reference 30 days) and on `claimed` rows whose claim lapsed and that
//!   were created more than `claim_retry_ms` ago (reference 24 h).
//! - **Prune** (`pruneOutbox`) removes `done` and `expired` rows created more than
//!   `older_than_ms` ago (reference 24 h).
//!
//! # Differences from the reference
//!
//! - **Refusals are answered.** The reference's `mark*` updates change nothing on a missing
//!   row or one in another state, silently; here the command appends nothing either and
//!   answers `Refused` with `missing` or `wrong_state`, so the caller knows. An ack also
//!   lists, for each row not acked, why (`missing`, `other_peer`, `wrong_state`,
//!   `other_token`).
//! - **Two conveniences beside `markWaiting` and `markRetry`.** [`OutboxCommand::Park`]
//!   counts the failed push itself (one attempt more), and [`OutboxCommand::Retry`] also
//!   decides the next time from a [`Backoff`] (`base_ms` after the first failure, doubling,
//!   capped at `max_ms`), keeps the first failure time and records the broadcast queue's
//!   `last_error`; the event records what was decided, so a replay never recomputes it.
//! - **Tokens are the caller's, and never repeat on a row.** The reference draws a random
//!   token inside the claim; here the caller brings it (no randomness in `decide`). Since
//!   the store cannot know the token is fresh, a row remembers every token it was claimed
//!   under, and a claim that would take a row under one of them is refused
//!   `token_reused`: otherwise an earlier, lapsed claimant's ack would pass for the new one.
//! - **The lease is an expiry, decided once.** The reference stores `claimed_at` and
//!   compares it with `now - CLAIM_LEASE_MS` at every read; here the claim records
//!   `expires_at_ms = now + lease_ms`, so a lease length may vary per claim.
//! - **Enqueue ids come from the table, not a sequence.** A new row takes one above the
//!   highest id a row has, so a pruned highest id may be given again (as SQLite's rowid
//!   does without `AUTOINCREMENT`); the order of the rows there are is the same. Rows of
//!   logs written before enqueue ids existed take `position + 1`, so their ids have gaps.
//! - **Sweeps are bounded and oldest first.** `Expire` and `Prune` change at most
//!   [`decide::SWEEP_ROWS_MAX`] rows each, in (`created_at_ms`, key) order, one event per
//!   row, and say when more are left, so one transaction stays small. The reference's
//!   enqueue listeners (a push at once) are the caller's business: a committed
//!   `outbox.enqueued` event is the signal.
//! - **Payloads are opaque bytes**, not JSON text, and `kind` is a non-empty name of at
//!   most [`decide::KIND_BYTES_MAX`] bytes. Rows of logs written before kinds existed have
//!   an empty kind.
//! - **Bad input** is refused before anything is decided, with `InvalidCommand` naming the
//!   field and its [`CommandProblem`](crate::error::CommandProblem) (with the limit), in the
//!   spirit of the reference's envelope decoder: keys, peers, kinds and tokens must be
//!   non-empty, bounded and free of control characters; a payload is at most
//!   [`decide::PAYLOAD_BYTES_MAX`] bytes; leases and backoff bases are positive.
//!
//! Every event goes to the row's stream `outbox/<key>`.

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::Record;

pub use decide::*;
pub use decide::{
    AckRefusal, Backoff, ExpiredRow, OutboxCommand, OutboxOutcome, OutboxRefusal, PullCommand,
    PullOutcome, RowAck, SweepCommand, SweepOutcome,
};
pub use events::{ExpiryReason, OutboxEvent};
pub use query::*;
pub use query::{Claim, ClaimToken, OutboxRow, OutboxState};

/// The outbox projection.
pub struct Outbox;

impl Projection for Outbox {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![ShownTable::new(&query::ROWS, &["key"], "row")]
    }

    fn name(&self) -> &'static str {
        "outbox"
    }

    fn version(&self) -> u32 {
        // 2: rows keep their kind and enqueue id; `outbox.due` and `outbox.by_peer` are in
        // enqueue order; `outbox.by_enqueue` lists every row.
        2
    }

    fn tables(&self) -> &'static [&'static str] {
        query::TABLES
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("outbox.")
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        OutboxEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match OutboxEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn catalogue(&self) -> &'static [EventKind] {
        OutboxEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[EntityKind {
            kind: "outbox",
            shape: "outbox:<key>",
            streams: |parts| vec![decide::row_stream(parts[0])],
        }]
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
