//! The write side of the [`super::Writer`]: the thread that takes batches off the queue, runs
//! each in one write transaction, and answers every caller after the commit.
//!
//! Failure isolation without savepoints (redb cannot take an ephemeral savepoint once a table
//! is open in the transaction, which is always the case mid-batch). Before each job the head
//! is noted. A job refused with the head where it was wrote nothing: appends are
//! validate-first, `decide` only reads, and projection tables change only when a record is
//! applied. It is answered with its error and the batch goes on. A job that fails after the
//! head moved (a command whose second append is refused, an `apply` error), or with an error
//! that may come from the middle of a write (storage, corruption), or that panics, leaves part
//! of itself in the transaction: the transaction is abandoned, that caller answered, and the
//! rest of the batch re-run without it in a fresh one. `decide` is a function of the state,
//! so every other job gets exactly what it would have got run alone in arrival order.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::sync::{mpsc, oneshot, watch};

use super::{Shared, WriterError, WriterOptions};
use crate::error::{Error, Result};
use crate::store::{Durability, Store, StoreError, WriteSession};

/// A job's outcome, type-erased; [`super::Writer`] downcasts it to the type it boxed.
pub(super) type Answer = Result<Box<dyn Any + Send>>;

/// The work of one job. `Fn`, not `FnOnce`: a batch re-run runs it again.
type Work = dyn Fn(&mut WriteSession<'_>) -> Answer + Send;

/// A job and where its answer goes.
pub(super) struct Job {
    pub(super) work: Box<Work>,
    pub(super) reply: oneshot::Sender<Answer>,
}

/// What the queue carries.
pub(super) enum Message {
    /// Run this job.
    Job(Job),
    /// Answer once everything answered before is durable.
    Flush(oneshot::Sender<Result<()>>),
    /// Take no more jobs; finish those queued.
    Close,
}

/// The writer thread's loop: until every handle is gone (or one closed the queue) and the
/// queue is empty. Then a final durable commit, the store released, and `ended` dropped.
pub(super) fn run(
    store: Arc<Store>,
    options: WriterOptions,
    receiver: mpsc::Receiver<Message>,
    shared: &Shared,
    ended: watch::Sender<()>,
) {
    let batch_max = options.batch_max as usize;
    let mut queue = Inbox { receiver, shared };
    while let Some(first) = queue.blocking_recv() {
        let mut batch = Batch::default();
        batch.take(first, &mut queue);
        batch.take_queued(&mut queue, batch_max);
        // Counted before anyone is answered, so a caller holding its answer sees its batch.
        shared.batches.fetch_add(1, Ordering::Relaxed);
        shared
            .jobs
            .fetch_add(batch.jobs_and_flushes(), Ordering::Relaxed);
        commit_batch(
            &store,
            options.durability,
            &mut batch,
            &mut queue,
            batch_max,
            shared,
        );
        if !batch.flushes.is_empty() {
            let flushed = flush(&store, options.durability).map_err(Arc::new);
            for reply in batch.flushes {
                let answer = flushed
                    .clone()
                    .map_err(|error| WriterError::Batch(error).into());
                // A caller that stopped waiting needs no answer.
                let _ = reply.send(answer);
            }
        }
    }
    let ending = flush(&store, options.durability).err().map(Arc::new);
    // Released before anyone learns the writer ended, so the file can be reopened at once.
    drop(store);
    // Set once, here; a second set cannot happen.
    let _ = shared.ending.set(ending);
    drop(ended);
}

/// With deferred durability, one durable commit; with immediate, everything already is.
fn flush(store: &Store, durability: Durability) -> Result<()> {
    match durability {
        Durability::Immediate => Ok(()),
        Durability::Deferred => store.flush(),
        // Committed as `Immediate`: waiting for the replicas is `ReplicatingWriter`'s.
        #[cfg(feature = "jetstream")]
        Durability::Replicated => Ok(()),
    }
}

/// The queue's receiving end. It counts each message it hands out off
/// [`Shared::queued`](super::Shared), which a handle counts up once its send has completed, so
/// that [`super::Writer::queued`] counts only messages that are in the queue: a sender that has
/// reserved room but not yet put its message in is not counted.
pub(super) struct Inbox<'a> {
    receiver: mpsc::Receiver<Message>,
    shared: &'a Shared,
}

impl Inbox<'_> {
    fn blocking_recv(&mut self) -> Option<Message> {
        let message = self.receiver.blocking_recv();
        if message.is_some() {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
        }
        message
    }

    fn try_recv(&mut self) -> Option<Message> {
        let message = self.receiver.try_recv().ok();
        if message.is_some() {
            self.shared.queued.fetch_sub(1, Ordering::AcqRel);
        }
        message
    }

    fn close(&mut self) {
        self.receiver.close();
    }
}

