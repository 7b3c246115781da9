//! The segment: several stored records packed into one value, keyed in redb by the position
//! of its first record.
//!
//! Packing is what lets a bulk append cost one B-tree insert per segment instead of one per
//! event. Layouts (fixed-width integers little-endian, `uleb128` as in `uleb128.rs`):
//!
//! ```text
//! v1: segment := digest [32] ‖ count u32 ‖ end[0] u32 ‖ … ‖ end[count-1] u32 ‖ body
//!     record i := body[end[i-1] .. end[i]]   (end[-1] = 0), a v1 stored record
//! v2: segment := digest [32] ‖ 0x02 ‖ uleb128(count) ‖ prev [32]
//!                ‖ uleb128(len[0]) ‖ … ‖ uleb128(len[count-1]) ‖ body
//!     record i := the len[i] bytes of the body after records 0 .. i-1, a compact record
//!                 (`compact.rs`) whose `prev` is record i-1's hash (`prev` for record 0)
//! digest := derive-key hash of everything after it, with the format's segment context
//! ```
//!
//! The digest covers the whole segment, framing included. It detects damage, not forgery:
//! whoever rewrites a payload can recompute it, so every read also checks each record's own
//! hashes before handing the record out.
//!
//! Parsing allocates nothing and refuses any layout that is not well formed; it does not
//! check the digest, which [`Segment::digest_error`] does on demand.

use std::fmt;
use std::ops::Range;

use super::compact::{self, STREAM_AT, WholeParts};
use super::limits::SEGMENT_RECORDS_CAP;
use super::view::RecordView;
use super::{Format, NewEvent, uleb128};
use crate::hash::{Digest, segment_digest, segment_v2_digest};

/// Bytes before the count: the digest.
const DIGEST_BYTES: usize = 32;

/// The byte after a v2 segment's digest.
const V2_TAG: u8 = 2;

/// Fill a segment up to this many bytes, count and end table included, before starting the
/// next; a single larger record gets a segment of its own.
///
/// redb stores a value this large on pages of its own, allocated in power-of-two runs of
/// 4 KiB pages, so a segment a few bytes over 64 KiB takes 128 KiB of file. The target leaves
/// room under 64 KiB for the end table and redb's own bytes around the value.
pub const SEGMENT_BYTES_TARGET: usize = 64 * 1024 - 512;

/// Close a segment once it holds this many records.
pub const SEGMENT_RECORDS_TARGET: u32 = 1024;

const _: () = assert!(SEGMENT_RECORDS_TARGET <= SEGMENT_RECORDS_CAP);

/// Packs stored records into one segment value.
#[derive(Debug)]
pub struct SegmentBuilder {
    format: Format,
    ends: Vec<u32>,
    /// v1: the stored records. v2: each record written whole (`compact::encode_whole`), to be
    /// re-encoded relative to the first record of the segment it ends up in.
    body: Vec<u8>,
    /// v2: where each pending record's parts end.
    parts: Vec<WholeParts>,
    /// v2: the `prev` of the first pending record.
    first_prev: Digest,
    /// v2: the bytes of the pending records' lengths, as whole records.
    table_bytes: usize,
}

impl Default for SegmentBuilder {
    fn default() -> Self {
        SegmentBuilder::with_format(Format::V1)
    }
}

impl SegmentBuilder {
    /// An empty builder of format v1 segments.
    #[cfg(any(test, feature = "testing"))]
    pub fn new() -> Self {
        SegmentBuilder::default()
    }

    /// An empty builder of `format` segments.
    pub fn with_format(format: Format) -> Self {
        SegmentBuilder {
            format,
            ends: Vec::new(),
            body: Vec::new(),
            parts: Vec::new(),
            first_prev: Digest::ZERO,
            table_bytes: 0,
        }
    }

    /// Records packed so far.
    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    /// Whether no record is packed yet.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Whether a record of at most `record_bytes` stored should start a new segment instead.
    pub fn is_full_for(&self, record_bytes: usize) -> bool {
        // A record's entry in the table: 4 bytes in v1, at most 5 (a length under 2^35) in v2.
        !self.is_empty()
            && (self.len() >= SEGMENT_RECORDS_TARGET
                || self.encoded_len() + 5 + record_bytes > SEGMENT_BYTES_TARGET)
    }

    /// The length of the segment's bytes as [`Self::finish`] would return them now, at most.
    fn encoded_len(&self) -> usize {
        match self.format {
            Format::V1 => DIGEST_BYTES + 4 + 4 * self.ends.len() + self.body.len(),
            // The count takes at most 3 bytes (up to 2^21 records).
            Format::V2 => DIGEST_BYTES + 1 + 3 + 32 + self.table_bytes + self.body.len(),
        }
    }

