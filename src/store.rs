//! [`Store`]: opening an annals file, the write transaction that appends, and reads.
//!
//! The store holds no domain rule. It is the only place (with the async writer, later) that
//! begins redb write transactions.

use std::fs;
use std::io::Read;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use redb::{Database, ReadOnlyDatabase, ReadTransaction, ReadableDatabase};

use crate::audit::verify::{VerifyReport, verify};
use crate::error::{Error, OpenError, Result};
use crate::log::Head;
use crate::log::append::{AppendOutcome, ExpectedVersion, LogWriter};
use crate::log::encode_head;
use crate::log::read::{Direction, Snapshot};
use crate::log::tables::{
    FORMAT_KEY, FORMAT_VERSION, HEAD_KEY, IDEMPOTENCY, MAGIC, MAGIC_KEY, META, SEGMENTS,
    STREAM_RUNS, STREAMS,
};
use crate::record::limits::Limits;
use crate::record::{NewEvent, Position, Record, StreamVersion};

/// The first bytes of every redb file.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// How a store is opened.
#[derive(Clone, Debug, Default)]
pub struct StoreOptions {
    /// The limits appends are checked against.
    pub limits: Limits,
    /// Create the file when it does not exist (the default for [`Store::open`]).
    pub create: bool,
}

/// The redb handle: read-write, or read-only for audits that must not touch the file.
enum Handle {
    Writable(Database),
    ReadOnly(ReadOnlyDatabase),
}

impl Handle {
    fn begin_read(&self) -> Result<ReadTransaction> {
        Ok(match self {
            Handle::Writable(db) => db.begin_read()?,
            Handle::ReadOnly(db) => db.begin_read()?,
        })
    }
}

/// An annals log in one redb file.
///
/// ```
/// use annals::{ExpectedVersion, NewEvent, Store};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("log.redb"))?;
/// let event = NewEvent::new("lease.acquired", 1_700_000_000_000, b"deploy".to_vec());
/// let outcome = store.append("lease/deploy-lock", ExpectedVersion::NoStream, &[event])?;
/// assert_eq!(outcome.first_position().0, 0);
/// assert!(store.verify()?.is_sound());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Store {
    db: Handle,
    limits: Limits,
    path: PathBuf,
}

impl Store {
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

    /// Opens the annals log at `path`, which must exist.
    pub fn open_existing(path: impl AsRef<Path>) -> Result<Store> {
        Store::open_with(path, StoreOptions::default())
    }

    /// Opens with explicit options.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Store> {
        options.limits.check()?;
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            if !options.create {
                return Err(OpenError::Missing { path }.into());
            }
            create(&path)?;
        }
        check_redb_magic(&path)?;
        let db = Handle::Writable(open_redb(&path, || Database::open(&path))?);
        check_identity(&db, &path)?;
        Ok(Store {
            db,
            limits: options.limits,
            path,
        })
    }

    /// Opens an existing log without writing to its file, for audits: appends are refused
    /// with [`Error::ReadOnly`]. A file left by a crash needs redb's recovery first, which
    /// this does (opening it writable once); recovery rebuilds redb's allocator state and never
    /// changes a committed record.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref().to_path_buf();
        if !path.exists() {
            return Err(OpenError::Missing { path }.into());
        }
        check_redb_magic(&path)?;
        let read_only = || ReadOnlyDatabase::open(&path);
        let db = match catch_unwind(AssertUnwindSafe(read_only)) {
            Ok(Err(redb::DatabaseError::RepairAborted)) => {
                drop(open_redb(&path, || Database::open(&path))?);
                open_redb(&path, read_only)?
            }
            attempt => opened(&path, attempt)?,
        };
        let db = Handle::ReadOnly(db);
        check_identity(&db, &path)?;
        Ok(Store {
            db,
            limits: Limits::default(),
            path,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The limits appends are checked against.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Appends `events` to `stream` in one durable transaction, if the stream is in the
    /// `expected` state. The events get contiguous positions and versions; on any error
    /// nothing is written.
    pub fn append(
        &self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        let Handle::Writable(db) = &self.db else {
            return Err(Error::ReadOnly);
        };
        let txn = db.begin_write()?;
        let outcome = {
            let mut log = LogWriter::open(&txn)?;
            log.append(stream, expected, events, &self.limits)?
        };
        match outcome {
            AppendOutcome::Appended(_) => txn.commit()?,
            AppendOutcome::Duplicate { .. } => txn.abort()?,
        }
        Ok(outcome)
    }

    /// A consistent read-only view of the log as of now; a writer may go on meanwhile.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let txn = self.db.begin_read()?;
        Snapshot::new(&txn)
    }

    /// The head: the next position and the hash of the last record.
    pub fn head(&self) -> Result<Head> {
        self.snapshot()?.head()
    }

    /// The record at `position`, `None` at or past the head.
    pub fn get(&self, position: Position) -> Result<Option<Record>> {
        self.snapshot()?.get(position)
    }

    /// Up to `limit` records from `from` in `direction`.
    pub fn read_all(
        &self,
        from: Position,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        self.snapshot()?
            .records(from, direction)?
            .take(limit)
            .collect()
    }

    /// Up to `limit` records of `stream` from version `from` in `direction`.
    pub fn read_stream(
        &self,
        stream: &str,
        from: StreamVersion,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        self.snapshot()?
            .stream(stream, from, direction)?
            .take(limit)
            .collect()
    }

    /// Walks the whole log and reports the first problem; see [`crate::audit::verify`].
    pub fn verify(&self) -> Result<VerifyReport> {
        verify(&self.snapshot()?)
    }

    /// Counts and sizes.
    pub fn stats(&self) -> Result<Stats> {
        let snapshot = self.snapshot()?;
        let head = snapshot.head()?;
        Ok(Stats {
            records: head.next.0,
            streams: snapshot.stream_count()?,
            head,
            file_bytes: fs::metadata(&self.path)?.len(),
        })
    }
}

