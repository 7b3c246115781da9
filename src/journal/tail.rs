//! A live journal read from another process (`schema/FORMAT.md` 3.15, "Readers"): the frames
//! its writer synced, as far as the synced mark says, and never one still being written.
//!
//! The writer appends a frame, syncs it, and only then moves the mark past it; it empties the
//! journal after a drain has put its frames in the log file, counting the emptying in the
//! mark's epoch. A reader reads the mark, the frames before it, and the mark again: the same
//! epoch both times means none of the frames it read was rewritten meanwhile.

use std::path::{Path, PathBuf};

use redb::StorageBackend;

use super::frame::{Frame, FrameProblem};
use super::header::{HEADER_BYTES, Header, Layout, MARK_BYTES, MARK_OFFSET, Synced, read_header};
use super::scan::read_frame;
use super::{FileIdentity, JournalFile};
use crate::error::{JournalError, Result};

/// A journal open for reading beside its writer.
pub(crate) struct Tail {
    file: JournalFile,
    path: PathBuf,
    /// The file's device and inode: a writer that closes removes its journal, and the next
    /// one creates another under the same name.
    identity: FileIdentity,
    layout: Layout,
    /// The header as it was read: a writer that recovers a journal of an older version
    /// rewrites it, with a new marker, in the same file.
    header: Vec<u8>,
}

/// What a read of the frames found.
pub(crate) struct Read {
    /// The whole frames from where the read began, in order.
    pub(crate) frames: Vec<Frame>,
    /// Where they stop short of the mark, and why: a frame the mark says is synced that is
    /// not whole (damage, or a journal emptied during the read, which the epoch tells).
    pub(crate) stopped: Option<(u64, FrameProblem)>,
}

impl Tail {
    /// The journal at `path`, `None` when there is none, or when its header is not yet whole
    /// (a journal being created holds no frame).
    pub(crate) fn open(path: &Path) -> Result<Option<Tail>> {
        let Some(file) = JournalFile::open_read_only(path)? else {
            return Ok(None);
        };
        let len = file.len()?;
        let mut first = vec![0; len.min(HEADER_BYTES) as usize];
        file.read(0, &mut first)?;
        let layout = match read_header(&first, path)? {
            Header::Whole(layout) => layout,
            Header::CutShort => return Ok(None),
        };
        let identity = file.identity()?;
        first.truncate(layout.frames_start() as usize);
        Ok(Some(Tail {
            file,
            path: path.to_path_buf(),
            identity,
            layout,
            header: first,
        }))
    }

    /// Whether its name still names the file it reads.
    pub(crate) fn is_current(&self) -> bool {
        FileIdentity::of_path(&self.path).is_ok_and(|found| found == self.identity)
    }

    /// Where its first frame begins.
    pub(crate) fn frames_start(&self) -> u64 {
        self.layout.frames_start()
    }

    /// The synced mark, `None` when it fails its check (read while it was written, or a
    /// header rewritten with another marker: open the journal again). A journal of an older
    /// version has no mark: its writer, of an older build, held the log alone and is gone, so
    /// every whole frame counts, as recovery takes them, until a writer rewrites its header.
    pub(crate) fn synced(&self) -> Result<Option<Synced>> {
        match self.layout {
            Layout::V3(marker) => {
                let mut mark = [0; MARK_BYTES];
                self.file.read(MARK_OFFSET, &mut mark)?;
                Ok(marker.read_mark(&mark))
            }
            Layout::V1 | Layout::V2(_) => {
                let len = self.file.len()?;
                let mut header = vec![0; self.header.len().min(len as usize)];
                self.file.read(0, &mut header)?;
                Ok((header == self.header).then_some(Synced { end: len, epoch: 0 }))
            }
        }
    }

    /// The whole frames from `from` up to `to` (a synced mark's end), in order.
    pub(crate) fn frames(&self, from: u64, to: u64) -> Result<Read> {
        let marked = matches!(self.layout, Layout::V3(_));
        let end = self.file.len()?.min(to);
        let mut frames = Vec::new();
        let mut offset = from;
        while offset < end {
            match read_frame(&self.file, &self.layout, offset, end) {
                Ok(frame) => {
                    debug_assert_eq!(frame.offset, offset, "a frame read where it begins");
                    offset += frame.len;
                    frames.push(frame);
                }
                // Without a mark, the first frame that is not whole is the torn end.
                Err(problem) => {
                    let stopped = marked.then_some((offset, problem));
                    return Ok(Read { frames, stopped });
                }
            }
        }
        let stopped = (marked && offset < to).then(|| {
            // The file can be shorter than where the read began: the writer emptied the
            // journal under the read (the caller's second look at the mark tells).
            let short = FrameProblem::Short {
                available: end.saturating_sub(offset),
                needed: to - offset,
            };
            (offset, short)
        });
        Ok(Read { frames, stopped })
    }

    /// The error of a synced frame that is not whole although the journal was not emptied
    /// while it was read.
    pub(crate) fn damaged(&self, offset: u64, problem: &FrameProblem, mark: u64) -> JournalError {
        JournalError::Damaged {
            path: self.path.clone(),
            offset,
            next: mark,
            problem: format!("{problem}, before the synced mark at byte {mark}"),
        }
    }
}
