//! Reading a journal back (`schema/FORMAT.md` 3.15, recovery): its header, then its whole
//! frames in order, then the one question that decides what a stop means. Frames are synced
//! one after another, so only the last write can be torn: when the frames stop and a whole
//! frame still follows anywhere after the stop, the stop is damage to a synced commit and
//! the journal is refused; when none follows, it is the torn end of an unacknowledged commit
//! (or the journal's empty room) and its bytes are dropped.
//!
//! The search for a whole frame after a stop never trusts the damaged bytes: it looks at
//! every offset after the stop where a frame could begin (where the journal's marker is, in
//! version 2; wherever a length field is in range, in version 1), so a damaged length field
//! cannot hide the frames behind it.

use std::path::Path;

use redb::StorageBackend;

use super::frame::{FRAME_BODY_BYTES_MAX, Frame, FrameProblem, decode_frame, frame_len};
use super::header::{HEADER_BYTES, Header, Layout, Marker, read_header};
use crate::error::{JournalError, Result};

/// What a scan of a journal found: its whole frames (handed to the visitor), where they end,
/// and how many bytes after them were a torn, unacknowledged frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// The end of the last whole frame.
    pub(crate) end: u64,
    /// The bytes after it.
    pub(crate) dropped: u64,
    /// The journal's marker; `None` when it has no header of this build's version (a journal
    /// of version 1 or 2, or one whose creation was cut short and that was not rewritten),
    /// which a writer that keeps the journal rewrites first.
    pub(crate) marker: Option<Marker>,
}

/// Reads the header of the journal `file` (at `path`, for messages), then each whole frame
/// in order, handing it to `visit`. A header cut short with nothing after it is a creation
/// interrupted before its sync: written whole again when `writable`. A stop with a whole
/// frame anywhere after it is refused ([`JournalError::Damaged`]); any other stop is the
/// torn end of an unacknowledged commit, counted in [`Scanned::dropped`].
pub(crate) fn scan(
    file: &dyn StorageBackend,
    path: &Path,
    writable: bool,
    visit: &mut dyn FnMut(Frame) -> Result<()>,
) -> Result<Scanned> {
    let len = file.len()?;
    let mut first = vec![0; len.min(HEADER_BYTES) as usize];
    file.read(0, &mut first)?;
    let layout = match read_header(&first, path)? {
        Header::Whole(layout) => layout,
        Header::CutShort => return cut_short(file, path, writable, len),
    };
    let mut offset = layout.frames_start().min(len);
    while offset < len {
        match read_frame(file, &layout, offset, len) {
            Ok(frame) => {
                // Frames tile the journal: each begins where the one before it ends.
                debug_assert_eq!(frame.offset, offset, "a frame read where it begins");
                offset += frame.len;
                visit(frame)?;
            }
            Err(problem) => {
                let tail = read_tail(file, &layout, offset, len)?;
                if let Some(next) = tail.whole_frame {
                    return Err(JournalError::Damaged {
                        path: path.to_path_buf(),
                        offset,
                        next,
                        problem: problem.to_string(),
                    }
                    .into());
                }
                assert!(
                    tail.written_end >= offset,
                    "the written bytes end at or past the stop at byte {offset}"
                );
                return Ok(scanned(offset, tail.written_end - offset, &layout));
            }
        }
    }
    Ok(scanned(offset, 0, &layout))
}

fn scanned(end: u64, dropped: u64, layout: &Layout) -> Scanned {
    let marker = match layout {
        Layout::V1 | Layout::V2(_) => None,
        Layout::V3(marker) => Some(*marker),
    };
    Scanned {
        end,
        dropped,
        marker,
    }
}

/// A journal with no whole header: a creation cut short before its sync, rewritten (when
/// `writable`) with a new marker, when nothing but zeros follows where the header ends;
/// otherwise damage to the header of a journal that holds frames, refused.
fn cut_short(file: &dyn StorageBackend, path: &Path, writable: bool, len: u64) -> Result<Scanned> {
    let after = written_end(file, HEADER_BYTES.min(len), len)?;
    if after > HEADER_BYTES {
        return Err(JournalError::Damaged {
            path: path.to_path_buf(),
            offset: 0,
            next: HEADER_BYTES,
            problem: "its header is not whole or fails its check".to_owned(),
        }
        .into());
    }
    let mut marker = None;
    if writable {
        let fresh = Marker::fresh()?;
        file.write(0, &fresh.header())?;
        file.sync_data()?;
        marker = Some(fresh);
    }
    Ok(Scanned {
        end: HEADER_BYTES,
        dropped: 0,
        marker,
    })
}

