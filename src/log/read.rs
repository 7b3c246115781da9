//! Reading the log from a redb read transaction: a [`Snapshot`] sees one committed state, so
//! readers run alongside a writer (redb MVCC) and never see half an append.
//!
//! redb does not check its checksums on reads, so every record is decoded and checked against
//! its header hash and payload hash before it is handed out; a record that fails is
//! [`Error::Corrupt`] naming its position.

use std::cell::Cell;
use std::sync::Arc;

use redb::ReadTransaction;

use super::checkpoints::{
    CHECKPOINT_VALUE_BYTES, CHECKPOINTS, Checkpoint, resolve_checkpoint, unseal_checkpoint,
};
use super::cut::{ARCHIVED, Cut, KEPT, archived_hash, last_cut};
use super::stream_index::{RunBlock, StreamRun, TAIL_KEY_PREFIX, TAIL_KEYS_END, read_tail};
use super::tables::{
    HEAD_KEY, IDEMPOTENCY, IDEMPOTENCY_VALUE_BYTES, MERKLE, MERKLE_VALUE_BYTES, META, SEGMENTS,
    STREAM_COUNT_KEY, STREAM_RUNS,
};
use super::{Head, decode_head, unseal_meta};
use crate::error::{ArchiveError, Error, Result, guarded};
use crate::hash::Digest;
use crate::record::problem::Problem;
use crate::record::segment::{RecordAt, Segment};
use crate::record::view::{RecordHashes, parse_at};
use crate::record::{Format, Position, Record, RecordError, RecordView, StreamVersion};
use crate::storage::{Guard, ReadOnly, Readable, Reader, Rows, Writer};

/// Which way a read goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Direction {
    /// Ascending positions or versions.
    #[default]
    Forward,
    /// Descending positions or versions.
    Backward,
}

type SegmentGuard = Guard<'static, &'static [u8]>;

/// A stream as [`Snapshot::visit_streams`] sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamSummary {
    /// The stream's name.
    pub name: String,
    /// How many records it holds.
    pub length: u64,
    /// The log position of its last record.
    pub last_position: Position,
}

/// One consistent, read-only view of the log.
pub struct Snapshot {
    meta: ReadOnly<&'static str, &'static [u8]>,
    pub(crate) segments: ReadOnly<u64, &'static [u8]>,
    pub(crate) stream_runs: ReadOnly<(&'static str, u64), &'static [u8]>,
    pub(crate) idempotency: ReadOnly<&'static str, [u8; IDEMPOTENCY_VALUE_BYTES]>,
    checkpoints: ReadOnly<&'static str, [u8; CHECKPOINT_VALUE_BYTES]>,
    pub(crate) merkle: ReadOnly<(u8, u64), [u8; MERKLE_VALUE_BYTES]>,
    /// The last cut and its record's position, `None` for a log never cut.
    cut: Option<(Position, Cut)>,
    /// The hashes of the records cut, `None` for a log never cut.
    archived: Option<ReadOnly<u64, &'static [u8]>>,
    /// The records cut that a projection still reads, `None` for a log never cut.
    kept: Option<ReadOnly<u64, &'static [u8]>>,
    /// How the file stores its records.
    pub(crate) format: Format,
    /// The read (redb's commit and the overlay over it), kept so that the projection tables
    /// can be read as of the same commit.
    pub(crate) reader: Reader,
    /// The path of the log file read, when the snapshot is of one (`Store::snapshot`): an
    /// export from it refuses the store's own files as its output.
    pub(crate) log: Option<std::path::PathBuf>,
}

impl Snapshot {
    /// Opens the log's tables in `txn`.
    pub(crate) fn new(txn: ReadTransaction) -> Result<Self> {
        Self::shared(crate::storage::Commit::shared(txn))
    }

    /// Opens the log's tables in `txn`, which others (projection tables read as of the same
    /// commit) may share.
    pub(crate) fn shared(txn: Arc<crate::storage::Commit>) -> Result<Self> {
        Self::over(Reader::new(txn))
    }

