//! Why a record sealed elsewhere (replicated, imported, archived) does not continue a log
//! verbatim: what an append of sealed records and an export's reader both name.

use super::Position;
use crate::hash::Digest;

/// Why a sealed record does not continue the log verbatim (annals' `AppendError::NotSealable`,
/// [`ExportDamage::Unsealable`](crate::export::ExportDamage::Unsealable)).
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
