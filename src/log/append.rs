//! Appending records inside a redb write transaction.
//!
//! [`LogWriter`] validates a whole append before it writes a byte (validate-first), so a
//! refused append leaves the transaction exactly as it found it. It knows no domain.

use std::collections::{BTreeMap, BTreeSet};

use crate::storage::{Readable, Writable, Writer};

use super::merkle::MerkleWriter;
use super::stream_index::{RunBlock, read_tail, tail_key};
use super::tables::{HEAD_KEY, IDEMPOTENCY, META, SEGMENTS, STREAM_COUNT_KEY, STREAM_RUNS};
use super::tables::{seal_idempotency, unseal_idempotency};
use super::{Head, decode_head, decode_stream_count, seal_meta, unseal_meta};
pub(crate) use crate::error::{AppendError, SealProblem};
use crate::error::{Error, Result};
use crate::hash::Digest;
pub use crate::record::ExpectedVersion;
use crate::record::limits::{Field, LimitError, Limits};
use crate::record::segment::{SEGMENT_BYTES_TARGET, Segment, SegmentBuilder};
use crate::record::view::{RecordHashes, parse_at};
use crate::record::{
    Format, NewEvent, Placement, Position, Record, StreamVersion, check_stream, content_hash,
    encode_stored_hashed, header_bytes,
};

/// A segment under this many bytes is small: one left by a commit of a few records, which
/// [`LogWriter`] packs with the small ones after it.
const SMALL_SEGMENT_BYTES: usize = SEGMENT_BYTES_TARGET / 2;

/// Trailing small segments are packed once they hold this many bytes together: enough to fill
/// a segment to its target, so a packed segment fills nearly all of the 64 KiB run of pages
/// redb gives it, and the records past it start the pending segment again.
const MERGE_BYTES: usize = SEGMENT_BYTES_TARGET;

/// The small segments at the log's end: the first one's key and their bytes together. A
/// transaction packs them once they hold [`MERGE_BYTES`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct SmallRun {
    first_key: Option<u64>,
    bytes: usize,
}

impl SmallRun {
    /// The run after a segment of `len` bytes is stored at `key`, past the ones it holds.
    fn then_stored(self, key: u64, len: usize) -> SmallRun {
        if len >= SMALL_SEGMENT_BYTES {
            SmallRun::default()
        } else {
            SmallRun {
                first_key: self.first_key.or(Some(key)),
                bytes: self.bytes + len,
            }
        }
    }
}

/// The log's trailing small segments packed anew, before they replace the ones they came from.
struct Repacked {
    /// The keys of the segments taken, from the first small one to the log's end.
    taken: Vec<u64>,
    /// The packed segments, each under its first record's position.
    pieces: Vec<(u64, Vec<u8>)>,
    /// The records after the last packed segment, not yet stored, and the first one's position.
    pending: SegmentBuilder,
    pending_first: Position,
}

/// The log's end as a transaction left it: the head's next position and the small segments
/// before it.
///
/// A store keeps the one its last commit left and hands it to the next transaction: when the
/// head has not moved since (no other commit came between), that transaction knows whether to
/// pack the small segments without walking them back from the end, which after single commits
/// means up to a few hundred segments read per commit. Only a [`LogWriter`] writes segments,
/// and every transaction that does moves the head, so a log end whose position is the head's
/// describes the log; debug builds walk the segments anyway and check that it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LogEnd {
    next: Position,
    small_run: SmallRun,
}

/// The most bytes a record can take stored, in either format: the header's size from its
/// fixed-width fields and its strings (schema/FORMAT.md 1.1), with the hash before it.
fn stored_bytes_max(stream: &str, kind: &str, key: Option<&str>, payload: &[u8]) -> usize {
    32 + 128 + stream.len() + kind.len() + key.map_or(0, str::len) + payload.len()
}

/// What a successful append did. Its serde form is the Node package's outcome: `appended` with
/// the [`Appended`] fields, or `duplicate` with the positions.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum AppendOutcome {
    /// The events were written, contiguously.
    Appended(Appended),
    /// Every event was a duplicate of an earlier one (same idempotency key, same content):
    /// nothing was written. The earlier positions, in the order of the events.
    Duplicate {
        /// Where each event already is.
        positions: Vec<Position>,
    },
}

