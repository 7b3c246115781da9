//! What a command is to the dispatcher: its arguments' type implements [`Run`], which says the
//! files it names and how it uses each, whether it answers in JSON, and how it runs. The
//! dispatcher (`mod.rs`) checks the files, runs the command and reports its failure; it reads
//! no command's fields, so a command is added in its own file and one line of the table.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use annals::output_path::Output;

use super::failure::Failure;

/// A file a command was given, and how it uses it: what `paths::check_named_files` checks
/// before anything is opened.
pub(crate) enum NamedFile<'a> {
    /// A file read, or written in place as a log is: refused when something other than a
    /// regular file is there. `what` names it in the refusal ("the log", "a key file").
    Read {
        /// The path given.
        path: &'a Path,
        /// What the command wanted the file to be, in words.
        what: &'static str,
    },
    /// A file or folder written, which goes through the library's rule for paths written.
    Written {
        /// The log it is written from, whose own files it must not be (none for a key file).
        log: Option<&'a Path>,
        /// The path given.
        path: &'a Path,
        /// A file or a folder.
        what: Output,
    },
}

impl<'a> NamedFile<'a> {
    /// A file read, named `what` in a refusal.
    pub(crate) fn read(path: &'a Path, what: &'static str) -> Self {
        NamedFile::Read { path, what }
    }

    /// The file an argument of the form `@FILE` names (a payload, a tree head, a verifier
    /// key), read; `None` for an argument given as it is.
    pub(crate) fn at_file(argument: &'a str, what: &'static str) -> Option<Self> {
        argument
            .strip_prefix('@')
            .map(|file| NamedFile::read(Path::new(file), what))
    }

    /// The archive files of a cut log, then the log: the files of a command that reads the
    /// records the log's cuts archived.
    pub(crate) fn archives_then_log(archives: &'a [PathBuf], log: &'a Path) -> Vec<Self> {
        let archives = archives.iter();
        let archives = archives.map(|file| NamedFile::read(file, "an archive file"));
        archives.chain([NamedFile::read(log, "the log")]).collect()
    }

    /// A file or folder written from the log at `log`.
    pub(crate) fn written(log: Option<&'a Path>, path: &'a Path, what: Output) -> Self {
        NamedFile::Written { log, path, what }
    }
}

/// One command: its arguments, the files they name, its JSON and its run.
pub(crate) trait Run {
    /// Every file the command names, in the order they are checked: the first refused is the
    /// one reported.
    fn files(&self) -> Vec<NamedFile<'_>>;

    /// Whether the command was asked for JSON, which its errors then are too.
    fn json(&self) -> bool;

    /// Runs the command, once its files passed their checks.
    fn run(self) -> Result<ExitCode, Failure>;
}
