//! Outbox commands and their pure decisions: state + command → events or a refusal.
//!
//! Three command enums, by who sends them: [`OutboxCommand`] (the host: enqueue, and the
//! push lane's outcomes), [`PullCommand`] (a peer's own pull: claim and ack) and
//! [`SweepCommand`] (housekeeping: expire and prune). Every rule is decided against the
//! command's `now_ms`; nothing here reads a clock or makes up a token.

use std::collections::BTreeSet;

use super::apply::{created, evolve};
use super::events::{
    Acked, Claimed, Delivered, ENQUEUED, Enqueued, Expired, ExpiryReason, OutboxEvent, Parked,
    Pruned, RetryScheduled,
};
use super::query::{
    self, BY_STATE, ClaimToken, OutboxRow, OutboxState, indexed_row, state_range, visit_between,
};
use crate::command::{Command, Decision, Emit, PersonalField, Sealing, check_sealed};
use crate::error::Result;
use crate::event::DomainEvent;
use crate::log::append::ExpectedVersion;
use crate::log::read::Direction;
use crate::projection::table::TableSource;
use crate::record::envelope::{Envelope, OVERHEAD_MAX, overhead};
use crate::record::limits::Limits;
use crate::validate;

/// Longest idempotency key, in bytes.
pub const KEY_BYTES_MAX: usize = 200;
/// Longest peer name, in bytes.
pub const PEER_BYTES_MAX: usize = 200;
/// Longest row kind, in bytes.
pub const KIND_BYTES_MAX: usize = 64;
/// Longest claim token, in bytes.
pub const CLAIM_TOKEN_BYTES_MAX: usize = 128;
/// Longest error text a retry records, in bytes.
pub const ERROR_BYTES_MAX: usize = 1024;
/// Largest payload of one row, in bytes.
pub const PAYLOAD_BYTES_MAX: usize = 256 * 1024;
/// Most rows one claim takes (a larger `limit` is clamped to it, as in the reference).
pub const CLAIM_ROWS_MAX: u32 = 100;
/// Most rows one ack names.
pub const ACK_ROWS_MAX: usize = 1000;
/// Most rows one sweep (expire or prune) changes; the outcome says when more are left.
pub const SWEEP_ROWS_MAX: usize = 1000;

/// The reference's claim lease: a claim not acked within this long may be taken again.
pub const CLAIM_LEASE_MS: u64 = 10 * 60_000;
/// The reference's maximum age: a row not delivered within this long is given up on.
pub const MAX_AGE_MS: u64 = 30 * 24 * 60 * 60_000;
/// The reference's claim retry window: a row whose claim lapsed unacked is claimed again
/// until it is this old, then given up on.
pub const CLAIM_RETRY_MS: u64 = 24 * 60 * 60_000;
/// The reference's retention of `done` and `expired` rows before they are pruned.
pub const PRUNE_AFTER_MS: u64 = 24 * 60 * 60_000;

const STREAM_PREFIX: &str = "outbox/";

/// The states of a row the push lane still owes: delivered, given up on or expired by age
/// only from these.
const UNDELIVERED: [OutboxState; 2] = [OutboxState::Pending, OutboxState::Waiting];

// Every event of a valid command fits the default limits of one record.
const _: () =
    assert!(STREAM_PREFIX.len() + KEY_BYTES_MAX <= Limits::DEFAULT.stream_bytes_max as usize);
const _: () = assert!(
    PAYLOAD_BYTES_MAX + OVERHEAD_MAX + KEY_BYTES_MAX + PEER_BYTES_MAX + KIND_BYTES_MAX + 5 * 8
        <= Limits::DEFAULT.payload_bytes_max as usize
);
const _: () = assert!(CLAIM_RETRY_MS < MAX_AGE_MS);

/// The stream of a row's events.
pub fn row_stream(key: &str) -> String {
    format!("{STREAM_PREFIX}{key}")
}

