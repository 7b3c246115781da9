//! Outbox events: what the outbox projection records, one payload struct per kind. Kinds
//! start with `outbox.`; every event goes to the stream of its row, `outbox/<key>`.
//!
//! Each event carries every value `apply` needs that is not the record's own `at_ms`
//! (computed deadlines, the claim token, the attempt count), so that `apply` decides nothing.

use serde::{Deserialize, Serialize};

use super::query::ClaimToken;
use crate::domain_events;
use crate::record::Record;

/// A row was added, `pending` and due at once. Its creation time is the record's `at_ms`.
/// Schema 2 (schema 1 had no kind and no enqueue id).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Enqueued {
    /// The idempotency key: the row's identity.
    pub key: String,
    /// The peer the row is owed to.
    pub peer: String,
    /// What kind of row it is (the reference's `kind` column); empty for a row enqueued
    /// before rows had kinds.
    pub kind: String,
    /// What is delivered, opaque to the store.
    #[serde(serialize_with = "crate::event::readable_bytes")]
    pub payload: Vec<u8>,
    /// The row's place in enqueue order (the reference's autoincrement `id`): above every
    /// row's there is.
    pub enqueue_id: u64,
}

/// Schema 1 of `outbox.enqueued`, without a kind or an enqueue id. Upcast with an empty kind
/// and the enqueue id `position + 1`: records come in position order, so the ids keep the
/// order the rows were enqueued in, and every later id continues above them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnqueuedV1 {
    /// The idempotency key: the row's identity.
    pub key: String,
    /// The peer the row is owed to.
    pub peer: String,
    /// What is delivered, opaque to the store.
    pub payload: Vec<u8>,
}

/// The push lane delivered a `pending` or `waiting` row: it is `done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    /// The row's key.
    pub key: String,
}

/// The push lane could not deliver a `pending` row and left it `waiting` for the peer's
/// own pull.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parked {
    /// The row's key.
    pub key: String,
    /// The attempt count now (the failed push counted).
    pub attempts: u32,
}

/// A push of a `pending` row failed: it stays `pending`, due again at `next_at_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryScheduled {
    /// The row's key.
    pub key: String,
    /// The attempt count now.
    pub attempts: u32,
    /// When it is due again: the command's `now_ms` plus the backoff for `attempts`.
    pub next_at_ms: u64,
    /// When it first failed: the earlier value if there was one, else this failure's time.
    pub first_failed_at_ms: u64,
    /// What went wrong, as the caller put it.
    pub last_error: Option<String>,
}

/// The row's peer claimed it under a token of its own, until `expires_at_ms`. The claim
/// time is the record's `at_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claimed {
    /// The row's key.
    pub key: String,
    /// The claiming peer (always the row's own).
    pub peer: String,
    /// The token the claim is fenced with.
    pub token: ClaimToken,
    /// When the claim lapses and the row may be claimed again.
    pub expires_at_ms: u64,
}

/// The row's peer acked it under the claim's token: it is `done`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acked {
    /// The row's key.
    pub key: String,
    /// The token of the claim acked.
    pub token: ClaimToken,
}

/// Why a row was given up on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ExpiryReason {
    /// Never delivered within the maximum age (a sweep).
    MaxAge,
    /// Its claim lapsed unacked after the claim retry window (a sweep).
    ClaimLapsed,
    /// The push lane gave up on it.
    GivenUp,
}

/// A row was given up on: it is `expired`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expired {
    /// The row's key.
    pub key: String,
    /// Why.
    pub reason: ExpiryReason,
}

/// A `done` or `expired` row was retired: the row and its index entries are removed, and
/// its key may be enqueued again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    /// The row's key.
    pub key: String,
}

domain_events! {
    /// Every outbox event.
    pub enum OutboxEvent {
        /// `outbox.enqueued`
        Enqueued(Enqueued) = pub ENQUEUED = "outbox.enqueued", schema 2,
            older { 1 => EnqueuedV1 => enqueued_v1 };
        /// `outbox.delivered`
        Delivered(Delivered) = pub DELIVERED = "outbox.delivered", schema 1;
        /// `outbox.parked`
        Parked(Parked) = pub PARKED = "outbox.parked", schema 1;
        /// `outbox.retry_scheduled`
        RetryScheduled(RetryScheduled) = pub RETRY_SCHEDULED = "outbox.retry_scheduled", schema 1;
        /// `outbox.claimed`
        Claimed(Claimed) = pub CLAIMED = "outbox.claimed", schema 1;
        /// `outbox.acked`
        Acked(Acked) = pub ACKED = "outbox.acked", schema 1;
        /// `outbox.expired`
        Expired(Expired) = pub EXPIRED = "outbox.expired", schema 1;
        /// `outbox.pruned`
        Pruned(Pruned) = pub PRUNED = "outbox.pruned", schema 1;
    }
}

/// Schema 1 of `outbox.enqueued` as schema 2: a row from before kinds has none, and its
/// enqueue id is the one its position gives (one past it, as ids start at 1).
fn enqueued_v1(v1: EnqueuedV1, record: &Record) -> Enqueued {
    Enqueued {
        key: v1.key,
        peer: v1.peer,
        kind: String::new(),
        payload: v1.payload,
        enqueue_id: record.position.0.saturating_add(1),
    }
}

impl OutboxEvent {
    /// The key of the row the event is about.
    pub fn key(&self) -> &str {
        match self {
            OutboxEvent::Enqueued(e) => &e.key,
            OutboxEvent::Delivered(e) => &e.key,
            OutboxEvent::Parked(e) => &e.key,
            OutboxEvent::RetryScheduled(e) => &e.key,
            OutboxEvent::Claimed(e) => &e.key,
            OutboxEvent::Acked(e) => &e.key,
            OutboxEvent::Expired(e) => &e.key,
            OutboxEvent::Pruned(e) => &e.key,
        }
    }
}
