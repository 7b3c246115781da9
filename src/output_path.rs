//! The one rule for every path the crate (and the command line, through [`check`]) writes a
//! file or a folder at when a caller named it: an export, an archive, a backup, a tiles
//! folder and its files, a key file. A path is refused ([`OutputPathError`]) when it resolves
//! (through symbolic links, or as a hard link: the same device and inode) to one of a store's
//! own files ([`StoreFile`]: the log, its journal, its archives, the files it builds beside
//! it), when something other than what is to be written is there (a FIFO, a device, a
//! folder), or when its folder is missing.
//!
//! It also owns how such files are opened: a new file is created with `O_EXCL` and
//! `O_NOFOLLOW` (never through a link, never over a file that appeared meanwhile) and with no
//! more permissions than the log's own, and a file read back is opened with `O_NONBLOCK` and
//! its type checked on the open descriptor.
//!
//! What this module must never do: open a path for writing before looking at what is there,
//! follow a symbolic link when it creates a file, or block on a FIFO.

use std::ffi::OsStr;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub use crate::error::{FileKind, OutputPathError, StoreFile};
use crate::journal::journal_path;
use crate::record::Position;

/// The purposes of the files a store builds beside a log under a name of its own
/// ([`private_name`]): a creation, an import, a backup, a seed published
/// (`replication::publish_seed`), one fetched (`fetch_seed`) and a key store rewritten.
pub(crate) const TEMPORARY_PURPOSES: [&str; 6] = [
    "creating",
    "importing",
    "backing-up",
    "seed",
    "seeding",
    "keying",
];

/// The first bytes of every redb file: what tells a log (and so its journal's name) apart.
pub(crate) const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// How many symbolic links [`check`] follows before it calls a path a loop (Linux's own
/// bound).
const LINKS_MAX: usize = 40;

/// The files of one store that no output may be written over: its log (and so its journal
/// and the files it builds beside it) and the archives its cuts wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreFiles {
    log: PathBuf,
    archives: Vec<(Position, String)>,
}

impl StoreFiles {
    /// The files of the store whose log is at `log`, as far as the path tells: the log, its
    /// journal and its temporary files. A store that is open knows its archives too.
    pub fn of_log(log: impl Into<PathBuf>) -> StoreFiles {
        StoreFiles {
            log: log.into(),
            archives: Vec::new(),
        }
    }

    /// These files and the archives of the cuts recorded at the given positions, by the
    /// names the cut records keep.
    pub(crate) fn with_archives(mut self, archives: Vec<(Position, String)>) -> StoreFiles {
        self.archives = archives;
        self
    }

    /// The log's path.
    pub fn log(&self) -> &Path {
        &self.log
    }
}

/// What a path is to be written as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A file: a new one, or one that replaces a regular file there.
    File,
    /// A folder that files are written into: a new one, or one that is there.
    Folder,
}

/// Refuses `path` as a place to write `output` (see the module docs): one of `store`'s files
/// (or the journal of any log beside it), anything there other than `output` wants, or a
/// missing folder. Nothing is opened: only metadata is read, so a FIFO cannot block it.
pub fn check(
    path: &Path,
    output: Output,
    store: Option<&StoreFiles>,
) -> Result<(), OutputPathError> {
    let resolved = resolve(path)?;
    if let Some((log, file)) = store_file(&resolved, store) {
        return Err(OutputPathError::StoreFile {
            path: path.to_path_buf(),
            log,
            file,
        });
    }
    let Some(found) = &resolved.found else {
        return Ok(());
    };
    let kind = kind_of(found);
    match (output, kind) {
        (Output::File, FileKind::File) | (Output::Folder, FileKind::Folder) => Ok(()),
        (Output::File, found) => Err(OutputPathError::NotAFile {
            path: path.to_path_buf(),
            found,
        }),
        (Output::Folder, found) => Err(OutputPathError::NotAFolder {
            path: path.to_path_buf(),
            found,
        }),
    }
}

/// A path followed through its symbolic links: the canonical name of what it ends at, and
/// that file's own metadata when there is one.
struct Resolved {
    name: PathBuf,
    found: Option<Metadata>,
}

/// Follows `path` through its symbolic links (a dangling one too: writing through it would
/// create its target) to a name in a folder that exists.
fn resolve(path: &Path) -> Result<Resolved, OutputPathError> {
    let io = |error| OutputPathError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut current = path.to_path_buf();
    for _ in 0..LINKS_MAX {
        let folder = existing_folder(path, &current)?;
        let name = match current.file_name() {
            Some(name) => folder.join(name),
            // `/`, or a path ending in `..`: the folder itself.
            None => folder,
        };
        match fs::symlink_metadata(&name) {
            Ok(found) if found.file_type().is_symlink() => {
                let target = fs::read_link(&name).map_err(io)?;
                current = name.parent().unwrap_or(Path::new("/")).join(target);
            }
            Ok(found) => {
                return Ok(Resolved {
                    name,
                    found: Some(found),
                });
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                return Ok(Resolved { name, found: None });
            }
            Err(error) => return Err(io(error)),
        }
    }
    Err(io(io::Error::from_raw_os_error(libc::ELOOP)))
}

