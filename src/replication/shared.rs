//! A log shared by several writer hosts: each keeps a full local copy, and appends by
//! publishing the next message itself, with the expected last sequence.
//!
//! A command runs in a local write transaction against the host's projections; the records it
//! appends (one or many) are published as **one message** ([`wire::Frame`], atomic: the stream
//! stores all of them or none) while that transaction is open, and the transaction commits only
//! once the stream has stored the message. The host knows the stream's last sequence from what
//! it has applied (the last message its log holds whole), so the publish expects that sequence;
//! its message id is the last record's hash. When another host got there first, the server
//! refuses the publish, the transaction is dropped, the host catches up from the stream (each
//! message checked and appended whole, as a [`super::Follower`] does) and decides the command
//! again against its refreshed projections, at most [`SharedOptions::attempts_max`] times;
//! then it gives up with [`SharedOutcome::GaveUp`], a value. So every host's log is a prefix
//! of the stream, and an outcome is what one host would have decided at the command's place in
//! the log: a fencing token is global. A decision that appends nothing (a refusal, a
//! duplicate) is reported only once the host has seen the whole stream as it stood.
//!
//! A command whose records do not fit in one message ([`wire::MESSAGE_BYTES_MAX`]) is refused
//! whole with [`ReplicationError::TooLarge`]; nothing of it is published or kept.

use std::sync::Arc;

use async_nats::jetstream::context::{Publish, PublishErrorKind};
use async_nats::jetstream::{self, stream};

use super::follower::{Applied, Inbox, apply_checked, check_start};
use super::stream::{PAUSE_MIN, ReplicatedLog, last_sequence};
use super::{NatsOperation, NatsProblem, ReplicationError, wire};
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
pub(crate) const ATTEMPTS_MAX_DEFAULT: u32 = 64;
/// Records after which a local transaction takes no further message while catching up.
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

/// How one attempt that decided went.
enum Attempt<O> {
    /// Its message was stored at `sequence` and its transaction committed.
    Published { outcome: O, sequence: u64 },
    /// It appended nothing.
    AppendedNothing(O),
}