    /// Opens the log's tables as `reader` reads them: redb's commit under the overlay.
    pub(crate) fn over(reader: Reader) -> Result<Self> {
        let meta = META.read(&reader)?;
        let archived = ARCHIVED.read_if_present(&reader)?;
        let kept = KEPT.read_if_present(&reader)?;
        Ok(Snapshot {
            cut: last_cut(&reader)?,
            archived,
            kept,
            format: super::read_format(&meta)?,
            meta,
            segments: SEGMENTS.read(&reader)?,
            stream_runs: STREAM_RUNS.read(&reader)?,
            idempotency: IDEMPOTENCY.read(&reader)?,
            checkpoints: CHECKPOINTS.read(&reader)?,
            merkle: MERKLE.read(&reader)?,
            reader,
            log: None,
        })
    }

    /// This snapshot, known to be of the log file at `path`.
    pub(crate) fn of_log(mut self, path: &std::path::Path) -> Self {
        self.log = Some(path.to_path_buf());
        self
    }

    /// The first position the log holds a record of: 0, or where its last cut left it
    /// ([`crate::archive::Archives::archive_before`]). Records before it are in archive files; their
    /// hashes, the tree over them and the indexes stay.
    pub fn start(&self) -> Position {
        self.cut.as_ref().map_or(Position(0), |(_, cut)| cut.before)
    }

    /// The last cut, `None` for a log never cut.
    pub fn cut(&self) -> Option<&Cut> {
        self.cut.as_ref().map(|(_, cut)| cut)
    }

    /// The last cut and the position of its record.
    pub(crate) fn cut_at(&self) -> Option<&(Position, Cut)> {
        self.cut.as_ref()
    }

