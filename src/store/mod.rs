//! [`Store`]: an annals file, the write transactions that append and run commands, and reads.
//!
//! The store holds no domain rule. It is the only place that begins redb write transactions
//! (the async writer, [`crate::writer`], batches its jobs through [`Store::write_with`]);
//! inside each, a [`WriteSession`] appends to the log and applies every new record to every
//! projection before the one commit. After every commit that moved the head it announces the
//! new head on a watch channel, which subscriptions use as a wake-up.

mod adopt;
mod archive;
mod audit;
mod backend;
mod backup;
mod catch_up;
pub(crate) mod compact;
mod erasure;
mod follow;
mod footprint;
mod import;
mod journaled;
mod keys;
pub(crate) mod open;
mod patient;
mod session;
mod shared;
mod signing;
mod tiles;
pub(crate) mod upgrade;

#[cfg(all(test, feature = "testing"))]
mod tests;

use crate::journal::JournalRecovery;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};

use crate::storage::Database;
use tokio::sync::watch;

use crate::audit::extends::{Extension, check_extends};
use crate::audit::verify::VerifyReport;
use crate::command::{Command, Precondition};
use crate::error::{Error, OpenError, Result, StorageError};
pub(crate) use crate::error::{PartialStep, StoreError};
use crate::log::Head;
use crate::log::append::{AppendOutcome, ExpectedVersion, LogEnd};
use crate::log::read::Snapshot;
use crate::log::tables::FORMAT_VERSION;
use crate::projection::table::ReadTables;
use crate::projection::{Projection, ProjectionError, Projections};
use crate::record::limits::Limits;
use crate::record::{Format, NewEvent, Position, Record};
use crate::sharing::Holder;
pub use crate::sharing::Sharing;
use crate::storage::Writer;
pub use archive::{ArchiveOptions, ArchiveReport, ArchivedRecords, Archives, Cut, CutProjection};
pub use audit::{Audit, Rebuild};
pub use backend::Backend;
pub use backup::Backup;
pub use compact::Compaction;
pub use erasure::{Erasure, KeyExport, KeyImport, Keys, PayloadReader, check_subject};
pub use footprint::{Footprint, TableFootprint};
pub use import::{Import, ImportStage};
pub use open::held_by_writer;
use open::{
    Closing, Handle, check_identity, check_redb_magic, create, guarded, initialise, open_reader,
    open_redb, open_writable, redb_builder, while_held,
};
pub use session::WriteSession;
pub use signing::Checkpoints;
pub use tiles::{Tiles, TilesWritten};

/// How long a write of a store open in [`Sharing::MultiWriter`] mode waits for its turn
/// while another process writes when [`StoreOptions::busy_timeout`] is zero (better-sqlite3's
/// default busy timeout): a zero busy timeout means "do not wait for the file to be let go",
/// not "fail a write the moment another process writes". A write that waits longer fails
/// with [`StoreError::WriterBusy`], having written nothing.
pub(crate) const WRITE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// The [`Store::path`] of a store opened over a storage backend rather than a file.
pub(crate) const BACKEND_PATH: &str = "<storage backend>";

/// How a store is opened.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// The limits appends are checked against.
    pub limits: Limits,
    /// Create the file when it does not exist (the default for [`Store::open`]).
    pub create: bool,
    /// Projections of the program's own, kept beside the built-in ones.
    pub projections: Vec<Arc<dyn Projection>>,
    /// How the file is shared with other processes; one writer with readers by default.
    pub sharing: Sharing,
    /// How long an open waits for another process to let go of the file before it gives up
    /// with [`OpenError::Held`] (SQLite's busy timeout); zero by default. It does not wait
    /// for writers that hold the file in multi-writer mode when this open asks for another
    /// mode: they would never let go. In [`Sharing::MultiWriter`] mode it also bounds how
    /// long each write waits for its turn while another process writes (5 seconds, as
    /// better-sqlite3's default, when it is zero), after which the write fails with
    /// [`StoreError::WriterBusy`](crate::error::StoreError::WriterBusy), having written nothing.
    pub busy_timeout: std::time::Duration,
    /// The commit journal of a store open on a file ([`crate::journal::JournalOptions`]; on by
    /// default): a commit syncs one small frame to `<log>.journal` and the log file takes the
    /// commits in at drains, in bulk; readers in other processes read the journal's synced
    /// frames with the file. `None` commits every transaction to the log file, one redb durable
    /// commit each, in exclusive and single-writer mode; any writable open recovers a journal
    /// left beside the log. In [`Sharing::MultiWriter`] mode every writer process commits
    /// through the one journal they share, always (its default bounds when `None`): a writer
    /// that committed to the file alone would not see the others' frames.
    pub journal: Option<crate::journal::JournalOptions>,
    /// The archive files of a cut log's cuts (`annals archive`), in any order, read when the
    /// open meets a projection the last cut kept no snapshot of at its version (added after
    /// the cut, or of a new version): the open replays it from position 0 through them (each
    /// record checked against the hash the log keeps) and records its state at the cut in a
    /// cut of no records (`schema/FORMAT.md` 3.14, "Adopting a projection"). Without them
    /// such an open is refused with [`crate::error::ArchiveError::NotInCut`]; otherwise unread.
    pub archives: Vec<PathBuf>,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            limits: Limits::default(),
            create: false,
            projections: Vec::new(),
            sharing: Sharing::default(),
            busy_timeout: std::time::Duration::ZERO,
            journal: Some(crate::journal::JournalOptions::default()),
            archives: Vec::new(),
        }
    }
}

