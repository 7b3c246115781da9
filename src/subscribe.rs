//! Subscriptions: every record of the log, or of one stream, from a given point on: the
//! history first, then each commit as it lands, in order, each record exactly once.
//!
//! A [`Subscription`] always reads from the log, through short-lived read snapshots, in
//! chunks of at most [`CHUNK_RECORDS_MAX`] records and about [`CHUNK_BYTES_MAX`] payload
//! bytes; the store's commit announcement (the head's next position on a `watch` channel,
//! sent after every commit that moved it) only wakes it up. So there is no separate live
//! path to hand over to: the read after a wake-up starts where the last one stopped, and a
//! commit announced after the subscriber marked the last announcement seen always wakes it.
//!
//! Commits of other processes (beside a read-only store, or in multi-writer mode) are
//! announced to nobody here: a caught-up subscription of such a store looks for them itself,
//! after a pause that grows from [`POLL_PAUSE_MIN`] to [`POLL_PAUSE_MAX`] while nothing comes.
//!
//! This module owns that loop. It never writes, never holds a read snapshot across an await
//! (a slow subscriber pins no old pages of the file), keeps at most one chunk in memory, and
//! never makes the writer wait: a subscriber that falls behind just has more to read.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::sync::watch;

pub use crate::error::SubscriptionError;
use crate::error::{Error, Result};
use crate::log::read::Direction;
use crate::record::problem::Problem;
use crate::record::{Position, Record, StreamVersion};
use crate::store::Store;

/// Most records read from the log in one chunk.
pub const CHUNK_RECORDS_MAX: usize = 1024;
/// Payload bytes after which a chunk ends (the record that crosses it is the chunk's last).
pub const CHUNK_BYTES_MAX: u64 = 4 * 1024 * 1024;

const _: () = assert!(CHUNK_RECORDS_MAX > 0 && CHUNK_BYTES_MAX > 0);

/// The first pause before a subscription of a store that other processes write looks for
/// their commits again; it doubles while nothing comes, up to [`POLL_PAUSE_MAX`], and starts
/// over after each record. A look is one read transaction and the head: a few microseconds.
pub const POLL_PAUSE_MIN: Duration = Duration::from_millis(1);
/// The longest pause between two looks: the most a commit of another process waits to be
/// seen by an idle subscription.
pub const POLL_PAUSE_MAX: Duration = Duration::from_millis(16);

const _: () = assert!(
    POLL_PAUSE_MIN.as_nanos() > 0 && POLL_PAUSE_MIN.as_nanos() <= POLL_PAUSE_MAX.as_nanos()
);

/// Every record from position `from` on: history, then live. `from` may lie past the head;
/// the subscription then waits for the log to reach it.
///
/// ```
/// use std::sync::Arc;
/// use annals::{ExpectedVersion, NewEvent, Position, Store};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let store = Arc::new(Store::open(dir.path().join("log.redb"))?);
/// let mut records = annals::subscribe::subscribe(Arc::clone(&store), Position(0));
/// store.append("s", ExpectedVersion::Any, &[NewEvent::new("k", 1, b"a".to_vec())])?;
/// assert_eq!(records.next().await?.payload, b"a");
/// # Ok(())
/// # }
/// ```
pub fn subscribe(store: Arc<Store>, from: Position) -> Subscription {
    Subscription::new(store, Cursor::All { next: from })
}

/// The records of `stream` from version `from` on: history, then live.
pub fn subscribe_stream(
    store: Arc<Store>,
    stream: impl Into<String>,
    from: StreamVersion,
) -> Subscription {
    let stream = stream.into();
    Subscription::new(store, Cursor::Stream { stream, next: from })
}

/// Where a subscription reads next.
#[derive(Clone, Debug)]
enum Cursor {
    All { next: Position },
    Stream { stream: String, next: StreamVersion },
}

impl Cursor {
    /// The next chunk from a fresh snapshot, and whether it reached the snapshot's end.
    fn read_chunk(&self, store: &Store) -> Result<(Vec<Record>, bool)> {
        let snapshot = store.snapshot()?;
        match self {
            Cursor::All { next } => take_chunk(snapshot.records(*next, Direction::Forward)?),
            Cursor::Stream { stream, next } => {
                take_chunk(snapshot.stream(stream, *next, Direction::Forward)?)
            }
        }
    }

