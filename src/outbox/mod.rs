//! The outbox projection: rows owed to peers, each keyed by an idempotency key, pushed by
//! the host's lane or pulled by the peer itself under a fenced claim. It owns the tables
//! `outbox.rows`, `outbox.due`, `outbox.by_peer` and `outbox.by_state`; it never reads a
//! clock, and it never makes up a token: time and claim tokens come with the commands.
//!
//! # Rules, from the reference peer outbox (`outbox-store.js`, `receiver.js`)
//!
//! - **Enqueue**: a new key adds a `pending` row with 0 attempts, due at once
//!   (`next_at_ms = created_at_ms = now_ms`). A key already present adds nothing, whatever
//!   its state, peer or payload: no event, and the outcome is `AlreadyEnqueued` with the row
//!   that stands. Once a row is pruned its key is free again (the reference deletes it).
//! - **States**. `pending`: the push lane may push it when due. `waiting`: only the peer's
//!   own pull may take it. `claimed`: a pull holds it under a claim token until the claim
//!   lapses. `done`: delivered. `expired`: given up on. Transitions (refused `wrong_state`
//!   from any other state, `missing` without a row):
//!   `Deliver` pending|waiting → done; `Park` pending → waiting (one attempt more, no
//!   `next_at`); `Retry` pending → pending (one attempt more, backoff); `GiveUp`
//!   pending|waiting → expired; `Claim` pending|waiting|lapsed claimed → claimed; `Ack`
//!   claimed → done; `Expire` sweep pending|waiting|lapsed claimed → expired; `Prune`
//!   done|expired → removed.
//! - **Due rows** are the `pending` rows with `next_at_ms <= now`, in (`next_at_ms`, key)
//!   order, at most a limit. `waiting`, `claimed`, `done` and `expired` rows carry no
//!   `next_at_ms` (the reference sets it NULL), so they are never due. **Pending for a peer**
//!   are its `pending` rows never tried or past their backoff, in creation order.
//! - **Claim** takes only the claiming peer's own rows, oldest first: `pending`, `waiting`,
//!   and `claimed` rows whose claim lapsed (`expires_at_ms <= now`); a live claim is left
//!   alone. The limit is clamped to 1..=100 as in the reference. The caller supplies the
//!   token ([`ClaimToken`]) and the lease; the claim lapses at `now_ms + lease_ms`.
//! - **Ack** marks `done` each named row that is the acking peer's, still `claimed`, under
//!   the named token; the outcome lists the keys acked and, for each row not acked, why
//!   (`missing`, `other_peer`, `wrong_state`, `other_token`). As in the reference, a lapsed
//!   claim nobody has taken again can still be acked: the peer did deliver the row.
//! - **Expire** gives up on `pending`/`waiting` rows created more than `max_age_ms` ago
//!   (reference 30 days) and on `claimed` rows whose claim lapsed and that were created
//!   more than `claim_retry_ms` ago (reference 24 h: the receiver refused them as catalog
//!   lag and left them to be claimed again), one `outbox.expired` event per row.
//! - **Prune** removes `done` and `expired` rows created more than `older_than_ms` ago
//!   (reference 24 h), one `outbox.pruned` event per row.
//! - **Bad input** is refused before anything is decided, with `InvalidCommand` naming the
//!   field and its [`CommandProblem`](crate::CommandProblem) (with the limit), in the
//!   spirit of the reference's envelope decoder: keys, peers and tokens must be non-empty,
//!   bounded and free of control characters; a payload is at most
//!   [`decide::PAYLOAD_BYTES_MAX`] bytes; leases and backoff bases are positive.
//!
//! # Where this differs from the reference, and why
//!
//! - **Backoff is decided here.** The reference's `markRetry` takes the next time from its
//!   caller and the broadcast queue only says "tried again with backoff". Here `Retry`
//!   computes it in `decide` from the command's [`Backoff`] (`base_ms` after the first
//!   failure, doubling, capped at `max_ms`) and records `next_at_ms` in the event, so a
//!   replay never recomputes it. `first_failed_at_ms` is set on the first failure only. The
//!   broadcast queue's `last_error` is kept on the row.
//! - **Tokens are the caller's, and never repeat on a row.** The reference draws a random
//!   token inside the claim; here the caller brings it (no randomness in `decide`). Since
//!   the store cannot know the token is fresh, a row remembers every token it was claimed
//!   under, and a claim that would take a row under one of them is refused
//!   `token_reused`: otherwise an earlier, lapsed claimant's ack would pass for the new one.
//! - **`Park` counts the failed push as an attempt.** The reference's `markWaiting` takes
//!   the count from its caller; here it is one more than the row had, decided in `decide`.
//! - **The lease is an expiry, decided once.** The reference stores `claimed_at` and
//!   compares it with `now - CLAIM_LEASE_MS` at every read; here the claim records
//!   `expires_at_ms = now + lease_ms`, so a lease length may vary per claim.
//! - **Creation order is (`created_at_ms`, key)**, not an autoincrement id: both come with
//!   the `outbox.enqueued` record (its `at_ms` and payload), so the order is the same on
//!   every replay. Rows enqueued in the same millisecond go in key order.
//! - **Sweeps are bounded.** `Expire` and `Prune` change at most
//!   [`decide::SWEEP_ROWS_MAX`] rows each, oldest first, and say when more are left, so one
//!   transaction stays small. The reference's enqueue listeners (a push at once) are the
//!   caller's business: a committed `outbox.enqueued` event is the signal.
//! - **The reference's `kind` column is not kept**: the payload is opaque bytes.
//!
//! Every event goes to the row's stream `outbox/<key>`.

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::Projection;
use crate::projection::table::{TableSource, WriteTables};
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
    fn name(&self) -> &'static str {
        "outbox"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        query::TABLES
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("outbox.")
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

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
