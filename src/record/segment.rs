//! The segment: several stored records packed into one value, keyed in redb by the position
//! of its first record.
//!
//! Packing is what lets a bulk append cost one B-tree insert per segment instead of one per
//! event. Layout (all integers little-endian):
//!
//! ```text
//! segment := digest [32] ‖ count u32 ‖ end[0] u32 ‖ … ‖ end[count-1] u32 ‖ body
//! record i := body[end[i-1] .. end[i]]   (end[-1] = 0)
//! digest := segment_digest(count ‖ end table ‖ body)
//! ```
//!
//! The digest exists for sequential reads: blake3 hashes a 64 KiB input many chunks at a time,
//! so checking a whole segment costs a small fraction of checking each record's two short
//! hashes. Point reads and `verify` still check every record's own hashes.
//!
//! Parsing allocates nothing and refuses any layout that is not well formed; it does not
//! check the digest, which [`Segment::digest_error`] does on demand.

use std::ops::Range;

use super::limits::SEGMENT_RECORDS_CAP;
use crate::hash::{Digest, segment_digest};

/// Bytes before the count: the digest.
const DIGEST_BYTES: usize = 32;

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
#[derive(Debug, Default)]
pub struct SegmentBuilder {
    ends: Vec<u32>,
    body: Vec<u8>,
}

impl SegmentBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        SegmentBuilder::default()
    }

    /// Records packed so far.
    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    /// Whether no record is packed yet.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Whether a record of `record_bytes` should start a new segment instead.
    pub fn is_full_for(&self, record_bytes: usize) -> bool {
        !self.is_empty()
            && (self.len() >= SEGMENT_RECORDS_TARGET
                || self.encoded_len() + 4 + record_bytes > SEGMENT_BYTES_TARGET)
    }

    /// The length of the segment's bytes as [`Self::finish`] would return them now.
    fn encoded_len(&self) -> usize {
        DIGEST_BYTES + 4 + 4 * self.ends.len() + self.body.len()
    }

    /// The buffer the next record's stored bytes are written onto; call [`Self::seal_record`]
    /// after writing them.
    pub fn body_mut(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }

    /// Marks the bytes written since the last record as one record.
    pub fn seal_record(&mut self) {
        let end = u32::try_from(self.body.len())
            .expect("records are capped so that a segment body fits a u32");
        self.ends.push(end);
    }

    /// The segment value, leaving the builder empty.
    pub fn finish(&mut self) -> Vec<u8> {
        let out = encode(&self.ends, &self.body);
        self.ends.clear();
        self.body.clear();
        out
    }
}

/// The segment value of the records of `body` ending at `ends`.
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
    digest: &'a [u8; DIGEST_BYTES],
    /// What the digest covers: the count, the end table and the body.
    covered: &'a [u8],
    count: u32,
    ends: &'a [u8],
    body: &'a [u8],
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
}

