//! Cuts: a prefix of the log written to an archive file and removed from the live log, with
//! what later work needs kept (`schema/FORMAT.md`, "Cuts").
//!
//! A cut before position `C` keeps the hash of every archived record in [`ARCHIVED`] (so the
//! Merkle tree's nodes below level [`MERKLE_STORED_LEVEL_MIN`] over archived leaves can still
//! be computed, for inclusion proofs beside the cut and consistency proofs from any earlier
//! size), the stream index and the idempotency index whole, and each projection's tables as
//! of `C` (the snapshot, under [`SNAPSHOT_PREFIX`]). The cut itself is a record of the log:
//! kind [`CUT_KIND`] on stream [`CUT_STREAM`], its payload the encoded [`Cut`], also kept in
//! [`CUTS`] under the record's position, so that verify can tell a cut the log made from a
//! record that only claims to be one.

use super::checksum::{seal, unseal};
use super::tables::MERKLE_STORED_LEVEL_MIN;
use crate::error::{ArchiveError, Error, Result};
use crate::hash::Digest;
use crate::record::Position;
use crate::record::problem::Problem;
use crate::storage::{Definition, ReadIn, Readable, Writer};

/// `annals.cuts`: position of a cut record → its payload (an encoded [`Cut`]) ‖ checksum.
/// Absent from a log that was never cut.
pub(crate) const CUTS: Definition<u64, &[u8]> = Definition::new(CUTS_NAME);

/// The name of [`CUTS`], which its values' checksums cover.
pub(crate) const CUTS_NAME: &str = "annals.cuts";

/// `annals.archived`: block `b` → the record hashes of positions `16·b ..` below the cut (16
/// of them, fewer in the block the cut falls in), 32 bytes each ‖ checksum. A block is the
/// leaves of one subtree of [`MERKLE_STORED_LEVEL_MIN`], the lowest level stored.
pub(crate) const ARCHIVED: Definition<u64, &[u8]> = Definition::new(ARCHIVED_NAME);

/// The name of [`ARCHIVED`], which its values' checksums cover.
pub(crate) const ARCHIVED_NAME: &str = "annals.archived";

/// `annals.kept`: position → the v1 stored form of an archived record a projection's rows
/// still point at (a run's span events), so that its queries read it back after the cut. Its
/// own hash, checked against the one [`ARCHIVED`] keeps, guards it. An empty value is a
/// record still in its segment: a cut commits before it moves the records it keeps out of the
/// segments it removes ([`finish_step`]).
pub(crate) const KEPT: Definition<u64, &[u8]> = Definition::new("annals.kept");

/// Record hashes per [`ARCHIVED`] block.
pub(crate) const ARCHIVED_BLOCK_RECORDS: u64 = 1 << MERKLE_STORED_LEVEL_MIN;

/// The kind of a cut record. Raw appends of it are refused.
pub(crate) const CUT_KIND: &str = "annals.cut";

/// The stream cut records go to.
pub(crate) const CUT_STREAM: &str = "annals.cuts";

/// The prefix of the snapshot's tables: projection table `<t>` as of the last cut is
/// `annals.cut/<t>`, its rows the live table's bytes (sealed under the name `<t>`).
pub(crate) const SNAPSHOT_PREFIX: &str = "annals.cut/";

/// A projection's state as of a cut.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CutProjection {
    /// The projection's name.
    pub name: String,
    /// Its version when the snapshot was taken.
    pub version: u32,
    /// The digest of its tables as of the cut (`projection::digest`).
    pub digest: Digest,
}

/// What a cut record says: which records went to which archive, the chain's anchor, and the
/// projections' state where the retained records start.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Cut {
    /// The first position archived: the previous cut's, or 0.
    pub from: Position,
    /// The first position kept: every record before it is archived.
    pub before: Position,
    /// The hash of the record at `before - 1` (zero when `before` is 0): the `prev` of the
    /// first record kept.
    pub anchor: Digest,
    /// How many records before `before` carry an idempotency key (their keys stay indexed).
    pub keyed: u64,
    /// The archive file's name (without its folder).
    pub archive: String,
    /// blake3 of the archive file's bytes.
    pub archive_digest: Digest,
    /// Every projection's state as of `before`, in name order.
    pub projections: Vec<CutProjection>,
}

/// The cut record's payload version this code writes.
const CUT_PAYLOAD_VERSION: u8 = 1;