/// `error`, a read of the file at `path` that ended before the data redb's header points to,
/// as [`OpenError::Unreadable`] naming the path and the cause (a read-only open does not check
/// the file's length against its layout, as a writable open does, and redb's words, "failed to
/// fill whole buffer", name neither); any other error as it is.
fn truncated_at(path: &Path, error: Error) -> Error {
    match error {
        Error::Storage(StorageError(redb::Error::Io(io)))
            if io.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            let length = std::fs::metadata(path).map_or(0, |metadata| metadata.len());
            OpenError::Unreadable {
                path: path.to_path_buf(),
                reason: crate::error::Unreadable::Truncated { length },
            }
            .into()
        }
        error => error,
    }
}

pub use crate::builtins::builtin_projections;

/// [`Store::check_append`] for a log that does not exist yet, which the append would create
/// empty with the built-in projections and `limits`: a limit, a kind a built-in projection
/// owns, or an expected version an empty log's stream is not at is refused before the file
/// is made.
pub fn check_append_to_new_log(
    stream: &str,
    expected: ExpectedVersion,
    events: &[NewEvent],
    limits: &Limits,
) -> Result<()> {
    crate::log::append::check_append(stream, events, limits)?;
    projections_with(Vec::new())?.check_raw_kinds(stream, events)?;
    Ok(crate::log::append::check_expected(stream, expected, None)?)
}

/// How a write transaction is committed. Its serde form is its name in snake_case
/// (`"immediate"`, `"deferred"`), as a host gives it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Durable when the commit returns: redb's `Durability::Immediate`. One sync per commit
    /// with [`Sharing::Exclusive`]; two in the shared modes, where redb commits in two phases
    /// so that no other process reads a commit whose pages are not yet on the disk.
    #[default]
    Immediate,
    /// Visible to readers at once, durable only at the next [`Durability::Immediate`] commit
    /// or [`Store::flush`]: redb's `Durability::None`. For tests and bulk loads. A crash loses
    /// the deferred commits since the last durable one, all of them and nothing else: the log
    /// reopens as a prefix of itself, with its chain, indexes and projections consistent.
    Deferred,
    /// Durable locally when the commit returns, as [`Durability::Immediate`] (the store and the
    /// `Writer` commit it so), and acknowledged by
    /// `replication::ReplicatingWriter::write_with` only once the JetStream stream holds the
    /// commit's records on its replicas (the server answers a publish after its RAFT group
    /// stored it on a quorum). With the `jetstream` feature.
    #[cfg(feature = "jetstream")]
    Replicated,
}

/// An annals log in one redb file.
///
/// ```
/// use annals::{ExpectedVersion, NewEvent, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("log.redb"))?;
/// let event = NewEvent::new("deploy.started", 1_700_000_000_000, b"v42".to_vec());
/// let outcome = store.append("deploy/web", ExpectedVersion::NoStream, &[event])?;
/// assert_eq!(outcome.first_position().0, 0);
/// assert!(annals::Audit::of(&store).verify()?.is_sound());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    db: Handle,
    limits: Limits,
    path: PathBuf,
    /// Whether `path` names a file (false for a store over a [`Backend`]).
    on_disk: bool,
    projections: Projections,
    sharing: Sharing,
    /// The head's next position as of the last commit, announced after each commit.
    commits: watch::Sender<Position>,
    /// Whether a write failed for want of disk space: redb fails every later call on this
    /// handle as a previous I/O error, and those are the full disk's too.
    out_of_space: std::sync::atomic::AtomicBool,
    /// The log's end as this store's last commit left it: the next write transaction packs
    /// small segments without reading them back while no other commit came between.
    log_end: std::sync::Mutex<Option<LogEnd>>,
    /// The count of the database's commits to the file ([`Database::file_commits`]) when a
    /// command through the overlay last found every projection's checkpoint following the
    /// head: until the file takes another commit (a rebuild's batch, a drain, a cut), they
    /// still do (commands only advance them), and commands need not read them to know it.
    checkpoints_followed_at: std::sync::atomic::AtomicU64,
    /// The commit journal (exclusive mode on a file), through which appends commit.
    journal: Option<Arc<std::sync::Mutex<crate::journal::Journal>>>,
    /// What the open recovered from a journal left beside the log.
    recovery: crate::journal::JournalRecovery,
    /// A read-only store's reading of a live journal beside the log (a writer's in another
    /// process), whose frames each read applies past the file's head.
    follower: Option<std::sync::Mutex<follow::Follower>>,
    /// The journal this store shares with other writer processes, in multi-writer mode.
    shared: Option<Arc<shared::SharedJournal>>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.path)
            .field("sharing", &self.sharing)
            .finish_non_exhaustive()
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // Everything acknowledged is in the journal already; the checkpoint only spares the
        // next open its recovery, and a failure leaves that to it.
        let _ = self.close_journal();
    }
}

impl Store {
    /// How long [`Store::open_read_only`] tries again while another process holds the file in a
    /// way a reader cannot join (an exclusive writer for good; for a moment, a process repairing
    /// the file after a crash).
    pub const READ_ONLY_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

