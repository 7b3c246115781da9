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
        /// The position of the damaged record; when even the message's frame header is
        /// unreadable, the position the message was due to start at.
        position: Position,
        /// What is wrong.
        detail: String,
    },
    /// A message of the stream starts past the position due: a message before it is missing
    /// from the stream (deleted, or published without the expected last sequence). A
    /// follower waits for it ([`super::Waiting::Gap`]); it is never appended around.
    #[error(
        "waiting for position {due}: the stream's message {sequence} starts at position {first}, so a message before it is missing from the stream"
    )]
    Gap {
        /// The position the reader needs next.
        due: Position,
        /// The message that starts past it.
        sequence: u64,
        /// Where that message starts.
        first: Position,
    },
    /// A message of the stream that a reader refuses before it keeps anything of it: one
    /// larger than the wire limit ([`super::wire::MESSAGE_BYTES_MAX`]), one without its
    /// `Nats-Msg-Id`, or one holding a record over the local store's
    /// [`crate::Limits`]. No annals host publishes such a message; nothing of it is appended.
    #[error("the stream's message {sequence} is refused, nothing of it kept: {reason}")]
    Refused {
        /// The message's stream sequence.
        sequence: u64,
        /// Why it is refused: the limit it breaks, with the size and the bound.
        reason: String,
    },
    /// The server would not create the log's stream (or not as asked): retrying would not
    /// change its answer, e.g. more replicas than a single server can hold.
    #[error("NATS refused to create the stream {stream}: {detail}")]
    StreamRefused {
        /// The stream's name.
        stream: String,
        /// What the server said, and what to do about it.
        detail: String,
    },
    /// No NATS server answered within the time given to connect.
    #[error(
        "no NATS server answered at {urls} within {waited_ms} ms ({detail}); check the address and that nats-server runs there"
    )]
    Unreachable {
        /// The server address(es) tried.
        urls: String,
        /// How long it tried, in milliseconds.
        waited_ms: u64,
        /// The last error the client gave.
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
