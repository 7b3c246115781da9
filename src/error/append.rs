//! Why an append was refused: the log's own refusals, before anything is written.

pub use crate::record::SealProblem;
use crate::record::limits::LimitError;
use crate::record::{ExpectedVersion, Position, StreamVersion};

/// An append refused. Nothing was written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AppendError {
    /// The stream was not in the expected state.
    #[error("stream {stream:?}: expected {expected}, but {}", describe_current(*current))]
    WrongExpectedVersion {
        /// The stream.
        stream: String,
        /// What the append required.
        expected: ExpectedVersion,
        /// The stream's last version, `None` if it holds no record.
        current: Option<StreamVersion>,
    },
    /// An idempotency key already used for other content (stream, kind or payload).
    #[error("idempotency key {key:?} was used at position {position} for other content")]
    Conflict {
        /// The key.
        key: String,
        /// Where it was used.
        position: Position,
    },
    /// Some events of the append are duplicates and some are not: a retry must repeat the
    /// whole earlier append or none of it.
    #[error(
        "idempotency key {key:?} is a duplicate of position {position}, but other events of the append are new"
    )]
    PartialDuplicate {
        /// The duplicate key.
        key: String,
        /// Where it was used.
        position: Position,
    },
    /// The same idempotency key on two events of one append.
    #[error("idempotency key {key:?} appears twice in one append")]
    RepeatedKey {
        /// The key.
        key: String,
    },
    /// An append with no events.
    #[error("an append needs at least one event")]
    NoEvents,
    /// An input outside a limit; names the field, its size and the limit.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A sealed record (from an import) that does not continue the log verbatim.
    #[error("the record at position {position} cannot be appended verbatim: {problem}")]
    NotSealable {
        /// The record's position.
        position: Position,
        /// Why.
        problem: SealProblem,
    },
    /// The log has no positions left (2^64 records).
    #[error("the log is full")]
    LogFull,
}

fn describe_current(current: Option<StreamVersion>) -> String {
    match current {
        None => "it holds no record".to_owned(),
        Some(v) => format!("its last version is {v}"),
    }
}