    /// The buffer the next record's stored bytes are written onto (format v1); call
    /// [`Self::seal_record`] after writing them.
    pub fn body_mut(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }

    /// Marks the bytes written since the last record as one record.
    pub fn seal_record(&mut self) {
        let start = self.ends.last().map_or(0, |&end| end as usize);
        // The body only grows: the bytes since the last record are this one's.
        assert!(
            self.body.len() >= start,
            "a segment's body shrank under its records"
        );
        let records = self.ends.len();
        let end = u32::try_from(self.body.len())
            .expect("records are capped so that a segment body fits a u32");
        self.ends.push(end);
        self.table_bytes += uleb128::len((self.body.len() - start) as u64);
        debug_assert_eq!(self.ends.len(), records + 1, "one record sealed");
    }

    /// Packs `record`, read from a sound stored segment, as it was: its stored bytes in v1, its
    /// parts re-encoded against this segment's first record in v2.
    pub fn push_stored(&mut self, record: &RecordView<'_>, stored: &[u8]) {
        match self.format {
            Format::V1 => {
                self.body.extend_from_slice(stored);
                self.seal_record();
            }
            Format::V2 => self.push_v2(
                record.prev,
                record.hash,
                record.stream,
                record.version.0,
                &NewEvent {
                    kind: record.kind.to_owned(),
                    schema: record.schema,
                    at_ms: record.at_ms,
                    idempotency_key: record.idempotency_key.map(str::to_owned),
                    payload: record.payload.to_vec(),
                },
            ),
        }
    }

    /// Packs the format v2 record of `event` at `version` of `stream`, hashed `hash` and
    /// chained to `prev`.
    pub fn push_v2(
        &mut self,
        prev: Digest,
        hash: Digest,
        stream: &str,
        version: u64,
        event: &NewEvent,
    ) {
        debug_assert_eq!(self.format, Format::V2);
        if self.is_empty() {
            self.first_prev = prev;
        }
        let parts = compact::encode_whole(&mut self.body, hash, stream, version, event);
        self.parts.push(parts);
        self.seal_record();
        // Each record has its parts, for the next ones to be encoded against.
        assert_eq!(
            self.parts.len(),
            self.ends.len(),
            "a v2 record sealed with its parts"
        );
    }

    /// The segment value, leaving the builder empty (the writer ends a transaction with
    /// [`Self::finish_pieces`]).
    pub fn finish(&mut self) -> Vec<u8> {
        let records = self.ends.len();
        let out = self.encode(0, records);
        self.clear();
        debug_assert!(self.is_empty(), "a finished builder holds no record");
        debug_assert!(
            Segment::parse(&out, self.format)
                .is_ok_and(|segment| segment.count() as usize == records),
            "a finished segment parses back with every record packed"
        );
        out
    }

    fn clear(&mut self) {
        self.ends.clear();
        self.body.clear();
        self.parts.clear();
        self.table_bytes = 0;
    }

    /// The records packed so far as consecutive segments, each with its record count, leaving
    /// the builder empty: one segment, unless ending one earlier keeps redb's pages fuller.
    ///
    /// redb packs values of up to a page into shared pages, and gives a larger value a
    /// power-of-two run of pages of its own: a 17 KiB segment takes 32 KiB. So a segment whose
    /// value would fill less than three quarters of its run is cut where the next smaller run
    /// is full, and the rest is considered in turn. A bulk transaction's segments, filled to
    /// [`SEGMENT_BYTES_TARGET`], stay whole; the last segment of a transaction is cut.
    pub fn finish_pieces(&mut self) -> Vec<(u32, Vec<u8>)> {
        let count = self.ends.len();
        let mut pieces = Vec::new();
        let mut first = 0;
        while first < count {
            let whole = self.fixed_bytes(count - first)
                + (first..count)
                    .map(|index| self.entry_bytes(first, index))
                    .sum::<usize>();
            let run = pages_run_bytes(whole);
            let end = if whole + LEAF_OVERHEAD_BYTES <= PAGE_BYTES || 4 * whole >= 3 * run {
                count
            } else {
                let smaller = run / 2 - LEAF_OVERHEAD_BYTES;
                let mut end = first + 1;
                let mut records = self.entry_bytes(first, first);
                while end < count {
                    let more = records + self.entry_bytes(first, end);
                    if self.fixed_bytes(end + 1 - first) + more > smaller {
                        break;
                    }
                    records = more;
                    end += 1;
                }
                end
            };
            // Every piece holds at least one record, so the loop ends.
            assert!(end > first, "a segment piece holds at least one record");
            pieces.push(((end - first) as u32, self.encode(first, end)));
            first = end;
        }
        // Postcondition: the pieces hold every record added, each once, in order.
        assert_eq!(
            pieces.iter().map(|(n, _)| *n as usize).sum::<usize>(),
            count,
            "a segment's pieces hold every record once"
        );
        self.clear();
        pieces
    }

