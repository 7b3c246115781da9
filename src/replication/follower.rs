//! The replica side: a local log that takes the stream's records, each checked before it is
//! kept.
//!
//! A [`Follower`]'s checkpoint is its local head: at start it finds the message that holds
//! the local log's last record ([`super::stream`]'s search by position), requires that record
//! to be the local one, and reads the stream from the message after it (an ordered consumer,
//! recreated after any trouble from where it stopped). For each message it checks every record
//! ([`wire::checked_records`]: hashes, positions, the chain inside the message, the message
//! id) and the first one's link to the local head (`prev`), then appends whole messages sealed
//! in one local transaction (a message is never split across two), every projection applied
//! as on the writer. A record that does not chain is a fork, named by its position; nothing
//! after it is taken. This module is also how a [`super::SharedLog`] host catches up.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::ErrorCode;
use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::{self, stream};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};

use super::publisher::Publisher;
use super::stream::{
    PAUSE_MIN, ReplicatedLog, StreamEnd, last_sequence, message_at, records_of, retry,
    sequence_holding, stream_end,
};
use super::{Damage, ForkProblem, NatsOperation, NatsProblem, ReplicationError, wire};
use crate::log::Head;
use crate::record::{Position, Record};
use crate::store::{Durability, Store, WriteSession};

/// How a follower reads and writes.
#[derive(Clone, Copy, Debug)]
pub struct FollowerOptions {
    /// Records after which a local transaction takes no further message (whole messages are
    /// appended, so one message larger than this is still one transaction).
    pub batch_records: usize,
    /// How the local transactions commit ([`Durability::Immediate`] by default).
    pub durability: Durability,
}

impl Default for FollowerOptions {
    fn default() -> Self {
        FollowerOptions {
            batch_records: BATCH_RECORDS_DEFAULT,
            durability: Durability::Immediate,
        }
    }
}

/// Records appended in one local transaction unless told otherwise.
pub(crate) const BATCH_RECORDS_DEFAULT: usize = 4096;
/// Messages read ahead of the local appends.
const INBOX_MESSAGES: usize = 8192;
/// Records of one stream per sealed append (as an import's runs).
const SEALED_RUN_RECORDS_MAX: usize = 1024;

/// A message of the stream as it arrived: sequence, payload and message id.
pub(crate) struct Arrived {
    sequence: u64,
    message: async_nats::Message,
    id: Option<String>,
}

impl Arrived {
    /// How many records its frame says it holds (0 when its header is damaged: the check
    /// before appending refuses it).
    fn records(&self) -> usize {
        wire::frame_span(&self.message.payload).map_or(0, |(_, records)| records as usize)
    }
}

/// What the local log holds of the stream: the last message whose records it holds (all of
/// them, and none after), and its head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Applied {
    /// That message's sequence (0 before the first).
    pub sequence: u64,
    /// The local head.
    pub head: Head,
}

/// Where a host starts reading the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Start {
    /// The first message to read.
    pub from: u64,
    /// The last message the local log already holds whole.
    pub applied: u64,
}

/// What a follower is waiting for, when it cannot go on until the stream changes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Waiting {
    /// The log's stream does not exist yet (no writer has published to it).
    Stream {
        /// The stream's name.
        stream: String,
    },
    /// The stream's message `sequence` starts at `first`, past the position `due` that the
    /// local log needs next: a message before it is missing.
    Gap {
        /// The position the local log needs next.
        due: Position,
        /// The message that starts past it.
        sequence: u64,
        /// Where that message starts.
        first: Position,
    },
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waiting::Stream { stream } => write!(
                f,
                "waiting for the stream {stream} to exist (it is created by the log's writer, `annals replicate`)"
            ),
            Waiting::Gap {
                due,
                sequence,
                first,
            } => write!(
                f,
                "waiting for position {due}: the stream's message {sequence} starts at position {first}, so a message before it is missing from the stream"
            ),
        }
    }
}

