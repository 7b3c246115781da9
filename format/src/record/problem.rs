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
    #[error("stream index of {stream:?}: {fault}")]
    StreamIndex {
        /// The stream (empty when the fault is the index's as a whole).
        stream: String,
        /// How it disagrees.
        fault: StreamIndexFault,
    },
    /// The idempotency index disagrees with the records.
    #[error("idempotency index: {fault}")]
    Idempotency {
        /// How it disagrees.
        fault: IdempotencyFault,
    },
    /// The stored Merkle tree disagrees with the records.
    #[error("merkle tree: {fault}")]
    Merkle {
        /// How it disagrees.
        fault: MerkleFault,
    },
    /// A cut the log made disagrees with what it keeps, or a record claims to be a cut the
    /// log did not make.
    #[error("cut: {fault}")]
    Cut {
        /// How.
        fault: CutFault,
    },
    /// A projection's checkpoint is not at the head, or was built by another version.
    #[error(
        "projection {projection}: checkpoint is {}, expected version {version} through position {head}",
        found.as_ref().map_or_else(|| "missing".to_owned(), ToString::to_string)
    )]
    Checkpoint {
        /// The projection.
        projection: String,
        /// The checkpoint stored, `None` if there is none.
        found: Option<CheckpointMark>,
        /// The projection's version, which the checkpoint should have.
        version: u32,
        /// The head, which the checkpoint should not be past.
        head: Position,
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
    #[error(
        "projection {projection}, table {table}, key {key_hex}: {difference}{}",
        replay_end.map_or_else(String::new, |end| format!(
            " (against a replay of the first {end} records, where its checkpoint stands)"
        ))
    )]
    Projection {
        /// The projection.
        projection: String,
        /// The table.
        table: String,
        /// The first differing key, in hex.
        key_hex: String,
        /// What differs there.
        difference: RowDifference,
        /// Where the replay compared against stopped, when the projection's checkpoint stands
        /// behind the head (`None`: a replay of the whole log).
        replay_end: Option<Position>,
    },
}

/// A projection's checkpoint as stored: the version that built its tables and the next
/// position it has to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointMark {
    /// The projection version that built the tables.
    pub version: u32,
    /// The next position to apply: every record before it is applied.
    pub next: Position,
}

impl fmt::Display for CheckpointMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "version {} through position {}", self.version, self.next)
    }
}

/// How a live projection table's row differs from a replay's, at the first key that differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RowDifference {
    /// The live table has a row the replay does not.
    NotReplayed,
    /// The replay has a row the live table lacks.
    MissingLive,
    /// Both have the row, with other value bytes.
    Value,
}

impl fmt::Display for RowDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RowDifference::NotReplayed => "a row the replay does not have",
            RowDifference::MissingLive => "a row missing from the live table",
            RowDifference::Value => "other value bytes than the replay's",
        })
    }
}

/// How the stream index disagrees with the records, as [`Problem::StreamIndex`] names it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamIndexFault {
    /// A read through the index found, where it puts the stream's `version`, a record of
    /// `found_stream` at `found_version`.
    Misplaced {
        /// The version the index puts there.
        version: StreamVersion,
        /// The stream of the record there.
        found_stream: String,
        /// The version of the record there.
        found_version: StreamVersion,
    },
    /// A subscription to the stream expected its `expected` version and the log gave a record
    /// of `found_stream` at `found_version`.
    Subscription {
        /// The version the subscription expected next.
        expected: StreamVersion,
        /// The stream of the record it was given.
        found_stream: String,
        /// The version of the record it was given.
        found_version: StreamVersion,
    },
    /// The index counts `indexed` streams, the records have `records`.
    Count {
        /// Streams indexed.
        indexed: u64,
        /// Streams the records have.
        records: u64,
    },
    /// The index has runs of a stream no record belongs to.
    Stray,
    /// The stream's runs are not where its records lie (found by their fingerprint).
    Astray,
    /// A run of `count` records starting at `first_version`, where the runs before end at
    /// `expected`.
    RunStart {
        /// The run's length.
        count: u64,
        /// The version it starts at.
        first_version: StreamVersion,
        /// The version it should start at.
        expected: StreamVersion,
    },
    /// A run that puts `version` at `position`, whose record is not the stream's at that
    /// version.
    RunEnd {
        /// The version.
        version: StreamVersion,
        /// The position the run puts it at.
        position: Position,
    },
    /// A piece of the index that is damaged.
    Meta {
        /// The piece.
        item: MetaItem,
        /// What is wrong with it.
        fault: MetaFault,
    },
    /// The runs cover `covered` versions, the stream has `count` records.
    Coverage {
        /// Versions the runs cover.
        covered: u64,
        /// Records of the stream.
        count: u64,
    },
}