impl OutboxRow {
    /// Its payload as [`crate::erasure::PayloadReader::open_field`] reads it (`docs/erasure.md`): the
    /// bytes of a row enqueued with no subject; for one enqueued with a `subject`, whose row
    /// keeps the envelope, the plaintext while the subject's key stands, and
    /// [`crate::erasure::Payload::Erased`] once the subject is erased or where the store holds no key
    /// for it (a follower, an importer).
    pub fn payload_field(&self) -> crate::record::envelope::SealedField<'_> {
        crate::record::envelope::SealedField {
            bytes: &self.payload,
            stream: row_stream(&self.key),
            kind: ENQUEUED,
        }
    }
}

/// How long a failed push waits before the next: `base_ms` after the first failure,
/// doubling with each further one, never more than `max_ms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Backoff {
    /// The wait after the first failure.
    pub base_ms: u64,
    /// The longest wait.
    pub max_ms: u64,
}

impl Backoff {
    /// 30 seconds, doubling, at most an hour.
    pub const DEFAULT: Backoff = Backoff {
        base_ms: 30_000,
        max_ms: 60 * 60_000,
    };

    /// The wait after failure number `attempts` (1 for the first).
    pub fn delay_ms(&self, attempts: u32) -> u64 {
        let doublings = attempts.saturating_sub(1);
        1u64.checked_shl(doublings)
            .and_then(|factor| self.base_ms.checked_mul(factor))
            .map_or(self.max_ms, |delay| delay.min(self.max_ms))
    }

    fn check(&self) -> Result<()> {
        validate::positive("backoff.base_ms", self.base_ms)?;
        validate::at_least(
            "backoff.max_ms",
            self.max_ms,
            "backoff.base_ms",
            self.base_ms,
        )
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::DEFAULT
    }
}

/// Why an outbox command (or one row of an ack) did not get what it asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutboxRefusal {
    /// There is no row with that key.
    Missing,
    /// The row is not in a state the command moves it from.
    WrongState,
    /// The row is owed to another peer.
    OtherPeer,
    /// The row is claimed under another token.
    OtherToken,
    /// A row the claim would take was claimed under this token before: a token must be
    /// fresh, or the earlier claimant's ack would pass for the new one's.
    TokenReused,
}

impl std::fmt::Display for OutboxRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OutboxRefusal::Missing => "missing",
            OutboxRefusal::WrongState => "wrong_state",
            OutboxRefusal::OtherPeer => "other_peer",
            OutboxRefusal::OtherToken => "other_token",
            OutboxRefusal::TokenReused => "token_reused",
        })
    }
}

