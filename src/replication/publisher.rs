//! The writer side of a replicated log: every committed record of the local log published, in
//! order, to the log's stream.
//!
//! [`Publisher::run`] reads the local log through a [`crate::subscribe::Subscription`] (history,
//! then each commit as it lands), so the log itself is the queue: the writer never waits for
//! the network, and after a restart, a reconnect or a refused publish the publisher starts again
//! from the stream's last sequence. At most [`IN_FLIGHT_MAX`] publishes await their
//! acknowledgement at once (the backpressure: the subscription is read only when there is room).
//! Each publish names the sequence the stream must end at (`position`), so a stream another
//! writer has moved refuses it; the publisher then finds the stream no longer a prefix of its
//! log and stops with [`ReplicationError::Superseded`] or [`ReplicationError::Fork`]. It never
//! publishes over a record the stream holds.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use async_nats::jetstream::context::{Publish, PublishError, PublishErrorKind};
use async_nats::jetstream::publish::PublishAck;
use async_nats::jetstream::{self, stream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::stream::{PAUSE_MIN, ReplicatedLog, record_at, stream_records};
use super::{ReplicationError, wire};
use crate::record::Position;
use crate::store::{Durability, Store, WriteSession};
use crate::subscribe::subscribe;

/// Most publishes awaiting their acknowledgement at once.
pub const IN_FLIGHT_MAX: usize = 1024;

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
                let records = stream_records(&stream).await?;
                self.check_prefix(&stream, records).await?;
                self.status
                    .send_modify(|status| status.stored = Position(records));
                self.publish_from(Position(records)).await
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

    /// Refuses unless the stream's `records` records are the local log's first ones: the
    /// stream must not be longer, and its last record must be the local one at its position
    /// (the chain makes that record stand for all before it).
    async fn check_prefix(
        &self,
        stream: &stream::Stream,
        records: u64,
    ) -> Result<(), ReplicationError> {
        let head = self.store.head()?;
        if records > head.next.0 {
            return Err(ReplicationError::Superseded {
                position: head.next,
                stream_records: records,
            });
        }
        let Some(last) = records.checked_sub(1).map(Position) else {
            return Ok(());
        };
        let theirs = record_at(stream, last).await?;
        let ours = self.store.get(last)?.ok_or(crate::error::Error::Corrupt {
            position: last,
            problem: Box::new(crate::record::problem::Problem::Missing),
        })?;
        if theirs.hash != ours.hash {
            return Err(ReplicationError::Fork {
                position: last,
                detail: format!(
                    "the stream's record hashes to {}, the local one to {}",
                    theirs.hash, ours.hash
                ),
            });
        }
        Ok(())
    }

    /// Publishes the local log from `next` on, forever; returns the error that interrupted it.
    async fn publish_from(&self, next: Position) -> Result<Infallible, ReplicationError> {
        let mut records = subscribe(Arc::clone(&self.store), next);
        let mut in_flight: VecDeque<(Position, AckFuture)> = VecDeque::new();
        loop {
            tokio::select! {
                // Acknowledgements first: they free room and advance `stored`.
                biased;
                acked = async {
                    match in_flight.front_mut() {
                        Some((_, ack)) => ack.as_mut().await,
                        None => std::future::pending().await,
                    }
                }, if !in_flight.is_empty() => {
                    let Some((position, _)) = in_flight.pop_front() else {
                        continue;
                    };
                    self.acknowledged(position, acked)?;
                }
                record = records.next(), if in_flight.len() < IN_FLIGHT_MAX => {
                    let record = record?;
                    let position = record.position;
                    let id = wire::message_id(&record.hash);
                    let bytes = wire::stored_bytes(record)?;
                    let publish = Publish::build()
                        .payload(bytes.into())
                        .message_id(id)
                        .expected_last_sequence(position.0);
                    let ack = self
                        .jetstream
                        .send_publish(self.log.subject().to_owned(), publish)
                        .await
                        .map_err(ReplicationError::nats)?;
                    in_flight.push_back((position, ack.into_future()));
                }
            }
        }
    }

    /// Takes the acknowledgement of the publish of `position`.
    fn acknowledged(
        &self,
        position: Position,
        acked: Result<PublishAck, PublishError>,
    ) -> Result<(), ReplicationError> {
        match acked {
            Ok(ack) if ack.sequence == wire::sequence_of(position) => {
                self.status
                    .send_modify(|status| status.stored = Position(position.0 + 1));
                Ok(())
            }
            // Stored somewhere else (a duplicate of a different place): look again.
            Ok(ack) => Err(ReplicationError::Nats {
                detail: format!(
                    "position {position} was acknowledged at sequence {}",
                    ack.sequence
                ),
            }),
            Err(error) => {
                if error.kind() == PublishErrorKind::WrongLastSequence {
                    self.status.send_modify(|status| status.refused += 1);
                }
                // Whether refused or lost, the stream is read again: a publish lost in a
                // reconnect refuses the ones after it too, and a stream another writer moved
                // is found no longer a prefix of this log.
                Err(ReplicationError::nats(error))
            }
        }
    }
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
        .map_err(|error| ReplicationError::Nats {
            detail: format!("the write task failed: {error}"),
        })??;
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
            .map_err(ReplicationError::nats)?
            .clone();
        match reached.stopped {
            Some(detail) if reached.stored < records => Err(ReplicationError::Nats {
                detail: format!("the publisher stopped: {detail}"),
            }),
            _ => Ok(()),
        }
    }

    /// Stops publishing; what the stream holds stays.
    pub fn stop(self) {
        self.task.abort();
    }

    /// Waits for the publisher to stop on its own and returns why.
    pub async fn stopped(self) -> ReplicationError {
        match self.task.await {
            Ok(error) => error,
            Err(error) => ReplicationError::nats(error),
        }
    }
}