impl<'a> Segment<'a> {
    /// Parses `bytes`, checking the count against the cap and every end against the body.
    pub fn parse(bytes: &'a [u8]) -> Result<Segment<'a>, SegmentError> {
        let Some((digest, covered)) = bytes.split_first_chunk::<DIGEST_BYTES>() else {
            return Err(SegmentError::Truncated {
                len: bytes.len() as u64,
                count: 0,
            });
        };
        let Some((count, rest)) = covered.split_first_chunk::<4>() else {
            return Err(SegmentError::Truncated {
                len: bytes.len() as u64,
                count: 0,
            });
        };
        let count = u32::from_le_bytes(*count);
        if count == 0 || count > SEGMENT_RECORDS_CAP {
            return Err(SegmentError::Count {
                count: u64::from(count),
            });
        }
        let table_len = 4 * count as usize;
        if rest.len() < table_len {
            return Err(SegmentError::Truncated {
                len: bytes.len() as u64,
                count: u64::from(count),
            });
        }
        let (ends, body) = rest.split_at(table_len);
        let segment = Segment {
            digest,
            covered,
            count,
            ends,
            body,
        };
        let mut start = 0u64;
        for index in 0..count {
            let end = u64::from(segment.end(index));
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

    /// Parses `bytes` as [`Self::parse`] does and checks the digest: `None` unless both hold.
    /// For a writer about to copy records into a new segment, since re-sealing damaged bytes
    /// under a fresh digest would hide the damage from every later check.
    pub fn parse_sound(bytes: &'a [u8]) -> Option<Segment<'a>> {
        let segment = Segment::parse(bytes).ok()?;
        segment.digest_error().is_none().then_some(segment)
    }

    /// `None` if the stored digest is that of the segment's bytes, else the mismatch. Costs one
    /// hash of the whole segment.
    pub fn digest_error(&self) -> Option<SegmentError> {
        let computed = segment_digest(self.covered);
        let stored = Digest(*self.digest);
        (computed != stored).then_some(SegmentError::Digest { stored, computed })
    }

    /// How many records it holds (at least 1).
    pub fn count(&self) -> u32 {
        self.count
    }

    fn end(&self, index: u32) -> u32 {
        let at = 4 * index as usize;
        u32::from_le_bytes(self.ends[at..at + 4].try_into().expect("4-byte slice"))
    }

    /// The stored bytes of record `index`, or `None` past the end.
    pub fn record(&self, index: u32) -> Option<&'a [u8]> {
        self.body_span(index).map(|span| &self.body[span])
    }

    /// Where record `index` lies within the bytes the segment was parsed from, or `None` past
    /// the end: lets a reader keep the bytes and drop the parsed view.
    pub fn record_span(&self, index: u32) -> Option<Range<usize>> {
        let body_at = DIGEST_BYTES + 4 + self.ends.len();
        self.body_span(index)
            .map(|span| span.start + body_at..span.end + body_at)
    }

    fn body_span(&self, index: u32) -> Option<Range<usize>> {
        if index >= self.count {
            return None;
        }
        let start = if index == 0 { 0 } else { self.end(index - 1) };
        Some(start as usize..self.end(index) as usize)
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
    fn records_round_trip_through_a_segment() {
        let bytes = build(&[b"one", b"", b"three"]);
        let segment = Segment::parse(&bytes).unwrap();
        assert_eq!(segment.count(), 3);
        assert_eq!(segment.record(0), Some(&b"one"[..]));
        assert_eq!(segment.record(1), Some(&b""[..]));
        assert_eq!(segment.record(2), Some(&b"three"[..]));
        assert_eq!(segment.record(3), None);
        assert_eq!(segment.digest_error(), None);
        for index in 0..3 {
            let span = segment.record_span(index).unwrap();
            assert_eq!(Some(&bytes[span]), segment.record(index));
        }
        assert_eq!(segment.record_span(3), None);
    }

    #[test]
    fn any_changed_byte_breaks_the_digest() {
        let bytes = build(&[b"one", b"two"]);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            if let Ok(segment) = Segment::parse(&damaged) {
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
    fn only_a_well_formed_segment_with_its_digest_parses_sound() {
        let stored = build(&[b"ab", b"cd"]);
        let sound = Segment::parse_sound(&stored).expect("a sound segment");
        assert_eq!(sound.record(1), Some(&b"cd"[..]));
        for at in 0..stored.len() {
            let mut damaged = stored.clone();
            damaged[at] ^= 0x01;
            assert!(Segment::parse_sound(&damaged).is_none(), "byte {at}");
        }
    }

    #[test]
    fn malformed_segments_are_refused() {
        let good = build(&[b"ab", b"cd"]);
        assert!(matches!(
            Segment::parse(&good[..35]),
            Err(SegmentError::Truncated { .. })
        ));
        assert!(matches!(
            Segment::parse(&[0; 36]),
            Err(SegmentError::Count { .. })
        ));
        assert!(matches!(
            Segment::parse(&good[..45]),
            Err(SegmentError::End { .. })
        ));
        let mut trailing = good.clone();
        trailing.push(0);
        assert!(matches!(
            Segment::parse(&trailing),
            Err(SegmentError::Trailing { extra: 1 })
        ));
        let mut backwards = good.clone();
        backwards[36..40].copy_from_slice(&3u32.to_le_bytes());
        backwards[40..44].copy_from_slice(&2u32.to_le_bytes());
        assert!(matches!(
            Segment::parse(&backwards),
            Err(SegmentError::End { index: 1, .. })
        ));
        let mut huge = vec![0; 32];
        huge.extend_from_slice(&(SEGMENT_RECORDS_CAP + 1).to_le_bytes());
        assert!(matches!(
            Segment::parse(&huge),
            Err(SegmentError::Count { .. })
        ));
    }
}