/// The longest pause between two looks at a stream that keeps a follower waiting.
const WAITING_PAUSE_MAX: Duration = Duration::from_secs(5);

/// A local log following a stream; see the module docs.
pub struct Follower {
    store: Arc<Store>,
    jetstream: jetstream::Context,
    log: ReplicatedLog,
    options: FollowerOptions,
    head: watch::Sender<Position>,
    waiting: watch::Sender<Option<Waiting>>,
}

impl Follower {
    /// A follower appending `log`'s records to `store`.
    pub fn new(
        store: Arc<Store>,
        jetstream: jetstream::Context,
        log: ReplicatedLog,
        options: FollowerOptions,
    ) -> Result<Self, ReplicationError> {
        let head = store.head()?.next;
        Ok(Follower {
            store,
            jetstream,
            log,
            options,
            head: watch::Sender::new(head),
            waiting: watch::Sender::new(None),
        })
    }

    /// Watches the local head's next position as records are appended.
    pub fn head(&self) -> watch::Receiver<Position> {
        self.head.subscribe()
    }

    /// Watches what the follower waits for, if anything (`None` once records flow again).
    pub fn waiting(&self) -> watch::Receiver<Option<Waiting>> {
        self.waiting.subscribe()
    }

    /// The local log.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Follows the stream until an error it cannot retry (a fork, a damaged or refused
    /// message, the local log failing); cancel it by dropping the future. NATS trouble, a
    /// stream not created yet and a gap in the stream are retried from the local head, the
    /// pause growing while nothing moves, and said through [`Follower::waiting`].
    pub async fn run(&self) -> ReplicationError {
        let mut pause = Pause::default();
        loop {
            let before = *self.head.borrow();
            match self.follow(None).await {
                Err(error @ (ReplicationError::Nats { .. } | ReplicationError::Gap { .. })) => {
                    self.note_waiting(&error);
                    let moved = before != *self.head.borrow();
                    pause.after(moved).await;
                }
                Err(error) => return error,
                // Following without an end does not end; were it to, it starts again.
                Ok(_) => {}
            }
        }
    }

    /// Follows until the local log holds every record the stream held when called; returns
    /// the local head's next position.
    pub async fn catch_up(&self) -> Result<Position, ReplicationError> {
        let stream = retry(|| self.open_stream()).await?;
        let last = last_sequence(&stream).await?;
        let mut pause = Pause::default();
        loop {
            let before = *self.head.borrow();
            match self.follow(Some(last)).await {
                Err(error @ (ReplicationError::Nats { .. } | ReplicationError::Gap { .. })) => {
                    self.note_waiting(&error);
                    let moved = before != *self.head.borrow();
                    pause.after(moved).await;
                }
                other => return other,
            }
        }
    }

    /// Says what the follower waits for after `error` (a gap), or that it waits for nothing
    /// it can name.
    fn note_waiting(&self, error: &ReplicationError) {
        let waiting = match *error {
            ReplicationError::Gap {
                due,
                sequence,
                first,
            } => Some(Waiting::Gap {
                due,
                sequence,
                first,
            }),
            _ => None,
        };
        if let Some(waiting) = waiting {
            self.waiting.send_if_modified(|now| {
                let changed = now.as_ref() != Some(&waiting);
                *now = Some(waiting);
                changed
            });
        }
    }

    /// Makes this host the log's writer: catches up with the stream, then publishes from the
    /// stream's last record on. The old writer's later publishes are refused by the expected
    /// last sequence; this log's next record chains from the stream's last.
    pub async fn promote(self) -> Result<Publisher, ReplicationError> {
        self.catch_up().await?;
        Ok(Publisher::new(self.store, self.jetstream, self.log))
    }