/// A command of the host: add a row, or record what the push lane did with one. Its serde
/// form names each variant in snake_case (`mark_waiting`); a command's serde form is not stored.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutboxCommand {
    /// Add a `pending` row due at once; a key already present adds nothing.
    Enqueue {
        /// The idempotency key.
        key: String,
        /// The peer it is owed to.
        peer: String,
        /// What kind of row it is (the reference's `kind`), at most [`KIND_BYTES_MAX`]
        /// bytes.
        kind: String,
        /// What is delivered, at most [`PAYLOAD_BYTES_MAX`] bytes.
        #[serde(with = "crate::event::bytes")]
        #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
        payload: Vec<u8>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// [`OutboxCommand::Enqueue`] of a payload personal to `subject` (a person's id): the
    /// store's write session seals it under the subject's key before the event is hashed, the
    /// row keeps the envelope, and [`OutboxRow::payload_field`] reads it back, or as erased
    /// once the subject is (`docs/erasure.md`). A variant of its own, so that an `Enqueue`
    /// written before personal payloads existed still builds as it was.
    EnqueueFor {
        /// The subject the payload belongs to.
        subject: String,
        /// The idempotency key.
        key: String,
        /// The peer it is owed to.
        peer: String,
        /// What kind of row it is, at most [`KIND_BYTES_MAX`] bytes.
        kind: String,
        /// What is delivered, at most [`PAYLOAD_BYTES_MAX`] bytes before it is sealed.
        #[serde(with = "crate::event::bytes")]
        #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
        payload: Vec<u8>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// The push lane delivered a `pending` or `waiting` row: `done`.
    Deliver {
        /// The row's key.
        key: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// The push lane cannot reach the peer: a `pending` row becomes `waiting` (only the
    /// peer's pull takes it), one attempt more.
    Park {
        /// The row's key.
        key: String,
        /// The caller's clock.
        now_ms: u64,
    },
    /// A push of a `pending` row failed: one attempt more, due again after the backoff.
    Retry {
        /// The row's key.
        key: String,
        /// The backoff rule ([`Backoff::DEFAULT`] when a serde form leaves it out).
        #[serde(default)]
        backoff: Backoff,
        /// What went wrong, at most [`ERROR_BYTES_MAX`] bytes.
        last_error: Option<String>,
        /// The caller's clock.
        now_ms: u64,
    },
    /// The reference's `markWaiting`: a `pending` row becomes `waiting` with the attempt
    /// count the caller gives.
    MarkWaiting {
        /// The row's key.
        key: String,
        /// The attempt count the row takes.
        attempts: u32,
        /// The caller's clock.
        now_ms: u64,
    },
    /// The reference's `markRetry`: a `pending` row stays `pending` with the attempt count,
    /// next time and first failure time the caller gives.
    MarkRetry {
        /// The row's key.
        key: String,
        /// The attempt count the row takes.
        attempts: u32,
        /// When it is due again.
        next_at_ms: u64,
        /// When it first failed.
        first_failed_at_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// The push lane gives up on a `pending` or `waiting` row: `expired`.
    GiveUp {
        /// The row's key.
        key: String,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// What an [`OutboxCommand`] got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum OutboxOutcome {
    /// A row was added.
    Enqueued {
        /// The row now.
        row: OutboxRow,
    },
    /// The key was present; nothing was added or changed.
    AlreadyEnqueued {
        /// The row that stands (its peer and payload may differ from the command's).
        row: OutboxRow,
    },
    /// The row moved.
    Updated {
        /// The row now.
        row: OutboxRow,
    },
    /// Refused; nothing appended.
    Refused {
        /// Why.
        reason: OutboxRefusal,
        /// The row that stands, if any.
        row: Option<OutboxRow>,
    },
}

/// One row of an ack: its key and the token it was claimed under.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RowAck {
    /// The row's key.
    pub key: String,
    /// The claim's token.
    pub token: ClaimToken,
}

/// A command of a peer's own pull.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PullCommand {
    /// Claim the peer's own claimable rows (pending, waiting, or claimed under a lapsed
    /// claim), in enqueue order, under the caller's fresh `token` until `now_ms + lease_ms`.
    Claim {
        /// The claiming peer: only its own rows are taken.
        peer: String,
        /// A token the caller made fresh for this claim.
        token: ClaimToken,
        /// Most rows to take, clamped to 1..=[`CLAIM_ROWS_MAX`].
        limit: u32,
        /// How long the claim lasts ([`CLAIM_LEASE_MS`] in the reference, and when a serde
        /// form leaves it out).
        #[serde(default = "claim_lease_ms")]
        lease_ms: u64,
        /// The caller's clock.
        now_ms: u64,
    },
    /// Mark `done` the rows the peer still holds under the tokens it names.
    Ack {
        /// The acking peer.
        peer: String,
        /// The rows, each with the token it was claimed under; at most [`ACK_ROWS_MAX`].
        acks: Vec<RowAck>,
        /// The caller's clock.
        now_ms: u64,
    },
}

/// A row of an ack that was not acked, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AckRefusal {
    /// The row's key.
    pub key: String,
    /// Why it was not acked.
    pub reason: OutboxRefusal,
}

/// What a [`PullCommand`] got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum PullOutcome {
    /// The rows claimed (possibly none), in enqueue order.
    Claimed {
        /// The claim's token.
        token: ClaimToken,
        /// When the claim lapses.
        expires_at_ms: u64,
        /// The rows now.
        rows: Vec<OutboxRow>,
    },
    /// The rows acked and the rows not acked, each in the order the ack named them.
    Acked {
        /// The keys acked.
        acked: Vec<String>,
        /// The rows not acked.
        refused: Vec<AckRefusal>,
    },
    /// The claim was refused; nothing appended.
    Refused {
        /// Why.
        reason: OutboxRefusal,
        /// The row that caused it.
        key: String,
    },
}

