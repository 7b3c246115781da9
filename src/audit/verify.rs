//! Verification: a walk of the whole log that recomputes every header hash, payload hash and
//! `prev` link, checks positions are gapless and stream versions count up from 0, and checks
//! the head, the stream index and the idempotency index against the records, and recomputes
//! the Merkle tree from the record hashes to compare every stored node and the frontier.
//!
//! The walk stops at the first problem and names its position: after one bad record nothing
//! later can be trusted.

use crate::record::RecordView;
use crate::record::view::{RecordHashes, parse_at};
use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};

use crate::storage::Readable;

use crate::audit::replay::replay_with;
use crate::error::{Error, Result};
use crate::hash::Digest;
use crate::log::Head;
use crate::log::merkle::stored_node_count;
use crate::log::read::Snapshot;
use crate::log::stream_index::StreamRun;
use crate::log::tables::MERKLE_STORED_LEVEL_MIN;
use crate::merkle::{Frontier, LogTreeHasher, leaf_hash};
use crate::projection::digest::first_difference;
use crate::projection::table::{SnapshotTables, TableSource};
use crate::projection::{Projection, ProjectionError, Projections};
use crate::record::problem::{
    CheckpointMark, CutFault, IdempotencyFault, MerkleFault, StreamIndexFault,
};
pub use crate::record::problem::{Finding, Problem};
use crate::record::segment::Segment;
use crate::record::{Format, Position, StreamVersion, content_hash};
use std::sync::Arc;

/// The outcome of [`crate::Audit::verify`]: what was checked and the first problem, if any.
///
/// Its serde form (what the Node package's `verify()` gives) says `sound` and the problem as
/// `findings`, one line each, beside the fields here (`VerifyReportForm`).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct VerifyReport {
    /// Records checked (all of them when sound; those before the problem otherwise).
    pub records: u64,
    /// Streams seen.
    pub streams: u64,
    /// The head as the records give it (as far as they were checked).
    pub head: Head,
    /// The root of the Merkle tree of the records checked, recomputed from their hashes.
    pub root: Digest,
    /// The first problem found; `None` when the log is sound.
    pub problem: Option<Finding>,
    /// Projections whose tables are behind the log (a rebuild or catch-up not finished) and
    /// equal to a replay of the log up to where they stand: a state to catch up, not damage.
    pub behind: Vec<ProjectionBehind>,
}

impl VerifyReport {
    /// Whether the log is sound: no damage found. Projections [`VerifyReport::behind`] the
    /// log do not make it unsound.
    pub fn is_sound(&self) -> bool {
        self.problem.is_none()
    }
}

// A `VerifyReport` as it serialises: its fields, with what a reader asks first (`sound`)
// computed, and the problem as text, for a `Finding`'s `Problem` is a long enum of the format
// crate's whose one stable form is its message. The report's `Serialize` and `JsonSchema` are
// this form's, so the two cannot disagree.
/// What `verify` found: whether the log is sound, what was checked, the first problem as a
/// line of text, and the projections behind the log.
#[derive(serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename = "VerifyReport")]
struct VerifyReportForm<'a> {
    /// Whether every hash, link, index, the tree and every projection checked: no damage
    /// found (projections `behind` the log do not make it unsound).
    sound: bool,
    /// Records checked (all of them when sound; those before the problem otherwise).
    records: u64,
    /// Streams seen.
    streams: u64,
    /// The head as the records give it, as far as they were checked.
    head: &'a Head,
    /// The root of the Merkle tree of the records checked, recomputed from their hashes.
    root: &'a Digest,
    /// What is wrong, one line each (`position 7: …`): empty when sound, else the first
    /// problem found, after which nothing later is trusted.
    findings: Vec<String>,
    /// Projections whose tables are behind the log (a rebuild or catch-up not finished, or
    /// one a writer in another process keeps) and equal to a replay of the log up to where
    /// they stand: a state to catch up, not damage.
    behind: &'a [ProjectionBehind],
}

impl<'a> VerifyReportForm<'a> {
    fn of(report: &'a VerifyReport) -> VerifyReportForm<'a> {
        VerifyReportForm {
            sound: report.is_sound(),
            records: report.records,
            streams: report.streams,
            head: &report.head,
            root: &report.root,
            findings: report.problem.iter().map(ToString::to_string).collect(),
            behind: &report.behind,
        }
    }
}

impl serde::Serialize for VerifyReport {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serde::Serialize::serialize(&VerifyReportForm::of(self), serializer)
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for VerifyReport {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "VerifyReport".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <VerifyReportForm<'_> as schemars::JsonSchema>::json_schema(generator)
    }
}

/// A projection behind the log, whose tables equal a replay up to where it stands.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProjectionBehind {
    /// The projection.
    pub projection: String,
    /// The next position it has to apply.
    pub at: Position,
    /// The log's head.
    pub head: Position,
}

impl std::fmt::Display for ProjectionBehind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let error = crate::projection::ProjectionError::Behind {
            projection: self.projection.clone(),
            at: self.at.0,
            head: self.head.0,
        };
        write!(f, "{error}")
    }
}

struct Walk {
    next: Position,
    prev: Digest,
    /// Every stream seen, with where its records have lain so far.
    streams: HashMap<String, StreamWalk>,
    keyed: u64,
    /// The Merkle tree recomputed from the record hashes walked so far.
    frontier: Frontier<Digest>,
}

