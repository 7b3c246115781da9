//! The async writer: group commit for programs where many tokio tasks write at once.
//!
//! A [`Writer`] is a cheap, cloneable, `Send + Sync` handle. Its methods put a job (a raw
//! append, a guarded append, any [`Command`], a flush) on a bounded queue and resolve once the
//! job's batch has committed. One thread owns the write side: it takes what is queued, up to
//! [`WriterOptions::batch_max`] jobs, runs them in arrival order in one [`Store::write_with`]
//! transaction (jobs queued meanwhile join it, up to the same bound), commits once (one durable commit for the batch with [`Durability::Immediate`]), and
//! only then answers every caller. A refused job fails alone and leaves no trace; the rest of
//! its batch commits (see `batch.rs` for how, without savepoints).
//!
//! Writes made directly on the [`Store`] meanwhile still work: redb runs one write
//! transaction at a time, so they simply fall between two batches.
//!
//! This module owns the queue, the batching, failure isolation and answering. It never decides
//! anything itself (commands do, against the state as of their turn), never reads a clock,
//! never drops a job it accepted without answering it, and never answers before the commit.

mod batch;
mod blocking;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::{mpsc, oneshot, watch};

use crate::command::{Command, Precondition};
pub use crate::error::WriterError;
use crate::error::{Error, Result};
use crate::log::append::{AppendOutcome, ExpectedVersion};
use crate::record::{NewEvent, Position, StreamVersion};
pub use crate::store::WriteSession;
use crate::store::{Durability, Store};
use crate::subscribe::{self, Subscription};
use batch::{Answer, Job, Message};

/// Default of [`WriterOptions::batch_max`].
pub const BATCH_MAX_DEFAULT: u32 = 1024;
/// Largest [`WriterOptions::batch_max`] accepted.
pub const BATCH_MAX_CAP: u32 = 65_536;
/// Default of [`WriterOptions::queue_depth`].
pub const QUEUE_DEPTH_DEFAULT: u32 = 4096;
/// Largest [`WriterOptions::queue_depth`] accepted.
pub const QUEUE_DEPTH_CAP: u32 = 1 << 20;

const _: () = assert!(0 < BATCH_MAX_DEFAULT && BATCH_MAX_DEFAULT <= BATCH_MAX_CAP);
const _: () = assert!(0 < QUEUE_DEPTH_DEFAULT && QUEUE_DEPTH_DEFAULT <= QUEUE_DEPTH_CAP);
// The queue holds at least one full batch, so a busy writer always finds one waiting.
const _: () = assert!(BATCH_MAX_DEFAULT <= QUEUE_DEPTH_DEFAULT);

/// How a [`Writer`] batches and commits. Its serde form is what a host gives (the Node
/// package's `store.writer(options)`): a field left out takes its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default)]
pub struct WriterOptions {
    /// Most jobs run in one write transaction. Default [`BATCH_MAX_DEFAULT`].
    pub batch_max: u32,
    /// Most jobs waiting in the queue; a caller finding it full waits for room. Default
    /// [`QUEUE_DEPTH_DEFAULT`].
    pub queue_depth: u32,
    /// How each batch commits. With [`Durability::Deferred`], [`Writer::flush`] and closing
    /// the writer make everything before them durable.
    pub durability: Durability,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            batch_max: BATCH_MAX_DEFAULT,
            queue_depth: QUEUE_DEPTH_DEFAULT,
            durability: Durability::Immediate,
        }
    }
}

impl WriterOptions {
    fn check(&self) -> Result<(), WriterError> {
        let check = |field, value: u32, max: u32| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(WriterError::InvalidOption { field, value, max })
            }
        };
        check("batch_max", self.batch_max, BATCH_MAX_CAP)?;
        check("queue_depth", self.queue_depth, QUEUE_DEPTH_CAP)
    }
}

/// Counters of a writer's work since it started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Batches taken from the queue (each one write transaction, plus any re-runs).
    pub batches: u64,
    /// Jobs taken from the queue, flushes included. Counted before any is answered.
    pub jobs: u64,
    /// Transactions abandoned because a job failed after it had written, then re-run without
    /// that job.
    pub reruns: u64,
}

/// What the writer's thread and every handle share.
#[derive(Default)]
struct Shared {
    batches: AtomicU64,
    jobs: AtomicU64,
    reruns: AtomicU64,
    /// Messages in the queue: counted up by a handle once its send has completed, down by the
    /// writer's thread as it takes each one. It dips below zero for the moment between a
    /// message being taken and its sender counting it.
    queued: AtomicI64,
    /// Set once the thread has finished: the final flush's error, if it failed.
    ending: OnceLock<Option<Arc<Error>>>,
}

