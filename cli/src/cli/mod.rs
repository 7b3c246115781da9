//! The `annals` command line: append to, read, verify and measure an annals log file.
//!
//! It only parses arguments, calls the library's public API and prints what it returns; every
//! rule (expected versions, idempotency, limits, verification) lives in the `annals` crate,
//! and nothing here may hold one. `main.rs` calls [`main`].
//!
//! Exit codes: 0 ok; 1 findings (an append refused, corrupt data, a log that fails
//! verification); 2 usage or I/O errors, including a file that is missing or not an annals log.

mod archive;
mod args;
mod audit;
mod backup;
mod checkpoints;
mod color;
mod command;
mod compact;
mod completions;
mod failure;
mod filter;
mod keys;
mod man;
mod open;
mod pager;
mod paths;
mod payload;
mod progress;
mod read;
mod render;
#[cfg(feature = "jetstream")]
mod replicate;
mod report;
mod state;
mod table;
mod tail;
mod tiles;
mod time;
mod trace;
#[cfg(feature = "witness")]
mod witness;
mod write;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use command::Run;
use failure::{EXIT_USAGE, Failure, Kind};

/// Parses the process's arguments, runs the command and says how to exit.
pub fn main() -> ExitCode {
    quiet_caught_panics();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    trace::init(cli.verbose, color::enabled(cli.color, &io::stderr()));
    let (json, result) = execute(cli.command);
    match result {
        Ok(code) => code,
        Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(failure) => {
            let (kind, exit, message) = failure.describe();
            report(kind, exit, &message, json)
        }
    }
}

/// Runs `command`: the one table of commands, each of which says the rest itself ([`Run`]).
/// Returns whether it was asked for JSON, for its error, with what it came to.
fn execute(command: Command) -> (bool, Result<ExitCode, Failure>) {
    match command {
        Command::Demo(args) => checked_run(args),
        Command::Append(args) => checked_run(args),
        Command::Erase(args) => checked_run(args),
        Command::Keys(args::KeysCommand::Export(args)) => checked_run(args),
        Command::Keys(args::KeysCommand::Import(args)) => checked_run(args),
        Command::Log(args) => checked_run(args),
        Command::Tail(args) => checked_run(args),
        Command::Verify(args) => checked_run(args),
        Command::Stats(args) => checked_run(args),
        Command::State(args) => checked_run(args),
        Command::Rebuild(args) => checked_run(args),
        Command::Root(args) => checked_run(args),
        Command::Prove(args) => checked_run(args),
        Command::CheckProof(args) => checked_run(args),
        Command::Streams(args) => checked_run(args),
        Command::History(args) => checked_run(args),
        Command::Export(args) => checked_run(args),
        Command::Import(args) => checked_run(args),
        Command::Upgrade(args) => checked_run(args),
        Command::Compact(args) => checked_run(args),
        Command::Backup(args) => checked_run(args),
        Command::Archive(args) => checked_run(args),
        Command::Keygen(args) => checked_run(args),
        Command::Checkpoint(args) => checked_run(args),
        Command::Tiles(args) => checked_run(args),
        Command::Completions(args) => checked_run(args),
        Command::Man(args) => checked_run(args),
        #[cfg(feature = "witness")]
        Command::Witness(args::WitnessCommand::Serve(args)) => checked_run(args),
        #[cfg(feature = "witness")]
        Command::Witness(args::WitnessCommand::Evidence(args)) => checked_run(args),
        #[cfg(feature = "witness")]
        Command::Witness(args::WitnessCommand::Request(args)) => checked_run(args),
        #[cfg(feature = "jetstream")]
        Command::Replicate(args) => checked_run(args),
        #[cfg(feature = "jetstream")]
        Command::Follow(args) => checked_run(args),
        #[cfg(feature = "jetstream")]
        Command::Seed(args) => checked_run(args),
    }
}

/// Checks every file `command` names, then runs it. Every path is checked before any is
/// opened: a FIFO given as a file would block the open.
fn checked_run(command: impl Run) -> (bool, Result<ExitCode, Failure>) {
    let json = command.json();
    let result = paths::check_named_files(&command.files()).and_then(|()| command.run());
    (json, result)
}

/// A panic the store catches (redb's, on a damaged file) becomes a typed error that is printed
/// once, as every error is: the default hook would print its message and a backtrace hint to
/// the user before that. Any other panic is a bug and is printed as the default hook does.
/// The library installs no hook, so tests still show the panics the store catches.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !annals::error::panic_is_caught() {
            default(info);
        }
    }));
}

/// Reports an error on standard error, as a line of text or, with `--json`, as one JSON
/// object `{"error", "kind", "exit"}`, and exits with its kind's code.
fn report(kind: Kind, exit: u8, message: &str, json: bool) -> ExitCode {
    let line = if json {
        let object = ErrorJson {
            error: message,
            kind: kind.name(),
            exit,
        };
        // Serialising three plain fields cannot fail; the text line is the fallback.
        serde_json::to_string(&object).unwrap_or_else(|_| format!("annals: {message}"))
    } else {
        format!("annals: {message}")
    };
    // A closed standard error (`2>&1 | head`) leaves nobody to tell: the exit code still says
    // it (`eprintln!` would panic instead).
    let _ = writeln!(io::stderr().lock(), "{line}");
    ExitCode::from(exit)
}

/// An error as `--json` reports it on standard error.
#[derive(serde::Serialize)]
struct ErrorJson<'a> {
    error: &'a str,
    kind: &'static str,
    exit: u8,
}

/// What clap found wrong with the arguments: exit 2 (kind `usage`). Help and the version
/// are printed as clap prints them, with exit 0.
fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) || !json_asked()
    {
        return print_clap(&error);
    }
    let message = error.kind().as_str().map_or_else(
        || error.to_string().trim().to_owned(),
        |what| {
            // clap's first line names the problem and the argument; the rest is its usage
            // hint, which a program reading JSON does not need.
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or(what);
            first.trim_start_matches("error: ").to_owned()
        },
    );
    report(Kind::Usage, EXIT_USAGE, &message, true)
}

/// Prints help, the version or a usage error as clap renders it (usage line, suggestions),
/// coloured as `--color` and the stream it goes to say, and exits with clap's code: 0 for help
/// and the version on standard output, 2 for an error on standard error.
fn print_clap(error: &clap::Error) -> ExitCode {
    let rendered = error.render();
    let choice = color::asked();
    // A closed stream leaves nobody to tell; the exit code still says what happened.
    let _ = if error.use_stderr() {
        let mut stderr = io::stderr().lock();
        if color::enabled(choice, &stderr) {
            write!(stderr, "{}", rendered.ansi())
        } else {
            write!(stderr, "{rendered}")
        }
    } else {
        let mut stdout = io::stdout().lock();
        let written = if color::enabled(choice, &stdout) {
            write!(stdout, "{}", rendered.ansi())
        } else {
            write!(stdout, "{rendered}")
        };
        written.and_then(|()| stdout.flush())
    };
    // clap's codes are 0 and 2, which fit.
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(EXIT_USAGE))
}

/// Whether `--json` is among the arguments, for errors found before they parse: the flag
/// exists on every command, so its presence is what the user asked for.
fn json_asked() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|arg| arg != "--")
        .any(|arg| arg == "--json")
}