impl Walk {
    fn report(self, problem: Option<Finding>) -> VerifyReport {
        VerifyReport {
            root: self.frontier.root(&LogTreeHasher),
            records: self.next.0,
            streams: self.streams.len() as u64,
            head: Head {
                next: self.next,
                hash: self.prev,
            },
            problem,
            behind: Vec::new(),
        }
    }
}

/// One stream as the walk has seen it: its length so far, the run its last record belongs to
/// and a fingerprint of its runs before that one.
///
/// The stream index is checked against these instead of against records read back by
/// position: on a log of interleaved streams every record is a run of its own, and reading
/// both ends of each run made the walk random reads of whole segments, slower per record the
/// larger the log. The walk sees every run of a stream in version order, as the index lists
/// them, so one fingerprint per stream, folded from both sides, compares them in one pass each.
#[derive(Clone, Copy, Debug, Default)]
struct StreamWalk {
    /// The version its next record must have: how many records it has so far.
    length: u64,
    /// The run its last record belongs to: first position and count (0 before any record).
    run_first_position: u64,
    run_count: u64,
    /// The fingerprint of its runs before the last.
    runs: RunsFingerprint,
}

impl StreamWalk {
    /// Adds the stream's next record, at `position`.
    fn push(&mut self, position: u64) {
        if self.run_count > 0 && self.run_first_position + self.run_count == position {
            self.run_count += 1;
        } else {
            self.close_run();
            self.run_first_position = position;
            self.run_count = 1;
        }
        self.length += 1;
    }

    fn close_run(&mut self) {
        if self.run_count > 0 {
            self.runs.push(StreamRun {
                first_version: self.length - self.run_count,
                first_position: self.run_first_position,
                count: self.run_count,
            });
        }
    }

    /// The fingerprint of all its runs.
    fn fingerprint(mut self) -> RunsFingerprint {
        self.close_run();
        self.runs
    }
}

/// An order-sensitive fingerprint of a sequence of runs, two 64-bit multiply-xorshift lanes.
/// The stream index is not bound by the chain, so what it guards against is damage, not
/// forgery: two different sequences of runs fold to the same value by chance only (about one
/// in 2^128), and a difference found is then located exactly by reading the runs' ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RunsFingerprint([u64; 2]);

impl RunsFingerprint {
    fn push(&mut self, run: StreamRun) {
        const MULTIPLIERS: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F];
        for (lane, multiplier) in self.0.iter_mut().zip(MULTIPLIERS) {
            for value in [run.first_version, run.first_position, run.count] {
                let mixed = (*lane ^ value).wrapping_mul(multiplier);
                *lane = mixed ^ (mixed >> 29);
            }
        }
    }
}

/// Folds runs as the index lists them into the runs a walk sees: an index may split a run
/// that continues in the log (a block boundary); the walk sees it whole.
#[derive(Default)]
struct IndexRuns {
    open: Option<StreamRun>,
    fingerprint: RunsFingerprint,
}

impl IndexRuns {
    fn push(&mut self, run: StreamRun) {
        match &mut self.open {
            Some(open)
                if open.first_position + open.count == run.first_position
                    && open.first_version + open.count == run.first_version =>
            {
                open.count += run.count;
            }
            open => {
                if let Some(closed) = open.replace(run) {
                    self.fingerprint.push(closed);
                }
            }
        }
    }

    fn fingerprint(mut self) -> RunsFingerprint {
        if let Some(closed) = self.open.take() {
            self.fingerprint.push(closed);
        }
        self.fingerprint
    }
}

/// Records walked between two progress reports.
const PROGRESS_RECORDS: u64 = 1024;