/// An async, group-committing handle on a [`Store`]; clone it freely.
///
/// ```
/// use std::sync::Arc;
/// use annals::writer::{Writer, WriterOptions};
/// use annals::{ExpectedVersion, NewEvent, Store};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Arc::new(Store::open(dir.path().join("log.redb"))?);
/// let writer = Writer::start(Arc::clone(&store), WriterOptions::default())?;
/// let event = NewEvent::new("deploy.started", 1_700_000_000_000, b"v42".to_vec());
/// let outcome = writer.append("deploy/web", ExpectedVersion::Any, vec![event]).await?;
/// assert_eq!(outcome.first_position().0, 0);
/// writer.close().await?;
/// assert!(annals::Audit::of(&store).verify()?.is_sound());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Writer {
    store: Arc<Store>,
    queue: mpsc::Sender<Message>,
    shared: Arc<Shared>,
    /// Closed (its sender dropped) when the writer's thread has finished.
    ended: watch::Receiver<()>,
}

const _: fn() = || {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<Writer>();
};

impl Writer {
    /// Starts the write side on a thread of its own, over `store`. Needs no runtime: the
    /// handle's methods are futures that any executor can drive.
    pub fn start(store: Arc<Store>, options: WriterOptions) -> Result<Writer> {
        options.check()?;
        store.require_writable()?;
        if options.durability == Durability::Deferred && store.sharing().is_shared() {
            return Err(crate::store::StoreError::DeferredNeedsExclusive {
                sharing: store.sharing(),
            }
            .into());
        }
        let (queue, jobs) = mpsc::channel(options.queue_depth as usize);
        let (ended_sender, ended) = watch::channel(());
        let shared = Arc::new(Shared::default());
        let thread_store = Arc::clone(&store);
        let thread_shared = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("annals-writer".into())
            .spawn(move || batch::run(thread_store, options, jobs, &thread_shared, ended_sender))?;
        Ok(Writer {
            store,
            queue,
            shared,
            ended,
        })
    }

