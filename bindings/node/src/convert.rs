//! Conversions between JavaScript's values and annals' types: checked, never lossy, every
//! refusal an `INVALID_ARGUMENT` naming the field.

use annals::outbox::{OutboxOutcome as CoreOutboxOutcome, PullOutcome, SweepOutcome};
use annals::{AppendOutcome as Outcome, Direction, ExpectedVersion, StreamVersion};
use napi::bindgen_prelude::{BigInt, Buffer};

use crate::error::invalid;
use crate::rows::{instance_js, outbox_row_js};
use crate::{
    AckRefusal, AppendOutcome, ExpiredRow, InstanceCommand, InstanceOutcome, LogRecord, NewEvent,
    OutboxOutcome, ReadOptions,
};

/// The largest integer a JavaScript number holds exactly.
const SAFE_INTEGER_MAX: f64 = 9_007_199_254_740_991.0;

/// A `bigint` that must be a `u64`.
pub fn u64_of(value: &BigInt, field: &str) -> napi::Result<u64> {
    let (negative, value, lossless) = value.get_u64();
    if negative || !lossless {
        return Err(invalid(field, "must be a bigint from 0 to 2^64 - 1"));
    }
    Ok(value)
}

/// A position or version given as a `bigint`.
pub fn position(value: &BigInt, field: &str) -> napi::Result<u64> {
    u64_of(value, field)
}

/// A `number` that must be a whole number from 0 to `max` (named `bound` in the refusal):
/// napi-rs's own conversions would wrap -1, 2^32 or NaN to some count instead.
fn whole(value: f64, max: f64, field: &str, bound: &str) -> napi::Result<f64> {
    if !(value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= max) {
        return Err(invalid(
            field,
            &format!("{value} is not a whole number from 0 to {bound}"),
        ));
    }
    Ok(value)
}

/// Milliseconds (or a count as large) given as a `number`: a whole number from 0 to 2^53 - 1.
pub fn u64_of_ms(value: f64, field: &str) -> napi::Result<u64> {
    Ok(whole(value, SAFE_INTEGER_MAX, field, "2^53 - 1")? as u64)
}

/// A count given as a `number`: a whole number from 0 to 2^32 - 1.
pub fn u32_of(value: f64, field: &str) -> napi::Result<u32> {
    Ok(whole(value, f64::from(u32::MAX), field, "2^32 - 1")? as u32)
}

/// A count that may be absent.
pub fn optional_u32(value: Option<f64>, field: &str) -> napi::Result<Option<u32>> {
    value.map(|value| u32_of(value, field)).transpose()
}

/// `'any'`, `'none'`, `'exists'` or a version.
pub fn expected(value: napi::Either<String, BigInt>) -> napi::Result<ExpectedVersion> {
    match value {
        napi::Either::A(text) => match text.as_str() {
            "any" => Ok(ExpectedVersion::Any),
            "none" => Ok(ExpectedVersion::NoStream),
            "exists" => Ok(ExpectedVersion::StreamExists),
            _ => Err(invalid(
                "expected",
                "must be 'any', 'none', 'exists' or a bigint version",
            )),
        },
        napi::Either::B(version) => Ok(ExpectedVersion::Exact(StreamVersion(u64_of(
            &version, "expected",
        )?))),
    }
}

/// The events of an append.
pub fn events(events: Vec<NewEvent>) -> napi::Result<Vec<annals::NewEvent>> {
    events
        .into_iter()
        .enumerate()
        .map(|(at, event)| {
            let at_ms = u64_of_ms(event.at_ms, &format!("events[{at}].atMs"))?;
            let mut converted = annals::NewEvent::new(event.kind, at_ms, event.payload.to_vec());
            if let Some(key) = event.idempotency_key {
                converted = converted.with_idempotency_key(key);
            }
            Ok(converted)
        })
        .collect()
}

/// How many records a read gives without a `limit`.
pub(crate) const READ_LIMIT: u32 = 1000;

/// Where a read starts, which way it goes, and how many records it asks for: one past its
/// `limit`, which `lib.js` takes off again and reports as the list's `more`.
pub fn read_options(options: Option<ReadOptions>) -> napi::Result<(Option<u64>, Direction, usize)> {
    let Some(options) = options else {
        return Ok((None, Direction::Forward, READ_LIMIT as usize + 1));
    };
    let from = options
        .from
        .as_ref()
        .map(|from| u64_of(from, "from"))
        .transpose()?;
    let direction = match options.direction.as_deref() {
        None | Some("forward") => Direction::Forward,
        Some("backward") => Direction::Backward,
        Some(_) => return Err(invalid("direction", "must be 'forward' or 'backward'")),
    };
    let limit = optional_u32(options.limit, "limit")?.unwrap_or(READ_LIMIT);
    Ok((from, direction, limit as usize + 1))
}

