//! How processes share one log file: the store's names for redb's concurrency modes, and what
//! an open that found the file held can tell about the process holding it.

use std::fmt;
use std::str::FromStr;

use redb::ConcurrencyMode;

/// How a store shares its file with other processes (redb's `ConcurrencyMode`).
///
/// ```
/// use annals::{Sharing, Store, StoreOptions};
/// let dir = tempfile::tempdir()?;
/// let options = StoreOptions { create: true, sharing: Sharing::MultiWriter, ..StoreOptions::default() };
/// let store = Store::open_with(dir.path().join("log.redb"), options)?;
/// assert_eq!(store.sharing(), Sharing::MultiWriter);
/// # Ok::<(), annals::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Sharing {
    /// This process alone: no other process may open the file, not even to read it. The
    /// fastest single commits, and the only mode with [`crate::Durability::Deferred`].
    Exclusive,
    /// One writer process and any number of reader processes beside it, which follow its
    /// commits (SQLite WAL's model). The default. Every commit is durable and two-phase.
    #[default]
    SingleWriter,
    /// Several writer processes (and readers): one write transaction at a time, each waiting
    /// for the others'; each re-reads the log's state when it begins.
    MultiWriter,
}

impl Sharing {
    /// redb's mode for this sharing.
    pub(crate) fn concurrency_mode(self) -> ConcurrencyMode {
        match self {
            Sharing::Exclusive => ConcurrencyMode::ExclusiveWriter,
            Sharing::SingleWriter => ConcurrencyMode::SingleWriter,
            Sharing::MultiWriter => ConcurrencyMode::MultiWriter,
        }
    }

    /// Whether other processes may have the file open beside this one.
    pub fn is_shared(self) -> bool {
        self != Sharing::Exclusive
    }

    /// The name the CLI takes and messages use.
    pub fn name(self) -> &'static str {
        match self {
            Sharing::Exclusive => "exclusive",
            Sharing::SingleWriter => "single-writer",
            Sharing::MultiWriter => "multi-writer",
        }
    }
}

impl fmt::Display for Sharing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A sharing mode's name that is none of `exclusive`, `single-writer`, `multi-writer`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a sharing mode: exclusive, single-writer or multi-writer")]
pub struct UnknownSharing(pub String);

impl FromStr for Sharing {
    type Err = UnknownSharing;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        [
            Sharing::Exclusive,
            Sharing::SingleWriter,
            Sharing::MultiWriter,
        ]
        .into_iter()
        .find(|sharing| sharing.name() == text)
        .ok_or_else(|| UnknownSharing(text.to_owned()))
    }
}

/// Who holds a file that an open found in use, as far as the open could tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Holder {
    /// A process with the file open in exclusive mode (a writer, or an exclusive reader).
    Exclusive,
    /// A writer process in single-writer mode: readers may join it, writers may not.
    SingleWriter,
    /// Writer processes in multi-writer mode: open with [`Sharing::MultiWriter`] to write
    /// beside them.
    MultiWriter,
    /// Processes in a shared mode (a writer with readers, several writers, or readers alone),
    /// which an exclusive open cannot join.
    Shared,
}

impl fmt::Display for Holder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Holder::Exclusive => {
                "another process holds it in exclusive mode; nothing can open it until that process closes it"
            }
            Holder::SingleWriter => {
                "a writer process holds it in single-writer mode; readers may open it beside that writer, another writer must wait until it closes"
            }
            Holder::MultiWriter => {
                "writer processes hold it in multi-writer mode; open it in multi-writer mode to write beside them"
            }
            Holder::Shared => {
                "other processes have it open in a shared mode; open it in single-writer or multi-writer mode, or read it read-only"
            }
        })
    }
}

/// How another process holds a log, in the words of a compaction's refusal.
pub(crate) fn held_as(holder: &Holder) -> &'static str {
    match holder {
        Holder::Exclusive => "in exclusive mode",
        Holder::SingleWriter => "as its single writer",
        Holder::MultiWriter => "as one of several writers",
        Holder::Shared => "in a shared mode (a writer, or readers)",
    }
}