/// A housekeeping command. Its serde names say the domain (`prune_outbox`), as the runs'
/// own pruning is another command; a serde form that leaves an age out takes the reference's.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SweepCommand {
    /// Give up on rows never delivered that are older than `max_age_ms`, and on rows whose
    /// claim lapsed unacked that are older than `claim_retry_ms`. At most
    /// [`SWEEP_ROWS_MAX`] rows, oldest first.
    Expire {
        /// The caller's clock.
        now_ms: u64,
        /// Age past which a `pending` or `waiting` row expires ([`MAX_AGE_MS`]).
        #[serde(default = "max_age_ms")]
        max_age_ms: u64,
        /// Age past which a row under a lapsed claim expires ([`CLAIM_RETRY_MS`]).
        #[serde(default = "claim_retry_ms")]
        claim_retry_ms: u64,
    },
    /// Remove `done` and `expired` rows created more than `older_than_ms` ago. At most
    /// [`SWEEP_ROWS_MAX`] rows, oldest first.
    #[serde(rename = "prune_outbox")]
    Prune {
        /// The caller's clock.
        now_ms: u64,
        /// Age past which a finished row is removed ([`PRUNE_AFTER_MS`]).
        #[serde(default = "prune_after_ms")]
        older_than_ms: u64,
    },
}

/// A row a sweep expired.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExpiredRow {
    /// The row's key.
    pub key: String,
    /// Why it expired.
    pub reason: ExpiryReason,
}

/// What a [`SweepCommand`] got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum SweepOutcome {
    /// The rows expired, oldest first.
    Expired {
        /// The rows.
        rows: Vec<ExpiredRow>,
        /// Whether more rows qualify than one sweep takes: run it again.
        more: bool,
    },
    /// The rows removed, oldest first.
    Pruned {
        /// Their keys.
        keys: Vec<String>,
        /// Whether more rows qualify than one sweep takes: run it again.
        more: bool,
    },
}

// The reference's durations, as serde's defaults take them: a function each.
fn claim_lease_ms() -> u64 {
    CLAIM_LEASE_MS
}

fn max_age_ms() -> u64 {
    MAX_AGE_MS
}

fn claim_retry_ms() -> u64 {
    CLAIM_RETRY_MS
}

fn prune_after_ms() -> u64 {
    PRUNE_AFTER_MS
}

// Keys, peers and tokens are refused when empty, over-long or bearing a control
// character, as the reference's envelope decoder refuses anything but the documented shape.

fn check_key(key: &str) -> Result<()> {
    validate::name("key", key, KEY_BYTES_MAX)
}

fn check_kind(kind: &str) -> Result<()> {
    validate::name("kind", kind, KIND_BYTES_MAX)
}

fn check_peer(peer: &str) -> Result<()> {
    validate::name("peer", peer, PEER_BYTES_MAX)
}

fn check_token(token: &ClaimToken) -> Result<()> {
    validate::name("token", &token.0, CLAIM_TOKEN_BYTES_MAX)
}

/// One append per event, each to the stream of its row.
fn emits(events: &[OutboxEvent], now_ms: u64) -> Vec<Emit> {
    events
        .iter()
        .map(|event| Emit {
            stream: row_stream(event.key()),
            expected: ExpectedVersion::Any,
            events: vec![event.to_new_event(now_ms)],
        })
        .collect()
}

fn emit_one<O>(event: OutboxEvent, now_ms: u64, outcome: O) -> Decision<O> {
    Decision {
        emits: emits(std::slice::from_ref(&event), now_ms),
        outcome,
    }
}