impl fmt::Display for StreamIndexFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamIndexFault::Misplaced {
                version,
                found_stream,
                found_version,
            } => write!(
                f,
                "the index puts version {version} here, the record is {found_stream:?} version {found_version}"
            ),
            StreamIndexFault::Subscription {
                expected,
                found_stream,
                found_version,
            } => write!(
                f,
                "a subscription expected version {expected}, the log gave {found_stream:?} version {found_version}"
            ),
            StreamIndexFault::Count { indexed, records } => {
                write!(
                    f,
                    "{indexed} streams are indexed, the records have {records}"
                )
            }
            StreamIndexFault::Stray => {
                f.write_str("the index has runs of a stream no record belongs to")
            }
            StreamIndexFault::Astray => f.write_str("its runs are not where its records lie"),
            StreamIndexFault::RunStart {
                count,
                first_version,
                expected,
            } => write!(
                f,
                "a run of {count} starts at version {first_version}, expected one at {expected}"
            ),
            StreamIndexFault::RunEnd { version, position } => {
                write!(f, "the index puts version {version} at position {position}")
            }
            StreamIndexFault::Meta { item, fault } => write!(f, "{item} {fault}"),
            StreamIndexFault::Coverage { covered, count } => {
                write!(f, "the runs cover {covered} versions, the log has {count}")
            }
        }
    }
}

/// How the idempotency index disagrees with the records, as [`Problem::Idempotency`] names
/// it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdempotencyFault {
    /// A record's key that is not indexed.
    NotIndexed {
        /// The key.
        key: String,
    },
    /// A key whose entry fails its checksum.
    Checksum {
        /// The key.
        key: String,
    },
    /// A key indexed at another position or with other content than the record's.
    Mismatch {
        /// The key.
        key: String,
        /// The position the index gives.
        indexed: Position,
        /// The content hash the index gives.
        content: Digest,
        /// The content hash of the record at the key's position.
        computed: Digest,
    },
    /// The index holds `indexed` keys, the records carry `carried`.
    Count {
        /// Keys indexed.
        indexed: u64,
        /// Keys the records carry.
        carried: u64,
    },
}

impl fmt::Display for IdempotencyFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdempotencyFault::NotIndexed { key } => write!(f, "key {key:?} is not indexed"),
            IdempotencyFault::Checksum { key } => {
                write!(f, "the entry of key {key:?} fails its checksum")
            }
            IdempotencyFault::Mismatch {
                key,
                indexed,
                content,
                computed,
            } => write!(
                f,
                "key {key:?} is indexed at position {indexed} with content {content}, the record here has content {computed}"
            ),
            IdempotencyFault::Count { indexed, carried } => {
                write!(f, "{indexed} keys are indexed, the records carry {carried}")
            }
        }
    }
}

/// How the stored Merkle tree disagrees with the records, as [`Problem::Merkle`] names it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MerkleFault {
    /// A stored node that a read needs is missing.
    Missing {
        /// The node's level (0: leaves).
        level: u8,
        /// Its index within the level.
        index: u64,
    },
    /// A stored node (or its absence) that is not the records' node.
    Node {
        /// The node's level (0: leaves).
        level: u8,
        /// Its index within the level.
        index: u64,
        /// The node stored, `None` if it is missing.
        stored: Option<Digest>,
        /// The node the records give.
        computed: Digest,
    },
    /// The frontier stored with the head is damaged.
    Meta {
        /// The piece of metadata.
        item: MetaItem,
        /// What is wrong with it.
        fault: MetaFault,
    },
    /// The stored frontier gives another root than the records.
    Frontier {
        /// The root of the stored frontier.
        stored: Digest,
        /// The root of the records' tree.
        computed: Digest,
    },
    /// Another number of stored nodes than a log of `size` records has.
    NodeCount {
        /// Nodes stored.
        stored: u64,
        /// The log's size.
        size: u64,
        /// Nodes a log of that size stores.
        expected: u64,
    },
}

