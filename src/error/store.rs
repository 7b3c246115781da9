//! What the store refuses on its own account, above the log: raw appends of a kind a
//! projection owns, and writes whose lease guard is not live. Both are refused before
//! anything is written.

use crate::sharing::{Holder, Sharing, held_as};

/// A write the store refused. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A raw append of a kind that only a projection's commands may append.
    #[error("kind {kind:?} belongs to the {projection} projection; append it through its commands")]
    ReservedKind {
        /// The kind.
        kind: String,
        /// The projection that owns it.
        projection: String,
    },
    /// A raw append of the kind of the log's own cut records: only a cut writes one
    /// (`crate::archive::Archives::archive_before`).
    #[error("kind {kind:?} is the log's record of a cut; only `archive_before` appends it")]
    CutKind {
        /// The kind.
        kind: String,
    },
    /// A raw append of the kind of the log's record of a subject's erasure: only
    /// `Store::erase` appends one (`subject.erased`).
    #[error("kind {kind:?} is the log's record of an erasure; only `erase` appends it")]
    ErasureKind {
        /// The kind.
        kind: String,
    },
    /// A raw append to a stream of the log's erasure records (`annals.erased/<subject>`):
    /// only `Store::erase` appends to one.
    #[error("stream {stream:?} holds the log's record of an erasure; only `erase` appends to it")]
    ErasureStream {
        /// The stream.
        stream: String,
    },
    /// A deferred-durability commit asked of a store that shares its file: redb's shared
    /// modes commit every transaction durably (another process may read it at once).
    #[error("a deferred commit needs exclusive sharing; this store is open in {sharing} mode")]
    DeferredNeedsExclusive {
        /// The store's sharing mode.
        sharing: Sharing,
    },
    /// The write carried a lease guard whose token is not the resource's live token.
    #[error("lease guard refused for {resource:?}: {reason}")]
    Fenced {
        /// The guarded resource.
        resource: String,
        /// Why the token is not live.
        reason: GuardRefusal,
    },
    /// The write carried a precondition of a domain of one's own
    /// ([`crate::command::Precondition`]) that refused it.
    #[error("precondition refused: {precondition}: {reason}")]
    PreconditionRefused {
        /// What the write needed, as the precondition says it.
        precondition: String,
        /// Why it does not hold.
        reason: String,
    },
    /// A compaction asked of a store that shares its file: redb moves pages that a process
    /// reading beside it could be reading.
    #[error(
        "compaction needs the log to itself; this store shares it in {sharing} mode (open it exclusive)"
    )]
    CompactionNeedsExclusive {
        /// The store's sharing mode.
        sharing: Sharing,
    },
    /// A compaction of a log that another process has open. Nothing was changed.
    #[error(
        "cannot compact {}: another process has it open {}; compaction needs the log to itself, so run it again once that process has closed it",
        path.display(),
        held_as(holder)
    )]
    CompactionHeld {
        /// The log.
        path: std::path::PathBuf,
        /// How the other process holds it.
        holder: Holder,
    },
    /// A write whose work went on past a failure that had left part of a change in its
    /// transaction (a record appended but not applied to every projection, a command with
    /// some of its appends in), and then returned `Ok`: the transaction was dropped rather
    /// than committed. Nothing was written.
    #[error(
        "the write was dropped: a failure inside it left part of a change behind ({step}: {cause}) and the work went on past it"
    )]
    PartialWrite {
        /// What the write was doing when it failed.
        step: PartialStep,
        /// The failure's message. It is an annals error, kept as its text because such an
        /// error can hold redb's or the file system's, which cannot be cloned or compared.
        cause: String,
    },
    /// A write of a store open in multi-writer mode that waited its turn for as long as the
    /// store's busy timeout allows (5 seconds when it is zero) while another
    /// process was writing the log. Nothing was written; try again.
    #[error(
        "another process kept writing {} for {} ms, longer than this store waits for a write's turn (its busy timeout); nothing was written",
        path.display(),
        waited.as_millis()
    )]
    WriterBusy {
        /// The log.
        path: std::path::PathBuf,
        /// How long the write waited.
        waited: std::time::Duration,
    },
    /// A compaction while a read of this store (a `Snapshot`, a state read) is still open:
    /// redb moves no page a transaction may be reading.
    #[error("cannot compact while a snapshot or state read of this store is open; drop it first")]
    CompactionBusy,
    /// A backup asked to write over a file: a backup is always a new file, and never replaces
    /// one (it could be a log holding acknowledged appends). Nothing was written.
    #[error("{} exists; a backup writes a new file and never replaces one", path.display())]
    BackupTargetExists {
        /// The file that exists.
        path: std::path::PathBuf,
    },
}

/// What a write was doing when a failure left part of a change in its transaction
/// ([`StoreError::PartialWrite`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PartialStep {
    /// Appending events (a raw append or a command's): the log failed after it had written.
    #[error("appending")]
    Append,
    /// Appending sealed records (an import or a replica's): the log failed after it had
    /// written.
    #[error("appending sealed records")]
    AppendSealed,
    /// Applying an appended record to the projections.
    #[error("applying a record to the projections")]
    Apply,
    /// A command whose later append was refused after its first ones went in.
    #[error("a command's later append")]
    Command,
}

/// Why a guard's token is not its resource's live token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuardRefusal {
    /// The resource has no lease.
    #[error("missing")]
    Missing,
    /// The resource's lease carries another token: it was taken over.
    #[error("superseded")]
    Superseded,
    /// The token is the lease's, but the lease lapsed at the guard's `now_ms`.
    #[error("expired")]
    Expired,
}

/// A lock of a multi-writer store's file that another process held for longer than the store
/// waits (`store::patient`): the cause of an I/O error from redb, which the conversion of
/// redb's errors turns into [`StoreError::WriterBusy`].
#[derive(Debug, thiserror::Error)]
#[error("another process held {} for {waited:?}", path.display())]
pub(crate) struct WaitedTooLong {
    pub(crate) path: std::path::PathBuf,
    pub(crate) waited: std::time::Duration,
}
