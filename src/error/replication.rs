//! Why replication stopped or refused: each variant names the position concerned where there is
//! one. Transient trouble (a node gone, an acknowledgement late) is retried inside the loops and
//! never surfaces as an error on its own.

use crate::hash::Digest;
use crate::record::limits::LimitError;
use crate::record::{Position, RecordError};

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
    #[error("NATS: {operation}: {problem}")]
    Nats {
        /// What annals asked when it failed.
        operation: NatsOperation,
        /// What went wrong.
        problem: NatsProblem,
    },
    /// The stream and the local log hold different records at `position`: one of them forked.
    #[error("the stream forks from the local log at position {position}: {problem}")]
    Fork {
        /// The first position where they differ (or where one has a record the other lacks).
        position: Position,
        /// How they differ.
        problem: ForkProblem,
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
    #[error(
        "the stream's record at position {position} is damaged: {}{problem}",
        in_message(*message, problem)
    )]
    Damaged {
        /// The position of the damaged record; when even the message's frame header is
        /// unreadable, the position the message was due to start at.
        position: Position,
        /// The stream sequence of the message it came in, when it came in one.
        message: Option<u64>,
        /// What is wrong.
        problem: Damage,
    },
    /// A message of the stream starts past the position due: a message before it is missing
    /// from the stream (deleted, or published without the expected last sequence). A
    /// follower waits for it ([`crate::replication::Waiting::Gap`]); it is never appended around.
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
    /// The stream no longer holds the records this log needs next: its limits or a purge
    /// removed its first messages, and the first it holds (`sequence`) starts at `first`,
    /// past `needed`. Such a log starts from the archives of the writer's cuts up to there
    /// (`annals import` each, in order), then follows.
    #[error(
        "the stream's first message ({sequence}) starts at position {first}, but this log needs position {needed} next: the messages before it are gone from the stream; import the archives of the log's cuts up to {first} first, then follow"
    )]
    Trimmed {
        /// The position this log needs next (its head).
        needed: Position,
        /// The first message the stream holds.
        sequence: u64,
        /// Where that message starts.
        first: Position,
    },
    /// A message of the stream that a reader refuses before it keeps anything of it: one
    /// larger than the wire limit ([`crate::replication::wire::MESSAGE_BYTES_MAX`]), one without its
    /// `Nats-Msg-Id`, or one holding a record over the local store's
    /// [`crate::log::Limits`]. No annals host publishes such a message; nothing of it is appended.
    #[error("the stream's message {sequence} is refused, nothing of it kept: {problem}")]
    Refused {
        /// The message's stream sequence.
        sequence: u64,
        /// Why it is refused: the limit it breaks, with the size and the bound.
        problem: RefusedMessage,
    },
    /// The server would not create the log's stream (or not as asked): retrying would not
    /// change its answer, e.g. more replicas than a single server can hold.
    #[error(
        "NATS refused to create the stream {stream}: {cause}{}",
        replicas_advice(*replicas_asked)
    )]
    StreamRefused {
        /// The stream's name.
        stream: String,
        /// What the server said.
        cause: String,
        /// The replicas the stream was asked for, when the server refused for want of
        /// servers or resources to hold them (the message then says what to give instead).
        replicas_asked: Option<usize>,
    },
    /// No NATS server answered within the time given to connect.
    #[error(
        "no NATS server answered at {urls} within {waited_ms} ms ({}); check the address and that nats-server runs there",
        cause.as_deref().unwrap_or("the connection did not complete")
    )]
    Unreachable {
        /// The server address(es) tried.
        urls: String,
        /// How long it tried, in milliseconds.
        waited_ms: u64,
        /// The last error the client gave; `None` when the last attempt did not complete in
        /// the time left.
        cause: Option<String>,
    },
    /// A NATS server answered but offers no JetStream (started without `-js`, or the account
    /// has none): nothing can be replicated through it. Said within
    /// [`crate::replication::JETSTREAM_WAIT`] of connecting, instead of waiting on a stream
    /// that will never answer.
    #[error(
        "the NATS server at {urls} has no JetStream ({cause}): start it with JetStream on, `nats-server -js` (or a `jetstream {{}}` block in its configuration)"
    )]
    NoJetStream {
        /// The server address(es).
        urls: String,
        /// What the server said, or that nothing answers on its JetStream API.
        cause: String,
    },
    /// Records that do not fit in one message ([`crate::replication::wire::MESSAGE_BYTES_MAX`]): a record too
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
    /// The seed a new replica was to start from (`replication::fetch_seed`) is not the
    /// copy of a sound log its metadata describes. Nothing was written at the target.
    #[error(
        "the seed in the object store bucket {bucket} is refused, nothing of it kept: {problem}"
    )]
    SeedRefused {
        /// The object store bucket that holds it.
        bucket: String,
        /// What is wrong with it.
        problem: SeedProblem,
    },
    /// The local log failed.
    #[error("the local log: {0}")]
    Store(#[from] Box<crate::error::Error>),
}

