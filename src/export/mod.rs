//! Portable export files written from a [`Snapshot`] ([`export`]), and opened by their path
//! ([`open`], [`check`]). The file's layout and the reading of it with every check are
//! `annals_format::export`'s, re-exported here; this module adds the file I/O and the log.
//! It never writes to a log: importing is the store's (`crate::maintenance::Import::run`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

pub use annals_format::export::{
    EXPORT_FORMAT_VERSION, EXPORT_MAGIC, ExportDamage, ExportError, ExportHeader,
    ExportHeaderProblem, ExportMismatch, ExportReader, ExportSummary, STORED_RECORD_BYTES_CAP,
    TRAILER_MAGIC,
};

use crate::error::{Error, Result};
use crate::hash::Digest;
use crate::log::read::check_at;
use crate::log::read::{Snapshot, parse_segment};
use crate::output_path::{self, Output, StoreFiles};
use crate::record::Position;

/// Writes records `from .. to` of `snapshot` to `path` as an export file (replacing a regular
/// file there), calling `progress` with the number of records written so far. Each record is
/// checked as it is read; a damaged log is not exported. A path that is a FIFO or a device,
/// in a missing folder, or (for a snapshot of a store's file) one of the store's own files is
/// refused first ([`crate::error::OutputPathError`]).
pub fn export(
    snapshot: &Snapshot,
    from: Position,
    to: Position,
    path: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary> {
    let files = match &snapshot.log {
        Some(log) => Some(
            StoreFiles::of_log(log)
                .with_archives(crate::log::cut::archive_names(&snapshot.reader)?),
        ),
        None => None,
    };
    let written = write_partial(snapshot, from, to, path, files.as_ref(), progress)?;
    // An export replaces a file at `path` (the caller refuses one without `--force`).
    std::fs::rename(&written.temporary, path)?;
    sync_folder(path)?;
    Ok(written.summary)
}

/// An export file written whole and synced under its temporary name
/// ([`partial_path`]), not yet under its own.
pub(crate) struct Partial {
    /// Where it is.
    pub(crate) temporary: std::path::PathBuf,
    /// What it holds.
    pub(crate) summary: ExportSummary,
    /// The blake3 of its bytes.
    pub(crate) digest: Digest,
}

/// The temporary name an export to `path` is written under: `path` and `.partial`.
pub(crate) fn partial_path(path: &Path) -> std::path::PathBuf {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    std::path::PathBuf::from(temporary)
}

/// Writes records `from .. to` of `snapshot` as [`export`] does, also returning blake3 of the
/// file's bytes (what a cut record names its archive by), but leaves the file, synced, under
/// [`partial_path`]: the caller names it (a cut, only once it has committed). Neither `path`
/// nor its temporary file may be one of `files` ([`output_path::check`]); the file is made
/// with no more permissions than its log has.
pub(crate) fn write_partial(
    snapshot: &Snapshot,
    from: Position,
    to: Position,
    path: &Path,
    files: Option<&StoreFiles>,
    progress: &mut dyn FnMut(u64),
) -> Result<Partial> {
    output_path::check(path, Output::File, files)?;
    let head = snapshot.head()?;
    if to > head.next || from > to {
        return Err(crate::error::AuditError::Range {
            from,
            to,
            head: head.next.0,
        }
        .into());
    }
    if from < to {
        snapshot.refuse_archived(from)?;
    }
    let prev = match from.0.checked_sub(1) {
        None => Digest::ZERO,
        Some(before) => record_hash_at(snapshot, Position(before))?,
    };
    let last = match to.0.checked_sub(1) {
        Some(last) if to > from => record_hash_at(snapshot, Position(last))?,
        _ => prev,
    };
    let frontier = frontier_at(snapshot, from.0)?;
    let header = ExportHeader {
        from,
        to,
        prev,
        frontier,
        head: last,
        root: snapshot.merkle_root(to.0)?,
    };
    // Written under a temporary name and named once complete: `path` never names half a file.
    let temporary = partial_path(path);
    output_path::check(&temporary, Output::File, files)?;
    // One a killed export left is replaced; the check above keeps that from being any
    // store's file, and a link there is refused by the create, never followed.
    if std::fs::symlink_metadata(&temporary).is_ok_and(|found| found.is_file()) {
        std::fs::remove_file(&temporary)?;
    }
    let created = output_path::create_new(&temporary, files.map(StoreFiles::log))?;
    let digest = match write_file(snapshot, &header, created, progress) {
        Ok(digest) => digest,
        Err(error) => {
            // Best effort: the error that matters is the export's.
            let _ = std::fs::remove_file(&temporary);
            return Err(error);
        }
    };
    Ok(Partial {
        temporary,
        summary: ExportSummary { header },
        digest,
    })
}

/// Syncs the folder holding `path`, so that a rename into it survives a crash (where the
/// system can sync a folder; elsewhere the rename is as durable as the system makes it).
fn sync_folder(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        let folder = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent,
            _ => Path::new("."),
        };
        File::open(folder)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// A writer that hashes what it writes.
struct Hashing<W> {
    inner: W,
    hasher: blake3::Hasher,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.inner.write(bytes)?;
        self.hasher.update(&bytes[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// blake3 of the bytes of the file at `path`, read a megabyte at a time.
pub fn file_digest(path: &Path) -> Result<Digest> {
    let mut hasher = blake3::Hasher::new();
    let mut input = File::open(path)?;
    let mut buffer = vec![0; 1 << 20];
    loop {
        let read = input.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(Digest(*hasher.finalize().as_bytes()))
}

fn write_file(
    snapshot: &Snapshot,
    header: &ExportHeader,
    file: File,
    progress: &mut dyn FnMut(u64),
) -> Result<Digest> {
    let (from, to) = (header.from, header.to);
    let mut out = Hashing {
        inner: BufWriter::new(file),
        hasher: blake3::Hasher::new(),
    };
    header.encode(&mut out)?;
    let mut written = 0u64;
    let mut next = from;
    let mut stored = Vec::new();
    if from < to {
        let start = match snapshot.segments.range(..=from.0)?.next_back() {
            Some(entry) => entry?.0.value(),
            None => from.0,
        };
        'segments: for entry in snapshot.segments.range(start..to.0)? {
            let (first, guard) = entry?;
            let first = first.value();
            let segment = parse_segment(snapshot.format, first, guard.value())?;
            for at in segment.records_at() {
                let position = Position(first + u64::from(at.index));
                if position < from {
                    continue;
                }
                if position >= to {
                    break 'segments;
                }
                if position != next {
                    return Err(crate::log::read::missing(next));
                }
                // The v1 stored form, whatever the file's format: re-encoded from the record
                // checked against its own hash, byte for byte what a v1 log stores.
                let view = check_at(guard.value(), &at, position)?;
                stored.clear();
                view.encode_v1_stored(&mut stored);
                out.write_all(&(stored.len() as u32).to_le_bytes())?;
                out.write_all(&stored)?;
                next = Position(position.0 + 1);
                written += 1;
                if written.is_multiple_of(1024) {
                    progress(written);
                }
            }
        }
    }
    if next != to {
        return Err(crate::log::read::missing(next));
    }
    out.write_all(TRAILER_MAGIC)?;
    out.write_all(&to.0.to_le_bytes())?;
    out.write_all(header.head.as_bytes())?;
    out.write_all(header.root.as_bytes())?;
    out.flush()?;
    out.inner.get_ref().sync_all()?;
    progress(written);
    Ok(Digest(*out.hasher.finalize().as_bytes()))
}

fn record_hash_at(snapshot: &Snapshot, position: Position) -> Result<Digest> {
    // Kept for a record a cut archived: an export of a cut log starts at its anchor.
    snapshot.record_hash(position)
}

/// The Merkle frontier of the tree of the first `size` records, from the stored tree.
pub(crate) fn frontier_at(snapshot: &Snapshot, size: u64) -> Result<Vec<Digest>> {
    let mut nodes = Vec::new();
    for (level, index) in crate::merkle::perfect_subtrees(0, size) {
        nodes.push(snapshot.merkle_node(level, index)?);
    }
    Ok(nodes)
}

/// Opens the export file at `path` and reads its header.
pub fn open(path: &Path) -> Result<ExportReader<BufReader<File>>, ExportError> {
    ExportReader::new(BufReader::new(File::open(path)?))
}

/// Reads the whole export file at `path` and checks every record, link, the head and the root,
/// calling `progress` with the records checked so far. Writes nothing.
pub fn check(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<ExportSummary, ExportError> {
    annals_format::export::check(BufReader::new(File::open(path)?), progress)
}

impl From<ExportError> for Error {
    fn from(error: ExportError) -> Self {
        Error::Export(Box::new(error))
    }
}