impl AppendOutcome {
    /// The position of the first event, written now or earlier.
    pub fn first_position(&self) -> Position {
        match self {
            AppendOutcome::Appended(appended) => appended.first_position,
            AppendOutcome::Duplicate { positions } => positions[0],
        }
    }
}

/// The records an append wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[must_use]
pub struct Appended {
    /// Position of the first record written.
    pub first_position: Position,
    /// Stream version of the first record written.
    pub first_version: StreamVersion,
    /// How many records were written.
    pub count: u64,
    /// The head after the append.
    pub head: Head,
}

/// The log's tables opened in one write transaction.
///
/// Appends within one transaction share segments, and the head and stream count are written
/// once: [`LogWriter::finish`] writes what is pending and must run before the commit.
pub(crate) struct LogWriter<'txn> {
    /// The transaction, for the log's start (`cut::start_in`) when the end is walked.
    txn: &'txn Writer<'txn>,
    /// The file's format, which every record written takes.
    format: Format,
    meta: Writable<'txn, &'static str, &'static [u8]>,
    segments: Writable<'txn, u64, &'static [u8]>,
    stream_runs: Writable<'txn, (&'static str, u64), &'static [u8]>,
    idempotency: Writable<'txn, &'static str, [u8; super::tables::IDEMPOTENCY_VALUE_BYTES]>,
    head: Head,
    /// The streams holding a record, this transaction's new ones included, and as stored.
    stream_count: u64,
    stream_count_stored: u64,
    /// Whether this transaction appended anything: the head is then written at `finish`.
    appended: bool,
    /// The head's next position when the transaction began, and the records written since:
    /// the head `finish` writes must be exactly that many past it.
    opened_next: Position,
    written: u64,
    /// This transaction's records not yet in a stored segment, and the first one's position:
    /// after [`Self::pack_trailing_segments`], the records of the segments it took come first.
    segment: SegmentBuilder,
    segment_first: Position,
    /// Whether the log's trailing segments were considered for packing (once per transaction).
    packing_considered: bool,
    merkle: MerkleWriter<'txn>,
    /// The log's end as the last commit left it, if the caller knows it.
    known_end: Option<LogEnd>,
    /// The small segments at the log's end as this transaction has left it so far, once
    /// [`Self::pack_trailing_segments`] has learnt them.
    small_run: Option<SmallRun>,
    /// The tail of every stream this transaction appended to, as it stands now: an append
    /// changes it here, and `finish` writes each once, in key order. A transaction of many
    /// appends to one stream then writes its tail once instead of once per append.
    tails: BTreeMap<String, RunBlock>,
}

impl<'txn> LogWriter<'txn> {
    /// Opens the log's tables in `txn` and reads the head, given the log's end as the last
    /// commit left it if the caller knows it ([`Self::finish`] returns it): it is used only if
    /// the head is still where that commit left it.
    pub(crate) fn open_after(txn: &'txn Writer<'txn>, known_end: Option<LogEnd>) -> Result<Self> {
        let meta = META.write(txn)?;
        let (head, merkle) = match meta.get(HEAD_KEY)? {
            Some(bytes) => {
                let value = unseal_meta(HEAD_KEY, bytes.value())?;
                let head = decode_head(value)?;
                (head, MerkleWriter::open(txn, value, head.next.0)?)
            }
            None => {
                return Err(Error::corrupt_meta(
                    crate::error::MetaItem::Head,
                    crate::error::MetaFault::Missing,
                ));
            }
        };
        let stream_count = match meta.get(STREAM_COUNT_KEY)? {
            Some(bytes) => decode_stream_count(unseal_meta(STREAM_COUNT_KEY, bytes.value())?)?,
            None => {
                return Err(Error::corrupt_meta(
                    crate::error::MetaItem::StreamCount,
                    crate::error::MetaFault::Missing,
                ));
            }
        };
        let format = super::read_format(&meta)?;
        Ok(LogWriter {
            txn,
            format,
            merkle,
            meta,
            segments: SEGMENTS.write(txn)?,
            stream_runs: STREAM_RUNS.write(txn)?,
            idempotency: IDEMPOTENCY.write(txn)?,
            head,
            stream_count,
            stream_count_stored: stream_count,
            appended: false,
            opened_next: head.next,
            written: 0,
            segment: SegmentBuilder::with_format(format),
            packing_considered: false,
            segment_first: head.next,
            known_end: known_end.filter(|end| end.next == head.next),
            small_run: None,
            tails: BTreeMap::new(),
        })
    }

