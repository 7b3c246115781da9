//! Why a command stopped and how the process exits: the command line's error kinds (the
//! `kind` of a `--json` error), their exit codes, and the conversions from the library's errors
//! and from failed file operations. It imports no command: every command imports it.

use std::io;
use std::path::Path;

use annals::{Error, ErrorKind, error::FileKind, error::OpenError, error::OutputPathError};

/// Exit code for findings: an append refused, corrupt data, a log that fails verification.
pub(crate) const EXIT_FINDINGS: u8 = 1;
/// Exit code for usage and I/O errors.
pub(crate) const EXIT_USAGE: u8 = 2;
/// Exit code of `check-proof` for a proof that holds only against the tree heads it carries
/// itself: self-consistent, but nothing trusted was given, so it proves nothing about a log
/// (a forger can make one). Never 0, so that a script testing the exit code is not misled.
pub(crate) const EXIT_SELF_CONSISTENT_ONLY: u8 = 3;

/// The stable name of what went wrong, for `--json` errors, and the exit code it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Arguments clap refused: an unknown flag, a missing value.
    Usage,
    /// A value the command cannot use: a malformed hash, a payload over a limit.
    InvalidInput,
    /// A file that does not exist.
    NotFound,
    /// A path that is a directory where a file was expected.
    IsADirectory,
    /// A file the process may not read or write.
    PermissionDenied,
    /// The file system is full.
    NoSpace,
    /// Another process holds the log in a mode this command cannot join.
    Held,
    /// An output file that exists, which the command replaces only with `--force`.
    Exists,
    /// An output path that names one of the store's own files (the log, its journal, an
    /// archive of its cuts, a file it builds beside the log), directly or through a link.
    StoreFile,
    /// A file that is not an annals log, or of a format this build does not read.
    NotALog,
    /// A log of an earlier format, which must be upgraded (opened writable once) before it
    /// is read.
    NeedsUpgrade,
    /// Stored data that fails its checks: a damaged log or export file.
    Corrupt,
    /// A write the log refused: a version mismatch, an idempotency conflict, a fenced guard.
    Refused,
    /// `verify` or `demo` found the log unsound.
    VerifyFailed,
    /// `check-proof` found the proof invalid.
    InvalidProof,
    /// A read of records a cut archived (exit 1): the message names the archive.
    Archived,
    /// Any other finding (exit 1).
    Finding,
    /// Any other failure of the file system or storage (exit 2).
    Io,
}

impl Kind {
    /// The name printed as `kind`; part of the command line's interface, never renamed.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::InvalidInput => "invalid_input",
            Kind::NotFound => "not_found",
            Kind::IsADirectory => "is_a_directory",
            Kind::PermissionDenied => "permission_denied",
            Kind::NoSpace => "no_space",
            Kind::Held => "held",
            Kind::Exists => "exists",
            Kind::StoreFile => "store_file",
            Kind::NotALog => "not_a_log",
            Kind::NeedsUpgrade => "needs_upgrade",
            Kind::Corrupt => "corrupt",
            Kind::Refused => "refused",
            Kind::VerifyFailed => "verify_failed",
            Kind::InvalidProof => "invalid_proof",
            Kind::Archived => "archived",
            Kind::Finding => "finding",
            Kind::Io => "io",
        }
    }

    /// 1 for findings about the log or the input's content, 2 for usage and I/O.
    pub(crate) fn exit(self) -> u8 {
        match self {
            Kind::Corrupt
            | Kind::Refused
            | Kind::VerifyFailed
            | Kind::InvalidProof
            | Kind::Archived
            | Kind::Finding => EXIT_FINDINGS,
            _ => EXIT_USAGE,
        }
    }

    /// The kind of a failed file operation.
    pub(crate) fn of_io(error: &io::Error) -> Kind {
        Kind::of_error(ErrorKind::of_io(error)).0
    }

    /// The command line's kind of the library's `kind`, and its exit code: every append
    /// refusal (a limit too), every damaged file and every refused cut is a finding (1), the
    /// rest usage or I/O (2).
    fn of_error(kind: ErrorKind) -> (Kind, u8) {
        let ours = match kind {
            ErrorKind::WrongExpectedVersion
            | ErrorKind::IdempotencyConflict
            | ErrorKind::AppendRefused
            | ErrorKind::Fenced
            | ErrorKind::ReservedKind => return (Kind::Refused, EXIT_FINDINGS),
            ErrorKind::Limit => return (Kind::InvalidInput, EXIT_FINDINGS),
            // A refusal of the store as it is (a mode, a compaction under way): not the log's
            // content.
            ErrorKind::Refused => return (Kind::Refused, EXIT_USAGE),
            ErrorKind::ArchiveRefused | ErrorKind::NotInCut => Kind::Refused,
            ErrorKind::InvalidCommand
            | ErrorKind::InvalidArgument
            | ErrorKind::InvalidConfig
            | ErrorKind::OutputPath => Kind::InvalidInput,
            ErrorKind::NotFound => Kind::NotFound,
            ErrorKind::IsADirectory => Kind::IsADirectory,
            ErrorKind::PermissionDenied => Kind::PermissionDenied,
            ErrorKind::NoSpace => Kind::NoSpace,
            ErrorKind::Held => Kind::Held,
            ErrorKind::Exists => Kind::Exists,
            ErrorKind::StoreFile => Kind::StoreFile,
            ErrorKind::NotALog => Kind::NotALog,
            ErrorKind::NeedsUpgrade => Kind::NeedsUpgrade,
            ErrorKind::Corrupt => Kind::Corrupt,
            ErrorKind::Behind => Kind::Finding,
            ErrorKind::Archived => Kind::Archived,
            _ => Kind::Io,
        };
        (ours, ours.exit())
    }
}

