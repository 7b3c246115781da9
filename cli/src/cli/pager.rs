//! The pager that `log`, `history` and `state` write through when standard output is a
//! terminal, as git's commands do: `$ANNALS_PAGER`, else `$PAGER`, else `less -FRX` (which
//! quits at once when everything fits on one screen, keeps colours and leaves the text on the
//! screen). Never into a pipe or a file, and never with `--no-pager`; an empty pager or `cat`
//! means none. A pager that cannot be started leaves the output on standard output, and a pager
//! the user quits early ends the command quietly, with exit 0 (a closed pipe is
//! [`Failure::Closed`]).
//!
//! This module decides and runs the pager; it never changes a byte of what is written.

use std::ffi::OsString;
use std::io::{self, BufWriter, IsTerminal, StdoutLock, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

use super::args::PagingArgs;
use super::failure::{Failure, Kind};

/// The pager when neither `ANNALS_PAGER` nor `PAGER` names one.
const PAGER_DEFAULT: &str = "less -FRX";

/// What `less` is told when `LESS` is unset, as git does: a `PAGER=less` then behaves as the
/// default does.
const LESS_DEFAULT: &str = "FRX";

/// Characters that make a pager command a shell command line, run by `sh -c` (git's list):
/// without any, it is a program and its arguments split at spaces, started directly, so that a
/// program that does not exist is known at once and the output goes to standard output.
const SHELL_CHARACTERS: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', '*', '?', '[', '#', '~', '=',
    '%', '\n',
];

/// Where a command's output goes: standard output, or a pager's standard input.
pub(crate) enum Output {
    /// Straight to standard output.
    Stdout(BufWriter<StdoutLock<'static>>),
    /// Into a pager, which shows it on the terminal.
    Pager(Pager),
}

/// A running pager and the pipe to it.
pub(crate) struct Pager {
    /// `None` once closed, so that the pager sees the end of its input.
    input: Option<BufWriter<ChildStdin>>,
    child: Child,
}

impl Output {
    /// Standard output, through the pager when `paging` and the environment ask for one and
    /// standard output is a terminal.
    pub(crate) fn start(paging: &PagingArgs) -> Output {
        let terminal = io::stdout().is_terminal();
        let chosen = chosen(
            paging.no_pager,
            terminal,
            std::env::var_os("ANNALS_PAGER"),
            std::env::var_os("PAGER"),
        );
        match chosen.and_then(|command| spawn(&command)) {
            Some(pager) => Output::Pager(pager),
            None => Output::Stdout(BufWriter::new(io::stdout().lock())),
        }
    }

    /// Writes out what is buffered and, with a pager, closes its input and waits until the
    /// user quits it, so that the shell's prompt (or an error message) comes after it.
    pub(crate) fn finish(self) -> Result<(), Failure> {
        match self {
            Output::Stdout(mut out) => Ok(out.flush()?),
            Output::Pager(mut pager) => pager.close(),
        }
    }
}

impl Write for Output {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(out) => out.write(bytes),
            Output::Pager(pager) => pager.input()?.write(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(out) => out.flush(),
            Output::Pager(pager) => pager.input()?.flush(),
        }
    }
}

impl Pager {
    fn input(&mut self) -> io::Result<&mut BufWriter<ChildStdin>> {
        // Only `close` takes the input, and nothing writes after it.
        self.input
            .as_mut()
            .ok_or_else(|| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    /// Flushes and closes the pager's input, then waits for it to exit. A pager that stopped
    /// reading (the user quit) is [`Failure::Closed`].
    fn close(&mut self) -> Result<(), Failure> {
        let flushed = self.input.take().map_or(Ok(()), |mut input| input.flush());
        let waited = self.child.wait();
        flushed?;
        waited.map(drop).map_err(|error| {
            Failure::of(Kind::Io, format!("waiting for the pager to exit: {error}"))
        })
    }
}

impl Drop for Pager {
    /// A command that stops early (an error, `?`) still gives the terminal back to the user
    /// only once the pager is done with it.
    fn drop(&mut self) {
        if self.input.is_some() {
            // The command's own failure is what is reported; the pager's would only hide it.
            let _ = self.close();
        }
    }
}

/// The pager command to run, if any: none with `--no-pager` or when standard output is no
/// terminal; else `ANNALS_PAGER`, `PAGER` (the first that is set, even to nothing) or
/// [`PAGER_DEFAULT`]; an empty one, or `cat`, is none.
fn chosen(
    no_pager: bool,
    terminal: bool,
    annals_pager: Option<OsString>,
    pager: Option<OsString>,
) -> Option<String> {
    if no_pager || !terminal {
        return None;
    }
    let command = annals_pager.or(pager).map_or_else(
        || PAGER_DEFAULT.to_owned(),
        |command| command.to_string_lossy().into_owned(),
    );
    let command = command.trim();
    (!command.is_empty() && command != "cat").then(|| command.to_owned())
}

/// Starts `command` with its standard input piped from this process; `None` when it cannot be
/// started, and the output then goes to standard output.
fn spawn(command: &str) -> Option<Pager> {
    let mut process = if command.contains(SHELL_CHARACTERS) {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command);
        shell
    } else {
        let mut words = command.split_whitespace();
        let mut program = Command::new(words.next()?);
        program.args(words);
        program
    };
    if std::env::var_os("LESS").is_none() {
        process.env("LESS", LESS_DEFAULT);
    }
    let mut child = process.stdin(Stdio::piped()).spawn().ok()?;
    let input = child.stdin.take().map(BufWriter::new);
    Some(Pager { input, child })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        no_pager: bool,
        terminal: bool,
        annals: Option<&str>,
        pager: Option<&str>,
        expected: Option<&str>,
    ) {
        let chosen = chosen(
            no_pager,
            terminal,
            annals.map(OsString::from),
            pager.map(OsString::from),
        );
        assert_eq!(
            chosen.as_deref(),
            expected,
            "{no_pager} {terminal} {annals:?} {pager:?}"
        );
    }

    #[test]
    fn pager_runs_only_on_a_terminal_without_no_pager() {
        check(false, true, None, None, Some("less -FRX"));
        check(false, false, None, None, None);
        check(false, false, Some("more"), Some("most"), None);
        check(true, true, None, Some("most"), None);
    }

    #[test]
    fn annals_pager_comes_before_pager_and_empty_or_cat_means_none() {
        check(false, true, Some("more"), Some("most"), Some("more"));
        check(false, true, None, Some("most -s"), Some("most -s"));
        check(false, true, None, Some(""), None);
        check(false, true, None, Some(" cat "), None);
        check(false, true, Some(""), Some("most"), None);
        check(false, true, Some("cat"), Some("most"), None);
    }

    #[test]
    fn pager_that_does_not_exist_is_not_started() {
        assert!(spawn("/nonexistent/annals-pager --flag").is_none());
    }
}