    /// Writes the records still pending in a segment, the head and the stream count. Runs once,
    /// last, before the transaction commits: without it, the transaction's appends are lost.
    /// Returns the log's end as the commit will leave it, for the next transaction's
    /// [`Self::open_after`], when this transaction knows it.
    pub(crate) fn finish(mut self) -> Result<Option<LogEnd>> {
        if !self.appended {
            debug_assert!(self.segment.is_empty());
            return Ok(self.known_end);
        }
        // Every record written since the open moved the head by one, and the pending segment
        // ends at the head: what is stored is the records written, no more, no fewer.
        assert_eq!(
            self.head.next.0,
            self.opened_next.0 + self.written,
            "the head moves by the {} records written since position {}",
            self.written,
            self.opened_next
        );
        self.store_segment()?;
        for (stream, tail) in &self.tails {
            let key = tail_key(stream);
            self.meta.insert(
                key.as_str(),
                seal_meta(&key, &tail.encode_tail()).as_slice(),
            )?;
        }
        let head = seal_meta(HEAD_KEY, &self.merkle.head_bytes(self.head));
        self.meta.insert(HEAD_KEY, head.as_slice())?;
        if self.stream_count != self.stream_count_stored {
            let count = seal_meta(STREAM_COUNT_KEY, &self.stream_count.to_le_bytes());
            self.meta.insert(STREAM_COUNT_KEY, count.as_slice())?;
        }
        let next = self.head.next;
        Ok(self.small_run.map(|small_run| LogEnd { next, small_run }))
    }

    /// Stores the pending segment, if any; the next record starts a new one.
    fn store_segment(&mut self) -> Result<()> {
        assert_eq!(
            self.segment_first.0 + u64::from(self.segment.len()),
            self.head.next.0,
            "the pending segment ends at the head"
        );
        self.insert_pending_segment()?;
        assert_eq!(self.segment_first, self.head.next);
        Ok(())
    }

    /// Inserts the records of the pending segment as one segment or several consecutive ones
    /// (`SegmentBuilder::finish_pieces`), from `segment_first` on, which it advances past them.
    fn insert_pending_segment(&mut self) -> Result<()> {
        for (count, bytes) in self.segment.finish_pieces() {
            self.segments
                .insert(self.segment_first.0, bytes.as_slice())?;
            self.note_stored(self.segment_first.0, bytes.len());
            self.segment_first = Position(self.segment_first.0 + u64::from(count));
        }
        Ok(())
    }

    /// Follows the small segments at the log's end past a segment stored at `key`.
    fn note_stored(&mut self, key: u64, len: usize) {
        self.small_run = self.small_run.map(|run| run.then_stored(key, len));
    }

    /// The small segments at the log's end, read back from it: the walk stops at the first
    /// segment that is not small, or at the log's start.
    fn walk_small_run(&self) -> Result<SmallRun> {
        let mut run = SmallRun::default();
        // Segments below a cut log's start are never part of it: a cut leaves them for the
        // steps that finish it, which remove them without moving the head, so no log end any
        // store keeps may name one.
        let (start, _) = super::cut::start_in(self.txn)?;
        for entry in self.segments.range::<u64>(start.0..)?.rev() {
            let (key, value) = entry?;
            if value.value().len() >= SMALL_SEGMENT_BYTES {
                break;
            }
            run.bytes += value.value().len();
            run.first_key = Some(key.value());
        }
        Ok(run)
    }

