//! Cutting the log: [`crate::archive::Archives::archive_before`] writes a prefix of the log to an archive file,
//! makes it durable, and then, in one transaction, cuts the log there, keeping what later work
//! needs (`log/cut.rs`), with a record of the cut appended; the segments holding the records
//! cut go afterwards, in steps of their own.
//!
//! The order is what makes it safe against a crash at any point: the archive is whole and
//! synced under its temporary name before the transaction that cuts begins, and that
//! transaction commits whole or not at all. A crash before the commit leaves the log as it
//! was (and an archive beside it that nothing names yet); after it, the log is cut, whole at
//! every step, and the archive is named once the last step is done.

use std::path::{Path, PathBuf};

use super::Store;
use crate::error::{ArchiveError, Result};
use crate::log::cut::ArchivedRecord;
pub use crate::log::cut::{Cut, CutProjection};
use crate::log::read::{Direction, Snapshot};
use crate::projection::Projections;
use crate::record::Position;
use crate::storage::Writer;

/// Records a verification of archives replays at a time.
const VERIFY_BATCH_RECORDS: usize = 8192;

/// How a cut goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArchiveOptions {
    /// Also drop the idempotency keys of the records archived (and of every cut before), so
    /// that the index stays bounded too: a key used again after the cut is then a new append,
    /// not a duplicate. Off by default: every key stays, and exactly-once holds for ever.
    pub drop_keys: bool,
}

/// What a cut did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[must_use]
pub struct ArchiveReport {
    /// The cut as its record says it.
    pub cut: Cut,
    /// The position of the cut record.
    pub record: Position,
    /// The archive file written.
    pub archive: PathBuf,
    /// How many records went to the archive.
    pub archived: u64,
}

impl ArchiveReport {
    /// The report of `cut`, its record at `record`, its archive at `archive`.
    fn of(cut: Cut, record: Position, archive: &Path) -> ArchiveReport {
        ArchiveReport {
            archived: cut.before.0 - cut.from.0,
            cut,
            record,
            archive: archive.to_owned(),
        }
    }
}

impl Store {
    /// The work of [`Archives::archive_before`].
    pub(crate) fn archive_before(
        &self,
        before: Position,
        path: impl AsRef<Path>,
    ) -> Result<ArchiveReport> {
        self.archive_before_with(
            before,
            path.as_ref(),
            ArchiveOptions::default(),
            &mut |_| {},
        )
    }

