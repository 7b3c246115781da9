//! The commit journal: how a commit becomes durable with one small synced append.
//!
//! A store commits a transaction of appends by writing its records,
//! as one frame, to the journal file beside the log (`<log>.journal`), syncing that file once,
//! and moving the journal's synced mark past it; the transaction's changes to the tables are
//! published in memory (the overlay, `crate::storage`), which readers in this process see at
//! once and readers in other processes rebuild from the synced frames (`tail`). The commit is
//! acknowledged after both. Every [`JournalOptions::checkpoint_ms`] or
//! [`JournalOptions::checkpoint_bytes`] a drain writes what the overlay holds into redb's file
//! with one durable commit, then empties the journal. A crash loses the overlay; the next
//! writable open finds the frames in the journal past the file's head and appends their
//! records again, verbatim (each must hash as it did), which the projections, pure functions
//! of the log, apply as they did.
//!
//! The order is what makes it safe: the frame is synced before its changes are published or
//! its mark moved, so no reader sees a commit that could be lost; the file is synced before
//! the journal is emptied, so no acknowledged commit is only in memory. Writer processes in
//! [`crate::Sharing::MultiWriter`] mode share one journal, each writing it in its turn
//! (`Journal::follow_file`, `src/store/shared.rs`). The file format is
//! `schema/FORMAT.md` 3.15.

pub(crate) mod frame;
pub(crate) mod header;
mod identity;
mod scan;
pub(crate) mod tail;

use std::fs::{File, OpenOptions};
use std::io::{self, Seek};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::StorageBackend;

use crate::error::{JournalError, Result};
use crate::record::{Position, Record};
pub use frame::{FRAME_BODY_BYTES_MAX, FRAME_CONTEXT};
use frame::{FRAME_OVERHEAD, encode_frame};
pub use header::{HEADER_BYTES, MAGIC, MARKER_BYTES, VERSION};
use header::{MARK_OFFSET, Marker, Synced};
pub(crate) use identity::FileIdentity;
pub(crate) use scan::{Scanned, scan};

/// When a journaled store checkpoints: whichever comes first.
///
/// ```
/// use annals::{Sharing, Store, StoreOptions, journal::JournalOptions};
/// let dir = tempfile::tempdir()?;
/// let options = StoreOptions {
///     create: true,
///     sharing: Sharing::Exclusive,
///     journal: Some(JournalOptions { checkpoint_ms: 100, ..JournalOptions::default() }),
///     ..StoreOptions::default()
/// };
/// let store = Store::open_with(dir.path().join("log.redb"), options)?;
/// assert!(annals::maintenance::Stats::of(&store)?.journaled);
/// # Ok::<(), annals::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JournalOptions {
    /// The longest a commit waits in the journal alone before a checkpoint takes it into the
    /// log file, in milliseconds (checked at each commit: an idle store checkpoints when it
    /// next commits, or closes).
    pub checkpoint_ms: u64,
    /// The most bytes of frames the journal holds before a checkpoint: with one transaction
    /// more, the bound on the journal's size.
    pub checkpoint_bytes: u64,
}

impl Default for JournalOptions {
    fn default() -> Self {
        JournalOptions {
            checkpoint_ms: 1_000,
            // A drain writes what the journal holds in one redb commit: 1 MiB keeps the file
            // as small as commits of their own kept it (bulk appends, tests/it/footprint.rs)
            // and the overlay's memory with it.
            checkpoint_bytes: 1 << 20,
        }
    }
}

/// What a writable open found in the journal and did with it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JournalRecovery {
    /// Transactions the log file did not hold, appended again from the journal.
    pub transactions: u64,
    /// Their records.
    pub records: u64,
    /// The first of them (the log file's head before the recovery), if any.
    pub from: Option<Position>,
    /// Frames the log file already held (a checkpoint made them durable and stopped before
    /// it emptied the journal), each checked against the log.
    pub already_in_log: u64,
    /// Bytes at the journal's end that were not a whole frame: a commit interrupted before
    /// its sync, never acknowledged, dropped.
    pub dropped_bytes: u64,
}

/// The journal's file name for the log at `path`: `<path>.journal`.
pub fn journal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".journal");
    PathBuf::from(name)
}

/// A journal file on disk, as redb's [`StorageBackend`] (the simulated disk gives the same
/// interface for a journal of its own).
#[derive(Debug)]
pub(crate) struct JournalFile(File);

