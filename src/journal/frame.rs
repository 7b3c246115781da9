//! The journal's frames (`schema/FORMAT.md` 3.15), one per committed transaction, after the
//! header (`super::header`). A frame is `marker ‖ body length (u32 LE) ‖ body ‖ check` (a
//! version 1 journal's frames have no marker), its body
//! `first position (u64 LE) ‖ record count (u32 LE) ‖ (record length (u32 LE) ‖ v1 stored
//! record)*`, its check the blake3 derive-key hash ([`FRAME_CONTEXT`]) of the length and the
//! body. Records are the log's own stored bytes, so each also carries its own hashes and the
//! hash of the record before it.

use std::sync::LazyLock;

use crate::hash::Digest;
use crate::record::limits::{HEADER_BYTES_CAP, PAYLOAD_BYTES_CAP};
use crate::record::{Position, Record, RecordError, decode_stored};

/// The blake3 derive-key context of a frame's check.
pub const FRAME_CONTEXT: &str = "annals 2026-12-03 journal frame v1";

/// The most bytes a stored record takes (its hash, header and payload at their caps).
const STORED_RECORD_BYTES_CAP: u64 = 32 + HEADER_BYTES_CAP as u64 + PAYLOAD_BYTES_CAP as u64;

/// The largest body a frame may have: a transaction larger than this is committed to the log
/// file directly instead of through the journal.
pub const FRAME_BODY_BYTES_MAX: u64 = 64 << 20;

/// Bytes a frame adds around its body besides its marker: the length before it, the check
/// after it.
pub(crate) const FRAME_OVERHEAD: u64 = 4 + 32;

// Made once and cloned per frame (derive-key mode hashes its context first).
static FRAME_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(FRAME_CONTEXT));

/// The check of a frame whose length field and body are `covered`.
pub(crate) fn frame_check(covered: &[u8]) -> Digest {
    let mut hasher = FRAME_HASHER.clone();
    hasher.update(covered);
    Digest(*hasher.finalize().as_bytes())
}

/// Encodes one transaction's records, which must be contiguous and non-empty, as a frame
/// beginning with `marker` (the journal's; empty in version 1): `None` when its body would
/// exceed [`FRAME_BODY_BYTES_MAX`].
pub(crate) fn encode_frame(marker: &[u8], records: &[Record]) -> Option<Vec<u8>> {
    let first = records.first()?;
    let mut frame = marker.to_vec();
    let at = frame.len();
    frame.extend_from_slice(&[0; 4]);
    frame.extend_from_slice(&first.position.0.to_le_bytes());
    frame.extend_from_slice(&u32::try_from(records.len()).ok()?.to_le_bytes());
    let mut stored = Vec::new();
    for (offset, record) in (0u64..).zip(records) {
        debug_assert_eq!(record.position.0, first.position.0 + offset);
        stored.clear();
        record.encode_v1_stored(&mut stored);
        frame.extend_from_slice(&u32::try_from(stored.len()).ok()?.to_le_bytes());
        frame.extend_from_slice(&stored);
        if (frame.len() - at - 4) as u64 > FRAME_BODY_BYTES_MAX {
            return None;
        }
    }
    let body_len = u32::try_from(frame.len() - at - 4).ok()?;
    frame[at..at + 4].copy_from_slice(&body_len.to_le_bytes());
    let check = frame_check(&frame[at..]);
    frame.extend_from_slice(check.as_bytes());
    // What a reader's `frame_len` will take from the length field: the frame, exactly.
    debug_assert_eq!(
        frame.len() as u64,
        marker.len() as u64 + u64::from(body_len) + FRAME_OVERHEAD,
        "a frame is its marker, its body and the bytes around it"
    );
    Some(frame)
}

/// One whole frame read back: its transaction's records, each checked (its hashes, its
/// position, the chain within the frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    /// Where the frame begins in the file.
    pub offset: u64,
    /// Its length in the file, marker, length field and check included.
    pub len: u64,
    /// Its records, in order.
    pub records: Vec<Record>,
}

impl Frame {
    /// The frame's first position.
    pub(crate) fn first(&self) -> Position {
        self.records[0].position
    }

    /// One past its last position.
    pub(crate) fn end(&self) -> Position {
        Position(self.first().0 + self.records.len() as u64)
    }
}