    /// The work of [`Archives::archive_before_with`].
    pub(crate) fn archive_before_with(
        &self,
        before: Position,
        path: &Path,
        options: ArchiveOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ArchiveReport> {
        self.require_writable()?;
        let snapshot = self.snapshot()?;
        let files = self.files()?;
        let name = match check_cut(&snapshot, &self.projections, files.as_ref(), before, path)? {
            Checked::Cut(name) => name,
            Checked::Finish(interrupted) => return interrupted.finish(self, snapshot, path),
        };
        // A cut a kill interrupted while its segments were going is finished first (before
        // the snapshot this cut reads, which would hold the pages the steps free).
        drop(snapshot);
        self.finish_cut()?;
        let (cut, record, temporary) = self.commit_cut(before, path, name, options, progress)?;
        // Every read of the log as it was has ended with `commit_cut`: a live one would hold
        // the pages the steps free.
        self.finish_cut()?;
        super::open::publish(&temporary, path)?;
        Ok(ArchiveReport::of(cut, record, path))
    }

    /// Writes the archive of the records before `before` under its temporary name (returned)
    /// and commits the cut (steps 1 to 3 of [`crate::archive::Archives::archive_before_with`]), its archive to be
    /// named `name`.
    fn commit_cut(
        &self,
        before: Position,
        path: &Path,
        name: String,
        options: ArchiveOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<(Cut, Position, PathBuf)> {
        let snapshot = self.snapshot()?;
        let files = self.files()?;
        let from = snapshot.start();
        let read = self.positions_read(&snapshot, before)?;
        // The archive is written under its temporary name and named only once the cut has
        // committed: a kill before the commit leaves the log uncut and no file under the
        // archive's name (a rerun writes it again); a kill after it leaves the cut and its
        // whole archive under the temporary name, which a rerun names ([`interrupted`]).
        let partial =
            crate::export::write_partial(&snapshot, from, before, path, files.as_ref(), progress)?;
        let archive_digest = partial.digest;
        let archived = before.0 - from.0;
        let replay = crate::audit::replay::replay_with(
            &snapshot,
            &self.projections,
            Some(before),
            &mut |applied| progress(archived + applied),
        )?;
        let projections = self.cut_digests(&replay)?;
        let cut = Cut {
            from,
            before,
            anchor: anchor_before(&snapshot, before)?,
            keyed: 0,
            archive: name,
            archive_digest,
            projections,
        };
        // The cut record takes the time of the log's last record, not the clock's: a cut is a
        // function of the log and of its arguments alone, so two copies of one log cut alike
        // write the same record (a replica's chain stays its source's).
        let at_ms = last_record_ms(&snapshot)?;
        let mut archived_records = archived_hashes(&snapshot, from, before, &read)?;
        let committed = self.write_to_file(super::Durability::Immediate, |session| {
            session.cut(
                cut,
                &replay,
                &read,
                &mut archived_records,
                options.drop_keys,
                at_ms,
            )
        });
        // A failed commit leaves the archive under its temporary name: the commit may have
        // reached the disk all the same (an error after the write), and then it is the only
        // copy of the records cut, which a rerun names. When the log is uncut, a rerun writes
        // the file again over it.
        let (cut, record) = committed?;
        // Postconditions of `WriteSession::cut`, which records the cut it was given, its
        // record appended past the records it cuts, and no key counted when keys are dropped.
        assert!(
            cut.from == from && cut.before == before && record >= before,
            "the cut recorded is the one asked for, its record past the records cut"
        );
        assert!(
            !options.drop_keys || cut.keyed == 0,
            "a cut that drops keys counts none"
        );
        Ok((cut, record, partial.temporary))
    }

    /// The positions before `before` that a projection's rows in `snapshot` still read, which
    /// the cut keeps.
    fn positions_read(
        &self,
        snapshot: &Snapshot,
        before: Position,
    ) -> Result<std::collections::BTreeSet<u64>> {
        let state = snapshot.state();
        let mut read = std::collections::BTreeSet::new();
        for projection in self.projections.iter() {
            projection.records_read(&state, before, &mut |position| {
                read.insert(position.0);
            })?;
        }
        Ok(read)
    }

    /// Each projection's name, version and digest in `replay`, the state at the cut, sorted by
    /// name: what the cut record names.
    fn cut_digests(&self, replay: &crate::audit::replay::Replay) -> Result<Vec<CutProjection>> {
        let replayed = replay.state()?;
        let mut projections = Vec::new();
        for projection in self.projections.iter() {
            projections.push(CutProjection {
                name: projection.name().to_owned(),
                version: projection.version(),
                digest: crate::projection::digest::digest(&replayed, projection.as_ref())?,
            });
        }
        projections.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(projections)
    }
}

impl Store {
    /// Finishes the log's last cut: removes the segments whose records all lie below its
    /// start, moving the records a projection still reads out of them first
    /// (`log::cut::finish_step`), in durable transactions of about a 128th of the file each
    /// (`log::cut::finish_step_bytes`), until none is left. A cut's own
    /// transaction leaves them (so that it writes only what is new, and the pages they free are
    /// reused step by step instead of the file growing by all it keeps at once); the cut,
    /// a rerun of it, the next cut and [`crate::maintenance::Compaction::run`] finish it. Each step leaves a whole
    /// log, so a kill between or within steps loses nothing and the next call goes on.
    pub(crate) fn finish_cut(&self) -> Result<()> {
        use crate::log::cut::{FinishStep, finish_step, finish_step_bytes};
        let budget = finish_step_bytes(self.file_bytes()?);
        loop {
            let step = crate::error::guarded(|| {
                self.journal_ready()?;
                let txn = self.database()?.begin_write()?;
                match finish_step(&Writer::redb(&txn), budget)? {
                    FinishStep::Finished => {
                        txn.abort()?;
                        Ok(FinishStep::Finished)
                    }
                    FinishStep::Stepped => {
                        self.commit_durably(txn)?;
                        Ok(FinishStep::Stepped)
                    }
                }
            })
            .map_err(|error| self.failed(error))?;
            if step == FinishStep::Finished {
                return Ok(());
            }
        }
    }

    /// The work of [`Archives::check`].
    pub(crate) fn check_archive(&self, before: Position, path: &Path) -> Result<()> {
        let files = self.files()?;
        check_cut(
            &self.snapshot()?,
            &self.projections,
            files.as_ref(),
            before,
            path,
        )
        .map(drop)
    }
}

/// What is left of a cut a kill interrupted after it committed: the log's last cut is the
/// one asked for (the same position, the same archive name) and its archive is whole (its
/// blake3 the cut record's) under its temporary name, or already under its own.
enum Interrupted {
    /// The archive is whole under its temporary name: it is given its own.
    Unnamed(PathBuf),
    /// The archive is whole under its name: the cut was done.
    Done,
}

impl Interrupted {
    /// Finishes the cut's steps and names the archive when they are not done yet, and reports
    /// the cut as it committed.
    fn finish(self, store: &Store, snapshot: Snapshot, path: &Path) -> Result<ArchiveReport> {
        let (record, cut) = snapshot
            .cut_at()
            .cloned()
            .expect("interrupted() found the log's last cut");
        // The snapshot would hold the pages the steps free until it ends.
        drop(snapshot);
        store.finish_cut()?;
        if let Interrupted::Unnamed(temporary) = self {
            super::open::publish(&temporary, path)?;
        }
        Ok(ArchiveReport::of(cut, record, path))
    }
}

/// Whether the cut of the records before `before` into `path` (file name `name`) is the log's
/// last cut already, committed before a kill or by an earlier run, with its archive whole.
fn interrupted(
    snapshot: &Snapshot,
    before: Position,
    path: &Path,
    name: &str,
) -> Result<Option<Interrupted>> {
    let Some(cut) = snapshot.cut() else {
        return Ok(None);
    };
    if cut.before != before || cut.archive != name {
        return Ok(None);
    }
    let whole = |file: &Path| -> Result<bool> {
        Ok(
            std::fs::symlink_metadata(file).is_ok_and(|found| found.is_file())
                && crate::export::file_digest(file)? == cut.archive_digest,
        )
    };
    if whole(path)? {
        return Ok(Some(Interrupted::Done));
    }
    let temporary = crate::export::partial_path(path);
    if std::fs::symlink_metadata(path).is_err() && whole(&temporary)? {
        return Ok(Some(Interrupted::Unnamed(temporary)));
    }
    Ok(None)
}

/// What [`check_cut`] found to do.
enum Checked {
    /// A new cut, its archive of this file name.
    Cut(String),
    /// The same cut, committed already: to finish, not to refuse.
    Finish(Interrupted),
}

/// [`crate::archive::Archives::check`] on `snapshot`.
fn check_cut(
    snapshot: &Snapshot,
    projections: &Projections,
    files: Option<&crate::output_path::StoreFiles>,
    before: Position,
    path: &Path,
) -> Result<Checked> {
    let name = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(|| ArchiveError::ArchiveName {
            path: path.to_owned(),
        })?
        .to_owned();
    // A rerun of a cut that committed (before a kill that left its archive unnamed, or not):
    // finished, not refused.
    if let Some(interrupted) = interrupted(snapshot, before, path, &name)? {
        return Ok(Checked::Finish(interrupted));
    }
    if let Some(folder) = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
        && !folder.is_dir()
    {
        return Err(ArchiveError::NoFolder {
            folder: folder.to_owned(),
        }
        .into());
    }
    // The archive may become the only copy of the records cut: never a file of the store, a
    // FIFO or a device, whatever name or link leads there.
    crate::output_path::check(path, crate::output_path::Output::File, files)?;
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(ArchiveError::ArchiveExists {
            path: path.to_owned(),
        }
        .into());
    }
    let head = snapshot.head()?;
    let from = snapshot.start();
    if before > head.next {
        return Err(ArchiveError::PastHead {
            position: before,
            head: head.next,
        }
        .into());
    }
    if before < from || (before == from && snapshot.cut().is_some()) {
        return Err(ArchiveError::NotForward {
            position: before,
            before: from,
        }
        .into());
    }
    for projection in projections.iter() {
        match snapshot.checkpoint(projection.name())? {
            Some(checkpoint) if checkpoint.next >= head.next => {}
            _ => {
                return Err(ArchiveError::Behind {
                    projection: projection.name().to_owned(),
                }
                .into());
            }
        }
    }
    Ok(Checked::Cut(name))
}

/// The hash of the last record before `before` in `snapshot` (zero when there is none): what a
/// cut there anchors the records it keeps to.
fn anchor_before(snapshot: &Snapshot, before: Position) -> Result<crate::hash::Digest> {
    Ok(match before.0.checked_sub(1) {
        Some(last) => snapshot.record_hash(Position(last))?,
        None => crate::hash::Digest::ZERO,
    })
}

/// The records of `snapshot` from `from` on, as a cut of the records `from .. before` keeps
/// them: each one's hash, whether it has an idempotency key, and whether a projection still
/// reads it (its position in `read`). None when the cut archives no record.
fn archived_hashes<'r>(
    snapshot: &Snapshot,
    from: Position,
    before: Position,
    read: &'r std::collections::BTreeSet<u64>,
) -> Result<impl Iterator<Item = Result<ArchivedRecord>> + 'r> {
    let mut records = if from < before {
        Some(snapshot.records(from, Direction::Forward)?)
    } else {
        None
    };
    Ok(std::iter::from_fn(move || {
        records.as_mut()?.next_view().map(|record| {
            record.map(|record| ArchivedRecord {
                hash: record.hash,
                keyed: record.idempotency_key.is_some(),
                kept: read.contains(&record.position.0),
            })
        })
    }))
}