impl JournalFile {
    /// Opens the journal at `path` beside the log at `log`, creating it (and syncing its
    /// folder) when `create` is set and there is none; `None` when there is none and `create`
    /// is not set. A journal holds whole payloads, so a new one is created with no more
    /// permissions than the log's own (`O_EXCL`: never a file that appeared meanwhile), and
    /// neither is ever opened through a symbolic link (`O_NOFOLLOW`: the name is the store's).
    pub(crate) fn open(log: &Path, path: &Path, create: bool) -> Result<Option<JournalFile>> {
        Self::open_io(log, path, create).map_err(|error| unusable(path, error))
    }

    fn open_io(log: &Path, path: &Path, create: bool) -> io::Result<Option<JournalFile>> {
        match no_follow().read(true).write(true).open(path) {
            Ok(file) => {
                let found = regular(file, path)?;
                // A journal an older build made world-readable is narrowed to the log's bits.
                let allowed = std::fs::metadata(log)?.mode() & 0o666;
                let mode = found.metadata()?.mode() & 0o7777;
                if mode & !allowed != 0 {
                    found.set_permissions(std::fs::Permissions::from_mode(mode & allowed))?;
                }
                Ok(Some(JournalFile(found)))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound && create => {
                let mode = std::fs::metadata(log)?.mode() & 0o666;
                let file = no_follow()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .open(path)?;
                file.write_all_at(&Marker::fresh()?.header(), 0)?;
                file.sync_all()?;
                let folder = match path.parent() {
                    Some(parent) if !parent.as_os_str().is_empty() => parent,
                    _ => Path::new("."),
                };
                File::open(folder)?.sync_all()?;
                Ok(Some(JournalFile(file)))
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Opens the journal at `path` for reading only, `None` when there is none.
    pub(crate) fn open_read_only(path: &Path) -> Result<Option<JournalFile>> {
        match no_follow().read(true).open(path) {
            Ok(file) => Ok(Some(JournalFile(
                regular(file, path).map_err(|error| unusable(path, error))?,
            ))),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(unusable(path, error)),
        }
    }
}

/// The error of a journal that could not be opened or made, naming it.
fn unusable(path: &Path, error: io::Error) -> crate::error::Error {
    // A full disk is the disk's failure, which the open names at the log (`Error::NoSpace`).
    if error.kind() == io::ErrorKind::StorageFull {
        return error.into();
    }
    let reason = match error.raw_os_error() {
        Some(libc::ELOOP) => {
            "it is a symbolic link, and the journal is only ever the store's own file".to_owned()
        }
        _ => error.to_string(),
    };
    JournalError::Unusable {
        path: path.to_path_buf(),
        reason,
    }
    .into()
}

/// `file`, refused unless it is a regular file (a FIFO or a device at the journal's name is
/// not one the store made).
fn regular(file: File, path: &Path) -> io::Result<File> {
    match file.metadata()?.file_type().is_file() {
        true => Ok(file),
        false => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        )),
    }
}

/// Options that refuse to open a symbolic link (`ELOOP`) rather than follow it.
fn no_follow() -> OpenOptions {
    let mut options = OpenOptions::new();
    // O_NONBLOCK: opening a FIFO for reading would wait for a writer; a regular file ignores it.
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    options
}

impl JournalFile {
    /// The file's device and inode.
    pub(crate) fn identity(&self) -> io::Result<FileIdentity> {
        FileIdentity::of_file(&self.0)
    }
}

impl StorageBackend for JournalFile {
    fn len(&self) -> io::Result<u64> {
        // Where its end lies, not its metadata, which would ask for its times
        // (`identity`'s doc): every access is positioned, so the offset moved is never used.
        (&self.0).seek(io::SeekFrom::End(0))
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.0.read_exact_at(out, offset)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.0.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.0.write_all_at(data, offset)
    }
}

/// The most room a journal sets aside past its header, whatever its checkpoint's bound: the
/// frames of a larger checkpoint lengthen the file as they go.
pub(crate) const ROOM_BYTES_MAX: u64 = 64 << 20;

/// An open journal, written by the store's commits.
#[derive(Debug)]
pub(crate) struct Journal {
    file: Box<dyn StorageBackend>,
    path: PathBuf,
    /// The marker every frame of this journal begins with (its header's).
    marker: Marker,
    /// The end of the last synced frame: where the next one goes.
    end: u64,
    options: JournalOptions,
    /// When the journal was last emptied.
    since: Instant,
    /// The length the file is kept at, zeros past the frames: the room for the frames of one
    /// checkpoint, set aside when the journal is emptied, so that a commit's sync writes its
    /// frame's bytes and not the file's new length as well (an append to a file that keeps
    /// its length syncs about a quarter sooner on ext4: docs/performance-history.csv).
    room: u64,
    /// Set when a failed write could not be taken back: the end is unknown.
    poisoned: bool,
    /// How many times it was emptied since its header was written (wrapping), in its synced
    /// mark: a reader in another process knows by it that no frame it read was rewritten.
    epoch: u32,
    /// Whether redb holds commits made without a frame ([`crate::Durability::Deferred`])
    /// since the last checkpoint: a frame after them would not continue the file's durable
    /// head, so the next durable commit goes to the file directly.
    pub(crate) unjournaled: bool,
    /// Where the frames a drain took into the file end, in a journal shared with other
    /// writers, which is emptied only at the next turn: what is past it is what a checkpoint
    /// is due for.
    drained: u64,
}

impl Journal {
    /// A journal over `file` whose frames end where [`scan`] found them end. A journal
    /// without a version 3 header (one of version 1 or 2, after its recovery, or a creation
    /// cut short in a read-only scan) is rewritten as an empty one of this version first: its
    /// frames must be in the log file durably already.
    pub(crate) fn new(
        file: Box<dyn StorageBackend>,
        path: PathBuf,
        scanned: Scanned,
        options: JournalOptions,
    ) -> Result<Journal> {
        let (marker, end, epoch) = match scanned.marker {
            Some(marker) => {
                let mut mark = [0; header::MARK_BYTES];
                file.read(MARK_OFFSET, &mut mark)?;
                // An unreadable mark (damaged, or torn by a crash) starts a new count.
                let epoch = marker.read_mark(&mark).map_or(0, |synced| synced.epoch);
                (marker, scanned.end, epoch)
            }
            None => {
                let marker = Marker::fresh()?;
                file.set_len(0)?;
                file.write(0, &marker.header())?;
                file.sync_data()?;
                (marker, HEADER_BYTES, 0)
            }
        };
        assert!(
            end >= HEADER_BYTES,
            "a journal's frames end after its header, not at byte {end}"
        );
        Ok(Journal {
            file,
            path,
            marker,
            end,
            options,
            room: HEADER_BYTES + options.checkpoint_bytes.min(ROOM_BYTES_MAX),
            since: Instant::now(),
            poisoned: false,
            epoch,
            unjournaled: false,
            drained: HEADER_BYTES,
        })
    }

    /// The frame of one transaction's `records` (contiguous, non-empty) in this journal:
    /// `None` when it is too large for a frame.
    pub(crate) fn frame_of(&self, records: &[Record]) -> Option<Vec<u8>> {
        encode_frame(&self.marker.0, records)
    }

    /// The journal's file name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of frames the journal holds.
    pub(crate) fn held(&self) -> u64 {
        debug_assert!(self.end >= HEADER_BYTES, "the frames end after the header");
        self.end - HEADER_BYTES
    }

    /// Refuses with [`JournalError::Poisoned`] once a failed write could not be taken back.
    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.poisoned {
            return Err(JournalError::Poisoned {
                path: self.path.clone(),
            }
            .into());
        }
        Ok(())
    }

    /// Appends `frame` and syncs it, then moves the synced mark past it (unsynced: readers in
    /// other processes read it, recovery does not): once this returns `Ok`, the frame
    /// survives a crash. On `Err` the journal is as it was (the frame's bytes cut off again),
    /// or poisoned when even that failed.
    pub(crate) fn append(&mut self, frame: &[u8]) -> Result<()> {
        self.check_usable()?;
        // A frame is one of this journal's: it begins with its marker, and holds a record.
        assert!(
            frame.len() as u64 > FRAME_OVERHEAD && frame.starts_with(&self.marker.0),
            "a frame appended to {} begins with its marker",
            self.path.display()
        );
        let end = self.end + frame.len() as u64;
        let written = self
            .file
            .write(self.end, frame)
            .and_then(|()| self.file.sync_data())
            .and_then(|()| self.write_mark(end));
        match written {
            Ok(()) => {
                self.end += frame.len() as u64;
                // The frames end where the synced mark just written says.
                debug_assert_eq!(self.end, end, "the journal's end is its synced mark");
                Ok(())
            }
            Err(error) => {
                self.cut_back(self.end);
                Err(error.into())
            }
        }
    }

    /// Takes back the last frame appended, `len` bytes (a commit that failed after it; none
    /// does since a commit publishes in memory once its frame is synced).
    #[cfg(test)]
    pub(crate) fn take_back(&mut self, len: u64) {
        let end = self.end - len;
        self.cut_back(end);
    }

    fn cut_back(&mut self, end: u64) {
        // Only frames this process wrote are taken back, never the header.
        assert!(
            (HEADER_BYTES..=self.end).contains(&end),
            "a journal is cut back to byte {end}, within its frames (header {HEADER_BYTES}, \
             end {})",
            self.end
        );
        let cut = self
            .write_mark(end)
            .and_then(|()| self.file.set_len(end))
            .and_then(|()| self.file.set_len(self.room.max(end)))
            .and_then(|()| self.file.sync_data());
        match cut {
            Ok(()) => self.end = end,
            Err(_) => self.poisoned = true,
        }
    }

    /// Writes the synced mark: the frames end at `end`, in this epoch.
    fn write_mark(&self, end: u64) -> io::Result<()> {
        debug_assert!(end >= HEADER_BYTES, "the synced mark lies past the header");
        let synced = Synced {
            end,
            epoch: self.epoch,
        };
        self.file.write(MARK_OFFSET, &self.marker.mark(synced))
    }

    /// In a journal several writer processes share, at the start of this process's turn
    /// (holding redb's write lock, which every writer holds while it writes the journal):
    /// where the frames end and how many times it was emptied, as the synced mark says, and
    /// past the mark, the whole frames a writer wrote and could not mark (killed after its
    /// write, or the mark's write lost with the machine), synced and marked now, so that no
    /// frame that may have been acknowledged is written over. A mark that fails its check
    /// (torn by a crash) is rebuilt from the frames, in a new epoch.
    pub(crate) fn follow_file(&mut self) -> Result<()> {
        self.check_usable()?;
        let mut mark = [0; header::MARK_BYTES];
        self.file.read(MARK_OFFSET, &mut mark)?;
        let (marked, epoch, rewrite) = match self.marker.read_mark(&mark) {
            Some(synced) => (synced.end, synced.epoch, false),
            None => (HEADER_BYTES, self.epoch.wrapping_add(1), true),
        };
        let mut end = marked;
        let layout = header::Layout::V3(self.marker);
        let len = self.file.len()?;
        while end < len {
            match scan::read_frame(&*self.file, &layout, end, len) {
                Ok(frame) => end += frame.len,
                Err(_) => break,
            }
        }
        if epoch != self.epoch || end < self.drained {
            self.drained = HEADER_BYTES;
        }
        self.epoch = epoch;
        if rewrite || end != marked {
            self.file.sync_data()?;
            self.write_mark(end)?;
        }
        // The turn begins at or past the mark: whole frames are never dropped.
        assert!(
            end >= marked,
            "the frames of {} end at byte {end}, at or past the synced mark {marked}",
            self.path.display()
        );
        self.end = end;
        debug_assert!(
            self.drained <= self.end,
            "the drained frames are the journal's"
        );
        Ok(())
    }

    /// Where the frames end: where the next one goes.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// How many times it was emptied since its header was written (wrapping).
    pub(crate) fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Whether a checkpoint is due.
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.end.saturating_sub(self.drained.max(HEADER_BYTES)) >= self.options.checkpoint_bytes
            || self.since.elapsed() >= Duration::from_millis(self.options.checkpoint_ms)
    }