pub fn append_outcome(outcome: Outcome) -> AppendOutcome {
    match outcome {
        Outcome::Appended(appended) => AppendOutcome::Appended {
            first_position: BigInt::from(appended.first_position.0),
            first_version: BigInt::from(appended.first_version.0),
            count: u32::try_from(appended.count).unwrap_or(u32::MAX),
        },
        Outcome::Duplicate { positions } => AppendOutcome::Duplicate {
            positions: positions.iter().map(|p| BigInt::from(p.0)).collect(),
        },
    }
}

pub fn record_js(record: annals::Record) -> LogRecord {
    LogRecord {
        position: BigInt::from(record.position.0),
        stream: record.stream,
        version: BigInt::from(record.version.0),
        kind: record.kind,
        schema: u32::from(record.schema),
        at_ms: record.at_ms as f64,
        idempotency_key: record.idempotency_key,
        payload: Buffer::from(record.payload),
        hash: record.hash.to_hex(),
    }
}

/// The name a serde enum serialises to (`'held'`, `'superseded'`, …).
pub fn name_of(value: &impl serde::Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => "unknown".to_owned(),
    }
}

/// An outbox command: one on a row, a peer's pull, or a sweep.
pub enum OutboxCall {
    Row(annals::outbox::OutboxCommand),
    Pull(annals::outbox::PullCommand),
    Sweep(annals::outbox::SweepCommand),
}