/// Walks the whole log in `snapshot`, then checks every projection in `live` against a fresh
/// replay of the log, and reports the first problem, calling `progress` with the records done
/// so far: the walk counts up to the head, then the replay from there to twice the head.
/// Errors are for failures to read at all (I/O, redb); problems in what is read are findings
/// in the report.
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "info", name = "verify", skip_all)
)]
pub(crate) fn verify_with(
    snapshot: &Snapshot,
    live: &dyn TableSource,
    projections: &Projections,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport> {
    let mut claims = Vec::new();
    let report = verify_log_claiming(snapshot, progress, &mut claims)?;
    if report.problem.is_some() {
        return Ok(report);
    }
    if let Some(finding) = check_claims(snapshot, projections, &claims)? {
        return Ok(VerifyReport {
            problem: Some(finding),
            ..report
        });
    }
    if let Some(finding) = check_kept(snapshot, live, projections)? {
        return Ok(VerifyReport {
            problem: Some(finding),
            ..report
        });
    }
    if let Some(finding) = check_snapshot(snapshot, projections)? {
        return Ok(VerifyReport {
            problem: Some(finding),
            ..report
        });
    }
    let (problem, behind) =
        check_projections(snapshot, live, projections, report.head.next, progress)?;
    // A broken rule is found at its record; the tables are compared as of the head.
    let position = match &problem {
        Some(Problem::Invariant { position, .. }) => *position,
        _ => report.head.next,
    };
    Ok(VerifyReport {
        problem: problem.map(|problem| Finding { position, problem }),
        behind,
        ..report
    })
}

/// Each cut record this log did not make must name the digests a replay of this log reaches
/// at its cut, for every projection it names that runs here at the version it names.
fn check_claims(
    snapshot: &Snapshot,
    projections: &Projections,
    claims: &[(Position, crate::log::cut::Cut)],
) -> Result<Option<Finding>> {
    for (position, cut) in claims {
        let replayed = replay_with(snapshot, projections, Some(cut.before), &mut |_| {})?;
        let state = replayed.state()?;
        for named in &cut.projections {
            let Some(projection) = projections.get(&named.name) else {
                continue;
            };
            if projection.version() != named.version {
                continue;
            }
            let digest = crate::projection::digest::digest(&state, projection.as_ref())?;
            if digest != named.digest {
                return Ok(Some(Finding {
                    position: *position,
                    problem: Problem::Cut {
                        fault: CutFault::Replayed {
                            before: cut.before,
                            projection: named.name.clone(),
                            named: named.digest,
                            replayed: digest,
                        },
                    },
                }));
            }
        }
    }
    Ok(None)
}

/// For a cut log, every archived record a projection's live rows point at must have been
/// kept, and read back sound.
fn check_kept(
    snapshot: &Snapshot,
    live: &dyn TableSource,
    projections: &Projections,
) -> Result<Option<Finding>> {
    let start = snapshot.start();
    if start == Position(0) {
        return Ok(None);
    }
    for projection in projections.iter() {
        let mut read = Vec::new();
        projection.records_read(live, start, &mut |position| read.push(position))?;
        for position in read {
            match snapshot.get(position) {
                Ok(Some(_)) => {}
                Err(Error::Corrupt { position, problem }) => {
                    return Ok(Some(Finding {
                        position,
                        problem: *problem,
                    }));
                }
                Ok(None) | Err(Error::Archive(_)) => {
                    return Ok(Some(Finding {
                        position,
                        problem: Problem::Cut {
                            fault: CutFault::NotKept {
                                projection: projection.name().to_owned(),
                                position,
                            },
                        },
                    }));
                }
                Err(error) => return Err(error),
            }
        }
    }
    Ok(None)
}

/// For a cut log, the snapshot of each projection's tables at the cut must digest to what
/// the cut record names: the replay that checks the live tables starts from it.
fn check_snapshot(snapshot: &Snapshot, projections: &Projections) -> Result<Option<Finding>> {
    let Some((record, cut)) = snapshot.cut_at() else {
        return Ok(None);
    };
    crate::audit::replay::check_in_cut(cut, projections)?;
    let kept = SnapshotTables::new(snapshot.reader.clone());
    for named in &cut.projections {
        let Some(projection) = projections.get(&named.name) else {
            continue;
        };
        let found = crate::projection::digest::digest(&kept, projection.as_ref())?;
        if found != named.digest {
            return Ok(Some(Finding {
                position: *record,
                problem: Problem::Cut {
                    fault: CutFault::Snapshot {
                        projection: named.name.clone(),
                        named: named.digest,
                        found,
                    },
                },
            }));
        }
    }
    Ok(None)
}

/// Checkpoints at the head with the current version, and tables equal to a replay's; a
/// projection whose checkpoint is behind the head (with the current version) is compared
/// with a replay up to its checkpoint instead, and reported as behind when equal to it.
fn check_projections(
    snapshot: &Snapshot,
    live: &dyn TableSource,
    projections: &Projections,
    head: Position,
    progress: &mut dyn FnMut(u64),
) -> Result<(Option<Problem>, Vec<ProjectionBehind>)> {
    let positions = match projection_positions(snapshot, projections, head)? {
        Ok(positions) => positions,
        Err(problem) => return Ok((Some(problem), Vec::new())),
    };
    // One replay per distinct position, the head's first; a stopped rebuild leaves the
    // projections it was rebuilding at one position.
    let mut ends: Vec<Position> = positions.iter().map(|(_, at)| *at).collect();
    ends.sort_by_key(|at| std::cmp::Reverse(*at));
    ends.dedup();
    for end in ends {
        let replayed = replay_with(snapshot, projections, Some(end), &mut |applied| {
            if end == head {
                progress(head.0 + applied)
            }
        });
        let replayed = match replayed {
            Err(Error::Projection(ProjectionError::Invariant {
                projection,
                position,
                kind,
                rule,
                detail,
            })) => {
                let problem = Problem::Invariant {
                    position,
                    projection,
                    kind,
                    rule,
                    detail,
                };
                return Ok((Some(problem), Vec::new()));
            }
            other => other?,
        };
        let expected = replayed.state()?;
        let at_end = positions.iter().filter(|(_, at)| *at == end);
        for (projection, _) in at_end {
            let problem = compare_with_replay(live, &expected, projection.as_ref(), end, head)?;
            if problem.is_some() {
                return Ok((problem, Vec::new()));
            }
        }
    }
    let behind = positions
        .iter()
        .filter(|(_, at)| *at < head)
        .map(|(projection, at)| ProjectionBehind {
            projection: projection.name().to_owned(),
            at: *at,
            head,
        })
        .collect();
    Ok((None, behind))
}

/// Projections, each with the position it stands at.
type Positions<'p> = Vec<(&'p Arc<dyn Projection>, Position)>;

