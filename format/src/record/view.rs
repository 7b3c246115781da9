//! Reading a stored record in place: the header parsed field by field from the bytes it was
//! stored as, strings and payload borrowed, nothing allocated.
//!
//! The writer encodes headers through bincode (its output is what format v1 specifies, and
//! the golden vectors pin it); reading parses the same fixed layout by hand, because a scan
//! decodes millions of headers and bincode's owned strings cost an allocation each. Every
//! length is checked against its format cap before it is used, so no input makes this read
//! past its bytes or allocate.

use super::compact::{self, SAME_KIND, SAME_STREAM};
use super::limits::{
    Field, IDEMPOTENCY_KEY_BYTES_CAP, KIND_BYTES_CAP, PAYLOAD_BYTES_CAP, STREAM_BYTES_CAP,
};
use super::segment::RecordAt;
use super::{
    Format, HeaderFields, HeaderProblem, Position, RECORD_FORMAT, Record, RecordError,
    StreamVersion,
};
use crate::hash::{self, Digest};

/// One stored record, checked as the caller asked, borrowing its strings and payload from
/// the stored bytes.
///
/// Its payload hash is [`RecordView::payload_hash`]: a format v1 record stores it, a format v2
/// record does not, and a scan that never asks for it does not pay for hashing each payload.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// Its place in the log.
    pub position: Position,
    /// Its stream.
    pub stream: &'a str,
    /// Its place in the stream.
    pub version: StreamVersion,
    /// The event type.
    pub kind: &'a str,
    /// The payload's schema version.
    pub schema: u16,
    /// The command's clock, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The idempotency key it was appended with, if any.
    pub idempotency_key: Option<&'a str>,
    /// The payload bytes.
    pub payload: &'a [u8],
    /// The hash of the record before it (zero at position 0).
    pub prev: Digest,
    /// This record's hash.
    pub hash: Digest,
    /// blake3 of the payload when it is already known: stored in a v1 record, or computed to
    /// check a v2 record's hash. `None` until asked for otherwise.
    known_payload_hash: Option<Digest>,
}

/// Two views are equal when their fields are: the payload hash follows from the payload, so
/// whether it was stored or is still to compute does not make views differ.
impl PartialEq for RecordView<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.position == other.position
            && self.stream == other.stream
            && self.version == other.version
            && self.kind == other.kind
            && self.schema == other.schema
            && self.at_ms == other.at_ms
            && self.idempotency_key == other.idempotency_key
            && self.payload == other.payload
            && self.prev == other.prev
            && self.hash == other.hash
    }
}

impl Eq for RecordView<'_> {}

impl RecordView<'_> {
    /// blake3 of the payload: the stored one in a format v1 record (checked, or covered by
    /// the segment's digest), computed from the payload for a format v2 record, which does
    /// not store it.
    pub fn payload_hash(&self) -> Digest {
        self.known_payload_hash
            .unwrap_or_else(|| hash::payload_hash(self.payload))
    }

    /// An owned copy.
    pub fn to_record(&self) -> Record {
        Record {
            position: self.position,
            stream: self.stream.to_owned(),
            version: self.version,
            kind: self.kind.to_owned(),
            schema: self.schema,
            at_ms: self.at_ms,
            idempotency_key: self.idempotency_key.map(str::to_owned),
            payload: self.payload.to_vec(),
            payload_hash: self.payload_hash(),
            prev: self.prev,
            hash: self.hash,
        }
    }
}

impl Record {
    /// A view of this record's fields, its payload hash known.
    pub fn view(&self) -> RecordView<'_> {
        RecordView {
            position: self.position,
            stream: &self.stream,
            version: self.version,
            kind: &self.kind,
            schema: self.schema,
            at_ms: self.at_ms,
            idempotency_key: self.idempotency_key.as_deref(),
            payload: &self.payload,
            prev: self.prev,
            hash: self.hash,
            known_payload_hash: Some(self.payload_hash),
        }
    }

    /// Appends the record's v1 stored form (`hash ‖ header ‖ payload`, `schema/FORMAT.md`
    /// 1.3) to `out`: what export files, the replication wire and the commit journal carry.
    pub fn encode_v1_stored(&self, out: &mut Vec<u8>) {
        self.view().encode_v1_stored(out);
    }
}