/// Why a seed is refused ([`ReplicationError::SeedRefused`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SeedProblem {
    /// Its metadata lacks a field, or holds one that does not read.
    #[error("its metadata has no readable {field:?}")]
    Metadata {
        /// The field.
        field: &'static str,
    },
    /// Its bytes did not arrive whole (the object store's SHA-256 of its chunks differs, or
    /// the transfer broke off).
    #[error("its bytes did not arrive whole: {cause}")]
    Transfer {
        /// The client's account.
        cause: String,
    },
    /// Its bytes are not the ones its metadata names.
    #[error("its bytes hash to blake3 {found}, not the {expected} its metadata names")]
    Digest {
        /// The digest its metadata names.
        expected: Digest,
        /// The digest of the bytes that arrived.
        found: Digest,
    },
    /// It does not open as an annals log.
    #[error("it does not open as a log: {cause}")]
    NotALog {
        /// Why.
        cause: String,
    },
    /// It opens as a log whose head is not the one its metadata names.
    #[error(
        "it holds {found} records, head hash {found_hash}, where its metadata names {claimed} records, head hash {claimed_hash}"
    )]
    Head {
        /// The record count its metadata names.
        claimed: Position,
        /// The head hash its metadata names.
        claimed_hash: Digest,
        /// The record count it holds.
        found: Position,
        /// Its head hash.
        found_hash: Digest,
    },
    /// It opens as a log that `verify` finds unsound.
    #[error("verify finds it unsound: {problem}")]
    Unsound {
        /// What verify found.
        problem: String,
    },
}

impl ReplicationError {
    /// The error of `operation` failing as `error` (the client's, or the runtime's, account).
    pub(crate) fn nats<E: std::fmt::Display>(operation: NatsOperation) -> impl FnOnce(E) -> Self {
        move |error| ReplicationError::Nats {
            operation,
            problem: NatsProblem::Failed {
                cause: error.to_string(),
            },
        }
    }
}

/// What annals asked of NATS (or of the task beside it) when it failed
/// ([`ReplicationError::Nats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NatsOperation {
    /// Reading the server addresses given.
    Address,
    /// Looking up the log's stream.
    LookUpStream,
    /// Creating the log's stream.
    CreateStream,
    /// Reading the stream's state (its last sequence).
    StreamInfo,
    /// Reading one message of the stream.
    GetMessage,
    /// Reading the stream's messages in order, as a follower does.
    ReadMessages,
    /// Publishing a message.
    Publish,
    /// Taking a published message's acknowledgement.
    Acknowledge,
    /// Waiting for the publisher to store records.
    WaitForPublisher,
    /// Waiting for the publisher's task to end.
    PublisherTask,
    /// A replicating writer's write, run on a blocking task.
    WriteTask,
    /// A follower's append of the records it read, run on a blocking task.
    LocalAppend,
    /// A shared log's transaction, run on a blocking task.
    LocalTransaction,
    /// Putting the log's seed into its object store bucket, or opening the bucket.
    PutSeed,
    /// Reading the log's seed from its object store bucket.
    GetSeed,
    /// Copying the local log for a seed, or checking a seed that arrived, on a blocking task.
    SeedTask,
}

