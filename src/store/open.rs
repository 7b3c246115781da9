//! Creating and opening annals files: atomic creation, the checks that refuse a file that is
//! not an annals log (or not of this format version), and redb panics turned into errors.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::{Database, ReadTransaction, ReadableDatabase};

use super::patient::{HeaderWatch, PatientFile};

use crate::storage::Reader;

pub(crate) use crate::error::guarded;
use crate::error::{
    Error, NotALog, OpenError, Result, StorageError, StoreError, Unreadable, caught,
};
use crate::log::tables::{
    FORMAT_KEY, FORMAT_VERSION, HEAD_KEY, IDEMPOTENCY, MAGIC, MAGIC_KEY, MERKLE, META, RECORDS_KEY,
    SEGMENTS, STREAM_COUNT_KEY, STREAM_RUNS,
};
use crate::log::{Head, encode_head, seal_meta};
use crate::output_path::{Output, REDB_MAGIC, create_new, folder_of, temporary_of};
use crate::projection::{CHECKPOINTS, Projections, seal_checkpoint};
use crate::record::Format;
use crate::sharing::{Holder, Sharing};
use crate::storage::Readable;

/// The redb handle: read-write, or read-only for audits that must not touch the file.
pub(crate) enum Handle {
    Writable(Closing<crate::storage::Database>),
    ReadOnly(Closing<redb::ReadOnlyDatabase>),
}

/// A redb database whose closing is guarded: redb writes its allocator state back when a
/// database is dropped, and may panic there on a damaged file. That panic is caught and
/// dropped with the database, so that dropping a store never panics.
pub(crate) struct Closing<D>(Option<D>);

impl<D> Closing<D> {
    pub(crate) fn new(db: D) -> Self {
        Closing(Some(db))
    }
}

impl<D> Closing<D> {
    /// The database, for a close that reports its failure: the handle is left empty, and
    /// must not be used again.
    pub(crate) fn take(&mut self) -> Option<D> {
        self.0.take()
    }
}

impl<D> std::ops::Deref for Closing<D> {
    type Target = D;

    fn deref(&self) -> &D {
        match &self.0 {
            Some(db) => db,
            None => unreachable!("the database is taken only by drop"),
        }
    }
}

impl<D> std::ops::DerefMut for Closing<D> {
    fn deref_mut(&mut self) -> &mut D {
        match &mut self.0 {
            Some(db) => db,
            None => unreachable!("the database is taken only by drop"),
        }
    }
}

impl<D> Drop for Closing<D> {
    fn drop(&mut self) {
        if let Some(db) = self.0.take() {
            // Nothing is left to tell: the store is gone, and the damage is reported again by
            // the next open.
            let _ = caught(move || drop(db));
        }
    }
}

impl Handle {
    /// One consistent read: redb's latest commit, and the overlay's generation published with
    /// it on a writable store.
    pub(crate) fn begin_read(&self) -> Result<Reader> {
        Ok(match self {
            Handle::Writable(db) => db.begin_read()?,
            Handle::ReadOnly(db) => Reader::new(crate::storage::Commit::shared(db.begin_read()?)),
        })
    }

    /// A read of redb's file alone, without what the overlay holds: a consistent commit,
    /// which holds every acknowledged commit only when nothing is published (after a drain).
    pub(crate) fn begin_read_file(&self) -> Result<ReadTransaction> {
        Ok(match self {
            Handle::Writable(db) => db.begin_read_file()?,
            Handle::ReadOnly(db) => db.begin_read()?,
        })
    }
}

/// Creates a new log atomically: initialised whole (tables, identity, head, every
/// projection's checkpoint) under a name of this process's own, committed durably and closed,
/// then published at `path`, so that `path` never names a half-made log and a kill at any
/// moment leaves either no file there or a whole log. When another process created a log at
/// `path` meanwhile, that log stands (it may already hold acknowledged appends) and this one
/// is discarded: the caller opens the one that is there.
pub(crate) fn create(path: &Path, projections: &Projections, format: Format) -> Result<()> {
    // A new log is a file written at a path given, as an export is: never another store's
    // journal, a FIFO or a path in a missing folder.
    crate::output_path::check(path, Output::File, None)?;
    sweep_stale(path);
    let temporary = crate::output_path::private_name(path, "creating");
    // Nobody else knows the temporary file: it is created exclusive, and closed before it is
    // published.
    initialise(&create_temporary(&temporary, None)?, projections, format)?;
    match publish(&temporary, path) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = fs::remove_file(&temporary);
            match error.kind() {
                std::io::ErrorKind::AlreadyExists => Ok(()),
                _ => Err(error.into()),
            }
        }
    }
}

