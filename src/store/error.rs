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
}