/// Each projection with where it stands: the head, or a position behind it, at the current
/// version; the problem of the first checkpoint that is neither (missing, of another version,
/// or past the head).
fn projection_positions<'p>(
    snapshot: &Snapshot,
    projections: &'p Projections,
    head: Position,
) -> Result<std::result::Result<Positions<'p>, Problem>> {
    let mut positions = Vec::new();
    for projection in projections.iter() {
        let checkpoint = snapshot.checkpoint(projection.name())?;
        match checkpoint {
            Some(c) if c.version == projection.version() && c.next <= head => {
                positions.push((projection, c.next));
            }
            _ => {
                return Ok(Err(Problem::Checkpoint {
                    projection: projection.name().to_owned(),
                    found: checkpoint.map(|c| CheckpointMark {
                        version: c.version,
                        next: c.next,
                    }),
                    version: projection.version(),
                    head,
                }));
            }
        }
    }
    Ok(Ok(positions))
}

/// The first difference between `projection`'s `live` tables and the `expected` ones a replay
/// up to `end` built. Both are walked in key order, a page at a time: equal tables mean equal
/// digests, and neither side is ever held whole in memory.
fn compare_with_replay(
    live: &dyn TableSource,
    expected: &dyn TableSource,
    projection: &dyn Projection,
    end: Position,
    head: Position,
) -> Result<Option<Problem>> {
    let Some(difference) = first_difference(live, expected, projection)? else {
        return Ok(None);
    };
    Ok(Some(Problem::Projection {
        projection: projection.name().to_owned(),
        table: difference.table,
        key_hex: difference.key_hex,
        difference: difference.difference,
        replay_end: (end != head).then_some(end),
    }))
}

/// Walks the whole log in `snapshot` (records, chain, streams, indexes) and reports the first
/// problem.
pub fn verify_log(snapshot: &Snapshot) -> Result<VerifyReport> {
    verify_log_with(snapshot, &mut |_| {})
}

/// [`verify_log`], calling `progress` with the records walked so far.
///
/// With a second core, the records' hashes and the segments' digests are checked on another
/// thread while this one walks the chain, the streams, the keys and the Merkle tree over the
/// same segments: the hashing is most of a walk's work, and only it can go apart from the
/// order of the log. When that thread finds anything, the log is walked again with every
/// check in order, so the report is exactly the one-thread walk's (which problem comes first,
/// how far the walk got): damage is rare, and then it is named as it always was.
pub(crate) fn verify_log_with(
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
) -> Result<VerifyReport> {
    verify_log_claiming(snapshot, progress, &mut Vec::new())
}

/// [`verify_log_with`], collecting the cut records this log did not make whose claims the
/// projections' replay has to check.
fn verify_log_claiming(
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
    claims: &mut Vec<(Position, crate::log::cut::Cut)>,
) -> Result<VerifyReport> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 {
        return walk_log(snapshot, progress, None, claims);
    }
    let format = snapshot.format;
    std::thread::scope(|scope| {
        let (segments, received) = sync_channel(SEGMENTS_IN_FLIGHT);
        let (spent, spare) = channel();
        let hashes = scope.spawn(move || hashes_sound(&received, &spent, format));
        let hashing = HashingThread { segments, spare };
        let walked = walk_log(snapshot, progress, Some(&hashing), claims);
        // The walk may have stopped early: what it sent is checked, and the check ends there.
        drop(hashing);
        // A panic on the other thread is this call's panic, as it would be on this thread.
        let sound = hashes
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match walked {
            Ok(report) if sound => Ok(report),
            Ok(_) => walk_log(snapshot, &mut |_| {}, None, claims),
            Err(error) => Err(error),
        }
    })
}

/// Segments copied for the hashing thread and not yet checked, at most (about 64 KiB each).
const SEGMENTS_IN_FLIGHT: usize = 8;

/// The walk's side of the thread that checks the records' hashes and the segments' digests.
struct HashingThread {
    /// Copies of the segments walked, with their first positions.
    segments: SyncSender<(Position, Vec<u8>)>,
    /// Copies the hashing thread is done with, to copy the next segments into: a walk that
    /// allocated a buffer per segment, freed on the other thread, left the heap fragmented by
    /// the walk's own small allocations (about 5 MB more at a million demo records).
    spare: Receiver<Vec<u8>>,
}

impl HashingThread {
    /// Sends a copy of `bytes`; false when the hashing thread has stopped at a failure.
    fn send(&self, first: Position, bytes: &[u8]) -> bool {
        let mut copy = self.spare.try_recv().unwrap_or_default();
        copy.clear();
        copy.extend_from_slice(bytes);
        self.segments.send((first, copy)).is_ok()
    }
}

/// Whether every record of every segment received parses with its hashes checked and every
/// segment's digest is its bytes': the checks a walk given a [`HashingThread`] leaves out.
/// Stops at the first that fails. Each segment checked goes back through `spent`.
fn hashes_sound(
    segments: &Receiver<(Position, Vec<u8>)>,
    spent: &Sender<Vec<u8>>,
    format: Format,
) -> bool {
    segments.iter().all(|(first, bytes)| {
        let Ok(segment) = Segment::parse(&bytes, format) else {
            return false;
        };
        let sound = segment.records_at().all(|at| {
            let position = Position(first.0 + u64::from(at.index));
            parse_at(&bytes, &at, position, RecordHashes::Check).is_ok()
        }) && segment.digest_error().is_none();
        // The walk may be over, and with it the spare buffers' receiver.
        let _ = spent.send(bytes);
        sound
    })
}