/// A new, empty redb database in the private file `temporary` ([`crate::output_path::private_name`]),
/// created with no more permissions than the file at `like` has (`O_EXCL`, `O_NOFOLLOW`). A
/// regular file a killed process of the same id left under that name is removed first; a
/// link or anything else there is refused, never followed.
pub(crate) fn create_temporary(temporary: &Path, like: Option<&Path>) -> Result<Database> {
    if fs::symlink_metadata(temporary).is_ok_and(|found| found.is_file()) {
        fs::remove_file(temporary)?;
    }
    let file = create_new(temporary, like)?;
    let backend = redb::backends::FileBackend::new(file)?;
    Ok(redb_builder(Sharing::Exclusive).create_with_backend(backend)?)
}

/// How long a private file must have been left alone before [`sweep_stale`] removes it: far
/// longer than a creation takes, and than any pause of an import (which writes the file as
/// it goes).
const STALE_AFTER: Duration = Duration::from_secs(600);

/// Removes the private files that processes killed while creating or importing a log at
/// `path` left beside it. Such a file is never opened as the log, so leaving one is harmless
/// but for the space; only a file whose process no longer runs (as `/proc` tells, so only
/// where there is one) and that nobody has written for [`STALE_AFTER`] is removed, so that a
/// live builder (in another PID namespace too) keeps its file. Best effort: a file that cannot
/// be read or removed stays.
pub(crate) fn sweep_stale(path: &Path) {
    let proc = Path::new("/proc/self");
    let (Some(name), true) = (path.file_name(), proc.exists()) else {
        return;
    };
    let Ok(entries) = fs::read_dir(folder_of(path)) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let Some((_, pid)) = temporary_of(&entry.file_name(), name) else {
            continue;
        };
        let left_alone = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|modified| modified.elapsed().ok())
            .is_some_and(|idle| idle >= STALE_AFTER);
        if pid != own && left_alone && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Moves the finished file `from` to `to` unless something is at `to` already
/// ([`std::io::ErrorKind::AlreadyExists`], `from` left in place): a hard link, which the file
/// system refuses over an existing name, then the unlink of `from`, then a sync of the
/// directory. A rename would replace a file another process created meanwhile.
pub(crate) fn publish(from: &Path, to: &Path) -> std::io::Result<()> {
    fs::hard_link(from, to)?;
    fs::remove_file(from)?;
    fs::File::open(folder_of(to))?.sync_all()
}

/// Writes the annals tables into a new, empty redb database, with each of `projections`'
/// checkpoints at its version and position 0 (what the first open would write), in one
/// durable commit: the log is whole before anything opens it as a log.
pub(crate) fn initialise(db: &Database, projections: &Projections, format: Format) -> Result<()> {
    let txn = db.begin_write()?;
    {
        let mut meta = META.write(&txn)?;
        meta.insert(MAGIC_KEY, MAGIC)?;
        meta.insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
        meta.insert(RECORDS_KEY, format.version().to_le_bytes().as_slice())?;
        let head = seal_meta(HEAD_KEY, &encode_head(Head::default()));
        meta.insert(HEAD_KEY, head.as_slice())?;
        let count = seal_meta(STREAM_COUNT_KEY, &0u64.to_le_bytes());
        meta.insert(STREAM_COUNT_KEY, count.as_slice())?;
        SEGMENTS.create(&txn)?;
        STREAM_RUNS.create(&txn)?;
        IDEMPOTENCY.create(&txn)?;
        MERKLE.create(&txn)?;
        let mut checkpoints = CHECKPOINTS.write(&txn)?;
        for projection in projections.iter() {
            let checkpoint = seal_checkpoint(projection.name(), (projection.version(), 0));
            checkpoints.insert(projection.name(), checkpoint)?;
            for table in projection.tables() {
                crate::projection::table::definition(table).create(&txn)?;
            }
        }
    }
    txn.commit()?;
    Ok(())
}

/// Refuses a file that does not start like a redb file, before redb sees it.
pub(crate) fn check_redb_magic(path: &Path) -> Result<()> {
    let not_annals = |reason: NotALog| -> Error {
        OpenError::NotAnnalsLog {
            path: path.to_path_buf(),
            reason,
        }
        .into()
    };
    // Opening a FIFO blocks until a writer comes, and a device may never end: only a
    // regular file is opened.
    if let Ok(metadata) = fs::metadata(path)
        && !metadata.is_file()
    {
        return Err(not_annals(if metadata.is_dir() {
            NotALog::Directory
        } else {
            NotALog::NotRegularFile
        }));
    }
    let mut start = [0u8; REDB_MAGIC.len()];
    let mut file = fs::File::open(path)?;
    let mut read = 0;
    while read < start.len() {
        match file.read(&mut start[read..])? {
            0 => break,
            n => read += n,
        }
    }
    if read == 0 {
        return Err(not_annals(NotALog::Empty));
    }
    if read < start.len() || start != REDB_MAGIC {
        return Err(not_annals(NotALog::NotRedb));
    }
    Ok(())
}

