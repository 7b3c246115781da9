//! Importing an export file: check the whole file first, then append its records verbatim
//! through [`WriteSession::append_sealed`], with every projection applied as usual.
//!
//! A file that fails any check is refused before a byte is written; one that does not continue
//! an existing log, or whose stream versions, idempotency keys or payloads the log could not
//! take, is refused before the log is opened writable. The target is left as it was on any failure: a new log is built under `<target>.importing` and renamed into place
//! only once complete; an existing log takes the whole file in one transaction.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File};
use std::io::BufReader;
use std::path::Path;

use super::open::{publish, sweep_stale};
use super::{Durability, Sharing, Store, StoreOptions, WriteSession};
use crate::error::Result;
use crate::export::{self, ExportDamage, ExportError, ExportMismatch, ExportSummary};
use crate::log::append::SealProblem;
use crate::output_path::{Output, private_name};
use crate::record::Record;
use crate::storage::Readable;

/// Records per transaction when building a new log.
const IMPORT_BATCH_RECORDS: u64 = 8_192;
/// Records per sealed append: one stream's consecutive records, at most this many.
const SEALED_RUN_RECORDS_MAX: usize = 1_024;

/// Which pass of an import a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImportStage {
    /// Reading the file and checking every record, link and the root.
    Check,
    /// Appending the records to the log.
    Write,
}