    /// Checks that `records` continue exactly where the cursor stands, then moves past them.
    fn advance(&mut self, records: &[Record]) -> Result<()> {
        let mut moved = self.clone();
        for record in records {
            match &mut moved {
                Cursor::All { next } => {
                    if record.position != *next {
                        return Err(Error::Corrupt {
                            position: *next,
                            problem: Box::new(Problem::Missing),
                        });
                    }
                    next.0 += 1;
                }
                Cursor::Stream { stream, next } => {
                    if record.stream != *stream || record.version != *next {
                        return Err(Error::Corrupt {
                            position: record.position,
                            problem: Box::new(Problem::StreamIndex {
                                stream: stream.clone(),
                                fault: crate::record::problem::StreamIndexFault::Subscription {
                                    expected: *next,
                                    found_stream: record.stream.to_owned(),
                                    found_version: record.version,
                                },
                            }),
                        });
                    }
                    next.0 += 1;
                }
            }
        }
        *self = moved;
        Ok(())
    }
}

fn take_chunk(records: impl Iterator<Item = Result<Record>>) -> Result<(Vec<Record>, bool)> {
    let mut chunk = Vec::new();
    let mut bytes = 0u64;
    for record in records {
        let record = record?;
        bytes += record.payload.len() as u64;
        chunk.push(record);
        if chunk.len() >= CHUNK_RECORDS_MAX || bytes >= CHUNK_BYTES_MAX {
            return Ok((chunk, false));
        }
    }
    Ok((chunk, true))
}

/// An async cursor over records, history then live; see [`subscribe`]. It never ends: at the
/// head it waits for the next commit. Needs a tokio runtime (reads run on its blocking pool).
///
/// Call [`Subscription::next`] in a loop. It is cancel-safe: dropping its future (in a
/// `tokio::select!`, say) loses no record, the next call yields the same one.
pub struct Subscription {
    store: Arc<Store>,
    commits: watch::Receiver<Position>,
    cursor: Cursor,
    chunk: VecDeque<Record>,
    /// The announced head as of the last read that reached the log's end: reading again is
    /// pointless until a later commit is announced.
    caught_up_at: Option<Position>,
    /// How long to wait before looking for another process's commits again.
    pause: Duration,
}

impl Subscription {
    fn new(store: Arc<Store>, cursor: Cursor) -> Subscription {
        let commits = store.commits();
        Subscription {
            store,
            commits,
            cursor,
            chunk: VecDeque::new(),
            caught_up_at: None,
            pause: POLL_PAUSE_MIN,
        }
    }

    /// The next record, waiting for a commit if there is none yet. An error (a corrupt
    /// record, a failed read) leaves the subscription where it was.
    pub async fn next(&mut self) -> Result<Record> {
        loop {
            if let Some(record) = self.chunk.pop_front() {
                return Ok(record);
            }
            // Marked seen before the read: a commit announced after this line wakes the wait.
            let announced = *self.commits.borrow_and_update();
            if self.caught_up_at == Some(announced) {
                if !self.store.others_may_write() {
                    if self.commits.changed().await.is_err() {
                        // The store owns the sender and `self.store` keeps it alive.
                        return Err(SubscriptionError::WatchClosed.into());
                    }
                    continue;
                }
                // Another process's commit wakes nobody here: look again after a pause that
                // grows while nothing comes, unless this process commits first. A blocking
                // sleep rather than a timer, so that no runtime needs its time driver.
                let pause = self.pause;
                self.pause = (pause * 2).min(POLL_PAUSE_MAX);
                let mut sleeper = tokio::task::spawn_blocking(move || std::thread::sleep(pause));
                let mut changed = std::pin::pin!(self.commits.changed());
                let woken = std::future::poll_fn(|context| {
                    if let Poll::Ready(changed) = changed.as_mut().poll(context) {
                        return Poll::Ready(Some(changed));
                    }
                    match Pin::new(&mut sleeper).poll(context) {
                        Poll::Ready(_) => Poll::Ready(None),
                        Poll::Pending => Poll::Pending,
                    }
                })
                .await;
                match woken {
                    // This process committed: read at once.
                    Some(Ok(())) => continue,
                    Some(Err(_)) => return Err(SubscriptionError::WatchClosed.into()),
                    // The pause is over: look for other processes' commits.
                    None => {}
                }
            }
            let store = Arc::clone(&self.store);
            let cursor = self.cursor.clone();
            let (records, complete) =
                tokio::task::spawn_blocking(move || cursor.read_chunk(&store))
                    .await
                    .map_err(|_| SubscriptionError::ReadLost)??;
            self.cursor.advance(&records)?;
            if !records.is_empty() {
                self.pause = POLL_PAUSE_MIN;
            }
            self.chunk.extend(records);
            if complete {
                self.caught_up_at = Some(announced);
            }
        }
    }

    /// The next record if one has already been read, without reading or waiting: lets a
    /// consumer gather what is at hand (a replication publisher filling a message) before it
    /// awaits [`Subscription::next`] again.
    pub fn next_ready(&mut self) -> Option<Record> {
        self.chunk.pop_front()
    }
}
