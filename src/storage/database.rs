//! A writable redb database and the overlay's published generation over it: the one place a
//! write transaction begins, so that none ever reads or writes redb without the commits the
//! overlay holds (`docs/design.md`, "The seam and the overlay").
//!
//! Three ways in, one lock order (redb's write lock, then the caller's own, then the
//! generation's):
//!
//! - [`Database::begin_read`] pairs a redb read transaction with the generation published
//!   with it, under the generation's lock, so that a reader never sees a drained generation
//!   over the commit that holds it (its row counts would count twice), nor the reverse.
//! - [`Database::begin_write`] is every write that commits to redb (a drain, a cut, a rebuild,
//!   signing, a commit that cannot go through the overlay): it takes redb's write lock and
//!   writes the published generation into its transaction first; its commit empties the
//!   generation in the same critical section as redb's commit.
//! - [`Database::begin_overlay`] is a command committing through the overlay: it holds the
//!   writers' turn (no other write interleaves), writes into a scratch layer, and publishes it
//!   as the next generation — or, when it cannot be journaled, turns into an ordinary write
//!   transaction with its changes in.
//!
//! The writers' turn is redb's write lock where other processes write the file too. Where
//! this process is the file's only writer, it is a lock of the process's own, which every
//! write to redb takes first ([`Turn`]): a command that commits through the overlay then
//! begins no redb transaction at all (beginning one and dropping it unused was a tenth of a
//! command's instructions).
//!
//! In a file several writer processes share, each process's generation is only what its own
//! commits added: the others' commits are in the journal they share. There, the database is
//! given a [`Shared`] source, and each write, holding redb's write lock (which no other
//! process then holds: it is the writers' turn), first replaces the generation with what the
//! journal holds past redb's latest commit; each read asks the source for a consistent pair.
//!
//! It owns when a generation is published and emptied; it never knows what a table means.

use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use redb::ReadableDatabase;

use super::access::{Commit, Reader, Writer};
use super::overlay::{Generation, Scratch};
use crate::error::Result;

/// Where the commits of other writer processes come from, in a file they share with this one
/// (the store's side of the shared journal).
pub(crate) trait Shared: Send + Sync {
    /// One consistent read: a commit of `redb` and, over it, the commits the journal holds
    /// past it, whoever made them.
    fn read(&self, redb: &redb::Database) -> Result<Reader>;

    /// The generation of the commits the journal holds past `latest`, redb's latest commit,
    /// read holding redb's write lock: no other process writes the journal or the file
    /// meanwhile.
    fn sync(&self, latest: &Arc<Commit>) -> Result<Generation>;

    /// How many commits to the file, by any process, were seen so far: the same count at two
    /// moments, each read holding redb's write lock after it began, means none came between.
    fn file_changes(&self) -> u64;
}

/// A writable redb database with the overlay's published generation.
pub(crate) struct Database {
    /// redb's latest commit as last read, with [`Database::file_commits`] then: while the file
    /// has no other writer and this handle committed nothing since, it is still the latest,
    /// and reads and writes take it rather than begin a read transaction each (redb's
    /// registration of a reader, and its table lookups, were a tenth of a command's work).
    /// Declared first, so that it is dropped before the database.
    latest: Mutex<Option<(u64, Arc<Commit>)>>,
    redb: redb::Database,
    published: Mutex<Generation>,
    /// Set when other writer processes share the file through a journal.
    shared: Option<Arc<dyn Shared>>,
    /// How many transactions this handle committed to redb, or tried to (a failed commit
    /// counts): what may have changed the file otherwise than through a command's generation
    /// (a drain, a rebuild's batch, a cut).
    file_commits: AtomicU64,
    /// The writers' turn while the file has no other writer process: taken before redb's
    /// write lock by every write, and alone by a command through the overlay.
    turn: Mutex<()>,
}

/// Whose turn it is to write, held from a write's start to its end (see the module docs).
enum Turn<'d> {
    /// The file's only writer: this process's own lock.
    Own(MutexGuard<'d, ()>),
    /// A file other writer processes share: redb's write lock, held by a transaction that
    /// writes nothing and is never committed.
    Shared(Box<redb::WriteTransaction>),
}

impl Database {
    /// `redb` with nothing published over it.
    pub(crate) fn new(redb: redb::Database) -> Self {
        Database {
            latest: Mutex::new(None),
            redb,
            published: Mutex::new(Generation::default()),
            shared: None,
            file_commits: AtomicU64::new(0),
            turn: Mutex::new(()),
        }
    }

    /// Shares the file with other writer processes through `shared`: from now on every read
    /// and every write takes their commits from it.
    pub(crate) fn share(&mut self, shared: Arc<dyn Shared>) {
        debug_assert!(
            self.published().is_empty(),
            "shared over a published generation"
        );
        self.shared = Some(shared);
    }

