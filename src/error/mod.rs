//! The one error type of the crate, [`Error`], and every layer's own error that it wraps: every
//! error type annals returns is named here, and the crate's root names only [`Error`],
//! [`ErrorKind`] and [`Result`].
//!
//! The errors are defined here, below every layer that returns them, so that this module
//! imports nothing above the stored record but the checkpoint format's own error (from
//! `tlog`, which imports no error of its own): a layer returns its own error (an
//! [`AppendError`], a [`StoreError`], a [`WriterError`]…), which its own module re-exports,
//! and `?` converts it into [`Error`] where a caller wants the one type.

mod append;
mod archive;
pub(crate) mod command;
mod consumer;
mod erasure;
mod journal;
mod kind;
mod open;
mod output_path;
mod projection;
#[cfg(feature = "jetstream")]
mod replication;
pub(crate) mod spelling;
mod storage;
mod store;
mod subscription;
mod table;
mod tiles;
mod writer;

use std::path::PathBuf;

pub use annals_format::export::ExportError;
pub use append::{AppendError, SealProblem};
pub use archive::ArchiveError;
pub use command::CommandProblem;
pub use consumer::ConsumerError;
pub use erasure::{ErasureError, SubjectProblem};
pub use journal::JournalError;
pub use kind::ErrorKind;
pub use open::{EntityProblem, NotALog, Unreadable};
pub use output_path::{FileKind, OutputPathError, StoreFile};
pub use projection::ProjectionError;
#[cfg(feature = "jetstream")]
pub use replication::{
    Damage, ForkProblem, NatsOperation, NatsProblem, RefusedMessage, ReplicationError, SeedProblem,
};
pub(crate) use spelling::grouped;
pub use storage::StorageError;
pub(crate) use store::WaitedTooLong;
pub use store::{GuardRefusal, PartialStep, StoreError};
pub use subscription::SubscriptionError;
pub use table::{PayloadProblem, RollupMoment, TableFault};
pub use tiles::{OtherLogProblem, TilesError};
pub use writer::WriterError;

// The format's errors, defined with the format (`annals-format`), named here too so that
// `annals::error` names every error type the crate returns.
pub use crate::record::limits::LimitError;
pub use crate::record::{HeaderProblem, RecordError, UnknownExpectedVersion};
pub use crate::sharing::UnknownSharing;
pub use annals_format::proof_file::ProofFileError;

use crate::hash::Digest;
use crate::record::Position;
use crate::record::problem::Problem;
pub use crate::record::problem::{MetaFault, MetaItem, StreamRunsFault};
pub use crate::sharing::Holder;
use crate::sharing::Sharing;
use crate::tlog::checkpoint::CheckpointError;

