//! `completions`: the shell completion script of the `annals` command, made by clap_complete
//! from the same clap command that parses the arguments, so it never falls behind them. It
//! opens no log and writes only to standard output.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use super::args::{Cli, CompletionsArgs};
use super::command::{NamedFile, Run};
use super::failure::Failure;

pub(crate) fn completions(args: CompletionsArgs) -> Result<ExitCode, Failure> {
    let mut command = Cli::command();
    let name = command.get_name().to_owned();
    // clap_complete panics on a failed write; into memory none fails, and a closed standard
    // output is then an error like any other write's.
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, name, &mut script);
    let mut out = io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

impl Run for CompletionsArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        // It prints what the arguments' declarations say, to standard output: no file.
        Vec::new()
    }

    fn json(&self) -> bool {
        // A completion script is for a shell, never JSON: its errors are text unless `--json`
        // is given anyway (`json_asked`).
        false
    }

    fn run(self) -> Result<ExitCode, Failure> {
        completions(self)
    }
}