/// Walks the whole log in `snapshot` and reports the first problem. With `hashes`, a copy of
/// each segment is sent there before it is walked, and the walk checks neither the records' hashes
/// nor the segment's digest: what it reports holds only if the receiver finds them all sound.
fn walk_log(
    snapshot: &Snapshot,
    progress: &mut dyn FnMut(u64),
    hashes: Option<&HashingThread>,
    claims: &mut Vec<(Position, crate::log::cut::Cut)>,
) -> Result<VerifyReport> {
    claims.clear();
    let record_hashes = match hashes {
        Some(_) => RecordHashes::CoveredBySegmentDigest,
        None => RecordHashes::Check,
    };
    let mut walk = Walk {
        next: Position(0),
        prev: Digest::ZERO,
        streams: HashMap::new(),
        keyed: 0,
        frontier: Frontier::new(),
    };
    let finding = |position, problem| Some(Finding { position, problem });
    let start = snapshot.start();
    let mut cuts = CutsSeen {
        kept: crate::log::cut::cuts(&snapshot.reader)?,
        seen: Vec::new(),
        claims,
    };
    if let Some(found) = seed_cut(snapshot, &mut walk)? {
        return Ok(walk.report(Some(found)));
    }
    for entry in snapshot.segments.range(0..)? {
        let (first, bytes) = entry?;
        let first = Position(first.value());
        // The segment holding a cut log's start may begin below it.
        let holds_start = first < start && walk.next == start;
        if first != walk.next && !holds_start {
            let expected = walk.next;
            return Ok(walk.report(finding(
                expected,
                Problem::Gap {
                    expected,
                    found: first,
                },
            )));
        }
        if let Some(hashes) = hashes
            && !hashes.send(first, bytes.value())
        {
            // The hashing thread stopped at a failure: this walk's report will not be used.
            return Ok(walk.report(None));
        }
        let segment = SegmentWalked {
            first,
            bytes: bytes.value(),
            record_hashes,
        };
        if let Some(found) = segment.walk(snapshot, &mut walk, &mut cuts, progress)? {
            return Ok(walk.report(Some(found)));
        }
    }
    if let Some(record) = cuts.first_unseen(start) {
        let fault = CutFault::RecordMissing { record };
        return Ok(walk.report(finding(record, Problem::Cut { fault })));
    }
    let problem = check_indexes(snapshot, &walk)?;
    let position = walk.next;
    Ok(walk.report(problem.map(|problem| Finding { position, problem })))
}

/// One segment of the log as the walk reads it: its first position, its bytes, and whether
/// the walk checks its records' hashes and digest (not when another thread does).
struct SegmentWalked<'b> {
    first: Position,
    bytes: &'b [u8],
    record_hashes: RecordHashes,
}

impl SegmentWalked<'_> {
    /// Walks the segment's records, archived or live, then its digest; the first problem.
    fn walk(
        &self,
        snapshot: &Snapshot,
        walk: &mut Walk,
        cuts: &mut CutsSeen<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Option<Finding>> {
        let first = self.first;
        let finding = |position, problem| Ok(Some(Finding { position, problem }));
        let segment = match Segment::parse(self.bytes, snapshot.format) {
            Ok(segment) => segment,
            Err(error) => return finding(first, Problem::Segment(error)),
        };
        let start = snapshot.start();
        for at in segment.records_at() {
            let position = Position(first.0 + u64::from(at.index));
            let record = match parse_at(self.bytes, &at, position, self.record_hashes) {
                Ok(record) => record,
                Err(error) => return finding(position, Problem::Record(error)),
            };
            let problem = match position < start {
                true => check_archived(snapshot, position, &record)?,
                false => walk_record(snapshot, walk, cuts, position, &record)?,
            };
            if let Some(problem) = problem {
                return finding(position, problem);
            }
            if position >= start && walk.next.0.is_multiple_of(PROGRESS_RECORDS) {
                progress(walk.next.0);
            }
        }
        // Checked after the records, so damage inside one is named at its own position.
        let digest_checked = matches!(self.record_hashes, RecordHashes::Check);
        if let Some(error) = segment.digest_error().filter(|_| digest_checked) {
            return finding(first, Problem::Segment(error));
        }
        Ok(None)
    }
}

/// The cut records a walk of the log meets: those the log keeps in `annals.cuts`, those of
/// them it has passed, and the claims of the ones it did not make.
struct CutsSeen<'c> {
    kept: Vec<(Position, crate::log::cut::Cut)>,
    seen: Vec<Position>,
    claims: &'c mut Vec<(Position, crate::log::cut::Cut)>,
}

impl CutsSeen<'_> {
    /// Checks the cut record at `position`: one the log keeps must be the one it made; one
    /// it does not stands as a claim if what it claims holds here (kept in `claims`). The
    /// fault of one that does neither.
    fn check(
        &mut self,
        snapshot: &Snapshot,
        walk: &Walk,
        position: Position,
        record: &RecordView<'_>,
    ) -> Result<Option<CutFault>> {
        let start = snapshot.start();
        let kept = self.kept.iter().find(|(at, _)| *at == position);
        let fault = match kept {
            // A cut record this log did not make: a log rebuilt from the archives and an
            // export of what a cut kept holds its source's. It stands if what it claims holds
            // here: the records it names are in this log, its anchor is the hash before its
            // cut, and a replay reaches its digests (checked with the projections).
            None => match crate::log::cut::Cut::decode(record.payload) {
                Ok(cut)
                    if record.stream == crate::log::cut::CUT_STREAM
                        && cut.before >= start
                        && cut.before < position
                        && cut.anchor == anchor_of(snapshot, cut.before, walk)? =>
                {
                    self.claims.push((position, cut));
                    None
                }
                _ => Some(CutFault::NotMade),
            },
            Some((_, cut)) if cut.encode() != record.payload => Some(CutFault::Differs),
            Some(_) => None,
        };
        if fault.is_none() && kept.is_some() {
            self.seen.push(position);
        }
        Ok(fault)
    }

    /// The first cut record the log keeps at or after `start` that the walk never met.
    fn first_unseen(&self, start: Position) -> Option<Position> {
        self.kept
            .iter()
            .map(|(record, _)| *record)
            .filter(|record| *record >= start)
            .find(|record| !self.seen.contains(record))
    }
}

