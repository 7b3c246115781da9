//! What is wrong with stored data: the [`Problem`] a read refuses a record for, or that
//! `verify` finds, and the [`Finding`] that places it in the log.
//!
//! It lives with the record, below the log, because the log's reads raise it and the audit
//! reports it; neither layer may import the other's. Like the rest of `record`, it does no
//! I/O.

use std::fmt;

use crate::hash::Digest;
use crate::record::segment::SegmentError;
use crate::record::{Position, RecordError, StreamVersion};

/// What verification found wrong, or what made a read refuse a record.
///
/// Projection problems carry the projection, the table and the first key that differs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    /// The stored record fails its own checks (decoding, header hash, payload hash, position).
    #[error("{0}")]
    Record(RecordError),
    /// The segment holding the record is malformed.
    #[error("malformed segment: {0}")]
    Segment(SegmentError),
    /// A position below the head with no record.
    #[error("no record is stored at this position")]
    Missing,
    /// Segments that leave a gap or overlap.
    #[error("expected the segment starting at position {expected}, found one starting at {found}")]
    Gap {
        /// The position the next segment should start at.
        expected: Position,
        /// Where it starts.
        found: Position,
    },
    /// A scan's segments that do not tile the log: the segment it read next (holding
    /// positions `first..end`) does not continue where the one before ended, or lies past the
    /// head. The finding's position is the first one the scan needed and did not find there.
    #[error(
        "the segments do not tile the log: the next segment read holds positions {first}..{end}"
    )]
    OutOfPlace {
        /// The first position the segment holds, its key.
        first: Position,
        /// The position after its last record.
        end: Position,
    },
    /// A `prev` that is not the hash of the record before.
    #[error("prev is {found}, but the record before hashes to {expected}")]
    Prev {
        /// The hash of the record before.
        expected: Digest,
        /// The `prev` stored.
        found: Digest,
    },
    /// A stream version out of sequence.
    #[error("stream {stream:?} expects version {expected} here, the record has version {found}")]
    StreamVersion {
        /// The stream.
        stream: String,
        /// The version it should have.
        expected: StreamVersion,
        /// The version it has.
        found: StreamVersion,
    },
    /// The stored head differs from the records.
    #[error("the stored head is {stored_next} / {stored_hash}, the records end at {next} / {hash}")]
    Head {
        /// Next position stored.
        stored_next: Position,
        /// Head hash stored.
        stored_hash: Digest,
        /// Next position of the records.
        next: Position,
        /// Hash of the last record.
        hash: Digest,
    },
    /// The stream index disagrees with the records.
    #[error("stream index of {stream:?}: {detail}")]
    StreamIndex {
        /// The stream.
        stream: String,
        /// How it disagrees.
        detail: String,
    },
    /// The idempotency index disagrees with the records.
    #[error("idempotency index: {detail}")]
    Idempotency {
        /// How it disagrees.
        detail: String,
    },
    /// The stored Merkle tree disagrees with the records.
    #[error("merkle tree: {detail}")]
    Merkle {
        /// How it disagrees.
        detail: String,
    },
    /// A projection's checkpoint is not at the head, or was built by another version.
    #[error("projection {projection}: {detail}")]
    Checkpoint {
        /// The projection.
        projection: String,
        /// How the checkpoint is off.
        detail: String,
    },
    /// A record whose domain event breaks a rule of its projection (found by the replay): an
    /// event no command emits, so the log was written around the domain's decisions.
    #[error("{kind} breaks the {projection} rule {rule}: {detail}")]
    Invariant {
        /// The record that breaks it (the finding's position).
        position: Position,
        /// The projection whose rule is broken.
        projection: String,
        /// The record's kind.
        kind: String,
        /// The rule, as `schema/EVENTS.md` names it.
        rule: &'static str,
        /// How the record breaks it.
        detail: String,
    },
    /// A projection's live tables differ from a fresh replay of the log.
    #[error("projection {projection}, table {table}, key {key_hex}: {detail}")]
    Projection {
        /// The projection.
        projection: String,
        /// The table.
        table: String,
        /// The first differing key, in hex.
        key_hex: String,
        /// What differs.
        detail: String,
    },
}

/// Where verification found a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The first position concerned; for index problems, the head.
    pub position: Position,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "position {}: {}", self.position, self.problem)
    }
}