/// The time of the log's last record (0 for an empty log): a cut record's time, so that a
/// cut is a function of the log and of its arguments alone.
pub(super) fn last_record_ms(snapshot: &crate::log::read::Snapshot) -> Result<u64> {
    Ok(match snapshot.head()?.next.0.checked_sub(1) {
        Some(last) => snapshot
            .get(Position(last))?
            .map_or(0, |record| record.at_ms),
        None => 0,
    })
}

impl Store {
    /// The work of [`Archives::verify`].
    pub(crate) fn verify_archives(
        &self,
        archives: &[PathBuf],
        progress: &mut dyn FnMut(u64),
    ) -> Result<Option<crate::audit::Finding>> {
        let snapshot = self.snapshot()?;
        let start = snapshot.start();
        if snapshot.cut().is_none() && !archives.is_empty() {
            return Err(ArchiveError::NeverCut.into());
        }
        // Each record checked in its file and against the kept hash, the archives tiling
        // `0 .. start` with the last one's trailer whole.
        let mut archived = self.archived_records(archives, Position(0))?;
        let cuts = crate::log::cut::cuts(&snapshot.reader)?;
        let mut replay = crate::audit::replay::Replay::empty(&snapshot.reader)?;
        let mut next = Position(0);
        let mut cut_index = 0;
        if let Some(found) = self.check_cuts_at(&cuts, &replay, next, &mut cut_index)? {
            return Ok(Some(found));
        }
        while next < start {
            // The records up to the next cut's start (or the log's), from the archives in turn.
            let stop = cuts
                .get(cut_index)
                .map_or(start, |(_, cut)| cut.before.min(start));
            let from = next;
            let records = next_archived(&mut archived, &mut next, stop)?;
            replay.apply(
                &self.projections,
                records.into_iter(),
                from,
                next,
                &mut |_| {},
            )?;
            progress(next.0);
            if let Some(found) = self.check_cuts_at(&cuts, &replay, next, &mut cut_index)? {
                return Ok(Some(found));
            }
        }
        // The iterator ends at the log's start, having checked the last archive's end.
        if let Some(extra) = archived.next() {
            extra?;
        }
        Ok(None)
    }