    /// The writers' turn ([`Turn`]) and, in a shared file, the generation replaced by what the
    /// journal holds past redb's latest commit: the start of every write.
    fn lock(&self) -> Result<(Turn<'_>, Arc<Commit>)> {
        let Some(shared) = &self.shared else {
            let turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
            // Every commit to the file is this process's, made holding the turn: the latest
            // commit is the one the generation lies over.
            return Ok((Turn::Own(turn), self.latest()?));
        };
        let lock = self.redb.begin_write()?;
        // Under redb's write lock, its latest commit is the one the generation lies over, in
        // a shared file too.
        let latest = self.latest()?;
        *self.published() = shared.sync(&latest)?;
        Ok((Turn::Shared(Box::new(lock)), latest))
    }

    /// A redb write transaction holding `turn`: redb's write lock is the turn itself in a
    /// shared file, else begun now, the process's turn held.
    fn transaction<'d>(
        &'d self,
        turn: Turn<'d>,
    ) -> Result<(redb::WriteTransaction, Option<MutexGuard<'d, ()>>)> {
        Ok(match turn {
            Turn::Shared(txn) => (*txn, None),
            Turn::Own(own) => (self.redb.begin_write()?, Some(own)),
        })
    }

    /// redb's latest commit: the one last read while it still is (no commit to the file
    /// since, [`Database::file_changes`]), else a new read transaction. Read holding redb's
    /// write lock, or the generation's (which an absorbing commit holds while it counts
    /// itself), it is the commit the published generation lies over; otherwise a commit still
    /// counting itself may be missed, as a read begun just before it would. In a shared file
    /// only holding redb's write lock: other processes' commits are seen as redb begins a
    /// write.
    fn latest(&self) -> Result<Arc<Commit>> {
        let commits = self.file_changes();
        let mut latest = self.latest.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, txn)) = &*latest
            && *seen == commits
        {
            return Ok(Arc::clone(txn));
        }
        // Read after the count: a commit between the two is read, and counted as later.
        let txn = Commit::shared(self.redb.begin_read()?);
        *latest = Some((commits, Arc::clone(&txn)));
        Ok(txn)
    }

    /// Lets go of the latest commit kept: before a call on the file as a whole, which redb
    /// refuses while a read transaction is open.
    fn forget_latest(&self) {
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }

    /// redb's write lock alone, with nothing read: for setting up what [`Database::share`]
    /// is given, which no two writer processes may do at once.
    pub(crate) fn lock_alone(&self) -> Result<redb::WriteTransaction> {
        Ok(self.redb.begin_write()?)
    }

    /// How many commits to the file were seen: this handle's (counted as it makes them) and,
    /// in a file other writer processes share, theirs ([`Shared::file_changes`]). Read holding
    /// redb's write lock (under a [`Database::begin_overlay`]), it cannot change until the lock
    /// is let go; the same count twice so read means no commit came between.
    pub(crate) fn file_changes(&self) -> u64 {
        let own = self.file_commits.load(Ordering::Acquire);
        // Both only grow: so does their sum, which changes whenever either does.
        own + self
            .shared
            .as_ref()
            .map_or(0, |shared| shared.file_changes())
    }

    /// The generation's lock. A panic while it was held left it as its last whole change did:
    /// every change is one assignment.
    fn published(&self) -> MutexGuard<'_, Generation> {
        self.published
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// One consistent read: redb's latest commit and the generation published with it.
    pub(crate) fn begin_read(&self) -> Result<Reader> {
        if let Some(shared) = &self.shared {
            return shared.read(&self.redb);
        }
        let published = self.published();
        let txn = self.latest()?;
        Ok(Reader::over(txn, published.clone()))
    }

    /// A read of redb's file alone, without the published generation: a consistent commit,
    /// which holds every acknowledged commit only when nothing is published.
    pub(crate) fn begin_read_file(&self) -> Result<redb::ReadTransaction> {
        Ok(self.redb.begin_read()?)
    }

    /// A write transaction in redb holding every change published so far: its commit makes
    /// them redb's and empties the generation.
    pub(crate) fn begin_write(&self) -> Result<WriteTransaction<'_>> {
        let (turn, _) = self.lock()?;
        // A commit to the file comes: the latest commit kept would keep redb from reusing the
        // pages this one frees (a reader of them) until the next commit after it.
        self.forget_latest();
        let absorbed = self.published().clone();
        WriteTransaction::absorbing(self, self.transaction(turn)?, absorbed, None)
    }

    /// A command's write into the overlay: redb's write lock held, and a [`Writer`] into a
    /// scratch layer over a read of redb and the current generation.
    pub(crate) fn begin_overlay(&self) -> Result<OverlayWrite<'_>> {
        let (turn, latest) = self.lock()?;
        let base = Reader::over(latest, self.published().clone());
        Ok(OverlayWrite {
            database: self,
            turn,
            writer: Writer::overlay(base),
        })
    }

    /// Whether a generation is published and not yet in redb.
    pub(crate) fn has_published(&self) -> bool {
        !self.published().is_empty()
    }

    /// redb's database, for what works on the file as a whole (compaction, closing). Nothing
    /// may be published: those calls would not see it.
    pub(crate) fn into_redb(self) -> redb::Database {
        // A shared file's generation holds other writers' commits, which their journal keeps.
        debug_assert!(
            self.shared.is_some() || self.published().is_empty(),
            "closing over a published generation"
        );
        self.forget_latest();
        self.redb
    }

    /// redb's database for a call that changes the file as a whole ([`redb::Database::compact`]).
    pub(crate) fn redb_mut(&mut self) -> &mut redb::Database {
        debug_assert!(
            self.published().is_empty(),
            "compacting under a published generation"
        );
        self.forget_latest();
        &mut self.redb
    }
}

