//! The journal's header (`schema/FORMAT.md` 3.15): what the file is, which version of the
//! layout follows, and, from version 2, the journal's **marker**: 16 random bytes that begin
//! every frame, so that recovery can find the next whole frame after damage, however the
//! damage struck (a length field, the marker itself, a body), and tell damage to a synced
//! commit from the torn end of an unacknowledged one. From version 3, the header ends with
//! the **synced mark**: where the synced frames end, written after each sync, so that a
//! reader in another process reads only commits that were acknowledged.
//!
//! The marker is drawn from the system's randomness when the header is written and never
//! leaves the journal (which only the log's owner can read), so a payload cannot carry a
//! frame that recovery would take for one of the journal's own. The header's last 16 bytes
//! check the first 32: a damaged marker would otherwise turn every frame into a torn end.

use std::io;
use std::path::Path;

use rand_core::{OsRng, RngCore};

use crate::error::{JournalError, Result};

/// The journal's magic: its first 14 bytes, in every version.
pub const MAGIC: [u8; 14] = *b"annals journal";

/// The layout version this build writes (u16 LE after the magic). Version 1 journals,
/// without a marker, and version 2 ones, without a synced mark, are still read, so that a
/// crash under an older build is recovered.
pub const VERSION: u16 = 3;

/// The bytes of a version 3 header: magic, version, marker, check, synced mark.
pub const HEADER_BYTES: u64 = 64;

/// The bytes of a version 2 header: magic, version, marker, check.
pub(crate) const V2_HEADER_BYTES: u64 = 48;

/// Where the synced mark is, in a version 3 header: its last 16 bytes.
pub(crate) const MARK_OFFSET: u64 = 48;

/// The bytes of the synced mark.
pub(crate) const MARK_BYTES: usize = 16;

/// What a version 3 journal's synced mark says: its frames from the header to `end` are
/// synced, and it has been emptied `epoch` times (wrapping) since its header was written, so
/// that a reader that read frames between two reads of the same mark knows none of them was
/// rewritten meanwhile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Synced {
    /// Where the synced frames end.
    pub end: u64,
    /// How many times the journal was emptied.
    pub epoch: u32,
}

/// The bytes of a version 1 header: magic and version.
pub(crate) const V1_HEADER_BYTES: u64 = 16;

/// The bytes of the marker that begins every version 2 frame.
pub const MARKER_BYTES: usize = 16;

/// The blake3 derive-key context of the header's check.
pub(crate) const HEADER_CONTEXT: &str = "annals 2026-12-05 journal header v2";

/// The blake3 derive-key context of the synced mark's check.
pub(crate) const MARK_CONTEXT: &str = "annals 2026-12-06 journal synced mark v3";

/// A journal's marker: the bytes every one of its frames begins with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Marker(pub [u8; MARKER_BYTES]);

impl Marker {
    /// A marker from the system's randomness.
    pub(crate) fn fresh() -> io::Result<Marker> {
        let mut bytes = [0; MARKER_BYTES];
        OsRng
            .try_fill_bytes(&mut bytes)
            .map_err(|error| io::Error::other(error.to_string()))?;
        Ok(Marker(bytes))
    }

    /// The version 3 header that names this marker, its synced mark at the first frame of
    /// epoch 0 (an empty journal).
    pub(crate) fn header(&self) -> [u8; HEADER_BYTES as usize] {
        let mut header = [0; HEADER_BYTES as usize];
        header[..14].copy_from_slice(&MAGIC);
        header[14..16].copy_from_slice(&VERSION.to_le_bytes());
        header[16..32].copy_from_slice(&self.0);
        let check = header_check(&header[..32]);
        header[32..48].copy_from_slice(&check);
        let empty = Synced {
            end: HEADER_BYTES,
            epoch: 0,
        };
        header[MARK_OFFSET as usize..].copy_from_slice(&self.mark(empty));
        header
    }

    /// The synced mark's bytes for `synced`: its end (u64 LE), its epoch (u32 LE) and the first
    /// 4 bytes of a check over them and this journal's marker.
    pub(crate) fn mark(&self, synced: Synced) -> [u8; MARK_BYTES] {
        let mut mark = [0; MARK_BYTES];
        mark[..8].copy_from_slice(&synced.end.to_le_bytes());
        mark[8..12].copy_from_slice(&synced.epoch.to_le_bytes());
        let check = self.mark_check(&mark[..12]);
        mark[12..].copy_from_slice(&check);
        mark
    }