impl Command for OutboxCommand {
    type Outcome = OutboxOutcome;

    /// An enqueue naming a subject, with its payload sealed for it into the event
    /// `outbox.enqueued` of stream `outbox/<key>`.
    fn sealed(
        &self,
        seal: &mut dyn FnMut(PersonalField<'_>) -> Result<Vec<u8>>,
    ) -> Result<Option<Self>> {
        let OutboxCommand::EnqueueFor {
            key,
            payload,
            subject,
            ..
        } = self
        else {
            return Ok(None);
        };
        // Refused on the plaintext, before a key is made for it.
        check_key(key)?;
        validate::at_most_bytes("payload", payload.len(), PAYLOAD_BYTES_MAX)?;
        let envelope = seal(PersonalField {
            subject,
            stream: &row_stream(key),
            kind: ENQUEUED,
            plaintext: payload,
            sealing: Sealing::Random,
        })?;
        let mut sealed = self.clone();
        if let OutboxCommand::EnqueueFor { payload, .. } = &mut sealed {
            *payload = envelope;
        }
        Ok(Some(sealed))
    }

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<OutboxOutcome>> {
        match self {
            OutboxCommand::Enqueue {
                key,
                peer,
                kind,
                payload,
                now_ms,
            } => decide_enqueue(state, key, peer, kind, payload, *now_ms),
            OutboxCommand::EnqueueFor {
                subject,
                key,
                peer,
                kind,
                payload,
                now_ms,
            } => {
                check_sealed("payload", payload, subject)?;
                decide_enqueue(state, key, peer, kind, payload, *now_ms)
            }
            OutboxCommand::Deliver { key, now_ms } => decide_deliver(state, key, *now_ms),
            OutboxCommand::Park { key, now_ms } => decide_park(state, key, *now_ms),
            OutboxCommand::Retry {
                key,
                backoff,
                last_error,
                now_ms,
            } => decide_retry(state, key, backoff, last_error, *now_ms),
            OutboxCommand::MarkWaiting {
                key,
                attempts,
                now_ms,
            } => decide_mark_waiting(state, key, *attempts, *now_ms),
            OutboxCommand::MarkRetry {
                key,
                attempts,
                next_at_ms,
                first_failed_at_ms,
                now_ms,
            } => decide_mark_retry(
                state,
                key,
                *attempts,
                *next_at_ms,
                *first_failed_at_ms,
                *now_ms,
            ),
            OutboxCommand::GiveUp { key, now_ms } => decide_give_up(state, key, *now_ms),
        }
    }
}

/// [`OutboxCommand::Enqueue`]: a new `pending` row, or the row the key already has.
fn decide_enqueue(
    state: &dyn TableSource,
    key: &str,
    peer: &str,
    kind: &str,
    payload: &[u8],
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    check_key(key)?;
    check_peer(peer)?;
    check_kind(kind)?;
    // A sealed payload is its plaintext, checked before it was sealed, and an envelope's bytes.
    let payload_max = match Envelope::parse(payload) {
        Some(envelope) => PAYLOAD_BYTES_MAX + overhead(envelope.subject),
        None => PAYLOAD_BYTES_MAX,
    };
    validate::at_most_bytes("payload", payload.len(), payload_max)?;
    if let Some(row) = query::row(state, key)? {
        return Ok(Decision::nothing(OutboxOutcome::AlreadyEnqueued { row }));
    }
    let enqueued = Enqueued {
        key: key.to_owned(),
        peer: peer.to_owned(),
        kind: kind.to_owned(),
        payload: payload.to_vec(),
        enqueue_id: query::next_enqueue_id(state)?,
    };
    let row = created(&enqueued, now_ms);
    let event = OutboxEvent::Enqueued(enqueued);
    Ok(emit_one(event, now_ms, OutboxOutcome::Enqueued { row }))
}

/// [`OutboxCommand::Deliver`]: a `pending` or `waiting` row is `done`.
fn decide_deliver(
    state: &dyn TableSource,
    key: &str,
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    move_row(state, key, now_ms, &UNDELIVERED, |_| {
        OutboxEvent::Delivered(Delivered {
            key: key.to_owned(),
        })
    })
}

/// [`OutboxCommand::Park`]: a `pending` row is `waiting`, one attempt more.
fn decide_park(state: &dyn TableSource, key: &str, now_ms: u64) -> Result<Decision<OutboxOutcome>> {
    move_row(state, key, now_ms, &[OutboxState::Pending], |row| {
        OutboxEvent::Parked(Parked {
            key: key.to_owned(),
            attempts: row.attempts.saturating_add(1),
        })
    })
}

/// [`OutboxCommand::Retry`]: a `pending` row is due again after the backoff, one attempt
/// more.
fn decide_retry(
    state: &dyn TableSource,
    key: &str,
    backoff: &Backoff,
    last_error: &Option<String>,
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    backoff.check()?;
    if let Some(error) = last_error {
        validate::at_most_bytes("last_error", error.len(), ERROR_BYTES_MAX)?;
    }
    move_row(state, key, now_ms, &[OutboxState::Pending], |row| {
        let attempts = row.attempts.saturating_add(1);
        OutboxEvent::RetryScheduled(RetryScheduled {
            key: key.to_owned(),
            attempts,
            next_at_ms: now_ms.saturating_add(backoff.delay_ms(attempts)),
            first_failed_at_ms: row.first_failed_at_ms.unwrap_or(now_ms),
            last_error: last_error.clone(),
        })
    })
}

/// [`OutboxCommand::MarkWaiting`]: a `pending` row is `waiting` with the caller's count.
fn decide_mark_waiting(
    state: &dyn TableSource,
    key: &str,
    attempts: u32,
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    move_row(state, key, now_ms, &[OutboxState::Pending], |_| {
        OutboxEvent::Parked(Parked {
            key: key.to_owned(),
            attempts,
        })
    })
}

/// [`OutboxCommand::MarkRetry`]: a `pending` row takes the caller's count, next time and
/// first failure time; its last error stays.
fn decide_mark_retry(
    state: &dyn TableSource,
    key: &str,
    attempts: u32,
    next_at_ms: u64,
    first_failed_at_ms: u64,
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    move_row(state, key, now_ms, &[OutboxState::Pending], |row| {
        OutboxEvent::RetryScheduled(RetryScheduled {
            key: key.to_owned(),
            attempts,
            next_at_ms,
            first_failed_at_ms,
            last_error: row.last_error.clone(),
        })
    })
}

/// [`OutboxCommand::GiveUp`]: a `pending` or `waiting` row is `expired`.
fn decide_give_up(
    state: &dyn TableSource,
    key: &str,
    now_ms: u64,
) -> Result<Decision<OutboxOutcome>> {
    move_row(state, key, now_ms, &UNDELIVERED, |_| {
        OutboxEvent::Expired(Expired {
            key: key.to_owned(),
            reason: ExpiryReason::GivenUp,
        })
    })
}

/// Emits `event(row)` if the row `key` is in one of the states `from`, else refuses.
fn move_row(
    state: &dyn TableSource,
    key: &str,
    now_ms: u64,
    from: &[OutboxState],
    event: impl FnOnce(&OutboxRow) -> OutboxEvent,
) -> Result<Decision<OutboxOutcome>> {
    check_key(key)?;
    let refused = |reason, row| Ok(Decision::nothing(OutboxOutcome::Refused { reason, row }));
    let Some(row) = query::row(state, key)? else {
        return refused(OutboxRefusal::Missing, None);
    };
    if !from.contains(&row.state) {
        return refused(OutboxRefusal::WrongState, Some(row));
    }
    let event = event(&row);
    let row = evolve(row, &event, now_ms);
    Ok(emit_one(event, now_ms, OutboxOutcome::Updated { row }))
}

impl Command for PullCommand {
    type Outcome = PullOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<PullOutcome>> {
        match self {
            PullCommand::Claim {
                peer,
                token,
                limit,
                lease_ms,
                now_ms,
            } => decide_claim(state, peer, token, *limit, *lease_ms, *now_ms),
            PullCommand::Ack { peer, acks, now_ms } => decide_ack(state, peer, acks, *now_ms),
        }
    }
}

/// [`PullCommand::Claim`]: the peer's oldest claimable rows, claimed under its fresh token.
fn decide_claim(
    state: &dyn TableSource,
    peer: &str,
    token: &ClaimToken,
    limit: u32,
    lease_ms: u64,
    now_ms: u64,
) -> Result<Decision<PullOutcome>> {
    check_peer(peer)?;
    check_token(token)?;
    validate::positive("lease_ms", lease_ms)?;
    let take = limit.clamp(1, CLAIM_ROWS_MAX) as usize;
    let rows = query::open_rows_for(state, peer, take, |row| row.is_claimable(now_ms))?;
    if let Some(row) = rows.iter().find(|row| row.claim_tokens.contains(token)) {
        return Ok(Decision::nothing(PullOutcome::Refused {
            reason: OutboxRefusal::TokenReused,
            key: row.key.clone(),
        }));
    }
    let expires_at_ms = now_ms.saturating_add(lease_ms);
    let mut events = Vec::with_capacity(rows.len());
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        let event = OutboxEvent::Claimed(Claimed {
            key: row.key.clone(),
            peer: peer.to_owned(),
            token: token.clone(),
            expires_at_ms,
        });
        claimed.push(evolve(row, &event, now_ms));
        events.push(event);
    }
    Ok(Decision {
        emits: emits(&events, now_ms),
        outcome: PullOutcome::Claimed {
            token: token.clone(),
            expires_at_ms,
            rows: claimed,
        },
    })
}