/// A redb builder with the store's settings, sharing the file as `sharing` says.
pub(crate) fn redb_builder(sharing: Sharing) -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(crate::log::tables::REDB_CACHE_BYTES);
    builder.set_concurrency_mode(sharing.concurrency_mode());
    builder
}

/// Opens `path` writable in `sharing` mode, trying again for up to `busy_timeout` while
/// another process holds it; a file still held is [`OpenError::Held`], naming who holds it as
/// far as probing can tell. In multi-writer mode, `header` learns of every change of redb's
/// header the open file reads or writes.
pub(crate) fn open_writable(
    path: &Path,
    sharing: Sharing,
    busy_timeout: Duration,
    header: &Arc<HeaderWatch>,
) -> Result<Database> {
    while_held(busy_timeout, || {
        match open_redb(path, || open_file(path, sharing, busy_timeout, header)) {
            Err(Error::Storage(StorageError(redb::Error::DatabaseAlreadyOpen))) => {
                let holder = holder(path, sharing);
                if holder == Holder::MultiWriter && sharing != Sharing::MultiWriter {
                    // The probe's multi-writer open also succeeds when the holder closed the
                    // file just before it: one more try tells the two apart.
                    if let Ok(db) = open_redb(path, || redb_builder(sharing).open(path)) {
                        return Ok(db);
                    }
                }
                Err(OpenError::Held {
                    path: path.to_path_buf(),
                    wanted: sharing,
                    holder,
                }
                .into())
            }
            other => other,
        }
    })
}

/// redb's open of the log at `path` in `sharing` mode. In multi-writer mode the file's locks
/// are waited for at most `busy_timeout` ([`super::WRITE_PATIENCE`] when it is zero), by the
/// open and by every write transaction after it: redb alone would wait on another process's
/// write for as long as it lasts.
fn open_file(
    path: &Path,
    sharing: Sharing,
    busy_timeout: Duration,
    header: &Arc<HeaderWatch>,
) -> Result<redb::Database, redb::DatabaseError> {
    if sharing != Sharing::MultiWriter {
        return redb_builder(sharing).open(path);
    }
    let patience = match busy_timeout {
        Duration::ZERO => super::WRITE_PATIENCE,
        set => set,
    };
    let file = fs::OpenOptions::new().read(true).write(true).open(path)?;
    let file = PatientFile::new(file, path.to_path_buf(), patience, Arc::clone(header))?;
    // The file exists and starts like a redb file (`check_redb_magic`): this opens it, as
    // `open` would, and never initialises it.
    redb_builder(sharing).create_with_backend(file)
}

/// Runs `attempt` until it succeeds, fails otherwise than with [`OpenError::Held`], or
/// `patience` has passed, with a pause that doubles from 1 ms to [`BUSY_PAUSE_MAX`] between
/// tries. A file held by multi-writers for an open that asked for another mode is not waited
/// for: they would never let go.
pub(crate) fn while_held<T>(
    patience: Duration,
    mut attempt: impl FnMut() -> Result<T>,
) -> Result<T> {
    let started = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        match attempt() {
            Err(Error::Open(OpenError::Held { wanted, holder, .. }))
                if !(holder == Holder::MultiWriter && wanted != Sharing::MultiWriter)
                    && started.elapsed() < patience =>
            {
                std::thread::sleep(pause.min(patience.saturating_sub(started.elapsed())));
                pause = (pause * 2).min(BUSY_PAUSE_MAX);
            }
            other => return other,
        }
    }
}

/// How long the probe of who holds a file waits for a multi-writer's write to end.
const PROBE_PATIENCE: Duration = Duration::from_millis(100);

/// The longest pause between two tries of an open that waits for a busy file.
const BUSY_PAUSE_MAX: Duration = Duration::from_millis(100);

/// Opens `path` read-only beside whatever writer has it open in a shared mode: a reader that
/// follows the writer's commits and never writes the file.
pub(crate) fn open_reader(path: &Path) -> Result<redb::ReadOnlyDatabase> {
    let read_only = || redb_builder(Sharing::SingleWriter).open_read_only(path);
    match open_redb(path, read_only) {
        Err(Error::Storage(StorageError(redb::Error::DatabaseAlreadyOpen))) => {
            Err(OpenError::Held {
                path: path.to_path_buf(),
                wanted: Sharing::SingleWriter,
                holder: Holder::Exclusive,
            }
            .into())
        }
        other => other,
    }
}

