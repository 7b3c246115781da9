//! Why a personal append, a read of a personal payload or an erasure was refused or failed.

use std::path::PathBuf;

use crate::record::Position;
pub use crate::record::envelope::SubjectProblem;

/// A personal payload, a subject or a key store (`<log>.keys`, `schema/FORMAT.md` 3.16) that
/// cannot be used as asked. A refused append or erasure leaves the log's file as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ErasureError {
    /// A subject's id that is not one.
    #[error("subject {subject:?}: {problem}")]
    Subject {
        /// The id given.
        subject: String,
        /// What is wrong with it.
        problem: SubjectProblem,
    },
    /// A personal append for a subject already erased: its data may never enter the log again
    /// under that id.
    #[error(
        "subject {subject:?} was erased at position {position}: no personal data is appended for it again"
    )]
    Erased {
        /// The subject.
        subject: String,
        /// The position of its erasure event.
        position: Position,
    },
    /// A plain append whose payload begins with the bytes that mark a personal envelope
    /// (`0xFF a p e`): it would be read as one. Append it with a subject, or change its first
    /// byte.
    #[error(
        "event {index}: a plain payload may not begin with the personal envelope's magic bytes (ff 61 70 65)"
    )]
    EnvelopeMagic {
        /// The event's index in the append.
        index: usize,
    },
    /// A command whose field names a subject, decided without its bytes sealed for that
    /// subject: run it through a store's write session, which seals it
    /// ([`crate::Command::sealed`]).
    #[error(
        "the command's {field} is personal to subject {subject:?} but is not sealed for it: execute it through a store, which seals it"
    )]
    NotSealed {
        /// The field.
        field: &'static str,
        /// The subject named.
        subject: String,
    },
    /// A store with no file (over a storage backend) has no key store beside it.
    #[error("a store over a storage backend has no key store: personal data needs a log file")]
    NoKeyStore,
    /// The key store is not one, or is damaged: it is left as it is.
    #[error("{path}: not a key store this build reads: {problem}")]
    Damaged {
        /// The key store's path.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A key export (`schema/FORMAT.md` 3.17) given to [`crate::erasure::Keys::import`] that is
    /// not one, or is damaged: nothing is imported.
    #[error("{path}: not a key export this build reads: {problem}")]
    KeyExport {
        /// The file's path.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// [`crate::erasure::Keys::export`] to a path where a file is: a key export is never written
    /// over one (nor through a link), so no older copy of a key is left behind under its name.
    #[error("{path}: a file is there: a key export is written to a new file only")]
    KeyExportExists {
        /// The path given.
        path: PathBuf,
    },
    /// A key import that holds a key for a subject this log's key store holds another key
    /// for: the export is not of this log's replica set. Nothing is imported.
    #[error(
        "the key export holds a key for subject {subject:?} other than this log's key store's: it is not a copy of this log's keys"
    )]
    KeyConflict {
        /// The subject.
        subject: String,
    },
    /// A command field kept sealed in a projection's row, whose subject's key is held and
    /// does not open it for the stream and kind it was read as of.
    #[error(
        "a field personal to subject {subject:?} does not open as one of stream {stream:?}, kind {kind:?}, with the key store's key: the key store is not this log's, or the field is another event's"
    )]
    UnopenableField {
        /// The stream it was read as of.
        stream: String,
        /// The kind.
        kind: String,
        /// Its subject.
        subject: String,
    },
    /// A personal payload whose subject's key is held, and which that key does not open: the
    /// key store is not this log's, or the payload was sealed for another stream or kind.
    #[error(
        "the personal payload at position {position} (subject {subject:?}) does not open with the key store's key for its subject: the key store is not this log's"
    )]
    Unopenable {
        /// The record's position.
        position: Position,
        /// Its subject.
        subject: String,
    },
}
