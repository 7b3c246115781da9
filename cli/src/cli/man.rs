//! `man`: the manual pages of the `annals` command in roff, made by clap_mangen from the same
//! clap command that parses the arguments. As git's, they are one page a command: `annals(1)`
//! lists the commands, `annals-log(1)` is `log`'s. It opens no log and writes only to standard
//! output.

use std::io::{self, Write};
use std::process::ExitCode;

use clap::CommandFactory;

use super::args::{Cli, ManArgs};
use super::command::{NamedFile, Run};
use super::failure::Failure;
use super::render::word;

pub(crate) fn man(args: ManArgs) -> Result<ExitCode, Failure> {
    // Built, so that each command knows its page's name (`annals-log`); without the `help`
    // command, which has no page of its own.
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    let command = find(&root, &args.command)?;
    let title = command
        .get_display_name()
        .unwrap_or_else(|| command.get_name())
        .to_uppercase();
    // Every page is of this build of `annals`, a command's as much as the top one's.
    let source = format!("annals {}", env!("CARGO_PKG_VERSION"));
    let page = clap_mangen::Man::new(command.clone())
        .title(title)
        .source(source);
    let mut roff = Vec::new();
    page.render(&mut roff)?;
    let mut out = io::stdout().lock();
    out.write_all(&roff)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The command at `path` below `root` (`["witness", "serve"]`), or a usage error naming the
/// commands there are.
fn find<'a>(root: &'a clap::Command, path: &[String]) -> Result<&'a clap::Command, Failure> {
    let mut command = root;
    for name in path {
        let Some(child) = command.find_subcommand(name) else {
            let names: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
            let parent = command.get_display_name().unwrap_or(command.get_name());
            return Err(Failure::Usage(format!(
                "{parent} has no command {}: its commands are {}",
                word(name),
                names.join(", ")
            )));
        };
        command = child;
    }
    Ok(command)
}

impl Run for ManArgs {
    fn files(&self) -> Vec<NamedFile<'_>> {
        // It prints what the arguments' declarations say, to standard output: no file.
        Vec::new()
    }

    fn json(&self) -> bool {
        // A manual page is for `man`, never JSON: its errors are text unless `--json` is
        // given anyway (`json_asked`).
        false
    }

    fn run(self) -> Result<ExitCode, Failure> {
        man(self)
    }
}
