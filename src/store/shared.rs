//! The journal of a log several writer processes share ([`Sharing::MultiWriter`]): each
//! process commits through it as a file's only writer does, one synced frame a command, and
//! takes the others' commits from it (`docs/design.md`, "Several writer processes").
//!
//! redb's write lock is the writers' turn: a process holds it from the start of a write to
//! its end, and nobody writes the journal or the file without it. At the start of its turn a
//! writer reads where the journal ends (its synced mark, and any whole frame past it that a
//! killed writer left), and takes every frame past redb's latest commit into its generation,
//! through the code a reader in another process uses; its command then decides over exactly
//! the acknowledged commits of every process. A drain commits the generation into the file in
//! one durable redb commit; the frames it holds are emptied from the journal by the next turn,
//! under the lock, never after the drain's commit let it go (another writer may have appended
//! by then).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use redb::StorageBackend;

use super::Store;
use super::follow::{Follower, Following};
use super::journaled::lock;
use super::patient::HeaderWatch;
use super::session::Finished;
use crate::error::{Result, guarded};
use crate::journal::{self, Journal, JournalFile, JournalOptions};
use crate::log::append::LogEnd;
use crate::projection::Projections;
use crate::record::limits::Limits;
use crate::sharing::Sharing;
use crate::storage::{Commit, Generation, Reader, Shared};

/// The store's side of a journal shared with other writer processes.
pub(crate) struct SharedJournal {
    log: PathBuf,
    journal: Arc<Mutex<Journal>>,
    follower: Mutex<Follower>,
    projections: Projections,
    limits: Limits,
    /// Every commit to the file, by any writer process.
    header: Arc<HeaderWatch>,
}

impl SharedJournal {
    fn following(&self) -> Following<'_> {
        Following {
            log: &self.log,
            projections: &self.projections,
            limits: &self.limits,
        }
    }
}

impl Shared for SharedJournal {
    fn read(&self, redb: &redb::Database) -> Result<Reader> {
        self.following().read(redb, &self.follower)
    }

    fn file_changes(&self) -> u64 {
        self.header.changes()
    }

    fn sync(&self, latest: &Arc<Commit>) -> Result<Generation> {
        let mut journal = lock(&self.journal);
        journal.follow_file()?;
        // Nothing moves under redb's write lock: the read is of `latest` and of the frames
        // the mark now covers.
        let reader = self.following().read_locked(latest, &self.follower)?;
        if reader.overlay().is_empty() && journal.held() > 0 {
            // Every frame is in the file (a drain's commit): emptied in this turn, before
            // any frame follows them.
            journal.empty()?;
        }
        Ok(reader.overlay().clone())
    }
}

impl Store {
    /// On a writable open in multi-writer mode on a file: the journal every writer process
    /// commits through, opened (or created, holding redb's write lock so that no two writers
    /// create it) and checked whole; a journal an older build left (without a synced mark) is
    /// recovered into the file first, as a writable open of a file's only writer would.
    pub(crate) fn open_shared_journal(
        &mut self,
        file: Option<Box<dyn StorageBackend>>,
        path: PathBuf,
        options: Option<JournalOptions>,
    ) -> Result<()> {
        debug_assert_eq!(self.sharing, Sharing::MultiWriter);
        let options = options.unwrap_or_default();
        if let Some(file) = file
            && older_version(&*file, &path)?
        {
            // Its writer, of an older build, held the log alone, and is gone; nobody shares
            // it yet. Recovered into the file, it is rewritten as an empty one below.
            self.recover(&*file, &path)?;
        }
        let database = self.database()?;
        // Under the lock, so that no two writers create the journal, or write a header a
        // creation cut short, at once; opened again, as another writer may have made it.
        let turn = guarded(|| database.lock_alone())?;
        let file: Box<dyn StorageBackend> = match JournalFile::open(&self.path, &path, true)? {
            Some(file) => Box::new(file),
            None => unreachable!("a journal is created when there is none"),
        };
        let found = journal::scan(&*file, &path, true, &mut |_| Ok(()))?;
        let mut kept = Journal::new(file, path, found, options)?;
        kept.set_room_aside()?;
        drop(turn);
        self.journal = Some(Arc::new(Mutex::new(kept)));
        Ok(())
    }

    /// Hands the shared journal to the database, from the open's end on: every read and write
    /// takes the other writers' commits from it. `header` watches the file's commits.
    pub(crate) fn share_journal(&mut self, header: Arc<HeaderWatch>) -> Result<()> {
        let Some(journal) = self
            .journal
            .as_ref()
            .filter(|_| self.sharing == Sharing::MultiWriter)
        else {
            return Ok(());
        };
        let shared = Arc::new(SharedJournal {
            log: self.path.clone(),
            journal: Arc::clone(journal),
            follower: Mutex::default(),
            projections: self.projections.clone(),
            limits: self.limits,
            header,
        });
        self.shared = Some(Arc::clone(&shared));
        match &mut self.db {
            super::open::Handle::Writable(database) => database.share(shared),
            super::open::Handle::ReadOnly(_) => unreachable!("only a writable open shares"),
        }
        Ok(())
    }
}

/// Whether `file` (the journal at `path`) has the whole header of a version before 3, which
/// has no synced mark: one written by a build whose writer held the log alone.
fn older_version(file: &dyn StorageBackend, path: &std::path::Path) -> Result<bool> {
    let mut first = vec![0; file.len()?.min(journal::HEADER_BYTES) as usize];
    file.read(0, &mut first)?;
    Ok(matches!(
        journal::header::read_header(&first, path)?,
        journal::header::Header::Whole(
            journal::header::Layout::V1 | journal::header::Layout::V2(_)
        )
    ))
}

impl SharedJournal {
    /// After this process appended a frame (ending at `end`, in `epoch`) taking the log to
    /// `head`, and published `generation` with it, holding redb's write lock still.
    pub(crate) fn appended(
        &self,
        epoch: u32,
        offset: u64,
        finished: &Finished,
        generation: &Generation,
    ) {
        self.follower()
            .advance(epoch, offset, finished.head, finished.end, generation);
    }

    /// The log's end through every frame taken in so far, when known: read in a writer's
    /// turn, the end the turn's write starts from.
    pub(crate) fn log_end(&self) -> Option<LogEnd> {
        self.follower().end()
    }

    fn follower(&self) -> std::sync::MutexGuard<'_, Follower> {
        self.follower
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
