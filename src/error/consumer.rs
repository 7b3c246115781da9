//! Why a consumer cannot resume where it stopped.

use crate::hash::Digest;
use crate::record::Position;

/// Why a consumer cannot resume where it stopped.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// The record at the checkpoint's position is not the one the consumer handled: the log
    /// was replaced or rewritten beneath it. Resuming would skip or repeat records silently.
    #[error(
        "consumer {consumer:?} stopped after position {position} with hash {stored}, but {}; the log was replaced or rewritten",
        describe_found(found)
    )]
    Diverged {
        /// The consumer.
        consumer: String,
        /// The checkpoint's position.
        position: Position,
        /// The hash the consumer recorded.
        stored: Digest,
        /// The hash of the record there now; `None` when the log ends before it.
        found: Option<Digest>,
    },
}

fn describe_found(found: &Option<Digest>) -> String {
    match found {
        Some(hash) => format!("the record there now has hash {hash}"),
        None => "the log now ends before it".to_owned(),
    }
}
