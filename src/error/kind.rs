//! What went wrong, as a program decides what to do about it: [`ErrorKind`], the one
//! classification of [`Error`] that every front end speaks (the command line's `kind` and exit
//! code, the Node package's `code`), so that no front end matches on the error's variants.

use std::io;

use super::{
    AppendError, ArchiveError, ErasureError, Error, ExportError, FileKind, JournalError, OpenError,
    OutputPathError, ProjectionError, SigningError, StorageError, StoreError, WriterError,
};

/// What went wrong, in a few dozen stable names: [`Error::kind`] gives it, [`ErrorKind::code`]
/// names it. Each kind says what the caller can do about it (retry with another version,
/// wait, free space, fix an argument, restore a file), which the error's variants, made for
/// the message, do not.
///
/// ```
/// use annals::{ErrorKind, Store};
///
/// let error = Store::open_read_only("no-such-log.redb").err().expect("no such file");
/// assert_eq!(error.kind(), ErrorKind::NotFound);
/// assert_eq!(error.kind().code(), "NOT_FOUND");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An append whose expected version was not the stream's: read the stream and decide again.
    WrongExpectedVersion,
    /// An idempotency key already used for other content.
    IdempotencyConflict,
    /// An append over one of the log's limits (an event's size, a batch's count, a name's
    /// length), or of no events.
    Limit,
    /// Any other append refused for what it holds (a key repeated in one batch, a partial
    /// duplicate, an import that does not continue the log, a full log).
    AppendRefused,
    /// A guarded write its precondition refused: a fencing token a later lease superseded, or
    /// a domain's own precondition.
    Fenced,
    /// An append of a kind the log reserves for itself.
    ReservedKind,
    /// Any other write or operation refused as the store is (a mode it needs, a compaction
    /// under way, a backup's target there already, a signing behind its last checkpoint).
    Refused,
    /// Another process holds the log in a mode this open cannot join, or a writer is still
    /// settling its journal: wait, or open it another way.
    Held,
    /// A file or folder that does not exist, where one was required.
    NotFound,
    /// A folder where a file was required.
    IsADirectory,
    /// A file this process may not read or write.
    PermissionDenied,
    /// The device is full: free space and try again.
    NoSpace,
    /// A file that is not an annals log, or of a format this build does not read.
    NotALog,
    /// A log of an earlier format, to be upgraded (opened writable once) before it is read.
    NeedsUpgrade,
    /// A file that could not be opened as a log for another reason.
    OpenFailed,
    /// Stored data that fails its checks: a damaged log, journal, projection, archive or export.
    Corrupt,
    /// A command a projection refused as malformed, naming the field.
    InvalidCommand,
    /// An argument out of range: a size or position past the head, an option, a name.
    InvalidArgument,
    /// A configured limit out of range, naming the field.
    InvalidConfig,
    /// A write to a store opened read-only.
    ReadOnly,
    /// A writer closed before the call.
    Closed,
    /// A subscription that fell too far behind, or whose store closed.
    SubscriptionLost,
    /// A projection read while its tables are behind the log (a catch-up or rebuild unfinished).
    Behind,
    /// A read of records a cut archived: the error names the archive.
    Archived,
    /// A cut that does not hold the projection asked of it.
    NotInCut,
    /// A cut refused (past the head, not forward, never cut).
    ArchiveRefused,
    /// An output file that exists, which is replaced only when asked.
    Exists,
    /// An output path naming one of the store's own files.
    StoreFile,
    /// An output path refused for what is there (not a regular file, not a folder).
    OutputPath,
    /// Any other failure of the file system or of storage.
    Io,
    /// A failure that is no caller's to fix: a writer's job that panicked, a projection
    /// registered wrongly, replication failing.
    Internal,
}