    /// Before the transaction's first record: when the log ends in small segments holding at
    /// least [`MERGE_BYTES`] together, takes their records back into the pending segment, so
    /// that they are stored again packed (in as many segments as they fill), followed by this
    /// transaction's records.
    ///
    /// Single commits leave a segment each: a small one shares a leaf page with its
    /// neighbours' leftover room and carries its own digest and length table, and a large one
    /// takes a power-of-two run of pages of its own, up to half of it empty. Packing them into
    /// segments near [`SEGMENT_BYTES_TARGET`] once they fill one gives a log written by single
    /// commits the layout of a bulk load, for each record written about twice: a commit still
    /// writes only its own small segment, and one in many also the packed one. Segments whose
    /// bytes do not parse, whose digest does not match, whose records do not check, or that do
    /// not tile the log's end are left as they are (verification names them), never re-sealed.
    fn pack_trailing_segments(&mut self) -> Result<()> {
        self.packing_considered = true;
        debug_assert!(self.segment.is_empty() && self.segment_first == self.head.next);
        // Every trailing small segment is taken, so none is left behind a packed one; they are
        // packed as soon as they reach `MERGE_BYTES`, which bounds this walk. Most commits
        // pack nothing, so the walk reads lengths only, and copies only when it packs.
        let run = match self.known_end {
            Some(end) => {
                #[cfg(debug_assertions)]
                assert_eq!(
                    end.small_run,
                    self.walk_small_run()?,
                    "the log's end as the last commit left it, at position {}",
                    end.next
                );
                end.small_run
            }
            None => self.walk_small_run()?,
        };
        self.small_run = Some(run);
        let Some(first_key) = run.first_key.filter(|_| run.bytes >= MERGE_BYTES) else {
            return Ok(());
        };
        match self.repack_from(first_key)? {
            Some(repacked) => self.replace_trailing(repacked),
            None => Ok(()),
        }
    }

    /// The records of the segments from `first_key` to the log's end packed anew, `None` when
    /// one of them is unsound or they do not tile the log's end (left for verify to name).
    fn repack_from(&self, first_key: u64) -> Result<Option<Repacked>> {
        let mut trailing: Vec<(u64, Vec<u8>)> = Vec::new();
        for entry in self.segments.range(first_key..)? {
            let (key, value) = entry?;
            trailing.push((key.value(), value.value().to_vec()));
        }
        // The walk found the first small segment at `first_key`: it starts the ones taken.
        let Some(&(start, _)) = trailing.first() else {
            return Ok(None);
        };
        let mut pending = SegmentBuilder::with_format(self.format);
        let mut pending_first = start;
        let mut pieces: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut next = start;
        for (key, bytes) in &trailing {
            let Some(segment) = Segment::parse_sound(bytes, self.format) else {
                return Ok(None);
            };
            if *key != next {
                return Ok(None);
            }
            for at in segment.records_at() {
                let Ok(record) = parse_at(bytes, &at, Position(next), RecordHashes::Check) else {
                    return Ok(None);
                };
                let stored = &bytes[at.span.clone()];
                if pending.is_full_for(stored_bytes_max(
                    record.stream,
                    record.kind,
                    record.idempotency_key,
                    record.payload,
                )) {
                    let count = pending.len();
                    pieces.push((pending_first, pending.finish()));
                    pending_first += u64::from(count);
                }
                pending.push_stored(&record, stored);
                next += 1;
            }
        }
        if next != self.head.next.0 {
            return Ok(None);
        }
        // The packed segments and the pending one hold exactly the records taken.
        assert_eq!(
            pending_first + u64::from(pending.len()),
            next,
            "the segments packed from position {start} end at the head"
        );
        let taken = trailing.into_iter().map(|(key, _)| key).collect();
        Ok(Some(Repacked {
            taken,
            pieces,
            pending,
            pending_first: Position(pending_first),
        }))
    }

    /// Replaces the trailing segments `repacked` took by its packed ones; the records of its
    /// last, partly filled one wait in the pending segment for this transaction's records.
    fn replace_trailing(&mut self, repacked: Repacked) -> Result<()> {
        for key in &repacked.taken {
            self.segments.remove(key)?;
        }
        // The segments before the first one taken are not small (or there are none).
        self.small_run = Some(SmallRun::default());
        for (key, bytes) in &repacked.pieces {
            self.segments.insert(key, bytes.as_slice())?;
            self.note_stored(*key, bytes.len());
        }
        self.segment = repacked.pending;
        self.segment_first = repacked.pending_first;
        assert_eq!(
            self.segment_first.0 + u64::from(self.segment.len()),
            self.head.next.0,
            "after packing, the pending segment ends at the head"
        );
        Ok(())
    }