    /// The bytes of a segment of `count` records before its records and their table entries.
    fn fixed_bytes(&self, count: usize) -> usize {
        match self.format {
            Format::V1 => DIGEST_BYTES + 4,
            Format::V2 => DIGEST_BYTES + 1 + uleb128::len(count as u64) + 32,
        }
    }

    /// The bytes pending record `index` takes, with its table entry, in a segment whose first
    /// record is pending record `first`.
    fn entry_bytes(&self, first: usize, index: usize) -> usize {
        match self.format {
            Format::V1 => 4 + self.span(index).len(),
            Format::V2 => {
                let len = self.compact_len(first, index);
                uleb128::len(len as u64) + len
            }
        }
    }

    /// Where pending record `index` lies in the body.
    fn span(&self, index: usize) -> Range<usize> {
        let start = match index {
            0 => 0,
            _ => self.ends[index - 1] as usize,
        };
        start..self.ends[index] as usize
    }

    /// v2: which parts of pending record `index` its segment's first record, pending record
    /// `first`, lets it leave out: (same stream and next version, same kind).
    fn shared_with(&self, first: usize, index: usize) -> (bool, bool) {
        if index == first {
            return (false, false);
        }
        let (base, record) = (self.span(first), self.span(index));
        let (base_parts, parts) = (self.parts[first], self.parts[index]);
        // The stream's length and bytes, without the version after them.
        let name = |start: usize, parts: WholeParts| {
            &self.body[start + STREAM_AT..start + parts.stream_end - uleb128::len(parts.version)]
        };
        let kind = |start: usize, parts: WholeParts| {
            &self.body[start + parts.stream_end..start + parts.kind_end]
        };
        let same_stream = name(base.start, base_parts) == name(record.start, parts)
            && base_parts.version.checked_add((index - first) as u64) == Some(parts.version);
        let same_kind = kind(base.start, base_parts) == kind(record.start, parts);
        (same_stream, same_kind)
    }

    /// v2: the length of pending record `index` in a segment whose first record is pending
    /// record `first`.
    fn compact_len(&self, first: usize, index: usize) -> usize {
        let parts = self.parts[index];
        let (same_stream, same_kind) = self.shared_with(first, index);
        let mut len = self.span(index).len();
        if same_stream {
            len -= parts.stream_end - STREAM_AT;
        }
        if same_kind {
            len -= parts.kind_end - parts.stream_end;
        }
        len
    }

    /// The segment value of pending records `first .. end`.
    fn encode(&self, first: usize, end: usize) -> Vec<u8> {
        match self.format {
            Format::V1 => {
                let base = self.span(first).start as u32;
                let ends: Vec<u32> = self.ends[first..end].iter().map(|e| e - base).collect();
                let body = &self.body[self.span(first).start..self.span(end - 1).end];
                encode(&ends, body)
            }
            Format::V2 => self.encode_v2(first, end),
        }
    }

    fn encode_v2(&self, first: usize, end: usize) -> Vec<u8> {
        let records = self.span(end - 1).end - self.span(first).start;
        let mut out =
            Vec::with_capacity(self.fixed_bytes(end - first) + 3 * (end - first) + records);
        out.extend_from_slice(&[0; DIGEST_BYTES]);
        out.push(V2_TAG);
        uleb128::put(&mut out, (end - first) as u64);
        let prev = match first {
            0 => self.first_prev,
            _ => {
                let before = self.span(first - 1).start;
                Digest(
                    self.body[before..before + 32]
                        .try_into()
                        .expect("a record starts with its 32-byte hash"),
                )
            }
        };
        out.extend_from_slice(prev.as_bytes());
        for index in first..end {
            uleb128::put(&mut out, self.compact_len(first, index) as u64);
        }
        for index in first..end {
            let span = self.span(index);
            let parts = self.parts[index];
            let record = &self.body[span];
            let (same_stream, same_kind) = self.shared_with(first, index);
            out.extend_from_slice(&record[..32]);
            let mut flags = record[32];
            if same_stream {
                flags |= compact::SAME_STREAM;
            }
            if same_kind {
                flags |= compact::SAME_KIND;
            }
            out.push(flags);
            if !same_stream {
                out.extend_from_slice(&record[STREAM_AT..parts.stream_end]);
            }
            if !same_kind {
                out.extend_from_slice(&record[parts.stream_end..parts.kind_end]);
            }
            out.extend_from_slice(&record[parts.kind_end..]);
        }
        let digest = segment_v2_digest(&out[DIGEST_BYTES..]);
        out[..DIGEST_BYTES].copy_from_slice(digest.as_bytes());
        out
    }
}