/// A redb write transaction begun by [`Database::begin_write`], the published generation
/// written into it. Dereferences to redb's transaction for the calls that take one.
pub(crate) struct WriteTransaction<'d> {
    database: &'d Database,
    txn: redb::WriteTransaction,
    /// Whether it holds a generation, which its commit empties.
    absorbed: bool,
    /// The process's turn, for a file with no other writer process: let go after the
    /// transaction ends (declared after it, so dropped after it too).
    _turn: Option<MutexGuard<'d, ()>>,
}

impl<'d> WriteTransaction<'d> {
    /// `txn` with `generation`, and `scratch` over it if given, written in.
    fn absorbing(
        database: &'d Database,
        (txn, turn): (redb::WriteTransaction, Option<MutexGuard<'d, ()>>),
        generation: Generation,
        scratch: Option<Scratch>,
    ) -> Result<Self> {
        let generation = match scratch {
            Some(scratch) => generation.with(scratch),
            None => generation,
        };
        let absorbed = !generation.is_empty();
        if absorbed {
            generation.drain_into(&txn)?;
        }
        Ok(WriteTransaction {
            database,
            txn,
            absorbed,
            _turn: turn,
        })
    }

    /// Commits in redb; the generation it absorbed, if any, is emptied in the same critical
    /// section, so that no reader pairs it with this commit. Nothing was published since it
    /// began: it holds redb's write lock, which every publisher takes first.
    pub(crate) fn commit(self) -> Result<()> {
        let database = self.database;
        // Counted whether or not redb says it committed: a failed commit may have changed the
        // file as far as the latest commit kept knows (`Database::latest`).
        let committed = |result: std::result::Result<(), redb::CommitError>| {
            database.file_commits.fetch_add(1, Ordering::AcqRel);
            result
        };
        if !self.absorbed {
            committed(self.txn.commit())?;
            return Ok(());
        }
        let mut published = database.published();
        let before = database.file_commits.load(Ordering::Acquire);
        committed(self.txn.commit())?;
        *published = Generation::default();
        debug_assert_eq!(
            database.file_commits.load(Ordering::Acquire),
            before + 1,
            "a commit to the file is counted once"
        );
        Ok(())
    }

    /// Aborts in redb; the published generation stays as it was.
    pub(crate) fn abort(self) -> Result<()> {
        Ok(self.txn.abort()?)
    }
}

impl Deref for WriteTransaction<'_> {
    type Target = redb::WriteTransaction;

    fn deref(&self) -> &redb::WriteTransaction {
        &self.txn
    }
}

impl DerefMut for WriteTransaction<'_> {
    fn deref_mut(&mut self) -> &mut redb::WriteTransaction {
        &mut self.txn
    }
}

/// A command writing into the overlay ([`Database::begin_overlay`]).
pub(crate) struct OverlayWrite<'d> {
    database: &'d Database,
    /// The writers' turn.
    turn: Turn<'d>,
    writer: Writer<'static>,
}

impl<'d> OverlayWrite<'d> {
    /// Where the command writes.
    pub(crate) fn writer(&self) -> &Writer<'static> {
        &self.writer
    }

    /// Publishes the command's changes as the next generation: every read begun from now on
    /// sees them. The writers' turn is let go after.
    pub(crate) fn publish(self) {
        self.publish_then(|_| ());
    }

    /// [`OverlayWrite::publish`], calling `then` with the generation published while the
    /// writers' turn is still held (a shared file's reader learns of the commit before another
    /// writer's turn).
    pub(crate) fn publish_then(self, then: impl FnOnce(&Generation)) {
        let OverlayWrite {
            database,
            turn,
            writer,
        } = self;
        if let Some(scratch) = writer.into_scratch() {
            let mut published = database.published();
            debug_assert_eq!(
                scratch.below().depth(),
                published.depth(),
                "a generation was published under a command holding the write lock"
            );
            *published = published.with(scratch);
            // A command's changes are published only when it wrote some.
            assert!(
                !published.is_empty(),
                "a published command's changes are read"
            );
            then(&published);
        }
        // redb's transaction, in a shared file, wrote nothing: aborting it cannot lose
        // anything, and redb's drop aborts it.
        drop(turn);
    }

    /// The command's changes, over the published generation, in an ordinary write transaction
    /// (for a commit the overlay cannot take: one too large or not journaled).
    pub(crate) fn into_transaction(self) -> Result<WriteTransaction<'d>> {
        let OverlayWrite {
            database,
            turn,
            writer,
        } = self;
        let generation = database.published().clone();
        let txn = database.transaction(turn)?;
        WriteTransaction::absorbing(database, txn, generation, writer.into_scratch())
    }
}
