//! The compact stored record of format v2 (`schema/FORMAT.md` 3.8): the record hash, then only
//! the header fields its segment does not already determine, then the payload.
//!
//! ```text
//! record  := hash [32] ‖ flags u8 ‖ [stream ‖ uleb128(version)] ‖ [kind] ‖ uleb128(schema)
//!            ‖ uleb128(at_ms) ‖ [idempotency_key] ‖ payload
//! string  := uleb128(byte length) ‖ UTF-8 bytes
//! ```
//!
//! Left out: the position (the segment's key plus the record's index), the payload length (the
//! segment's length table), the payload hash (recomputed from the payload) and `prev` (the
//! stored hash of the record before in the segment, or the segment's own `prev` for its
//! first). A flag leaves out the stream and version when they are the segment's first
//! record's stream and its version plus the index (a run of one stream), and the kind when it
//! is the first record's. A reader rebuilds the v1 header from these and checks that it hashes
//! to the stored hash, so a record is exactly as sound as in format v1.

use super::limits::{Field, IDEMPOTENCY_KEY_BYTES_CAP, KIND_BYTES_CAP, STREAM_BYTES_CAP};
use super::uleb128;
use super::{HeaderProblem, NewEvent, RecordError};
use crate::hash::Digest;

/// Flag: the stream is the segment's first record's, and the version is that record's plus
/// this record's index in the segment; both are left out.
pub const SAME_STREAM: u8 = 0x01;
/// Flag: the kind is the segment's first record's, and is left out.
pub const SAME_KIND: u8 = 0x02;
/// Flag: an idempotency key follows `at_ms`.
pub const KEYED: u8 = 0x04;
/// Every flag this format defines; a record with another bit set is refused.
pub const FLAGS: u8 = SAME_STREAM | SAME_KIND | KEYED;

/// A compact header as stored: the fields it spells out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compact<'a> {
    /// Its flags.
    pub flags: u8,
    /// The stream and version, unless [`SAME_STREAM`] leaves them out.
    pub stream: Option<(&'a str, u64)>,
    /// The kind, unless [`SAME_KIND`] leaves it out.
    pub kind: Option<&'a str>,
    /// The payload's schema version.
    pub schema: u16,
    /// The command's clock.
    pub at_ms: u64,
    /// The idempotency key, present with [`KEYED`].
    pub idempotency_key: Option<&'a str>,
    /// The header's length in bytes (after the record hash).
    pub len: usize,
}

/// Where the parts of a record written whole by [`encode_whole`] end, from the record's start:
/// a segment writer re-encodes it relative to its segment's first record from these.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WholeParts {
    /// The end of the stream part (its length, bytes and the version).
    pub stream_end: usize,
    /// The end of the kind part.
    pub kind_end: usize,
    /// The stream's version.
    pub version: u64,
}

/// Offset of the stream part in a whole record: after the hash and the flags.
pub const STREAM_AT: usize = 33;

/// Appends the record of `event` at `version` of `stream`, hashed `hash`, with every field
/// spelled out (no [`SAME_STREAM`] or [`SAME_KIND`]), and says where its parts end.
pub fn encode_whole(
    out: &mut Vec<u8>,
    hash: Digest,
    stream: &str,
    version: u64,
    event: &NewEvent,
) -> WholeParts {
    let start = out.len();
    out.extend_from_slice(hash.as_bytes());
    out.push(if event.idempotency_key.is_some() {
        KEYED
    } else {
        0
    });
    put_text(out, stream);
    uleb128::put(out, version);
    let stream_end = out.len() - start;
    put_text(out, &event.kind);
    let kind_end = out.len() - start;
    uleb128::put(out, u64::from(event.schema));
    uleb128::put(out, event.at_ms);
    if let Some(key) = &event.idempotency_key {
        put_text(out, key);
    }
    out.extend_from_slice(&event.payload);
    WholeParts {
        stream_end,
        kind_end,
        version,
    }
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    uleb128::put(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// Parses the compact header at the start of `bytes` (a record after its hash), checking every
/// length against its format cap before it is used.
pub fn parse(bytes: &[u8]) -> Result<Compact<'_>, RecordError> {
    let mut rest = bytes;
    let flags = match rest.split_first() {
        Some((&flags, after)) => {
            rest = after;
            flags
        }
        None => {
            return Err(RecordError::Header {
                field: "flags",
                problem: HeaderProblem::Short {
                    need: 1,
                    offset: 0,
                    remain: 0,
                },
            });
        }
    };
    if flags & !FLAGS != 0 {
        return Err(RecordError::Header {
            field: "flags",
            problem: HeaderProblem::Flags { found: flags },
        });
    }
    let stream = if flags & SAME_STREAM == 0 {
        let stream = text(&mut rest, Field::Stream, STREAM_BYTES_CAP, bytes)?;
        Some((stream, number(&mut rest, "version")?))
    } else {
        None
    };
    let kind = if flags & SAME_KIND == 0 {
        Some(text(&mut rest, Field::Kind, KIND_BYTES_CAP, bytes)?)
    } else {
        None
    };
    let schema = number(&mut rest, "schema")?;
    let schema = u16::try_from(schema).map_err(|_| RecordError::Header {
        field: "schema",
        problem: HeaderProblem::TooWide {
            value: schema,
            bits: 16,
        },
    })?;
    let at_ms = number(&mut rest, "at_ms")?;
    let idempotency_key = if flags & KEYED != 0 {
        Some(text(
            &mut rest,
            Field::IdempotencyKey,
            IDEMPOTENCY_KEY_BYTES_CAP,
            bytes,
        )?)
    } else {
        None
    };
    Ok(Compact {
        flags,
        stream,
        kind,
        schema,
        at_ms,
        idempotency_key,
        len: bytes.len() - rest.len(),
    })
}

fn number(bytes: &mut &[u8], what: &'static str) -> Result<u64, RecordError> {
    uleb128::take(bytes).ok_or(RecordError::Header {
        field: what,
        problem: HeaderProblem::NotLeb128,
    })
}

/// A length-prefixed UTF-8 string of 1 to `cap` bytes.
fn text<'a>(
    bytes: &mut &'a [u8],
    field: Field,
    cap: u32,
    whole: &[u8],
) -> Result<&'a str, RecordError> {
    let len = number(bytes, "a string length")?;
    super::view::check_text_len(field, len, cap)?;
    let Some((taken, rest)) = bytes.split_at_checked(len as usize) else {
        return Err(RecordError::Header {
            field: field.name(),
            problem: HeaderProblem::Short {
                need: len,
                offset: (whole.len() - bytes.len()) as u64,
                remain: bytes.len() as u64,
            },
        });
    };
    *bytes = rest;
    super::view::text_utf8(field, taken)
}
