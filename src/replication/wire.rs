//! A record on the wire: its stored bytes (`hash ‖ header ‖ payload`, exactly as the log and
//! export files hold them) as one message, at stream sequence `position + 1`.
//!
//! This module owns the two directions and the checks on the way in: [`stored_bytes`] re-encodes
//! a record read from the log and insists it hashes as it did; [`checked_record`] decodes a
//! message at the position its sequence gives, checking the header's own hash and the payload's.
//! The chain link (`prev`) needs the record before, so the follower checks it.

use crate::hash::Digest;
use crate::record::{NewEvent, Placement, Position, Record, decode_stored, encode_stored_hashed};

use super::ReplicationError;

/// The stream sequence of the message that holds the record at `position`.
pub fn sequence_of(position: Position) -> u64 {
    position.0 + 1
}

/// The position of the record a message of stream sequence `sequence` (from 1) holds.
pub fn position_of(sequence: u64) -> Option<Position> {
    sequence.checked_sub(1).map(Position)
}

/// The `Nats-Msg-Id` of a record: its hash in hex, so a repeated publish of the same record is
/// deduplicated by the server and a different record at the same place is not.
pub fn message_id(hash: &Digest) -> String {
    hash.to_hex()
}

/// The stored bytes of `record`, re-encoded from its fields. A record that does not hash as it
/// says (which a record read from a sound log never does) is refused as damaged.
pub fn stored_bytes(record: Record) -> Result<Vec<u8>, ReplicationError> {
    let damaged = |detail: String| ReplicationError::Damaged {
        position: record.position,
        detail,
    };
    let placement = Placement {
        stream: &record.stream,
        position: record.position,
        version: record.version,
        prev: record.prev,
    };
    let event = NewEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        at_ms: record.at_ms,
        idempotency_key: record.idempotency_key.clone(),
        payload: record.payload.clone(),
    };
    let mut out = Vec::new();
    let hash = encode_stored_hashed(&mut out, &event, placement, record.payload_hash)
        .map_err(|error| damaged(error.to_string()))?;
    if hash != record.hash {
        return Err(damaged(format!(
            "re-encoded, it hashes to {hash} not {}",
            record.hash
        )));
    }
    Ok(out)
}

/// The record in a message of stream sequence `sequence`: decoded at its position with its
/// record and payload hashes checked, and `message_id` (when the message has one) its hash.
pub fn checked_record(
    payload: &[u8],
    sequence: u64,
    message_id: Option<&str>,
) -> Result<Record, ReplicationError> {
    let Some(position) = position_of(sequence) else {
        return Err(ReplicationError::Damaged {
            position: Position(0),
            detail: "a message at stream sequence 0".into(),
        });
    };
    let record = decode_stored(payload, position).map_err(|error| ReplicationError::Damaged {
        position,
        detail: error.to_string(),
    })?;
    if let Some(id) = message_id
        && id != self::message_id(&record.hash)
    {
        return Err(ReplicationError::Damaged {
            position,
            detail: format!(
                "message id {id:?}, but the record hashes to {}",
                record.hash
            ),
        });
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ExpectedVersion, NewEvent, Store};

    #[test]
    fn a_record_goes_through_the_wire_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("log.redb")).unwrap();
        let event = NewEvent::new("k", 7, b"payload".to_vec()).with_idempotency_key("key");
        let _ = store.append("s", ExpectedVersion::Any, &[event]).unwrap();
        let record = store.get(Position(0)).unwrap().unwrap();
        let bytes = stored_bytes(record.clone()).unwrap();
        let id = message_id(&record.hash);
        assert_eq!(checked_record(&bytes, 1, Some(&id)).unwrap(), record);
    }

    #[test]
    fn a_message_at_the_wrong_sequence_or_with_a_flipped_byte_is_damaged() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("log.redb")).unwrap();
        let event = NewEvent::new("k", 7, b"payload".to_vec());
        let _ = store.append("s", ExpectedVersion::Any, &[event]).unwrap();
        let record = store.get(Position(0)).unwrap().unwrap();
        let mut bytes = stored_bytes(record).unwrap();
        let refused = checked_record(&bytes, 2, None).unwrap_err();
        assert!(matches!(
            refused,
            ReplicationError::Damaged {
                position: Position(1),
                ..
            }
        ));
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        let refused = checked_record(&bytes, 1, None).unwrap_err();
        assert!(matches!(
            refused,
            ReplicationError::Damaged {
                position: Position(0),
                ..
            }
        ));
    }
}
