//! Why an append was refused: the log's own refusals, before anything is written.

use crate::hash::Digest;
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

/// Why a sealed record does not continue the log verbatim ([`AppendError::NotSealable`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SealProblem {
    /// A record of another stream inside one stream's run.
    #[error("stream {stream:?} in a run of {run:?}")]
    OtherStream {
        /// The record's stream.
        stream: String,
        /// The run's stream.
        run: String,
    },
    /// The record is not at the log's next position.
    #[error("the log's next position is {next}")]
    Position {
        /// The log's next position.
        next: Position,
    },
    /// The record's version is not its stream's next.
    #[error("the stream's next version is {next}")]
    Version {
        /// The stream's next version.
        next: u64,
    },
    /// The stream's next version would pass 2^64.
    #[error("the stream's versions would pass 2^64")]
    VersionOverflow,
    /// The record's idempotency key is already used (in the log, or earlier in the run).
    #[error("idempotency key {key:?} is already used")]
    KeyUsed {
        /// The key.
        key: String,
    },
    /// The run's first record does not chain from the log's head.
    #[error("prev is {prev}, the head hash is {head}")]
    Prev {
        /// The record's `prev`.
        prev: Digest,
        /// The log's head hash.
        head: Digest,
    },
    /// Re-encoded at its place, the record hashes otherwise than it says.
    #[error("re-encoded, it hashes to {hash} not {recorded}")]
    Rehash {
        /// The hash it has re-encoded.
        hash: Digest,
        /// The hash it carries.
        recorded: Digest,
    },
    /// A record of a domain's kind whose payload its projection cannot decode.
    #[error("event {kind} (schema {schema}) does not decode: {cause}")]
    Undecodable {
        /// The kind.
        kind: String,
        /// The payload schema version.
        schema: u16,
        /// The decoder's account.
        cause: String,
    },
}

fn describe_current(current: Option<StreamVersion>) -> String {
    match current {
        None => "it holds no record".to_owned(),
        Some(v) => format!("its last version is {v}"),
    }
}