/// Everything that can go wrong in annals.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An append refused: a version mismatch, a conflict or a limit. Nothing was written.
    #[error(transparent)]
    Append(#[from] AppendError),
    /// A write the store refused (a reserved kind, a fenced guard). Nothing was written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file that cannot be opened as an annals log.
    #[error(transparent)]
    Open(#[from] OpenError),
    /// Stored data that fails its checks. Nothing of it is handed out.
    #[error("corrupt log at position {position}: {problem}")]
    Corrupt {
        /// The first position the problem concerns.
        position: Position,
        /// What is wrong.
        problem: Box<Problem>,
    },
    /// A stored value (a projection row, an index entry, a stream tail, the head, a Merkle
    /// node or a checkpoint) fails its checksum: the bytes under `key` in `table` are not
    /// what was written there. Nothing of it is handed out.
    #[error("corrupt log: the value under key {key} in table {table} fails its checksum")]
    CorruptValue {
        /// The redb table.
        table: String,
        /// The key, as text when it is printable, else as `0x` and hex.
        key: String,
    },
    /// The log's metadata (not any one record) is damaged: `item` is what, `fault` how.
    #[error("corrupt log metadata: {item} {fault}")]
    CorruptMeta {
        /// Which piece of the metadata.
        item: MetaItem,
        /// What is wrong with it.
        fault: MetaFault,
    },
    /// redb could not read the file's own structure (its pages, allocator state or table
    /// tree): it panicked on damaged bytes, and the store caught the panic at its boundary.
    /// The store that returned this should be dropped; reopening it reports the damage again.
    #[error("damaged file structure: redb could not read it ({panic})")]
    DamagedFile {
        /// redb's panic message, its own account of what it could not read.
        panic: String,
    },
    /// A projection table holds bytes that do not decode.
    #[error("corrupt projection table {table}: {fault}")]
    CorruptProjection {
        /// The table.
        table: String,
        /// What is wrong with it.
        fault: TableFault,
    },
    /// An event of a known kind whose payload does not decode.
    #[error("event {kind} (schema {schema}) does not decode: {problem}")]
    UndecodableEvent {
        /// The kind.
        kind: String,
        /// The payload schema version.
        schema: u16,
        /// Why.
        problem: PayloadProblem,
    },
    /// A command with an input no decision can be made on (an empty resource, a zero TTL).
    #[error("invalid command: {field}: {problem}")]
    InvalidCommand {
        /// The command's field.
        field: &'static str,
        /// What is wrong with it.
        problem: CommandProblem,
    },
    /// A projection registered wrongly (a duplicate name, a table outside its prefix), or one
    /// asked for by a name none has.
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    /// The async writer could not take a job or answer it, or its batch failed as a whole.
    #[error(transparent)]
    Writer(#[from] WriterError),
    /// A subscription could not read on.
    #[error(transparent)]
    Subscription(#[from] SubscriptionError),
    /// A consumer cannot resume where it stopped.
    #[error(transparent)]
    Consumer(#[from] ConsumerError),
    /// An append to a store opened read-only.
    #[error("the store is open read-only")]
    ReadOnly,
    /// A configured limit out of range.
    #[error("invalid configuration: {0}")]
    Config(#[from] crate::record::limits::LimitError),
    /// An audit request outside the log (a size past the head, an unknown entity).
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// A cut refused, or a read of records a cut archived.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The commit journal beside the log cannot be used as it is.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A checkpoint the log refuses to sign: it would contradict one it signed before.
    #[error(transparent)]
    Signing(#[from] SigningError),
    /// An export file refused, or one that does not continue the log it is imported into.
    #[error(transparent)]
    Export(Box<ExportError>),
    /// A personal append, a read of a personal payload or an erasure refused, or a key store
    /// that cannot be read.
    #[error(transparent)]
    Erasure(#[from] ErasureError),
    /// A path given for a file to write that is refused (one of the store's own files, a FIFO
    /// or device, a missing folder): nothing was written there.
    #[error(transparent)]
    OutputPath(#[from] OutputPathError),
    /// Replication through NATS JetStream refused or failed (the `jetstream` feature).
    #[cfg(feature = "jetstream")]
    #[error(transparent)]
    Replication(Box<ReplicationError>),
    /// The device holding the log is full: a write failed with "no space left on device"
    /// (ENOSPC). What was committed before the failed call stands; the call's own
    /// transaction did not commit. Once space is freed the log opens, catches up any
    /// projection left behind, and takes writes again (a store that hit this must be
    /// reopened: redb refuses further writes on a handle that saw a failed write).
    #[error("no space left on the device holding {path}: free some space and try again")]
    NoSpace {
        /// The log's path (or the storage backend's label).
        path: PathBuf,
    },
    /// The storage engine under the log failed ([`StorageError::io`] gives the file system's
    /// error under it, if any).
    #[error("storage: {0}")]
    Storage(StorageError),
    /// The file system failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

/// Why a file was not opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// No file at the path, where one was required.
    #[error("{path}: no such file")]
    Missing {
        /// The path.
        path: PathBuf,
    },
    /// The file is not an annals log (empty, not redb, or redb without annals tables).
    #[error("{path}: not an annals log: {reason}")]
    NotAnnalsLog {
        /// The path.
        path: PathBuf,
        /// What gave it away.
        reason: NotALog,
    },
    /// An annals log of a format version this build does not read.
    #[error(
        "{path}: annals format version {found} is not supported (this build reads {supported})"
    )]
    UnsupportedFormat {
        /// The path.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build reads.
        supported: u32,
    },
    /// A log of an earlier format, which this build reads only once it is upgraded (a
    /// writable open upgrades it in one transaction), opened read-only.
    #[error(
        "{path}: the log is format v{found}, which this build reads only once it is upgraded to \
         v{current}; open it writable once (`annals upgrade {path}`, or any write) and read it \
         again"
    )]
    NeedsUpgrade {
        /// The path.
        path: PathBuf,
        /// The version in the file.
        found: u32,
        /// The version this build writes.
        current: u32,
    },
    /// The file is a redb file that redb cannot open.
    #[error("{path}: unreadable: {reason}")]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// Why redb could not read it.
        reason: Unreadable,
    },
    /// Another process has the file open in a way this open cannot join.
    #[error("{path}: cannot open it in {wanted} mode: {holder}")]
    Held {
        /// The path.
        path: PathBuf,
        /// The mode this open asked for.
        wanted: Sharing,
        /// Who holds it, as far as the open could tell.
        holder: Holder,
    },
}

/// An audit request that the log cannot answer as asked.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuditError {
    /// A tree size past the head.
    #[error("size {size} is past the head: the log holds {head} records")]
    SizeBeyondHead {
        /// The size asked for.
        size: u64,
        /// The number of records.
        head: u64,
    },
    /// An inclusion proof of a position not in the tree.
    #[error("position {position} is not in the tree of size {size}")]
    PositionBeyondSize {
        /// The position asked for.
        position: Position,
        /// The tree size.
        size: u64,
    },
    /// A consistency proof between sizes that are not `0 < from_size ≤ size`.
    #[error("a consistency proof needs 0 < from size ≤ size, not {from_size} and {size}")]
    FromSize {
        /// The earlier size.
        from_size: u64,
        /// The later size.
        size: u64,
    },
    /// A range of positions outside the log.
    #[error("the range {from} .. {to} is not within the log's {head} records")]
    Range {
        /// The first position.
        from: Position,
        /// One past the last.
        to: Position,
        /// The number of records.
        head: u64,
    },
    /// An entity spec that names no entity.
    #[error("{spec:?} is not an entity: {reason}")]
    Entity {
        /// The spec given.
        spec: String,
        /// What is wrong with it.
        reason: EntityProblem,
    },
}

/// Why the log refuses to sign a checkpoint: signing it would give the world two checkpoints
/// of this log that contradict each other, which is what a transparency log must never do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SigningError {
    /// A checkpoint of a smaller tree than the last one signed.
    #[error(
        "the log last signed a checkpoint of size {signed}; it signs no smaller one (size \
         {size}): the checkpoints of a log only grow. Give --size {signed} or more, or keep \
         the checkpoint of size {size} you were given then"
    )]
    Behind {
        /// The size of the last checkpoint signed.
        signed: u64,
        /// The size asked for.
        size: u64,
    },
    /// The tree at the last signed size has another root than the one signed then: the log
    /// was rewritten (or replaced) since.
    #[error(
        "the log signed a checkpoint of size {size} with root {signed}, and its tree of size \
         {size} now has root {root}: the log is not the one that signed it (rewritten or \
         replaced since), and nothing more is signed for it"
    )]
    Diverged {
        /// The size of the last checkpoint signed.
        size: u64,
        /// The root signed then.
        signed: Digest,
        /// The root the log gives now.
        root: Digest,
    },
    /// A checkpoint that is not a valid note (an origin the format cannot carry).
    #[error("the checkpoint cannot be signed: {problem}")]
    Unsignable {
        /// Why.
        problem: CheckpointError,
    },
    /// A cosigned checkpoint to keep that does not open against the log's key.
    #[error("the checkpoint cannot be signed: the cosigned checkpoint does not open: {problem}")]
    CosignedUnopened {
        /// Why.
        problem: CheckpointError,
    },
    /// A key of another name than the origin the log signs as.
    #[error(
        "the log signs its checkpoints as {signed:?}, and this key is named {origin:?}: a log \
         has one origin, its signing key's name"
    )]
    Origin {
        /// The origin of the checkpoints signed before.
        signed: String,
        /// The key's name.
        origin: String,
    },
}

