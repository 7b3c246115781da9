//! The replica side: a local log that takes the stream's records, each checked before it is
//! kept.
//!
//! A [`Follower`]'s checkpoint is its local head: it reads the stream from the sequence after
//! it (an ordered consumer, recreated after any trouble from where it stopped), and for each
//! message checks the record at its position ([`wire::checked_record`]: hashes and the message
//! id), its link to the local head (`prev`), then appends whole batches sealed in one local
//! transaction, every projection applied as on the writer. A record that does not chain is a
//! fork, named by its position; nothing after it is taken. This module is also how a
//! [`super::SharedLog`] host catches up.

use std::sync::Arc;

use async_nats::jetstream::consumer::{DeliverPolicy, pull};
use async_nats::jetstream::{self, stream};
use futures::StreamExt;
use tokio::sync::{mpsc, watch};

use super::publisher::Publisher;
use super::stream::{PAUSE_MIN, ReplicatedLog, record_at, retry, stream_records};
use super::{ReplicationError, wire};
use crate::log::Head;
use crate::record::{Position, Record};
use crate::store::{Durability, Store, WriteSession};

/// How a follower reads and writes.
#[derive(Clone, Copy, Debug)]
pub struct FollowerOptions {
    /// Most records appended in one local transaction.
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
pub const BATCH_RECORDS_DEFAULT: usize = 4096;
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

/// A local log following a stream; see the module docs.
pub struct Follower {
    store: Arc<Store>,
    jetstream: jetstream::Context,
    log: ReplicatedLog,
    options: FollowerOptions,
    head: watch::Sender<Position>,
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
        })
    }

    /// Watches the local head's next position as records are appended.
    pub fn head(&self) -> watch::Receiver<Position> {
        self.head.subscribe()
    }

    /// The local log.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Follows the stream until an error it cannot retry (a fork, a damaged record, the local
    /// log failing); cancel it by dropping the future. NATS trouble is retried from the local
    /// head.
    pub async fn run(&self) -> ReplicationError {
        loop {
            match self.follow(None).await {
                Err(ReplicationError::Nats { .. }) => tokio::time::sleep(PAUSE_MIN).await,
                Err(error) => return error,
                // Following without an end does not end; were it to, it starts again.
                Ok(_) => {}
            }
        }
    }

    /// Follows until the local log holds every record the stream held when called; returns
    /// the local head's next position.
    pub async fn catch_up(&self) -> Result<Position, ReplicationError> {
        let stream = self.open_stream().await?;
        let records = stream_records(&stream).await?;
        loop {
            match self.follow(Some(records)).await {
                Err(ReplicationError::Nats { .. }) => tokio::time::sleep(PAUSE_MIN).await,
                other => return other,
            }
        }
    }

    /// Makes this host the log's writer: catches up with the stream, then publishes from the
    /// stream's last record on. The old writer's later publishes are refused by the expected
    /// last sequence; this log's next record chains from the stream's last.
    pub async fn promote(self) -> Result<Publisher, ReplicationError> {
        self.catch_up().await?;
        Ok(Publisher::new(self.store, self.jetstream, self.log))
    }

    async fn open_stream(&self) -> Result<stream::Stream, ReplicationError> {
        retry(|| async {
            self.jetstream
                .get_stream(self.log.stream_name())
                .await
                .map_err(ReplicationError::nats)
        })
        .await
    }

    /// Follows until the local log holds `until` records (forever with `None`).
    async fn follow(&self, until: Option<u64>) -> Result<Position, ReplicationError> {
        let stream = self.open_stream().await?;
        let records = stream_records(&stream).await?;
        let mut head = self.store.head()?;
        check_start(&stream, records, head).await?;
        let done = |head: Head| until.is_some_and(|until| head.next.0 >= until);
        if done(head) {
            return Ok(head.next);
        }
        let mut inbox = Inbox::start(stream, self.log.subject(), head.next);
        loop {
            let batch = inbox.next_batch(self.options.batch_records).await?;
            head = apply_checked(&self.store, batch, self.options.durability).await?;
            self.head.send_replace(head.next);
            if done(head) {
                return Ok(head.next);
            }
        }
    }
}