/// An archived record (below a cut log's start): only its hash is the log's, and it must be
/// the one the cut kept.
fn check_archived(
    snapshot: &Snapshot,
    position: Position,
    record: &RecordView<'_>,
) -> Result<Option<Problem>> {
    let kept = snapshot.record_hash(position)?;
    if kept != record.hash {
        let fault = CutFault::Kept {
            kept,
            found: record.hash,
        };
        return Ok(Some(Problem::Cut { fault }));
    }
    Ok(None)
}

/// Checks the live record at `position` against what the walk has seen (a cut record's claim,
/// the chain, its stream's version, its idempotency key, the Merkle nodes it completes) and
/// moves the walk past it; the first problem, with the walk left before it.
fn walk_record(
    snapshot: &Snapshot,
    walk: &mut Walk,
    cuts: &mut CutsSeen<'_>,
    position: Position,
    record: &RecordView<'_>,
) -> Result<Option<Problem>> {
    if record.kind == crate::log::cut::CUT_KIND
        && let Some(fault) = cuts.check(snapshot, walk, position, record)?
    {
        return Ok(Some(Problem::Cut { fault }));
    }
    if record.prev != walk.prev {
        return Ok(Some(Problem::Prev {
            expected: walk.prev,
            found: record.prev,
        }));
    }
    let expected = walk.streams.get(record.stream).map_or(0, |s| s.length);
    if record.version.0 != expected {
        return Ok(Some(Problem::StreamVersion {
            stream: record.stream.to_owned(),
            expected: StreamVersion(expected),
            found: record.version,
        }));
    }
    if let Some(key) = record.idempotency_key {
        walk.keyed += 1;
        if let Some(problem) = check_key(snapshot, key, position, record)? {
            return Ok(Some(problem));
        }
    }
    if let Some(problem) = check_merkle_nodes(snapshot, &mut walk.frontier, &record.hash)? {
        return Ok(Some(problem));
    }
    // Looked up by name first: a new `String` per record would cost the walk an allocation.
    match walk.streams.get_mut(record.stream) {
        Some(stream) => stream.push(position.0),
        None => {
            let mut stream = StreamWalk::default();
            stream.push(position.0);
            walk.streams.insert(record.stream.to_owned(), stream);
        }
    }
    walk.next = Position(position.0 + 1);
    walk.prev = record.hash;
    Ok(None)
}

/// The hash of the record at `before - 1` (zero when `before` is 0), which the walk, at a
/// later position, has passed: the anchor a cut before `before` must name.
fn anchor_of(snapshot: &Snapshot, before: Position, walk: &Walk) -> Result<Digest> {
    match before.0.checked_sub(1) {
        None => Ok(Digest::ZERO),
        Some(last) if last + 1 == walk.next.0 => Ok(walk.prev),
        Some(last) => snapshot.record_hash(Position(last)),
    }
}

/// For a cut log, starts `walk` where the log starts: the tree over the archived records'
/// kept hashes (each stored node they complete compared), the chain at the cut's anchor, the
/// keys the archived records carried, and each stream's records below the start as its index
/// has them (the archives prove those: `verify --archive`). A finding when the kept hashes
/// or the anchor are wrong.
fn seed_cut(snapshot: &Snapshot, walk: &mut Walk) -> Result<Option<Finding>> {
    let Some(cut) = snapshot.cut() else {
        return Ok(None);
    };
    let start = cut.before;
    let mut last = Digest::ZERO;
    let mut found = None;
    let visited = snapshot.visit_archived_hashes(|position, hash| {
        last = hash;
        if let Some(problem) = check_merkle_nodes(snapshot, &mut walk.frontier, &hash)? {
            found = Some(Finding { position, problem });
            return Err(Error::Corrupt {
                position,
                problem: Box::new(Problem::Missing),
            });
        }
        Ok(())
    });
    match visited {
        Ok(()) => {}
        Err(_) if found.is_some() => return Ok(found),
        Err(Error::Corrupt { position, problem }) => {
            return Ok(Some(Finding {
                position,
                problem: *problem,
            }));
        }
        Err(Error::CorruptValue { .. }) => {
            return Ok(Some(Finding {
                position: Position(walk.frontier.size()),
                problem: Problem::Missing,
            }));
        }
        Err(error) => return Err(error),
    }
    if last != cut.anchor {
        let (position, _) = snapshot.cut_at().expect("a cut");
        return Ok(Some(Finding {
            position: *position,
            problem: Problem::Cut {
                fault: CutFault::Anchor {
                    anchor: cut.anchor,
                    kept: last,
                },
            },
        }));
    }
    walk.next = start;
    walk.prev = last;
    walk.keyed = cut.keyed;
    seed_streams(snapshot, start, &mut walk.streams)
}