    /// Empties the journal, its room set aside again as zeros; the log file must hold every
    /// frame durably first (a poisoned journal stays poisoned: its failed frame may be in the
    /// file or not).
    pub(crate) fn empty(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.held() > 0 || self.file.len()? != self.room {
            // The mark first, so that no reader takes the zeros for frames; then cut to the
            // header: the room's old frames become zeros again.
            self.epoch = self.epoch.wrapping_add(1);
            self.write_mark(HEADER_BYTES)?;
            self.file.set_len(HEADER_BYTES)?;
            self.file.set_len(self.room)?;
            self.file.sync_data()?;
            self.end = HEADER_BYTES;
        }
        self.drained = HEADER_BYTES;
        self.since = Instant::now();
        assert_eq!(self.held(), 0, "an emptied journal holds no frame");
        Ok(())
    }

    /// Sets the room aside now, when the file is shorter, as every emptying does: a frame
    /// written past the file's end changes its length, which each frame's sync would then
    /// write too (a second synchronous write a commit, on ext4). Zeros past the frames are
    /// room to every reader. For a journal other writers share, which is never emptied at an
    /// open: called holding redb's write lock.
    pub(crate) fn set_room_aside(&mut self) -> Result<()> {
        if self.file.len()? < self.room {
            self.file.set_len(self.room)?;
            self.file.sync_data()?;
        }
        Ok(())
    }

    /// After a drain took every frame of a shared journal into the file: a checkpoint is due
    /// again for what follows them, and the next turn empties it.
    pub(crate) fn drained(&mut self) {
        debug_assert!(
            self.drained <= self.end,
            "a drain takes the frames written so far"
        );
        self.drained = self.end;
        self.since = Instant::now();
    }
}

#[cfg(test)]
mod tests;