    /// The log's stream; one that does not exist yet is said through
    /// [`Follower::waiting`] and is a NATS error, for the caller to try again.
    async fn open_stream(&self) -> Result<stream::Stream, ReplicationError> {
        match self.jetstream.get_stream(self.log.stream_name()).await {
            Ok(stream) => Ok(stream),
            Err(error) => {
                if let GetStreamErrorKind::JetStream(api) = error.kind()
                    && api.error_code() == ErrorCode::STREAM_NOT_FOUND
                {
                    self.waiting.send_replace(Some(Waiting::Stream {
                        stream: self.log.stream_name().to_owned(),
                    }));
                }
                Err(ReplicationError::nats(NatsOperation::LookUpStream)(error))
            }
        }
    }

    /// Follows until the local log holds the stream's messages up to sequence `until`
    /// (forever with `None`).
    async fn follow(&self, until: Option<u64>) -> Result<Position, ReplicationError> {
        let stream = retry(|| self.open_stream()).await?;
        let head = self.store.head()?;
        let start = check_start(&stream, head).await?;
        let done = |sequence: u64| until.is_some_and(|until| sequence >= until);
        if done(start.applied) {
            return Ok(head.next);
        }
        let mut inbox = Inbox::start(stream, self.log.subject(), start.from);
        loop {
            let batch = inbox.next_batch(self.options.batch_records).await?;
            let applied = apply_checked(&self.store, batch, self.options.durability).await?;
            self.head.send_replace(applied.head.next);
            self.waiting.send_if_modified(|now| now.take().is_some());
            if done(applied.sequence) {
                return Ok(applied.head.next);
            }
        }
    }
}

/// The pause before a follower looks at the stream again: from [`PAUSE_MIN`], doubling up to
/// [`WAITING_PAUSE_MAX`] while nothing is appended, so a follower held at a gap or by a
/// server away does not spin.
#[derive(Debug)]
struct Pause(Duration);

impl Default for Pause {
    fn default() -> Self {
        Pause(PAUSE_MIN)
    }
}

impl Pause {
    /// Waits, after a try that appended records (`moved`: the pause starts again) or not.
    async fn after(&mut self, moved: bool) {
        if moved {
            self.0 = PAUSE_MIN;
        }
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(WAITING_PAUSE_MAX);
    }
}

/// In a stream whose limits or a purge removed its first messages: this log starts from its
/// own records, the first the stream holds, or not at all. `Some` when the first message
/// left continues the log (its first record's link to the local head is checked when it is
/// applied, as every message's is); `None` when the log reaches into what the stream holds.
async fn start_in_trimmed(
    stream: &stream::Stream,
    end: &StreamEnd,
    head: Head,
) -> Result<Option<Start>, ReplicationError> {
    let (first, _) = wire::frame_span(&message_at(stream, end.first).await?.payload)?;
    if first > head.next {
        return Err(ReplicationError::Trimmed {
            needed: head.next,
            sequence: end.first,
            first,
        });
    }
    Ok((first == head.next).then(|| Start {
        from: end.first,
        applied: end.first - 1,
    }))
}

/// Where a host whose local log ends at `head` starts reading the stream. Refuses a local log
/// the stream does not continue: one longer than the stream, or whose last record is not the
/// stream's at that position. When the local head lies inside a message (a log copied up to
/// a position), reading starts at that message: its records the log holds are checked again
/// and the rest appended.
pub(crate) async fn check_start(
    stream: &stream::Stream,
    head: Head,
) -> Result<Start, ReplicationError> {
    let end = stream_end(stream).await?;
    if end.first > 1
        && !(end.last_hash == Some(head.hash) && head.next == end.next)
        && let Some(start) = start_in_trimmed(stream, &end, head).await?
    {
        return Ok(start);
    }
    let Some(last) = head.next.0.checked_sub(1).map(Position) else {
        return Ok(Start {
            from: 1,
            applied: 0,
        });
    };
    if head.next > end.next {
        return Err(ReplicationError::Fork {
            position: end.next,
            problem: ForkProblem::LocalLonger {
                local: head.next,
                stream: end.next,
            },
        });
    }
    let sequence = if end.last_hash == Some(head.hash) && head.next == end.next {
        end.sequence
    } else {
        sequence_holding(stream, last, end.first, end.sequence).await?
    };
    let records = records_of(stream, sequence).await?;
    let Some(theirs) = records.iter().find(|record| record.position == last) else {
        return Err(ReplicationError::Damaged {
            position: last,
            message: None,
            problem: Damage::NotInMessage { sequence },
        });
    };
    if theirs.hash != head.hash {
        return Err(ReplicationError::Fork {
            position: last,
            problem: ForkProblem::Hash {
                stream: theirs.hash,
                local: head.hash,
            },
        });
    }
    let whole = records.last().is_some_and(|record| record.position == last);
    Ok(if whole {
        Start {
            from: sequence + 1,
            applied: sequence,
        }
    } else {
        Start {
            from: sequence,
            applied: sequence - 1,
        }
    })
}

