//! The `annals` command line, run as a real process on real files: each module one side of
//! it. `commands`: append, log, verify, stats, demo and state; `read`: the filters and how
//! payloads, times and tables are shown; `json`: `--json` outputs and the error objects;
//! `audit`: roots, proofs, export and import, history; `backup`: a copy beside a writer;
//! `erasure`: personal payloads and `erase`; `crash`: its writes killed at seeded moments;
//! `compact`: its report and its refusal beside another process; `damaged`: what the commands
//! say of logs damaged or forged beneath the store; `archive`: cutting a log and reading below
//! the cut; `outputs`: what the commands write and refuse before writing; `processes`: readers
//! beside a writer and writers beside each other, each a process; `races`: processes racing to
//! create, import into and rebuild one log; `writers`: appends beside a host serving requests
//! in multi-writer mode; `refusals`: every refused command leaves the log's bytes as they were;
//! `full_disk`: the writing commands on a full file system; `checksums`: old formats upgraded,
//! flipped bits refused; `checkpoints`, `static_tiles` and `witness`: keys, signed checkpoints,
//! tiles and witnesses, checked by Cloudflare's crates; `readme`: the README's sample outputs;
//! `terminal`: what a person at a terminal and a shell gets (completions, manual pages,
//! colour, the pager). `appender`: the writer beside them, on a thread of the test.
//!
//! Having tests, this package also makes `cargo test` at the workspace's root build `annals`
//! for the library's replication tests of `replicate` and `follow` (`tests/annals_bin.rs`).

mod appender;
mod archive;
mod audit;
mod backup;
mod checkpoints;
mod checksums;
mod commands;
mod compact;
mod crash;
mod damaged;
mod erasure;
mod full_disk;
mod json;
mod outputs;
mod processes;
mod races;
mod read;
mod readme;
mod rebuild;
mod refusals;
mod static_tiles;
mod terminal;
#[cfg(feature = "witness")]
mod witness;
mod writers;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

/// The `annals` binary this package builds.
const ANNALS: &str = env!("CARGO_BIN_EXE_annals");

/// `annals` with `args`, in an environment without the variables that change how it writes
/// (colour, the pager), whatever the developer's shell has.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(ANNALS);
    command
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("PAGER")
        .env_remove("ANNALS_PAGER")
        .env_remove("COLUMNS");
    command
}

fn annals(args: &[&str]) -> Output {
    command(args).output().expect("run annals")
}

/// A log file path in a fresh temporary folder; the file does not exist yet.
struct Log {
    dir: TempDir,
    db: PathBuf,
}

impl Log {
    fn new() -> Log {
        let dir = tempfile::tempdir().expect("temporary folder");
        let db = dir.path().join("log.redb");
        Log { dir, db }
    }

    /// The log's path, as an argument.
    fn path(&self) -> &str {
        path(&self.db)
    }

    /// Runs `annals <command> <db> <args…>`.
    fn run(&self, command: &str, args: &[&str]) -> Output {
        crate::command(&[command, self.path()])
            .args(args)
            .output()
            .expect("run the annals binary")
    }

    /// Runs a command that must succeed and returns its standard output.
    fn ok(&self, command: &str, args: &[&str]) -> String {
        stdout(&exits(self.run(command, args), 0))
    }
}

/// Asserts the exit code, showing stderr when it differs.
fn exits(output: Output, code: i32) -> Output {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        stdout(&output),
        stderr(&output)
    );
    output
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("UTF-8 output")
}

/// `path` as an argument.
fn path(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The SHA-256 of the file at `path`: its bytes compared before and after a refusal.
fn sha256(path: &Path) -> Vec<u8> {
    use sha2::Digest as _;
    sha2::Sha256::digest(std::fs::read(path).expect("read the file")).to_vec()
}

/// Standard base64 (with padding) to bytes.
fn base64(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_else(|error| panic!("{text:?} is not base64: {error}"))
}

fn json(line: &str) -> serde_json::Value {
    serde_json::from_str(line).unwrap_or_else(|error| panic!("{line:?} is not JSON: {error}"))
}

#[test]
fn appends_and_reads_back_a_record() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let db = dir.path().join("log.redb");
    let db = db.to_str().expect("a UTF-8 path");
    let appended = annals(&["append", db, "deploy/web", "deploy.started", "{}"]);
    assert!(
        appended.status.success(),
        "{}",
        String::from_utf8_lossy(&appended.stderr)
    );
    let log = annals(&["log", db]);
    assert!(log.status.success());
    let text = String::from_utf8(log.stdout).expect("UTF-8");
    assert!(text.starts_with("0 deploy/web@0 deploy.started "), "{text}");
    let verify = annals(&["verify", db]);
    assert!(verify.status.success());
}

#[test]
fn the_test_only_children_are_not_commands_of_annals() {
    // `crash-writer` and `rebuild --step` belong to the test support's `annals-testing`.
    let crash = annals(&["crash-writer", "log.redb"]);
    assert_eq!(
        crash.status.code(),
        Some(2),
        "crash-writer is no command of annals"
    );
    let step = annals(&["rebuild", "log.redb", "--step"]);
    assert_eq!(
        step.status.code(),
        Some(2),
        "--step is no option of annals rebuild"
    );
}
