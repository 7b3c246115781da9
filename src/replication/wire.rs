//! A message on the wire: one or more consecutive records, each as its canonical stored bytes,
//! framed with their lengths.
//!
//! A message's payload (the frame) is, every integer little-endian:
//!
//! ```text
//! frame_version: u8 (= FRAME_VERSION)
//! first_position: u64       the position of the message's first record
//! records: u32              how many records follow (at least one)
//! records × { stored_len: u32, stored: [u8; stored_len] }
//! ```
//!
//! `stored` is the record's **canonical stored form**: `hash ‖ header ‖ payload` of record
//! format version 1 (`schema/FORMAT.md` 1.3), the form an export file holds (3.7). The wire
//! carries that form whatever format version the sending or the receiving file keeps its
//! records in: [`stored_bytes`] re-encodes each record from its fields rather than copying the
//! file's bytes, and insists the result hashes as the record does. So two hosts whose files
//! differ in layout still exchange, check and hash the same bytes.
//!
//! One message is one unit of the log: a shared host's message is exactly the records of one
//! command's transaction (published atomically, all or none), a publisher's message a run of
//! consecutive committed records. Every reader appends a message's records in one local
//! transaction. The stream sequence of a message is therefore not derived from positions; what
//! ties them is that each message starts where the one before it ends (its `first_position`
//! is the previous message's first position plus its record count), which every publish
//! enforces by naming the sequence it must follow (the expected last sequence).
//!
//! This module owns the two directions and the checks on the way in: [`Frame`] builds a
//! message within [`MESSAGE_BYTES_MAX`]; [`checked_records`] decodes one, each record at its
//! position with the header's own hash and the payload's checked, the records chained to each
//! other, and the message id the last record's hash; [`checked_message`] is what a reader
//! takes: a message over the wire limit or without its id refused before it is decoded, and
//! one holding a record over the reader's [`Limits`] refused after. The first record's link
//! (`prev`) needs the record before the message, so the reader checks it against its own head.

use crate::hash::Digest;
use crate::record::limits::{Field, LimitError, Limits, check_len};
use crate::record::{
    NewEvent, Placement, Position, Record, check_stream, decode_stored, encode_stored_hashed,
};

use super::{Damage, RefusedMessage, ReplicationError};

/// The version of the frame, its first byte.
pub const FRAME_VERSION: u8 = 1;
/// Bytes of a frame before its first record: version, first position, record count.
pub const FRAME_HEADER_BYTES: usize = 1 + 8 + 4;
/// Bytes of a record's length prefix in a frame.
const RECORD_LEN_BYTES: usize = 4;
/// Largest message a frame may fill: the NATS server's default `max_payload` (1 MiB). A
/// record whose frame alone exceeds it cannot be replicated.
pub const MESSAGE_BYTES_MAX: usize = 1024 * 1024;

const _: () = assert!(FRAME_HEADER_BYTES + RECORD_LEN_BYTES < MESSAGE_BYTES_MAX);

/// The `Nats-Msg-Id` of a message whose last record hashes to `hash`: that hash in hex. The
/// hash covers the record's position and, through `prev`, every record before it, so a
/// repeated publish of the same message is deduplicated by the server and a different message
/// ending at the same place is not.
pub fn message_id(hash: &Digest) -> String {
    hash.to_hex()
}