/// Why the bytes at some offset are not a whole frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FrameProblem {
    /// The bytes there do not begin with the journal's marker: no frame begins there (zeros
    /// where the journal's room begins, or damage).
    Marker,
    /// The file ends inside the frame, or before its length field.
    Short {
        /// The bytes there.
        available: u64,
        /// The bytes the frame needs (at least its length field).
        needed: u64,
    },
    /// A length field out of range.
    Length {
        /// What it says.
        body: u64,
    },
    /// The check does not match the length and the body.
    Check,
    /// The body checks but does not decode as records.
    Body(String),
}

impl std::fmt::Display for FrameProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameProblem::Marker => f.write_str("no frame begins there: not the journal's marker"),
            FrameProblem::Short { available, needed } => {
                write!(f, "{available} bytes where the frame needs {needed}")
            }
            FrameProblem::Length { body } => write!(
                f,
                "a body of {body} bytes, outside 12..={FRAME_BODY_BYTES_MAX}"
            ),
            FrameProblem::Check => f.write_str("its check does not match its bytes"),
            FrameProblem::Body(problem) => write!(f, "its body does not decode: {problem}"),
        }
    }
}

/// How long the frame at the start of `bytes` is, from its length field, when that field is
/// whole and in range.
pub(crate) fn frame_len(bytes: &[u8]) -> Result<u64, FrameProblem> {
    let Some(field) = bytes.get(..4) else {
        return Err(FrameProblem::Short {
            available: bytes.len() as u64,
            needed: 4,
        });
    };
    let body = u64::from(u32::from_le_bytes(field.try_into().expect("four bytes")));
    if !(12..=FRAME_BODY_BYTES_MAX).contains(&body) {
        return Err(FrameProblem::Length { body });
    }
    Ok(body + FRAME_OVERHEAD)
}

/// Decodes the frame at the start of `bytes` (found at `offset` in the file), which begins
/// with `marker`.
pub(crate) fn decode_frame(
    bytes: &[u8],
    offset: u64,
    marker: &[u8],
) -> Result<Frame, FrameProblem> {
    let Some(after) = bytes.strip_prefix(marker) else {
        return Err(if bytes.len() < marker.len() {
            FrameProblem::Short {
                available: bytes.len() as u64,
                needed: marker.len() as u64,
            }
        } else {
            FrameProblem::Marker
        });
    };
    let len = frame_len(after)?;
    let Some(whole) = after.get(..len as usize) else {
        return Err(FrameProblem::Short {
            available: bytes.len() as u64,
            needed: marker.len() as u64 + len,
        });
    };
    let (covered, check) = whole.split_at(whole.len() - 32);
    if frame_check(covered).as_bytes() != check {
        return Err(FrameProblem::Check);
    }
    let records = decode_body(&covered[4..]).map_err(FrameProblem::Body)?;
    Ok(Frame {
        offset,
        len: marker.len() as u64 + len,
        records,
    })
}

fn decode_body(body: &[u8]) -> Result<Vec<Record>, String> {
    let (first, rest) = body.split_at(8);
    let first = u64::from_le_bytes(first.try_into().expect("eight bytes"));
    let (count, mut rest) = rest.split_at(4);
    let count = u32::from_le_bytes(count.try_into().expect("four bytes"));
    if count == 0 {
        return Err("it holds no record".to_owned());
    }
    let mut records: Vec<Record> = Vec::new();
    for index in 0..u64::from(count) {
        let position = Position(first.checked_add(index).ok_or("its positions pass 2^64")?);
        let Some((len, after)) = rest.split_at_checked(4) else {
            return Err(format!("it ends before record {position}'s length"));
        };
        let len = u64::from(u32::from_le_bytes(len.try_into().expect("four bytes")));
        if !(32..=STORED_RECORD_BYTES_CAP).contains(&len) {
            return Err(format!(
                "record {position} is {len} bytes, outside 32..={STORED_RECORD_BYTES_CAP}"
            ));
        }
        let Some((stored, after)) = after.split_at_checked(len as usize) else {
            return Err(format!("it ends inside record {position}"));
        };
        let record = decode_stored(stored, position)
            .map_err(|error: RecordError| format!("record {position}: {error}"))?;
        if let Some(before) = records.last()
            && record.prev != before.hash
        {
            return Err(format!(
                "record {position} does not chain to the record before it"
            ));
        }
        records.push(record);
        rest = after;
    }
    if !rest.is_empty() {
        return Err(format!("{} bytes follow its last record", rest.len()));
    }
    Ok(records)
}