/// redb's page size: values up to about a page share pages with others.
const PAGE_BYTES: usize = 4096;

/// Room for redb's own bytes on the pages of a value stored alone (the leaf's header, key and
/// offsets), as [`SEGMENT_BYTES_TARGET`] leaves under 64 KiB.
const LEAF_OVERHEAD_BYTES: usize = 512;

/// The bytes of the run of pages redb gives a value of `value_bytes` stored alone.
fn pages_run_bytes(value_bytes: usize) -> usize {
    (value_bytes + LEAF_OVERHEAD_BYTES)
        .next_power_of_two()
        .max(PAGE_BYTES)
}

/// The v1 segment value of the records of `body` ending at `ends`.
fn encode(ends: &[u32], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(DIGEST_BYTES + 4 + 4 * ends.len() + body.len());
    out.extend_from_slice(&[0; DIGEST_BYTES]);
    out.extend_from_slice(&(ends.len() as u32).to_le_bytes());
    for end in ends {
        out.extend_from_slice(&end.to_le_bytes());
    }
    out.extend_from_slice(body);
    let digest = segment_digest(&out[DIGEST_BYTES..]);
    out[..DIGEST_BYTES].copy_from_slice(digest.as_bytes());
    out
}

/// A parsed, well-formed segment borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    format: Format,
    /// The whole value.
    bytes: &'a [u8],
    count: u32,
    /// v1: the end table; v2: the length table.
    table: &'a [u8],
    /// Where the body starts in `bytes`.
    body_at: usize,
    /// v2: the `prev` of the first record.
    first_prev: Digest,
}

/// Where one record of a segment lies, and what a format v2 record needs of its segment to be
/// read: enough to decode it from the segment's bytes alone (`view::parse_at`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordAt {
    /// The segment's format.
    pub format: Format,
    /// The record's index in the segment.
    pub index: u32,
    /// Its bytes, within the bytes the segment was parsed from.
    pub span: Range<usize>,
    /// v2: its `prev` (the hash of the record before it, or the segment's `prev`).
    pub prev: Digest,
    /// v2: the bytes of the segment's first record, for a later record that shares its stream
    /// or kind; `None` for the first record itself and in v1.
    pub first: Option<Range<usize>>,
}

/// Why bytes are not a well-formed segment.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SegmentError {
    /// Fewer bytes than the count and end table need.
    #[error("segment of {len} bytes is too short for its {count} record ends")]
    Truncated {
        /// Bytes present.
        len: u64,
        /// Records declared.
        count: u64,
    },
    /// Zero records or more than the cap.
    #[error("segment declares {count} records; it must hold 1 to {SEGMENT_RECORDS_CAP}")]
    Count {
        /// Records declared.
        count: u64,
    },
    /// Record ends that go backwards or past the body.
    #[error("record {index} of the segment ends at {end}, outside {start}..={body_len}")]
    End {
        /// The record within the segment.
        index: u32,
        /// Where it claims to end.
        end: u64,
        /// Where it starts.
        start: u64,
        /// The body's length.
        body_len: u64,
    },
    /// Bytes after the last record.
    #[error("segment body has {extra} bytes after its last record")]
    Trailing {
        /// How many.
        extra: u64,
    },
    /// The stored digest differs from the digest of the segment's bytes.
    #[error("segment digest mismatch: stored {stored}, computed {computed}")]
    Digest {
        /// The digest stored in the segment.
        stored: Digest,
        /// The digest of the bytes as stored.
        computed: Digest,
    },
    /// A format v2 segment whose byte after the digest is not 2.
    #[error("segment format byte is {found}, not 2")]
    Tag {
        /// The byte found.
        found: u8,
    },
    /// A format v2 length table entry that is not a number in its shortest form, or a record
    /// too short for its hash.
    #[error("record {index} of the segment: {problem}")]
    Length {
        /// The record within the segment.
        index: u32,
        /// What is wrong with its entry.
        problem: LengthProblem,
    },
}

/// What is wrong with a record's entry in a format v2 segment's length table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LengthProblem {
    /// The entry is cut short, or is not a LEB128 number in its shortest form.
    NotLeb128,
    /// The record is `len` bytes, fewer than the 32 of its hash.
    ShorterThanHash {
        /// The length the entry gives.
        len: u64,
    },
}

