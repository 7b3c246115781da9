//! Why replication stopped or refused: each variant names the position concerned where there is
//! one. Transient trouble (a node gone, an acknowledgement late) is retried inside the loops and
//! never surfaces as an error on its own.

use crate::record::Position;

/// Why a publisher, a follower or a shared log refused or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplicationError {
    /// A subject that cannot name a log's stream (empty, a wildcard, whitespace).
    #[error("subject {subject:?} cannot name a log: {reason}")]
    BadSubject {
        /// The subject given.
        subject: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Talking to NATS failed in a way retrying does not mend (or the retries ran out).
    #[error("NATS: {detail}")]
    Nats {
        /// What the client said.
        detail: String,
    },
    /// The stream and the local log hold different records at `position`: one of them forked.
    #[error("the stream forks from the local log at position {position}: {detail}")]
    Fork {
        /// The first position where they differ (or where one has a record the other lacks).
        position: Position,
        /// How they differ.
        detail: String,
    },
    /// A publisher's log is no longer the stream's writer: the stream holds records past this
    /// log's, or records this log lacks. Its publish at `position` was refused.
    #[error(
        "superseded: the stream holds {stream_records} records and refused this log's record at position {position}"
    )]
    Superseded {
        /// The position this log would have published next.
        position: Position,
        /// How many records the stream holds.
        stream_records: u64,
    },
    /// A message of the stream does not hold sound records for its positions.
    #[error("the stream's record at position {position} is damaged: {detail}")]
    Damaged {
        /// The position of the damaged record (0 when even the message's frame header is
        /// unreadable).
        position: Position,
        /// What is wrong.
        detail: String,
    },
    /// Records that do not fit in one message ([`super::wire::MESSAGE_BYTES_MAX`]): a record too
    /// large on its own, or a shared-log command whose records together are. Nothing of them
    /// was published.
    #[error(
        "{records} records from position {position} take {bytes} bytes as one message; the limit is {limit}"
    )]
    TooLarge {
        /// The first record's position.
        position: Position,
        /// How many records the message would hold.
        records: u64,
        /// The message's size.
        bytes: u64,
        /// The largest message.
        limit: u64,
    },
    /// The local log failed.
    #[error("the local log: {0}")]
    Store(#[from] Box<crate::error::Error>),
}

impl ReplicationError {
    pub(crate) fn nats(error: impl std::fmt::Display) -> Self {
        ReplicationError::Nats {
            detail: error.to_string(),
        }
    }
}

impl From<crate::error::Error> for ReplicationError {
    fn from(error: crate::error::Error) -> Self {
        ReplicationError::Store(Box::new(error))
    }
}
