//! Portable export files: a range of the log's records as their stored bytes, between a header
//! and a trailer that name the range, the chain's ends and the Merkle root at the end
//! (`schema/FORMAT.md`, "Export files").
//!
//! This module owns the file's layout, writing it from a [`Snapshot`] ([`export`]) and
//! reading it back with every check a reader can make alone ([`ExportReader`], [`check`]):
//! each record sound at its position, each `prev` the hash before it, the head hash and the
//! root recomputed. Every length is checked against its cap before anything is allocated. It
//! never writes to a log: importing is the store's (`crate::Import::run`).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;

use crate::error::{Error, Result};
pub use crate::error::{ExportDamage, ExportError, ExportHeaderProblem, ExportMismatch};
use crate::hash::Digest;
use crate::log::read::check_at;
use crate::log::read::{Snapshot, parse_segment};
use crate::merkle::{Frontier, LogTreeHasher, leaf_hash};
use crate::output_path::{self, Output, StoreFiles};
use crate::record::limits::{HEADER_BYTES_CAP, PAYLOAD_BYTES_CAP};
use crate::record::{Position, Record, RecordError, decode_stored};

/// The first 16 bytes of every export file.
pub const EXPORT_MAGIC: &[u8; 16] = b"annals export v1";
/// The 16 bytes that open the trailer.
pub const TRAILER_MAGIC: &[u8; 16] = b"annals export ok";
/// The export file format this code writes and reads: 2, whose frontier and roots are of
/// RFC 6962's SHA-256 tree (log format v4). Version 1 carried the blake3 tree of log formats
/// v1 to v3, and is refused ([`ExportError::EarlierTree`]).
pub const EXPORT_FORMAT_VERSION: u32 = 2;
/// The largest stored record: its hash, the largest header and the largest payload.
pub const STORED_RECORD_BYTES_CAP: u64 = 32 + HEADER_BYTES_CAP as u64 + PAYLOAD_BYTES_CAP as u64;

/// What an export file's header says: the range, where its chain starts, where it ends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportHeader {
    /// The first position exported.
    pub from: Position,
    /// One past the last position exported: the head's next position after importing.
    pub to: Position,
    /// The record hash at `from - 1` (zero when `from` is 0): what the first record's `prev` is.
    pub prev: Digest,
    /// The Merkle frontier of the tree of the `from` records before the range.
    pub frontier: Vec<Digest>,
    /// The record hash at `to - 1`: the head hash after importing.
    pub head: Digest,
    /// The root of the Merkle tree of the first `to` records.
    pub root: Digest,
}

impl ExportHeader {
    fn encode(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(EXPORT_MAGIC)?;
        out.write_all(&EXPORT_FORMAT_VERSION.to_le_bytes())?;
        out.write_all(&self.from.0.to_le_bytes())?;
        out.write_all(&self.to.0.to_le_bytes())?;
        out.write_all(self.prev.as_bytes())?;
        for node in &self.frontier {
            out.write_all(node.as_bytes())?;
        }
        out.write_all(self.head.as_bytes())?;
        out.write_all(self.root.as_bytes())
    }

    fn decode(input: &mut impl Read) -> Result<ExportHeader, ExportError> {
        let mut magic = [0; 16];
        read_exact_or(input, &mut magic, || ExportError::NotAnExport)?;
        if &magic != EXPORT_MAGIC {
            return Err(ExportError::NotAnExport);
        }
        let truncated = || ExportError::Header {
            problem: ExportHeaderProblem::Truncated,
        };
        let mut version = [0; 4];
        read_exact_or(input, &mut version, truncated)?;
        let found = u32::from_le_bytes(version);
        if found == 1 {
            return Err(ExportError::EarlierTree);
        }
        if found != EXPORT_FORMAT_VERSION {
            return Err(ExportError::UnsupportedVersion {
                found,
                supported: EXPORT_FORMAT_VERSION,
            });
        }
        let from = Position(read_u64(input, truncated)?);
        let to = Position(read_u64(input, truncated)?);
        if to < from {
            return Err(ExportError::Header {
                problem: ExportHeaderProblem::Range { from, to },
            });
        }
        let prev = read_digest(input, truncated)?;
        // At most 64 nodes: the count is bounded by the integer's bits.
        let mut frontier = Vec::with_capacity(from.0.count_ones() as usize);
        for _ in 0..from.0.count_ones() {
            frontier.push(read_digest(input, truncated)?);
        }
        let head = read_digest(input, truncated)?;
        let root = read_digest(input, truncated)?;
        Ok(ExportHeader {
            from,
            to,
            prev,
            frontier,
            head,
            root,
        })
    }

    /// The tree head of the first `to` records.
    pub fn tree_head(&self) -> crate::merkle::TreeHead {
        crate::merkle::TreeHead {
            size: self.to.0,
            root: self.root,
        }
    }
}

fn read_exact_or(
    input: &mut impl Read,
    buf: &mut [u8],
    short: impl FnOnce() -> ExportError,
) -> Result<(), ExportError> {
    match input.read_exact(buf) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::UnexpectedEof => Err(short()),
        Err(error) => Err(ExportError::Io(error)),
    }
}

fn read_u64(
    input: &mut impl Read,
    short: impl FnOnce() -> ExportError,
) -> Result<u64, ExportError> {
    let mut bytes = [0; 8];
    read_exact_or(input, &mut bytes, short)?;
    Ok(u64::from_le_bytes(bytes))
}

fn read_digest(
    input: &mut impl Read,
    short: impl FnOnce() -> ExportError,
) -> Result<Digest, ExportError> {
    let mut bytes = [0; 32];
    read_exact_or(input, &mut bytes, short)?;
    Ok(Digest(bytes))
}