/// [`PullCommand::Ack`]: `done` for each row the peer still holds under the token it names.
fn decide_ack(
    state: &dyn TableSource,
    peer: &str,
    acks: &[RowAck],
    now_ms: u64,
) -> Result<Decision<PullOutcome>> {
    check_peer(peer)?;
    validate::at_most_items("acks", acks.len(), ACK_ROWS_MAX)?;
    for ack in acks {
        check_key(&ack.key)?;
        check_token(&ack.token)?;
    }
    let mut acked = Vec::new();
    let mut refused = Vec::new();
    let mut events = Vec::new();
    // A key named twice is acked once: the second finds it done already.
    let mut done_here = BTreeSet::new();
    for ack in acks {
        let verdict = if done_here.contains(&ack.key) {
            Err(OutboxRefusal::WrongState)
        } else {
            ack_verdict(query::row(state, &ack.key)?, peer, &ack.token)
        };
        match verdict {
            Ok(()) => {
                done_here.insert(ack.key.clone());
                acked.push(ack.key.clone());
                events.push(OutboxEvent::Acked(Acked {
                    key: ack.key.clone(),
                    token: ack.token.clone(),
                }));
            }
            Err(reason) => refused.push(AckRefusal {
                key: ack.key.clone(),
                reason,
            }),
        }
    }
    Ok(Decision {
        emits: emits(&events, now_ms),
        outcome: PullOutcome::Acked { acked, refused },
    })
}