/// Whether parsing recomputes a record's own hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordHashes {
    /// Recompute the header and payload hash and compare.
    Check,
    /// The caller has checked a digest that covers the record's bytes.
    CoveredBySegmentDigest,
}

/// Parses and checks the stored record `bytes` (`hash ‖ header ‖ payload`) found at
/// `position`: the header within the caps, the payload length, the hashes if `hashes` says
/// so, and the position the header names.
pub fn parse_stored(
    bytes: &[u8],
    position: Position,
    hashes: RecordHashes,
) -> Result<RecordView<'_>, RecordError> {
    let (stored_hash, rest) = split_stored_hash(bytes)?;
    let header = V1Header::parse(rest)?;
    let (header_bytes, payload) = rest.split_at(header.len);
    if payload.len() as u64 != u64::from(header.payload_len) {
        return Err(RecordError::PayloadLength {
            declared: u64::from(header.payload_len),
            stored: payload.len() as u64,
        });
    }
    let stored = Digest(*stored_hash);
    if hashes == RecordHashes::Check {
        check_v1_hashes(header_bytes, payload, stored, header.payload_hash)?;
    }
    if header.position != position.0 {
        return Err(RecordError::Position {
            expected: position,
            found: Position(header.position),
        });
    }
    Ok(RecordView {
        position,
        stream: header.stream,
        version: StreamVersion(header.version),
        kind: header.kind,
        schema: header.schema,
        at_ms: header.at_ms,
        idempotency_key: header.idempotency_key,
        payload,
        prev: header.prev,
        hash: stored,
        known_payload_hash: Some(header.payload_hash),
    })
}

/// A stored record's own hash and the bytes after it, or how short the bytes are: both
/// record formats start with the 32-byte record hash.
fn split_stored_hash(bytes: &[u8]) -> Result<(&[u8; 32], &[u8]), RecordError> {
    bytes
        .split_first_chunk::<32>()
        .ok_or(RecordError::Truncated {
            len: bytes.len() as u64,
            need: 32,
        })
}

/// A v1 header's fields as it stores them (`schema/FORMAT.md` 1.2), strings borrowed, and
/// the header's length in bytes: where its payload starts.
struct V1Header<'a> {
    position: u64,
    stream: &'a str,
    version: u64,
    kind: &'a str,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<&'a str>,
    payload_len: u32,
    payload_hash: Digest,
    prev: Digest,
    len: usize,
}