impl fmt::Display for LengthProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthProblem::NotLeb128 => {
                f.write_str("its length is cut short or not a number in its shortest form")
            }
            LengthProblem::ShorterThanHash { len } => {
                write!(f, "{len} bytes, too short for its 32-byte hash")
            }
        }
    }
}

impl<'a> Segment<'a> {
    /// Parses `bytes` as a segment of `format`, checking the count against the cap and every
    /// end or length against the body.
    pub fn parse(bytes: &'a [u8], format: Format) -> Result<Segment<'a>, SegmentError> {
        match format {
            Format::V1 => Segment::parse_v1(bytes),
            Format::V2 => Segment::parse_v2(bytes),
        }
    }

    fn parse_v1(bytes: &'a [u8]) -> Result<Segment<'a>, SegmentError> {
        let truncated = |count: u32| SegmentError::Truncated {
            len: bytes.len() as u64,
            count: u64::from(count),
        };
        let Some((_, covered)) = bytes.split_first_chunk::<DIGEST_BYTES>() else {
            return Err(truncated(0));
        };
        let Some((count, rest)) = covered.split_first_chunk::<4>() else {
            return Err(truncated(0));
        };
        let count = u32::from_le_bytes(*count);
        if count == 0 || count > SEGMENT_RECORDS_CAP {
            return Err(SegmentError::Count {
                count: u64::from(count),
            });
        }
        let table_len = 4 * count as usize;
        if rest.len() < table_len {
            return Err(truncated(count));
        }
        let (table, body) = rest.split_at(table_len);
        let segment = Segment {
            format: Format::V1,
            bytes,
            count,
            table,
            body_at: bytes.len() - body.len(),
            first_prev: Digest::ZERO,
        };
        let mut start = 0u64;
        for index in 0..count {
            let end = u64::from(segment.end_v1(index));
            if end < start || end > body.len() as u64 {
                return Err(SegmentError::End {
                    index,
                    end,
                    start,
                    body_len: body.len() as u64,
                });
            }
            start = end;
        }
        if start != body.len() as u64 {
            return Err(SegmentError::Trailing {
                extra: body.len() as u64 - start,
            });
        }
        Ok(segment)
    }

    fn parse_v2(bytes: &'a [u8]) -> Result<Segment<'a>, SegmentError> {
        let truncated = |count: u64| SegmentError::Truncated {
            len: bytes.len() as u64,
            count,
        };
        let Some((_, covered)) = bytes.split_first_chunk::<DIGEST_BYTES>() else {
            return Err(truncated(0));
        };
        let Some((&tag, mut rest)) = covered.split_first() else {
            return Err(truncated(0));
        };
        if tag != V2_TAG {
            return Err(SegmentError::Tag { found: tag });
        }
        let Some(count) = uleb128::take(&mut rest) else {
            return Err(truncated(0));
        };
        if count == 0 || count > u64::from(SEGMENT_RECORDS_CAP) {
            return Err(SegmentError::Count { count });
        }
        let Some((prev, mut rest)) = rest.split_first_chunk::<32>() else {
            return Err(truncated(count));
        };
        let table_start = rest;
        let mut sum = 0u64;
        for index in 0..count as u32 {
            let Some(len) = uleb128::take(&mut rest) else {
                return Err(SegmentError::Length {
                    index,
                    problem: LengthProblem::NotLeb128,
                });
            };
            if len < 32 {
                return Err(SegmentError::Length {
                    index,
                    problem: LengthProblem::ShorterThanHash { len },
                });
            }
            sum = sum.saturating_add(len);
        }
        let table = &table_start[..table_start.len() - rest.len()];
        let body_len = rest.len() as u64;
        if sum > body_len {
            return Err(SegmentError::End {
                index: count as u32 - 1,
                end: sum,
                start: 0,
                body_len,
            });
        }
        if sum < body_len {
            return Err(SegmentError::Trailing {
                extra: body_len - sum,
            });
        }
        Ok(Segment {
            format: Format::V2,
            bytes,
            count: count as u32,
            table,
            body_at: bytes.len() - rest.len(),
            first_prev: Digest(*prev),
        })
    }

    /// Parses `bytes` as [`Self::parse`] does and checks the digest: `None` unless both hold.
    /// For a writer about to copy records into a new segment, since re-sealing damaged bytes
    /// under a fresh digest would hide the damage from every later check.
    pub fn parse_sound(bytes: &'a [u8], format: Format) -> Option<Segment<'a>> {
        let segment = Segment::parse(bytes, format).ok()?;
        segment.digest_error().is_none().then_some(segment)
    }

    /// `None` if the stored digest is that of the segment's bytes, else the mismatch. Costs one
    /// hash of the whole segment.
    pub fn digest_error(&self) -> Option<SegmentError> {
        let (digest, covered) = self.bytes.split_at(DIGEST_BYTES);
        let computed = match self.format {
            Format::V1 => segment_digest(covered),
            Format::V2 => segment_v2_digest(covered),
        };
        let stored = Digest(digest.try_into().expect("parsed segments hold a digest"));
        (computed != stored).then_some(SegmentError::Digest { stored, computed })
    }

    /// How many records it holds (at least 1).
    pub fn count(&self) -> u32 {
        self.count
    }

    fn end_v1(&self, index: u32) -> u32 {
        let at = 4 * index as usize;
        u32::from_le_bytes(self.table[at..at + 4].try_into().expect("4-byte slice"))
    }

    /// Where each record lies, in order: one pass over the table.
    pub fn records_at(&self) -> RecordsAt<'a> {
        RecordsAt {
            segment: *self,
            index: 0,
            table: self.table,
            start: self.body_at,
            prev: self.first_prev,
            first: None,
        }
    }

    /// Where record `index` lies, or `None` past the end.
    pub fn record_at(&self, index: u32) -> Option<RecordAt> {
        if index >= self.count {
            return None;
        }
        // v2 lengths are read in turn; v1 could jump, but a v1 parse already costs a pass.
        self.records_at().nth(index as usize)
    }

    /// Every record of the segment, keyed `first`, each checked against its own hashes as a
    /// point read checks it; the first refusal names the record's index.
    #[cfg(any(test, feature = "testing"))]
    pub fn decode_all(
        &self,
        first: super::Position,
    ) -> Result<Vec<super::Record>, (u32, super::RecordError)> {
        use super::view::{RecordHashes, parse_at};
        self.records_at()
            .map(|at| {
                let position = super::Position(first.0.wrapping_add(u64::from(at.index)));
                parse_at(self.bytes, &at, position, RecordHashes::Check)
                    .map(|view| view.to_record())
                    .map_err(|error| (at.index, error))
            })
            .collect()
    }

    /// The stored bytes of record `index`, or `None` past the end.
    #[cfg(any(test, feature = "testing"))]
    pub fn record(&self, index: u32) -> Option<&'a [u8]> {
        let bytes = self.bytes;
        self.record_at(index).and_then(|at| bytes.get(at.span))
    }
}

/// The records of a segment in order ([`Segment::records_at`]).
#[derive(Clone, Debug)]
pub struct RecordsAt<'a> {
    segment: Segment<'a>,
    index: u32,
    /// The table entries not yet read.
    table: &'a [u8],
    /// Where the next record starts in the segment's bytes.
    start: usize,
    /// v2: the next record's `prev`.
    prev: Digest,
    /// v2: the first record's bytes, once passed.
    first: Option<Range<usize>>,
}

impl Iterator for RecordsAt<'_> {
    type Item = RecordAt;