/// Refuses a local log the stream does not continue: one longer than the stream, or whose last
/// record is not the stream's at that position.
pub(crate) async fn check_start(
    stream: &stream::Stream,
    records: u64,
    head: Head,
) -> Result<(), ReplicationError> {
    if head.next.0 > records {
        return Err(ReplicationError::Fork {
            position: Position(records),
            detail: format!(
                "the local log holds {} records, the stream {records}",
                head.next
            ),
        });
    }
    let Some(last) = head.next.0.checked_sub(1).map(Position) else {
        return Ok(());
    };
    let theirs = record_at(stream, last).await?;
    if theirs.hash != head.hash {
        return Err(ReplicationError::Fork {
            position: last,
            detail: format!(
                "the stream's record hashes to {}, the local one to {}",
                theirs.hash, head.hash
            ),
        });
    }
    Ok(())
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
    /// Reads `subject`'s messages from the one holding the record at `from` on.
    pub(crate) fn start(stream: stream::Stream, subject: &str, from: Position) -> Self {
        let (sender, receiver) = mpsc::channel(INBOX_MESSAGES);
        let subject = subject.to_owned();
        let reader = tokio::spawn(read_messages(stream, subject, from, sender));
        Inbox { receiver, reader }
    }

    /// The next message and those already waiting behind it, at most `most`.
    pub(crate) async fn next_batch(
        &mut self,
        most: usize,
    ) -> Result<Vec<Arrived>, ReplicationError> {
        let first = self.receiver.recv().await.ok_or(ReplicationError::Nats {
            detail: "the stream's reader stopped".into(),
        })??;
        let mut batch = vec![first];
        while batch.len() < most {
            match self.receiver.try_recv() {
                Ok(arrived) => batch.push(arrived?),
                Err(_) => break,
            }
        }
        Ok(batch)
    }

    /// The messages already waiting, without waiting for more.
    pub(crate) fn waiting(&mut self, most: usize) -> Result<Vec<Arrived>, ReplicationError> {
        let mut batch = Vec::new();
        while batch.len() < most {
            match self.receiver.try_recv() {
                Ok(arrived) => batch.push(arrived?),
                Err(_) => break,
            }
        }
        Ok(batch)
    }
}

/// Sends every message from the record at `from` on, in sequence order, each once: an ordered
/// consumer, created again from the next sequence due after any error.
async fn read_messages(
    stream: stream::Stream,
    subject: String,
    from: Position,
    sender: mpsc::Sender<Result<Arrived, ReplicationError>>,
) {
    let mut next = wire::sequence_of(from);
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
/// transaction; returns the new head. A message for a position the log already holds must be
/// the local record there (a shared host reads its own records back); a message past the head
/// is a gap, refused as a NATS error so the caller reads again from the head.
pub(crate) async fn apply_checked(
    store: &Arc<Store>,
    batch: Vec<Arrived>,
    durability: Durability,
) -> Result<Head, ReplicationError> {
    let store = Arc::clone(store);
    tokio::task::spawn_blocking(move || {
        let mut head = store.head()?;
        let mut records: Vec<Record> = Vec::with_capacity(batch.len());
        for arrived in batch {
            let record = wire::checked_record(
                &arrived.message.payload,
                arrived.sequence,
                arrived.id.as_deref(),
            )?;
            let position = record.position;
            if position < head.next {
                let ours = store.get(position)?;
                if ours.as_ref().map(|ours| ours.hash) != Some(record.hash) {
                    return Err(ReplicationError::Fork {
                        position,
                        detail: format!(
                            "the stream's record hashes to {}, the local one differs",
                            record.hash
                        ),
                    });
                }
                continue;
            }
            if position > head.next {
                return Err(ReplicationError::Nats {
                    detail: format!(
                        "the stream gave position {position} when {} was due",
                        head.next
                    ),
                });
            }
            if record.prev != head.hash {
                return Err(ReplicationError::Fork {
                    position,
                    detail: format!(
                        "the stream's record chains from {}, the local head is {}",
                        record.prev, head.hash
                    ),
                });
            }
            head = Head {
                next: Position(position.0 + 1),
                hash: record.hash,
            };
            records.push(record);
        }
        if records.is_empty() {
            return Ok(head);
        }
        store.write_with(durability, |session| append_runs(session, &records))?;
        Ok(head)
    })
    .await
    .map_err(|error| ReplicationError::Nats {
        detail: format!("the local append failed: {error}"),
    })?
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