impl ErrorKind {
    /// Every kind, in the order of their declaration.
    pub const ALL: [ErrorKind; 31] = [
        ErrorKind::WrongExpectedVersion,
        ErrorKind::IdempotencyConflict,
        ErrorKind::Limit,
        ErrorKind::AppendRefused,
        ErrorKind::Fenced,
        ErrorKind::ReservedKind,
        ErrorKind::Refused,
        ErrorKind::Held,
        ErrorKind::NotFound,
        ErrorKind::IsADirectory,
        ErrorKind::PermissionDenied,
        ErrorKind::NoSpace,
        ErrorKind::NotALog,
        ErrorKind::NeedsUpgrade,
        ErrorKind::OpenFailed,
        ErrorKind::Corrupt,
        ErrorKind::InvalidCommand,
        ErrorKind::InvalidArgument,
        ErrorKind::InvalidConfig,
        ErrorKind::ReadOnly,
        ErrorKind::Closed,
        ErrorKind::SubscriptionLost,
        ErrorKind::Behind,
        ErrorKind::Archived,
        ErrorKind::NotInCut,
        ErrorKind::ArchiveRefused,
        ErrorKind::Exists,
        ErrorKind::StoreFile,
        ErrorKind::OutputPath,
        ErrorKind::Io,
        ErrorKind::Internal,
    ];

    /// Its stable name, upper snake case (`WRONG_EXPECTED_VERSION`): never renamed.
    pub fn code(self) -> &'static str {
        match self {
            ErrorKind::WrongExpectedVersion => "WRONG_EXPECTED_VERSION",
            ErrorKind::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            ErrorKind::Limit => "LIMIT",
            ErrorKind::AppendRefused => "APPEND_REFUSED",
            ErrorKind::Fenced => "FENCED",
            ErrorKind::ReservedKind => "RESERVED_KIND",
            ErrorKind::Refused => "REFUSED",
            ErrorKind::Held => "HELD",
            ErrorKind::NotFound => "NOT_FOUND",
            ErrorKind::IsADirectory => "IS_A_DIRECTORY",
            ErrorKind::PermissionDenied => "PERMISSION_DENIED",
            ErrorKind::NoSpace => "NO_SPACE",
            ErrorKind::NotALog => "NOT_A_LOG",
            ErrorKind::NeedsUpgrade => "NEEDS_UPGRADE",
            ErrorKind::OpenFailed => "OPEN_FAILED",
            ErrorKind::Corrupt => "CORRUPT",
            ErrorKind::InvalidCommand => "INVALID_COMMAND",
            ErrorKind::InvalidArgument => "INVALID_ARGUMENT",
            ErrorKind::InvalidConfig => "INVALID_CONFIG",
            ErrorKind::ReadOnly => "READ_ONLY",
            ErrorKind::Closed => "CLOSED",
            ErrorKind::SubscriptionLost => "SUBSCRIPTION_LOST",
            ErrorKind::Behind => "BEHIND",
            ErrorKind::Archived => "ARCHIVED",
            ErrorKind::NotInCut => "NOT_IN_CUT",
            ErrorKind::ArchiveRefused => "ARCHIVE_REFUSED",
            ErrorKind::Exists => "EXISTS",
            ErrorKind::StoreFile => "STORE_FILE",
            ErrorKind::OutputPath => "OUTPUT_PATH",
            ErrorKind::Io => "IO",
            ErrorKind::Internal => "INTERNAL",
        }
    }

    /// The kind of a failed file operation.
    pub fn of_io(error: &io::Error) -> ErrorKind {
        match error.kind() {
            io::ErrorKind::NotFound => ErrorKind::NotFound,
            io::ErrorKind::IsADirectory => ErrorKind::IsADirectory,
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                ErrorKind::PermissionDenied
            }
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => ErrorKind::NoSpace,
            _ => ErrorKind::Io,
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}

