//! `log`, `streams`, `stats` and `history`: commands that open a log read-only and print
//! what is in it (`state` is in `state.rs`). They never write to the file.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use serde::Serialize;

use super::args::{HistoryArgs, LogArgs, StatsArgs, StreamsArgs};
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::filter::print_filtered;
use super::pager::Output;
use super::render::{print_json, print_stats, word};
use annals::Store;
use annals::audit::Entity;
use annals::{Direction, Snapshot};
use annals::{Position, log::StreamVersion};

pub(crate) fn log(args: LogArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let payloads = annals::erasure::PayloadReader::of(&store)?;
    if !args.archive.is_empty() && snapshot.cut().is_none() {
        // No archive can be this log's: saying so beats ignoring the files given.
        return Err(annals::Error::from(annals::error::ArchiveError::NeverCut).into());
    }
    let direction = if args.filter.reverse {
        Direction::Backward
    } else {
        Direction::Forward
    };
    // Backward from at or past the end starts at the last record.
    let from = args.from.unwrap_or(match direction {
        // A cut log starts where its last cut left it; with its archives, at 0.
        Direction::Forward if args.stream.is_none() && args.archive.is_empty() => {
            snapshot.start().0
        }
        Direction::Forward => 0,
        Direction::Backward => u64::MAX,
    });
    let mut out = Output::start(&args.paging);
    let printed = match args.stream.as_deref() {
        Some(stream) => {
            require_stream(&snapshot, stream, &args.log.db)?;
            let records = snapshot.stream(stream, StreamVersion(from), direction)?;
            print_filtered(&mut out, &payloads, records, &args.filter, &args.style)
        }
        None if !args.archive.is_empty() && Position(from) < snapshot.start() => {
            if direction == Direction::Backward {
                return Err(Failure::of(
                    super::failure::Kind::Usage,
                    "--archive reads forward: drop --reverse".to_owned(),
                ));
            }
            // The archived records first, each checked against the kept hashes, then the log.
            let archived =
                annals::archive::Archives::of(&store).records(&args.archive, Position(from))?;
            let kept = snapshot.records(snapshot.start(), Direction::Forward)?;
            print_filtered(
                &mut out,
                &payloads,
                archived.chain(kept),
                &args.filter,
                &args.style,
            )
        }
        None => {
            let records = snapshot.records(Position(from), direction)?;
            print_filtered(&mut out, &payloads, records, &args.filter, &args.style)
        }
    };
    // The good records before a corrupt one are printed (and the pager quit) before the error
    // is reported.
    out.finish()?;
    printed.map(|_| ExitCode::SUCCESS)
}

/// Refuses (exit 1) a `--stream` that names no stream of the log: an empty listing would
/// not tell a typo from a stream with nothing to show.
fn require_stream(snapshot: &Snapshot, stream: &str, db: &Path) -> Result<(), Failure> {
    if snapshot.stream_version(stream)?.is_none() {
        return Err(Failure::Finding(format!(
            "{}: there is no stream {}",
            db.display(),
            word(stream)
        )));
    }
    Ok(())
}

pub(crate) fn streams(args: StreamsArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let mut out = BufWriter::new(io::stdout().lock());
    if !args.json {
        writeln!(out, "{:>12} {:>14}  stream", "records", "last position")?;
    }
    // Write errors end the walk; they are reported after it, as any read error is.
    let mut written = Ok(());
    let walked = snapshot.visit_streams(args.prefix.as_deref().unwrap_or(""), |stream| {
        written = if args.json {
            print_json(
                &mut out,
                &StreamJson {
                    stream: &stream.name,
                    length: stream.length,
                    last_position: stream.last_position.0,
                },
            )
        } else {
            writeln!(
                out,
                "{:>12} {:>14}  {}",
                stream.length,
                stream.last_position.0,
                word(&stream.name)
            )
            .map_err(Failure::from)
        };
        Ok(written.is_ok())
    });
    out.flush()?;
    written?;
    walked?;
    Ok(ExitCode::SUCCESS)
}

/// A line of `streams --json`.
#[derive(Serialize)]
struct StreamJson<'a> {
    stream: &'a str,
    length: u64,
    last_position: u64,
}

pub(crate) fn stats(args: StatsArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.log.db)?;
    let stats = annals::maintenance::Stats::of(&store)?;
    let footprint = if args.tables {
        Some(annals::maintenance::Footprint::of(&store)?)
    } else {
        None
    };
    let mut out = io::stdout().lock();
    print_stats(&mut out, &stats, footprint.as_ref(), args.output.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn history(args: HistoryArgs) -> Result<ExitCode, Failure> {
    let entity = Entity::parse(&args.entity)?;
    let store = Store::open_read_only(&args.log.db)?;
    let snapshot = store.snapshot()?;
    let payloads = annals::erasure::PayloadReader::of(&store)?;
    if let Some(stream) = args.stream.as_deref() {
        require_stream(&snapshot, stream, &args.log.db)?;
    }
    let mut streams = entity.streams().to_vec();
    let mut touched = false;
    for stream in &streams {
        touched |= snapshot.stream_version(stream)?.is_some();
    }
    if !touched {
        return Err(Failure::Finding(format!(
            "{}: no event touched {}",
            args.log.db.display(),
            word(&args.entity)
        )));
    }
    if let Some(stream) = args.stream.as_deref() {
        streams.retain(|name| name == stream);
    }
    let direction = if args.filter.reverse {
        Direction::Backward
    } else {
        Direction::Forward
    };
    let mut out = Output::start(&args.paging);
    let printed = if args.archive.is_empty() {
        // Merged record by record, so a long history is never held whole.
        let records = annals::audit::history(&snapshot, &streams, direction)?;
        print_filtered(&mut out, &payloads, records, &args.filter, &args.style)
    } else {
        if direction == Direction::Backward {
            return Err(Failure::of(
                super::failure::Kind::Usage,
                "--archive reads forward: drop --reverse".to_owned(),
            ));
        }
        // Every record from position 0, the archived ones from the archives (each checked
        // against the kept hashes), those of the entity's streams printed: a walk of the
        // whole history, as reading its archives is anyway.
        let archived = annals::archive::Archives::of(&store).records(&args.archive, Position(0))?;
        let kept = snapshot.records(snapshot.start(), Direction::Forward)?;
        let records = archived.chain(kept).filter(|record| {
            record
                .as_ref()
                .map_or(true, |record| streams.contains(&record.stream))
        });
        print_filtered(&mut out, &payloads, records, &args.filter, &args.style)
    };
    // The good records before a corrupt one are printed (and the pager quit) before the error
    // is reported.
    out.finish()?;
    printed.map(|_| ExitCode::SUCCESS)
}

impl Run for LogArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        NamedFile::archives_then_log(&self.archive, &self.log.db)
    }

    fn json(&self) -> bool {
        self.style.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        log(self)
    }
}

impl Run for StreamsArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        streams(self)
    }
}

impl Run for StatsArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        stats(self)
    }
}

impl Run for HistoryArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.style.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        history(self)
    }
}
