//! The writer side of a replicated log: every committed record of the local log published, in
//! order, to the log's stream.
//!
//! [`Publisher::run`] reads the local log through a [`crate::subscribe::Subscription`] (history,
//! then each commit as it lands), so the log itself is the queue: the writer never waits for
//! the network. Each message is a run of consecutive records ([`wire::Frame`]): the records at
//! hand when it is built, at most [`MESSAGE_RECORDS_MAX`] and [`wire::MESSAGE_BYTES_MAX`]; a
//! writer committing one record at a time publishes one message per record, a backlog goes in
//! large messages.
//!
//! The publisher keeps the stream's last sequence in memory. At start, and again after a
//! reconnect or a refused publish, it reads the stream's last message: its sequence, and the
//! position its last record ends at, is where publishing resumes (`stream_end`). At most
//! [`IN_FLIGHT_MAX`] messages and [`IN_FLIGHT_BYTES_MAX`] bytes await their acknowledgement at
//! once (the backpressure: the subscription is read only when there is room). Each publish
//! names the sequence the stream must end at before it, so a stream another writer has moved
//! refuses it; the publisher then finds the stream no longer a prefix of its log and stops with
//! [`ReplicationError::Superseded`] or [`ReplicationError::Fork`]. It never publishes over a
//! record the stream holds.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use async_nats::jetstream;
use async_nats::jetstream::context::{Publish, PublishError, PublishErrorKind};
use async_nats::jetstream::publish::PublishAck;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::stream::{PAUSE_MIN, ReplicatedLog, StreamEnd, stream_end};
use super::{ForkProblem, NatsOperation, NatsProblem, ReplicationError, wire};
use crate::hash::Digest;
use crate::record::Position;
use crate::store::{Durability, Store, WriteSession};
use crate::subscribe::{Subscription, subscribe};

/// Most messages awaiting their acknowledgement at once.
pub(crate) const IN_FLIGHT_MAX: usize = 1024;
/// Most bytes of messages awaiting their acknowledgement at once.
pub(crate) const IN_FLIGHT_BYTES_MAX: usize = 64 * 1024 * 1024;
/// Most records in one message of a publisher.
pub(crate) const MESSAGE_RECORDS_MAX: u32 = 1024;

const _: () = assert!(IN_FLIGHT_MAX > 0 && MESSAGE_RECORDS_MAX > 0);
const _: () = assert!(IN_FLIGHT_BYTES_MAX >= wire::MESSAGE_BYTES_MAX);

/// Where a publisher stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublisherStatus {
    /// How many records the stream has acknowledged: it holds positions `0 .. stored`.
    pub stored: Position,
    /// Publishes the server refused because the stream did not end where they expected.
    pub refused: u64,
    /// Times the publisher started again from the stream's last sequence after a NATS error.
    pub resumes: u64,
    /// Why it stopped, once it has.
    pub stopped: Option<String>,
}

type AckFuture = Pin<Box<dyn Future<Output = Result<PublishAck, PublishError>> + Send>>;

/// A message published and not yet acknowledged.
struct InFlight {
    /// The sequence it must be stored at.
    sequence: u64,
    /// The position of its first record.
    first: Position,
    /// The position after its last record.
    end: Position,
    /// Its size.
    bytes: usize,
    ack: AckFuture,
}

/// A record read from the log and encoded for the wire.
struct Encoded {
    position: Position,
    hash: Digest,
    stored: Vec<u8>,
}

/// Publishes a local log's committed records to its stream; see the module docs.
pub struct Publisher {
    store: Arc<Store>,
    jetstream: jetstream::Context,
    log: ReplicatedLog,
    status: watch::Sender<PublisherStatus>,
}

impl Publisher {
    /// A publisher of `store`'s records to `log`'s stream (created when missing).
    pub fn new(store: Arc<Store>, jetstream: jetstream::Context, log: ReplicatedLog) -> Self {
        Publisher {
            store,
            jetstream,
            log,
            status: watch::Sender::new(PublisherStatus::default()),
        }
    }

    /// Watches where the publisher stands.
    pub fn status(&self) -> watch::Receiver<PublisherStatus> {
        self.status.subscribe()
    }

    /// The local log it publishes.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Publishes until it is refused or fails for good; cancel it by dropping the future. It
    /// returns only with the error that stopped it (also kept in [`PublisherStatus::stopped`]).
    pub async fn run(&self) -> ReplicationError {
        let error = self.publish().await;
        self.status
            .send_modify(|status| status.stopped = Some(error.to_string()));
        error
    }

