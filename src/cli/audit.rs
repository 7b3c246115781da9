//! `verify`, `root`, `prove`, `check-proof` and `export`: commands that check a log or take
//! evidence of it elsewhere. They open the log read-only; `check-proof` opens no log at all.

use std::fs;
use std::io::{self, Read, Write};
use std::process::ExitCode;

use serde::Serialize;

use super::args::{CheckProofArgs, ExportArgs, ProveArgs, RootArgs, VerifyArgs};
use super::progress::ProgressLine;
use super::render::{print_json, print_range, print_verify};
use super::{EXIT_FINDINGS, Failure};
use crate::audit::proof_file::ProofFile;
use crate::hash::Digest;
use crate::merkle::TreeHead;
use crate::record::Position;
use crate::store::Store;

/// The largest proof file `check-proof` reads: a proof has at most 2·64 hashes.
const PROOF_FILE_BYTES_MAX: u64 = 64 * 1024;

pub(crate) fn verify(args: VerifyArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let mut line = ProgressLine::new("verify", 2 * store.head()?.next.0);
    let report = store.verify_with(&mut |done| line.update(done));
    line.finish();
    let report = report?;
    let mut out = io::stdout().lock();
    print_verify(&mut out, &report, args.json)?;
    out.flush()?;
    Ok(if report.is_sound() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_FINDINGS)
    })
}

pub(crate) fn root(args: RootArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let size = args.size.unwrap_or(snapshot.head()?.next.0);
    let root = snapshot.merkle_root(size)?;
    let mut out = io::stdout().lock();
    print_root(&mut out, size, root, args.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn prove(args: ProveArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let size = args.size.unwrap_or(snapshot.head()?.next.0);
    let proof = match (args.position, args.from_size) {
        (Some(position), _) => ProofFile::inclusion(&snapshot, Position(position), size)?,
        (None, Some(from_size)) => ProofFile::consistency(&snapshot, from_size, size)?,
        (None, None) => return Err(Failure::Usage("give --position or --from-size".into())),
    };
    let mut out = io::stdout().lock();
    print_proof(&mut out, &proof, args.json)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn check_proof(args: CheckProofArgs) -> Result<ExitCode, Failure> {
    let unreadable =
        |error: io::Error| Failure::Usage(format!("{}: {error}", args.proof.display()));
    let file = fs::File::open(&args.proof).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(PROOF_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > PROOF_FILE_BYTES_MAX {
        return Err(Failure::Finding(format!(
            "invalid: {} is over {PROOF_FILE_BYTES_MAX} bytes, larger than any proof",
            args.proof.display()
        )));
    }
    let proof: ProofFile = serde_json::from_slice(&bytes).map_err(|error| {
        Failure::Finding(format!(
            "invalid: {} is not a proof file: {error}",
            args.proof.display()
        ))
    })?;
    match proof.check() {
        Ok(()) => {
            let mut out = io::stdout().lock();
            print_valid_proof(&mut out, &proof)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(error) => Err(Failure::Finding(format!("invalid: {error}"))),
    }
}

pub(crate) fn export(args: ExportArgs) -> Result<ExitCode, Failure> {
    let store = Store::open_read_only(&args.db)?;
    let snapshot = store.snapshot()?;
    let to = args.to.unwrap_or(snapshot.head()?.next.0);
    let mut line = ProgressLine::new("export", to.saturating_sub(args.from));
    let summary = crate::export::export(
        &snapshot,
        Position(args.from),
        Position(to),
        &args.file,
        &mut |done| line.update(done),
    );
    line.finish();
    let mut out = io::stdout().lock();
    print_range(&mut out, &summary?.header, "exported", "to", &args.file)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The report of `root --json`.
#[derive(Serialize)]
struct RootJson {
    size: u64,
    root: String,
    tree_head: String,
}

/// Writes the root of the tree of `size` records and its tree head.
fn print_root(out: &mut impl Write, size: u64, root: Digest, json: bool) -> Result<(), Failure> {
    let tree_head = TreeHead { size, root }.hash();
    if json {
        return print_json(
            out,
            &RootJson {
                size,
                root: root.to_hex(),
                tree_head: tree_head.to_hex(),
            },
        );
    }
    writeln!(out, "size      {size}")?;
    writeln!(out, "root      {root}")?;
    writeln!(out, "tree head {tree_head}")?;
    Ok(())
}

/// Writes a proof: the proof file's JSON (what `check-proof` reads) with `json`, else text.
fn print_proof(out: &mut impl Write, proof: &ProofFile, json: bool) -> Result<(), Failure> {
    if json {
        return print_json(out, proof);
    }
    match proof {
        ProofFile::Inclusion {
            position,
            size,
            record_hash,
            root,
            tree_head,
            path,
        } => {
            writeln!(
                out,
                "inclusion of position {position} in the tree of size {size}"
            )?;
            writeln!(out, "record hash {record_hash}")?;
            writeln!(out, "root        {root}")?;
            writeln!(out, "tree head   {tree_head}")?;
            for hash in path {
                writeln!(out, "path        {hash}")?;
            }
        }
        ProofFile::Consistency {
            from_size,
            from_root,
            size,
            root,
            path,
            ..
        } => {
            writeln!(out, "consistency of size {from_size} with size {size}")?;
            writeln!(out, "from root   {from_root}")?;
            writeln!(out, "root        {root}")?;
            for hash in path {
                writeln!(out, "path        {hash}")?;
            }
        }
    }
    Ok(())
}

/// Writes what `check-proof` found valid.
fn print_valid_proof(out: &mut impl Write, proof: &ProofFile) -> Result<(), Failure> {
    match proof {
        ProofFile::Inclusion {
            position,
            size,
            root,
            ..
        } => writeln!(
            out,
            "valid: position {position} is in the tree of size {size} with root {root}"
        )?,
        ProofFile::Consistency {
            from_size,
            size,
            root,
            ..
        } => writeln!(
            out,
            "valid: the tree of size {from_size} is a prefix of the tree of size {size} with root {root}"
        )?,
    }
    Ok(())
}