/// The canonical stored bytes of `record` (see the module docs), re-encoded from its fields. A
/// record that does not hash as it says (which a record read from a sound log never does) is
/// refused as damaged.
pub fn stored_bytes(record: &Record) -> Result<Vec<u8>, ReplicationError> {
    let damaged = |problem: Damage| ReplicationError::Damaged {
        position: record.position,
        message: None,
        problem,
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
        .map_err(|error| damaged(Damage::Encode(error)))?;
    if hash != record.hash {
        return Err(damaged(Damage::Rehash {
            hash,
            recorded: record.hash,
        }));
    }
    Ok(out)
}

/// A message being built: consecutive records from its first position on, each added with
/// [`Frame::push`] while it fits in [`MESSAGE_BYTES_MAX`].
#[derive(Clone, Debug)]
pub struct Frame {
    bytes: Vec<u8>,
    first: Position,
    records: u32,
    last: Digest,
}

impl Frame {
    /// A frame holding the record at `position` (its stored bytes and hash). Refuses a record
    /// too large for a message on its own.
    pub fn new(position: Position, stored: &[u8], hash: Digest) -> Result<Self, ReplicationError> {
        let mut frame = Frame {
            bytes: Vec::with_capacity(FRAME_HEADER_BYTES + RECORD_LEN_BYTES + stored.len()),
            first: position,
            records: 0,
            last: hash,
        };
        frame.bytes.push(FRAME_VERSION);
        frame.bytes.extend_from_slice(&position.0.to_le_bytes());
        frame.bytes.extend_from_slice(&0u32.to_le_bytes());
        if !frame.push(stored, hash) {
            return Err(ReplicationError::TooLarge {
                position,
                records: 1,
                bytes: (FRAME_HEADER_BYTES + RECORD_LEN_BYTES + stored.len()) as u64,
                limit: MESSAGE_BYTES_MAX as u64,
            });
        }
        Ok(frame)
    }

    /// Adds the next record (at [`Frame::end`]) if the message stays within
    /// [`MESSAGE_BYTES_MAX`]; says whether it did.
    pub fn push(&mut self, stored: &[u8], hash: Digest) -> bool {
        let grown = self.bytes.len() + RECORD_LEN_BYTES + stored.len();
        let Ok(len) = u32::try_from(stored.len()) else {
            return false;
        };
        if grown > MESSAGE_BYTES_MAX || self.records == u32::MAX {
            return false;
        }
        self.bytes.extend_from_slice(&len.to_le_bytes());
        self.bytes.extend_from_slice(stored);
        self.records += 1;
        self.bytes[9..FRAME_HEADER_BYTES].copy_from_slice(&self.records.to_le_bytes());
        self.last = hash;
        true
    }

    /// The position of its first record.
    pub fn first(&self) -> Position {
        self.first
    }

    /// The position after its last record.
    pub fn end(&self) -> Position {
        Position(self.first.0 + u64::from(self.records))
    }

    /// How many records it holds.
    pub fn records(&self) -> u32 {
        self.records
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether it holds no record (never: a frame starts with one).
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Its `Nats-Msg-Id`: the last record's hash.
    pub fn message_id(&self) -> String {
        message_id(&self.last)
    }

    /// The message payload.
    pub fn into_bytes(self) -> Vec<u8> {
        debug_assert!(self.records > 0 && self.bytes.len() <= MESSAGE_BYTES_MAX);
        self.bytes
    }
}

/// Where a message's records lie: its first position and how many records it holds, read
/// from the frame's header alone (nothing checked beyond it; [`checked_records`] checks all).
pub fn frame_span(payload: &[u8]) -> Result<(Position, u32), ReplicationError> {
    let damaged = |position: Position, problem: Damage| ReplicationError::Damaged {
        position,
        message: None,
        problem,
    };
    if payload.len() < FRAME_HEADER_BYTES {
        return Err(damaged(
            Position(0),
            Damage::FrameShort {
                bytes: payload.len() as u64,
                header_bytes: FRAME_HEADER_BYTES as u64,
            },
        ));
    }
    if payload[0] != FRAME_VERSION {
        return Err(damaged(
            Position(0),
            Damage::FrameVersion {
                found: payload[0],
                supported: FRAME_VERSION,
            },
        ));
    }
    let first = u64::from_le_bytes(payload[1..9].try_into().expect("8 bytes"));
    let records = u32::from_le_bytes(payload[9..13].try_into().expect("4 bytes"));
    if records == 0 {
        return Err(damaged(Position(first), Damage::NoRecords));
    }
    if first.checked_add(u64::from(records)).is_none() {
        return Err(damaged(
            Position(first),
            Damage::PositionOverflow {
                first: Position(first),
                records,
            },
        ));
    }
    Ok((Position(first), records))
}

/// The records of a message: each decoded at its position with its record and payload hashes
/// checked, each chained to the one before it, and `message_id` (when the message has one)
/// the last one's hash. Every byte of the payload must belong to a record.
pub fn checked_records(
    payload: &[u8],
    message_id: Option<&str>,
) -> Result<Vec<Record>, ReplicationError> {
    let (first, count) = frame_span(payload)?;
    let mut rest = &payload[FRAME_HEADER_BYTES..];
    // Not preallocated from `count`: the payload's length bounds what is decoded.
    let mut records: Vec<Record> = Vec::new();
    for index in 0..u64::from(count) {
        let position = Position(first.0 + index);
        let damaged = |problem: Damage| ReplicationError::Damaged {
            position,
            message: None,
            problem,
        };
        let Some((len, after)) = rest.split_first_chunk::<RECORD_LEN_BYTES>() else {
            return Err(damaged(Damage::EndsBeforeRecord { index, count }));
        };
        let len = u32::from_le_bytes(*len) as usize;
        if after.len() < len {
            return Err(damaged(Damage::RecordShort {
                bytes: len as u64,
                remain: after.len() as u64,
            }));
        }
        let (stored, after) = after.split_at(len);
        let record =
            decode_stored(stored, position).map_err(|error| damaged(Damage::Record(error)))?;
        if let Some(before) = records.last()
            && record.prev != before.hash
        {
            return Err(damaged(Damage::Chain {
                prev: record.prev,
                before: before.hash,
            }));
        }
        records.push(record);
        rest = after;
    }
    let last = records.last().expect("a frame holds at least one record");
    if !rest.is_empty() {
        return Err(ReplicationError::Damaged {
            position: last.position,
            message: None,
            problem: Damage::Trailing {
                bytes: rest.len() as u64,
            },
        });
    }
    if let Some(id) = message_id
        && id != self::message_id(&last.hash)
    {
        return Err(ReplicationError::Damaged {
            position: last.position,
            message: None,
            problem: Damage::MessageId {
                id: id.to_owned(),
                last: last.hash,
            },
        });
    }
    Ok(records)
}

/// The records of the stream's message of `sequence`, as a reader takes them: refused
/// ([`ReplicationError::Refused`]) before anything is decoded when it is larger than
/// [`MESSAGE_BYTES_MAX`] or carries no message id, then checked as [`checked_records`] does,
/// then refused when one of its records breaks `limits` (the local store's: a replica keeps
/// nothing its own writer would have refused). `due` is the position the reader expects the
/// message to start at: a message whose frame header cannot be read is damaged there.
pub fn checked_message(
    sequence: u64,
    payload: &[u8],
    message_id: Option<&str>,
    limits: &Limits,
    due: Position,
) -> Result<Vec<Record>, ReplicationError> {
    let refused = |problem: RefusedMessage| ReplicationError::Refused { sequence, problem };
    if payload.len() > MESSAGE_BYTES_MAX {
        return Err(refused(RefusedMessage::TooLarge {
            bytes: payload.len() as u64,
            limit: MESSAGE_BYTES_MAX as u64,
        }));
    }
    let Some(message_id) = message_id else {
        return Err(refused(RefusedMessage::NoMessageId));
    };
    if let Err(ReplicationError::Damaged { problem, .. }) = frame_span(payload) {
        return Err(ReplicationError::Damaged {
            position: due,
            message: Some(sequence),
            problem,
        });
    }
    let records =
        checked_records(payload, Some(message_id)).map_err(|error| in_message(error, sequence))?;
    for record in &records {
        within_limits(record, limits).map_err(|error| {
            refused(RefusedMessage::Limit {
                position: record.position,
                error,
            })
        })?;
    }
    Ok(records)
}

/// `error`, when it is damage, as found in the stream's message of `sequence`.
pub(crate) fn in_message(error: ReplicationError, sequence: u64) -> ReplicationError {
    match error {
        ReplicationError::Damaged {
            position, problem, ..
        } => ReplicationError::Damaged {
            position,
            message: Some(sequence),
            problem,
        },
        other => other,
    }
}

/// Checks a record's stream name, kind, idempotency key and payload against `limits`, as an
/// append checks an event's.
fn within_limits(record: &Record, limits: &Limits) -> Result<(), LimitError> {
    check_stream(&record.stream, limits)?;
    check_len(Field::Kind, record.kind.len(), limits.kind_bytes_max)?;
    if let Some(key) = &record.idempotency_key {
        check_len(
            Field::IdempotencyKey,
            key.len(),
            limits.idempotency_key_bytes_max,
        )?;
    }
    check_len(
        Field::Payload,
        record.payload.len(),
        limits.payload_bytes_max,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::setup::ExpectDone;
    use crate::{ExpectedVersion, NewEvent, Store};

    /// A log of three records in one append, and their stored bytes.
    fn three_records() -> (tempfile::TempDir, Vec<Record>, Vec<Vec<u8>>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("log.redb")).unwrap();
        let events: Vec<NewEvent> = (0..3)
            .map(|i| NewEvent::new("k", 7, vec![b'a' + i; 10]).with_idempotency_key(format!("{i}")))
            .collect();
        store
            .append("s", ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
        let records: Vec<Record> = (0..3)
            .map(|p| store.get(Position(p)).unwrap().unwrap())
            .collect();
        let stored = records.iter().map(|r| stored_bytes(r).unwrap()).collect();
        (dir, records, stored)
    }

    fn frame_of(records: &[Record], stored: &[Vec<u8>]) -> Frame {
        let mut frame = Frame::new(records[0].position, &stored[0], records[0].hash).unwrap();
        for (record, bytes) in records.iter().zip(stored).skip(1) {
            assert!(frame.push(bytes, record.hash));
        }
        frame
    }

    #[test]
    fn a_transaction_goes_through_the_wire_as_one_message_unchanged() {
        let (_dir, records, stored) = three_records();
        let frame = frame_of(&records, &stored);
        assert_eq!(
            (frame.first(), frame.end(), frame.records()),
            (Position(0), Position(3), 3)
        );
        let id = frame.message_id();
        assert_eq!(id, message_id(&records[2].hash));
        let bytes = frame.into_bytes();
        assert_eq!(frame_span(&bytes).unwrap(), (Position(0), 3));
        assert_eq!(checked_records(&bytes, Some(&id)).unwrap(), records);
    }

    #[test]
    fn a_message_with_a_flipped_byte_a_missing_record_or_a_wrong_id_is_damaged() {
        let (_dir, records, stored) = three_records();
        let bytes = frame_of(&records, &stored).into_bytes();
        let damaged_at = |payload: &[u8], id: Option<&str>| match checked_records(payload, id) {
            Err(ReplicationError::Damaged { position, .. }) => position,
            other => panic!("expected damage, got {other:?}"),
        };
        let mut flipped = bytes.clone();
        let last = flipped.len() - 1;
        flipped[last] ^= 1;
        assert_eq!(damaged_at(&flipped, None), Position(2));
        // The first position moved: every record names another position in its header.
        let mut moved = bytes.clone();
        moved[1] = 1;
        assert_eq!(damaged_at(&moved, None), Position(1));
        // A record left out breaks the chain inside the message.
        let skipping = frame_of(
            &[records[0].clone(), records[2].clone()],
            &[stored[0].clone(), stored[2].clone()],
        );
        assert_eq!(damaged_at(&skipping.into_bytes(), None), Position(1));
        let mut truncated = bytes.clone();
        truncated.truncate(bytes.len() - 5);
        assert_eq!(damaged_at(&truncated, None), Position(2));
        let other_id = message_id(&records[1].hash);
        assert_eq!(damaged_at(&bytes, Some(&other_id)), Position(2));
        let mut version = bytes;
        version[0] = 9;
        assert!(matches!(
            frame_span(&version),
            Err(ReplicationError::Damaged { .. })
        ));
    }

    #[test]
    fn a_frame_stops_growing_at_the_message_limit() {
        let (_dir, records, stored) = three_records();
        let mut frame = Frame::new(records[0].position, &stored[0], records[0].hash).unwrap();
        let huge = vec![0u8; MESSAGE_BYTES_MAX];
        assert!(!frame.push(&huge, records[1].hash));
        assert_eq!(frame.records(), 1);
        assert!(matches!(
            Frame::new(Position(5), &huge, records[1].hash),
            Err(ReplicationError::TooLarge {
                position: Position(5),
                ..
            })
        ));
    }
}