    fn next(&mut self) -> Option<RecordAt> {
        let segment = &self.segment;
        if self.index >= segment.count {
            return None;
        }
        // The parse checked every entry: these reads cannot fail on a parsed segment.
        let end = match segment.format {
            Format::V1 => segment.body_at + segment.end_v1(self.index) as usize,
            Format::V2 => self.start + uleb128::take(&mut self.table).unwrap_or(0) as usize,
        };
        let span = self.start..end;
        let at = RecordAt {
            format: segment.format,
            index: self.index,
            span: span.clone(),
            prev: self.prev,
            first: self.first.clone(),
        };
        if segment.format == Format::V2 {
            if let Some(hash) = segment.bytes.get(span.start..span.start + 32) {
                self.prev = Digest(hash.try_into().unwrap_or([0; 32]));
            }
            if self.index == 0 {
                self.first = Some(span.clone());
            }
        }
        self.start = end;
        self.index += 1;
        Some(at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(records: &[&[u8]]) -> Vec<u8> {
        let mut builder = SegmentBuilder::new();
        for record in records {
            builder.body_mut().extend_from_slice(record);
            builder.seal_record();
        }
        builder.finish()
    }

    #[test]
    fn only_a_well_formed_segment_with_its_digest_parses_sound() {
        let stored = build(&[b"ab", b"cd"]);
        let sound = Segment::parse_sound(&stored, Format::V1).expect("a sound segment");
        assert_eq!(sound.record(1), Some(&b"cd"[..]));
        for at in 0..stored.len() {
            let mut damaged = stored.clone();
            damaged[at] ^= 0x01;
            assert!(
                Segment::parse_sound(&damaged, Format::V1).is_none(),
                "byte {at}"
            );
        }
    }

    #[test]
    fn records_round_trip_through_a_segment() {
        let bytes = build(&[b"one", b"", b"three"]);
        let segment = Segment::parse(&bytes, Format::V1).unwrap();
        assert_eq!(segment.count(), 3);
        assert_eq!(segment.record(0), Some(&b"one"[..]));
        assert_eq!(segment.record(1), Some(&b""[..]));
        assert_eq!(segment.record(2), Some(&b"three"[..]));
        assert_eq!(segment.record(3), None);
        assert_eq!(segment.digest_error(), None);
        for index in 0..3 {
            let span = segment.record_at(index).unwrap().span;
            assert_eq!(Some(&bytes[span]), segment.record(index));
        }
        assert_eq!(segment.record_at(3), None);
    }

    #[test]
    fn any_changed_byte_breaks_the_digest() {
        let bytes = build(&[b"one", b"two"]);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            if let Ok(segment) = Segment::parse(&damaged, Format::V1) {
                assert!(
                    matches!(segment.digest_error(), Some(SegmentError::Digest { .. })),
                    "byte {at}"
                );
            }
        }
    }

    #[test]
    fn a_full_segment_stays_within_its_byte_target() {
        let record = [7u8; 330];
        let mut builder = SegmentBuilder::new();
        while !builder.is_full_for(record.len()) {
            builder.body_mut().extend_from_slice(&record);
            builder.seal_record();
        }
        let bytes = builder.finish();
        assert!(bytes.len() <= SEGMENT_BYTES_TARGET, "{} bytes", bytes.len());
        assert!(bytes.len() + 4 + 4 + record.len() > SEGMENT_BYTES_TARGET);
    }

    #[test]
    fn pieces_tile_the_records_and_fill_their_pages() {
        // 1,400-byte records, 12 of them: 17 KiB whole would take a 32 KiB run of pages.
        let record = [9u8; 1_400];
        let mut builder = SegmentBuilder::new();
        for _ in 0..12 {
            builder.body_mut().extend_from_slice(&record);
            builder.seal_record();
        }
        let pieces = builder.finish_pieces();
        assert!(builder.is_empty());
        assert_eq!(pieces.iter().map(|(count, _)| count).sum::<u32>(), 12);
        assert!(pieces.len() > 1, "cut: {} pieces", pieces.len());
        for (count, bytes) in &pieces {
            let segment = Segment::parse(bytes, Format::V1).unwrap();
            assert_eq!(segment.count(), *count);
            assert_eq!(segment.digest_error(), None);
            for index in 0..*count {
                assert_eq!(segment.record(index), Some(&record[..]));
            }
            let run = pages_run_bytes(bytes.len());
            assert!(
                bytes.len() + LEAF_OVERHEAD_BYTES <= PAGE_BYTES || 4 * bytes.len() >= 3 * run,
                "a {}-byte piece in a {run}-byte run",
                bytes.len()
            );
        }
    }

    #[test]
    fn a_full_segment_and_a_small_one_stay_whole() {
        for (records, size) in [(1, 5_000), (3, 300), (170, 370)] {
            let mut builder = SegmentBuilder::new();
            for _ in 0..records {
                builder.body_mut().extend_from_slice(&vec![1u8; size]);
                builder.seal_record();
            }
            let pieces = builder.finish_pieces();
            assert_eq!(pieces.len(), 1, "{records} records of {size} bytes");
            assert_eq!(pieces[0].0, records);
        }
    }

    /// Records of two streams (runs of one, interleaved), some keyed, chained from `prev`,
    /// packed by a v2 builder: each as a v1 stored record, to compare with.
    fn v2_records(builder: &mut SegmentBuilder, count: u64, prev: Digest) -> Vec<Vec<u8>> {
        use crate::record::{Placement, Position, StreamVersion, encode_stored};
        let mut prev = prev;
        let mut versions = [0u64; 2];
        let mut stored = Vec::new();
        for position in 0..count {
            let stream = if position % 5 < 3 { 0 } else { 1 };
            let name = ["orders", "ledger/7"][stream];
            let mut event = NewEvent::new(
                ["k.placed", "k.paid"][(position % 2) as usize],
                1_700_000_000_000 + 7 * position,
                vec![position as u8; (position % 9) as usize * 40],
            );
            if position % 4 == 1 {
                event = event.with_idempotency_key(format!("key-{position}"));
            }
            let placement = Placement {
                stream: name,
                position: Position(position),
                version: StreamVersion(versions[stream]),
                prev,
            };
            let mut v1 = Vec::new();
            let hash = encode_stored(&mut v1, &event, placement).unwrap();
            builder.push_v2(prev, hash, name, versions[stream], &event);
            stored.push(v1);
            versions[stream] += 1;
            prev = hash;
        }
        stored
    }

    /// Every record of the v2 segments `pieces` (starting at position 0) read back equals its
    /// v1 stored record, hashes checked.
    fn assert_v2_reads_as_v1(pieces: &[(u32, Vec<u8>)], stored: &[Vec<u8>]) {
        use crate::record::Position;
        use crate::record::view::{RecordHashes, parse_at, parse_stored};
        let mut position = 0;
        for (count, bytes) in pieces {
            let segment = Segment::parse(bytes, Format::V2).unwrap();
            assert_eq!(segment.count(), *count);
            assert_eq!(segment.digest_error(), None);
            for at in segment.records_at() {
                let view = parse_at(bytes, &at, Position(position), RecordHashes::Check).unwrap();
                let expected = parse_stored(
                    &stored[position as usize],
                    Position(position),
                    RecordHashes::Check,
                )
                .unwrap();
                assert_eq!(view, expected, "position {position}");
                let mut again = Vec::new();
                view.encode_v1_stored(&mut again);
                assert_eq!(again, stored[position as usize]);
                position += 1;
            }
        }
        assert_eq!(position as usize, stored.len());
    }

    #[test]
    fn v2_records_read_back_as_their_v1_records() {
        let mut builder = SegmentBuilder::with_format(Format::V2);
        let stored = v2_records(&mut builder, 40, Digest([3; 32]));
        let whole = builder.finish();
        assert!(builder.is_empty());
        assert_v2_reads_as_v1(&[(40, whole.clone())], &stored);
        let v1_bytes: usize = stored.iter().map(|s| s.len() + 4).sum();
        assert!(
            whole.len() * 10 < v1_bytes * 8,
            "{} v2 bytes, {v1_bytes} v1",
            whole.len()
        );
    }

    #[test]
    fn v2_pieces_each_start_from_their_own_first_record() {
        // Some counts make a segment that fills too little of its run of pages: those are cut.
        let mut cut = 0;
        for count in 60..=120 {
            let mut builder = SegmentBuilder::with_format(Format::V2);
            let stored = v2_records(&mut builder, count, Digest::ZERO);
            let pieces = builder.finish_pieces();
            assert!(builder.is_empty());
            if pieces.len() > 1 {
                cut += 1;
            }
            assert_v2_reads_as_v1(&pieces, &stored);
        }
        assert!(cut > 0, "no count was cut");
    }

    #[test]
    fn any_changed_byte_of_a_v2_segment_is_refused_or_breaks_a_hash() {
        use crate::record::Position;
        use crate::record::view::{RecordHashes, parse_at};
        let mut builder = SegmentBuilder::with_format(Format::V2);
        v2_records(&mut builder, 6, Digest([9; 32]));
        let bytes = builder.finish();
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x04;
            let Ok(segment) = Segment::parse(&damaged, Format::V2) else {
                continue;
            };
            assert!(segment.digest_error().is_some(), "byte {at}: digest");
            // Past the digest, every change shows in a record's own checks, or in its `prev`
            // (the segment's first, which the chain then refuses).
            if at >= 32 {
                let refused = segment.records_at().any(|record| {
                    let position = Position(u64::from(record.index));
                    match parse_at(&damaged, &record, position, RecordHashes::Check) {
                        Ok(view) => record.index == 0 && view.prev != Digest([9; 32]),
                        Err(_) => true,
                    }
                });
                assert!(refused, "byte {at}");
            }
        }
    }

    #[test]
    fn malformed_segments_are_refused() {
        let good = build(&[b"ab", b"cd"]);
        assert!(matches!(
            Segment::parse(&good[..35], Format::V1),
            Err(SegmentError::Truncated { .. })
        ));
        assert!(matches!(
            Segment::parse(&[0; 36], Format::V1),
            Err(SegmentError::Count { .. })
        ));
        assert!(matches!(
            Segment::parse(&good[..45], Format::V1),
            Err(SegmentError::End { .. })
        ));
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(
            Segment::parse(&trailing, Format::V1),
            Err(SegmentError::Trailing { extra: 1 })
        ));
        let mut backwards = good.clone();
        backwards[36..40].copy_from_slice(&3u32.to_le_bytes());
        backwards[40..44].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            Segment::parse(&backwards, Format::V1),
            Err(SegmentError::End { index: 1, .. })
        ));
        let mut huge = vec![0; 32];
        huge.extend_from_slice(&(SEGMENT_RECORDS_CAP + 1).to_le_bytes());
        assert!(matches!(
            Segment::parse(&huge, Format::V1),
            Err(SegmentError::Count { .. })
        ));
    }
}