/// Seeds `streams` with every stream's records below a cut log's `start`, as the stream
/// index lists them: the walk continues each stream from there. Damage in the index is left
/// for the index check to name, after the walk.
fn seed_streams(
    snapshot: &Snapshot,
    start: Position,
    streams: &mut HashMap<String, StreamWalk>,
) -> Result<Option<Finding>> {
    let seeded = snapshot.visit_tail_names(|name| {
        let mut seen = StreamWalk::default();
        let visited = snapshot.visit_runs(name, |run| {
            let end = (run.first_position + run.count).min(start.0);
            for position in run.first_position..end {
                seen.push(position);
            }
            Ok(run.first_position + run.count <= start.0)
        });
        match visited {
            // Damage in the index is the index check's to name, after the walk.
            Ok(()) | Err(Error::CorruptMeta { .. }) => {}
            Err(error) => return Err(error),
        }
        if seen.length > 0 {
            streams.insert(name.to_owned(), seen);
        }
        Ok(true)
    });
    match seeded {
        Ok(()) | Err(Error::CorruptMeta { .. }) => Ok(None),
        Err(error) => Err(error),
    }
}

/// Adds the record's leaf to the recomputed tree and compares every stored node it completes.
fn check_merkle_nodes(
    snapshot: &Snapshot,
    frontier: &mut Frontier<Digest>,
    record_hash: &Digest,
) -> Result<Option<Problem>> {
    let mut completed = Vec::new();
    frontier.push(
        &LogTreeHasher,
        leaf_hash(record_hash),
        |level, index, node| {
            if level >= MERKLE_STORED_LEVEL_MIN {
                completed.push((level, index, *node));
            }
        },
    );
    for (level, index, node) in completed {
        let stored = snapshot.merkle_node_stored(level, index)?;
        if stored != Some(node) {
            return Ok(Some(Problem::Merkle {
                fault: MerkleFault::Node {
                    level,
                    index,
                    stored,
                    computed: node,
                },
            }));
        }
    }
    Ok(None)
}

/// The stored frontier and the node count must be those of the records' tree.
fn check_merkle_frontier(snapshot: &Snapshot, walk: &Walk) -> Result<Option<Problem>> {
    let size = walk.next.0;
    let stored = match snapshot.merkle_frontier(size) {
        Ok(stored) => stored,
        Err(Error::CorruptMeta { item, fault }) => {
            return Ok(Some(Problem::Merkle {
                fault: MerkleFault::Meta { item, fault },
            }));
        }
        Err(error) => return Err(error),
    };
    if stored != walk.frontier {
        return Ok(Some(Problem::Merkle {
            fault: MerkleFault::Frontier {
                stored: stored.root(&LogTreeHasher),
                computed: walk.frontier.root(&LogTreeHasher),
            },
        }));
    }
    let count = snapshot.merkle_node_count()?;
    if count != stored_node_count(size) {
        return Ok(Some(Problem::Merkle {
            fault: MerkleFault::NodeCount {
                stored: count,
                size,
                expected: stored_node_count(size),
            },
        }));
    }
    Ok(None)
}

fn check_key(
    snapshot: &Snapshot,
    key: &str,
    position: Position,
    record: &RecordView<'_>,
) -> Result<Option<Problem>> {
    let Some(entry) = snapshot.idempotency.get(key)? else {
        return Ok(Some(Problem::Idempotency {
            fault: IdempotencyFault::NotIndexed {
                key: key.to_owned(),
            },
        }));
    };
    let (indexed, content) = match crate::log::tables::unseal_idempotency(key, &entry.value()) {
        Ok(found) => found,
        Err(_) => {
            return Ok(Some(Problem::Idempotency {
                fault: IdempotencyFault::Checksum {
                    key: key.to_owned(),
                },
            }));
        }
    };
    let computed = content_hash(record.stream, record.kind, record.payload_hash());
    if indexed != position.0 || Digest(content) != computed {
        return Ok(Some(Problem::Idempotency {
            fault: IdempotencyFault::Mismatch {
                key: key.to_owned(),
                indexed: Position(indexed),
                content: Digest(content),
                computed,
            },
        }));
    }
    Ok(None)
}

fn check_indexes(snapshot: &Snapshot, walk: &Walk) -> Result<Option<Problem>> {
    let stored = snapshot.head()?;
    if stored.next != walk.next || stored.hash != walk.prev {
        return Ok(Some(Problem::Head {
            stored_next: stored.next,
            stored_hash: stored.hash,
            next: walk.next,
            hash: walk.prev,
        }));
    }
    if let Some(problem) = check_merkle_frontier(snapshot, walk)? {
        return Ok(Some(problem));
    }
    let keys = snapshot.idempotency.len()?;
    if keys != walk.keyed {
        return Ok(Some(Problem::Idempotency {
            fault: IdempotencyFault::Count {
                indexed: keys,
                carried: walk.keyed,
            },
        }));
    }
    let streams = snapshot.stream_count()?;
    if streams != walk.streams.len() as u64 {
        return Ok(Some(Problem::StreamIndex {
            stream: String::new(),
            fault: StreamIndexFault::Count {
                indexed: streams,
                records: walk.streams.len() as u64,
            },
        }));
    }
    check_stream_index(snapshot, walk)
}