impl Cut {
    /// Refuses a replay from this cut's snapshot of projection `name` at `version` when the
    /// cut took no snapshot of it at that version: its state before the cut is only in the
    /// archives.
    pub(crate) fn require_snapshot(&self, name: &str, version: u32) -> Result<()> {
        let kept = self
            .projections
            .iter()
            .any(|kept| kept.name == name && kept.version == version);
        if kept {
            Ok(())
        } else {
            Err(ArchiveError::NotInCut {
                projection: name.to_owned(),
                before: self.before,
            }
            .into())
        }
    }

    /// The cut record's payload: `u8 version (1) ‖ u64 from ‖ u64 before ‖ anchor ‖ u64 keyed
    /// ‖ u16 len ‖ archive name ‖ archive digest ‖ u32 count ‖ per projection: u16 len ‖
    /// name ‖ u32 version ‖ digest`, integers little-endian.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(
            self.from <= self.before,
            "a cut's range ends at or after it starts"
        );
        let mut out = Vec::with_capacity(128 + self.projections.len() * 64);
        out.push(CUT_PAYLOAD_VERSION);
        out.extend_from_slice(&self.from.0.to_le_bytes());
        out.extend_from_slice(&self.before.0.to_le_bytes());
        out.extend_from_slice(self.anchor.as_bytes());
        out.extend_from_slice(&self.keyed.to_le_bytes());
        push_name(&mut out, &self.archive);
        out.extend_from_slice(self.archive_digest.as_bytes());
        out.extend_from_slice(&(self.projections.len() as u32).to_le_bytes());
        for projection in &self.projections {
            push_name(&mut out, &projection.name);
            out.extend_from_slice(&projection.version.to_le_bytes());
            out.extend_from_slice(projection.digest.as_bytes());
        }
        out
    }

    /// The cut in a cut record's payload, `Err` naming what does not decode.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Cut, &'static str> {
        let mut input = Input(bytes);
        if input.take(1)? != [CUT_PAYLOAD_VERSION] {
            return Err("its payload version is not 1");
        }
        let from = Position(input.u64()?);
        let before = Position(input.u64()?);
        if before < from {
            return Err("its range ends before it starts");
        }
        let anchor = input.digest()?;
        let keyed = input.u64()?;
        let archive = input.name()?;
        let archive_digest = input.digest()?;
        let count = u32::from_le_bytes(input.take(4)?.try_into().expect("4 bytes"));
        let mut projections = Vec::new();
        for _ in 0..count {
            let name = input.name()?;
            let version = u32::from_le_bytes(input.take(4)?.try_into().expect("4 bytes"));
            projections.push(CutProjection {
                name,
                version,
                digest: input.digest()?,
            });
        }
        if !input.0.is_empty() {
            return Err("bytes follow its last projection");
        }
        Ok(Cut {
            from,
            before,
            anchor,
            keyed,
            archive,
            archive_digest,
            projections,
        })
    }
}

fn push_name(out: &mut Vec<u8>, name: &str) {
    // Names are file names and projection names, far under 64 KiB; longer ones are cut to
    // the bound rather than wrapped.
    let bytes = &name.as_bytes()[..name.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], &'static str> {
        if self.0.len() < n {
            return Err("it ends early");
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn u64(&mut self) -> std::result::Result<u64, &'static str> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn digest(&mut self) -> std::result::Result<Digest, &'static str> {
        Ok(Digest(self.take(32)?.try_into().expect("32 bytes")))
    }

    fn name(&mut self) -> std::result::Result<String, &'static str> {
        let len = u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes"));
        String::from_utf8(self.take(usize::from(len))?.to_vec()).map_err(|_| "a name is not UTF-8")
    }
}

/// The last cut of the log read in `txn` and its record's position, `None` if it was never
/// cut.
pub(crate) fn last_cut(txn: &(impl ReadIn + ?Sized)) -> Result<Option<(Position, Cut)>> {
    let Some(cuts) = CUTS.read_if_present(txn)? else {
        return Ok(None);
    };
    let Some(entry) = cuts.last()? else {
        return Ok(None);
    };
    let (key, value) = entry;
    decode_stored(key.value(), value.value()).map(Some)
}

/// Every cut the log keeps, by its record's position, in order.
pub(crate) fn cuts(txn: &(impl ReadIn + ?Sized)) -> Result<Vec<(Position, Cut)>> {
    let Some(cuts) = CUTS.read_if_present(txn)? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in cuts.iter()? {
        let (key, value) = entry?;
        found.push(decode_stored(key.value(), value.value())?);
    }
    Ok(found)
}

/// The name each cut of the log of `txn` gave its archive, with the cut record's position.
pub(crate) fn archive_names(txn: &(impl ReadIn + ?Sized)) -> Result<Vec<(Position, String)>> {
    Ok(cuts(txn)?
        .into_iter()
        .map(|(position, cut)| (position, cut.archive))
        .collect())
}