    /// Checks the digests of each of `cuts` from `cut_index` on that starts keeping records at
    /// `at` (a cut's digests are taken at its `before`) against `replay`, the state there,
    /// moving `cut_index` past them: the first projection that replays to another digest than
    /// its cut names.
    fn check_cuts_at(
        &self,
        cuts: &[(Position, Cut)],
        replay: &crate::audit::replay::Replay,
        at: Position,
        cut_index: &mut usize,
    ) -> Result<Option<crate::audit::Finding>> {
        while let Some((record, cut)) = cuts.get(*cut_index)
            && cut.before == at
        {
            *cut_index += 1;
            if let Some(found) = self.replayed_differs(replay, *record, cut)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The first projection `cut` (its record at `record`) names, at the version this store
    /// runs, whose digest in `replay` is not the one the cut names.
    fn replayed_differs(
        &self,
        replay: &crate::audit::replay::Replay,
        record: Position,
        cut: &Cut,
    ) -> Result<Option<crate::audit::Finding>> {
        let state = replay.state()?;
        for named in &cut.projections {
            let Some(projection) = self.projections.get(&named.name) else {
                continue;
            };
            if projection.version() != named.version {
                continue;
            }
            let replayed = crate::projection::digest::digest(&state, projection.as_ref())?;
            if replayed != named.digest {
                return Ok(Some(crate::audit::Finding {
                    position: record,
                    problem: crate::audit::Problem::Cut {
                        fault: crate::record::problem::CutFault::Replayed {
                            before: cut.before,
                            projection: named.name.clone(),
                            named: named.digest,
                            replayed,
                        },
                    },
                }));
            }
        }
        Ok(None)
    }
}

/// The next records of `archived`, from `next` up to `stop` and at most
/// [`VERIFY_BATCH_RECORDS`] of them, moving `next` past them; archives that end before `stop`
/// leave a gap, [`ArchiveError::ArchiveGap`].
fn next_archived(
    archived: &mut ArchivedRecords,
    next: &mut Position,
    stop: Position,
) -> Result<Vec<Result<crate::Record>>> {
    let from = *next;
    let mut records = Vec::new();
    while *next < stop && records.len() < VERIFY_BATCH_RECORDS {
        match archived.next() {
            Some(record) => {
                records.push(Ok(record?));
                *next = Position(next.0 + 1);
            }
            None => {
                return Err(ArchiveError::ArchiveGap {
                    expected: *next,
                    found: None,
                }
                .into());
            }
        }
    }
    // The replay applies the batch as the positions `from .. next`: one record a position.
    assert_eq!(
        next.0 - from.0,
        records.len() as u64,
        "a batch of archived records covers one position a record"
    );
    Ok(records)
}

impl Store {
    /// The work of [`Archives::state_at`].
    pub(crate) fn state_at_with_archives(
        &self,
        at: Position,
        archives: &[PathBuf],
        progress: &mut dyn FnMut(u64),
    ) -> Result<crate::audit::replay::Replay> {
        if archives.is_empty() {
            return self.state_at(at, progress);
        }
        super::guarded(|| {
            let snapshot = self.snapshot()?;
            let head = snapshot.head()?.next;
            if at > head {
                return Err(crate::error::AuditError::SizeBeyondHead {
                    size: at.0,
                    head: head.0,
                }
                .into());
            }
            if snapshot.cut().is_none() {
                return Err(ArchiveError::NeverCut.into());
            }
            let archived = self.archived_records(archives, Position(0))?;
            let kept = snapshot.records(snapshot.start(), Direction::Forward)?;
            let mut replay = crate::audit::replay::Replay::empty(&snapshot.reader)?;
            replay.apply(
                &self.projections,
                archived.chain(kept),
                Position(0),
                at,
                progress,
            )?;
            Ok(replay)
        })
    }
}

/// Records a cut archived, read back from its archive files and each checked against the hash
/// the log keeps for its position ([`crate::archive::Archives::records`]).
pub struct ArchivedRecords {
    snapshot: crate::log::read::Snapshot,
    /// The archives not yet read, by their first position, the next one last.
    readers: Vec<crate::export::ExportReader<std::io::BufReader<std::fs::File>>>,
    current: Option<crate::export::ExportReader<std::io::BufReader<std::fs::File>>>,
    /// The next position to hand out, and the log's start, where the archives end.
    next: Position,
    start: Position,
    done: bool,
}

impl Store {
    /// The work of [`Archives::records`].
    pub(crate) fn archived_records(
        &self,
        archives: &[PathBuf],
        from: Position,
    ) -> Result<ArchivedRecords> {
        let snapshot = self.snapshot()?;
        if snapshot.cut().is_none() && !archives.is_empty() {
            return Err(ArchiveError::NeverCut.into());
        }
        let start = snapshot.start();
        let mut readers = Vec::new();
        for path in archives {
            readers.push(crate::export::open(path)?);
        }
        // Only the archives at or after the one holding `from`, the next one last.
        readers.retain(|reader| reader.header().to > from);
        readers.sort_by_key(|reader| std::cmp::Reverse(reader.header().from));
        Ok(ArchivedRecords {
            snapshot,
            readers,
            current: None,
            next: from,
            start,
            done: false,
        })
    }
}

impl ArchivedRecords {
    fn step(&mut self) -> Result<Option<crate::Record>> {
        while self.next < self.start {
            let reader = match &mut self.current {
                Some(reader) => reader,
                None => match self.readers.pop() {
                    Some(reader) if reader.header().from <= self.next => {
                        self.current.insert(reader)
                    }
                    other => {
                        return Err(ArchiveError::ArchiveGap {
                            expected: self.next,
                            found: other.map(|reader| reader.header().from),
                        }
                        .into());
                    }
                },
            };
            let Some(record) = reader.next_record()? else {
                if let Some(reader) = self.current.take() {
                    let _summary = reader.finish()?;
                }
                continue;
            };
            if record.position < self.next {
                continue;
            }
            let kept = self.snapshot.record_hash(record.position)?;
            if kept != record.hash {
                return Err(ArchiveError::ArchivedHash {
                    position: record.position,
                    found: record.hash,
                    kept,
                }
                .into());
            }
            self.next = Position(record.position.0 + 1);
            return Ok(Some(record));
        }
        if let Some(reader) = self.current.take() {
            // The archive holding the last records must end at the log's start, whole.
            if reader.header().to != self.start {
                return Err(ArchiveError::ArchiveGap {
                    expected: self.start,
                    found: Some(reader.header().to),
                }
                .into());
            }
            let _summary = reader.finish()?;
        }
        Ok(None)
    }
}

impl Iterator for ArchivedRecords {
    type Item = Result<crate::Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.step() {
            Ok(Some(record)) => Some(Ok(record)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(error) => {
                self.done = true;
                Some(Err(error))
            }
        }
    }
}

/// The archives of a store's log: cutting a prefix of the log into an archive file, and
/// reading, checking and replaying through the archives cut before.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// use annals::{ExpectedVersion, NewEvent, Position, Store, archive::Archives};
/// let store = Store::open(dir.path().join("log.redb"))?;
/// store.append("s", ExpectedVersion::Any, &[NewEvent::new("k", 1u64, "x")])?;
/// let report = Archives::of(&store).archive_before(Position(1), dir.path().join("log-0.archive"))?;
/// assert_eq!(report.archived, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Archives<'s> {
    store: &'s Store,
}

impl<'s> Archives<'s> {
    /// The archives of `store`'s log.
    pub fn of(store: &'s Store) -> Archives<'s> {
        Archives { store }
    }
}

impl Archives<'_> {
    /// Archives the records before `before` (from the last cut's, or from 0) to the export
    /// file at `path` and removes them from the live log: see [`crate::archive::Archives::archive_before_with`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use annals::{ExpectedVersion, NewEvent, Position, Store};
    /// let store = Store::open(dir.path().join("log.redb"))?;
    /// for n in 0..10u64 {
    ///     store.append("s", ExpectedVersion::Any, &[NewEvent::new("k", n, "x")])?;
    /// }
    /// let report = annals::archive::Archives::of(&store).archive_before(Position(6), dir.path().join("log-0.archive"))?;
    /// assert_eq!((report.archived, report.record), (6, Position(10)));
    /// let snapshot = store.snapshot()?;
    /// assert_eq!(snapshot.start(), Position(6));
    /// assert_eq!(
    ///     snapshot.get(Position(2)).unwrap_err().to_string(),
    ///     "position 2 is archived before 6 in log-0.archive"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn archive_before(
        &self,
        before: Position,
        path: impl AsRef<Path>,
    ) -> Result<ArchiveReport> {
        self.store.archive_before(before, path)
    }

