//! The `annals` command line: append to, read, verify and measure an annals log file.
//!
//! It only parses arguments, calls the library and prints what it returns; every rule
//! (expected versions, idempotency, limits, verification) lives in the rest of the crate, and
//! nothing here may hold one. Compiled only with the `cli` feature; `src/bin/annals.rs` calls
//! [`main`].
//!
//! Exit codes: 0 ok; 1 findings (an append refused, corrupt data, a log that fails
//! verification); 2 usage or I/O errors, including a file that is missing or not an annals log.

mod args;
mod audit;
mod filter;
mod open;
mod payload;
mod progress;
mod read;
mod render;
mod state;
mod table;
mod tail;
mod time;
mod write;

use std::io;
use std::process::ExitCode;

use clap::Parser;

use crate::error::Error;
use crate::export::ExportError;
use crate::projection::ProjectionError;

use args::{Cli, Command};

/// Exit code for findings: an append refused, corrupt data, a log that fails verification.
const EXIT_FINDINGS: u8 = 1;
/// Exit code for usage and I/O errors.
const EXIT_USAGE: u8 = 2;

/// Parses the process's arguments, runs the command and says how to exit.
pub fn main() -> ExitCode {
    quiet_caught_panics();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Append(args) => write::append(args),
        Command::Log(args) => read::log(args),
        Command::Tail(args) => tail::tail(args),
        Command::Verify(args) => audit::verify(args),
        Command::Stats(args) => read::stats(args),
        Command::Demo(args) => write::demo(args),
        Command::State(args) => state::state(args),
        Command::Rebuild(args) => write::rebuild(args),
        Command::Root(args) => audit::root(args),
        Command::Prove(args) => audit::prove(args),
        Command::CheckProof(args) => audit::check_proof(args),
        Command::Streams(args) => read::streams(args),
        Command::History(args) => read::history(args),
        Command::Export(args) => audit::export(args),
        Command::Import(args) => write::import(args),
        #[cfg(feature = "testing")]
        Command::CrashWriter(args) => write::crash_writer(args),
    };
    match result {
        Ok(code) => code,
        Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(Failure::Finding(message)) => fail(EXIT_FINDINGS, &message),
        Err(Failure::Usage(message)) => fail(EXIT_USAGE, &message),
    }
}

/// A panic the store catches (redb's, on a damaged file) becomes a typed error that is printed
/// once, as every error is: the default hook would print its message and a backtrace hint to
/// the user before that. Any other panic is a bug and is printed as the default hook does.
/// The library installs no hook, so tests still show the panics the store catches.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !crate::error::panic_is_caught() {
            default(info);
        }
    }));
}

fn fail(code: u8, message: &str) -> ExitCode {
    eprintln!("annals: {message}");
    ExitCode::from(code)
}

/// Why a command stopped: what to tell stderr and how to exit.
enum Failure {
    /// A finding (refused append, corrupt data): exit 1.
    Finding(String),
    /// Bad usage or a failure of the file system: exit 2.
    Usage(String),
    /// Standard output was closed early (e.g. piped into `head`): stop quietly.
    Closed,
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        match error {
            Error::Append(_)
            | Error::Projection(crate::projection::ProjectionError::Behind { .. })
            | Error::Corrupt { .. }
            | Error::CorruptMeta(_)
            | Error::DamagedFile(_)
            | Error::Projection(ProjectionError::Invariant { .. }) => Failure::Finding(message),
            Error::Export(export) if !matches!(*export, ExportError::Io(_)) => {
                Failure::Finding(message)
            }
            _ => Failure::Usage(message),
        }
    }
}

/// Only for writing to standard output; file reads say which file failed.
impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => Failure::Usage(format!("writing output: {error}")),
        }
    }
}
