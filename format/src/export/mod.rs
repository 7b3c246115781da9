//! Reading portable export files: a range of the log's records as their stored bytes, between
//! a header and a trailer that name the range, the chain's ends and the Merkle root at the end
//! (`schema/FORMAT.md`, "Export files").
//!
//! This module owns the file's layout ([`ExportHeader`], the magics) and reading it back with
//! every check a reader can make alone ([`ExportReader`], [`check`]): each record sound at its
//! position, each `prev` the hash before it, the head hash and the root recomputed. Every
//! length is checked against its cap before anything is allocated. It reads from any
//! [`Read`] and never opens a file: writing an export from a log, and opening one by its path,
//! are annals' (`annals::export`).

mod error;

use std::io::{self, Read, Write};

pub use error::{ExportDamage, ExportError, ExportHeaderProblem, ExportMismatch};

use crate::hash::Digest;
use crate::merkle::{Frontier, LogTreeHasher, TreeHead, leaf_hash};
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
    /// Writes the header as the file starts: the magic, the version, the range, the chain's
    /// start, the frontier, the head hash and the root.
    pub fn encode(&self, out: &mut impl Write) -> io::Result<()> {
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
    pub fn tree_head(&self) -> TreeHead {
        TreeHead {
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

/// Reads an export file record by record, checking each against the header and the one
/// before it. After the last record, [`ExportReader::finish`] checks the trailer and the root.
pub struct ExportReader<R> {
    input: R,
    header: ExportHeader,
    next: Position,
    prev: Digest,
    frontier: Frontier<Digest>,
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

/// Reads a whole export file from `input` and checks every record, link, the head and the
/// root, calling `progress` with the records checked so far.
pub fn check(
    input: impl Read,
    progress: &mut dyn FnMut(u64),
) -> Result<ExportSummary, ExportError> {
    let mut reader = ExportReader::new(input)?;
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
