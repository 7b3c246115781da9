//! Why a cut was refused, or a read reached below one.

use std::path::PathBuf;

use crate::hash::Digest;
use crate::record::Position;

/// A cut refused ([`crate::archive::Archives::archive_before`]), or a read of what a cut removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// A read of a record the log no longer holds: it is in the archive file named.
    #[error("position {position} is archived before {before} in {archive}")]
    Archived {
        /// The position asked for.
        position: Position,
        /// The log's first retained position.
        before: Position,
        /// The name of the archive file that holds it (the last cut's: earlier cuts wrote
        /// the records before theirs to archives of their own).
        archive: String,
    },
    /// A cut past the head: only records the log holds can be archived.
    #[error("cannot cut before {position}: the log holds {head} records")]
    PastHead {
        /// The cut asked for.
        position: Position,
        /// The head's next position.
        head: Position,
    },
    /// A cut that would not move the log's start forward.
    #[error("cannot cut before {position}: the log is already cut before {before}")]
    NotForward {
        /// The cut asked for.
        position: Position,
        /// Where the log starts now.
        before: Position,
    },
    /// A projection that is not at the head: its state at the cut cannot be taken.
    #[error("cannot cut: projection {projection} is behind the head")]
    Behind {
        /// The projection.
        projection: String,
    },
    /// A rebuild or replay of a projection the last cut took no snapshot of: its state
    /// before the cut is only in the archives.
    #[error(
        "projection {projection} has no snapshot at the cut before {before}: open the log with its archives (annals rebuild --archive FILE...) to replay it from them"
    )]
    NotInCut {
        /// The projection.
        projection: String,
        /// The cut.
        before: Position,
    },
    /// Archives given to bring a projection in at a cut log's start (`StoreOptions::archives`)
    /// that replay a projection the cut kept to another state than its cut record names: the
    /// records hash as the log keeps them, so the snapshot or the projection's rules differ.
    #[error(
        "replaying the archives, projection {projection} digests to {replayed} at {before}, where the cut names {named}"
    )]
    SnapshotDiffers {
        /// The projection.
        projection: String,
        /// The log's start.
        before: Position,
        /// What the cut record names.
        named: Digest,
        /// What the replay of the archives reached.
        replayed: Digest,
    },
    /// The archive's path names a file already: an archive is written to a new file, never
    /// over one (it may be an earlier cut's).
    #[error("{path}: the file exists; an archive is written to a new file")]
    ArchiveExists {
        /// The path given.
        path: PathBuf,
    },
    /// The archive's folder does not exist (or is no folder): the archive cannot be written.
    #[error("{folder}: no such folder; the archive is written into an existing folder")]
    NoFolder {
        /// The folder the archive path names.
        folder: PathBuf,
    },
    /// The archive path has no file name, or one that is not UTF-8.
    #[error("{path}: an archive needs a file name in UTF-8")]
    ArchiveName {
        /// The path given.
        path: PathBuf,
    },
    /// Archives given for a log that was never cut: none of them can be its.
    #[error("the log was never cut: it holds every record, and no archive belongs to it")]
    NeverCut,
    /// The archive files given do not cover the records the log cut, in order.
    #[error("the archives given do not hold position {expected} next (found {found:?})")]
    ArchiveGap {
        /// The next position the archives had to hold.
        expected: Position,
        /// Where the next archive given starts, if any is left.
        found: Option<Position>,
    },
    /// A record of an archive that is not the one the log's tree was built over.
    #[error("archived record {position} hashes to {found}, not {kept} as the log keeps")]
    ArchivedHash {
        /// The position.
        position: Position,
        /// The hash the archive's record has.
        found: Digest,
        /// The hash the log keeps for that position.
        kept: Digest,
    },
    /// A cut record whose bytes do not decode.
    #[error("the cut record at {position} does not decode: {problem}")]
    UndecodableCut {
        /// The record's position.
        position: Position,
        /// What is wrong.
        problem: &'static str,
    },
}