fn decode_stored(position: u64, stored: &[u8]) -> Result<(Position, Cut)> {
    let payload = unseal(CUTS_NAME, &position.to_le_bytes(), stored)?;
    let cut = Cut::decode(payload).map_err(|problem| ArchiveError::UndecodableCut {
        position: Position(position),
        problem,
    })?;
    Ok((Position(position), cut))
}

/// Whether the log of `txn` has a table of cuts.
fn was_cut(txn: &Writer<'_>) -> Result<bool> {
    CUTS.exists_in(txn)
}

/// The last cut as the write transaction `txn` sees it, `None` for a log never cut.
pub(crate) fn last_cut_in(txn: &Writer<'_>) -> Result<Option<Cut>> {
    // Opening a table in a write transaction creates it: a log never cut is left as it was.
    if !was_cut(txn)? {
        return Ok(None);
    }
    let cuts = CUTS.write(txn)?;
    let last = cuts.last()?;
    match last {
        Some((key, value)) => Ok(Some(decode_stored(key.value(), value.value())?.1)),
        None => Ok(None),
    }
}

/// Where the log starts as `txn` sees it: the last cut's `before`, or 0.
pub(crate) fn start_in(txn: &Writer<'_>) -> Result<(Position, u64)> {
    if !was_cut(txn)? {
        return Ok((Position(0), 0));
    }
    let cuts = CUTS.write(txn)?;
    let last = cuts.last()?;
    match last {
        Some((key, value)) => {
            let (_, cut) = decode_stored(key.value(), value.value())?;
            Ok((cut.before, cut.keyed))
        }
        None => Ok((Position(0), 0)),
    }
}

/// What a cut keeps of one archived record.
pub(crate) struct ArchivedRecord {
    /// Its hash.
    pub(crate) hash: Digest,
    /// Whether it carries an idempotency key.
    pub(crate) keyed: bool,
    /// Whether a projection still reads it.
    pub(crate) kept: bool,
}

/// Removes from [`KEPT`] every record not in `wanted`: a projection no longer reads it.
pub(crate) fn prune_kept(txn: &Writer<'_>, wanted: &std::collections::BTreeSet<u64>) -> Result<()> {
    let mut kept = KEPT.write(txn)?;
    let mut gone = Vec::new();
    for entry in kept.iter()? {
        let position = entry?.0.value();
        if !wanted.contains(&position) {
            gone.push(position);
        }
    }
    for position in gone {
        kept.remove(position)?;
    }
    Ok(())
}

/// Joins the hashes of the archived records `from .. before` (yielded in order) to
/// [`ARCHIVED`], and those still read to [`KEPT`]; returns how many carry a key.
pub(crate) fn keep_archived(
    txn: &Writer<'_>,
    from: Position,
    before: Position,
    records: &mut dyn Iterator<Item = Result<ArchivedRecord>>,
) -> Result<u64> {
    assert!(from <= before, "a cut archives {from}..{before}, a range");
    let mut archived = ARCHIVED.write(txn)?;
    let mut kept = KEPT.write(txn)?;
    let mut at = from.0;
    let mut keyed = 0;
    let mut value = Vec::new();
    while at < before.0 {
        let block = at / ARCHIVED_BLOCK_RECORDS;
        let offset = (at % ARCHIVED_BLOCK_RECORDS) as usize;
        let key = block.to_le_bytes();
        value.clear();
        if let Some(stored) = archived.get(block)? {
            value.extend_from_slice(unseal(ARCHIVED_NAME, &key, stored.value())?);
        }
        // The block holds the hashes before `at` exactly: cuts join end to end.
        if value.len() != offset * 32 {
            return Err(Error::Corrupt {
                position: Position(at),
                problem: Box::new(Problem::Missing),
            });
        }
        let end = ((block + 1) * ARCHIVED_BLOCK_RECORDS).min(before.0);
        while at < end {
            let Some(next) = records.next() else {
                return Err(Error::Corrupt {
                    position: Position(at),
                    problem: Box::new(Problem::Missing),
                });
            };
            let record = next?;
            value.extend_from_slice(record.hash.as_bytes());
            keyed += u64::from(record.keyed);
            if record.kept {
                // Still in its segment: [`finish_step`] moves it here before removing that.
                kept.insert(at, [].as_slice())?;
            }
            at += 1;
        }
        // A block holds 16 hashes, fewer only in the block the cut falls in.
        debug_assert!(
            value.len() == ARCHIVED_BLOCK_RECORDS as usize * 32 || at == before.0,
            "the archived block {block} is full unless the cut falls in it"
        );
        archived.insert(block, seal(ARCHIVED_NAME, &key, &value).as_slice())?;
    }
    // The hash of every record of the range is kept: the chain through the cut stays whole.
    assert_eq!(
        at, before.0,
        "the archived hashes end where the cut keeps the log"
    );
    debug_assert!(
        keyed <= before.0 - from.0,
        "at most every record archived is keyed"
    );
    Ok(keyed)
}

