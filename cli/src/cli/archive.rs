//! `archive`: cuts a log before a position or a time
//! ([`annals::archive::Archives::archive_before`]): the records before it go to an archive file (an
//! export file), and the log keeps the rest, with every proof, index and projection.

use std::io::{self, Write};
use std::process::ExitCode;

use serde::Serialize;

use super::args::{ArchiveArgs, CutPoint};
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::open::joining;
use super::progress::ProgressLine;
use super::render::print_json;
use annals::display::grouped;
use annals::output_path::Output;
use annals::{Direction, Position, Store, StoreOptions, archive::ArchiveOptions};

/// What `archive --json` prints.
#[derive(Serialize)]
struct ArchiveJson {
    /// The archive file written.
    archive: String,
    /// The first position archived.
    from: u64,
    /// The first position the log keeps.
    before: u64,
    /// The position of the cut record.
    record: u64,
    /// blake3 of the archive file, lower-case hex.
    archive_blake3: String,
}

pub(crate) fn archive(args: ArchiveArgs) -> Result<ExitCode, Failure> {
    // Every refusal a read-only look can make (the archive's path against the store's files
    // and the archives of its cuts among them), so that a refusal leaves the log's bytes as
    // they were.
    refuse_read_only(&args)?;
    let mut line = None;
    let report = joining(&args.access, |sharing| {
        let options = StoreOptions {
            sharing,
            busy_timeout: args.access.wait,
            ..StoreOptions::default()
        };
        let store = Store::open_with(&args.log.db, options)?;
        let before = cut_position(&store, args.before)?;
        let start = store.snapshot()?.start();
        let progress = line.insert(ProgressLine::new(
            "archive",
            2 * before.0.saturating_sub(start.0),
        ));
        let options = ArchiveOptions {
            drop_keys: args.drop_keys,
        };
        annals::archive::Archives::of(&store).archive_before_with(
            before,
            &args.archive,
            options,
            &mut |done| progress.update(done),
        )
    });
    if let Some(line) = line.as_mut() {
        line.finish();
    }
    let report = report?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(
            &mut out,
            &ArchiveJson {
                archive: report.archive.display().to_string(),
                from: report.cut.from.0,
                before: report.cut.before.0,
                record: report.record.0,
                archive_blake3: report.cut.archive_digest.to_string(),
            },
        )?;
    } else {
        writeln!(
            out,
            "archived {} records ({}..{}) to {}; the log starts at {}, cut record at {}",
            grouped(report.archived),
            report.cut.from,
            report.cut.before,
            report.archive.display(),
            report.cut.before,
            report.record,
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses, reading the log read-only, the cut the archive would refuse before it writes
/// (`Store::check_archive`): redb rewrites its bookkeeping in the file on every writable open,
/// so a refusal decided there would change the log's bytes. A missing log, or one this cannot
/// read (held exclusive, of an earlier format, damaged), is the writable open's to report.
fn refuse_read_only(args: &ArchiveArgs) -> Result<(), Failure> {
    let Ok(reader) = Store::open_read_only(&args.log.db) else {
        return Ok(());
    };
    let before = cut_position(&reader, args.before)?;
    annals::archive::Archives::of(&reader).check(before, &args.archive)?;
    Ok(())
}

/// The position `cut` names in the log of `store`.
fn cut_position(store: &Store, cut: CutPoint) -> annals::Result<Position> {
    match cut {
        CutPoint::Position(position) => Ok(Position(position)),
        CutPoint::Time(at_ms) => first_at_or_after(store, at_ms),
    }
}

/// The first position from the log's start whose record's time is at or after `at_ms`, or the
/// head when none is.
fn first_at_or_after(store: &Store, at_ms: u64) -> annals::Result<Position> {
    let snapshot = store.snapshot()?;
    let head = snapshot.head()?.next;
    let mut records = snapshot.records(snapshot.start(), Direction::Forward)?;
    while let Some(record) = records.next_view() {
        let record = record?;
        if record.at_ms >= at_ms {
            return Ok(record.position);
        }
    }
    Ok(head)
}

impl Run for ArchiveArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.log.db, "the log"),
            NamedFile::written(Some(&self.log.db), &self.archive, Output::File),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        archive(self)
    }
}
