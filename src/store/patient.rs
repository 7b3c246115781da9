//! The log file of a store open in multi-writer mode, whose waits on other processes are
//! bounded: redb takes the file's writer lock for every write transaction (and for an open,
//! which may repair the file), and waits on it for as long as another process holds it. This
//! backend waits for it by trying again, at most the store's patience (SQLite's busy
//! timeout), then fails the lock with [`WaitedTooLong`], which the store reports as
//! [`crate::error::StoreError::WriterBusy`], having written nothing.

use std::fs::File;
use std::io;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

use crate::error::WaitedTooLong;

/// The first pause between two tries of a lock another process holds: about a quarter of a
/// small durable commit, so that a waiting writer starts soon after the one before it ends.
const FIRST_PAUSE: Duration = Duration::from_micros(50);

/// The longest pause between two tries: a waiting writer starts at most this late.
const LONGEST_PAUSE: Duration = Duration::from_millis(2);

/// redb's file backend, waiting at most `patience` for a lock another process holds.
#[derive(Debug)]
pub(crate) struct PatientFile {
    file: FileBackend,
    /// The log, for the error.
    path: PathBuf,
    patience: Duration,
    header: Arc<HeaderWatch>,
}

/// Whether any process committed to the file since a moment: every commit rewrites redb's
/// header (its commit slots name the new commit), and in its multi-process mode redb reads
/// the header again at the start of every write transaction, to learn of other processes'
/// commits. Every read and write of the header goes through this backend, which counts the
/// times its bytes changed: the same count at two moments, each after a header read holding
/// redb's write lock, means no commit came between, by this process or another.
#[derive(Debug, Default)]
pub(crate) struct HeaderWatch {
    /// A digest of the header's bytes as last read or written.
    last: Mutex<Option<blake3::Hash>>,
    changes: AtomicU64,
}

impl HeaderWatch {
    /// How many times the header was seen to change.
    pub(crate) fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    fn saw(&self, header: &[u8]) {
        let digest = blake3::hash(header);
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if *last != Some(digest) {
            *last = Some(digest);
            self.changes.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl PatientFile {
    /// `file`, the log at `path` open for reading and writing, waiting `patience` at most,
    /// telling `header` of every read and write of redb's header.
    pub(crate) fn new(
        file: File,
        path: PathBuf,
        patience: Duration,
        header: Arc<HeaderWatch>,
    ) -> io::Result<Self> {
        let file = FileBackend::new(file).map_err(io::Error::other)?;
        Ok(PatientFile {
            file,
            path,
            patience,
            header,
        })
    }

    /// Tries `attempt` until it takes the lock or `patience` has passed.
    fn waiting(
        &self,
        attempt: impl Fn() -> Result<bool, BackendError>,
    ) -> Result<(), BackendError> {
        let started = Instant::now();
        let mut pause = FIRST_PAUSE;
        loop {
            if attempt()? {
                return Ok(());
            }
            let waited = started.elapsed();
            if waited >= self.patience {
                let path = self.path.clone();
                return Err(BackendError::Io(io::Error::new(
                    io::ErrorKind::TimedOut,
                    WaitedTooLong { path, waited },
                )));
            }
            std::thread::sleep(pause.min(self.patience - waited));
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }
}

impl StorageBackend for PatientFile {
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.file.read(offset, out)?;
        if offset == 0 {
            self.header.saw(out);
        }
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        // Seen before it is written: a failed write counts as a change, never as none.
        if offset == 0 {
            self.header.saw(data);
        }
        self.file.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.waiting(|| self.file.try_lock_range(start, end))
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.waiting(|| self.file.try_lock_shared_range(start, end))
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}
