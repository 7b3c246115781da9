//! Why a commit journal could not be read, recovered or written.

use std::path::PathBuf;

use crate::hash::Digest;
use crate::record::Position;

/// A commit journal (`schema/FORMAT.md` 3.15) that cannot be used as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// The file beside the log under the journal's name is not a journal: its first bytes
    /// are not the journal's header. It is left as it is.
    #[error("{path} is not an annals commit journal: it does not begin with the journal's header")]
    NotAJournal {
        /// The file.
        path: PathBuf,
    },
    /// A journal of a format version this build does not know.
    #[error("{path} is a commit journal of version {found}; this build reads version {supported}")]
    Version {
        /// The file.
        path: PathBuf,
        /// The version its header names.
        found: u16,
        /// The version this build reads and writes.
        supported: u16,
    },
    /// The frames stop (a frame that fails its check, a length out of range, no frame where
    /// one should begin, a damaged header) although a whole frame follows: not the torn end
    /// of an interrupted commit (which is always last) but damage to a commit that was
    /// synced. The journal is left as it is.
    #[error(
        "{path}: the frame at byte {offset} is damaged ({problem}) and a whole frame follows it at byte {next}: a synced commit is damaged, so the log is not opened; the journal is left as it is"
    )]
    Damaged {
        /// The file.
        path: PathBuf,
        /// Where the damaged frame begins (0: the header).
        offset: u64,
        /// Where the first whole frame after it begins.
        next: u64,
        /// What is wrong with it.
        problem: String,
    },
    /// A frame whose records do not continue the log where they claim to: the journal belongs
    /// to another log, or to another history of this one.
    #[error(
        "{path}: the frame at byte {offset} holds positions {first}..{end}, which do not continue this log (its head is {head}, hash {head_hash})"
    )]
    Diverged {
        /// The file.
        path: PathBuf,
        /// Where the frame begins.
        offset: u64,
        /// Its first position.
        first: Position,
        /// Its end (one past its last position).
        end: Position,
        /// The log's head when the frame was checked.
        head: Position,
        /// The hash of the log's last record.
        head_hash: Digest,
    },
    /// The journal's name could not be opened or created as the store's own journal: a
    /// symbolic link, a FIFO or a device there, or the file system's refusal (permissions, a
    /// missing folder), which the reason gives.
    #[error("{path} cannot be used as the log's commit journal: {reason}")]
    Unusable {
        /// The journal's name.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A reader beside a journaling writer in another process could not read the journal's
    /// synced frames whole: the writer drained and emptied it during each of its attempts (or
    /// rewrote its header), which a writer does about once a second.
    #[error(
        "{path} was emptied or rewritten by its writer during each of {attempts} reads of its synced frames"
    )]
    Unsettled {
        /// The journal.
        path: PathBuf,
        /// The reads tried.
        attempts: u32,
    },
    /// An earlier failure left the journal's end unknown (a failed write could not be taken
    /// back): this store refuses further commits; reopening recovers the journal.
    #[error("the commit journal {path} failed earlier and its end is unknown: reopen the store")]
    Poisoned {
        /// The journal.
        path: PathBuf,
    },
}
