//! The commit journal: how a commit becomes durable with one small synced append.
//!
//! A store that holds its file alone ([`crate::Sharing::Exclusive`]) commits a transaction of
//! appends by writing its records, as one frame, to the journal file beside the log
//! (`<log>.journal`) and syncing that file once; redb commits the same transaction without a
//! sync of its own (`Durability::None`, which readers in this process see at once, and no
//! other process can open the file meanwhile). The commit is acknowledged after both. Every
//! [`JournalOptions::checkpoint_ms`] or [`JournalOptions::checkpoint_bytes`] a checkpoint
//! makes redb's file durable with one commit for all the transactions since, then empties the
//! journal. A crash loses redb's unsynced commits; the next writable open finds their frames
//! in the journal past the file's head and appends their records again, verbatim (each must
//! hash as it did), which the projections, pure functions of the log, apply as they did.
//!
//! The order is what makes it safe: the frame is synced before redb commits, so no reader
//! sees a commit that could be lost; the file is synced before the journal is emptied, so no
//! acknowledged commit is only in memory. The file format is `schema/FORMAT.md` 3.15.

pub(crate) mod frame;

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::StorageBackend;

use crate::error::{JournalError, Result};
use crate::record::Position;
pub use frame::{FRAME_BODY_BYTES_MAX, FRAME_CONTEXT, HEADER, VERSION};
use frame::{Frame, FrameProblem, decode_frame, frame_len};

