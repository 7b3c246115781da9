//! The typed reasons behind [`super::OpenError`] and [`super::AuditError::Entity`]: what gave a
//! file away as not a log, why redb could not read one, and what is wrong with an entity spec.

use std::fmt;

/// What gave a file away as not an annals log ([`super::OpenError::NotAnnalsLog`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotALog {
    /// The path is a directory.
    Directory,
    /// The path is a FIFO, a device or a socket: only a regular file is opened, since opening
    /// a FIFO blocks until a writer comes and a device may never end.
    NotRegularFile,
    /// The file is empty.
    Empty,
    /// The file does not start with redb's magic.
    NotRedb,
    /// A redb database without annals' metadata table.
    NoMetaTable,
    /// The metadata table lacks annals' magic.
    NoMagic,
    /// The metadata table lacks a format version.
    NoFormatVersion,
}

impl fmt::Display for NotALog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotALog::Directory => "it is a directory",
            NotALog::NotRegularFile => "it is not a regular file (a FIFO, a device or a socket)",
            NotALog::Empty => "the file is empty",
            NotALog::NotRedb => "the file is not a redb database",
            NotALog::NoMetaTable => "a redb database without the annals.meta table",
            NotALog::NoMagic => "annals.meta lacks the annals magic",
            NotALog::NoFormatVersion => "annals.meta lacks a format version",
        })
    }
}

/// Why redb could not read a file ([`super::OpenError::Unreadable`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unreadable {
    /// redb's storage layer refused it.
    Refused {
        /// redb's account.
        cause: String,
    },
    /// redb panicked reading the file's structure; the store caught the panic.
    Panicked,
    /// The file ends before the data its header points to.
    Truncated {
        /// The file's length in bytes.
        length: u64,
    },
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::Refused { cause } => f.write_str(cause),
            Unreadable::Panicked => f.write_str("redb could not read the file's structure"),
            // "DB corrupted" is redb's own phrase for damage, kept so that one word names it.
            Unreadable::Truncated { length } => write!(
                f,
                "DB corrupted: the file is truncated: it ends at {length} bytes, before the data \
                 its header points to; restore it from a copy or an export"
            ),
        }
    }
}

/// What is wrong with an entity spec ([`super::AuditError::Entity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum EntityProblem {
    /// No colon between a kind and a name.
    NoKind {
        /// The kinds the store's projections name, as a list to read.
        known: String,
    },
    /// Nothing after the colon.
    EmptyName,
    /// A kind with two parts (`lane`, `ingest`) given one.
    OnePart {
        /// The kind.
        kind: &'static str,
        /// Its shape, such as `lane:<lane>/<key>`.
        shape: &'static str,
    },
    /// A kind no entity has.
    UnknownKind {
        /// The kind given.
        kind: String,
        /// The kinds the store's projections name, as a list to read.
        known: String,
    },
}

impl fmt::Display for EntityProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EntityProblem::NoKind { known } => {
                write!(f, "expected <kind>:<name>, with kind {known}")
            }
            EntityProblem::EmptyName => f.write_str("the name after the colon is empty"),
            EntityProblem::OnePart { kind, shape } => {
                let article = if kind.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                write!(f, "{article} {kind} entity is {shape}")
            }
            EntityProblem::UnknownKind { kind, known } => {
                write!(f, "unknown kind {kind:?}: use {known}")
            }
        }
    }
}
