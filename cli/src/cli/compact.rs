//! `compact`: gives a log file's free pages back to the file system ([`Store::compact`]) and
//! says how many bytes that reclaimed.
//!
//! redb's compaction reports nothing while it runs, but it shrinks the file as it goes, so
//! the progress bar follows the file's length from where it started towards the bytes redb
//! has allocated (the least it could shrink to), read by a thread beside the compaction.

use std::io::{self, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;

use super::args::CompactArgs;
use super::command::{NamedFile, Run};
use super::failure::{Failure, Kind};
use super::progress::ProgressLine;
use super::render::print_json;
use annals::Error;
use annals::display::grouped;
use annals::{error::StoreError, maintenance::Compaction};

/// How often the progress thread reads the file's length.
const POLL_EVERY: Duration = Duration::from_millis(100);

/// What `compact --json` prints.
#[derive(Serialize)]
struct CompactJson {
    /// The log.
    path: String,
    /// The file's length before, in bytes.
    bytes_before: u64,
    /// The file's length after, in bytes.
    bytes_after: u64,
    /// The bytes given back to the file system.
    bytes_reclaimed: u64,
}

pub(crate) fn compact(args: CompactArgs) -> Result<ExitCode, Failure> {
    if let Some(failure) = super::failure::diagnose(&args.log.db, false) {
        return Err(failure);
    }
    let mut store =
        annals::maintenance::Compaction::open_store(&args.log.db, args.wait).map_err(refusal)?;
    let before = std::fs::metadata(&args.log.db)?.len();
    let floor = annals::maintenance::Compaction::allocated_bytes(&store)?;
    let line = ProgressLine::bytes("compact", before.saturating_sub(floor));
    let bar = line.handle();
    let (done, finished) = mpsc::channel::<()>();
    let db = &args.log.db;
    let compacted = std::thread::scope(|scope| {
        scope.spawn(move || {
            // Until the compaction ends (or the sender is dropped with it), follow the file.
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(POLL_EVERY) {
                if let Ok(metadata) = std::fs::metadata(db) {
                    bar.set_position(before.saturating_sub(metadata.len()));
                }
            }
        });
        let compacted = annals::maintenance::Compaction::run(&mut store);
        drop(done);
        compacted
    });
    drop(line);
    let compaction = compacted.map_err(refusal)?;
    // Closing writes redb's allocator state: a failure there (a full disk) is the command's.
    store.close()?;
    let compaction = Compaction {
        bytes_after: std::fs::metadata(&args.log.db)?.len(),
        ..compaction
    };
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(
            &mut out,
            &CompactJson {
                path: args.log.db.display().to_string(),
                bytes_before: compaction.bytes_before,
                bytes_after: compaction.bytes_after,
                bytes_reclaimed: compaction.bytes_reclaimed(),
            },
        )?;
    } else {
        writeln!(
            out,
            "compacted {}: {} bytes reclaimed ({} bytes before, {} after)",
            args.log.db.display(),
            grouped(compaction.bytes_reclaimed()),
            grouped(compaction.bytes_before),
            grouped(compaction.bytes_after),
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A log another process has open is `held` (exit 2), as an open of another command finds it.
fn refusal(error: Error) -> Failure {
    match error {
        Error::Store(held @ StoreError::CompactionHeld { .. }) => {
            Failure::of(Kind::Held, held.to_string())
        }
        error => Failure::from(error),
    }
}

impl Run for CompactArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![NamedFile::read(&self.log.db, "the log")]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        compact(self)
    }
}