impl<'a> V1Header<'a> {
    /// Reads the header at the start of `bytes`, each field in order, each string and the
    /// payload length within its cap; the payload after it is not looked at.
    fn parse(bytes: &'a [u8]) -> Result<V1Header<'a>, RecordError> {
        let mut header = Reader { bytes, at: 0 };
        let format = header.u8("format")?;
        if format != RECORD_FORMAT {
            return Err(RecordError::UnknownFormat(format));
        }
        let position = header.u64("position")?;
        let stream = header.text(Field::Stream, STREAM_BYTES_CAP)?;
        let version = header.u64("version")?;
        let kind = header.text(Field::Kind, KIND_BYTES_CAP)?;
        let schema = u16::from_le_bytes(header.array("schema")?);
        let at_ms = header.u64("at_ms")?;
        let idempotency_key = match header.u8("idempotency_key tag")? {
            0 => None,
            1 => Some(header.text(Field::IdempotencyKey, IDEMPOTENCY_KEY_BYTES_CAP)?),
            tag => {
                return Err(RecordError::Header {
                    field: "idempotency_key tag",
                    problem: HeaderProblem::Tag { found: tag },
                });
            }
        };
        let payload_len = u32::from_le_bytes(header.array("payload_len")?);
        if payload_len > PAYLOAD_BYTES_CAP {
            return Err(RecordError::FieldOverCap {
                field: Field::Payload,
                len: u64::from(payload_len),
                cap: u64::from(PAYLOAD_BYTES_CAP),
            });
        }
        let payload_hash = Digest(header.array("payload_hash")?);
        let prev = Digest(header.array("prev")?);
        Ok(V1Header {
            position,
            stream,
            version,
            kind,
            schema,
            at_ms,
            idempotency_key,
            payload_len,
            payload_hash,
            prev,
            len: header.at,
        })
    }
}

/// Checks a v1 record's two hashes: the record hash `stored` over its header's bytes, then
/// the payload hash its header declares over its payload.
fn check_v1_hashes(
    header: &[u8],
    payload: &[u8],
    stored: Digest,
    declared: Digest,
) -> Result<(), RecordError> {
    let computed = hash::record_hash(header);
    if computed != stored {
        return Err(RecordError::HeaderHash { stored, computed });
    }
    let computed = hash::payload_hash(payload);
    if computed != declared {
        return Err(RecordError::PayloadHash { declared, computed });
    }
    Ok(())
}

/// Parses and checks the record of a segment at `at` (from [`super::segment::Segment`]),
/// `segment` being the bytes the segment was parsed from, found at `position`: in its file's
/// format, with the same checks.
pub fn parse_at<'a>(
    segment: &'a [u8],
    at: &RecordAt,
    position: Position,
    hashes: RecordHashes,
) -> Result<RecordView<'a>, RecordError> {
    let bytes = segment.get(at.span.clone()).unwrap_or_default();
    match at.format {
        Format::V1 => parse_stored(bytes, position, hashes),
        Format::V2 => {
            let first = at.first.clone().and_then(|first| segment.get(first));
            parse_compact(bytes, at.index, first, at.prev, position, hashes)
        }
    }
}

/// Parses and checks the format v2 record `bytes` (`hash ‖ compact header ‖ payload`), record
/// `index` of its segment, whose first record is `first` (`None` when it is that record) and
/// whose `prev` is `prev`, found at `position`: the compact header within the caps, the
/// fields it shares with the first record, then the v1 header rebuilt from them hashed and
/// compared with the stored hash if `hashes` says so. The record does not store its payload
/// hash: checking computes it, and otherwise [`RecordView::payload_hash`] computes it when asked.
pub fn parse_compact<'a>(
    bytes: &'a [u8],
    index: u32,
    first: Option<&'a [u8]>,
    prev: Digest,
    position: Position,
    hashes: RecordHashes,
) -> Result<RecordView<'a>, RecordError> {
    let (stored_hash, rest) = split_stored_hash(bytes)?;
    let header = compact::parse(rest)?;
    let (stream, version, kind) = compact_names(&header, index, first)?;
    let payload = &rest[header.len..];
    if payload.len() as u64 > u64::from(PAYLOAD_BYTES_CAP) {
        return Err(RecordError::FieldOverCap {
            field: Field::Payload,
            len: payload.len() as u64,
            cap: u64::from(PAYLOAD_BYTES_CAP),
        });
    }
    let mut view = RecordView {
        position,
        stream,
        version: StreamVersion(version),
        kind,
        schema: header.schema,
        at_ms: header.at_ms,
        idempotency_key: header.idempotency_key,
        payload,
        prev,
        hash: Digest(*stored_hash),
        known_payload_hash: None,
    };
    if hashes == RecordHashes::Check {
        view.known_payload_hash = Some(hash::payload_hash(payload));
        let fields: HeaderFields<'_> = view.header_fields();
        let computed = fields.record_hash();
        if computed != view.hash {
            return Err(RecordError::HeaderHash {
                stored: view.hash,
                computed,
            });
        }
    }
    Ok(view)
}