    /// Cuts the log before `before`, calling `progress` with the records done so far (the
    /// archive's, then the replay's up to the cut):
    ///
    /// 1. writes records `[start, before)` (`start` the log's [start](crate::Snapshot::start))
    ///    as an export file at `path`, synced with its folder before anything is removed;
    /// 2. replays the projections up to `before` (from the last cut's snapshot) and takes
    ///    each one's digest;
    /// 3. in one transaction: keeps that replay as the snapshot, the archived records'
    ///    hashes (the Merkle tree over them), and appends the cut record (stream
    ///    `annals.cuts`, kind `annals.cut`) naming the range, the anchor, the archive's name
    ///    and blake3, and every projection's digest;
    /// 4. removes the segments wholly below the cut in steps of their own, each a durable
    ///    commit of about a 128th of the file, moving out of them first the records a
    ///    projection still reads, so that the pages each step frees are reused by the next
    ///    (the file grows by the cut's transaction and about two steps, not by every record
    ///    kept), and names the archive.
    ///
    /// The stream index, stream versions and every idempotency key stay (unless
    /// [`ArchiveOptions::drop_keys`]), and so do the
    /// archived records a projection's rows still point at (a run's span events, until the
    /// run is pruned): [`crate::Snapshot::get`] reads them back. Refused (with nothing
    /// written but, at worst, the archive file) when `before` is past the head, does not
    /// move the log's start forward, or the archive's path names a file already, or is
    /// refused by [`crate::output_path::check`] (one of the store's own files, in a missing
    /// folder: [`crate::error::OutputPathError`]). The space
    /// of the removed segments is redb's free pages, reused by later appends; `compact`
    /// gives it back to the file system.
    pub fn archive_before_with(
        &self,
        before: Position,
        path: &Path,
        options: ArchiveOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ArchiveReport> {
        self.store
            .archive_before_with(before, path, options, progress)
    }

    /// Refuses, reading the log as of now, a cut that [`crate::archive::Archives::archive_before_with`] would
    /// refuse before it writes anything: an archive path with no UTF-8 file name, one that
    /// names a file already (the log itself, a directory, an earlier archive) or lies in a
    /// folder that does not exist, a cut past the head or not past the log's start, a
    /// projection behind the head. A read-only store tells it too, so that a caller can refuse
    /// before it opens the log writable (a writable open rewrites redb's bookkeeping in the
    /// file); the cut decides again.
    pub fn check(&self, before: Position, path: &Path) -> Result<()> {
        self.store.check_archive(before, path)
    }

    /// Checks a cut log against its archives (`verify --archive`): `archives` (in any order)
    /// must hold every record before the log's start, each one sound in its file
    /// ([`crate::export::ExportReader`]'s checks) and hashing to the hash the log keeps for
    /// its position; the projections are replayed from position 0 through them, and at each
    /// cut must reach the digests its cut record names. Returns the first such disagreement
    /// as a finding (`None`: the archives are the log's history); an archive that is
    /// damaged, missing, or not this log's is an error naming the file's record.
    pub fn verify(
        &self,
        archives: &[PathBuf],
        progress: &mut dyn FnMut(u64),
    ) -> Result<Option<crate::audit::Finding>> {
        self.store.verify_archives(archives, progress)
    }

    /// [`crate::Audit::state_at`] through the archives of a cut log (`state --at N --archive FILE...`):
    /// every projection as of the first `at` records, replayed from position 0, the records
    /// below the log's start read from `archives` (in any order, each checked against the hash
    /// the log keeps for its position, as [`crate::archive::Archives::records`] does) and the rest from
    /// the log. With no archives it is [`crate::Audit::state_at`]; archives given for a log never cut
    /// are [`ArchiveError::NeverCut`].
    ///
    /// Rows that point into the log (a run's span events) read records from it, so those rows
    /// of a state below the start read as [`ArchiveError::Archived`] unless a cut kept them.
    pub fn state_at(
        &self,
        at: Position,
        archives: &[PathBuf],
        progress: &mut dyn FnMut(u64),
    ) -> Result<crate::audit::replay::Replay> {
        self.store.state_at_with_archives(at, archives, progress)
    }

    /// The records from `from` up to the log's [start](crate::Snapshot::start), read from the
    /// archive files of its cuts (`archives`, in any order): each is checked in its file as
    /// `import` checks it, and against the hash the log keeps for its position, so the
    /// archives cannot hand out a record the log's tree does not hold. An archive missing
    /// for a position is [`ArchiveError::ArchiveGap`]; a record of another history is
    /// [`ArchiveError::ArchivedHash`]; archives given for a log never cut are
    /// [`ArchiveError::NeverCut`].
    pub fn records(&self, archives: &[PathBuf], from: Position) -> Result<ArchivedRecords> {
        self.store.archived_records(archives, from)
    }
}