impl std::fmt::Display for NatsOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NatsOperation::Address => "reading the server address",
            NatsOperation::LookUpStream => "looking up the stream",
            NatsOperation::CreateStream => "creating the stream",
            NatsOperation::StreamInfo => "reading the stream's state",
            NatsOperation::GetMessage => "reading a message of the stream",
            NatsOperation::ReadMessages => "reading the stream's messages",
            NatsOperation::Publish => "publishing",
            NatsOperation::Acknowledge => "taking a publish's acknowledgement",
            NatsOperation::WaitForPublisher => "waiting for the publisher",
            NatsOperation::PublisherTask => "waiting for the publisher's task",
            NatsOperation::WriteTask => "the write task",
            NatsOperation::LocalAppend => "the local append",
            NatsOperation::LocalTransaction => "the local transaction",
            NatsOperation::PutSeed => "putting the log's seed",
            NatsOperation::GetSeed => "getting the log's seed",
            NatsOperation::SeedTask => "the seed's copy or check",
        })
    }
}

/// What went wrong talking to NATS ([`ReplicationError::Nats`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NatsProblem {
    /// The client (or the task runtime) failed: its own account.
    #[error("{cause}")]
    Failed {
        /// The library's message.
        cause: String,
    },
    /// An address that is not a NATS server address.
    #[error("{urls:?} is not a NATS address: {cause}")]
    NotAnAddress {
        /// The addresses given.
        urls: String,
        /// The client's account.
        cause: String,
    },
    /// A message stored at another sequence than the one it was published to follow: a
    /// duplicate of one stored elsewhere. The stream is read again.
    #[error(
        "the message of positions {first} .. {end} was acknowledged at sequence {sequence}, not {expected}"
    )]
    AcknowledgedElsewhere {
        /// The message's first position.
        first: Position,
        /// The position after its last record.
        end: Position,
        /// The sequence it was stored at.
        sequence: u64,
        /// The sequence it was due at.
        expected: u64,
    },
    /// A shared log's publish refused: another host appended after the message it expected
    /// last.
    #[error("another host appended after message {expected} (position {first})")]
    WrongLastSequence {
        /// The last sequence the publish expected.
        expected: u64,
        /// The first position of the message refused.
        first: Position,
    },
    /// The task reading the stream's messages stopped.
    #[error("the stream's reader stopped")]
    ReaderStopped,
    /// The publisher stopped before the stream held the records waited for.
    #[error("the publisher stopped: {cause}")]
    PublisherStopped {
        /// Why it stopped ([`crate::replication::PublisherStatus::stopped`]).
        cause: String,
    },
}

/// How the stream and the local log differ ([`ReplicationError::Fork`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ForkProblem {
    /// The stream's record at the position hashes otherwise than the local one.
    #[error("the stream's record hashes to {stream}, the local one to {local}")]
    Hash {
        /// The stream's record's hash.
        stream: Digest,
        /// The local record's hash.
        local: Digest,
    },
    /// The local log holds more records than the stream.
    #[error("the local log holds {local} records, the stream {stream}")]
    LocalLonger {
        /// Records the local log holds.
        local: Position,
        /// Records the stream holds.
        stream: Position,
    },
    /// A message holds a record the local log holds otherwise (or a message repeats a record
    /// of an earlier one of the same batch).
    #[error(
        "the stream's message {sequence} holds a record hashing to {hash}, the local one differs"
    )]
    Record {
        /// The message's stream sequence.
        sequence: u64,
        /// The stream's record's hash.
        hash: Digest,
    },
    /// A message's record does not chain from the local head.
    #[error(
        "the stream's message {sequence} holds a record chaining from {prev}, the local head is {head}"
    )]
    Chain {
        /// The message's stream sequence.
        sequence: u64,
        /// The record's `prev`.
        prev: Digest,
        /// The local head's hash.
        head: Digest,
    },
}