/// Whether `peer` may ack `row` under `token`: the row is the peer's, still claimed, under
/// that token. A lapsed claim that nobody has taken again still counts, as in the reference:
/// the peer did deliver it.
fn ack_verdict(
    row: Option<OutboxRow>,
    peer: &str,
    token: &ClaimToken,
) -> std::result::Result<(), OutboxRefusal> {
    let row = row.ok_or(OutboxRefusal::Missing)?;
    if row.peer != peer {
        return Err(OutboxRefusal::OtherPeer);
    }
    match (&row.state, &row.claim) {
        (OutboxState::Claimed, Some(claim)) if claim.token == *token => Ok(()),
        (OutboxState::Claimed, _) => Err(OutboxRefusal::OtherToken),
        _ => Err(OutboxRefusal::WrongState),
    }
}

impl Command for SweepCommand {
    type Outcome = SweepOutcome;

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<SweepOutcome>> {
        match self {
            SweepCommand::Expire {
                now_ms,
                max_age_ms,
                claim_retry_ms,
            } => decide_expire(state, *now_ms, *max_age_ms, *claim_retry_ms),
            SweepCommand::Prune {
                now_ms,
                older_than_ms,
            } => decide_prune(state, *now_ms, *older_than_ms),
        }
    }
}

/// [`SweepCommand::Expire`]: gives up on rows too old to deliver, and on rows whose claim
/// lapsed too long ago, oldest first.
fn decide_expire(
    state: &dyn TableSource,
    now_ms: u64,
    max_age_ms: u64,
    claim_retry_ms: u64,
) -> Result<Decision<SweepOutcome>> {
    let take = SWEEP_ROWS_MAX + 1;
    let mut found: Vec<(u64, String, ExpiryReason)> = Vec::new();
    let too_old = now_ms.saturating_sub(max_age_ms);
    for open in UNDELIVERED {
        let (from, to) = state_range(open, too_old);
        for ((_, created_at_ms, key), ()) in
            BY_STATE.scan_between(state, &from, &to, Direction::Forward, take)?
        {
            found.push((created_at_ms, key, ExpiryReason::MaxAge));
        }
    }
    let past_retry = now_ms.saturating_sub(claim_retry_ms);
    let (from, to) = state_range(OutboxState::Claimed, past_retry);
    let mut lapsed = 0;
    visit_between(BY_STATE, state, from, &to, |(_, created_at_ms, key), ()| {
        let row = indexed_row(state, &key)?;
        if row.claim.as_ref().is_none_or(|c| c.has_lapsed(now_ms)) {
            found.push((created_at_ms, key, ExpiryReason::ClaimLapsed));
            lapsed += 1;
        }
        Ok(lapsed < take)
    })?;
    let (found, more) = oldest(found);
    let events: Vec<OutboxEvent> = found
        .iter()
        .map(|(_, key, reason)| {
            OutboxEvent::Expired(Expired {
                key: key.clone(),
                reason: *reason,
            })
        })
        .collect();
    let rows = found
        .into_iter()
        .map(|(_, key, reason)| ExpiredRow { key, reason })
        .collect();
    Ok(Decision {
        emits: emits(&events, now_ms),
        outcome: SweepOutcome::Expired { rows, more },
    })
}

