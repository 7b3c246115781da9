//! A log shared by several writer hosts: each keeps a full local copy, and appends by
//! publishing the next record itself, with the expected last sequence.
//!
//! A command runs in a local write transaction against the host's projections; its record is
//! published (expected last sequence: its position) while that transaction is open, and the
//! transaction commits only once the stream has stored the record. When another host got
//! there first, the server refuses the publish, the transaction is dropped, the host catches up
//! from the stream (each record checked, as a [`super::Follower`] does) and decides the command
//! again against its refreshed projections, at most [`SharedOptions::attempts_max`] times;
//! then it gives up with [`SharedOutcome::GaveUp`], a value. So every host's log is a prefix
//! of the stream, and an outcome is what one host would have decided at the command's place in
//! the log: a fencing token is global. A decision that appends nothing (a refusal, a
//! duplicate) is reported only once the host has seen the whole stream as it stood.
//!
//! A command must append at most one record ([`ReplicationError::SpansRecords`] otherwise):
//! the records of one command could not be published atomically.

use std::sync::Arc;

use async_nats::jetstream::context::{Publish, PublishErrorKind};
use async_nats::jetstream::{self, stream};

use super::follower::{Inbox, apply_checked, check_start};
use super::stream::{ReplicatedLog, stream_records};
use super::{ReplicationError, wire};
use crate::command::Command;
use crate::hash::{self, Digest};
use crate::log::append::{AppendOutcome, Appended, ExpectedVersion};
use crate::record::{NewEvent, Placement, Position, encode_stored_hashed};
use crate::store::{Durability, Store, WriteSession};

/// How a shared-log host retries and commits.
#[derive(Clone, Copy, Debug)]
pub struct SharedOptions {
    /// Most decisions of one command before it gives up.
    pub attempts_max: u32,
    /// How the local transactions commit. The stream holds a record before the local commit
    /// of it, so a host that loses deferred commits in a crash reads them back from the stream.
    pub durability: Durability,
}

impl Default for SharedOptions {
    fn default() -> Self {
        SharedOptions {
            attempts_max: ATTEMPTS_MAX_DEFAULT,
            durability: Durability::Immediate,
        }
    }
}

/// Decisions of one command before it gives up, unless told otherwise.
pub const ATTEMPTS_MAX_DEFAULT: u32 = 64;
/// Messages applied in one local transaction while catching up.
const CATCH_UP_BATCH_RECORDS: usize = 4096;

/// What a shared-log command came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedOutcome<O> {
    /// Decided, and (if it appended) stored by the stream and committed locally.
    Done(O),
    /// Other hosts appended before every attempt: nothing of it was stored.
    GaveUp {
        /// How many times it was decided.
        attempts: u32,
    },
}

/// A record decided by this host, encoded for the stream.
struct Sealed {
    position: Position,
    hash: Digest,
    bytes: Vec<u8>,
}

/// Why one attempt did not end the command.
enum Attempt<O> {
    Published(O),
    AppendedNothing(O),
}

/// One host of a shared log; see the module docs.
pub struct SharedLog {
    store: Arc<Store>,
    jetstream: jetstream::Context,
    log: ReplicatedLog,
    stream: stream::Stream,
    inbox: Inbox,
    options: SharedOptions,
}

impl SharedLog {
    /// Joins the shared log `log` (creating its stream when missing) with the local log
    /// `store`, which must be a prefix of the stream; catches up with it.
    pub async fn open(
        store: Arc<Store>,
        jetstream: jetstream::Context,
        log: ReplicatedLog,
        options: SharedOptions,
    ) -> Result<Self, ReplicationError> {
        let stream = log.open(&jetstream).await?;
        let records = stream_records(&stream).await?;
        check_start(&stream, records, store.head()?).await?;
        let inbox = Inbox::start(stream.clone(), log.subject(), store.head()?.next);
        let mut shared = SharedLog {
            store,
            jetstream,
            log,
            stream,
            inbox,
            options,
        };
        shared.catch_up().await?;
        Ok(shared)
    }