/// What is wrong with a message of the stream, or a record in it ([`ReplicationError::Damaged`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Damage {
    /// A message shorter than a frame's header.
    #[error("a message of {bytes} bytes, shorter than a frame's {header_bytes}-byte header")]
    FrameShort {
        /// The message's size.
        bytes: u64,
        /// A frame header's size.
        header_bytes: u64,
    },
    /// A frame version this build does not read.
    #[error("frame version {found}, this build reads {supported}")]
    FrameVersion {
        /// The version found.
        found: u8,
        /// The version this build reads.
        supported: u8,
    },
    /// A frame of no records.
    #[error("a message of no records")]
    NoRecords,
    /// A frame whose records would pass the last position.
    #[error("{records} records from position {first} overflow a position")]
    PositionOverflow {
        /// The frame's first position.
        first: Position,
        /// Its record count.
        records: u32,
    },
    /// The message ends before a record its frame counts.
    #[error("the message ends before record {index} of its {count}")]
    EndsBeforeRecord {
        /// The record's index in the message, from 0.
        index: u64,
        /// The records the frame counts.
        count: u32,
    },
    /// A record longer than what remains of the message.
    #[error("a record of {bytes} bytes, but {remain} bytes remain in the message")]
    RecordShort {
        /// The record's length.
        bytes: u64,
        /// Bytes left in the message.
        remain: u64,
    },
    /// The record's bytes are not a sound record at its position.
    #[error("{0}")]
    Record(RecordError),
    /// A record that cannot be encoded (a field over a limit).
    #[error("{0}")]
    Encode(LimitError),
    /// Re-encoded, the record hashes otherwise than it says.
    #[error("re-encoded, it hashes to {hash} not {recorded}")]
    Rehash {
        /// The hash it has re-encoded.
        hash: Digest,
        /// The hash it carries.
        recorded: Digest,
    },
    /// A record that does not chain from the one before it in the message.
    #[error("it chains from {prev}, the record before it in the message is {before}")]
    Chain {
        /// The record's `prev`.
        prev: Digest,
        /// The hash of the record before it.
        before: Digest,
    },
    /// Bytes after the message's last record.
    #[error("{bytes} bytes after the message's last record")]
    Trailing {
        /// How many.
        bytes: u64,
    },
    /// A `Nats-Msg-Id` other than the last record's hash.
    #[error("message id {id:?}, but its last record hashes to {last}")]
    MessageId {
        /// The message id.
        id: String,
        /// The last record's hash.
        last: Digest,
    },
    /// A message whose positions cannot be where the stream holds it.
    #[error("the stream's message {sequence} holds positions {first} .. {end}, which cannot be")]
    Span {
        /// The message's stream sequence.
        sequence: u64,
        /// Its first position.
        first: Position,
        /// The position after its last record.
        end: Position,
    },
    /// No message of the stream holds the position.
    #[error("no message of the stream holds this position")]
    NotHeld,
    /// The message found to hold the position does not.
    #[error("message {sequence} was found to hold it, but does not")]
    NotInMessage {
        /// The message's stream sequence.
        sequence: u64,
    },
}

impl Damage {
    /// Whether it is the frame's header that is wrong (not a record of the message).
    fn is_frame(&self) -> bool {
        matches!(
            self,
            Damage::FrameShort { .. }
                | Damage::FrameVersion { .. }
                | Damage::NoRecords
                | Damage::PositionOverflow { .. }
        )
    }
}

/// Why a reader refuses a message before keeping anything of it ([`ReplicationError::Refused`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RefusedMessage {
    /// A message over the wire limit.
    #[error("it is {bytes} bytes, over the wire limit of {limit} bytes")]
    TooLarge {
        /// The message's size.
        bytes: u64,
        /// The wire limit ([`crate::replication::wire::MESSAGE_BYTES_MAX`]).
        limit: u64,
    },
    /// A message without a `Nats-Msg-Id` header.
    #[error(
        "it has no Nats-Msg-Id header; every annals publisher names its last record's hash there"
    )]
    NoMessageId,
    /// A record over the local store's limits.
    #[error("its record at position {position}: {error}")]
    Limit {
        /// The record's position.
        position: Position,
        /// The limit it breaks.
        error: LimitError,
    },
}

/// Where a damaged record was read: `in message 4: `, or `the frame of message 4: `.
fn in_message(message: Option<u64>, problem: &Damage) -> String {
    match message {
        None => String::new(),
        Some(sequence) if problem.is_frame() => format!("the frame of message {sequence}: "),
        Some(sequence) => format!("in message {sequence}: "),
    }
}

/// What to do about a stream refused for its replicas.
fn replicas_advice(replicas_asked: Option<usize>) -> String {
    match replicas_asked {
        None => String::new(),
        Some(replicas) => format!(
            "; it was asked for {replicas} replicas: give `--replicas` at most the number of \
             JetStream servers in the cluster (1 for a single server)"
        ),
    }
}

impl From<crate::error::Error> for ReplicationError {
    fn from(error: crate::error::Error) -> Self {
        ReplicationError::Store(Box::new(error))
    }
}