/// How many bytes of the segments below the log's start one step of [`finish_step`] takes at
/// most (and one segment more) in a file of `file_bytes`: a 128th of it, from 256 KiB to 64
/// MiB. Pages a step frees are reused two steps later (redb frees them at the next commit,
/// for the one after), so a cut's file grows by what its own transaction writes and about
/// two steps' worth, under 2% of the file, while a cut of gigabytes takes a few hundred
/// durable commits.
pub(crate) fn finish_step_bytes(file_bytes: u64) -> usize {
    const MIN: u64 = 256 << 10;
    const MAX: u64 = 64 << 20;
    usize::try_from((file_bytes / 128).clamp(MIN, MAX)).expect("at most 64 MiB")
}

/// What one step of finishing a cut found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FinishStep {
    /// Nothing was left to do: the transaction changed nothing.
    Finished,
    /// Segments were removed or kept records moved; more may be left.
    Stepped,
}

/// One step of finishing the log's cuts, in the write transaction `txn`, taking the segments
/// below the log's start in key order, about `budget` bytes of them: each kept record one of
/// them holds (an empty value in [`KEPT`]) is checked against the hash [`ARCHIVED`] keeps and
/// stored in [`KEPT`], and each segment whose records all lie below the start is removed.
///
/// A cut commits with those segments still in place (its transaction writes only what is new),
/// and they go in steps of their own afterwards, so that the pages each step frees are reused
/// by the steps after it rather than the file growing by every kept record at once. Between
/// steps the log is whole: a kept record is read from [`KEPT`] or, while its value is empty,
/// from its segment, and nothing below the start is read otherwise.
pub(crate) fn finish_step(txn: &Writer<'_>, budget: usize) -> Result<FinishStep> {
    let (start, _) = start_in(txn)?;
    if start == Position(0) {
        return Ok(FinishStep::Finished);
    }
    let format = {
        let meta = super::tables::META.write(txn)?;
        super::read_format(&meta)?
    };
    let mut segments = super::tables::SEGMENTS.write(txn)?;
    let mut kept = KEPT.write(txn)?;
    let archived = ARCHIVED.write(txn)?;
    let taken = segments_below(&segments, start, budget)?;
    let mut step = FinishStep::Finished;
    for (first, end) in taken {
        assert!(
            first < start.0 && first < end,
            "a segment taken by a step of finishing a cut begins below the start {start}"
        );
        let pending: Vec<u64> = kept
            .range(first..end.min(start.0))?
            .filter_map(|entry| match entry {
                Ok((key, value)) => value.value().is_empty().then(|| Ok(key.value())),
                Err(error) => Some(Err(error)),
            })
            .collect::<std::result::Result<_, _>>()?;
        if !pending.is_empty() {
            let bytes = match segments.get(first)? {
                Some(guard) => guard.value().to_vec(),
                None => return Err(corrupt(Position(first), Problem::Missing)),
            };
            let stored = KeptSegment {
                first: Position(first),
                bytes: &bytes,
                format,
            };
            stored.move_kept(&pending, &archived, &mut kept)?;
            step = FinishStep::Stepped;
        }
        // Only a segment whose records all lie below the start goes: the cut keeps the rest.
        if end <= start.0 {
            segments.remove(first)?;
            step = FinishStep::Stepped;
        }
    }
    Ok(step)
}

/// The segments that begin below `start`, about `budget` bytes of them in key order, each
/// with where it ends (the next one's key, or `u64::MAX` for one with none after it, which
/// holds the start or more and stays).
fn segments_below(
    segments: &impl Readable<u64, &'static [u8]>,
    start: Position,
    budget: usize,
) -> Result<Vec<(u64, u64)>> {
    let mut taken: Vec<(u64, u64)> = Vec::new();
    let mut open: Option<u64> = None;
    let mut bytes = 0;
    for entry in segments.range::<u64>(..)? {
        let (key, value) = entry?;
        let key = key.value();
        if let Some(first) = open.take() {
            taken.push((first, key));
        }
        if key >= start.0 || bytes >= budget {
            break;
        }
        bytes += value.value().len();
        open = Some(key);
    }
    if let Some(first) = open {
        taken.push((first, u64::MAX));
    }
    Ok(taken)
}