/// The canonical path of the folder `current` is in (of `current` itself when it has no
/// file name), refused as [`OutputPathError::NoFolder`] for `path` when there is none.
fn existing_folder(path: &Path, current: &Path) -> Result<PathBuf, OutputPathError> {
    let folder = match current.file_name() {
        Some(_) => folder_of(current),
        None => current,
    };
    let missing = || OutputPathError::NoFolder {
        path: path.to_path_buf(),
        folder: folder.to_path_buf(),
    };
    match fs::canonicalize(folder) {
        Ok(canonical) if canonical.is_dir() => Ok(canonical),
        Ok(_) => Err(missing()),
        Err(error)
            if matches!(
                error.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Err(missing())
        }
        Err(error) => Err(OutputPathError::Io {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Which file of `store` (or the journal of which log beside it) `resolved` is, with that
/// log's path.
fn store_file(resolved: &Resolved, store: Option<&StoreFiles>) -> Option<(PathBuf, StoreFile)> {
    if let Some(log) = sibling_journal(&resolved.name) {
        return Some((log, StoreFile::Journal));
    }
    let store = store?;
    let log = fs::canonicalize(&store.log).unwrap_or_else(|_| store.log.clone());
    let journal = journal_path(&log);
    let keys = keys_path(&log);
    let named = |file| Some((store.log.clone(), file));
    if let Some(found) = &resolved.found {
        let files = [
            (StoreFile::Log, &log),
            (StoreFile::Journal, &journal),
            (StoreFile::Keys, &keys),
        ];
        for (file, path) in files {
            if fs::metadata(path).is_ok_and(|at| same_file(&at, found)) {
                return named(file);
            }
        }
    }
    if resolved.name == log {
        return named(StoreFile::Log);
    }
    if resolved.name == journal {
        return named(StoreFile::Journal);
    }
    if resolved.name == keys {
        return named(StoreFile::Keys);
    }
    let name = resolved.name.file_name()?;
    if resolved.name.parent() == log.parent()
        && let Some((purpose, _)) = temporary_of(name, log.file_name()?)
    {
        return named(StoreFile::Temporary {
            purpose: purpose.to_owned(),
        });
    }
    // An archive is found by the name its cut keeps, wherever it was written: replacing a
    // file of that name could lose the only copy of the records cut. A new file cannot.
    if resolved.found.is_some()
        && let Some((cut, _)) = store
            .archives
            .iter()
            .find(|(_, archive)| OsStr::new(archive) == name)
    {
        return named(StoreFile::Archive { cut: *cut });
    }
    None
}

/// Whether `path` is a log: a regular file (through its links) that begins with redb's
/// magic bytes. It is opened without blocking and its type checked on the descriptor, so a
/// FIFO cannot block it.
/// For a command that replaces a file it was given no log for (`keygen --force`): replacing
/// a log with something else loses it.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let log = dir.path().join("log.redb");
/// annals::Store::open(&log)?;
/// assert!(annals::output_path::is_log_file(&log));
/// assert!(!annals::output_path::is_log_file(&dir.path().join("nothing")));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn is_log_file(path: &Path) -> bool {
    let mut magic = [0u8; REDB_MAGIC.len()];
    open_regular(path).is_ok_and(|mut file| {
        io::Read::read_exact(&mut file, &mut magic).is_ok() && magic == REDB_MAGIC
    })
}

/// The log whose journal `name` would be: `<log>.journal` beside a redb file `<log>`. Any
/// store's journal, not only the one a command was given.
fn sibling_journal(name: &Path) -> Option<PathBuf> {
    let log = name.to_str()?.strip_suffix(".journal")?;
    let log = PathBuf::from(log);
    is_log_file(&log).then_some(log)
}

/// The key store of the log at `log`: `<log>.keys` (`schema/FORMAT.md` 3.16).
pub(crate) fn keys_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".keys");
    PathBuf::from(name)
}

/// Whether two files' metadata are of one file: the same device and inode.
fn same_file(a: &Metadata, b: &Metadata) -> bool {
    a.dev() == b.dev() && a.ino() == b.ino()
}

/// What `metadata` describes.
pub(crate) fn kind_of(metadata: &Metadata) -> FileKind {
    let kind = metadata.file_type();
    if kind.is_file() {
        FileKind::File
    } else if kind.is_dir() {
        FileKind::Folder
    } else if kind.is_fifo() {
        FileKind::Fifo
    } else if kind.is_char_device() {
        FileKind::CharDevice
    } else if kind.is_block_device() {
        FileKind::BlockDevice
    } else if kind.is_socket() {
        FileKind::Socket
    } else {
        FileKind::Other
    }
}

/// The folder `path` is in (`.` for a bare file name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// `<path>.<purpose>.<pid>`: a name beside `path` that no other process builds a file under.
pub(crate) fn private_name(path: &Path, purpose: &str) -> PathBuf {
    debug_assert!(TEMPORARY_PURPOSES.contains(&purpose));
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{purpose}.{}", std::process::id()));
    PathBuf::from(name)
}

/// The purpose and process id of `file`'s name when it is a [`private_name`] of the log
/// named `log`.
pub(crate) fn temporary_of<'a>(file: &'a OsStr, log: &OsStr) -> Option<(&'a str, u32)> {
    let rest = file
        .to_str()?
        .strip_prefix(log.to_str()?)?
        .strip_prefix('.')?;
    let (purpose, pid) = rest.split_once('.')?;
    let purpose = TEMPORARY_PURPOSES.iter().find(|known| **known == purpose)?;
    Some((&rest[..purpose.len()], pid.parse().ok()?))
}

/// Creates a new file at `path` to write, never through a symbolic link (`O_NOFOLLOW`) nor
/// over a file that is there (`O_EXCL`), with no more permissions than the file at `like`
/// (the log it is made from) has, or than a new file has by default without one.
pub(crate) fn create_new(path: &Path, like: Option<&Path>) -> io::Result<File> {
    let mode = match like {
        Some(like) => fs::metadata(like)?.mode() & 0o666,
        None => 0o666,
    };
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Opens the file at `path` to read, refusing anything but a regular file on the descriptor
/// opened (`O_NONBLOCK`: a FIFO there would otherwise block the open until a writer came).
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let found = kind_of(&file.metadata()?);
    if found != FileKind::File {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("is {found}, not a regular file"),
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests;
