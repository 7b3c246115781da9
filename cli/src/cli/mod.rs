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
use failure::{EXIT_USAGE, Failure, Kind};

/// Parses the process's arguments, runs the command and says how to exit.
pub fn main() -> ExitCode {
    quiet_caught_panics();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    let json = cli.command.json();
    trace::init(cli.verbose, color::enabled(cli.color, &io::stderr()));
    // Every path is checked before any is opened: a FIFO given as a file would block the open.
    let result = paths::check_named_files(&cli.command).and_then(|()| match cli.command {
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
        Command::Compact(args) => compact::compact(args),
        Command::Backup(args) => backup::backup(args),
        Command::Archive(args) => archive::archive(args),
        Command::Upgrade(args) => write::upgrade(args),
        Command::Keygen(args) => keys::keygen(args),
        Command::Checkpoint(args) => checkpoints::checkpoint(args),
        Command::Tiles(args) => tiles::tiles(args),
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => man::man(args),
        #[cfg(feature = "witness")]
        Command::Witness(command) => witness::witness(command),
        #[cfg(feature = "jetstream")]
        Command::Replicate(args) => replicate::replicate(args),
        #[cfg(feature = "jetstream")]
        Command::Follow(args) => replicate::follow(args),
        #[cfg(feature = "jetstream")]
        Command::Seed(args) => replicate::seed(args),
    });
    match result {
        Ok(code) => code,
        Err(Failure::Closed) => ExitCode::SUCCESS,
        Err(failure) => {
            let (kind, exit, message) = failure.describe();
            report(kind, exit, &message, json)
        }
    }
}

/// A panic the store catches (redb's, on a damaged file) becomes a typed error that is printed
/// once, as every error is: the default hook would print its message and a backtrace hint to
/// the user before that. Any other panic is a bug and is printed as the default hook does.
/// The library installs no hook, so tests still show the panics the store catches.
fn quiet_caught_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !annals::panic_is_caught() {
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