/// `Error::Corrupt` at `position` for `problem`.
fn corrupt(position: Position, problem: Problem) -> Error {
    Error::Corrupt {
        position,
        problem: Box::new(problem),
    }
}

/// A segment below the log's start that still holds records [`KEPT`] waits for.
struct KeptSegment<'a> {
    /// The position of its first record (its key).
    first: Position,
    bytes: &'a [u8],
    format: crate::record::Format,
}

impl KeptSegment<'_> {
    /// Moves the records at `pending` (positions in this segment whose value in [`KEPT`] is
    /// still empty) into `kept`, each checked against the hash [`ARCHIVED`] keeps. Read here
    /// rather than through `read.rs`, which reads this module's tables.
    fn move_kept(
        &self,
        pending: &[u64],
        archived: &impl Readable<u64, &'static [u8]>,
        kept: &mut crate::storage::Writable<'_, u64, &'static [u8]>,
    ) -> Result<()> {
        let segment = crate::record::segment::Segment::parse(self.bytes, self.format)
            .map_err(|error| corrupt(self.first, Problem::Segment(error)))?;
        let mut stored = Vec::new();
        for &position in pending {
            let position = Position(position);
            let at = u32::try_from(position.0 - self.first.0)
                .ok()
                .and_then(|index| segment.record_at(index))
                .ok_or_else(|| corrupt(position, Problem::Missing))?;
            let record = crate::record::view::parse_at(
                self.bytes,
                &at,
                position,
                crate::record::view::RecordHashes::Check,
            )
            .map_err(|error| corrupt(position, Problem::Record(error)))?;
            let hash = archived_hash(archived, position)?;
            if record.hash != hash {
                let fault = crate::record::problem::CutFault::Kept {
                    kept: hash,
                    found: record.hash,
                };
                return Err(corrupt(position, Problem::Cut { fault }));
            }
            stored.clear();
            record.encode_v1_stored(&mut stored);
            debug_assert!(!stored.is_empty(), "a stored record is never empty");
            kept.insert(position.0, stored.as_slice())?;
        }
        Ok(())
    }
}

/// Keeps `cut`, whose record will be at `position`, in [`CUTS`].
pub(crate) fn keep_cut(txn: &Writer<'_>, position: Position, cut: &Cut) -> Result<()> {
    // A cut archives a range of the log before its own record.
    assert!(
        cut.from <= cut.before && cut.before <= position,
        "the cut at {position} archives {}..{}, a range before it",
        cut.from,
        cut.before
    );
    // Cuts join end to end: this one archives from where the last one kept.
    #[cfg(debug_assertions)]
    if let Ok((start, _)) = start_in(txn) {
        debug_assert_eq!(
            start, cut.from,
            "the cut at {position} starts at the log's start"
        );
    }
    let mut cuts = CUTS.write(txn)?;
    let stored = seal(CUTS_NAME, &position.0.to_le_bytes(), &cut.encode());
    cuts.insert(position.0, stored.as_slice())?;
    Ok(())
}

/// The hash of the archived record at `position`, read from [`ARCHIVED`].
pub(crate) fn archived_hash(
    archived: &impl Readable<u64, &'static [u8]>,
    position: Position,
) -> Result<Digest> {
    let block = position.0 / ARCHIVED_BLOCK_RECORDS;
    let offset = (position.0 % ARCHIVED_BLOCK_RECORDS) as usize * 32;
    let missing = || Error::Corrupt {
        position,
        problem: Box::new(Problem::Missing),
    };
    let Some(stored) = archived.get(block)? else {
        return Err(missing());
    };
    let value = unseal(ARCHIVED_NAME, &block.to_le_bytes(), stored.value())?;
    let hash = value.get(offset..offset + 32).ok_or_else(missing)?;
    Ok(Digest(hash.try_into().expect("32 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_decodes_to_itself_and_refuses_trailing_bytes() {
        let cut = Cut {
            from: Position(3),
            before: Position(40),
            anchor: Digest([7; 32]),
            keyed: 12,
            archive: "log-0.archive".to_owned(),
            archive_digest: Digest([9; 32]),
            projections: vec![CutProjection {
                name: "leases".to_owned(),
                version: 2,
                digest: Digest([1; 32]),
            }],
        };
        let bytes = cut.encode();
        assert_eq!(Cut::decode(&bytes), Ok(cut));
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(
            Cut::decode(&longer),
            Err("bytes follow its last projection")
        );
        assert_eq!(Cut::decode(&bytes[..bytes.len() - 1]), Err("it ends early"));
    }
}
