//! Outbox events: what the outbox projection records, one payload struct per kind. Kinds
//! start with `outbox.`; every event goes to the stream of its row, `outbox/<key>`.
//!
//! Each event carries every value `apply` needs that is not the record's own `at_ms`
//! (computed deadlines, the claim token, the attempt count), so that `apply` decides nothing.

use serde::{Deserialize, Serialize};

use super::query::ClaimToken;
use crate::error::Result;
use crate::event::{DomainEvent, EventKind, decode_payload, encode_payload, unknown_schema};
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

/// Every outbox event.
///
/// Serialised as its payload struct alone (the kind is the record's), for the CLI's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum OutboxEvent {
    /// `outbox.enqueued`
    Enqueued(Enqueued),
    /// `outbox.delivered`
    Delivered(Delivered),
    /// `outbox.parked`
    Parked(Parked),
    /// `outbox.retry_scheduled`
    RetryScheduled(RetryScheduled),
    /// `outbox.claimed`
    Claimed(Claimed),
    /// `outbox.acked`
    Acked(Acked),
    /// `outbox.expired`
    Expired(Expired),
    /// `outbox.pruned`
    Pruned(Pruned),
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

/// Kind of [`OutboxEvent::Enqueued`].
pub const ENQUEUED: &str = "outbox.enqueued";
/// Kind of [`OutboxEvent::Delivered`].
pub const DELIVERED: &str = "outbox.delivered";
/// Kind of [`OutboxEvent::Parked`].
pub const PARKED: &str = "outbox.parked";
/// Kind of [`OutboxEvent::RetryScheduled`].
pub const RETRY_SCHEDULED: &str = "outbox.retry_scheduled";
/// Kind of [`OutboxEvent::Claimed`].
pub const CLAIMED: &str = "outbox.claimed";
/// Kind of [`OutboxEvent::Acked`].
pub const ACKED: &str = "outbox.acked";
/// Kind of [`OutboxEvent::Expired`].
pub const EXPIRED: &str = "outbox.expired";
/// Kind of [`OutboxEvent::Pruned`].
pub const PRUNED: &str = "outbox.pruned";

impl DomainEvent for OutboxEvent {
    const CATALOGUE: &'static [EventKind] = &[
        EventKind {
            kind: ENQUEUED,
            schema: 2,
        },
        EventKind {
            kind: DELIVERED,
            schema: 1,
        },
        EventKind {
            kind: PARKED,
            schema: 1,
        },
        EventKind {
            kind: RETRY_SCHEDULED,
            schema: 1,
        },
        EventKind {
            kind: CLAIMED,
            schema: 1,
        },
        EventKind {
            kind: ACKED,
            schema: 1,
        },
        EventKind {
            kind: EXPIRED,
            schema: 1,
        },
        EventKind {
            kind: PRUNED,
            schema: 1,
        },
    ];

    fn kind(&self) -> &'static str {
        match self {
            OutboxEvent::Enqueued(_) => ENQUEUED,
            OutboxEvent::Delivered(_) => DELIVERED,
            OutboxEvent::Parked(_) => PARKED,
            OutboxEvent::RetryScheduled(_) => RETRY_SCHEDULED,
            OutboxEvent::Claimed(_) => CLAIMED,
            OutboxEvent::Acked(_) => ACKED,
            OutboxEvent::Expired(_) => EXPIRED,
            OutboxEvent::Pruned(_) => PRUNED,
        }
    }

    fn payload(&self) -> Vec<u8> {
        match self {
            OutboxEvent::Enqueued(e) => encode_payload(e),
            OutboxEvent::Delivered(e) => encode_payload(e),
            OutboxEvent::Parked(e) => encode_payload(e),
            OutboxEvent::RetryScheduled(e) => encode_payload(e),
            OutboxEvent::Claimed(e) => encode_payload(e),
            OutboxEvent::Acked(e) => encode_payload(e),
            OutboxEvent::Expired(e) => encode_payload(e),
            OutboxEvent::Pruned(e) => encode_payload(e),
        }
    }

    fn from_record(record: &Record) -> Result<Option<Self>> {
        let event = match (record.kind.as_str(), record.schema) {
            (ENQUEUED, 1) => {
                let v1: EnqueuedV1 = decode_payload(record)?;
                OutboxEvent::Enqueued(Enqueued {
                    key: v1.key,
                    peer: v1.peer,
                    kind: String::new(),
                    payload: v1.payload,
                    enqueue_id: record.position.0.saturating_add(1),
                })
            }
            (ENQUEUED, 2) => OutboxEvent::Enqueued(decode_payload(record)?),
            (DELIVERED, 1) => OutboxEvent::Delivered(decode_payload(record)?),
            (PARKED, 1) => OutboxEvent::Parked(decode_payload(record)?),
            (RETRY_SCHEDULED, 1) => OutboxEvent::RetryScheduled(decode_payload(record)?),
            (CLAIMED, 1) => OutboxEvent::Claimed(decode_payload(record)?),
            (ACKED, 1) => OutboxEvent::Acked(decode_payload(record)?),
            (EXPIRED, 1) => OutboxEvent::Expired(decode_payload(record)?),
            (PRUNED, 1) => OutboxEvent::Pruned(decode_payload(record)?),
            (kind, _) if Self::CATALOGUE.iter().any(|e| e.kind == kind) => {
                return Err(unknown_schema(record));
            }
            _ => return Ok(None),
        };
        Ok(Some(event))
    }
}