/// The stream's messages from a sequence on, read ahead by a task (ended on drop).
pub(crate) struct Inbox {
    receiver: mpsc::Receiver<Result<Arrived, ReplicationError>>,
    reader: tokio::task::JoinHandle<()>,
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Inbox {
    /// Reads `subject`'s messages from the one of sequence `from` on.
    pub(crate) fn start(stream: stream::Stream, subject: &str, from: u64) -> Self {
        let (sender, receiver) = mpsc::channel(INBOX_MESSAGES);
        let subject = subject.to_owned();
        let reader = tokio::spawn(read_messages(stream, subject, from, sender));
        Inbox { receiver, reader }
    }

    /// The next message and those already waiting behind it, until they hold `most` records.
    pub(crate) async fn next_batch(
        &mut self,
        most: usize,
    ) -> Result<Vec<Arrived>, ReplicationError> {
        let first = self.receiver.recv().await.ok_or(ReplicationError::Nats {
            operation: NatsOperation::ReadMessages,
            problem: NatsProblem::ReaderStopped,
        })??;
        let records = first.records();
        let mut batch = vec![first];
        self.take_waiting(&mut batch, records, most)?;
        Ok(batch)
    }

    /// The messages already waiting, until they hold `most` records, without waiting for more.
    pub(crate) fn waiting(&mut self, most: usize) -> Result<Vec<Arrived>, ReplicationError> {
        let mut batch = Vec::new();
        self.take_waiting(&mut batch, 0, most)?;
        Ok(batch)
    }

    fn take_waiting(
        &mut self,
        batch: &mut Vec<Arrived>,
        mut records: usize,
        most: usize,
    ) -> Result<(), ReplicationError> {
        while records < most {
            match self.receiver.try_recv() {
                Ok(arrived) => {
                    let arrived = arrived?;
                    records += arrived.records();
                    batch.push(arrived);
                }
                Err(_) => break,
            }
        }
        Ok(())
    }
}

/// Sends every message from sequence `from` on, in sequence order, each once: an ordered
/// consumer, created again from the next sequence due after any error.
async fn read_messages(
    stream: stream::Stream,
    subject: String,
    from: u64,
    sender: mpsc::Sender<Result<Arrived, ReplicationError>>,
) {
    let mut next = from;
    loop {
        let config = pull::OrderedConfig {
            filter_subject: subject.clone(),
            deliver_policy: DeliverPolicy::ByStartSequence {
                start_sequence: next,
            },
            ..Default::default()
        };
        let messages = match stream.create_consumer(config).await {
            Ok(consumer) => consumer.messages().await.ok(),
            Err(_) => None,
        };
        if let Some(mut messages) = messages {
            while let Some(Ok(message)) = messages.next().await {
                let Ok(info) = message.info() else {
                    break;
                };
                let sequence = info.stream_sequence;
                if sequence < next {
                    continue;
                }
                let id = message
                    .headers
                    .as_ref()
                    .and_then(|headers| headers.get(async_nats::header::NATS_MESSAGE_ID))
                    .map(|value| value.as_str().to_owned());
                let arrived = Arrived {
                    sequence,
                    message: message.message.clone(),
                    id,
                };
                if sender.send(Ok(arrived)).await.is_err() {
                    return;
                }
                next = sequence + 1;
            }
        }
        if sender.is_closed() {
            return;
        }
        tokio::time::sleep(PAUSE_MIN).await;
    }
}

/// Checks `batch` against the local log and appends the records it lacks, sealed, in one
/// transaction; returns what the log then holds. A record at a position the log already holds
/// must be the local record there (a shared host reads its own messages back); a message that
/// starts past the head is a gap ([`ReplicationError::Gap`]), for the caller to read again.
/// A message refused, damaged or forked stops the batch there: the whole messages before it
/// are appended, nothing of it, and its error is returned.
pub(crate) async fn apply_checked(
    store: &Arc<Store>,
    batch: Vec<Arrived>,
    durability: Durability,
) -> Result<Applied, ReplicationError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || {
        let held = store.head()?;
        let mut taken = Taken {
            head: held,
            sequence: 0,
            records: Vec::new(),
        };
        let stopped = batch
            .into_iter()
            .try_for_each(|arrived| take_message(&store, held, &mut taken, arrived))
            .err();
        if !taken.records.is_empty() {
            store.write_with(durability, |session| append_runs(session, &taken.records))?;
            // An erasure replicated here destroys this replica's copy of the key, if it
            // imported one (`Keys::import`).
            store.destroy_keys_erased_by(&taken.records)?;
        }
        match stopped {
            Some(error) => Err(error),
            None => Ok(Applied {
                sequence: taken.sequence,
                head: taken.head,
            }),
        }
    })
    .await
    .map_err(ReplicationError::nats(NatsOperation::LocalAppend))?
}