    /// Refuses `position` when a cut archived it, naming the archive.
    pub(crate) fn refuse_archived(&self, position: Position) -> Result<()> {
        match &self.cut {
            Some((_, cut)) if position < cut.before => Err(ArchiveError::Archived {
                position,
                before: cut.before,
                archive: cut.archive.clone(),
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// The archived record at `position` that the last cut kept because a projection reads
    /// it (from `annals.kept`, or from its segment while the cut is unfinished), checked
    /// against its own hashes and the hash kept for its position.
    fn kept_record(&self, position: Position) -> Result<Option<Record>> {
        let Some(kept) = &self.kept else {
            return Ok(None);
        };
        let Some(stored) = kept.get(position.0)? else {
            return Ok(None);
        };
        // Empty: the cut that kept it has not yet moved it out of its segment.
        let record = if stored.value().is_empty() {
            SegmentCursor::new(self.format).record(&self.segments, position)?
        } else {
            crate::record::decode_stored(stored.value(), position)
                .map_err(|error| corrupt_record(position, error))?
        };
        let hash = self.record_hash(position)?;
        if record.hash != hash {
            return Err(Error::Corrupt {
                position,
                problem: Box::new(Problem::Cut {
                    fault: crate::record::problem::CutFault::Kept {
                        kept: hash,
                        found: record.hash,
                    },
                }),
            });
        }
        Ok(Some(record))
    }

    /// The hash of the record at `position` (below the head): kept beside the tree for a
    /// record a cut archived, else read from the record, checked.
    pub fn record_hash(&self, position: Position) -> Result<Digest> {
        guarded(|| match (&self.archived, position < self.start()) {
            (Some(archived), true) => archived_hash(archived, position),
            _ => self
                .get(position)?
                .map(|record| record.hash)
                .ok_or_else(|| missing(position)),
        })
    }

    /// Calls `visit` with the hash kept for each record below the log's start, in position
    /// order, a block of 16 at a time; a block missing or out of place is
    /// [`Error::Corrupt`] naming the first position it lacks.
    pub(crate) fn visit_archived_hashes(
        &self,
        mut visit: impl FnMut(Position, Digest) -> Result<()>,
    ) -> Result<()> {
        let start = self.start().0;
        let Some(archived) = &self.archived else {
            return if start == 0 {
                Ok(())
            } else {
                Err(missing(Position(0)))
            };
        };
        let mut next = 0u64;
        for entry in archived.range(0..)? {
            if next >= start {
                break;
            }
            let (block, stored) = entry?;
            let block = block.value();
            if block * super::cut::ARCHIVED_BLOCK_RECORDS != next {
                return Err(missing(Position(next)));
            }
            let value = super::checksum::unseal(
                super::cut::ARCHIVED_NAME,
                &block.to_le_bytes(),
                stored.value(),
            )?;
            for hash in value.chunks_exact(32) {
                if next < start {
                    visit(Position(next), Digest(hash.try_into().expect("32 bytes")))?;
                    next += 1;
                }
            }
        }
        if next < start {
            return Err(missing(Position(next)));
        }
        Ok(())
    }

    /// The hashes of the `count` records from `first`: kept beside the tree for those a cut
    /// archived, read from the records (checked) after. Fewer than `count` records there is
    /// [`Error::Corrupt`] naming the first one missing.
    pub(crate) fn record_hashes(&self, first: Position, count: usize) -> Result<Vec<Digest>> {
        let end = first.0 + count as u64;
        let start = self.start().0.clamp(first.0, end);
        let mut hashes = Vec::with_capacity(count);
        for position in first.0..start {
            hashes.push(self.record_hash(Position(position))?);
        }
        if start < end && start < self.head()?.next.0 {
            for record in self
                .records(Position(start), Direction::Forward)?
                .take(count - hashes.len())
            {
                hashes.push(record?.hash);
            }
        }
        if hashes.len() != count {
            return Err(missing(Position(first.0 + hashes.len() as u64)));
        }
        Ok(hashes)
    }

    /// The value of meta key `key`, if present, once its checksum holds.
    pub(crate) fn meta_value(&self, key: &str) -> Result<Option<Vec<u8>>> {
        match self.meta.get(key)? {
            Some(stored) => Ok(Some(unseal_meta(key, stored.value())?.to_vec())),
            None => Ok(None),
        }
    }

    /// The latest cosigned checkpoint the log keeps (`crate::maintenance::Checkpoints::keep_cosigned`): a
    /// signed note's text.
    pub fn cosigned_checkpoint(&self) -> Result<Option<String>> {
        guarded(|| {
            self.meta_value(super::signed::COSIGNED_CHECKPOINT_KEY)?
                .map(|bytes| {
                    String::from_utf8(bytes).map_err(|_| {
                        Error::undecodable_meta(
                            crate::error::MetaItem::CosignedCheckpoint,
                            "it is not UTF-8",
                        )
                    })
                })
                .transpose()
        })
    }

    /// The last checkpoint the log signed (`crate::maintenance::Checkpoints::sign`), if it ever signed one.
    pub fn signed_checkpoint(&self) -> Result<Option<super::signed::SignedHead>> {
        guarded(|| {
            self.meta_value(super::signed::SIGNED_CHECKPOINT_KEY)?
                .map(|bytes| super::signed::SignedHead::decode(&bytes))
                .transpose()
        })
    }

    /// The head: the next position and the hash of the last record.
    pub fn head(&self) -> Result<Head> {
        guarded(|| stored_head(self.meta.get(HEAD_KEY)?.as_ref().map(|bytes| bytes.value())))
    }

    /// The head as a write transaction sees it before its own appends.
    pub(crate) fn head_in(txn: &Writer<'_>) -> Result<Head> {
        stored_head(
            META.write(txn)?
                .get(HEAD_KEY)?
                .as_ref()
                .map(|bytes| bytes.value()),
        )
    }

    /// The head as `reader` reads it, opening the log's meta table alone (a snapshot opens
    /// every table of the log).
    pub(crate) fn head_read(reader: &Reader) -> Result<Head> {
        stored_head(
            META.read(reader)?
                .get(HEAD_KEY)?
                .as_ref()
                .map(|bytes| bytes.value()),
        )
    }

    /// The checkpoint of projection `name`, `None` if it has none.
    pub fn checkpoint(&self, name: &str) -> Result<Option<Checkpoint>> {
        guarded(|| {
            let head = self.head()?.next;
            match self.checkpoints.get(name)? {
                Some(stored) => {
                    let stored = unseal_checkpoint(name, &stored.value())?;
                    Ok(Some(resolve_checkpoint(stored, head)))
                }
                None => Ok(None),
            }
        })
    }

    /// How many streams hold at least one record.
    pub fn stream_count(&self) -> Result<u64> {
        guarded(|| match self.meta.get(STREAM_COUNT_KEY)? {
            Some(bytes) => {
                super::decode_stream_count(unseal_meta(STREAM_COUNT_KEY, bytes.value())?)
            }
            None => Err(Error::corrupt_meta(
                crate::error::MetaItem::StreamCount,
                crate::error::MetaFault::Missing,
            )),
        })
    }

    /// The last version of `stream`, `None` if it holds no record.
    pub fn stream_version(&self, stream: &str) -> Result<Option<StreamVersion>> {
        guarded(|| {
            let length = self.tail(stream)?.as_ref().map_or(0, RunBlock::end_version);
            Ok(length.checked_sub(1).map(StreamVersion))
        })
    }

    /// The tail of `stream`'s runs, `None` if it holds no record.
    pub(crate) fn tail(&self, stream: &str) -> Result<Option<RunBlock>> {
        read_tail(&self.meta, stream)
    }

    /// Calls `visit` with each stream whose name starts with `prefix`, in name order, until it
    /// returns `false`: its name, its length and the position of its last record, read from
    /// its tail beside the head (every stream with a record has one). One stream in memory at
    /// a time, so listing a million streams takes no more memory than listing one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// store.append("order-7", annals::ExpectedVersion::Any, &[annals::NewEvent::new("placed", 0, b"{}".to_vec())])?;
    /// let mut names = Vec::new();
    /// store.snapshot()?.visit_streams("order-", |stream| {
    ///     names.push((stream.name, stream.length));
    ///     Ok(true)
    /// })?;
    /// assert_eq!(names, [("order-7".to_owned(), 1)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn visit_streams(
        &self,
        prefix: &str,
        mut visit: impl FnMut(StreamSummary) -> Result<bool>,
    ) -> Result<()> {
        guarded(|| {
            let start = format!("{TAIL_KEY_PREFIX}{prefix}");
            let mut listed = 0u64;
            for entry in self.meta.range(start.as_str()..TAIL_KEYS_END)? {
                let (key, value) = entry?;
                let Some(name) = key.value().strip_prefix(TAIL_KEY_PREFIX) else {
                    break;
                };
                if !name.starts_with(prefix) {
                    break;
                }
                let tail = RunBlock::decode_tail(name, unseal_meta(key.value(), value.value())?)?;
                let length = tail.end_version();
                let Some(last) = tail.into_runs().pop() else {
                    // A tail is written with the stream's first record and never emptied.
                    return Err(Error::undecodable_meta(
                        crate::error::MetaItem::StreamIndex {
                            stream: Some(name.to_owned()),
                        },
                        "its tail is empty",
                    ));
                };
                let summary = StreamSummary {
                    name: name.to_owned(),
                    length,
                    last_position: Position(last.first_position + last.count - 1),
                };
                listed += 1;
                if !visit(summary)? {
                    return Ok(());
                }
            }
            // Every stream listed is every stream counted: a damaged page of redb's can lead
            // the walk past some tails, and each tail's checksum cannot tell one not met.
            if prefix.is_empty() {
                let counted = self.stream_count()?;
                if listed != counted {
                    return Err(Error::corrupt_meta(
                        crate::error::MetaItem::StreamIndex { stream: None },
                        crate::error::MetaFault::Miscounted {
                            found: listed,
                            expected: counted,
                        },
                    ));
                }
            }
            Ok(())
        })
    }

    /// Calls `visit` with the name of every stream that has a tail, in name order, until it
    /// returns `false`; the tails are not decoded, so a damaged one is found by whoever reads
    /// it next, naming its stream.
    pub(crate) fn visit_tail_names(
        &self,
        mut visit: impl FnMut(&str) -> Result<bool>,
    ) -> Result<()> {
        for entry in self.meta.range(TAIL_KEY_PREFIX..TAIL_KEYS_END)? {
            let key = entry?.0;
            if let Some(stream) = key.value().strip_prefix(TAIL_KEY_PREFIX)
                && !visit(stream)?
            {
                break;
            }
        }
        Ok(())
    }

    /// Where `stream`'s records lie: its runs in version order, as the index records them.
    pub fn stream_runs(&self, stream: &str) -> Result<Vec<StreamRun>> {
        guarded(|| {
            let mut runs = Vec::new();
            self.visit_runs(stream, |run| {
                runs.push(run);
                Ok(true)
            })?;
            Ok(runs)
        })
    }

    /// Calls `visit` with each of `stream`'s runs in version order, one block in memory at a
    /// time, until it returns `false`.
    pub(crate) fn visit_runs(
        &self,
        stream: &str,
        mut visit: impl FnMut(StreamRun) -> Result<bool>,
    ) -> Result<()> {
        for entry in self.stream_runs.range((stream, 0)..=(stream, u64::MAX))? {
            let (key, value) = entry?;
            for run in RunBlock::decode_stored(stream, key.value().1, value.value())?.into_runs() {
                if !visit(run)? {
                    return Ok(());
                }
            }
        }
        for run in self
            .tail(stream)?
            .map(RunBlock::into_runs)
            .unwrap_or_default()
        {
            if !visit(run)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// The record at `position`, `None` at or past the head.
    pub fn get(&self, position: Position) -> Result<Option<Record>> {
        if position >= self.head()?.next {
            return Ok(None);
        }
        if position < self.start() {
            return guarded(|| match self.kept_record(position)? {
                Some(record) => Ok(Some(record)),
                None => self.refuse_archived(position).map(|()| None),
            });
        }
        let mut cursor = SegmentCursor::new(self.format);
        guarded(|| cursor.record(&self.segments, position).map(Some))
    }

    /// Records from `from` in `direction`: forward to the head, or backward to the log's
    /// [start](Self::start) (position 0 unless it was cut). Backward from at or past the head
    /// starts at the last record; forward from before the start is
    /// [`ArchiveError::Archived`].
    ///
    /// The segments read must tile the log: the first holds the first record wanted, each
    /// next one starts where the one before ended (backward: ends where it started), the last
    /// ends at the head and none lies past it. Otherwise the iterator yields
    /// [`Error::Corrupt`] naming the first position it needed and did not find, and ends.
    pub fn records(&self, from: Position, direction: Direction) -> Result<Records> {
        guarded(|| {
            let head = self.head()?.next;
            let start = self.start();
            if direction == Direction::Forward && from < head {
                self.refuse_archived(from)?;
            }
            let (range, due) = match direction {
                Direction::Forward if from < head => {
                    let start = match self.segments.range(..=from.0)?.next_back() {
                        Some(entry) => entry?.0.value(),
                        None => from.0,
                    };
                    (self.segments.range(start..)?, Some(from))
                }
                // Nothing is due, but a segment at or past the head means the head is wrong.
                Direction::Forward => (self.segments.range(head.0..)?, None),
                Direction::Backward => {
                    let last = head
                        .0
                        .checked_sub(1)
                        .map(|last| Position(last.min(from.0)))
                        .filter(|last| *last >= start);
                    (self.segments.range(..=from.0)?, last)
                }
            };
            Ok(Records {
                format: self.format,
                range,
                direction,
                head,
                start,
                due,
                started: false,
                loaded: None,
                done: Cell::new(false),
            })
        })
    }

    /// At most `limit` records from `from` in `direction`, collected.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use annals::{Direction, ExpectedVersion, NewEvent, Position, Store};
    /// let store = Store::open(dir.path().join("log.redb"))?;
    /// store.append("s", ExpectedVersion::Any, &[NewEvent::new("k", 1u64, "x")])?;
    /// let records = store.snapshot()?.read_all(Position(0), Direction::Forward, 10)?;
    /// assert_eq!(records.len(), 1);
    /// # Ok::<(), annals::Error>(())
    /// ```
    pub fn read_all(
        &self,
        from: Position,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        self.records(from, direction)?.take(limit).collect()
    }

    /// At most `limit` records of `stream` from version `from` in `direction`, collected.
    pub fn read_stream(
        &self,
        stream: &str,
        from: StreamVersion,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<Record>> {
        self.stream(stream, from, direction)?.take(limit).collect()
    }

    /// Records of `stream` from version `from` in `direction`.
    pub fn stream(
        &self,
        stream: &str,
        from: StreamVersion,
        direction: Direction,
    ) -> Result<StreamRecords<'_>> {
        guarded(|| {
            let tail = self.tail(stream)?;
            // The archived blocks that hold versions from `from` on (forward) or up to it
            // (backward); the tail is read after them (forward) or before them (backward).
            let tail_start = tail.as_ref().map_or(0, RunBlock::first_version);
            let blocks = match direction {
                Direction::Forward if from.0 >= tail_start => None,
                Direction::Forward => {
                    let start = match self
                        .stream_runs
                        .range((stream, 0)..=(stream, from.0))?
                        .next_back()
                    {
                        Some(entry) => entry?.0.value().1,
                        None => from.0,
                    };
                    Some(
                        self.stream_runs
                            .range((stream, start)..(stream, tail_start))?,
                    )
                }
                Direction::Backward => {
                    Some(self.stream_runs.range((stream, 0)..=(stream, from.0))?)
                }
            };
            let tail = tail.filter(|_| direction == Direction::Forward || tail_start <= from.0);
            Ok(StreamRecords {
                snapshot: self,
                stream: stream.to_owned(),
                blocks,
                tail,
                pending: Vec::new(),
                direction,
                from,
                run: None,
                cursor: SegmentCursor::new(self.format),
                done: false,
            })
        })
    }
}

/// Keeps the segment last read, so reading neighbours costs no new lookup.
struct SegmentCursor {
    format: Format,
    /// The segment's first position, its record count and its bytes.
    loaded: Option<(u64, u32, SegmentGuard)>,
}

impl SegmentCursor {
    fn new(format: Format) -> Self {
        SegmentCursor {
            format,
            loaded: None,
        }
    }

    fn record(
        &mut self,
        segments: &ReadOnly<u64, &'static [u8]>,
        position: Position,
    ) -> Result<Record> {
        let reusable = matches!(&self.loaded, Some((first, count, _))
            if *first <= position.0 && position.0 - first < u64::from(*count));
        if !reusable {
            let entry = segments.range(..=position.0)?.next_back().transpose()?;
            let Some((first, guard)) = entry else {
                return Err(missing(position));
            };
            let first = first.value();
            let count = parse_segment(self.format, first, guard.value())?.count();
            self.loaded = Some((first, count, guard));
        }
        let (first, _, guard) = self.loaded.as_ref().expect("loaded above");
        let segment = parse_segment(self.format, *first, guard.value())?;
        let index = position.0 - first;
        let at = u32::try_from(index)
            .ok()
            .and_then(|index| segment.record_at(index))
            .ok_or_else(|| missing(position))?;
        decode_at(guard.value(), &at, position)
    }
}

pub(crate) fn missing(position: Position) -> Error {
    Error::Corrupt {
        position,
        problem: Box::new(Problem::Missing),
    }
}

pub(crate) fn parse_segment(format: Format, first: u64, bytes: &[u8]) -> Result<Segment<'_>> {
    Segment::parse(bytes, format).map_err(|error| Error::Corrupt {
        position: Position(first),
        problem: Box::new(Problem::Segment(error)),
    })
}

/// The record at `at` of the segment `segment` (its bytes), found at `position`, its own hashes
/// checked.
pub(crate) fn decode_at(segment: &[u8], at: &RecordAt, position: Position) -> Result<Record> {
    check_at(segment, at, position).map(|view| view.to_record())
}

/// [`decode_at`], borrowed.
pub(crate) fn check_at<'a>(
    segment: &'a [u8],
    at: &RecordAt,
    position: Position,
) -> Result<RecordView<'a>> {
    parse_at(segment, at, position, RecordHashes::Check)
        .map_err(|error| corrupt_record(position, error))
}

fn corrupt_record(position: Position, error: RecordError) -> Error {
    Error::Corrupt {
        position,
        problem: Box::new(Problem::Record(error)),
    }
}

/// Records of the whole log in one direction. Each item is checked before it is yielded.
pub struct Records {
    format: Format,
    range: Rows<'static, u64, &'static [u8]>,
    direction: Direction,
    /// The snapshot's head: every segment ends at or before it, the last one at it.
    head: Position,
    /// The log's start: backward, nothing before it is due (a cut removed it).
    start: Position,
    /// The position the next segment must hold, `None` once every one due was read.
    due: Option<Position>,
    /// Whether a segment was read: the first may start before the position due, every next
    /// one must start (forward) or end (backward) right at it.
    started: bool,
    /// The segment being read, its digest checked, and what is left to yield of it.
    loaded: Option<LoadedSegment>,
    /// Set after an error: a corrupt segment is reported once and ends the iteration.
    done: Cell<bool>,
}

/// A segment whose digest matched, kept as bytes; records are decoded and checked against
/// their own hashes one per `next`, so a reader that stops early checks no more than it takes.
struct LoadedSegment {
    guard: Guard<'static, &'static [u8]>,
    /// Position and place of each record still to yield, the next one last.
    left: Vec<(Position, RecordAt)>,
}

impl Records {
    /// The position due in the segment holding `first..end`, or where that segment breaks
    /// the tiling: the position due when it leaves a hole or overlaps, the head when it holds
    /// a position at or past it. Forward, a hole is named first (a segment moved past the head
    /// leaves one); backward, a segment past the head is read before anything is due.
    fn due_in(&self, first: u64, end: u64) -> std::result::Result<Position, Position> {
        let Some(due) = self.due else {
            return Err(self.head);
        };
        let fits = match (self.direction, self.started) {
            (_, false) => first <= due.0 && due.0 < end,
            (Direction::Forward, true) => first == due.0,
            (Direction::Backward, true) => end == due.0 + 1,
        };
        let past_head = end > self.head.0;
        match self.direction {
            Direction::Forward if !fits => Err(due),
            Direction::Backward if past_head => Err(self.head),
            _ if past_head => Err(self.head),
            _ if !fits => Err(due),
            _ => Ok(due),
        }
    }

    fn load_next_segment(&mut self) -> Result<bool> {
        let entry = match self.direction {
            Direction::Forward => self.range.next(),
            Direction::Backward => self.range.next_back(),
        };
        let Some(entry) = entry else {
            return match self.due {
                Some(due) => Err(missing(due)),
                None => Ok(false),
            };
        };
        let (first, guard) = entry?;
        let first = first.value();
        let segment = parse_segment(self.format, first, guard.value())?;
        let end = first.saturating_add(u64::from(segment.count()));
        let due = self.due_in(first, end).map_err(|position| Error::Corrupt {
            position,
            problem: Box::new(Problem::OutOfPlace {
                first: Position(first),
                end: Position(end),
            }),
        })?;
        // The digest covers the segment's framing too; when it fails, each record is checked
        // on its own first so the error names the damaged one if there is one.
        if let Some(error) = segment.digest_error() {
            for at in segment.records_at() {
                let position = Position(first + u64::from(at.index));
                check_at(guard.value(), &at, position)?;
            }
            return Err(Error::Corrupt {
                position: Position(first),
                problem: Box::new(Problem::Segment(error)),
            });
        }
        let mut left = self.loaded.take().map(|l| l.left).unwrap_or_default();
        left.clear();
        for at in segment.records_at() {
            let position = Position(first + u64::from(at.index));
            let wanted = match self.direction {
                Direction::Forward => position >= due,
                Direction::Backward => position <= due && position >= self.start,
            };
            if wanted {
                left.push((position, at));
            }
        }
        if self.direction == Direction::Forward {
            left.reverse();
        }
        self.started = true;
        self.due = match self.direction {
            Direction::Forward => Some(Position(end)).filter(|&next| next < self.head),
            Direction::Backward => first
                .checked_sub(1)
                .map(Position)
                .filter(|due| *due >= self.start),
        };
        self.loaded = Some(LoadedSegment { guard, left });
        Ok(true)
    }

    /// The next record, borrowed from the segment it is stored in: the fastest way to read
    /// the log, with the same checks as [`Iterator::next`], which copies it into a [`Record`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// store.append("s", annals::ExpectedVersion::Any, &[annals::NewEvent::new("k", 0, "hi")])?;
    /// let snapshot = store.snapshot()?;
    /// let mut records = snapshot.records(annals::Position(0), annals::Direction::Forward)?;
    /// let mut payload_bytes = 0;
    /// while let Some(record) = records.next_view() {
    ///     payload_bytes += record?.payload.len();
    /// }
    /// assert_eq!(payload_bytes, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn next_view(&mut self) -> Option<Result<RecordView<'_>>> {
        if self.done.get() {
            return None;
        }
        while self.loaded.as_ref().is_none_or(|l| l.left.is_empty()) {
            match guarded(|| self.load_next_segment()) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => {
                    self.done.set(true);
                    return Some(Err(error));
                }
            }
        }
        let (position, at) = self.loaded.as_mut()?.left.pop()?;
        let loaded = self.loaded.as_ref()?;
        // The segment's digest is no check of a record against its own hash: whoever rewrites
        // a payload can recompute the digest to match. So each record's hash is recomputed over
        // its header and payload before it is handed out beside that hash.
        match parse_at(loaded.guard.value(), &at, position, RecordHashes::Check) {
            Ok(view) => Some(Ok(view)),
            Err(error) => {
                // A cell, so the flag can be set while the segment is still borrowed.
                self.done.set(true);
                Some(Err(corrupt_record(position, error)))
            }
        }
    }
}

impl Iterator for Records {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_view()
            .map(|record| record.map(|view| view.to_record()))
    }
}

