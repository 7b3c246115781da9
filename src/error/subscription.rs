//! Why a subscription could not go on.

/// Why a subscription could not go on; its own error, so that one made from a [`Store`](crate::Store)
/// without any writer never reports a writer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SubscriptionError {
    /// The store's commit watch closed: the store that announces commits is gone (it cannot
    /// be while the subscription holds it, so this is a bug if seen).
    #[error("the store's commit watch closed under the subscription")]
    WatchClosed,
    /// The background read of the next records ended without an answer: it panicked or its
    /// runtime shut down. The subscription stays where it was.
    #[error("the subscription's read of the log ended without an answer")]
    ReadLost,
}