impl fmt::Display for MerkleFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MerkleFault::Missing { level, index } => {
                write!(
                    f,
                    "the tree node at level {level}, index {index} is missing"
                )
            }
            MerkleFault::Node {
                level,
                index,
                stored,
                computed,
            } => {
                let found = stored.map_or_else(|| "missing".to_owned(), |d| d.to_hex());
                write!(
                    f,
                    "the node at level {level}, index {index} is {found}, the records give {computed}"
                )
            }
            MerkleFault::Meta { item, fault } => write!(f, "{item} {fault}"),
            MerkleFault::Frontier { stored, computed } => write!(
                f,
                "the stored frontier gives root {stored}, the records give {computed}"
            ),
            MerkleFault::NodeCount {
                stored,
                size,
                expected,
            } => write!(
                f,
                "{stored} tree nodes are stored, a log of {size} records has {expected}"
            ),
        }
    }
}

/// A piece of the log's metadata (or of a witness's state log), as `Error::CorruptMeta`
/// (and a [`Problem`] of an index) names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaItem {
    /// The head: the next position, the last record's hash and the Merkle frontier.
    Head,
    /// The number of streams.
    StreamCount,
    /// The format version.
    FormatVersion,
    /// How the segments store their records.
    RecordLayout,
    /// The Merkle frontier the head carries.
    MerkleFrontier,
    /// The stream index: of one stream, or as a whole.
    StreamIndex {
        /// The stream, when the fault is one stream's.
        stream: Option<String>,
    },
    /// The last checkpoint the log signed.
    SignedCheckpoint,
    /// The cosigned checkpoint the log keeps.
    CosignedCheckpoint,
    /// A witness's state record.
    WitnessRecord {
        /// Its position in the witness's log.
        position: u64,
    },
    /// A stream of a witness's state log.
    WitnessStream {
        /// The stream.
        stream: String,
    },
}

impl std::fmt::Display for MetaItem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaItem::Head => f.write_str("the head"),
            MetaItem::StreamCount => f.write_str("the stream count"),
            MetaItem::FormatVersion => f.write_str("the format version"),
            MetaItem::RecordLayout => f.write_str("the record layout"),
            MetaItem::MerkleFrontier => f.write_str("the Merkle frontier"),
            MetaItem::StreamIndex {
                stream: Some(stream),
            } => {
                write!(f, "the stream index of {stream:?}")
            }
            MetaItem::StreamIndex { stream: None } => f.write_str("the stream index"),
            MetaItem::SignedCheckpoint => f.write_str("the last signed checkpoint"),
            MetaItem::CosignedCheckpoint => f.write_str("the cosigned checkpoint kept"),
            MetaItem::WitnessRecord { position } => {
                write!(f, "the witness's record at position {position}")
            }
            MetaItem::WitnessStream { stream } => write!(f, "the witness's stream {stream:?}"),
        }
    }
}

/// What is wrong with a [`MetaItem`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetaFault {
    /// It is not there.
    Missing,
    /// It has `found` bytes where its layout has `expected`.
    WrongLength {
        /// Its length.
        found: usize,
        /// The length it must have.
        expected: usize,
    },
    /// It has `found` bytes, fewer than the `least` its layout needs.
    TooShort {
        /// Its length.
        found: usize,
        /// The least it must have.
        least: usize,
    },
    /// It holds `value`, which this build does not know.
    Unknown {
        /// The value.
        value: u64,
    },
    /// It counts `found` where the rest of the metadata counts `expected`.
    Miscounted {
        /// What it counts.
        found: u64,
        /// What the rest counts.
        expected: u64,
    },
    /// It does not decode; `reason` is the decoder's own account.
    Undecodable {
        /// Why, in the decoder's words.
        reason: String,
    },
    /// A stream's runs (its tail or an archived block of the stream index) do not hold.
    StreamRuns(StreamRunsFault),
}

