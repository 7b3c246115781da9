//! Compaction: giving the file's free pages back to the file system with redb's
//! `Database::compact`, which moves the highest pages into free ones lower down and shrinks the
//! file, iteration by iteration, each one a two-phase durable commit.
//!
//! A log written live accumulates free pages (each commit copies the pages it changes, and
//! a rebuild or a prune frees whole trees); nothing is ever read differently after a
//! compaction: the records, the indexes and the projections are the same bytes, only where
//! they lie in the file changes. It needs the file to itself: redb moves pages that a reader
//! in another process could be reading, so a store that shares its file is refused
//! ([`StoreError::CompactionNeedsExclusive`]), and so is a log another process has open
//! ([`StoreError::CompactionHeld`]). A crash at any point leaves the log as it was before the
//! interrupted iteration's commit or after it: redb's recovery finds the last durable commit,
//! which holds every record (guarded by `tests/it/compact.rs` on the simulated disk).

use std::path::Path;
use std::time::Duration;

use super::open::{Handle, guarded};
use super::{Sharing, Store, StoreOptions};
use crate::error::{Error, OpenError, Result, StoreError};

/// What a compaction did to the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use]
pub struct Compaction {
    /// The file's length before, in bytes (0 for a store over a storage backend).
    pub bytes_before: u64,
    /// The file's length after, in bytes (0 for a store over a storage backend).
    pub bytes_after: u64,
    /// Whether redb moved any page (false when there was nothing to move).
    pub moved_pages: bool,
}

impl Compaction {
    /// The bytes the file gave back.
    pub fn bytes_reclaimed(&self) -> u64 {
        self.bytes_before.saturating_sub(self.bytes_after)
    }
}

impl Store {
    /// The work of [`Compaction::run`].
    pub(crate) fn compact(&mut self) -> Result<Compaction> {
        if self.sharing != Sharing::Exclusive {
            return Err(StoreError::CompactionNeedsExclusive {
                sharing: self.sharing,
            }
            .into());
        }
        let bytes_before = self.file_bytes()?;
        // A cut a kill interrupted still holds segments it archived: they go first, so that
        // their pages are among those given back.
        self.finish_cut()?;
        // Compaction works on redb's file alone: what the overlay holds goes into it first.
        self.settle()?;
        let db = match &mut self.db {
            Handle::Writable(db) => db,
            Handle::ReadOnly(_) => return Err(Error::ReadOnly),
        };
        let moved_pages = guarded(|| match db.redb_mut().compact() {
            Ok(moved) => Ok(moved),
            Err(redb::CompactionError::TransactionInProgress) => {
                Err(StoreError::CompactionBusy.into())
            }
            Err(error) => Err(Error::from(redb::Error::from(error))),
        })
        .map_err(|error| self.failed(error))?;
        Ok(Compaction {
            bytes_before,
            bytes_after: self.file_bytes()?,
            moved_pages,
        })
    }

    /// The work of [`Compaction::of_file`].
    pub(crate) fn compact_file(path: impl AsRef<Path>, wait: Duration) -> Result<Compaction> {
        let path = path.as_ref();
        let mut store = Store::open_to_compact(path, wait)?;
        let compaction = store.compact()?;
        // Closing writes redb's allocator state: its failure is the compaction's.
        store.close()?;
        Ok(Compaction {
            bytes_after: std::fs::metadata(path)?.len(),
            ..compaction
        })
    }

    /// The work of [`Compaction::open_store`].
    pub(crate) fn open_to_compact(path: impl AsRef<Path>, wait: Duration) -> Result<Store> {
        let options = StoreOptions {
            sharing: Sharing::Exclusive,
            busy_timeout: wait,
            ..StoreOptions::default()
        };
        Store::open_with(path, options).map_err(|error| match error {
            Error::Open(OpenError::Held { path, holder, .. }) => {
                StoreError::CompactionHeld { path, holder }.into()
            }
            error => error,
        })
    }

    /// The work of [`Compaction::allocated_bytes`].
    pub(crate) fn allocated_bytes(&self) -> Result<u64> {
        let db = match &self.db {
            Handle::Writable(db) => db,
            Handle::ReadOnly(_) => return Err(Error::ReadOnly),
        };
        guarded(|| {
            let txn = db.begin_write()?;
            let stats = txn.stats()?;
            txn.abort()?;
            Ok(stats.allocated_pages() * stats.page_size() as u64)
        })
        .map_err(|error| self.failed(error))
    }

    /// The file's length, 0 for a store over a storage backend.
    pub(super) fn file_bytes(&self) -> Result<u64> {
        Ok(if self.on_disk {
            std::fs::metadata(&self.path)?.len()
        } else {
            0
        })
    }
}

impl Compaction {
    /// Compacts the file: moves its pages into the free space below them and truncates what is
    /// left free at its end. The log reads the same after as before, record for record.
    ///
    /// The store must hold its file alone ([`Sharing::Exclusive`], or a store over a storage
    /// backend): [`StoreError::CompactionNeedsExclusive`] otherwise. No snapshot or state read
    /// of this store may be open meanwhile ([`StoreError::CompactionBusy`]). Each of redb's
    /// iterations commits durably (two-phase), so a crash at any point leaves a whole log.
    ///
    /// ```
    /// use annals::{Sharing, Store, StoreOptions};
    /// let dir = tempfile::tempdir()?;
    /// let options = StoreOptions { create: true, sharing: Sharing::Exclusive, ..StoreOptions::default() };
    /// let mut store = Store::open_with(dir.path().join("log.redb"), options)?;
    /// let compaction = annals::maintenance::Compaction::run(&mut store)?;
    /// assert!(compaction.bytes_after <= compaction.bytes_before);
    /// # Ok::<(), annals::Error>(())
    /// ```
    pub fn run(store: &mut Store) -> Result<Compaction> {
        store.compact()
    }

    /// Opens the log at `path` exclusive and compacts it ([`crate::maintenance::Compaction::run`]), then closes it.
    /// A log another process has open is refused, unchanged, with
    /// [`StoreError::CompactionHeld`] naming how it is held, after waiting up to `wait` for it
    /// to be let go.
    pub fn of_file(path: impl AsRef<Path>, wait: Duration) -> Result<Compaction> {
        Store::compact_file(path, wait)
    }

    /// Opens the existing log at `path` exclusive, as a compaction needs it: a log another
    /// process has open (still, after `wait`) is [`StoreError::CompactionHeld`].
    pub fn open_store(path: impl AsRef<Path>, wait: Duration) -> Result<Store> {
        Store::open_to_compact(path, wait)
    }

    /// The bytes of the pages redb has allocated: the least a compaction could shrink the file
    /// to, which a progress report measures against. Read in a write transaction that is
    /// aborted, so it writes nothing.
    pub fn allocated_bytes(store: &Store) -> Result<u64> {
        store.allocated_bytes()
    }
}
