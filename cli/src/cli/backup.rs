//! `backup`: a copy of a log as of its latest commit, into a new file, beside its writers
//! ([`annals::maintenance::Backup::write`]).

use std::io::{self, Write};
use std::process::ExitCode;

use serde::Serialize;

use super::args::BackupArgs;
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::render::print_json;
use annals::Store;
use annals::display::grouped;
use annals::output_path::Output;

/// What `backup --json` prints.
#[derive(Serialize)]
struct BackupJson {
    /// The log copied.
    path: String,
    /// The copy.
    target: String,
    /// The records the copy's head counts.
    records: u64,
    /// The copy's head hash, hex.
    head_hash: String,
    /// The copy's length, in bytes.
    bytes: u64,
}

pub(crate) fn backup(args: BackupArgs) -> Result<ExitCode, Failure> {
    if let Some(failure) = super::failure::diagnose(&args.db, false) {
        return Err(failure);
    }
    let store = Store::open_read_only(&args.db)?;
    let backup = annals::maintenance::Backup::write(&store, &args.target)?;
    let mut out = io::stdout().lock();
    if args.output.json {
        print_json(
            &mut out,
            &BackupJson {
                path: args.db.display().to_string(),
                target: backup.path.display().to_string(),
                records: backup.head.next.0,
                head_hash: backup.head.hash.to_hex(),
                bytes: backup.bytes,
            },
        )?;
    } else {
        writeln!(
            out,
            "copied {} into {}: {} records, head hash {}, {} bytes",
            args.db.display(),
            backup.path.display(),
            grouped(backup.head.next.0),
            backup.head.hash.to_hex(),
            grouped(backup.bytes),
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

impl Run for BackupArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.db, "the log"),
            NamedFile::written(Some(&self.db), &self.target, Output::File),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        backup(self)
    }
}
