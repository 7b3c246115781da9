//! Why a path given for a file (or a folder) to write was refused: the rule every writer of
//! the crate goes through (`crate::output_path`).

use std::path::PathBuf;

use crate::record::Position;

/// Which of a store's own files a path names.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreFile {
    /// The log itself.
    Log,
    /// The log's commit journal, `<log>.journal`.
    Journal,
    /// An archive a cut of the log wrote: a file of the name the cut record keeps.
    Archive {
        /// The position of the cut record that names it.
        cut: Position,
    },
    /// The log's key store, `<log>.keys`: its subjects' data keys.
    Keys,
    /// A file the store builds beside the log under a name of its own
    /// (`<log>.<purpose>.<pid>`: a creation, an import, a backup, a seed).
    Temporary {
        /// What the store builds it for (`creating`, `backing-up`…).
        purpose: String,
    },
}

impl std::fmt::Display for StoreFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreFile::Log => f.write_str("the log"),
            StoreFile::Journal => f.write_str("the commit journal of the log"),
            StoreFile::Keys => f.write_str("the key store of the log"),
            StoreFile::Archive { cut } => write!(
                f,
                "the archive of the cut recorded at position {cut} (it may be the only copy of \
                 the records cut) of the log"
            ),
            StoreFile::Temporary { purpose } => {
                write!(f, "a file the store builds ({purpose}) beside the log")
            }
        }
    }
}

/// What is at a path, when it is not what a writer wanted there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A regular file.
    File,
    /// A folder (directory).
    Folder,
    /// A named pipe.
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
    /// Anything else.
    Other,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::File => "a regular file",
            FileKind::Folder => "a folder",
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Other => "a special file",
        })
    }
}

/// A path refused as a place to write, before anything was opened or written there.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputPathError {
    /// The path names (through symbolic links, or as a hard link) one of a store's own files.
    #[error(
        "{}: is {file} {}; writing there would damage the store: give another path",
        path.display(),
        log.display()
    )]
    StoreFile {
        /// The path given.
        path: PathBuf,
        /// The log whose file it is.
        log: PathBuf,
        /// Which of its files.
        file: StoreFile,
    },
    /// Something other than a regular file is at a path where a file is to be written.
    #[error(
        "{}: is {found}, not a regular file: give another path for the file to write",
        path.display()
    )]
    NotAFile {
        /// The path given.
        path: PathBuf,
        /// What is there.
        found: FileKind,
    },
    /// Something other than a folder is at a path where a folder is to be written.
    #[error(
        "{}: is {found}, not a folder: give another path for the folder to write",
        path.display()
    )]
    NotAFolder {
        /// The path given.
        path: PathBuf,
        /// What is there.
        found: FileKind,
    },
    /// The folder the path is in does not exist (or is not a folder).
    #[error(
        "{}: no such folder as {}: create it first, or give another path",
        path.display(),
        folder.display()
    )]
    NoFolder {
        /// The path given.
        path: PathBuf,
        /// The folder that is missing.
        folder: PathBuf,
    },
    /// The path could not be looked at.
    #[error("{}: {error}", path.display())]
    Io {
        /// The path given.
        path: PathBuf,
        /// What the file system said.
        error: std::io::Error,
    },
}

impl OutputPathError {
    /// The path refused.
    pub fn path(&self) -> &std::path::Path {
        match self {
            OutputPathError::StoreFile { path, .. }
            | OutputPathError::NotAFile { path, .. }
            | OutputPathError::NotAFolder { path, .. }
            | OutputPathError::NoFolder { path, .. }
            | OutputPathError::Io { path, .. } => path,
        }
    }
}