/// What is wrong with a stream's runs of positions ([`MetaFault::StreamRuns`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamRunsFault {
    /// The last run ends past the position where the next records go.
    EndsPastNext {
        /// One past the last run's last position.
        end: u64,
        /// Where the next records go.
        next: u64,
    },
    /// `count` more records after `version` would pass 2^64.
    VersionOverflow {
        /// The stream's version before them.
        version: u64,
        /// The records to add.
        count: u64,
    },
    /// A block whose bytes do not read as 1 to `most` runs.
    Malformed {
        /// The block's length in bytes.
        bytes: usize,
        /// The most runs a block holds.
        most: usize,
    },
    /// A run of no record, or one whose positions or versions pass 2^64.
    RunOutOfRange {
        /// Its records.
        count: u64,
        /// Positions between the run before's end and its first.
        gap: u64,
        /// The run before's end.
        after: u64,
        /// Its first version.
        version: u64,
    },
}

impl std::fmt::Display for StreamRunsFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamRunsFault::EndsPastNext { end, next } => write!(
                f,
                "the tail's last run ends at position {end}, past position {next} where the next \
                 records go"
            ),
            StreamRunsFault::VersionOverflow { version, count } => {
                write!(f, "{count} records after version {version} would pass 2^64")
            }
            StreamRunsFault::Malformed { bytes, most } => write!(
                f,
                "a block of {bytes} bytes that does not read as 1 to {most} runs"
            ),
            StreamRunsFault::RunOutOfRange {
                count,
                gap,
                after,
                version,
            } => write!(
                f,
                "a run of {count} records {gap} positions after {after}, from version {version}"
            ),
        }
    }
}

impl std::fmt::Display for MetaFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MetaFault::Missing => f.write_str("is missing"),
            MetaFault::WrongLength { found, expected } => {
                write!(f, "is {found} bytes, not {expected}")
            }
            MetaFault::TooShort { found, least } => {
                write!(f, "is {found} bytes, fewer than {least}")
            }
            MetaFault::Unknown { value } => {
                write!(f, "is {value}, which this build does not know")
            }
            MetaFault::Miscounted { found, expected } => {
                write!(f, "counts {found} where the log counts {expected}")
            }
            MetaFault::Undecodable { reason } => write!(f, "does not decode: {reason}"),
            MetaFault::StreamRuns(fault) => write!(f, "does not decode: {fault}"),
        }
    }
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

/// How a cut disagrees with the log, as [`Problem::Cut`] names it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CutFault {
    /// A record of the cut kind that no cut of this log wrote.
    #[error("the record claims to be a cut, and the log made no cut here")]
    NotMade,
    /// A cut record whose payload is not the cut the log keeps under its position.
    #[error("the record's payload is not the cut the log keeps for it")]
    Differs,
    /// A cut the log keeps whose record is not in the log where it says.
    #[error("the log keeps a cut whose record at {record} is missing")]
    RecordMissing {
        /// Where its record should be.
        record: Position,
    },
    /// A record still in the log below its start whose hash is not the one kept for it.
    #[error("the record hashes to {found}, the log keeps {kept} for it")]
    Kept {
        /// The hash kept.
        kept: Digest,
        /// The record's.
        found: Digest,
    },
    /// An archived record a projection's rows point at, which the cut did not keep.
    #[error(
        "projection {projection} reads the archived record at {position}, which the log did not keep"
    )]
    NotKept {
        /// The projection.
        projection: String,
        /// The record's position.
        position: Position,
    },
    /// The chain's anchor the cut names is not the hash kept for the last archived record.
    #[error("the cut's anchor is {anchor}, but the last archived record hashes to {kept}")]
    Anchor {
        /// What the cut names.
        anchor: Digest,
        /// The hash kept.
        kept: Digest,
    },
    /// The snapshot of a projection's tables at the cut is not what the cut record names.
    #[error("the snapshot of projection {projection} digests to {found}, the cut names {named}")]
    Snapshot {
        /// The projection.
        projection: String,
        /// The digest the cut record names.
        named: Digest,
        /// The snapshot's digest.
        found: Digest,
    },
    /// The archives replayed reach another state at a cut than the cut names.
    #[error(
        "replaying the archives, projection {projection} digests to {replayed} at {before}, the cut names {named}"
    )]
    Replayed {
        /// The cut's first retained position.
        before: Position,
        /// The projection.
        projection: String,
        /// What the cut names.
        named: Digest,
        /// What the replay reached.
        replayed: Digest,
    },
}