    /// Readies the log's end for a cut before `before`, made in this transaction: the segments
    /// below it stay until the cut is finished in steps of their own (`cut::finish_step`), and
    /// the log's end is learnt again by the next append, whose walk back stops at the new
    /// start. Runs before anything is appended in the transaction.
    pub(crate) fn cut_before(&mut self, before: Position) {
        assert!(
            !self.appended && self.segment.is_empty(),
            "a cut comes before the transaction appends"
        );
        assert!(before <= self.head.next, "a cut lies within the log");
        self.known_end = None;
        self.small_run = None;
    }

    /// Drops the idempotency key of every record before `before`, for a cut that drops them:
    /// a key used again later is a new append, not a duplicate. A value whose checksum fails
    /// is left for `verify` to name.
    pub(crate) fn drop_keys_before(&mut self, before: Position) -> Result<()> {
        self.idempotency.retain(|key, stored| {
            unseal_idempotency(key, &stored).map_or(true, |(position, _)| position >= before.0)
        })?;
        Ok(())
    }

    /// The head as of this transaction, including its appends so far.
    pub(crate) fn head(&self) -> Head {
        self.head
    }

    /// Appends `events` to `stream` if it is in the `expected` state, pushing the records
    /// written onto `records`. Everything is checked before anything is written: on `Err`,
    /// the transaction is unchanged.
    pub(crate) fn append(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
        limits: &Limits,
        records: &mut Vec<Record>,
    ) -> Result<AppendOutcome> {
        check_append(stream, events, limits)?;
        if let Some(positions) = self.duplicates(stream, events)? {
            return Ok(AppendOutcome::Duplicate { positions });
        }
        let tail = self.tail(stream)?;
        let count = tail.as_ref().map_or(0, RunBlock::end_version);
        let current = count.checked_sub(1).map(StreamVersion);
        check_expected(stream, expected, current)?;
        let added = events.len() as u64;
        let first_position = self.head.next;
        if first_position.0.checked_add(added).is_none() {
            return Err(AppendError::LogFull.into());
        }
        self.write(stream, tail, events, records)?;
        Ok(AppendOutcome::Appended(Appended {
            first_position,
            first_version: StreamVersion(count),
            count: added,
            head: self.head,
        }))
    }

    /// Appends records sealed elsewhere (an import) verbatim, pushing the records written onto
    /// `written`. They must be one stream's, continue the head (position and `prev`) and the
    /// stream's versions, and carry no idempotency key already used; re-encoded here, each must
    /// hash as it did. Checked before anything is written, except the hashes: on `Err`, abort
    /// the transaction.
    pub(crate) fn append_sealed(
        &mut self,
        records: &[Record],
        written: &mut Vec<Record>,
    ) -> Result<()> {
        let Some(first) = records.first() else {
            return Err(AppendError::NoEvents.into());
        };
        let stream = first.stream.as_str();
        let tail = self.tail(stream)?;
        let count = tail.as_ref().map_or(0, RunBlock::end_version);
        self.check_sealed_continue(stream, count, records)?;
        let events: Vec<NewEvent> = records
            .iter()
            .map(|record| NewEvent {
                kind: record.kind.clone(),
                schema: record.schema,
                at_ms: record.at_ms,
                idempotency_key: record.idempotency_key.clone(),
                payload: record.payload.clone(),
            })
            .collect();
        let start = written.len();
        self.write(stream, tail, &events, written)?;
        check_rehashed(&written[start..], records)
    }