    /// What a synced mark's bytes say, `None` when they fail their check (a mark read while
    /// it was written, or damage).
    pub(crate) fn read_mark(&self, mark: &[u8; MARK_BYTES]) -> Option<Synced> {
        (mark[12..] == self.mark_check(&mark[..12])).then(|| Synced {
            end: u64::from_le_bytes(mark[..8].try_into().expect("8 bytes")),
            epoch: u32::from_le_bytes(mark[8..12].try_into().expect("4 bytes")),
        })
    }

    fn mark_check(&self, covered: &[u8]) -> [u8; 4] {
        let hash = blake3::Hasher::new_derive_key(MARK_CONTEXT)
            .update(&self.0)
            .update(covered)
            .finalize();
        let mut check = [0; 4];
        check.copy_from_slice(&hash.as_bytes()[..4]);
        check
    }
}

/// The check of a version 2 header's first 32 bytes.
fn header_check(covered: &[u8]) -> [u8; 16] {
    let hash = blake3::Hasher::new_derive_key(HEADER_CONTEXT)
        .update(covered)
        .finalize();
    let mut check = [0; 16];
    check.copy_from_slice(&hash.as_bytes()[..16]);
    check
}

/// How a journal's frames are laid out, as its header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Version 1: frames follow the 16-byte header, each its length field first.
    V1,
    /// Version 2: frames follow the 48-byte header, each its marker first.
    V2(Marker),
    /// Version 3: as version 2, the header 64 bytes with the synced mark at its end.
    V3(Marker),
}

impl Layout {
    /// Where the first frame begins.
    pub(crate) fn frames_start(&self) -> u64 {
        match self {
            Layout::V1 => V1_HEADER_BYTES,
            Layout::V2(_) => V2_HEADER_BYTES,
            Layout::V3(_) => HEADER_BYTES,
        }
    }

    /// The bytes every frame begins with, before its length field.
    pub(crate) fn marker(&self) -> &[u8] {
        match self {
            Layout::V1 => &[],
            Layout::V2(marker) | Layout::V3(marker) => &marker.0,
        }
    }
}

/// What the first bytes of a journal file say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// A whole header of a version this build reads.
    Whole(Layout),
    /// No whole header, and bytes that could be one cut short (a prefix of the magic, zeros):
    /// a creation interrupted before its sync, if nothing follows it.
    CutShort,
}

/// Reads the header from `first`, the file's first bytes (up to [`HEADER_BYTES`]); `path`
/// names the file in errors. A version 2 or 3 header that fails its check (or is not whole)
/// is [`Header::CutShort`] too: the caller refuses it when anything follows it. A version 3
/// header's synced mark is not read here: recovery does not need it.
pub(crate) fn read_header(first: &[u8], path: &Path) -> Result<Header> {
    if first.len() >= 16 && first[..14] == MAGIC {
        let found = u16::from_le_bytes([first[14], first[15]]);
        return match found {
            1 => Ok(Header::Whole(Layout::V1)),
            2 | 3
                if first.len() >= header_bytes(found)
                    && header_check(&first[..32]) == first[32..48] =>
            {
                let mut marker = [0; MARKER_BYTES];
                marker.copy_from_slice(&first[16..32]);
                Ok(Header::Whole(match found {
                    2 => Layout::V2(Marker(marker)),
                    _ => Layout::V3(Marker(marker)),
                }))
            }
            // Zeros where the version goes, or a check that fails: cut short, or damaged.
            0 | 2 | 3 => Ok(Header::CutShort),
            found => Err(JournalError::Version {
                path: path.to_path_buf(),
                found,
                supported: VERSION,
            }
            .into()),
        };
    }
    // A creation cut short wrote a prefix of the magic and left zeros, or nothing, after it.
    let magic = &first[..first.len().min(14)];
    let same = magic.iter().zip(MAGIC).take_while(|(a, b)| *a == b).count();
    if magic[same..].iter().all(|&byte| byte == 0) {
        return Ok(Header::CutShort);
    }
    Err(JournalError::NotAJournal {
        path: path.to_path_buf(),
    }
    .into())
}

/// The bytes of a marked header of `version` (2 or 3).
fn header_bytes(version: u16) -> usize {
    match version {
        2 => V2_HEADER_BYTES as usize,
        _ => HEADER_BYTES as usize,
    }
}
