//! Why an export file was refused.

use std::io;
use std::path::PathBuf;

use crate::hash::Digest;
use crate::record::{Position, RecordError, SealProblem};

/// Why an export file was refused. Positions name the first record concerned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The file does not start with [`EXPORT_MAGIC`](crate::export::EXPORT_MAGIC).
    #[error("not an annals export file")]
    NotAnExport,
    /// An export file of a format version this build does not read.
    #[error("export format version {found} is not supported (this build reads {supported})")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// An export file of version 1, written before log format v4: its frontier and root are
    /// hashes of the blake3 tree, which this build does not keep.
    #[error(
        "export format version 1 was written by annals before log format v4: its Merkle \
         frontier and root are of the blake3 tree, and this build keeps RFC 6962's SHA-256 \
         tree, so they cannot be checked here; import it with the build that wrote it, then \
         open that log with this build (which upgrades its tree) and export it again"
    )]
    EarlierTree,
    /// The header contradicts itself (a range that ends before it starts).
    #[error("bad header: {problem}")]
    Header {
        /// What is wrong.
        problem: ExportHeaderProblem,
    },
    /// The first record, link, length or summary that is wrong; nothing from it on is trusted.
    #[error("damaged at position {position}: {problem}")]
    Damaged {
        /// The first position concerned (the range's end for the trailer and the root).
        position: Position,
        /// What is wrong (boxed: it can name two digests, and the error travels in every
        /// `Result` of the reader).
        problem: Box<ExportDamage>,
    },
    /// The file is sound but does not continue the log it is imported into.
    #[error("the export does not continue this log: {problem}")]
    Mismatch {
        /// How it differs (boxed, as [`ExportError::Damaged`]'s problem).
        problem: Box<ExportMismatch>,
    },
    /// Reading or writing the file failed.
    #[error("export file: {0}")]
    Io(#[from] io::Error),
}

impl ExportError {
    /// The position a damaged file is refused at, if the refusal names one.
    pub fn position(&self) -> Option<Position> {
        match self {
            ExportError::Damaged { position, .. } => Some(*position),
            _ => None,
        }
    }
}

/// What is wrong with an export file's header ([`ExportError::Header`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportHeaderProblem {
    /// The file ends before the header does.
    #[error("the file ends inside the header")]
    Truncated,
    /// The range ends before it starts.
    #[error("the range ends at {to}, before its start {from}")]
    Range {
        /// The range's first position.
        from: Position,
        /// The position after its last record.
        to: Position,
    },
    /// The Merkle frontier is not the one a tree of the range's start has.
    #[error("the frontier does not fit the range's start")]
    Frontier,
}

/// What is wrong at a position of an export file ([`ExportError::Damaged`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportDamage {
    /// The file ends before the record's length.
    #[error("the file ends before this record")]
    EndsBeforeRecord,
    /// A record length outside what a stored record can be.
    #[error("a stored record of {bytes} bytes, outside {min} ..= {max}")]
    RecordLength {
        /// The length given.
        bytes: u64,
        /// The smallest stored record (its hash alone).
        min: u64,
        /// The largest stored record.
        max: u64,
    },
    /// The file ends inside the record.
    #[error("the file ends {read} bytes into this record of {bytes}")]
    EndsInsideRecord {
        /// Bytes of it the file holds.
        read: u64,
        /// Its length.
        bytes: u64,
    },
    /// The record's bytes are not a sound record at its position.
    #[error("{0}")]
    Record(RecordError),
    /// The record does not chain from the one before it.
    #[error("prev is {prev}, but the record before hashes to {before}")]
    Prev {
        /// The record's `prev`.
        prev: Digest,
        /// The hash of the record before it.
        before: Digest,
    },
    /// The reader was finished before the last record of the range was read.
    #[error("finished before the end of the range")]
    Unfinished,
    /// The last record's hash is not the header's head hash.
    #[error("the records end at head hash {records}, the header says {header}")]
    Head {
        /// The last record's hash.
        records: Digest,
        /// The header's head hash.
        header: Digest,
    },
    /// The records' Merkle root is not the header's.
    #[error("the records give root {records}, the header says {header}")]
    Root {
        /// The root the records make.
        records: Digest,
        /// The header's root.
        header: Digest,
    },
    /// The file ends before its trailer.
    #[error("the file ends before its trailer")]
    EndsBeforeTrailer,
    /// The trailer does not repeat the header's size, head hash and root.
    #[error("the trailer does not repeat the header's end")]
    Trailer,
    /// Bytes after the trailer.
    #[error("bytes follow the trailer")]
    AfterTrailer,
    /// A sound record that the log cannot take verbatim.
    #[error("{0}")]
    Unsealable(SealProblem),
}

/// How a sound export file fails to continue the log it is imported into
/// ([`ExportError::Mismatch`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportMismatch {
    /// An export that does not start at position 0, imported as a new log.
    #[error("it starts at position {from}; import it into the log it continues")]
    NotFromStart {
        /// Where it starts.
        from: Position,
    },
    /// A log was created at the target while the import built its own.
    #[error("{} appeared while the import was building it; import into it again", .path.display())]
    Appeared {
        /// The target.
        path: PathBuf,
    },
    /// The file is not the one checked before the import began.
    #[error("the file changed since it was checked")]
    FileChanged,
    /// The log the import made does not end where the export does.
    #[error(
        "the import ends at {next} / {head} with root {root}, the export at {to} / {export_head} \
         with root {export_root}"
    )]
    End {
        /// The log's next position after the import.
        next: Position,
        /// Its head hash.
        head: Digest,
        /// Its Merkle root.
        root: Digest,
        /// The position after the export's last record.
        to: Position,
        /// The export's head hash.
        export_head: Digest,
        /// The export's root.
        export_root: Digest,
    },
    /// The log's head is not where the export starts.
    #[error("the log's head is {next} / {head}, the export starts at {from} / {prev}")]
    Start {
        /// The log's next position.
        next: Position,
        /// Its head hash.
        head: Digest,
        /// The export's first position.
        from: Position,
        /// The hash the export's first record chains from.
        prev: Digest,
    },
    /// The log's Merkle tree at the export's start is not the export's frontier.
    #[error("the log's Merkle tree differs from the export's start")]
    Frontier,
}