    async fn publish(&self) -> ReplicationError {
        let stream = match self.log.open(&self.jetstream).await {
            Ok(stream) => stream,
            Err(error) => return error,
        };
        loop {
            let resumed = async {
                let end = stream_end(&stream).await?;
                self.check_prefix(end)?;
                self.status.send_modify(|status| status.stored = end.next);
                self.publish_from(end).await
            };
            match resumed.await {
                Err(ReplicationError::Nats { .. }) => {
                    self.status.send_modify(|status| status.resumes += 1);
                    tokio::time::sleep(PAUSE_MIN).await;
                }
                Err(error) => return error,
                Ok(never) => match never {},
            }
        }
    }

    /// Refuses unless the stream's records are the local log's first ones: the stream must
    /// not be longer, and its last record must be the local one at its position (the chain
    /// makes that record stand for all before it).
    fn check_prefix(&self, end: StreamEnd) -> Result<(), ReplicationError> {
        let head = self.store.head()?;
        if end.next > head.next {
            return Err(ReplicationError::Superseded {
                position: head.next,
                stream_records: end.next.0,
            });
        }
        let (Some(theirs), Some(last)) = (end.last_hash, end.next.0.checked_sub(1)) else {
            return Ok(());
        };
        let last = Position(last);
        let ours = self.store.get(last)?.ok_or(crate::error::Error::Corrupt {
            position: last,
            problem: Box::new(crate::record::problem::Problem::Missing),
        })?;
        if theirs != ours.hash {
            return Err(ReplicationError::Fork {
                position: last,
                problem: ForkProblem::Hash {
                    stream: theirs,
                    local: ours.hash,
                },
            });
        }
        Ok(())
    }

    /// Publishes the local log from the stream's `end` on, forever; returns the error that
    /// interrupted it.
    async fn publish_from(&self, end: StreamEnd) -> Result<Infallible, ReplicationError> {
        let mut records = subscribe(Arc::clone(&self.store), end.next);
        // The stream's last sequence once every message published so far is stored.
        let mut sequence = end.sequence;
        // A record read that did not fit in the last message: the next one's first.
        let mut carried: Option<Encoded> = None;
        let mut in_flight: VecDeque<InFlight> = VecDeque::new();
        let mut in_flight_bytes = 0;
        loop {
            let room = in_flight.len() < IN_FLIGHT_MAX && in_flight_bytes < IN_FLIGHT_BYTES_MAX;
            tokio::select! {
                // Acknowledgements first: they free room and advance `stored`.
                biased;
                acked = async {
                    match in_flight.front_mut() {
                        Some(sent) => sent.ack.as_mut().await,
                        None => std::future::pending().await,
                    }
                }, if !in_flight.is_empty() => {
                    let Some(sent) = in_flight.pop_front() else {
                        continue;
                    };
                    in_flight_bytes -= sent.bytes;
                    self.acknowledged(&sent, acked)?;
                }
                first = async {
                    match carried.take() {
                        Some(encoded) => Ok(encoded),
                        None => encode(&records.next().await?),
                    }
                }, if room => {
                    let frame = fill_frame(first?, &mut records, &mut carried)?;
                    let publish = Publish::build()
                        .message_id(frame.message_id())
                        .expected_last_sequence(sequence);
                    sequence += 1;
                    let (first, end, bytes) = (frame.first(), frame.end(), frame.len());
                    let publish = publish.payload(frame.into_bytes().into());
                    let ack = self
                        .jetstream
                        .send_publish(self.log.subject().to_owned(), publish)
                        .await
                        .map_err(ReplicationError::nats(NatsOperation::Publish))?;
                    in_flight_bytes += bytes;
                    in_flight.push_back(InFlight {
                        sequence,
                        first,
                        end,
                        bytes,
                        ack: ack.into_future(),
                    });
                }
            }
        }
    }

    /// Takes the acknowledgement of the message `sent`.
    fn acknowledged(
        &self,
        sent: &InFlight,
        acked: Result<PublishAck, PublishError>,
    ) -> Result<(), ReplicationError> {
        match acked {
            Ok(ack) if ack.sequence == sent.sequence => {
                self.status.send_modify(|status| status.stored = sent.end);
                Ok(())
            }
            // Stored somewhere else (a duplicate of a different place): look again.
            Ok(ack) => Err(ReplicationError::Nats {
                operation: NatsOperation::Acknowledge,
                problem: NatsProblem::AcknowledgedElsewhere {
                    first: sent.first,
                    end: sent.end,
                    sequence: ack.sequence,
                    expected: sent.sequence,
                },
            }),
            Err(error) => {
                if error.kind() == PublishErrorKind::WrongLastSequence {
                    self.status.send_modify(|status| status.refused += 1);
                }
                // Whether refused or lost, the stream is read again: a publish lost in a
                // reconnect refuses the ones after it too, and a stream another writer moved
                // is found no longer a prefix of this log.
                Err(ReplicationError::nats(NatsOperation::Acknowledge)(error))
            }
        }
    }
}