    /// Opens the annals log at `path`, creating it if there is no file there.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(
            path,
            StoreOptions {
                create: true,
                ..StoreOptions::default()
            },
        )
    }

    /// Opens with explicit options. Projections whose version changed are rebuilt from the
    /// log, and those that lag are caught up, before this returns.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        options.limits.check()?;
        let projections = projections_with(options.projections)?;
        let path = path.as_ref().to_path_buf();
        let opened = (|| {
            if !path.exists() {
                if !options.create {
                    return Err(OpenError::Missing { path: path.clone() }.into());
                }
                create(&path, &projections, Format::CURRENT)?;
            }
            check_redb_magic(&path)?;
            let header = Arc::new(patient::HeaderWatch::default());
            let db = open_writable(&path, options.sharing, options.busy_timeout, &header)?;
            let (mut store, unsnapshotted) =
                Store::bring_up(db, options.limits, path.clone(), projections, true)?;
            store.sharing = options.sharing;
            let journal = crate::journal::journal_path(&path);
            let file = crate::journal::JournalFile::open(&path, &journal, false)?
                .map(|file| Box::new(file) as Box<dyn redb::StorageBackend>);
            store.attach_journal(file, journal, options.journal)?;
            store.adopt(unsnapshotted, &options.archives)?;
            store.share_journal(header)?;
            store.finish_erasures()?;
            Ok(store)
        })();
        opened.map_err(|error: Error| error.no_space_at(&path))
    }

    /// The end of every writable open: the identity checks, the projections' catch-up and
    /// the head, with any panic of redb's on a damaged file caught. The store runs without
    /// the projections of a cut log the cut kept no snapshot of: they come back with
    /// [`Store::adopt`], once the journal is recovered.
    fn bring_up(
        db: redb::Database,
        limits: Limits,
        path: PathBuf,
        projections: Projections,
        on_disk: bool,
    ) -> Result<(Store, adopt::Unsnapshotted)> {
        // The handle lives outside the guarded work, so that a panic unwinds without
        // dropping it, and it closes (guarded too) after the error is returned.
        let handle = Handle::Writable(Closing::new(Database::new(db)));
        let unsnapshotted = guarded(|| {
            let found = check_identity(&handle, &path)?;
            let Handle::Writable(db) = &handle else {
                unreachable!("opened writable above")
            };
            if found != FORMAT_VERSION {
                upgrade::to_current(db)?;
            }
            catch_up::bring_up_to_date(db, &projections)
        })?;
        let running = projections.without(&unsnapshotted);
        let mut store = Store::assemble(handle, limits, path, running)?;
        store.on_disk = on_disk;
        Ok((
            store,
            adopt::Unsnapshotted {
                names: unsnapshotted,
                all: projections,
            },
        ))
    }

    /// Opens the annals log kept in `backend`, a [`Backend`] of the caller's (in memory, or one
    /// that injects faults, as `annals::testing::sim` does). An empty
    /// backend gets the annals tables when `options.create` is set; it is refused with
    /// [`OpenError::Missing`] otherwise. Recovery, the identity checks and the projections'
    /// catch-up are those of [`Store::open_with`]. Unlike a file, an empty backend is not
    /// initialised atomically: a crash before the first commit returns leaves it unusable.
    /// [`Store::path`] is the label `BACKEND_PATH` and [`Stats::file_bytes`] is 0.
    pub fn open_with_backend(backend: impl Backend, options: StoreOptions) -> Result<Store> {
        let archives = options.archives.clone();
        let (mut store, unsnapshotted) = Store::open_backend(backend, Sharing::Exclusive, options)?;
        store.adopt(unsnapshotted, &archives)?;
        Ok(store)
    }

    /// [`Store::open_with_backend`] up to the projections a cut kept no snapshot of.
    fn open_backend(
        backend: impl Backend,
        sharing: Sharing,
        options: StoreOptions,
    ) -> Result<(Store, adopt::Unsnapshotted)> {
        options.limits.check()?;
        let projections = projections_with(options.projections)?;
        let path = PathBuf::from(BACKEND_PATH);
        let empty = backend.len()? == 0;
        if empty && !options.create {
            return Err(OpenError::Missing { path }.into());
        }
        // A backend is this process's own: nothing else can open it. The simulated disk alone
        // opens one in single-writer mode, as a file no other process has open.
        let opened = open_redb(&path, || {
            #[cfg(feature = "testing")]
            if sharing != Sharing::Exclusive {
                return redb_builder(sharing)
                    .create_with_backend(backend::Alone(backend::Engine(backend)));
            }
            redb_builder(Sharing::Exclusive).create_with_backend(backend::Engine(backend))
        });
        let brought_up = opened.and_then(|db| {
            if empty {
                guarded(|| initialise(&db, &projections, Format::CURRENT))?;
            }
            Store::bring_up(db, options.limits, path.clone(), projections, false)
        });
        let (mut store, unsnapshotted) = brought_up.map_err(|error| error.no_space_at(&path))?;
        store.sharing = sharing;
        Ok((store, unsnapshotted))
    }

    /// [`Store::open_with_backend`] with the commit journal in `journal`, a storage backend
    /// of its own (the simulated disk's second file, say): commits go through it as through
    /// `<log>.journal` ([`StoreOptions::journal`] gives its bounds; `None` recovers what it
    /// holds and commits to the log's backend), and the open recovers what it holds past the
    /// log's head. The backend must grow on a write past its end, as a file does. In the mode
    /// [`StoreOptions::sharing`] names: [`Sharing::SingleWriter`] commits its drains in two
    /// phases and takes the engine's locks, as on a file no other process has open.
    #[cfg(feature = "testing")]
    pub(crate) fn open_with_backends(
        backend: impl Backend,
        journal: impl Backend,
        options: StoreOptions,
    ) -> Result<Store> {
        let bounds = options.journal;
        let archives = options.archives.clone();
        let (mut store, unsnapshotted) = Store::open_backend(backend, options.sharing, options)?;
        let path = crate::journal::journal_path(&store.path);
        store
            .attach_journal(Some(Box::new(backend::Engine(journal))), path, bounds)
            .map_err(|error| error.no_space_at(&store.path))?;
        store.adopt(unsnapshotted, &archives)?;
        Ok(store)
    }

    /// Opens an existing log without writing to its file, for audits: appends are refused
    /// with [`Error::ReadOnly`], and projections are read as they were last committed. It
    /// Opens beside a writer in [`Sharing::SingleWriter`] or [`Sharing::MultiWriter`] mode in
    /// another process and follows its commits: each read sees the latest whole commit,
    /// never a torn one ([`OpenError::Held`] beside an exclusive one, after trying for
    /// [`Store::READ_ONLY_PATIENCE`]). A file left by a crash,
    /// with no writer open, needs redb's recovery first, which this does (opening it writable
    /// once); recovery rebuilds redb's allocator state and never changes a committed record.
    /// A commit journal beside the log (a journaling writer's, live or killed) is read with
    /// the file: each read applies the frames its writer synced past the file's head, so the
    /// reader sees every acknowledged commit and never writes; a damaged journal is refused
    /// here, as a writable open refuses it.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        let store = Store::open_reader(path.as_ref())?;
        drop(store.begin_read()?);
        Ok(store)
    }

    /// [`Store::open_read_only`] but for the journal's first read.
    fn open_reader(path: &Path) -> Result<Store> {
        let path = path.to_path_buf();
        if !path.exists() {
            return Err(OpenError::Missing { path }.into());
        }
        if path.is_dir() {
            return Err(OpenError::NotAnnalsLog {
                path,
                reason: crate::error::NotALog::Directory,
            }
            .into());
        }
        check_redb_magic(&path)?;
        // Another process may hold the file for a moment without a writer's lasting claim:
        // repairing it after a crash (another reader doing just this), or opening it.
        let db = while_held(Self::READ_ONLY_PATIENCE, || match open_reader(&path) {
            Err(Error::Storage(StorageError(redb::Error::RepairAborted))) => {
                let no_wait = std::time::Duration::ZERO;
                let header = Arc::default();
                match open_writable(&path, Sharing::SingleWriter, no_wait, &header) {
                    Ok(repaired) => {
                        drop(Closing::new(repaired));
                        open_reader(&path)
                    }
                    // A writer holds the file, so it is no crash's leftover: the reader found
                    // it between two of the writers' steps (multi-writers hand the file on
                    // between their commits). Tried again, as any busy file is, whatever mode
                    // the writers are in: a reader joins them all.
                    Err(Error::Open(OpenError::Held { .. })) => Err(OpenError::Held {
                        path: path.clone(),
                        wanted: Sharing::SingleWriter,
                        holder: Holder::Shared,
                    }
                    .into()),
                    Err(error) => Err(error),
                }
            }
            attempt => attempt,
        });
        // Repairing a file left by a crash writes; on a full disk that is the disk's failure.
        let db = db.map_err(|error| error.no_space_at(&path))?;
        let projections = projections_with(Vec::new())?;
        let handle = Handle::ReadOnly(Closing::new(db));
        let truncated = |error: Error| truncated_at(&path, error);
        let found = guarded(|| check_identity(&handle, &path)).map_err(truncated)?;
        if found != FORMAT_VERSION {
            // An earlier format's values carry no checksums, and reading them unchecked is
            // what this format exists to end: the upgrade is a writable open's.
            return Err(OpenError::NeedsUpgrade {
                path,
                found,
                current: FORMAT_VERSION,
            }
            .into());
        }
        let mut store = Store::assemble(handle, Limits::default(), path.clone(), projections)
            .map_err(truncated)?;
        store.follower = Some(std::sync::Mutex::default());
        Ok(store)
    }

    fn assemble(
        db: Handle,
        limits: Limits,
        path: PathBuf,
        projections: Projections,
    ) -> Result<Store> {
        let head = guarded(|| Snapshot::over(db.begin_read()?)?.head())?;
        Ok(Store {
            db,
            limits,
            path,
            on_disk: true,
            projections,
            sharing: Sharing::SingleWriter,
            commits: watch::Sender::new(head.next),
            out_of_space: std::sync::atomic::AtomicBool::new(false),
            log_end: std::sync::Mutex::new(None),
            checkpoints_followed_at: std::sync::atomic::AtomicU64::new(u64::MAX),
            journal: None,
            recovery: crate::journal::JournalRecovery::default(),
            follower: None,
            shared: None,
        })
    }

    /// `error` with a full disk named as its cause (see [`Error::NoSpace`]), including redb's
    /// refusals that follow one on this handle.
    fn failed(&self, error: Error) -> Error {
        use std::sync::atomic::Ordering;
        let error = match error {
            Error::Storage(StorageError(redb::Error::PreviousIo))
                if self.out_of_space.load(Ordering::Relaxed) =>
            {
                Error::NoSpace {
                    path: self.path.clone(),
                }
            }
            error => error.no_space_at(&self.path),
        };
        if matches!(error, Error::NoSpace { .. }) {
            self.out_of_space.store(true, Ordering::Relaxed);
        }
        error
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The files of this store that no output may be written over ([`crate::output_path`]):
    /// its log, journal and temporary files, and the archives its cuts wrote, by the names the
    /// cut records keep. `None` for a store over a storage backend, which has no files.
    pub(crate) fn files(&self) -> Result<Option<crate::output_path::StoreFiles>> {
        if !self.on_disk {
            return Ok(None);
        }
        let archives = guarded(|| crate::log::cut::archive_names(&self.begin_read()?))?;
        Ok(Some(
            crate::output_path::StoreFiles::of_log(&self.path).with_archives(archives),
        ))
    }

    /// Refuses `path` as a place to write `output` by the rule every writer of the store
    /// goes through ([`crate::output_path::check`]), against this store's files, the
    /// archives of its cuts among them. A read-only store answers too, so that a command
    /// can be refused before it opens the log writable.
    pub(crate) fn check_output(
        &self,
        path: &Path,
        output: crate::output_path::Output,
    ) -> Result<()> {
        Ok(crate::output_path::check(
            path,
            output,
            self.files()?.as_ref(),
        )?)
    }

    /// The limits appends are checked against.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// How this store shares its file with other processes ([`Sharing::SingleWriter`] for a
    /// read-only store, [`Sharing::Exclusive`] for one over a storage backend).
    pub fn sharing(&self) -> Sharing {
        self.sharing
    }

    /// The projections this store keeps.
    pub fn projections(&self) -> &Projections {
        &self.projections
    }

    /// Refuses with [`Error::ReadOnly`] a store opened by [`Store::open_read_only`].
    pub(crate) fn require_writable(&self) -> Result<()> {
        self.database().map(drop)
    }

    fn database(&self) -> Result<&Database> {
        match &self.db {
            Handle::Writable(db) => Ok(db),
            Handle::ReadOnly(_) => Err(Error::ReadOnly),
        }
    }

    /// Runs `work` in one durable write transaction: every append it makes is applied to every
    /// projection, and all of it commits together, or none of it if `work` fails. A failure
    /// inside that left part of a change behind (a record in the log that a projection
    /// refused, a command with only some of its appends in) fails the write with
    /// [`StoreError::PartialWrite`] even if `work` goes on past it; a refusal that wrote
    /// nothing (an [`Error::Append`]) does not.
    pub fn write<R>(&self, work: impl FnOnce(&mut WriteSession<'_>) -> Result<R>) -> Result<R> {
        self.write_with(Durability::Immediate, work)
    }

    /// [`Store::write`] committed with `durability`. A transaction that appended nothing is
    /// aborted rather than committed, whatever the durability.
    #[cfg_attr(
        feature = "tracing",
        tracing::instrument(level = "debug", name = "commit", skip_all)
    )]
    pub fn write_with<R>(
        &self,
        durability: Durability,
        work: impl FnOnce(&mut WriteSession<'_>) -> Result<R>,
    ) -> Result<R> {
        match &self.journal {
            Some(journal) if durability != Durability::Deferred => {
                self.write_through_overlay(journal, work)
            }
            _ => self.write_to_file(durability, work),
        }
    }

    /// [`Store::write_with`] in one redb write transaction, whatever the store's commit path:
    /// for a write the overlay cannot hold (a cut, which deletes tables) and the commits that
    /// do not go through a journal.
    pub(crate) fn write_to_file<R>(
        &self,
        durability: Durability,
        work: impl FnOnce(&mut WriteSession<'_>) -> Result<R>,
    ) -> Result<R> {
        // redb's calls outside `work` are guarded; `work` is the caller's, and a panic in it
        // is the caller's too, so it unwinds as it is.
        let txn = guarded(|| {
            let database = self.database()?;
            self.journal_ready()?;
            if durability == Durability::Deferred && self.sharing.is_shared() {
                return Err(StoreError::DeferredNeedsExclusive {
                    sharing: self.sharing,
                }
                .into());
            }
            let mut txn = database.begin_write()?;
            if self.sharing == Sharing::MultiWriter {
                catch_up::keep_up(&Writer::redb(&txn), database, &self.projections)?;
            } else {
                // A rebuild in another thread of this process left a projection behind
                // between its batches: catch it up first, in batches of its own, so that
                // nothing decides on it or applies a record to it half-built.
                while catch_up::lagging(&Writer::redb(&txn), &self.projections)? {
                    txn.abort()?;
                    catch_up::catch_up(database, &self.projections)?;
                    txn = database.begin_write()?;
                }
            }
            // Through a journal, the only writes that come here are deferred ones or those the
            // journal cannot hold (a cut): the latter commit durably, which drains.
            if durability == Durability::Deferred {
                txn.set_durability(redb::Durability::None)
                    .map_err(redb::Error::from)?;
            }
            Ok(txn)
        })
        .map_err(|error| self.failed(error))?;
        let (result, finished) = self.run_session(&Writer::redb(&txn), work)?;
        guarded(|| match finished.appended {
            true => {
                match &self.journal {
                    Some(journal) => self.commit_to_file(journal, txn, durability)?,
                    None => txn.commit()?,
                }
                self.committed(&finished);
                Ok(())
            }
            false => Ok(txn.abort()?),
        })
        .map_err(|error| self.failed(error))?;
        Ok(result)
    }

    /// Runs `work` in a write session over `writer`, given the log's end as the last commit
    /// left it: its result, and what the session wrote (the caller commits or drops it).
    pub(crate) fn run_session<R>(
        &self,
        writer: &Writer<'_>,
        work: impl FnOnce(&mut WriteSession<'_>) -> Result<R>,
    ) -> Result<(R, session::Finished)> {
        self.run_session_following(writer, false, work)
    }

    /// [`Store::run_session`], told whether every projection's checkpoint is known to follow
    /// the head already ([`WriteSession::checkpoints_follow`]).
    pub(crate) fn run_session_following<R>(
        &self,
        writer: &Writer<'_>,
        following: bool,
        work: impl FnOnce(&mut WriteSession<'_>) -> Result<R>,
    ) -> Result<(R, session::Finished)> {
        // In a shared file the other writers' frames taken in this turn moved the end: the
        // follower that took them knows where it is now.
        let known_end = match &self.shared {
            Some(shared) => shared.log_end(),
            None => *self.log_end.lock().unwrap_or_else(PoisonError::into_inner),
        };
        let mut session = guarded(|| {
            WriteSession::open(
                writer,
                Some(self.database()?),
                &self.projections,
                &self.limits,
                known_end,
            )
        })?;
        if following {
            session.checkpoints_follow();
        }
        if self.on_disk {
            session.seal_with(&self.path);
        }
        let result = work(&mut session)?;
        let finished = guarded(|| session.finish())?;
        Ok((result, finished))
    }

    /// After a commit of what a session `finished` with: the log's end kept for the next
    /// write, the new head announced to subscribers.
    pub(crate) fn committed(&self, finished: &session::Finished) {
        *self.log_end.lock().unwrap_or_else(PoisonError::into_inner) = finished.end;
        self.announce(finished.head.next);
    }

    /// Makes every earlier commit durable: commits an empty transaction with
    /// [`Durability::Immediate`] (durable on return). Needed only after [`Durability::Deferred`] writes.
    pub fn flush(&self) -> Result<()> {
        if self.journal.is_some() {
            return self.drain_journal();
        }
        guarded(|| self.database()?.begin_write()?.commit()).map_err(|error| self.failed(error))
    }

    /// Closes the store, reporting what dropping it would not: redb writes its allocator
    /// state when a writable file closes, and a failure there (a full disk, say) leaves the
    /// file to be repaired by the next open, which needs space to do it. The commits made
    /// before stand either way. A read-only store closes without writing.
    pub fn close(mut self) -> Result<()> {
        self.close_journal()?;
        let Handle::Writable(db) = &mut self.db else {
            return Ok(());
        };
        let Some(db) = db.take() else {
            return Ok(());
        };
        let closed = guarded(|| db.into_redb().close().map_err(Error::from));
        let out_of_space = self.out_of_space.load(std::sync::atomic::Ordering::Relaxed);
        closed.map_err(|error| match error {
            Error::Storage(StorageError(redb::Error::PreviousIo)) if out_of_space => {
                Error::NoSpace {
                    path: self.path.clone(),
                }
            }
            error => error.no_space_at(&self.path),
        })
    }

    /// Announces a commit: the head's next position only ever grows, even when two threads'
    /// commits announce out of order.
    fn announce(&self, next: Position) {
        self.commits.send_if_modified(|announced| {
            let moved = next > *announced;
            if moved {
                *announced = next;
            }
            moved
        });
    }

    /// A receiver of the head's next position, updated after every commit that moved it.
    pub(crate) fn commits(&self) -> watch::Receiver<Position> {
        self.commits.subscribe()
    }

    /// Whether another process may commit to this log while this store is open: it is
    /// read-only (a writer may run beside it) or open in [`Sharing::MultiWriter`] mode. Such
    /// commits announce themselves to nobody here, so readers must look for them.
    pub(crate) fn others_may_write(&self) -> bool {
        matches!(self.db, Handle::ReadOnly(_)) || self.sharing == Sharing::MultiWriter
    }

    /// Appends `events` to `stream` in one durable transaction, if the stream is in the
    /// `expected` state. The events get contiguous positions and versions; on any error
    /// nothing is written. Kinds owned by a projection (`lease.…`) are refused
    /// ([`StoreError::ReservedKind`]): they are appended by that projection's commands.
    pub fn append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        // Refused before the transaction begins: a refusal is no reason to touch the file.
        self.projections.check_raw_kinds(stream, events)?;
        self.write(|session| session.append(stream, expected, events))
    }

    /// Refuses, reading the log as of now, what [`Store::append`] would refuse: a limit
    /// ([`check_append`](crate::log::check_append)), a kind a projection owns, an idempotency key
    /// used for other content (or the keys of only some of the events), an expected version
    /// the stream is not at. `Ok` when the append would write, or answer duplicate. A
    /// read-only store tells it too, so a caller can refuse before it opens the log writable
    /// (a writable open rewrites redb's bookkeeping in the file); the append decides again.
    pub fn check_append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<()> {
        crate::log::append::check_append(stream, events, &self.limits)?;
        self.projections.check_raw_kinds(stream, events)?;
        let snapshot = self.snapshot()?;
        if crate::log::append::duplicates(&snapshot.idempotency, stream, events)?.is_some() {
            return Ok(());
        }
        let current = snapshot.stream_version(stream)?;
        Ok(crate::log::append::check_expected(
            stream, expected, current,
        )?)
    }

    /// [`Store::append`] unless `guard` refuses it, checked in the same transaction: a
    /// [`crate::leases::LeaseGuard`] is refused with [`StoreError::Fenced`] unless its token
    /// is its resource's live token.
    pub fn append_guarded(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        guard: &(impl Precondition + ?Sized),
    ) -> Result<AppendOutcome> {
        self.projections.check_raw_kinds(stream, events)?;
        self.write(|session| {
            session.guard(guard)?;
            session.append(stream, expected, events)
        })
    }

    /// [`Store::execute`] unless `guard` refuses it, checked in the same transaction.
    pub fn execute_guarded<C: Command>(
        &self,
        command: &C,
        guard: &(impl Precondition + ?Sized),
    ) -> Result<C::Outcome> {
        self.write(|session| {
            session.guard(guard)?;
            session.execute(command)
        })
    }

    /// Decides `command` against the current state and appends what it decides, in one
    /// durable transaction; returns its outcome (which may be a refusal, appending nothing).
    pub fn execute<C: Command>(&self, command: &C) -> Result<C::Outcome> {
        self.write(|session| session.execute(command))
    }

    /// One consistent read of the tables: redb's latest commit and what the overlay holds
    /// past it (this store's own commits not yet drained, or, read-only beside a journaling
    /// writer in another process, the frames it synced).
    pub(crate) fn begin_read(&self) -> Result<crate::storage::Reader> {
        match (&self.db, &self.follower) {
            (Handle::ReadOnly(db), Some(follower)) => self.read_beside_writer(db, follower),
            (handle, _) => handle.begin_read(),
        }
    }

    /// A consistent read-only view of the log as of now; a writer may go on meanwhile.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let snapshot = guarded(|| Snapshot::over(self.begin_read()?))?;
        // An export from it then refuses the store's own files as its output.
        Ok(match self.on_disk {
            true => snapshot.of_log(&self.path),
            false => snapshot,
        })
    }

    /// A consistent read-only view of the projection tables, for the domains' queries. A
    /// writable store first catches up a projection of its own that is behind the log (beside
    /// other writers, or after a rebuild that stopped); reads of a projection still behind
    /// (in a read-only store, say) are refused with [`ProjectionError::Behind`].
    pub(crate) fn state(&self) -> Result<ReadTables> {
        guarded(|| {
            let tables = ReadTables::new(self.begin_read()?);
            let Handle::Writable(database) = &self.db else {
                return Ok(tables);
            };
            let own_behind = tables
                .behind()?
                .iter()
                .any(|(name, _, _)| self.projections.get(name).is_some());
            if !own_behind {
                return Ok(tables);
            }
            drop(tables);
            if self.sharing == Sharing::MultiWriter {
                let txn = database.begin_write()?;
                let writer = Writer::redb(&txn);
                catch_up::keep_up(&writer, database, &self.projections)?;
                self.projections.advance_checkpoints(&writer)?;
                drop(writer);
                txn.commit()?;
            } else {
                catch_up::catch_up(database, &self.projections)?;
            }
            Ok(ReadTables::new(self.begin_read()?))
        })
        .map_err(|error| self.failed(error))
    }

    /// The head: the next position and the hash of the last record.
    pub(crate) fn head(&self) -> Result<Head> {
        guarded(|| self.snapshot()?.head())
    }

    /// The record at `position`, `None` at or past the head.
    pub(crate) fn get(&self, position: Position) -> Result<Option<Record>> {
        guarded(|| self.snapshot()?.get(position))
    }

    /// Up to `limit` records from `from` in `direction`.
    #[cfg(feature = "testing")]
    pub(crate) fn read_all(
        &self,
        from: Position,
        direction: crate::Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        guarded(|| {
            self.snapshot()?
                .records(from, direction)?
                .take(limit)
                .collect()
        })
    }

    /// Up to `limit` records of `stream` from version `from` in `direction`.
    #[cfg(feature = "testing")]
    pub(crate) fn read_stream(
        &self,
        stream: &str,
        from: crate::record::StreamVersion,
        direction: crate::Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        guarded(|| {
            self.snapshot()?
                .stream(stream, from, direction)?
                .take(limit)
                .collect()
        })
    }

    /// The work of [`Audit::verify`].
    pub(crate) fn verify(&self) -> Result<VerifyReport> {
        self.verify_with(&mut |_| {})
    }

    /// The work of [`Audit::verify_with`].
    pub(crate) fn verify_with(&self, progress: &mut dyn FnMut(u64)) -> Result<VerifyReport> {
        guarded(|| {
            let snapshot = Snapshot::over(self.begin_read()?)?;
            crate::audit::verify::verify_with(
                &snapshot,
                &snapshot.state_as_stored(),
                &self.projections,
                &mut *progress,
            )
        })
    }

    /// The work of [`Audit::check_extends`].
    pub(crate) fn check_extends(&self, saved: Head) -> Result<Extension> {
        guarded(|| check_extends(&self.snapshot()?, saved))
    }

    /// The work of [`Audit::history`].
    pub(crate) fn history(&self, entity: &crate::audit::history::Entity) -> Result<Vec<Record>> {
        guarded(|| crate::audit::history::history(&self.snapshot()?, entity))
    }

    /// The work of [`Rebuild::run`].
    pub(crate) fn rebuild(&self, name: Option<&str>) -> Result<()> {
        self.rebuild_with(name, &mut |_| {})
    }

    /// The work of [`Rebuild::run_with`].
    pub(crate) fn rebuild_with(
        &self,
        name: Option<&str>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        self.rebuild_until(name, &mut |done| {
            progress(done);
            std::ops::ControlFlow::Continue(())
        })
    }

    /// [`Store::rebuild_with`], stopped between two of its transactions when `progress`
    /// breaks: the test support's rebuild interrupted as a kill would leave it.
    pub(crate) fn rebuild_until(
        &self,
        name: Option<&str>,
        progress: &mut dyn FnMut(u64) -> std::ops::ControlFlow<()>,
    ) -> Result<()> {
        guarded(|| catch_up::rebuild(self.database()?, &self.projections, name, &mut *progress))
            .map_err(|error| self.failed(error))
    }

    /// The work of [`Audit::state_json`].
    pub(crate) fn state_json(&self, name: &str, at: Option<Position>) -> Result<serde_json::Value> {
        self.state_json_with(name, at, &mut |_| {})
    }

    /// The work of [`Audit::state_json_with`].
    pub(crate) fn state_json_with(
        &self,
        name: &str,
        at: Option<Position>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<serde_json::Value> {
        let projection = self
            .projections
            .get(name)
            .ok_or_else(|| ProjectionError::Unknown {
                name: name.to_owned(),
            })?;
        match at {
            // A read: a projection behind the log is refused, not caught up here.
            None => guarded(|| projection.state_json(&self.snapshot()?.state())),
            Some(at) => {
                let replayed = self.state_at(at, progress)?;
                guarded(|| projection.state_json(&replayed.state()?))
            }
        }
    }

    /// The work of [`Audit::state_at`].
    pub(crate) fn state_at(
        &self,
        at: Position,
        progress: &mut dyn FnMut(u64),
    ) -> Result<crate::audit::replay::Replay> {
        guarded(|| {
            let snapshot = self.snapshot()?;
            let head = snapshot.head()?.next;
            if at > head {
                return Err(crate::error::AuditError::SizeBeyondHead {
                    size: at.0,
                    head: head.0,
                }
                .into());
            }
            crate::audit::replay::replay_with(&snapshot, &self.projections, Some(at), progress)
        })
    }

    /// The work of [`Footprint::of`].
    pub(crate) fn footprint(&self) -> Result<Footprint> {
        let (records, tables) = guarded(|| {
            // The file's own tables: what the overlay holds is written into them first.
            self.settle()?;
            let txn = self.db.begin_read_file()?;
            let tables = footprint::tables(&txn)?;
            Ok((Snapshot::new(txn)?.head()?.next.0, tables))
        })?;
        let stats = self.stats()?;
        Ok(Footprint {
            file_bytes: stats.file_bytes,
            disk_bytes: stats.disk_bytes,
            records,
            tables,
        })
    }

    /// The work of [`Stats::of`].
    pub(crate) fn stats(&self) -> Result<Stats> {
        let (head, streams, start) = guarded(|| {
            let snapshot = self.snapshot()?;
            Ok((snapshot.head()?, snapshot.stream_count()?, snapshot.start()))
        })?;
        let (file_bytes, disk_bytes) = if self.on_disk {
            let metadata = fs::metadata(&self.path)?;
            (metadata.len(), footprint::disk_bytes(&metadata))
        } else {
            (0, 0)
        };
        Ok(Stats {
            records: head.next.0,
            start,
            streams,
            head,
            file_bytes,
            disk_bytes,
            journaled: self.journaled(),
            journal_recovery: self.journal_recovery().clone(),
        })
    }
}

fn projections_with(extra: Vec<Arc<dyn Projection>>) -> Result<Projections> {
    let mut projections = Projections::default();
    for projection in builtin_projections().into_iter().chain(extra) {
        projections.register(projection)?;
    }
    Ok(projections)
}

/// Counts and sizes of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Records in the log's history: its head position, the records cuts archived included.
    pub records: u64,
    /// The first position the file still holds: 0, or where the last cut fell (the records
    /// before it are in the cuts' archives). The file holds `records - start.0` records.
    pub start: Position,
    /// Streams with at least one record.
    pub streams: u64,
    /// The head.
    pub head: Head,
    /// The file's size in bytes. redb doubles a file when it runs out of room (until it
    /// reaches 4 GiB), so this runs up to twice what the log uses.
    pub file_bytes: u64,
    /// The bytes the file takes on disk: its allocated blocks (Unix), which leave out the
    /// room redb allocated ahead of use and never wrote; the file's size elsewhere.
    pub disk_bytes: u64,
    /// Whether commits go through a commit journal ([`crate::journal::JournalOptions`]): a store open
    /// on a file in [`Sharing::Exclusive`] or [`Sharing::SingleWriter`] mode with
    /// [`StoreOptions::journal`] set (the default), or in [`Sharing::MultiWriter`] mode.
    /// Readers in other processes read the journal's synced frames with the file.
    pub journaled: bool,
    /// What this store's open recovered from the commit journal beside the log: transactions
    /// a crash left there and not in the log file, appended again, and the torn end of an
    /// unacknowledged commit, dropped.
    pub journal_recovery: JournalRecovery,
}

impl Stats {
    /// Counts and sizes.
    pub fn of(store: &Store) -> Result<Stats> {
        store.stats()
    }
}

impl Footprint {
    /// Where the log's bytes go: every table's pages and what fills them, beside the file's
    /// size (see [`Footprint`]).
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let store = annals::Store::open(dir.path().join("log.redb")).unwrap();
    /// let footprint = annals::maintenance::Footprint::of(&store).unwrap();
    /// assert!(footprint.tables.iter().any(|t| t.name == "annals.segments"));
    /// ```
    pub fn of(store: &Store) -> Result<Footprint> {
        store.footprint()
    }
}