/// When a journaled store checkpoints: whichever comes first.
///
/// ```
/// use annals::{JournalOptions, Sharing, Store, StoreOptions};
/// let dir = tempfile::tempdir()?;
/// let options = StoreOptions {
///     create: true,
///     sharing: Sharing::Exclusive,
///     journal: Some(JournalOptions { checkpoint_ms: 100, ..JournalOptions::default() }),
///     ..StoreOptions::default()
/// };
/// let store = Store::open_with(dir.path().join("log.redb"), options)?;
/// assert!(store.journaled());
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
            checkpoint_bytes: 4 << 20,
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
    /// Opens the journal at `path`, creating it (and syncing its folder) when `create` is set
    /// and there is none; `None` when there is none and `create` is not set.
    pub(crate) fn open(path: &Path, create: bool) -> io::Result<Option<JournalFile>> {
        match OpenOptions::new().read(true).write(true).open(path) {
            Ok(file) => Ok(Some(JournalFile(file))),
            Err(error) if error.kind() == io::ErrorKind::NotFound && create => {
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(path)?;
                file.write_all_at(&HEADER, 0)?;
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
    pub(crate) fn open_read_only(path: &Path) -> io::Result<Option<JournalFile>> {
        match File::open(path) {
            Ok(file) => Ok(Some(JournalFile(file))),
            Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    }
}

impl StorageBackend for JournalFile {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
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

/// What a scan of a journal found: its whole frames (handed to the visitor), where they end,
/// and how many bytes after them were a torn, unacknowledged frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The end of the last whole frame.
    pub(crate) end: u64,
    /// The bytes after it.
    pub(crate) dropped: u64,
}

/// Reads the header of the journal `file` (at `path`, for messages), writing it whole when the
/// file holds less than a header that is a prefix of it (a creation interrupted before its
/// sync), then each whole frame in order, handing it to `visit`. A frame that fails its check
/// with a whole frame after it is damage, refused; anything else that is not a whole frame is
/// the torn end of an unacknowledged commit, counted in [`Scanned::dropped`].
pub(crate) fn scan(
    file: &dyn StorageBackend,
    path: &Path,
    writable: bool,
    visit: &mut dyn FnMut(Frame) -> Result<()>,
) -> Result<Scanned> {
    let len = file.len()?;
    let header_len = HEADER.len() as u64;
    let mut header = vec![0; len.min(header_len) as usize];
    file.read(0, &mut header)?;
    if header[..] != HEADER[..header.len()] {
        let version = (header.len() == HEADER.len() && header[..14] == HEADER[..14])
            .then(|| u16::from_le_bytes([header[14], header[15]]));
        return Err(match version {
            Some(found) => JournalError::Version {
                path: path.to_path_buf(),
                found,
                supported: VERSION,
            },
            None => JournalError::NotAJournal {
                path: path.to_path_buf(),
            },
        }
        .into());
    }
    if len < header_len {
        if writable {
            file.write(0, &HEADER)?;
            file.sync_data()?;
        }
        return Ok(Scanned {
            end: header_len,
            dropped: 0,
        });
    }
    let mut offset = header_len;
    while offset < len {
        match read_frame(file, offset, len) {
            Ok(frame) => {
                offset += frame.len;
                visit(frame)?;
            }
            Err(FrameProblem::Length { body: 0 }) => {
                // A zero length is no frame: the room the writer set aside ends the frames.
                // Anything but zeros after it is the torn rest of an unacknowledged frame.
                return Ok(Scanned {
                    end: offset,
                    dropped: nonzero_end(file, offset, len)? - offset,
                });
            }
            Err(problem) => {
                let after = match &problem {
                    FrameProblem::Check | FrameProblem::Body(_) => {
                        read_length(file, offset, len).map(|frame_len| offset + frame_len)
                    }
                    _ => None,
                };
                if let Some(after) = after
                    && after < len
                    && read_frame(file, after, len).is_ok()
                {
                    return Err(JournalError::Damaged {
                        path: path.to_path_buf(),
                        offset,
                        problem: problem.to_string(),
                    }
                    .into());
                }
                return Ok(Scanned {
                    end: offset,
                    dropped: nonzero_end(file, offset, len)? - offset,
                });
            }
        }
    }
    Ok(Scanned {
        end: offset,
        dropped: 0,
    })
}

/// Where the bytes of `file` from `offset` to `len` stop being zeros for good: the end of
/// what a torn write left, before the journal's unwritten room.
fn nonzero_end(file: &dyn StorageBackend, offset: u64, len: u64) -> Result<u64> {
    const CHUNK: u64 = 64 << 10;
    let mut chunk_end = len;
    while chunk_end > offset {
        let start = chunk_end.saturating_sub(CHUNK).max(offset);
        let mut bytes = vec![0; (chunk_end - start) as usize];
        file.read(start, &mut bytes)?;
        if let Some(last) = bytes.iter().rposition(|&byte| byte != 0) {
            return Ok(start + last as u64 + 1);
        }
        chunk_end = start;
    }
    Ok(offset)
}

fn read_length(file: &dyn StorageBackend, offset: u64, len: u64) -> Option<u64> {
    let mut field = [0; 4];
    (len - offset >= 4).then_some(())?;
    file.read(offset, &mut field).ok()?;
    frame_len(&field).ok()
}

fn read_frame(file: &dyn StorageBackend, offset: u64, len: u64) -> Result<Frame, FrameProblem> {
    let available = len - offset;
    let mut field = [0; 4];
    if available < 4 {
        return Err(FrameProblem::Short {
            available,
            needed: 4,
        });
    }
    file.read(offset, &mut field)
        .map_err(|error| FrameProblem::Body(error.to_string()))?;
    let frame_len = frame_len(&field)?;
    if available < frame_len {
        return Err(FrameProblem::Short {
            available,
            needed: frame_len,
        });
    }
    let mut bytes = vec![0; frame_len as usize];
    file.read(offset, &mut bytes)
        .map_err(|error| FrameProblem::Body(error.to_string()))?;
    decode_frame(&bytes, offset)
}

/// The most room a journal sets aside past its header, whatever its checkpoint's bound: the
/// frames of a larger checkpoint lengthen the file as they go.
pub(crate) const ROOM_BYTES_MAX: u64 = 64 << 20;

/// An open journal, written by the store's commits.
#[derive(Debug)]
pub(crate) struct Journal {
    file: Box<dyn StorageBackend>,
    path: PathBuf,
    /// The end of the last synced frame: where the next one goes.
    end: u64,
    options: JournalOptions,
    /// When the journal was last emptied.
    since: Instant,
    /// The length the file is kept at, zeros past the frames: the room for the frames of one
    /// checkpoint, set aside when the journal is emptied, so that a commit's sync writes its
    /// frame's bytes and not the file's new length as well (an append to a file that keeps
    /// its length syncs about a quarter sooner on ext4: docs/performance.md).
    room: u64,
    /// Set when a failed write could not be taken back: the end is unknown.
    poisoned: bool,
    /// Whether redb holds commits made without a frame ([`crate::Durability::Deferred`])
    /// since the last checkpoint: a frame after them would not continue the file's durable
    /// head, so the next durable commit goes to the file directly.
    pub(crate) unjournaled: bool,
}

impl Journal {
    /// A journal over `file` whose frames end at `end` (as [`scan`] found them).
    pub(crate) fn new(
        file: Box<dyn StorageBackend>,
        path: PathBuf,
        end: u64,
        options: JournalOptions,
    ) -> Journal {
        Journal {
            file,
            path,
            end,
            options,
            room: HEADER.len() as u64 + options.checkpoint_bytes.min(ROOM_BYTES_MAX),
            since: Instant::now(),
            poisoned: false,
            unjournaled: false,
        }
    }

    /// The journal's file name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of frames the journal holds.
    pub(crate) fn held(&self) -> u64 {
        self.end - HEADER.len() as u64
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

    /// Appends `frame` and syncs it: once this returns `Ok`, the frame survives a crash. On
    /// `Err` the journal is as it was (the frame's bytes cut off again), or poisoned when
    /// even that failed.
    pub(crate) fn append(&mut self, frame: &[u8]) -> Result<()> {
        self.check_usable()?;
        let written = self
            .file
            .write(self.end, frame)
            .and_then(|()| self.file.sync_data());
        match written {
            Ok(()) => {
                self.end += frame.len() as u64;
                Ok(())
            }
            Err(error) => {
                self.cut_back(self.end);
                Err(error.into())
            }
        }
    }

    /// Takes back the last frame appended, `len` bytes, whose transaction failed to commit.
    pub(crate) fn take_back(&mut self, len: u64) {
        let end = self.end - len;
        self.cut_back(end);
    }

    fn cut_back(&mut self, end: u64) {
        let cut = self
            .file
            .set_len(end)
            .and_then(|()| self.file.set_len(self.room.max(end)))
            .and_then(|()| self.file.sync_data());
        match cut {
            Ok(()) => self.end = end,
            Err(_) => self.poisoned = true,
        }
    }

    /// Whether a checkpoint is due.
    pub(crate) fn checkpoint_due(&self) -> bool {
        self.held() >= self.options.checkpoint_bytes
            || self.since.elapsed() >= Duration::from_millis(self.options.checkpoint_ms)
    }

    /// Empties the journal, its room set aside again as zeros; the log file must hold every
    /// frame durably first (a poisoned journal stays poisoned: its failed frame may be in the
    /// file or not).
    pub(crate) fn empty(&mut self) -> Result<()> {
        self.check_usable()?;
        if self.held() > 0 || self.file.len()? != self.room {
            // Cut to the header first: the room's old frames become zeros again.
            self.file.set_len(HEADER.len() as u64)?;
            self.file.set_len(self.room)?;
            self.file.sync_data()?;
            self.end = HEADER.len() as u64;
        }
        self.since = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests;
