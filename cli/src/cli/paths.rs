//! The checks every command makes of the paths it was given, before it opens any of them: an
//! input (the log, an export file, a payload `@FILE`, a proof file, `--head @FILE`) must be a
//! regular file, and every output (an export, an archive, a backup, a tiles folder and its
//! checkpoint, a key file) goes through the library's one rule for paths written
//! (`annals::output_path::check`): never one of the store's own files (the log, its journal,
//! its archives, the files it builds beside it, through links too), a FIFO or a device, or a
//! path in a missing folder. The library applies the same rule again where it writes.
//!
//! The checks only look at a path's metadata and never open it: opening a FIFO blocks until
//! a writer comes, so a command that opened one first would hang with no word. An input that
//! does not exist passes; the command then says so in its own words, or creates it.

use std::fs;
use std::io;
use std::path::Path;

use annals::output_path::{Output, StoreFiles};

use super::command::NamedFile;
use super::failure::{Failure, Kind};

/// Refuses, before anything is opened, every file a command names ([`Run::files`]) that it
/// reads (or writes in place) and that exists and is not a regular file, and every output the
/// library's rule for paths written refuses. The one check every command goes through.
///
/// [`Run::files`]: super::command::Run::files
pub(crate) fn check_named_files(files: &[NamedFile<'_>]) -> Result<(), Failure> {
    for file in files {
        match *file {
            NamedFile::Read { path, what } => require_regular(path, what)?,
            NamedFile::Written { log, path, what } => check_output(log, path, what)?,
        }
    }
    Ok(())
}

/// Refuses `path` when something other than a regular file (a directory, a FIFO, a device,
/// a socket, or a symbolic link to one) is there; `what` says what the command wanted it to
/// be. Nothing there passes.
pub(crate) fn require_regular(path: &Path, what: &str) -> Result<(), Failure> {
    let metadata = match fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(Failure::file(path, false, &error)),
    };
    if metadata.is_file() {
        return Ok(());
    }
    if metadata.is_dir() {
        let error = io::Error::from(io::ErrorKind::IsADirectory);
        return Err(Failure::file(path, false, &error));
    }
    Err(Failure::of(
        Kind::InvalidInput,
        format!(
            "{}: is {}, not a regular file; give {what} as a regular file",
            path.display(),
            file_type(&metadata)
        ),
    ))
}

/// Refuses `output` as a place to write `what` from the log at `log` (none for a key file):
/// the library's rule for every path written, [`annals::output_path::check`], with the
/// files the log's path names (the store adds its archives where it writes).
pub(crate) fn check_output(log: Option<&Path>, output: &Path, what: Output) -> Result<(), Failure> {
    let files = log.map(StoreFiles::of_log);
    annals::output_path::check(output, what, files.as_ref())
        .map_err(|error| annals::Error::from(error).into())
}

/// Refuses to replace an existing file at `output` (which [`check_output`] found to be a
/// regular file of no store) when a writer in another process has it open as a log, or
/// without `force`.
pub(crate) fn check_replace(output: &Path, force: bool) -> Result<(), Failure> {
    if fs::symlink_metadata(output).is_err() {
        return Ok(());
    }
    if annals::maintenance::held_by_writer(output) {
        return Err(Failure::of(
            Kind::Held,
            format!(
                "{}: is an annals log that a writer in another process has open; the export \
                 would replace it under that writer: give another path for the export",
                output.display()
            ),
        ));
    }
    if !force {
        return Err(Failure::of(
            Kind::Exists,
            format!(
                "{}: already exists; give --force to replace it, or another path",
                output.display()
            ),
        ));
    }
    Ok(())
}

/// Whether `a` and `b` name the same file: the same device and inode where the platform has
/// them, else the same canonical path. A path that cannot be read names no file.
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

/// What kind of file `metadata` describes, in words, for one that is neither a regular file
/// nor a directory.
fn file_type(metadata: &fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    let _ = metadata;
    "a special file"
}