/// A record's canonical stored bytes, with its position and hash.
fn encode(record: &crate::record::Record) -> Result<Encoded, ReplicationError> {
    Ok(Encoded {
        position: record.position,
        hash: record.hash,
        stored: wire::stored_bytes(record)?,
    })
}

/// A message starting with `first` and holding the records read after it that are at hand,
/// within the limits; a record that does not fit is left in `carried`.
fn fill_frame(
    first: Encoded,
    records: &mut Subscription,
    carried: &mut Option<Encoded>,
) -> Result<wire::Frame, ReplicationError> {
    let mut frame = wire::Frame::new(first.position, &first.stored, first.hash)?;
    while frame.records() < MESSAGE_RECORDS_MAX {
        let Some(record) = records.next_ready() else {
            break;
        };
        let next = encode(&record)?;
        if !frame.push(&next.stored, next.hash) {
            *carried = Some(next);
            break;
        }
    }
    Ok(frame)
}

/// A local log whose writes can wait for JetStream: commits through the store, publishes in
/// the background, and acknowledges a [`Durability::Replicated`] write only once the stream
/// holds it.
pub struct ReplicatingWriter {
    store: Arc<Store>,
    status: watch::Receiver<PublisherStatus>,
    task: JoinHandle<ReplicationError>,
}

impl ReplicatingWriter {
    /// Starts publishing `store` to `log`'s stream in a task of the current tokio runtime.
    pub fn start(store: Arc<Store>, jetstream: jetstream::Context, log: ReplicatedLog) -> Self {
        let publisher = Publisher::new(Arc::clone(&store), jetstream, log);
        ReplicatingWriter::from_publisher(publisher)
    }

    /// Runs `publisher` in a task of the current tokio runtime.
    pub fn from_publisher(publisher: Publisher) -> Self {
        let store = Arc::clone(publisher.store());
        let status = publisher.status();
        let task = tokio::spawn(async move { publisher.run().await });
        ReplicatingWriter {
            store,
            status,
            task,
        }
    }

    /// The local log.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Watches the publisher.
    pub fn status(&self) -> watch::Receiver<PublisherStatus> {
        self.status.clone()
    }

    /// Runs `work` in one local write transaction (see [`Store::write_with`]) on the blocking
    /// pool. With [`Durability::Replicated`] it returns only once the stream holds every record
    /// up to the commit's; with the other durabilities, once the local commit returns.
    pub async fn write_with<R, W>(
        &self,
        durability: Durability,
        work: W,
    ) -> Result<R, ReplicationError>
    where
        R: Send + 'static,
        W: FnOnce(&mut WriteSession<'_>) -> crate::error::Result<R> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        let (result, head) = tokio::task::spawn_blocking(move || {
            store.write_with(durability, |session| {
                let result = work(session)?;
                Ok((result, session.head()))
            })
        })
        .await
        .map_err(ReplicationError::nats(NatsOperation::WriteTask))??;
        if durability == Durability::Replicated {
            self.replicated(head.next).await?;
        }
        Ok(result)
    }

    /// Waits until the stream holds the first `records` records of the log.
    pub async fn replicated(&self, records: Position) -> Result<(), ReplicationError> {
        let mut status = self.status.clone();
        let reached = status
            .wait_for(|status| status.stored >= records || status.stopped.is_some())
            .await
            .map_err(ReplicationError::nats(NatsOperation::WaitForPublisher))?
            .clone();
        match reached.stopped {
            Some(cause) if reached.stored < records => Err(ReplicationError::Nats {
                operation: NatsOperation::WaitForPublisher,
                problem: NatsProblem::PublisherStopped { cause },
            }),
            _ => Ok(()),
        }
    }

    /// Cuts the log before `before` into the archive at `archive` ([`crate::archive::Archives::archive_before`])
    /// once the stream holds every record the cut removes: the publisher reads what it
    /// publishes from the log, so a cut of a record it had not yet published would stop it.
    /// The cut runs on the blocking pool.
    pub async fn archive_before(
        &self,
        before: Position,
        archive: impl Into<std::path::PathBuf>,
    ) -> Result<crate::store::ArchiveReport, ReplicationError> {
        self.replicated(before).await?;
        let store = Arc::clone(&self.store);
        let archive = archive.into();
        let report = tokio::task::spawn_blocking(move || store.archive_before(before, &archive))
            .await
            .map_err(ReplicationError::nats(NatsOperation::WriteTask))??;
        Ok(report)
    }

    /// Stops publishing; what the stream holds stays.
    pub fn stop(self) {
        self.task.abort();
    }

    /// Waits for the publisher to stop on its own and returns why.
    pub async fn stopped(self) -> ReplicationError {
        match self.task.await {
            Ok(error) => error,
            Err(error) => ReplicationError::nats(NatsOperation::PublisherTask)(error),
        }
    }
}
