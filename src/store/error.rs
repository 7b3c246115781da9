//! What the store refuses on its own account, above the log: raw appends of a kind a
//! projection owns, and writes whose lease guard is not live. Both are refused before
//! anything is written.

use crate::leases::guard::GuardRefusal;

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
    /// A deferred-durability commit asked of a store that shares its file: redb's shared
    /// modes commit every transaction durably (another process may read it at once).
    #[error("a deferred commit needs exclusive sharing; this store is open in {sharing} mode")]
    DeferredNeedsExclusive {
        /// The store's sharing mode.
        sharing: crate::store::Sharing,
    },
    /// The write carried a lease guard whose token is not the resource's live token.
    #[error("lease guard refused for {resource:?}: {reason}")]
    Fenced {
        /// The guarded resource.
        resource: String,
        /// Why the token is not live.
        reason: GuardRefusal,
    },
    /// A compaction asked of a store that shares its file: redb moves pages that a process
    /// reading beside it could be reading.
    #[error(
        "compaction needs the log to itself; this store shares it in {sharing} mode (open it exclusive)"
    )]
    CompactionNeedsExclusive {
        /// The store's sharing mode.
        sharing: crate::store::Sharing,
    },
    /// A compaction of a log that another process has open. Nothing was changed.
    #[error(
        "cannot compact {}: another process has it open {}; compaction needs the log to itself, so run it again once that process has closed it",
        path.display(),
        crate::store::compact::held_as(holder)
    )]
    CompactionHeld {
        /// The log.
        path: std::path::PathBuf,
        /// How the other process holds it.
        holder: crate::store::Holder,
    },
    /// A write whose work went on past a failure that had left part of a change in its
    /// transaction (a record appended but not applied to every projection, a command with
    /// some of its appends in), and then returned `Ok`: the transaction was dropped rather
    /// than committed. Nothing was written.
    #[error(
        "the write was dropped: a failure inside it left part of a change behind ({detail}) and the work went on past it"
    )]
    PartialWrite {
        /// The failure that left the change half made.
        detail: String,
    },
    /// A compaction while a read of this store (a `Snapshot`, a state read) is still open:
    /// redb moves no page a transaction may be reading.
    #[error("cannot compact while a snapshot or state read of this store is open; drop it first")]
    CompactionBusy,
}