impl Store {
    /// The work of [`Import::run`].
    pub(crate) fn import(
        file: &Path,
        target: &Path,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<ExportSummary> {
        Store::import_with(file, target, StoreOptions::default(), progress)
    }

    /// The work of [`Import::run_with`].
    #[cfg_attr(feature = "tracing", tracing::instrument(level = "info", name = "import", skip_all, fields(file = %file.display())))]
    pub(crate) fn import_with(
        file: &Path,
        target: &Path,
        options: StoreOptions,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<ExportSummary> {
        let summary = export::check(file, &mut |done| progress(ImportStage::Check, done))?;
        if target.exists() {
            Store::import_onto(file, target, options, &summary, progress)?;
        } else {
            Store::import_new(file, target, &summary, progress)?;
        }
        Ok(summary)
    }

    /// Appends the checked export `file` to the existing log at `target`, opened with
    /// `options`, in one durable transaction.
    fn import_onto(
        file: &Path,
        target: &Path,
        options: StoreOptions,
        summary: &ExportSummary,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<()> {
        // Checked read-only first: a log the export does not continue, or could not take
        // verbatim, is not even opened for writing (which would let redb touch the file).
        {
            let reader = Store::open_read_only(target)?;
            let snapshot = reader.snapshot()?;
            check_continues(&snapshot, summary)?;
            let projections = super::projections_with(options.projections.clone())?;
            check_sealable(&snapshot, &projections, file)?;
        }
        let options = StoreOptions {
            create: false,
            ..options
        };
        let store = Store::open_with(target, options)?;
        store.import_checked(file, summary, None, progress)
    }

    /// Builds a new log at `target` from the checked export `file`, which must start at
    /// position 0: under a name of this process's own, published only when complete.
    fn import_new(
        file: &Path,
        target: &Path,
        summary: &ExportSummary,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<()> {
        if summary.header.from.0 != 0 {
            return Err(ExportError::Mismatch {
                problem: Box::new(ExportMismatch::NotFromStart {
                    from: summary.header.from,
                }),
            }
            .into());
        }
        // The new log is built under a name of this process's own, exclusive (no other
        // process knows it), with deferred commits, and published only when complete.
        crate::output_path::check(target, Output::File, None)?;
        sweep_stale(target);
        let temporary = private_name(target, "importing");
        if temporary.exists() {
            fs::remove_file(&temporary)?;
        }
        let built = (|| {
            let options = StoreOptions {
                create: true,
                sharing: Sharing::Exclusive,
                ..StoreOptions::default()
            };
            let store = Store::open_with(&temporary, options)?;
            store.import_checked(file, summary, Some(IMPORT_BATCH_RECORDS), progress)?;
            store.flush()
        })();
        if let Err(error) = built {
            // Best effort: the error that matters is the import's.
            let _ = fs::remove_file(&temporary);
            return Err(error);
        }
        publish_built(&temporary, target)
    }

    /// Appends the records of a checked export file: in one durable transaction when `batch`
    /// is `None`, else in deferred transactions of `batch` records (for a new log, which is
    /// discarded whole on failure). The last transaction commits only if the head and root
    /// are the file's.
    fn import_checked(
        &self,
        file: &Path,
        summary: &ExportSummary,
        batch: Option<u64>,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<()> {
        let header = &summary.header;
        let mut reader = export::open(file)?;
        if reader.header() != header {
            return Err(mismatch(ExportMismatch::FileChanged));
        }
        check_continues(&self.snapshot()?, summary)?;
        let durability = match batch {
            None => Durability::Immediate,
            Some(_) => Durability::Deferred,
        };
        let mut done = 0u64;
        loop {
            let finished = self.write_with(durability, |session| {
                let start = session.head();
                let (finished, in_transaction) = append_batch(session, &mut reader, batch)?;
                // `append_sealed` takes each record at the next position or refuses it: the
                // transaction's head moved by exactly the records it read.
                assert_eq!(
                    session.head().next.0,
                    start.next.0 + in_transaction,
                    "an import's transaction appends every record it reads"
                );
                done += in_transaction;
                progress(ImportStage::Write, done);
                if finished {
                    check_end(session, header)?;
                }
                Ok(finished)
            })?;
            if finished {
                return Ok(());
            }
        }
    }
}

/// Appends the next records of `reader` in `session`, one stream's run at a time, up to
/// `batch` of them (all the rest when `None`): whether the file is done, and how many records
/// were appended.
fn append_batch(
    session: &mut WriteSession<'_>,
    reader: &mut export::ExportReader<BufReader<File>>,
    batch: Option<u64>,
) -> Result<(bool, u64)> {
    let mut run: Vec<Record> = Vec::new();
    let mut in_transaction = 0u64;
    let finished = loop {
        if batch.is_some_and(|batch| in_transaction >= batch) {
            break false;
        }
        let Some(record) = reader.next_record()? else {
            break true;
        };
        let continues = run
            .first()
            .is_some_and(|first| first.stream == record.stream);
        if !continues || run.len() >= SEALED_RUN_RECORDS_MAX {
            flush_run(session, &mut run)?;
        }
        run.push(record);
        in_transaction += 1;
    };
    flush_run(session, &mut run)?;
    Ok((finished, in_transaction))
}

/// Refuses unless the log `session` writes ends where the export of `header` does: head, head
/// hash and root.
fn check_end(session: &WriteSession<'_>, header: &export::ExportHeader) -> Result<()> {
    let head = session.head();
    let root = session.merkle_root();
    if head.next != header.to || head.hash != header.head || root != header.root {
        return Err(mismatch(ExportMismatch::End {
            next: head.next,
            head: head.hash,
            root,
            to: header.to,
            export_head: header.head,
            export_root: header.root,
        }));
    }
    Ok(())
}

/// Names the log built at `temporary` `target`, unless a file appeared there meanwhile; the
/// log built is removed when it cannot be named.
fn publish_built(temporary: &Path, target: &Path) -> Result<()> {
    match publish(temporary, target) {
        Ok(()) => Ok(()),
        Err(error) => {
            let _ = fs::remove_file(temporary);
            if error.kind() == std::io::ErrorKind::AlreadyExists {
                // Another process created a log there meanwhile: it may hold acknowledged
                // appends, so it is never replaced.
                return Err(ExportError::Mismatch {
                    problem: Box::new(ExportMismatch::Appeared {
                        path: target.to_path_buf(),
                    }),
                }
                .into());
            }
            Err(error.into())
        }
    }
}

/// Refuses unless the log in `snapshot` ends where the export starts: head and Merkle tree.
fn check_continues(snapshot: &crate::log::read::Snapshot, summary: &ExportSummary) -> Result<()> {
    let header = &summary.header;
    let head = snapshot.head()?;
    if head.next != header.from || head.hash != header.prev {
        return Err(mismatch(ExportMismatch::Start {
            next: head.next,
            head: head.hash,
            from: header.from,
            prev: header.prev,
        }));
    }
    if export::frontier_at(snapshot, header.from.0)? != header.frontier {
        return Err(mismatch(ExportMismatch::Frontier));
    }
    Ok(())
}

/// Refuses an export whose records the log in `snapshot` could not take verbatim: a stream
/// version out of sequence, an idempotency key the log already holds or the export repeats,
/// or a payload one of `projections` cannot decode. The write refuses them too, but only
/// inside its transaction, after the writable open has rewritten redb's bookkeeping in the
/// file; read here, such a refusal leaves the file's bytes as they were. What only applying
/// a record to the tables can find (a projection's invariant) is still refused by the
/// write. One pass over the file, with one counter per stream it names and each key it holds.
fn check_sealable(
    snapshot: &crate::log::read::Snapshot,
    projections: &crate::projection::Projections,
    file: &Path,
) -> Result<()> {
    let mut reader = export::open(file)?;
    let mut next_versions: HashMap<String, u64> = HashMap::new();
    let mut keys: HashSet<String> = HashSet::new();
    while let Some(record) = reader.next_record()? {
        let damaged = |problem: SealProblem| -> crate::error::Error {
            ExportError::Damaged {
                position: record.position,
                problem: Box::new(ExportDamage::Unsealable(problem)),
            }
            .into()
        };
        let next = match next_versions.get_mut(&record.stream) {
            Some(next) => next,
            None => {
                let start = snapshot
                    .stream_version(&record.stream)?
                    .map_or(Some(0), |version| version.0.checked_add(1));
                let Some(start) = start else {
                    return Err(damaged(SealProblem::VersionOverflow));
                };
                next_versions.entry(record.stream.clone()).or_insert(start)
            }
        };
        if record.version.0 != *next {
            return Err(damaged(SealProblem::Version { next: *next }));
        }
        *next = next.saturating_add(1);
        if let Some(key) = record.idempotency_key.as_deref()
            && (snapshot.idempotency.get(key)?.is_some() || !keys.insert(key.to_owned()))
        {
            return Err(damaged(SealProblem::KeyUsed {
                key: key.to_owned(),
            }));
        }
        match projections.check_payload(&record) {
            Err(crate::error::Error::UndecodableEvent {
                kind,
                schema,
                problem,
            }) => {
                return Err(damaged(SealProblem::Undecodable {
                    kind,
                    schema,
                    cause: problem.to_string(),
                }));
            }
            other => other?,
        }
    }
    Ok(())
}

/// Appends the run of one stream's records; a record the log cannot take verbatim (a stream
/// version out of sequence, a reused idempotency key) is damage at its position.
fn flush_run(session: &mut WriteSession<'_>, run: &mut Vec<Record>) -> Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    match session.append_sealed(run) {
        Err(crate::error::Error::Append(crate::log::append::AppendError::NotSealable {
            position,
            problem,
        })) => Err(ExportError::Damaged {
            position,
            problem: Box::new(ExportDamage::Unsealable(problem)),
        }
        .into()),
        other => {
            run.clear();
            other
        }
    }
}

fn mismatch(problem: ExportMismatch) -> crate::error::Error {
    ExportError::Mismatch {
        problem: Box::new(problem),
    }
    .into()
}

/// Importing an export file: into a new log, or onto the end of the log it continues.
#[derive(Clone, Copy, Debug)]
pub struct Import;

impl Import {
    /// Imports the export file at `file` into the log at `target`: a new log when there is no
    /// file at `target` (the export must then start at position 0), or the continuation of an
    /// existing log whose head and tree are where the export starts. The whole file is checked
    /// before anything is written; the resulting log has the export's head hash and root.
    /// `progress` hears the records done so far in each stage.
    pub fn run(
        file: &Path,
        target: &Path,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<ExportSummary> {
        Store::import(file, target, progress)
    }

    /// [`crate::maintenance::Import::run`], opening an existing `target` with `options` (its sharing mode and
    /// busy timeout, say); a new log is built exclusive whatever they say, and published only
    /// when complete.
    pub fn run_with(
        file: &Path,
        target: &Path,
        options: StoreOptions,
        progress: &mut dyn FnMut(ImportStage, u64),
    ) -> Result<ExportSummary> {
        Store::import_with(file, target, options, progress)
    }
}