/// The frame at `offset`, read whole and checked.
pub(crate) fn read_frame(
    file: &dyn StorageBackend,
    layout: &Layout,
    offset: u64,
    len: u64,
) -> Result<Frame, FrameProblem> {
    let available = len - offset;
    let marker = layout.marker();
    let head_len = marker.len() as u64 + 4;
    if available < head_len {
        let mut head = vec![0; available as usize];
        file.read(offset, &mut head)
            .map_err(|error| FrameProblem::Body(error.to_string()))?;
        return Err(
            match head.starts_with(&marker[..marker.len().min(head.len())]) {
                true => FrameProblem::Short {
                    available,
                    needed: head_len,
                },
                false => FrameProblem::Marker,
            },
        );
    }
    let mut head = vec![0; head_len as usize];
    file.read(offset, &mut head)
        .map_err(|error| FrameProblem::Body(error.to_string()))?;
    if !head.starts_with(marker) {
        return Err(FrameProblem::Marker);
    }
    let frame_len = marker.len() as u64 + frame_len(&head[marker.len()..])?;
    if available < frame_len {
        return Err(FrameProblem::Short {
            available,
            needed: frame_len,
        });
    }
    let mut bytes = vec![0; frame_len as usize];
    file.read(offset, &mut bytes)
        .map_err(|error| FrameProblem::Body(error.to_string()))?;
    decode_frame(&bytes, offset, marker)
}

/// What follows a stop in the frames.
struct Tail {
    /// The first offset after the stop where a whole frame begins, if any.
    whole_frame: Option<u64>,
    /// Where the bytes from the stop on stop being zeros for good: the end of what a torn
    /// write left, before the journal's unwritten room (the stop itself when all are zeros).
    written_end: u64,
}

/// The bytes read at a time while searching past a stop.
const CHUNK_BYTES: u64 = 1 << 20;

/// The most bytes a candidate needs in view to be judged cheaply: a marker, a length field,
/// a first position and a count.
const CANDIDATE_HEAD_BYTES: u64 = 16 + 4 + 8 + 4;

/// Reads everything from the stop at `stop` to `len` once: where the written bytes end, and
/// whether a whole frame begins at any offset after the stop.
fn read_tail(file: &dyn StorageBackend, layout: &Layout, stop: u64, len: u64) -> Result<Tail> {
    let mut written_end = stop;
    let mut at = stop;
    while at < len {
        let end = (at + CHUNK_BYTES).min(len);
        let view_end = (end + CANDIDATE_HEAD_BYTES).min(len);
        let mut view = vec![0; (view_end - at) as usize];
        file.read(at, &mut view)?;
        let chunk = &view[..(end - at) as usize];
        if let Some(last) = chunk.iter().rposition(|&byte| byte != 0) {
            written_end = at + last as u64 + 1;
        }
        for index in candidates(layout, &view, (end - at) as usize) {
            let offset = at + index as u64;
            if offset > stop && read_frame(file, layout, offset, len).is_ok() {
                return Ok(Tail {
                    whole_frame: Some(offset),
                    written_end,
                });
            }
        }
        at = end;
    }
    Ok(Tail {
        whole_frame: None,
        written_end,
    })
}

/// The offsets within the first `chunk` bytes of `view` where a frame could begin, judged
/// from the bytes in view: where the marker is (version 2), or where a plausible length
/// field, first position and count are (version 1, whose frames carry no marker).
fn candidates<'a>(
    layout: &'a Layout,
    view: &'a [u8],
    chunk: usize,
) -> impl Iterator<Item = usize> + 'a {
    (0..chunk).filter(move |&index| match layout {
        Layout::V2(marker) | Layout::V3(marker) => view[index..].starts_with(&marker.0),
        Layout::V1 => plausible_v1(&view[index..]),
    })
}

/// Whether a version 1 frame could begin at the start of `bytes`: a length field in range
/// and a record count its body could hold.
fn plausible_v1(bytes: &[u8]) -> bool {
    let Some(head) = bytes.get(..16) else {
        return false;
    };
    let body = u64::from(u32::from_le_bytes(
        head[..4].try_into().expect("four bytes"),
    ));
    let count = u64::from(u32::from_le_bytes(
        head[12..16].try_into().expect("four bytes"),
    ));
    (12..=FRAME_BODY_BYTES_MAX).contains(&body) && count >= 1 && 12 + count * 36 <= body
}

/// Where the bytes of `file` from `offset` to `len` stop being zeros for good.
fn written_end(file: &dyn StorageBackend, offset: u64, len: u64) -> Result<u64> {
    let mut written_end = offset;
    let mut at = offset;
    while at < len {
        let end = (at + CHUNK_BYTES).min(len);
        let mut chunk = vec![0; (end - at) as usize];
        file.read(at, &mut chunk)?;
        if let Some(last) = chunk.iter().rposition(|&byte| byte != 0) {
            written_end = at + last as u64 + 1;
        }
        at = end;
    }
    Ok(written_end)
}