    /// The store this writer writes to.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// [`Store::append`], batched: resolves once the batch it ran in has committed.
    pub async fn append(
        &self,
        stream: impl Into<String>,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendOutcome> {
        let stream = stream.into();
        self.submit(move |session| session.append(&stream, expected, &events))
            .await
    }

    /// [`Store::append_personal`], batched: each payload sealed for `subject` in the job's turn
    /// (its key made, written durably, before the batch commits); refused as the store would
    /// refuse it, alone in its batch.
    pub async fn append_personal(
        &self,
        subject: impl Into<String>,
        stream: impl Into<String>,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendOutcome> {
        let (subject, stream) = (subject.into(), stream.into());
        self.store.check_personal(&subject, &stream, &events)?;
        let store = Arc::clone(&self.store);
        self.submit(move |session| {
            store.append_personal_in(session, &subject, &stream, expected, &events)
        })
        .await
    }

    /// [`Store::append_guarded`], batched: the guard is checked as of the job's turn in its
    /// batch, after every job queued before it.
    pub async fn append_guarded(
        &self,
        stream: impl Into<String>,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
        guard: impl Precondition + 'static,
    ) -> Result<AppendOutcome> {
        let stream = stream.into();
        self.submit(move |session| {
            session.guard(&guard)?;
            session.append(&stream, expected, &events)
        })
        .await
    }

    /// [`Store::execute`], batched: the command decides against the state as of its turn,
    /// which includes every job queued before it.
    pub async fn execute<C>(&self, command: C) -> Result<C::Outcome>
    where
        C: Command + Send + 'static,
        C::Outcome: Send + 'static,
    {
        self.submit(move |session| session.execute(&command)).await
    }

    /// [`Store::execute_guarded`], batched.
    pub async fn execute_guarded<C>(
        &self,
        command: C,
        guard: impl Precondition + 'static,
    ) -> Result<C::Outcome>
    where
        C: Command + Send + 'static,
        C::Outcome: Send + 'static,
    {
        self.submit(move |session| {
            session.guard(&guard)?;
            session.execute(&command)
        })
        .await
    }

    /// [`Writer::execute`] for a caller on an OS thread rather than in async code: blocks this
    /// thread until the command's batch has committed, and needs no runtime. Threads calling
    /// it at once share batches, and so commits, as tasks do. Not for async code: it would
    /// block the executor's thread.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use annals::leases::{LeaseCommand, LeaseOutcome};
    /// use annals::{Store, Writer, writer::WriterOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let store = Arc::new(Store::open(&dir.path().join("host.redb"))?);
    /// let writer = Writer::start(store, WriterOptions::default())?;
    /// let threads: Vec<_> = (0..4)
    ///     .map(|n| {
    ///         let writer = writer.clone();
    ///         std::thread::spawn(move || {
    ///             writer.execute_blocking(LeaseCommand::Acquire {
    ///                 resource: format!("queue-{n}"),
    ///                 holder: "worker".into(),
    ///                 ttl_ms: 30_000,
    ///                 now_ms: 1_000,
    ///             })
    ///         })
    ///     })
    ///     .collect();
    /// for thread in threads {
    ///     let outcome = thread.join().expect("a thread")?;
    ///     assert!(matches!(outcome, LeaseOutcome::Granted { renewed: false, .. }));
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn execute_blocking<C>(&self, command: C) -> Result<C::Outcome>
    where
        C: Command + Send + 'static,
        C::Outcome: Send + 'static,
    {
        blocking::block_on(self.execute(command))
    }

    /// [`Writer::append`] for a caller on an OS thread; see [`Writer::execute_blocking`].
    pub fn append_blocking(
        &self,
        stream: impl Into<String>,
        expected: ExpectedVersion,
        events: Vec<NewEvent>,
    ) -> Result<AppendOutcome> {
        blocking::block_on(self.append(stream, expected, events))
    }

    /// [`Writer::flush`] for a caller on an OS thread; see [`Writer::execute_blocking`].
    pub fn flush_blocking(&self) -> Result<()> {
        blocking::block_on(self.flush())
    }

    /// Resolves once everything answered before it is durable: at once after its batch with
    /// [`Durability::Immediate`], after one extra durable commit with [`Durability::Deferred`].
    pub async fn flush(&self) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.send(Message::Flush(reply)).await?;
        answer.await.map_err(|_| WriterError::Lost)?
    }

    /// Stops taking jobs (for every clone of this handle: their later calls fail with
    /// [`WriterError::Closed`]), runs and answers every job already accepted, makes them
    /// durable, and resolves when the write side has finished and let go of the store (other
    /// clones of the handle still hold it, through [`Writer::store`]). Dropping the last handle
    /// does the same without waiting. An error is the final durable commit's.
    pub async fn close(self) -> Result<()> {
        let Writer {
            store,
            queue,
            shared,
            mut ended,
        } = self;
        drop(store);
        // Already closed by another handle when this fails: then only wait.
        if queue.send(Message::Close).await.is_ok() {
            shared.queued.fetch_add(1, Ordering::AcqRel);
        }
        drop(queue);
        // The sender is never used: `changed` fails exactly when the thread drops it.
        while ended.changed().await.is_ok() {}
        match shared.ending.get() {
            Some(None) => Ok(()),
            Some(Some(error)) => Err(WriterError::Batch(Arc::clone(error)).into()),
            None => Err(WriterError::Lost.into()),
        }
    }

    /// How many jobs wait in the queue, accepted but not yet taken into a batch.
    /// A job counts from the moment its send has put it in the queue (not from when its room
    /// was reserved) until the writer's thread takes it.
    pub fn queued(&self) -> usize {
        usize::try_from(self.shared.queued.load(Ordering::Acquire)).unwrap_or(0)
    }

    /// Counters of the work done so far.
    pub fn stats(&self) -> WriterStats {
        WriterStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            jobs: self.shared.jobs.load(Ordering::Relaxed),
            reruns: self.shared.reruns.load(Ordering::Relaxed),
        }
    }

    /// Every record from position `from` on, history then live; see [`subscribe::subscribe`].
    pub fn subscribe(&self, from: Position) -> Subscription {
        subscribe::subscribe(Arc::clone(&self.store), from)
    }

    /// The records of `stream` from version `from` on; see [`subscribe::subscribe_stream`].
    pub fn subscribe_stream(&self, stream: impl Into<String>, from: StreamVersion) -> Subscription {
        subscribe::subscribe_stream(Arc::clone(&self.store), stream, from)
    }

    async fn send(&self, message: Message) -> Result<()> {
        self.queue
            .send(message)
            .await
            .map_err(|_| Error::from(WriterError::Closed))?;
        self.shared.queued.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Queues `work` and waits for its answer. `work` may run more than once (when another
    /// job of its batch fails after writing, the batch is re-run without that job); only the
    /// run that commits is answered.
    async fn submit<T, F>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: Fn(&mut WriteSession<'_>) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel::<Answer>();
        let job = Job {
            work: Box::new(move |session: &mut WriteSession<'_>| {
                work(session).map(|value| Box::new(value) as Box<dyn std::any::Any + Send>)
            }),
            reply,
        };
        self.send(Message::Job(job)).await?;
        let value = answer.await.map_err(|_| WriterError::Lost)??;
        // The answer is the value `work` returned, boxed above: always a `T`.
        value
            .downcast::<T>()
            .map(|value| *value)
            .map_err(|_| WriterError::Lost.into())
    }
}