    /// Refuses sealed `records` that do not continue the log and `stream`, which holds
    /// `count` records: each must be the stream's, at the next position and version, with an
    /// idempotency key not used before, and the first must chain to the head.
    fn check_sealed_continue(&self, stream: &str, count: u64, records: &[Record]) -> Result<()> {
        let mut keys = BTreeSet::new();
        for (offset, record) in (0u64..).zip(records) {
            let refuse = |problem: SealProblem| -> Result<()> {
                Err(AppendError::NotSealable {
                    position: record.position,
                    problem,
                }
                .into())
            };
            if record.stream != stream {
                return refuse(SealProblem::OtherStream {
                    stream: record.stream.clone(),
                    run: stream.to_owned(),
                });
            }
            if Some(record.position.0) != self.head.next.0.checked_add(offset) {
                return refuse(SealProblem::Position {
                    next: Position(self.head.next.0 + offset),
                });
            }
            // A damaged tail can end near 2^64: the sum is checked, not trusted to fit.
            let next_version = count.checked_add(offset);
            if Some(record.version.0) != next_version {
                return refuse(match next_version {
                    Some(next) => SealProblem::Version { next },
                    None => SealProblem::VersionOverflow,
                });
            }
            if let Some(key) = record.idempotency_key.as_deref()
                && (!keys.insert(key) || self.idempotency.get(key)?.is_some())
            {
                return refuse(SealProblem::KeyUsed {
                    key: key.to_owned(),
                });
            }
        }
        match records.first() {
            Some(first) if first.prev != self.head.hash => Err(AppendError::NotSealable {
                position: first.position,
                problem: SealProblem::Prev {
                    prev: first.prev,
                    head: self.head.hash,
                },
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// `stream`'s tail as of this transaction's appends so far, `None` if it holds no record.
    fn tail(&self, stream: &str) -> Result<Option<RunBlock>> {
        match self.tails.get(stream) {
            Some(tail) => Ok(Some(tail.clone())),
            None => read_tail(&self.meta, stream),
        }
    }

    /// The root of the Merkle tree of every record, including this transaction's.
    pub(crate) fn merkle_root(&self) -> Digest {
        self.merkle.root()
    }

    /// The position of the record appended with idempotency `key`, this transaction's
    /// appends included.
    pub(crate) fn idempotency_position(&self, key: &str) -> Result<Option<Position>> {
        match self.idempotency.get(key)? {
            Some(found) => Ok(Some(Position(unseal_idempotency(key, &found.value())?.0))),
            None => Ok(None),
        }
    }

    /// `Some(positions)` when every event is a duplicate, `None` when none is; an error for a
    /// conflict or a mix of duplicate and new events.
    fn duplicates(&self, stream: &str, events: &[NewEvent]) -> Result<Option<Vec<Position>>> {
        duplicates(&self.idempotency, stream, events)
    }

    /// Writes `events` as the records after `tail`, the stream's tail of runs, whose end the
    /// caller checked the expected version against. The tail is extended before any byte is
    /// written: a tail the file damaged (a run past the head) refuses the append as
    /// `Error::CorruptMeta` with the transaction unchanged.
    fn write(
        &mut self,
        stream: &str,
        tail: Option<RunBlock>,
        events: &[NewEvent],
        records: &mut Vec<Record>,
    ) -> Result<()> {
        let mut tail = tail.unwrap_or_else(RunBlock::empty);
        let first_version = StreamVersion(tail.end_version());
        let first_position = self.head.next;
        let added = events.len() as u64;
        let records_before = records.len();
        // The records go at the head, so the tail must end at or before it (checked by
        // `push`) and then end where the stream's new length says.
        let archived = tail.push(stream, first_position.0, added)?;
        assert_eq!(
            tail.end_version(),
            first_version.0 + added,
            "the tail of {stream:?} ends at the stream's length after {added} records"
        );
        let mut prev = self.head.hash;
        for (offset, event) in (0u64..).zip(events) {
            let placement = Placement {
                stream,
                position: Position(first_position.0 + offset),
                version: StreamVersion(first_version.0 + offset),
                prev,
            };
            let record = self.write_record(event, placement)?;
            prev = record.hash;
            records.push(record);
        }
        self.note_written(stream, tail, archived, first_version)?;
        self.head = Head {
            next: Position(first_position.0 + added),
            hash: prev,
        };
        self.written += added;
        self.appended = true;
        // Each event became one record, and the pending segment still ends at the new head.
        debug_assert_eq!(records.len() - records_before, events.len());
        debug_assert_eq!(
            self.segment_first.0 + u64::from(self.segment.len()),
            self.head.next.0,
            "the pending segment ends at the head after an append"
        );
        Ok(())
    }

    /// Writes one record at `placement` into the pending segment (storing the segment first
    /// when the record would overfill it), the Merkle tree and the index of idempotency keys.
    fn write_record(&mut self, event: &NewEvent, placement: Placement<'_>) -> Result<Record> {
        let Placement {
            stream,
            position,
            version,
            prev,
        } = placement;
        let stored_bytes_estimate = stored_bytes_max(
            stream,
            &event.kind,
            event.idempotency_key.as_deref(),
            &event.payload,
        );
        if !self.packing_considered {
            self.pack_trailing_segments()?;
        }
        if self.segment.is_full_for(stored_bytes_estimate) {
            self.insert_pending_segment()?;
            assert_eq!(self.segment_first, position);
        }
        // The record goes right after the pending segment's last one.
        debug_assert_eq!(
            self.segment_first.0 + u64::from(self.segment.len()),
            position.0,
            "the record at position {position} follows the pending segment"
        );
        let payload_hash = crate::hash::payload_hash(&event.payload);
        let body_before = self.segment.body_mut().len();
        let hash = self.encode_into_segment(event, placement, payload_hash)?;
        // Segments stay within their byte target only if the estimate never falls short.
        let stored_bytes = self.segment.body_mut().len() - body_before;
        assert!(
            stored_bytes <= stored_bytes_estimate,
            "the record at position {position} is {stored_bytes} bytes stored, over its \
             estimate of {stored_bytes_estimate}"
        );
        self.merkle.push(hash)?;
        if let Some(key) = event.idempotency_key.as_deref() {
            let content = content_hash(stream, &event.kind, payload_hash);
            self.idempotency
                .insert(key, seal_idempotency(key, position.0, &content.0))?;
        }
        Ok(Record {
            position,
            stream: stream.to_owned(),
            version,
            kind: event.kind.clone(),
            schema: event.schema,
            at_ms: event.at_ms,
            idempotency_key: event.idempotency_key.clone(),
            payload: event.payload.clone(),
            payload_hash,
            prev,
            hash,
        })
    }

    /// Encodes `event` at `placement` as the pending segment's next record, in the file's
    /// format; its hash.
    fn encode_into_segment(
        &mut self,
        event: &NewEvent,
        placement: Placement<'_>,
        payload_hash: Digest,
    ) -> Result<Digest> {
        let records_before = self.segment.len();
        let hash = match self.format {
            Format::V1 => {
                let hash =
                    encode_stored_hashed(self.segment.body_mut(), event, placement, payload_hash)?;
                self.segment.seal_record();
                hash
            }
            Format::V2 => {
                let header = header_bytes(event, placement, payload_hash)?;
                let hash = crate::hash::record_hash(&header);
                let Placement {
                    stream,
                    version,
                    prev,
                    ..
                } = placement;
                self.segment.push_v2(prev, hash, stream, version.0, event);
                hash
            }
        };
        assert_eq!(
            self.segment.len(),
            records_before + 1,
            "the pending segment holds one record more"
        );
        Ok(hash)
    }

    /// After an append of `stream`'s records from `first_version` on: stores the run its tail
    /// filled (`archived`), keeps the new tail for `finish`, and counts a new stream.
    fn note_written(
        &mut self,
        stream: &str,
        tail: RunBlock,
        archived: Option<RunBlock>,
        first_version: StreamVersion,
    ) -> Result<()> {
        if let Some(full) = archived {
            self.stream_runs.insert(
                (stream, full.first_version()),
                full.encode_stored(stream).as_slice(),
            )?;
        }
        match self.tails.get_mut(stream) {
            Some(pending) => *pending = tail,
            None => {
                self.tails.insert(stream.to_owned(), tail);
            }
        }
        if first_version.0 == 0 {
            self.stream_count += 1;
        }
        Ok(())
    }
}

/// Refuses an import whose records, re-encoded here as `written`, do not hash as `records`
/// say they did.
fn check_rehashed(written: &[Record], records: &[Record]) -> Result<()> {
    debug_assert_eq!(
        written.len(),
        records.len(),
        "one record written per sealed one"
    );
    for (new, record) in written.iter().zip(records) {
        if new.hash != record.hash {
            return Err(AppendError::NotSealable {
                position: record.position,
                problem: SealProblem::Rehash {
                    hash: new.hash,
                    recorded: record.hash,
                },
            }
            .into());
        }
    }
    Ok(())
}

fn event_content_hash(stream: &str, event: &NewEvent) -> Digest {
    content_hash(
        stream,
        &event.kind,
        crate::hash::payload_hash(&event.payload),
    )
}

/// `Some(positions)` when every event is a duplicate of a record `idempotency` (the log's
/// index of keys, in a write transaction or a read of a commit) names, `None` when none is;
/// an error for a conflict or a mix of duplicate and new events. One decision for the append
/// and for the read-only look that refuses one before the log is opened writable.
pub(crate) fn duplicates(
    idempotency: &impl Readable<&'static str, [u8; super::tables::IDEMPOTENCY_VALUE_BYTES]>,
    stream: &str,
    events: &[NewEvent],
) -> Result<Option<Vec<Position>>> {
    let mut positions = Vec::new();
    let mut first_duplicate = None;
    for event in events {
        let Some(key) = event.idempotency_key.as_deref() else {
            continue;
        };
        let Some(found) = idempotency.get(key)? else {
            continue;
        };
        let (position, content) = unseal_idempotency(key, &found.value())?;
        let position = Position(position);
        if Digest(content) != event_content_hash(stream, event) {
            return Err(AppendError::Conflict {
                key: key.to_owned(),
                position,
            }
            .into());
        }
        first_duplicate.get_or_insert((key, position));
        positions.push(position);
    }
    match first_duplicate {
        None => Ok(None),
        Some(_) if positions.len() == events.len() => Ok(Some(positions)),
        Some((key, position)) => Err(AppendError::PartialDuplicate {
            key: key.to_owned(),
            position,
        }
        .into()),
    }
}

/// Refuses an append to `stream`, whose last version is `current`, that expected it in
/// another state.
pub(crate) fn check_expected(
    stream: &str,
    expected: ExpectedVersion,
    current: Option<StreamVersion>,
) -> Result<(), AppendError> {
    let matches = match expected {
        ExpectedVersion::Any => true,
        ExpectedVersion::NoStream => current.is_none(),
        ExpectedVersion::StreamExists => current.is_some(),
        ExpectedVersion::Exact(version) => current == Some(version),
    };
    match matches {
        true => Ok(()),
        false => Err(AppendError::WrongExpectedVersion {
            stream: stream.to_owned(),
            expected,
            current,
        }),
    }
}

/// Checks an append's shape and every limit of `limits`, before anything is read or written:
/// what [`Store::append`] would refuse without reading the log (no events, too many, a
/// stream name or field over its limit), refused the same way. A tool checks with it before
/// it opens (or creates) a log file writable.
///
/// ```
/// let event = annals::NewEvent::new("deploy.started", 1, b"{}".to_vec());
/// assert!(annals::log::check_append("deploy/web", &[event], &annals::log::Limits::DEFAULT).is_ok());
/// assert!(annals::log::check_append("deploy/web", &[], &annals::log::Limits::DEFAULT).is_err());
/// ```
///
/// [`Store::append`]: crate::Store::append
pub fn check_append(stream: &str, events: &[NewEvent], limits: &Limits) -> Result<(), AppendError> {
    if events.is_empty() {
        return Err(AppendError::NoEvents);
    }
    if events.len() as u64 > u64::from(limits.events_per_append_max) {
        return Err(LimitError::TooMany {
            field: Field::EventsPerAppend,
            count: events.len() as u64,
            max: u64::from(limits.events_per_append_max),
        }
        .into());
    }
    check_stream(stream, limits)?;
    let mut payload_bytes = 0u64;
    let mut keys = BTreeSet::new();
    for event in events {
        event.check(limits)?;
        payload_bytes += event.payload.len() as u64;
        if let Some(key) = event.idempotency_key.as_deref()
            && !keys.insert(key)
        {
            return Err(AppendError::RepeatedKey {
                key: key.to_owned(),
            });
        }
    }
    if payload_bytes > limits.append_payload_bytes_max {
        return Err(LimitError::TooLong {
            field: Field::AppendPayload,
            len: payload_bytes,
            max: limits.append_payload_bytes_max,
        }
        .into());
    }
    Ok(())
}