pub fn outbox_command(command: crate::OutboxCommand) -> napi::Result<OutboxCall> {
    use annals::outbox::{
        Backoff, ClaimToken, OutboxCommand as Row, PullCommand as Pull, RowAck,
        SweepCommand as Sweep,
    };
    Ok(match command {
        crate::OutboxCommand::Enqueue {
            key,
            peer,
            kind,
            payload,
            now_ms,
        } => OutboxCall::Row(Row::Enqueue {
            key,
            peer,
            kind,
            payload: payload.to_vec(),
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Claim {
            peer,
            token,
            limit,
            lease_ms,
            now_ms,
        } => OutboxCall::Pull(Pull::Claim {
            peer,
            token: ClaimToken(token),
            limit: u32_of(limit, "limit")?,
            lease_ms: optional_ms(lease_ms, "leaseMs")?.unwrap_or(annals::outbox::CLAIM_LEASE_MS),
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Ack { peer, acks, now_ms } => OutboxCall::Pull(Pull::Ack {
            peer,
            acks: acks
                .into_iter()
                .map(|ack| RowAck {
                    key: ack.key,
                    token: ClaimToken(ack.token),
                })
                .collect(),
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Deliver { key, now_ms } => OutboxCall::Row(Row::Deliver {
            key,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Park { key, now_ms } => OutboxCall::Row(Row::Park {
            key,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Retry {
            key,
            backoff,
            last_error,
            now_ms,
        } => OutboxCall::Row(Row::Retry {
            key,
            backoff: match backoff {
                None => Backoff::DEFAULT,
                Some(backoff) => Backoff {
                    base_ms: u64_of_ms(backoff.base_ms, "backoff.baseMs")?,
                    max_ms: u64_of_ms(backoff.max_ms, "backoff.maxMs")?,
                },
            },
            last_error,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::MarkWaiting {
            key,
            attempts,
            now_ms,
        } => OutboxCall::Row(Row::MarkWaiting {
            key,
            attempts: u32_of(attempts, "attempts")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::MarkRetry {
            key,
            attempts,
            next_at_ms,
            first_failed_at_ms,
            now_ms,
        } => OutboxCall::Row(Row::MarkRetry {
            key,
            attempts: u32_of(attempts, "attempts")?,
            next_at_ms: u64_of_ms(next_at_ms, "nextAtMs")?,
            first_failed_at_ms: u64_of_ms(first_failed_at_ms, "firstFailedAtMs")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::GiveUp { key, now_ms } => OutboxCall::Row(Row::GiveUp {
            key,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        }),
        crate::OutboxCommand::Expire {
            now_ms,
            max_age_ms,
            claim_retry_ms,
        } => OutboxCall::Sweep(Sweep::Expire {
            now_ms: u64_of_ms(now_ms, "nowMs")?,
            max_age_ms: optional_ms(max_age_ms, "maxAgeMs")?.unwrap_or(annals::outbox::MAX_AGE_MS),
            claim_retry_ms: optional_ms(claim_retry_ms, "claimRetryMs")?
                .unwrap_or(annals::outbox::CLAIM_RETRY_MS),
        }),
        crate::OutboxCommand::PruneOutbox {
            now_ms,
            older_than_ms,
        } => OutboxCall::Sweep(Sweep::Prune {
            now_ms: u64_of_ms(now_ms, "nowMs")?,
            older_than_ms: optional_ms(older_than_ms, "olderThanMs")?
                .unwrap_or(annals::outbox::PRUNE_AFTER_MS),
        }),
    })
}

/// Milliseconds or a count that may be absent.
pub fn optional_ms(value: Option<f64>, field: &str) -> napi::Result<Option<u64>> {
    value.map(|value| u64_of_ms(value, field)).transpose()
}

pub fn sweep(outcome: SweepOutcome) -> OutboxOutcome {
    match outcome {
        SweepOutcome::Expired { rows, more } => OutboxOutcome::Expired {
            rows: rows
                .iter()
                .map(|row| ExpiredRow {
                    key: row.key.clone(),
                    reason: name_of(&row.reason),
                })
                .collect(),
            more,
        },
        SweepOutcome::Pruned { keys, more } => OutboxOutcome::Pruned { keys, more },
    }
}

/// The key of the row a row command is on.
pub fn row_key(command: &annals::outbox::OutboxCommand) -> String {
    use annals::outbox::OutboxCommand as Row;
    match command {
        Row::Enqueue { key, .. }
        | Row::Deliver { key, .. }
        | Row::Park { key, .. }
        | Row::Retry { key, .. }
        | Row::MarkWaiting { key, .. }
        | Row::MarkRetry { key, .. }
        | Row::GiveUp { key, .. } => key.clone(),
    }
}

/// The outcome of a command on the row of `key`.
pub fn outbox_outcome(outcome: CoreOutboxOutcome, key: String) -> OutboxOutcome {
    match outcome {
        CoreOutboxOutcome::Enqueued { row } => OutboxOutcome::Enqueued {
            row: outbox_row_js(&row),
        },
        CoreOutboxOutcome::AlreadyEnqueued { row } => OutboxOutcome::Duplicate {
            row: outbox_row_js(&row),
        },
        CoreOutboxOutcome::Updated { row } => OutboxOutcome::Updated {
            row: outbox_row_js(&row),
        },
        CoreOutboxOutcome::Refused { reason, .. } => OutboxOutcome::Refused {
            reason: name_of(&reason),
            key,
        },
    }
}

pub fn pull(outcome: PullOutcome) -> OutboxOutcome {
    match outcome {
        PullOutcome::Claimed {
            token,
            expires_at_ms,
            rows,
        } => OutboxOutcome::Claimed {
            token: token.0,
            expires_at_ms: expires_at_ms as f64,
            rows: rows.iter().map(outbox_row_js).collect(),
        },
        PullOutcome::Acked { acked, refused } => OutboxOutcome::Acked {
            acked,
            refused: refused
                .iter()
                .map(|refusal| AckRefusal {
                    key: refusal.key.clone(),
                    reason: name_of(&refusal.reason),
                })
                .collect(),
        },
        PullOutcome::Refused { reason, key } => OutboxOutcome::Refused {
            reason: name_of(&reason),
            key,
        },
    }
}

/// A value of one of annals' serde enums (`'llm_call'`, `'succeeded'`, …), named by `field`.
pub fn named<T: serde::de::DeserializeOwned>(text: String, field: &str) -> napi::Result<T> {
    serde_json::from_value(serde_json::Value::String(text))
        .map_err(|error| invalid(field, &error.to_string()))
}

pub fn instance_command(
    command: InstanceCommand,
) -> napi::Result<annals::registry::InstanceCommand> {
    use annals::registry::InstanceCommand as Core;
    Ok(match command {
        InstanceCommand::Upsert {
            handle,
            fields,
            now_ms,
        } => Core::Upsert {
            handle,
            fields: annals::registry::InstanceFields {
                domain: fields.domain,
                identity: fields.identity,
                store: fields.store,
                tree: fields.tree,
                source: fields.source,
                knows: fields.knows.map(annals::registry::Knows::from_handles),
                status: fields
                    .status
                    .map(|status| named(status, "fields.status"))
                    .transpose()?,
                kind: fields
                    .kind
                    .map(|kind| named(kind, "fields.kind"))
                    .transpose()?,
                owner: fields.owner,
                topics: fields.topics,
            },
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        InstanceCommand::SetStatus {
            handle,
            status,
            now_ms,
        } => Core::SetStatus {
            handle,
            status: named(status, "status")?,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        InstanceCommand::SetKnows {
            handle,
            knows,
            now_ms,
        } => Core::SetKnows {
            handle,
            knows: annals::registry::Knows::from_handles(knows),
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        InstanceCommand::SetTopics {
            handle,
            topics,
            now_ms,
        } => Core::SetTopics {
            handle,
            topics,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
        InstanceCommand::Remove { handle, now_ms } => Core::Remove {
            handle,
            now_ms: u64_of_ms(now_ms, "nowMs")?,
        },
    })
}

pub fn instance_outcome(outcome: annals::registry::InstanceOutcome) -> InstanceOutcome {
    use annals::registry::InstanceOutcome as Core;
    match outcome {
        Core::Added { instance } => InstanceOutcome::Added {
            instance: instance_js(&instance),
        },
        Core::Updated { instance } => InstanceOutcome::Updated {
            instance: instance_js(&instance),
        },
        Core::Unchanged { instance } => InstanceOutcome::Unchanged {
            instance: instance_js(&instance),
        },
        Core::Removed { instance } => InstanceOutcome::Removed {
            instance: instance_js(&instance),
        },
        Core::Missing => InstanceOutcome::Missing {},
    }
}