/// Counts and sizes of a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Records in the log.
    pub records: u64,
    /// Streams with at least one record.
    pub streams: u64,
    /// The head.
    pub head: Head,
    /// The file's size in bytes.
    pub file_bytes: u64,
}

/// Creates a new log atomically: initialised under a temporary name, then renamed into place,
/// so that `path` never names a half-made log.
fn create(path: &Path) -> Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".creating");
    let temporary = PathBuf::from(temporary);
    if temporary.exists() {
        fs::remove_file(&temporary)?;
    }
    {
        let db = Database::create(&temporary)?;
        let txn = db.begin_write()?;
        {
            let mut meta = txn.open_table(META)?;
            meta.insert(MAGIC_KEY, MAGIC)?;
            meta.insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
            meta.insert(HEAD_KEY, encode_head(Head::default()).as_slice())?;
            txn.open_table(SEGMENTS)?;
            txn.open_table(STREAMS)?;
            txn.open_table(STREAM_RUNS)?;
            txn.open_table(IDEMPOTENCY)?;
        }
        txn.commit()?;
    }
    fs::rename(&temporary, path)?;
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    fs::File::open(parent)?.sync_all()?;
    Ok(())
}

/// Refuses a file that does not start like a redb file, before redb sees it.
fn check_redb_magic(path: &Path) -> Result<()> {
    let not_annals = |reason: &str| -> Error {
        OpenError::NotAnnalsLog {
            path: path.to_path_buf(),
            reason: reason.to_owned(),
        }
        .into()
    };
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
        return Err(not_annals("the file is empty"));
    }
    if read < start.len() || start != REDB_MAGIC {
        return Err(not_annals("the file is not a redb database"));
    }
    Ok(())
}

/// Runs a redb open. redb may panic on a damaged file; that panic becomes a typed error here.
fn open_redb<D>(path: &Path, open: impl FnOnce() -> Result<D, redb::DatabaseError>) -> Result<D> {
    opened(path, catch_unwind(AssertUnwindSafe(open)))
}

/// The typed outcome of a redb open that may have panicked.
fn opened<D>(
    path: &Path,
    attempt: std::thread::Result<Result<D, redb::DatabaseError>>,
) -> Result<D> {
    let unreadable = |reason: String| -> Error {
        OpenError::Unreadable {
            path: path.to_path_buf(),
            reason,
        }
        .into()
    };
    match attempt {
        Ok(Ok(db)) => Ok(db),
        Ok(Err(redb::DatabaseError::Storage(error))) => Err(unreadable(error.to_string())),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(unreadable(
            "redb could not read the file's structure".into(),
        )),
    }
}

/// Checks the file's magic and format version.
fn check_identity(db: &Handle, path: &Path) -> Result<()> {
    let not_annals = |reason: &str| -> Error {
        OpenError::NotAnnalsLog {
            path: path.to_path_buf(),
            reason: reason.to_owned(),
        }
        .into()
    };
    let txn = db.begin_read()?;
    let meta = match txn.open_table(META) {
        Ok(meta) => meta,
        Err(redb::TableError::TableDoesNotExist(_)) => {
            return Err(not_annals("a redb database without the annals.meta table"));
        }
        Err(error) => return Err(error.into()),
    };
    if meta.get(MAGIC_KEY)?.map(|g| g.value() == MAGIC) != Some(true) {
        return Err(not_annals("annals.meta lacks the annals magic"));
    }
    let format = match meta.get(FORMAT_KEY)? {
        Some(bytes) => <[u8; 4]>::try_from(bytes.value())
            .map(u32::from_le_bytes)
            .map_err(|_| Error::CorruptMeta("the format version is not 4 bytes".into()))?,
        None => return Err(not_annals("annals.meta lacks a format version")),
    };
    if format != FORMAT_VERSION {
        return Err(OpenError::UnsupportedFormat {
            path: path.to_path_buf(),
            found: format,
            supported: FORMAT_VERSION,
        }
        .into());
    }
    Ok(())
}