/// [`SweepCommand::Prune`]: removes finished rows created before the window, oldest first.
fn decide_prune(
    state: &dyn TableSource,
    now_ms: u64,
    older_than_ms: u64,
) -> Result<Decision<SweepOutcome>> {
    let before = now_ms.saturating_sub(older_than_ms);
    let mut found: Vec<(u64, String, ())> = Vec::new();
    for finished in [OutboxState::Done, OutboxState::Expired] {
        let (from, to) = state_range(finished, before);
        for ((_, created_at_ms, key), ()) in
            BY_STATE.scan_between(state, &from, &to, Direction::Forward, SWEEP_ROWS_MAX + 1)?
        {
            found.push((created_at_ms, key, ()));
        }
    }
    let (found, more) = oldest(found);
    let events: Vec<OutboxEvent> = found
        .iter()
        .map(|(_, key, ())| OutboxEvent::Pruned(Pruned { key: key.clone() }))
        .collect();
    let keys = found.into_iter().map(|(_, key, ())| key).collect();
    Ok(Decision {
        emits: emits(&events, now_ms),
        outcome: SweepOutcome::Pruned { keys, more },
    })
}

/// The [`SWEEP_ROWS_MAX`] oldest of `found` by (creation time, key), and whether any were
/// left out.
fn oldest<T: Ord>(mut found: Vec<(u64, String, T)>) -> (Vec<(u64, String, T)>, bool) {
    found.sort();
    let more = found.len() > SWEEP_ROWS_MAX;
    found.truncate(SWEEP_ROWS_MAX);
    (found, more)
}