impl Error {
    /// What kind of failure this is (see [`ErrorKind`]). Each layer's error classifies its
    /// own variants below: a variant added to a layer is classified beside its siblings.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Append(append) => append.kind(),
            Error::Store(store) => store.kind(),
            Error::Open(open) => open.kind(),
            Error::Corrupt { .. }
            | Error::CorruptValue { .. }
            | Error::CorruptMeta { .. }
            | Error::DamagedFile { .. }
            | Error::CorruptProjection { .. }
            | Error::UndecodableEvent { .. }
            // The log under a consumer's checkpoint is not the log it read.
            | Error::Consumer(_) => ErrorKind::Corrupt,
            Error::Projection(ProjectionError::Invariant { .. }) => ErrorKind::Corrupt,
            Error::Projection(ProjectionError::Behind { .. }) => ErrorKind::Behind,
            Error::Projection(_) => ErrorKind::Internal,
            Error::InvalidCommand { .. } => ErrorKind::InvalidCommand,
            Error::Config(_) => ErrorKind::InvalidConfig,
            // A proof asked of a size or position the log does not have.
            Error::Audit(_) => ErrorKind::InvalidArgument,
            Error::ReadOnly => ErrorKind::ReadOnly,
            Error::Subscription(_) => ErrorKind::SubscriptionLost,
            Error::Writer(writer) => match writer {
                WriterError::Closed => ErrorKind::Closed,
                WriterError::Batch(inner) => inner.kind(),
                WriterError::InvalidOption { .. } => ErrorKind::InvalidArgument,
                _ => ErrorKind::Internal,
            },
            Error::Archive(archive) => archive.kind(),
            Error::Journal(journal) => journal.kind(),
            Error::Signing(signing) => signing.kind(),
            Error::Export(export) => match export.as_ref() {
                ExportError::Io(io) => ErrorKind::of_io(io),
                // An import that does not continue the log is an append it refuses.
                ExportError::Mismatch { .. } => ErrorKind::AppendRefused,
                _ => ErrorKind::Corrupt,
            },
            Error::Erasure(erasure) => erasure.kind(),
            Error::OutputPath(refused) => refused.kind(),
            #[cfg(feature = "jetstream")]
            Error::Replication(_) => ErrorKind::Internal,
            Error::NoSpace { .. } => ErrorKind::NoSpace,
            Error::Storage(StorageError(redb::Error::Io(io))) | Error::Io(io) => ErrorKind::of_io(io),
            Error::Storage(_) => ErrorKind::Io,
        }
    }
}

impl AppendError {
    fn kind(&self) -> ErrorKind {
        match self {
            AppendError::WrongExpectedVersion { .. } => ErrorKind::WrongExpectedVersion,
            AppendError::Conflict { .. } => ErrorKind::IdempotencyConflict,
            AppendError::Limit(_) => ErrorKind::Limit,
            _ => ErrorKind::AppendRefused,
        }
    }
}

impl StoreError {
    fn kind(&self) -> ErrorKind {
        match self {
            StoreError::Fenced { .. } | StoreError::PreconditionRefused { .. } => ErrorKind::Fenced,
            StoreError::WriterBusy { .. } => ErrorKind::Held,
            StoreError::ReservedKind { .. }
            | StoreError::CutKind { .. }
            | StoreError::ErasureKind { .. }
            | StoreError::ErasureStream { .. } => ErrorKind::ReservedKind,
            _ => ErrorKind::Refused,
        }
    }
}

impl OpenError {
    fn kind(&self) -> ErrorKind {
        match self {
            OpenError::Held { .. } => ErrorKind::Held,
            OpenError::Missing { .. } => ErrorKind::NotFound,
            OpenError::NotAnnalsLog { .. } | OpenError::UnsupportedFormat { .. } => {
                ErrorKind::NotALog
            }
            OpenError::NeedsUpgrade { .. } => ErrorKind::NeedsUpgrade,
            _ => ErrorKind::OpenFailed,
        }
    }
}

