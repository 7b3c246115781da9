//! Backups: every table of the log as of one commit, copied into a new file while writers go
//! on (a cut log's kept state with it: its anchor, archived hashes, tree, stream and
//! idempotency indexes, projections and snapshot), so that the copy opens as the same log at
//! that commit's head. A replica starts from one ([`crate::replication`]'s seed).
//!
//! The copy is built under a name of this process's own, committed durably, compacted and
//! closed, then published at the target, which is never replaced: a kill at any moment leaves no file there
//! or a whole log.

use std::fs;
use std::path::{Path, PathBuf};

use redb::{Key, Value, WriteTransaction};

use super::Store;
use super::open::{create_temporary, guarded, publish, sweep_stale};
use crate::error::{Result, StoreError};
use crate::log::Head;
use crate::log::checkpoints::CHECKPOINTS;
use crate::log::cut::{ARCHIVED, CUTS, KEPT};
use crate::log::read::Snapshot;
use crate::log::tables::{IDEMPOTENCY, MERKLE, META, SEGMENTS, STREAM_RUNS};
use crate::output_path::{Output, private_name};
use crate::projection::table::definition;
use crate::record::Position;
use crate::storage::{Definition, Readable, Reader};

/// What [`crate::maintenance::Backup::write`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[must_use]
pub struct Backup {
    /// The file written.
    pub path: PathBuf,
    /// The head of the log as the copy holds it: the commit it was taken at.
    pub head: Head,
    /// The first position the copy holds a record of: 0, or the log's last cut.
    pub start: Position,
    /// The tables copied.
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub tables: usize,
    /// The file's length, in bytes.
    pub bytes: u64,
}

impl Store {
    /// The work of [`Backup::write`].
    pub(crate) fn backup(&self, to: impl AsRef<Path>) -> Result<Backup> {
        let to = to.as_ref();
        crate::output_path::check(to, Output::File, self.files()?.as_ref())?;
        self.backup_unchecked(to)
    }

    /// [`crate::maintenance::Backup::write`] to `to` without the check of what `to` is: for a copy the store
    /// makes of itself under a name of its own (a seed's).
    pub(crate) fn backup_unchecked(&self, to: &Path) -> Result<Backup> {
        if fs::symlink_metadata(to).is_ok() {
            return Err(StoreError::BackupTargetExists {
                path: to.to_path_buf(),
            }
            .into());
        }
        sweep_stale(to);
        let temporary = private_name(to, "backing-up");
        let like = self.on_disk.then_some(self.path.as_path());
        let built = guarded(|| {
            // The head and start are read in the read the tables are copied from, so that
            // they are the copy's: redb's commit and what the overlay holds over it (this
            // store's commits not yet drained, or a journaling writer's synced frames).
            let from = Snapshot::over(self.begin_read()?)?;
            let (head, start) = (from.head()?, from.start());
            let mut db = create_temporary(&temporary, like)?;
            let txn = db.begin_write()?;
            let tables = copy_tables(&from.reader, &txn)?;
            txn.commit()?;
            // One large transaction leaves the file grown by redb's doubling steps; a copy
            // that travels (a seed) gives them back first.
            let _moved = db.compact().map_err(redb::Error::from)?;
            drop(db);
            Ok((head, start, tables))
        });
        let (head, start, tables) = match built {
            Ok(built) => built,
            Err(error) => {
                // Best effort: the error that matters is the copy's.
                let _ = fs::remove_file(&temporary);
                return Err(error);
            }
        };
        if let Err(error) = publish(&temporary, to) {
            let _ = fs::remove_file(&temporary);
            if error.kind() == std::io::ErrorKind::AlreadyExists {
                return Err(StoreError::BackupTargetExists {
                    path: to.to_path_buf(),
                }
                .into());
            }
            return Err(error.into());
        }
        Ok(Backup {
            path: to.to_path_buf(),
            head,
            start,
            tables,
            bytes: fs::metadata(to)?.len(),
        })
    }
}

/// Copies every table of `from` into `to`, each under its own name and types: the log's own
/// tables by their definitions, every other table (a projection's, the snapshot's) as the
/// raw bytes a projection table holds. Returns how many tables it copied.
fn copy_tables(from: &Reader, to: &WriteTransaction) -> Result<usize> {
    let mut copied = 0;
    for name in crate::storage::table_names_read(from)? {
        let name = name.as_str();
        if name == META.name() {
            copy(from, to, META)?;
        } else if name == SEGMENTS.name() {
            copy(from, to, SEGMENTS)?;
        } else if name == STREAM_RUNS.name() {
            copy(from, to, STREAM_RUNS)?;
        } else if name == IDEMPOTENCY.name() {
            copy(from, to, IDEMPOTENCY)?;
        } else if name == MERKLE.name() {
            copy(from, to, MERKLE)?;
        } else if name == CHECKPOINTS.name() {
            copy(from, to, CHECKPOINTS)?;
        } else if name == CUTS.name() {
            copy(from, to, CUTS)?;
        } else if name == ARCHIVED.name() {
            copy(from, to, ARCHIVED)?;
        } else if name == KEPT.name() {
            copy(from, to, KEPT)?;
        } else {
            copy(from, to, definition(name))?;
        }
        copied += 1;
    }
    Ok(copied)
}

/// Copies the rows of `table` from `from` into `to`, as stored (values keep their checksums,
/// which cover the table's name, the same on both sides).
fn copy<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    from: &Reader,
    to: &WriteTransaction,
    table: Definition<'_, K, V>,
) -> Result<()> {
    let source = table.read(from)?;
    let mut target = table.write(to)?;
    for entry in source.iter()? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
    }
    Ok(())
}

impl Backup {
    /// Copies the log as of its latest commit into a new file at `to`, table by table (every
    /// record the log holds, its indexes, tree, checkpoints and projections, and for a cut log
    /// what the cut kept), while writers go on: the copy opens as this log at the returned
    /// head. `to` must not exist ([`StoreError::BackupTargetExists`]) nor be one of the
    /// store's own files, in a missing folder ([`crate::error::OutputPathError`]); it is published
    /// only once the copy is whole and durable, with no more permissions than the log's.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// let backup = annals::maintenance::Backup::write(&store, dir.path().join("copy.redb"))?;
    /// let copy = annals::Store::open_read_only(&backup.path)?;
    /// assert_eq!(copy.snapshot()?.head()?, backup.head);
    /// # Ok::<(), annals::Error>(())
    /// ```
    pub fn write(store: &Store, to: impl AsRef<Path>) -> Result<Backup> {
        store.backup(to)
    }
}
