//! `tiles`: the log as static tiles (c2sp.org/tlog-tiles), through `Store::write_tiles`.

use std::io::{self, Write};
use std::process::ExitCode;

use super::args::TilesArgs;
use super::command::{NamedFile, Run};
use super::failure::{Failure, Kind};
use super::keys::read_signer_key;
use super::open::open_for_writing;
use annals::output_path::Output;
use annals::{Store, error::TilesError};

#[derive(serde::Serialize)]
struct TilesJson<'a> {
    size: u64,
    from_size: u64,
    tiles: usize,
    bundles: usize,
    kept: usize,
    checkpoint: &'a str,
}

pub(crate) fn tiles(args: TilesArgs) -> Result<ExitCode, Failure> {
    let signer = read_signer_key(&args.key)?;
    // The refusals a read-only look can make first: a refused run leaves the log's bytes as
    // they were.
    let reader = Store::open_read_only(&args.log.db)?;
    annals::maintenance::Checkpoints::of(&reader).check(signer.name(), None)?;
    annals::maintenance::Tiles::of(&reader)
        .check(&args.dir, &signer)
        .map_err(failure)?;
    drop(reader);
    let store = open_for_writing(&args.log.db, false, &args.access)?;
    let written = annals::maintenance::Tiles::of(&store)
        .write(&args.dir, &signer)
        .map_err(failure)?;
    let mut out = io::stdout().lock();
    if args.output.json {
        let json = TilesJson {
            size: written.size,
            from_size: written.from_size,
            tiles: written.tiles,
            bundles: written.bundles,
            kept: written.kept,
            checkpoint: &written.checkpoint,
        };
        super::render::print_json(&mut out, &json)?;
    } else {
        writeln!(
            out,
            "{}: tiles of the tree of size {} (from {}): {} hash tiles and {} entry bundles \
             written, {} tiles kept",
            args.dir.display(),
            written.size,
            written.from_size,
            written.tiles,
            written.bundles,
            written.kept
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn failure(error: TilesError) -> Failure {
    match error {
        TilesError::Store(error) => error.into(),
        TilesError::Io { path, error } => Failure::file(&path, true, &error),
        finding @ (TilesError::Forked { .. } | TilesError::Ahead { .. }) => {
            Failure::of(Kind::Finding, finding.to_string())
        }
        other => Failure::of(Kind::InvalidInput, other.to_string()),
    }
}

impl Run for TilesArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        vec![
            NamedFile::read(&self.key, "a key file"),
            NamedFile::read(&self.log.db, "the log"),
            // Its files (the checkpoint read back among them) the store checks as it goes.
            NamedFile::written(Some(&self.log.db), &self.dir, Output::Folder),
        ]
    }

    fn json(&self) -> bool {
        self.output.json
    }

    fn run(self) -> Result<ExitCode, Failure> {
        tiles(self)
    }
}