impl ArchiveError {
    fn kind(&self) -> ErrorKind {
        match self {
            ArchiveError::Archived { .. } => ErrorKind::Archived,
            ArchiveError::NotInCut { .. } => ErrorKind::NotInCut,
            ArchiveError::ArchiveExists { .. } => ErrorKind::Exists,
            ArchiveError::ArchiveName { .. } => ErrorKind::InvalidArgument,
            ArchiveError::NoFolder { .. } => ErrorKind::NotFound,
            ArchiveError::ArchiveGap { .. }
            | ArchiveError::ArchivedHash { .. }
            | ArchiveError::UndecodableCut { .. }
            | ArchiveError::SnapshotDiffers { .. } => ErrorKind::Corrupt,
            _ => ErrorKind::ArchiveRefused,
        }
    }
}

impl JournalError {
    fn kind(&self) -> ErrorKind {
        match self {
            // A writer draining under every read: the log is busy, not damaged.
            JournalError::Unsettled { .. } => ErrorKind::Held,
            JournalError::Poisoned { .. } | JournalError::Unusable { .. } => ErrorKind::Io,
            _ => ErrorKind::Corrupt,
        }
    }
}

impl SigningError {
    fn kind(&self) -> ErrorKind {
        match self {
            SigningError::Diverged { .. } => ErrorKind::Corrupt,
            SigningError::Unsignable { .. } | SigningError::CosignedUnopened { .. } => {
                ErrorKind::InvalidArgument
            }
            _ => ErrorKind::Refused,
        }
    }
}

impl ErasureError {
    fn kind(&self) -> ErrorKind {
        match self {
            ErasureError::Subject { .. } => ErrorKind::InvalidArgument,
            // A refusal of what the append holds, as any append refusal.
            ErasureError::EnvelopeMagic { .. } | ErasureError::Erased { .. } => {
                ErrorKind::AppendRefused
            }
            ErasureError::Damaged { .. }
            | ErasureError::Unopenable { .. }
            | ErasureError::UnopenableField { .. }
            | ErasureError::KeyExport { .. } => ErrorKind::Corrupt,
            ErasureError::KeyExportExists { .. } => ErrorKind::Exists,
            _ => ErrorKind::Refused,
        }
    }
}

impl OutputPathError {
    fn kind(&self) -> ErrorKind {
        match self {
            OutputPathError::StoreFile { .. } => ErrorKind::StoreFile,
            OutputPathError::NoFolder { .. } => ErrorKind::NotFound,
            OutputPathError::NotAFile {
                found: FileKind::Folder,
                ..
            } => ErrorKind::IsADirectory,
            OutputPathError::Io { error, .. } => ErrorKind::of_io(error),
            _ => ErrorKind::OutputPath,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_with_a_code_of_its_own() {
        let codes: std::collections::BTreeSet<_> =
            ErrorKind::ALL.iter().map(|kind| kind.code()).collect();
        assert_eq!(codes.len(), ErrorKind::ALL.len());
        for code in codes {
            assert!(
                code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'),
                "{code}"
            );
        }
    }

    #[test]
    fn a_failed_file_operation_is_classified_by_what_the_caller_can_do() {
        let kind = |io: io::ErrorKind| Error::Io(io::Error::from(io)).kind();
        assert_eq!(kind(io::ErrorKind::NotFound), ErrorKind::NotFound);
        assert_eq!(
            kind(io::ErrorKind::PermissionDenied),
            ErrorKind::PermissionDenied
        );
        assert_eq!(kind(io::ErrorKind::StorageFull), ErrorKind::NoSpace);
        assert_eq!(kind(io::ErrorKind::UnexpectedEof), ErrorKind::Io);
    }

    #[test]
    fn a_batch_error_is_the_kind_of_the_error_inside_it() {
        let inner = Error::ReadOnly;
        let batch = Error::Writer(WriterError::Batch(std::sync::Arc::new(inner)));
        assert_eq!(batch.kind(), ErrorKind::ReadOnly);
    }
}