/// Records of one stream in one direction. Each item is checked before it is yielded, and
/// must belong to the stream at the version the index says.
pub struct StreamRecords<'s> {
    snapshot: &'s Snapshot,
    stream: String,
    /// The archived blocks still to read, in `direction`.
    blocks: Option<Rows<'static, (&'static str, u64), &'static [u8]>>,
    /// The stream's tail, until it is read: after the blocks forward, before them backward.
    tail: Option<RunBlock>,
    /// The runs of the block being read, the next one last.
    pending: Vec<StreamRun>,
    direction: Direction,
    from: StreamVersion,
    /// The run being read: (next position, next version, versions left).
    run: Option<(u64, u64, u64)>,
    cursor: SegmentCursor,
    /// Set after an error, which ends the iteration.
    done: bool,
}

impl StreamRecords<'_> {
    /// The next block of runs in `direction`, `None` past the last.
    fn next_block(&mut self) -> Result<Option<RunBlock>> {
        if self.direction == Direction::Backward
            && let Some(tail) = self.tail.take()
        {
            return Ok(Some(tail));
        }
        let entry = match (&mut self.blocks, self.direction) {
            (Some(blocks), Direction::Forward) => blocks.next(),
            (Some(blocks), Direction::Backward) => blocks.next_back(),
            (None, _) => None,
        };
        match entry {
            Some(entry) => {
                let (key, value) = entry?;
                RunBlock::decode_stored(&self.stream, key.value().1, value.value()).map(Some)
            }
            None => Ok(self.tail.take()),
        }
    }

    fn next_run(&mut self) -> Result<bool> {
        while self.pending.is_empty() {
            let Some(block) = self.next_block()? else {
                return Ok(false);
            };
            self.pending = block.into_runs();
            if self.direction == Direction::Forward {
                self.pending.reverse();
            }
        }
        let Some(StreamRun {
            first_version,
            first_position,
            count,
        }) = self.pending.pop()
        else {
            return Ok(false);
        };
        let last_version = first_version + (count - 1);
        self.run = match self.direction {
            Direction::Forward => {
                let skip = self.from.0.saturating_sub(first_version).min(count);
                Some((first_position + skip, first_version + skip, count - skip))
            }
            Direction::Backward if self.from.0 < first_version => None,
            Direction::Backward => {
                let top = self.from.0.min(last_version);
                let left = top + 1 - first_version;
                Some((first_position + (top - first_version), top, left))
            }
        };
        Ok(true)
    }

    fn step(&mut self) -> Result<Option<Record>> {
        loop {
            match self.run {
                Some((position, version, left)) if left > 0 => {
                    self.run = Some(match self.direction {
                        Direction::Forward => (position + 1, version + 1, left - 1),
                        Direction::Backward => {
                            (position.wrapping_sub(1), version.wrapping_sub(1), left - 1)
                        }
                    });
                    let position = Position(position);
                    self.snapshot.refuse_archived(position)?;
                    let record = self.cursor.record(&self.snapshot.segments, position)?;
                    if record.stream != self.stream || record.version != StreamVersion(version) {
                        return Err(Error::Corrupt {
                            position,
                            problem: Box::new(Problem::StreamIndex {
                                stream: self.stream.clone(),
                                fault: crate::record::problem::StreamIndexFault::Misplaced {
                                    version: StreamVersion(version),
                                    found_stream: record.stream.to_owned(),
                                    found_version: record.version,
                                },
                            }),
                        });
                    }
                    return Ok(Some(record));
                }
                _ => {
                    if !self.next_run()? {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

impl Iterator for StreamRecords<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match guarded(|| self.step()) {
            Ok(record) => record.map(Ok),
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

/// The head from its stored value (sealed), a missing one refused as damage.
fn stored_head(stored: Option<&[u8]>) -> Result<Head> {
    match stored {
        Some(bytes) => decode_head(unseal_meta(HEAD_KEY, bytes)?),
        None => Err(Error::corrupt_meta(
            crate::error::MetaItem::Head,
            crate::error::MetaFault::Missing,
        )),
    }
}