/// One host of a shared log; see the module docs.
pub struct SharedLog {
    store: Arc<Store>,
    jetstream: jetstream::Context,
    log: ReplicatedLog,
    stream: stream::Stream,
    inbox: Inbox,
    /// The last message of the stream the local log holds whole: the sequence this host's
    /// next publish expects the stream to end at.
    applied: u64,
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
        let start = check_start(&stream, store.head()?).await?;
        let inbox = Inbox::start(stream.clone(), log.subject(), start.from);
        let mut shared = SharedLog {
            store,
            jetstream,
            log,
            stream,
            inbox,
            applied: start.applied,
            options,
        };
        shared.catch_up().await?;
        Ok(shared)
    }

    /// The local log.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Catches up with every message the stream holds now; returns the local head's next
    /// position.
    pub async fn catch_up(&mut self) -> Result<Position, ReplicationError> {
        let last = last_sequence(&self.stream).await?;
        while self.applied < last {
            let applied = match self.inbox.next_batch(CATCH_UP_BATCH_RECORDS).await {
                Ok(batch) => apply_checked(&self.store, batch, self.options.durability).await,
                Err(error) => Err(error),
            };
            match applied {
                Ok(applied) => self.took(applied),
                Err(ReplicationError::Nats { .. } | ReplicationError::Gap { .. }) => {
                    self.read_again().await
                }
                Err(error) => return Err(error),
            }
        }
        Ok(self.store.head()?.next)
    }

    /// After a gap or a reader that stopped: reads the stream again from the message after
    /// the last one held.
    async fn read_again(&mut self) {
        tokio::time::sleep(PAUSE_MIN).await;
        self.inbox = Inbox::start(self.stream.clone(), self.log.subject(), self.applied + 1);
    }

    /// Notes messages applied from the inbox (this host's own messages come back there too,
    /// already held).
    fn took(&mut self, applied: Applied) {
        self.applied = self.applied.max(applied.sequence);
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
            let waiting = match self.inbox.waiting(CATCH_UP_BATCH_RECORDS) {
                Ok(waiting) if waiting.is_empty() => Ok(None),
                Ok(waiting) => apply_checked(&self.store, waiting, self.options.durability)
                    .await
                    .map(Some),
                Err(error) => Err(error),
            };
            match waiting {
                Ok(Some(applied)) => self.took(applied),
                Ok(None) => {}
                Err(ReplicationError::Nats { .. } | ReplicationError::Gap { .. }) => {
                    self.read_again().await
                }
                Err(error) => return Err(error),
            }
            match self.decide_and_publish(Arc::clone(&work)).await {
                Ok(Attempt::Published { outcome, sequence }) => {
                    self.applied = sequence;
                    return Ok(SharedOutcome::Done(outcome));
                }
                Ok(Attempt::AppendedNothing(outcome)) => {
                    // Final only if decided against the whole stream.
                    if self.applied >= last_sequence(&self.stream).await? {
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

    /// One attempt: decides in a local transaction, publishes its records as one message
    /// expecting the stream to end at the last message this host applied, while the
    /// transaction is open, and commits it only once the stream stored the message.
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
        let expected = self.applied;
        let runtime = tokio::runtime::Handle::current();
        let decided = tokio::task::spawn_blocking(move || {
            store.write_with(durability, |session| {
                let mut sealed = Vec::new();
                let outcome = work(session, &mut sealed)?;
                let Some(frame) = frame_of(&sealed).map_err(replication)? else {
                    return Ok(Attempt::AppendedNothing(outcome));
                };
                let sequence = publish_blocking(&runtime, &jetstream, subject, frame, expected)?;
                Ok(Attempt::Published { outcome, sequence })
            })
        })
        .await
        .map_err(ReplicationError::nats(NatsOperation::LocalTransaction))?;
        decided.map_err(|error| match error {
            crate::error::Error::Replication(error) => *error,
            other => other.into(),
        })
    }
}

/// Publishes `frame` to `subject` as one message expecting the stream to end at `expected`,
/// blocking on `runtime` until the stream acknowledges it: the sequence it stored the message
/// at, which must be the one after `expected` (a message stored elsewhere, a duplicate, is
/// refused, and the stream, read again, says what it holds).
fn publish_blocking(
    runtime: &tokio::runtime::Handle,
    jetstream: &jetstream::Context,
    subject: String,
    frame: wire::Frame,
    expected: u64,
) -> crate::error::Result<u64> {
    let (first, end) = (frame.first(), frame.end());
    let publish = Publish::build()
        .message_id(frame.message_id())
        .expected_last_sequence(expected)
        .payload(frame.into_bytes().into());
    let ack = runtime
        .block_on(async {
            let ack = jetstream.send_publish(subject, publish).await?;
            ack.await
        })
        .map_err(|error| {
            let problem = match error.kind() {
                PublishErrorKind::WrongLastSequence => {
                    NatsProblem::WrongLastSequence { expected, first }
                }
                _ => NatsProblem::Failed {
                    cause: error.to_string(),
                },
            };
            replication(ReplicationError::Nats {
                operation: NatsOperation::Publish,
                problem,
            })
        })?;
    if ack.sequence != expected + 1 {
        return Err(replication(ReplicationError::Nats {
            operation: NatsOperation::Acknowledge,
            problem: NatsProblem::AcknowledgedElsewhere {
                first,
                end,
                sequence: ack.sequence,
                expected: expected + 1,
            },
        }));
    }
    Ok(ack.sequence)
}

fn replication(error: ReplicationError) -> crate::error::Error {
    crate::error::Error::Replication(Box::new(error))
}

/// The one message holding every record a command decided (none when it decided none);
/// refused whole when they do not fit in one.
fn frame_of(sealed: &[Sealed]) -> Result<Option<wire::Frame>, ReplicationError> {
    let Some((first, rest)) = sealed.split_first() else {
        return Ok(None);
    };
    let mut frame = wire::Frame::new(first.position, &first.bytes, first.hash)?;
    for record in rest {
        if !frame.push(&record.bytes, record.hash) {
            let bytes = sealed
                .iter()
                .map(|record| record.bytes.len() as u64 + 4)
                .sum::<u64>()
                + wire::FRAME_HEADER_BYTES as u64;
            return Err(ReplicationError::TooLarge {
                position: first.position,
                records: sealed.len() as u64,
                bytes,
                limit: wire::MESSAGE_BYTES_MAX as u64,
            });
        }
    }
    Ok(Some(frame))
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