/// Whether a writer in another process (in any sharing mode) has the redb file at `path`
/// open. The probe is an exclusive read-only open, which never writes the file: redb refuses
/// it beside any writer and lets it join readers. A file that is no redb database, or that
/// cannot be read, has no writer to find.
pub fn held_by_writer(path: &Path) -> bool {
    if check_redb_magic(path).is_err() {
        return false;
    }
    let probe = open_redb(path, || {
        redb_builder(Sharing::Exclusive).open_read_only(path)
    });
    match probe {
        Ok(reader) => {
            drop(Closing::new(reader));
            false
        }
        Err(error) => matches!(
            error,
            Error::Storage(StorageError(redb::Error::DatabaseAlreadyOpen))
        ),
    }
}

/// Who holds `path`, which a writable open in `wanted` mode just found in use. A shared
/// read-only open fails only beside an exclusive holder; beside shared holders, a
/// multi-writer open succeeds only when they are multi-writers too (it is closed at once).
fn holder(path: &Path, wanted: Sharing) -> Holder {
    let reader = open_redb(path, || {
        redb_builder(Sharing::SingleWriter).open_read_only(path)
    });
    match reader {
        Ok(reader) => drop(Closing::new(reader)),
        Err(_) => return Holder::Exclusive,
    }
    match wanted {
        Sharing::Exclusive => Holder::Shared,
        Sharing::MultiWriter => Holder::SingleWriter,
        Sharing::SingleWriter => {
            // A multi-writer open waits on the writer lock while one of them writes: a wait
            // that runs out says the same as an open that succeeds.
            let header = Arc::default();
            let probe = || open_file(path, Sharing::MultiWriter, PROBE_PATIENCE, &header);
            match open_redb(path, probe) {
                Ok(peer) => {
                    drop(Closing::new(peer));
                    Holder::MultiWriter
                }
                Err(Error::Store(StoreError::WriterBusy { .. })) => Holder::MultiWriter,
                Err(_) => Holder::SingleWriter,
            }
        }
    }
}

/// Runs a redb open. redb may panic on a damaged file; that panic becomes a typed error here.
pub(crate) fn open_redb<D>(
    path: &Path,
    open: impl FnOnce() -> Result<D, redb::DatabaseError>,
) -> Result<D> {
    opened(path, caught(open))
}

/// The typed outcome of a redb open that may have panicked.
pub(crate) fn opened<D>(
    path: &Path,
    attempt: std::thread::Result<Result<D, redb::DatabaseError>>,
) -> Result<D> {
    let unreadable = |reason: Unreadable| -> Error {
        OpenError::Unreadable {
            path: path.to_path_buf(),
            reason,
        }
        .into()
    };
    match attempt {
        Ok(Ok(db)) => Ok(db),
        // A full disk (recovery writes) is not damage: the store names it as the cause.
        Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Io(error))))
            if error.kind() == std::io::ErrorKind::StorageFull =>
        {
            Err(Error::Io(error))
        }
        // A multi-writer's open that waited too long for another's write (`patient.rs`).
        Ok(Err(redb::DatabaseError::Storage(redb::StorageError::Io(error))))
            if error
                .get_ref()
                .is_some_and(|cause| cause.is::<crate::error::WaitedTooLong>()) =>
        {
            Err(redb::Error::Io(error).into())
        }
        Ok(Err(redb::DatabaseError::Storage(error))) => Err(unreadable(Unreadable::Refused {
            cause: error.to_string(),
        })),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(unreadable(Unreadable::Panicked)),
    }
}

/// Checks the file's magic and format version, and returns the version: the current one, or
/// an earlier one that [`super::upgrade`] reads.
pub(crate) fn check_identity(db: &Handle, path: &Path) -> Result<u32> {
    let not_annals = |reason: NotALog| -> Error {
        OpenError::NotAnnalsLog {
            path: path.to_path_buf(),
            reason,
        }
        .into()
    };
    let txn = db.begin_read()?;
    let Some(meta) = META.read_if_present(&txn)? else {
        return Err(not_annals(NotALog::NoMetaTable));
    };
    if meta.get(MAGIC_KEY)?.map(|g| g.value() == MAGIC) != Some(true) {
        return Err(not_annals(NotALog::NoMagic));
    }
    let format = match meta.get(FORMAT_KEY)? {
        Some(bytes) => <[u8; 4]>::try_from(bytes.value())
            .map(u32::from_le_bytes)
            .map_err(|_| {
                Error::corrupt_meta(
                    crate::error::MetaItem::FormatVersion,
                    crate::error::MetaFault::WrongLength {
                        found: bytes.value().len(),
                        expected: 4,
                    },
                )
            })?,
        None => return Err(not_annals(NotALog::NoFormatVersion)),
    };
    if !(1..=FORMAT_VERSION).contains(&format) {
        return Err(OpenError::UnsupportedFormat {
            path: path.to_path_buf(),
            found: format,
            supported: FORMAT_VERSION,
        }
        .into());
    }
    Ok(format)
}