/// What a batch has taken so far: the whole messages checked, the last one's sequence, and
/// the head the log will have once their records are appended.
struct Taken {
    head: Head,
    sequence: u64,
    records: Vec<Record>,
}

/// Checks one message against the log as `held` on disk and `taken` by the batch before it,
/// and takes its records; takes nothing of a message it refuses.
fn take_message(
    store: &Store,
    held: Head,
    taken: &mut Taken,
    arrived: Arrived,
) -> Result<(), ReplicationError> {
    let message = wire::checked_message(
        arrived.sequence,
        &arrived.message.payload,
        arrived.id.as_deref(),
        store.limits(),
        taken.head.next,
    )?;
    let first = message[0].position;
    if first > taken.head.next {
        return Err(ReplicationError::Gap {
            due: taken.head.next,
            sequence: arrived.sequence,
            first,
        });
    }
    let mut head = taken.head;
    let mut fresh = Vec::new();
    for record in message {
        let position = record.position;
        if position < head.next {
            let ours = if position < held.next {
                store.get(position)?.map(|ours| ours.hash)
            } else {
                // A message repeating records of an earlier one in this batch: no sound
                // stream holds one.
                None
            };
            if ours != Some(record.hash) {
                return Err(ReplicationError::Fork {
                    position,
                    problem: ForkProblem::Record {
                        sequence: arrived.sequence,
                        hash: record.hash,
                    },
                });
            }
            continue;
        }
        if record.prev != head.hash {
            return Err(ReplicationError::Fork {
                position,
                problem: ForkProblem::Chain {
                    sequence: arrived.sequence,
                    prev: record.prev,
                    head: head.hash,
                },
            });
        }
        head = Head {
            next: Position(position.0 + 1),
            hash: record.hash,
        };
        fresh.push(record);
    }
    taken.head = head;
    taken.sequence = arrived.sequence;
    taken.records.append(&mut fresh);
    Ok(())
}

/// Appends checked records sealed, one stream's consecutive records at a time.
pub(crate) fn append_runs(
    session: &mut WriteSession<'_>,
    records: &[Record],
) -> crate::error::Result<()> {
    for run in records
        .chunk_by(|a, b| a.stream == b.stream)
        .flat_map(|run| run.chunks(SEALED_RUN_RECORDS_MAX))
    {
        session.append_sealed(run)?;
    }
    Ok(())
}