/// What one batch took off the queue.
#[derive(Default)]
struct Batch {
    jobs: Vec<Job>,
    flushes: Vec<oneshot::Sender<Result<()>>>,
    /// Messages taken, closing ones included.
    taken: u64,
}

impl Batch {
    fn take(&mut self, message: Message, queue: &mut Inbox<'_>) {
        self.taken += 1;
        match message {
            Message::Job(job) => self.jobs.push(job),
            Message::Flush(reply) => self.flushes.push(reply),
            // What is queued stays receivable; new sends fail with `Closed`.
            Message::Close => queue.close(),
        }
    }

    /// Jobs and flushes taken: what [`WriterStats::jobs`](super::WriterStats) counts.
    fn jobs_and_flushes(&self) -> u64 {
        (self.jobs.len() + self.flushes.len()) as u64
    }

    /// Takes what is queued, without waiting, until `batch_max` messages are taken; returns
    /// how many jobs and flushes it took.
    fn take_queued(&mut self, queue: &mut Inbox<'_>, batch_max: usize) -> u64 {
        let before = self.jobs_and_flushes();
        while self.taken < batch_max as u64 {
            match queue.try_recv() {
                Some(message) => self.take(message, queue),
                None => break,
            }
        }
        self.jobs_and_flushes() - before
    }
}

/// Runs the batch's jobs in arrival order in one transaction, re-running it without any job
/// that fails after writing, and answers every job. Jobs queued while the batch runs join it
/// before it commits (up to `batch_max` messages): they would otherwise wait for this commit
/// only to start the next, so a batch of callers stays one batch instead of splitting in two
/// that alternate.
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "debug", name = "batch", skip_all)
)]
fn commit_batch(
    store: &Store,
    durability: Durability,
    batch: &mut Batch,
    queue: &mut Inbox<'_>,
    batch_max: usize,
    shared: &Shared,
) {
    while !batch.jobs.is_empty() {
        let mut answers: Vec<Answer> = Vec::with_capacity(batch.jobs.len());
        let mut tainted = None;
        let written = store.write_with(durability, |session| {
            let mut index = 0;
            loop {
                if index == batch.jobs.len() {
                    let joined = batch.take_queued(queue, batch_max);
                    // Counted before anyone is answered, as the batch's first jobs are.
                    shared.jobs.fetch_add(joined, Ordering::Relaxed);
                    if index == batch.jobs.len() {
                        return Ok(());
                    }
                }
                let job = &batch.jobs[index];
                let before = session.head();
                match run_job(&*job.work, session) {
                    // A job that went on past a failure that left part of a change in.
                    Ok(_) if let Some(partial) = session.partial() => {
                        tainted = Some(index);
                        return Err(partial);
                    }
                    Ok(value) => answers.push(Ok(value)),
                    Err(error) if session.head() == before && leaves_no_trace(&error) => {
                        answers.push(Err(error));
                    }
                    Err(error) => {
                        tainted = Some(index);
                        return Err(error);
                    }
                }
                index += 1;
            }
        });
        match (written, tainted) {
            (Ok(()), _) => {
                for (job, answer) in batch.jobs.drain(..).zip(answers) {
                    // A caller that stopped waiting needs no answer.
                    let _ = job.reply.send(answer);
                }
                return;
            }
            (Err(error), Some(index)) => {
                shared.reruns.fetch_add(1, Ordering::Relaxed);
                let job = batch.jobs.remove(index);
                let _ = job.reply.send(Err(error));
            }
            (Err(error), None) => {
                let error = Arc::new(error);
                for job in batch.jobs.drain(..) {
                    let _ = job
                        .reply
                        .send(Err(WriterError::Batch(Arc::clone(&error)).into()));
                }
                return;
            }
        }
    }
}

/// Runs one job, turning a panic into an error.
fn run_job(work: &Work, session: &mut WriteSession<'_>) -> Answer {
    match catch_unwind(AssertUnwindSafe(|| work(session))) {
        Ok(answer) => answer,
        Err(_) => Err(WriterError::Panicked.into()),
    }
}

/// Whether `error`, raised with the head where it was before the job, guarantees that the job
/// wrote nothing. Refusals are raised before the first write (appends are validate-first,
/// the store's reserved-kind check and guards and `decide` only read); anything else might
/// come from the middle of a write.
fn leaves_no_trace(error: &Error) -> bool {
    matches!(
        error,
        Error::Append(_)
            | Error::Store(StoreError::ReservedKind { .. } | StoreError::Fenced { .. })
            | Error::InvalidCommand { .. }
    )
}