    /// The local log.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Catches up with every record the stream holds now; returns the local head's next
    /// position.
    pub async fn catch_up(&mut self) -> Result<Position, ReplicationError> {
        let records = stream_records(&self.stream).await?;
        loop {
            let head = self.store.head()?.next;
            if head.0 >= records {
                return Ok(head);
            }
            let applied = match self.inbox.next_batch(CATCH_UP_BATCH_RECORDS).await {
                Ok(batch) => apply_checked(&self.store, batch, self.options.durability).await,
                Err(error) => Err(error),
            };
            match applied {
                Ok(_) => {}
                Err(ReplicationError::Nats { .. }) => {
                    // A gap or a reader that stopped: read again from the local head.
                    tokio::time::sleep(super::stream::PAUSE_MIN).await;
                    let head = self.store.head()?.next;
                    self.inbox = Inbox::start(self.stream.clone(), self.log.subject(), head);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// Runs `command` on the shared log: decided against this host's projections at the
    /// stream's end; see the module docs.
    pub async fn execute<C>(
        &mut self,
        command: C,
    ) -> Result<SharedOutcome<C::Outcome>, ReplicationError>
    where
        C: Command + Send + Sync + 'static,
        C::Outcome: Send + 'static,
    {
        let command = Arc::new(command);
        self.attempt(move |session, sealed| {
            let decision = command.decide(session.state())?;
            for emit in &decision.emits {
                let before = session.head();
                let appended =
                    session.append_unchecked(&emit.stream, emit.expected, &emit.events)?;
                seal(&emit.stream, &emit.events, before.hash, appended, sealed)?;
            }
            Ok(decision.outcome)
        })
        .await
    }

    /// Appends raw `events` to `stream` on the shared log (see [`Store::append`]); an
    /// idempotency key makes a retried append exactly-once across hosts.
    pub async fn append(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<SharedOutcome<AppendOutcome>, ReplicationError> {
        let stream = stream.to_owned();
        self.attempt(move |session, sealed| {
            let before = session.head();
            let outcome = session.append(&stream, expected, &events)?;
            seal(&stream, &events, before.hash, outcome.clone(), sealed)?;
            Ok(outcome)
        })
        .await
    }

    async fn attempt<O, W>(&mut self, work: W) -> Result<SharedOutcome<O>, ReplicationError>
    where
        O: Send + 'static,
        W: Fn(&mut WriteSession<'_>, &mut Vec<Sealed>) -> crate::error::Result<O>
            + Send
            + Sync
            + 'static,
    {
        let work = Arc::new(work);
        for _ in 0..self.options.attempts_max {
            // What has arrived is applied first, so a decision is rarely stale.
            let waiting = self.inbox.waiting(CATCH_UP_BATCH_RECORDS)?;
            if !waiting.is_empty() {
                apply_checked(&self.store, waiting, self.options.durability).await?;
            }
            match self.decide_and_publish(Arc::clone(&work)).await {
                Ok(Attempt::Published(outcome)) => return Ok(SharedOutcome::Done(outcome)),
                Ok(Attempt::AppendedNothing(outcome)) => {
                    // Final only if decided against the whole stream.
                    let records = stream_records(&self.stream).await?;
                    if self.store.head()?.next.0 >= records {
                        return Ok(SharedOutcome::Done(outcome));
                    }
                }
                // Refused (another host was first) or lost: the stream says which.
                Err(ReplicationError::Nats { .. }) => {}
                Err(error) => return Err(error),
            }
            self.catch_up().await?;
        }
        Ok(SharedOutcome::GaveUp {
            attempts: self.options.attempts_max,
        })
    }

    /// One attempt: decides in a local transaction, publishes its record while the
    /// transaction is open and commits it only once the stream stored the record.
    async fn decide_and_publish<O, W>(&self, work: Arc<W>) -> Result<Attempt<O>, ReplicationError>
    where
        O: Send + 'static,
        W: Fn(&mut WriteSession<'_>, &mut Vec<Sealed>) -> crate::error::Result<O>
            + Send
            + Sync
            + 'static,
    {
        let store = Arc::clone(&self.store);
        let jetstream = self.jetstream.clone();
        let subject = self.log.subject().to_owned();
        let durability = self.options.durability;
        let runtime = tokio::runtime::Handle::current();
        let decided = tokio::task::spawn_blocking(move || {
            store.write_with(durability, |session| {
                let mut sealed = Vec::new();
                let outcome = work(session, &mut sealed)?;
                let record = match sealed.as_slice() {
                    [] => return Ok(Attempt::AppendedNothing(outcome)),
                    [record] => record,
                    more => {
                        return Err(replication(ReplicationError::SpansRecords {
                            records: more.len() as u64,
                        }));
                    }
                };
                let publish = Publish::build()
                    .payload(record.bytes.clone().into())
                    .message_id(wire::message_id(&record.hash))
                    .expected_last_sequence(record.position.0);
                runtime
                    .block_on(async {
                        let ack = jetstream.send_publish(subject, publish).await?;
                        ack.await
                    })
                    .map_err(|error| {
                        let detail = match error.kind() {
                            PublishErrorKind::WrongLastSequence => {
                                format!("another host appended at position {}", record.position)
                            }
                            _ => error.to_string(),
                        };
                        replication(ReplicationError::Nats { detail })
                    })?;
                Ok(Attempt::Published(outcome))
            })
        })
        .await
        .map_err(|error| ReplicationError::Nats {
            detail: format!("the local transaction failed: {error}"),
        })?;
        decided.map_err(|error| match error {
            crate::error::Error::Replication(error) => *error,
            other => other.into(),
        })
    }
}

fn replication(error: ReplicationError) -> crate::error::Error {
    crate::error::Error::Replication(Box::new(error))
}

/// Encodes the records an append just wrote (from its events and where the log placed them,
/// chained from `prev`) onto `sealed`, and checks they end at the head the log reports.
fn seal(
    stream: &str,
    events: &[NewEvent],
    mut prev: Digest,
    outcome: AppendOutcome,
    sealed: &mut Vec<Sealed>,
) -> crate::error::Result<()> {
    let AppendOutcome::Appended(Appended {
        first_position,
        first_version,
        head,
        ..
    }) = outcome
    else {
        return Ok(());
    };
    for (offset, event) in (0u64..).zip(events) {
        let placement = Placement {
            stream,
            position: Position(first_position.0 + offset),
            version: crate::record::StreamVersion(first_version.0 + offset),
            prev,
        };
        let mut bytes = Vec::new();
        let hash = encode_stored_hashed(
            &mut bytes,
            event,
            placement,
            hash::payload_hash(&event.payload),
        )?;
        sealed.push(Sealed {
            position: placement.position,
            hash,
            bytes,
        });
        prev = hash;
    }
    // The log's own encoding and this one are the same function: they must agree.
    assert_eq!(prev, head.hash, "the sealed records end at the log's head");
    Ok(())
}