/// The stream index against the runs the walk saw, one pass over the index in stream order:
/// every indexed stream must be one the records have, and its runs, tiling its versions from
/// 0, must fold to the fingerprint of the runs its records lie in. A stream whose runs differ
/// is then checked run by run ([`check_stream_runs`]) to name the first wrong one.
fn check_stream_index(snapshot: &Snapshot, walk: &Walk) -> Result<Option<Problem>> {
    if let Some(stream) = stray_archived_stream(snapshot, walk)? {
        return Ok(Some(stray(&stream)));
    }
    let mut problem = None;
    let mut tails = 0u64;
    snapshot.visit_tail_names(|name| {
        let Some(seen) = walk.streams.get(name) else {
            problem = Some(stray(name));
            return Ok(false);
        };
        tails += 1;
        problem = check_tail_runs(snapshot, name, seen)?;
        Ok(problem.is_none())
    })?;
    if problem.is_some() {
        return Ok(problem);
    }
    if tails != walk.streams.len() as u64 {
        // A stream with records and no tail: name the first, in name order.
        let mut names: Vec<&String> = walk.streams.keys().collect();
        names.sort_unstable();
        for name in names {
            if snapshot.tail(name)?.is_none() {
                let length = walk.streams.get(name).map_or(0, |s| s.length);
                return check_stream_runs(snapshot, name, length);
            }
        }
    }
    Ok(None)
}

/// A stream the index lists that the walk did not see.
fn stray(stream: &str) -> Problem {
    Problem::StreamIndex {
        stream: stream.to_owned(),
        fault: StreamIndexFault::Stray,
    }
}

/// The first stream with archived blocks of runs and no record (every such stream also
/// lacks a tail, or its tail is found stray after).
fn stray_archived_stream(snapshot: &Snapshot, walk: &Walk) -> Result<Option<String>> {
    let mut last_block_stream: Option<String> = None;
    for entry in snapshot.stream_runs.iter()? {
        let (key, _) = entry?;
        let stream = key.value().0;
        if last_block_stream.as_deref() == Some(stream) {
            continue;
        }
        if !walk.streams.contains_key(stream) {
            return Ok(Some(stream.to_owned()));
        }
        last_block_stream = Some(stream.to_owned());
    }
    Ok(None)
}

/// Whether the runs the index lists for `name` tile its versions from 0 and lie where the
/// walk `seen` its records; the problem when they do not.
fn check_tail_runs(snapshot: &Snapshot, name: &str, seen: &StreamWalk) -> Result<Option<Problem>> {
    let mut runs = IndexRuns::default();
    let mut next_version = 0u64;
    let mut tiles = true;
    let visited = snapshot.visit_runs(name, |run| {
        tiles = run.first_version == next_version && run.count > 0;
        next_version = run.first_version.saturating_add(run.count);
        runs.push(run);
        Ok(tiles)
    });
    let corrupt = match visited {
        Ok(()) => false,
        Err(Error::CorruptMeta { .. }) => true,
        Err(error) => return Err(error),
    };
    if corrupt || !tiles || next_version != seen.length || runs.fingerprint() != seen.fingerprint()
    {
        let problem = check_stream_runs(snapshot, name, seen.length)?.or_else(|| {
            Some(Problem::StreamIndex {
                stream: name.to_owned(),
                fault: StreamIndexFault::Astray,
            })
        });
        return Ok(problem);
    }
    Ok(None)
}

/// The runs of `stream` must tile versions `0..count` and each must start and end on records
/// of that stream at those versions. With the walk's check that versions rise by one in
/// position order, that pins every record of the run.
fn check_stream_runs(snapshot: &Snapshot, stream: &str, count: u64) -> Result<Option<Problem>> {
    let fail = |fault: StreamIndexFault| {
        Ok(Some(Problem::StreamIndex {
            stream: stream.to_owned(),
            fault,
        }))
    };
    let mut next_version = 0;
    let mut problem = None;
    let visited = snapshot.visit_runs(stream, |run| {
        let StreamRun {
            first_version,
            first_position,
            count: run,
        } = run;
        if first_version != next_version {
            problem = Some(StreamIndexFault::RunStart {
                count: run,
                first_version: StreamVersion(first_version),
                expected: StreamVersion(next_version),
            });
            return Ok(false);
        }
        let last_position = first_position + (run - 1);
        for (position, version) in [
            (first_position, first_version),
            (last_position, first_version + run - 1),
        ] {
            let record = snapshot.get(Position(position));
            let matches = matches!(&record, Ok(Some(r))
                if r.stream == stream && r.version == StreamVersion(version));
            if !matches {
                problem = Some(StreamIndexFault::RunEnd {
                    version: StreamVersion(version),
                    position: Position(position),
                });
                return Ok(false);
            }
        }
        next_version = first_version + run;
        Ok(true)
    });
    match visited {
        Ok(()) => {}
        Err(Error::CorruptMeta { item, fault }) => {
            return fail(StreamIndexFault::Meta { item, fault });
        }
        Err(error) => return Err(error),
    }
    if let Some(fault) = problem {
        return fail(fault);
    }
    if next_version != count {
        return fail(StreamIndexFault::Coverage {
            covered: next_version,
            count,
        });
    }
    Ok(None)
}
