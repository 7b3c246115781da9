//! Why tiles were not written ([`crate::maintenance::Tiles::write`]): the directory's state, or the log's.

use std::path::PathBuf;

use crate::hash::Digest;
use crate::tlog::checkpoint::CheckpointError;

/// Why tiles were not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TilesError {
    /// A file or folder of the directory could not be read or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The directory holds tiles but no checkpoint: not one this log's tiles were written to.
    #[error(
        "{}: it holds tiles but no checkpoint, so they cannot be told to be this log's: give an \
         empty or new directory",
        dir.display()
    )]
    Foreign {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory's checkpoint is not one of this log's key.
    #[error(
        "{}: its checkpoint is not signed by this log's key: {problem}",
        dir.display()
    )]
    OtherLog {
        /// The directory.
        dir: PathBuf,
        /// Why.
        problem: OtherLogProblem,
    },
    /// The directory serves a tree this log does not extend: another history under the same key.
    #[error(
        "{}: it serves a tree of size {size} with root {served}; this log's tree of size {size} \
         has root {root}: the directory is of another history (a fork), and nothing was written",
        dir.display()
    )]
    Forked {
        /// The directory.
        dir: PathBuf,
        /// The size it serves.
        size: u64,
        /// The root it serves.
        served: Digest,
        /// The log's root at that size.
        root: Digest,
    },
    /// The directory serves a larger tree than the log has.
    #[error(
        "{}: it serves a tree of size {size}, larger than this log's {head} records: the log is \
         behind what was published",
        dir.display()
    )]
    Ahead {
        /// The directory.
        dir: PathBuf,
        /// The size it serves.
        size: u64,
        /// The log's head.
        head: u64,
    },
    /// The log refused or failed.
    #[error(transparent)]
    Store(#[from] crate::Error),
}

/// Why a tiles directory's checkpoint is not one of this log's ([`TilesError::OtherLog`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OtherLogProblem {
    /// The checkpoint file is not UTF-8.
    #[error("it is not UTF-8")]
    NotUtf8,
    /// It does not parse, or opens with no signature of this log's key.
    #[error("{0}")]
    Unopened(CheckpointError),
    /// It is signed by this log's key but names another origin.
    #[error("it is of origin {origin:?}")]
    Origin {
        /// The origin it names.
        origin: String,
    },
}