/// What an export or a check covered.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct ExportSummary {
    /// The file's header (its range, chain ends and root).
    pub header: ExportHeader,
}

/// Writes records `from .. to` of `snapshot` to `path` as an export file (replacing a regular
/// file there), calling `progress` with the number of records written so far. Each record is
/// checked as it is read; a damaged log is not exported. A path that is a FIFO or a device,
/// in a missing folder, or (for a snapshot of a store's file) one of the store's own files is
/// refused first ([`crate::OutputPathError`]).
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

/// Reads an export file record by record, checking each against the header and the one
/// before it. After the last record, [`ExportReader::finish`] checks the trailer and the root.
pub struct ExportReader<R> {
    input: R,
    header: ExportHeader,
    next: Position,
    prev: Digest,
    frontier: Frontier<Digest>,
}

impl ExportReader<BufReader<File>> {
    /// Opens the export file at `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, ExportError> {
        ExportReader::new(BufReader::new(File::open(path)?))
    }
}

impl<R: Read> ExportReader<R> {
    /// Reads the header from `input`.
    pub fn new(mut input: R) -> Result<Self, ExportError> {
        let header = ExportHeader::decode(&mut input)?;
        let frontier = Frontier::from_nodes(header.from.0, header.frontier.clone()).ok_or(
            ExportError::Header {
                problem: ExportHeaderProblem::Frontier,
            },
        )?;
        Ok(ExportReader {
            next: header.from,
            prev: header.prev,
            frontier,
            input,
            header,
        })
    }

    /// The header.
    pub fn header(&self) -> &ExportHeader {
        &self.header
    }

    /// The next record, checked: sound at its position and chained to the one before. `None`
    /// after the last one of the range.
    pub fn next_record(&mut self) -> Result<Option<Record>, ExportError> {
        if self.next >= self.header.to {
            return Ok(None);
        }
        let position = self.next;
        let damaged = |problem: ExportDamage| ExportError::Damaged {
            position,
            problem: Box::new(problem),
        };
        let mut len = [0; 4];
        read_exact_or(&mut self.input, &mut len, || {
            damaged(ExportDamage::EndsBeforeRecord)
        })?;
        let len = u64::from(u32::from_le_bytes(len));
        if !(32..=STORED_RECORD_BYTES_CAP).contains(&len) {
            return Err(damaged(ExportDamage::RecordLength {
                bytes: len,
                min: 32,
                max: STORED_RECORD_BYTES_CAP,
            }));
        }
        // `take` bounds the read; the buffer grows only with bytes actually present.
        let mut bytes = Vec::new();
        (&mut self.input).take(len).read_to_end(&mut bytes)?;
        if bytes.len() as u64 != len {
            return Err(damaged(ExportDamage::EndsInsideRecord {
                read: bytes.len() as u64,
                bytes: len,
            }));
        }
        let record = decode_stored(&bytes, position)
            .map_err(|error: RecordError| damaged(ExportDamage::Record(error)))?;
        if record.prev != self.prev {
            return Err(damaged(ExportDamage::Prev {
                prev: record.prev,
                before: self.prev,
            }));
        }
        self.frontier
            .push(&LogTreeHasher, leaf_hash(&record.hash), |_, _, _| {});
        self.prev = record.hash;
        self.next = Position(position.0 + 1);
        Ok(Some(record))
    }

    /// Checks, after the last record, that the head hash and the recomputed root are the
    /// header's and that the trailer repeats them and ends the file.
    pub fn finish(mut self) -> Result<ExportSummary, ExportError> {
        let to = self.header.to;
        let damaged = |problem: ExportDamage| ExportError::Damaged {
            position: to,
            problem: Box::new(problem),
        };
        if self.next != to {
            return Err(ExportError::Damaged {
                position: self.next,
                problem: Box::new(ExportDamage::Unfinished),
            });
        }
        if self.prev != self.header.head {
            return Err(damaged(ExportDamage::Head {
                records: self.prev,
                header: self.header.head,
            }));
        }
        let root = self.frontier.root(&LogTreeHasher);
        if root != self.header.root {
            return Err(damaged(ExportDamage::Root {
                records: root,
                header: self.header.root,
            }));
        }
        let mut trailer = [0; 16 + 8 + 32 + 32];
        read_exact_or(&mut self.input, &mut trailer, || {
            damaged(ExportDamage::EndsBeforeTrailer)
        })?;
        let (magic, rest) = trailer.split_at(16);
        let (size, rest) = rest.split_at(8);
        let (head, root_bytes) = rest.split_at(32);
        let matches = magic == TRAILER_MAGIC
            && size == to.0.to_le_bytes()
            && head == self.header.head.as_bytes()
            && root_bytes == self.header.root.as_bytes();
        if !matches {
            return Err(damaged(ExportDamage::Trailer));
        }
        let mut extra = [0; 1];
        if self.input.read(&mut extra)? != 0 {
            return Err(damaged(ExportDamage::AfterTrailer));
        }
        Ok(ExportSummary {
            header: self.header,
        })
    }
}

/// Reads the whole export file at `path` and checks every record, link, the head and the root,
/// calling `progress` with the records checked so far. Writes nothing.
pub fn check(path: &Path, progress: &mut dyn FnMut(u64)) -> Result<ExportSummary, ExportError> {
    let mut reader = ExportReader::open(path)?;
    let mut checked = 0u64;
    while reader.next_record()?.is_some() {
        checked += 1;
        if checked.is_multiple_of(1024) {
            progress(checked);
        }
    }
    progress(checked);
    reader.finish()
}

impl From<ExportError> for Error {
    fn from(error: ExportError) -> Self {
        Error::Export(Box::new(error))
    }
}