/// Why a command stopped: what to tell stderr and how to exit.
pub(crate) enum Failure {
    /// A finding (refused append, corrupt data): exit 1.
    Finding(String),
    /// Bad usage or a failure of the file system: exit 2.
    Usage(String),
    /// A failure of a known kind, with its exit code.
    Of {
        /// What went wrong, for `--json`.
        kind: Kind,
        /// The exit code.
        exit: u8,
        /// What to tell the user.
        message: String,
    },
    /// Standard output was closed early (e.g. piped into `head`): stop quietly.
    Closed,
}

impl Failure {
    /// A failed operation on the file at `path`: `reading` or writing it (for the message
    /// about permissions), naming the path and the cause in words.
    pub(crate) fn file(path: &Path, writing: bool, error: &io::Error) -> Failure {
        Failure::named(&path.display().to_string(), writing, error)
    }

    /// [`Failure::file`] for a file the user named as `name` (`--head @FILE`, say).
    pub(crate) fn named(name: &str, writing: bool, error: &io::Error) -> Failure {
        let kind = Kind::of_io(error);
        Failure::of(kind, format!("{name}: {}", cause(kind, writing, error)))
    }

    /// A failure of `kind`, with the exit code kinds take.
    pub(crate) fn of(kind: Kind, message: String) -> Failure {
        Failure::Of {
            kind,
            exit: kind.exit(),
            message,
        }
    }

    /// The kind and the message to report.
    pub(crate) fn describe(self) -> (Kind, u8, String) {
        match self {
            Failure::Finding(message) => (Kind::Finding, EXIT_FINDINGS, message),
            Failure::Usage(message) => (Kind::InvalidInput, EXIT_USAGE, message),
            Failure::Of {
                kind,
                exit,
                message,
            } => (kind, exit, message),
            Failure::Closed => (Kind::Io, EXIT_USAGE, "standard output closed".to_owned()),
        }
    }
}

/// The cause of a failed file operation in words: the ones people meet are spelled out (the
/// standard library's text ends in `(os error N)`).
fn cause(kind: Kind, writing: bool, error: &io::Error) -> String {
    match kind {
        Kind::NotFound => "no such file or directory".to_owned(),
        Kind::IsADirectory => "is a directory".to_owned(),
        Kind::PermissionDenied if writing => "not writable: permission denied".to_owned(),
        Kind::PermissionDenied => "not readable: permission denied".to_owned(),
        Kind::NoSpace => "no space left on the device".to_owned(),
        _ => error.to_string(),
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Self {
        if let Error::OutputPath(OutputPathError::NotAFile {
            path,
            found: FileKind::Folder,
        }) = &error
        {
            // Said as every other command says a folder where a file should be.
            let folder = io::Error::from(io::ErrorKind::IsADirectory);
            return Failure::file(path, true, &folder);
        }
        if let Error::Open(
            OpenError::Unreadable { path, .. } | OpenError::NotAnnalsLog { path, .. },
        ) = &error
            && let Some(failure) = diagnose(
                path,
                matches!(error, Error::Open(OpenError::Unreadable { .. })),
            )
        {
            // redb and the format check report the file system's refusal in their own
            // words; the path says which refusal it was.
            return failure;
        }
        let (kind, exit) = Kind::of_error(error.kind());
        let message = error.to_string();
        Failure::Of {
            kind,
            exit,
            message,
        }
    }
}

/// Why `path` cannot be opened as a log file, when the file system says so: a directory, or
/// (`unreadable`: redb could not open it) a file this process may not write. `None` when it
/// can (the trouble is in its bytes).
pub(crate) fn diagnose(path: &Path, unreadable: bool) -> Option<Failure> {
    let metadata = std::fs::metadata(path).ok()?;
    if metadata.is_dir() {
        let error = io::Error::from(io::ErrorKind::IsADirectory);
        return Some(Failure::file(path, false, &error));
    }
    if !unreadable {
        return None;
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
    {
        Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
            Some(Failure::file(path, true, &error))
        }
        _ => None,
    }
}

/// Only for writing to standard output; file reads say which file failed.
impl From<io::Error> for Failure {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::BrokenPipe => Failure::Closed,
            _ => {
                let kind = Kind::of_io(&error);
                Failure::of(
                    kind,
                    format!("writing output: {}", cause(kind, true, &error)),
                )
            }
        }
    }
}