impl Error {
    /// [`Error::CorruptMeta`] of `item` with `fault`.
    pub(crate) fn corrupt_meta(item: MetaItem, fault: MetaFault) -> Error {
        Error::CorruptMeta { item, fault }
    }

    /// [`Error::CorruptMeta`]: `item` does not decode, for `reason`.
    pub(crate) fn undecodable_meta(item: MetaItem, reason: impl std::fmt::Display) -> Error {
        Error::CorruptMeta {
            item,
            fault: MetaFault::Undecodable {
                reason: reason.to_string(),
            },
        }
    }
}

impl Error {
    /// This error with a full disk named as its cause: an I/O failure with ENOSPC, directly
    /// or through redb, becomes [`Error::NoSpace`] naming `path`; anything else is unchanged.
    pub fn no_space_at(self, path: &std::path::Path) -> Error {
        let full = |error: &std::io::Error| error.kind() == std::io::ErrorKind::StorageFull;
        match &self {
            Error::Io(error) | Error::Storage(StorageError(redb::Error::Io(error)))
                if full(error) =>
            {
                Error::NoSpace {
                    path: path.to_path_buf(),
                }
            }
            _ => self,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! from_redb {
    ($($kind:ty),*) => {$(
        impl From<$kind> for Error {
            fn from(error: $kind) -> Self {
                Error::from(redb::Error::from(error))
            }
        }
    )*};
}
from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

/// Runs `work`, which reads or writes through redb, turning a panic of redb's (on a damaged
/// page, say) into [`Error::DamagedFile`]. Every public call of the store that touches the
/// file goes through this or `store::open::open_redb`, and so does every record a
/// `Snapshot` iterator reads; no panic of redb's escapes them.
pub(crate) fn guarded<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    caught(work).unwrap_or_else(|payload| {
        let panic = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into());
        Err(Error::DamagedFile { panic })
    })
}

thread_local! {
    /// How many [`caught`] calls the thread is inside.
    static CATCHING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// [`std::panic::catch_unwind`] that marks the thread as catching while `work` runs, so that a
/// panic hook can tell a panic that becomes a typed error ([`panic_is_caught`]) from a bug.
pub(crate) fn caught<T>(work: impl FnOnce() -> T) -> std::thread::Result<T> {
    CATCHING.with(|depth| depth.set(depth.get() + 1));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
    CATCHING.with(|depth| depth.set(depth.get() - 1));
    result
}

/// Whether a panic on this thread now would be caught by the store (and so reported as a
/// typed error): the CLI's panic hook stays quiet for those, and only those.
pub fn panic_is_caught() -> bool {
    CATCHING.with(|depth| depth.get() > 0)
}
