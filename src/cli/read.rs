//! `log`, `state`, `stats` and `history`: commands that open a log read-only and print what
//! is in it. They never write to the file.

use std::io::{self, BufWriter, Write};
use std::process::ExitCode;

use super::Failure;
use super::args::{HistoryArgs, LogArgs, StateArgs, StatsArgs};
use super::progress::ProgressLine;
use super::render::{print_json, print_record, print_stats};
use crate::audit::history::Entity;
use crate::log::read::Direction;
use crate::record::{Position, Record, StreamVersion};
use crate::store::Store;

pub(crate) fn log(args: LogArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let direction = if args.backward {
        Direction::Backward
    } else {
        Direction::Forward
    };
    // Backward from at or past the end starts at the last record.
    let from = args.from.unwrap_or(match direction {
        Direction::Forward => 0,
        Direction::Backward => u64::MAX,
    });
    let mut out = BufWriter::new(io::stdout().lock());
    let printed = match args.stream.as_deref() {
        Some(stream) => {
            if snapshot.stream_version(stream)?.is_none() {
                return Err(Failure::Finding(format!(
                    "{}: there is no stream {stream:?}",
                    args.db.display()
                )));
            }
            let records = snapshot.stream(stream, StreamVersion(from), direction)?;
            print_records(&mut out, records, &args)
        }
        None => {
            let records = snapshot.records(Position(from), direction)?;
            print_records(&mut out, records, &args)
        }
    };
    // The good records before a corrupt one are printed before the error is reported.
    out.flush()?;
    printed.map(|()| ExitCode::SUCCESS)
}

/// Prints the records that pass the `--kind` filter, up to `--limit`, stopping at the first
/// error.
fn print_records(
    out: &mut impl Write,
    records: impl Iterator<Item = crate::Result<Record>>,
    args: &LogArgs,
) -> Result<(), Failure> {
    let wanted = |record: &crate::Result<Record>| match (record, args.kind.as_deref()) {
        (Ok(record), Some(kind)) => record.kind == kind,
        _ => true,
    };
    for record in records
        .filter(wanted)
        .take(args.limit.unwrap_or(usize::MAX))
    {
        print_record(out, &record?, args.json)?;
    }
    Ok(())
}

pub(crate) fn stats(args: StatsArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let stats = store.stats()?;
    let mut out = io::stdout().lock();
    print_stats(&mut out, &stats, args.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn state(args: StateArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let at = args.at.map(Position);
    let mut line = ProgressLine::new(
        "replay",
        at.map_or(0, |at| at.0.min(store.head().map_or(0, |h| h.next.0))),
    );
    let rows = store.state_json_with(&args.projection, at, &mut |done| line.update(done));
    line.finish();
    let rows = rows?;
    let mut out = BufWriter::new(io::stdout().lock());
    if args.json {
        print_json(&mut out, &rows)?;
    } else {
        let text = serde_json::to_string_pretty(&rows)
            .map_err(|error| Failure::Usage(format!("formatting JSON: {error}")))?;
        writeln!(out, "{text}")?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn history(args: HistoryArgs) -> Result<ExitCode, Failure> {
    let entity = Entity::parse(&args.entity)?;
    let store = Store::open_read_only(&args.db)?;
    let records = store.history(&entity)?;
    if records.is_empty() {
        return Err(Failure::Finding(format!(
            "{}: no event touched {}",
            args.db.display(),
            args.entity
        )));
    }
    let mut out = BufWriter::new(io::stdout().lock());
    for record in &records {
        print_record(&mut out, record, args.json)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