/// A compact record's stream, version and kind: its own, or those it shares with its
/// segment's `first` record (the version counted on by its `index`), whose header must then
/// name them itself.
fn compact_names<'a>(
    header: &compact::Compact<'a>,
    index: u32,
    first: Option<&'a [u8]>,
) -> Result<(&'a str, u64, &'a str), RecordError> {
    let shared = if header.flags & (SAME_STREAM | SAME_KIND) == 0 {
        None
    } else {
        let without_source = RecordError::Header {
            field: "shared stream or kind",
            problem: HeaderProblem::SharedWithoutSource,
        };
        let first = first.ok_or_else(|| without_source.clone())?;
        let base = compact::parse(first.get(32..).unwrap_or_default())?;
        match (base.stream, base.kind) {
            (Some(stream), Some(kind)) => Some((stream, kind)),
            _ => return Err(without_source),
        }
    };
    let absent = |field| RecordError::Header {
        field,
        problem: HeaderProblem::Absent,
    };
    let (stream, version) = match (header.stream, shared) {
        (Some(stream), _) => stream,
        (None, Some(((stream, version), _))) => {
            let version = version
                .checked_add(u64::from(index))
                .ok_or(RecordError::Header {
                    field: "version",
                    problem: HeaderProblem::VersionOverflow,
                })?;
            (stream, version)
        }
        (None, None) => return Err(absent("stream")),
    };
    let kind = match (header.kind, shared) {
        (Some(kind), _) | (None, Some((_, kind))) => kind,
        (None, None) => return Err(absent("kind")),
    };
    Ok((stream, version, kind))
}

/// Reads header fields in order, refusing to run past the bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, what: &'static str, len: usize) -> Result<&'a [u8], RecordError> {
        let taken = self
            .at
            .checked_add(len)
            .and_then(|end| self.bytes.get(self.at..end))
            .ok_or_else(|| RecordError::Header {
                field: what,
                problem: HeaderProblem::Short {
                    need: len as u64,
                    offset: self.at as u64,
                    remain: (self.bytes.len() - self.at) as u64,
                },
            })?;
        self.at += len;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], RecordError> {
        let bytes = self.take(what, N)?;
        Ok(bytes.try_into().unwrap_or([0; N]))
    }

    fn u8(&mut self, what: &'static str) -> Result<u8, RecordError> {
        Ok(self.array::<1>(what)?[0])
    }

    fn u64(&mut self, what: &'static str) -> Result<u64, RecordError> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// A length-prefixed UTF-8 string of 1 to `cap` bytes: the format has no empty stream,
    /// kind or idempotency key, so a header with one is not a record, whatever its hashes.
    fn text(&mut self, field: Field, cap: u32) -> Result<&'a str, RecordError> {
        let len = u64::from_le_bytes(self.array("a string length")?);
        check_text_len(field, len, cap)?;
        let bytes = self.take("a string", len as usize)?;
        text_utf8(field, bytes)
    }
}

/// A string's length as a header declares it, checked before anything is read or allocated:
/// the format has no empty stream, kind or idempotency key, and none over its cap. Both record
/// formats decode their strings through this.
pub fn check_text_len(field: Field, len: u64, cap: u32) -> Result<(), RecordError> {
    if len == 0 {
        return Err(RecordError::EmptyField { field });
    }
    if len > u64::from(cap) {
        return Err(RecordError::FieldOverCap {
            field,
            len,
            cap: u64::from(cap),
        });
    }
    Ok(())
}

/// A string's bytes as UTF-8, or the header error naming the field.
pub fn text_utf8(field: Field, bytes: &[u8]) -> Result<&str, RecordError> {
    std::str::from_utf8(bytes).map_err(|error| RecordError::Header {
        field: field.name(),
        problem: HeaderProblem::NotUtf8 {
            valid_up_to: error.valid_up_to(),
        },
    })
}
