//! Replay: a fresh redb that holds only projection tables, filled by applying the log's
//! records from position 0. `verify` compares it with the live tables; `state --at N` reads it
//! as of the first N records.
//!
//! The replayed tables are as large as the live ones, so they go to a temporary file (in
//! [`std::env::temp_dir`], removed as soon as it is open where the system allows, else when
//! the replay is dropped) read through a page cache of [`REPLAY_CACHE_BYTES`]: held in memory,
//! a replay of a million demo records grew the process by the size of its tables.

use std::fs::{File, OpenOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use redb::backends::FileBackend;
use redb::{Database, Durability};

use crate::error::Result;
use crate::log::read::{Direction, Snapshot};
use crate::projection::Projections;
use crate::projection::table::{ReadTables, TransactionTables, copy_rows, snapshot_table};
use crate::record::Position;
use crate::storage::{Reader, Writer};

/// Records applied per transaction, so no transaction grows with the log.
const REPLAY_BATCH_RECORDS: usize = 8192;

/// Every this many batches a commit is durable: redb reuses the pages that non-durable
/// commits free only after a durable one, and without it the file grows with every batch.
const REPLAY_DURABLE_EVERY_BATCHES: u64 = 16;

/// The most memory the replay's page cache takes: half the store's own. `verify` holds the
/// log's cache and this one at once, both full on a large log; the replay writes each batch
/// once and reads it back once, in key order, for the comparison, so a larger cache buys it
/// little (verify at 1,000,000 demo records peaked over 100 MB with both at 32 MiB).
const REPLAY_CACHE_BYTES: usize = crate::log::tables::REDB_CACHE_BYTES / 2;

/// Projection tables rebuilt from a log, in a temporary file.
pub struct Replay {
    db: Database,
    /// The read of the log that was replayed: the records the replayed rows point at.
    log: Reader,
    /// Dropped after `db`, so the file is closed before it is removed.
    _file: ReplayFile,
}

/// The replay's temporary file, removed when dropped (if not already).
struct ReplayFile {
    path: PathBuf,
}

impl Drop for ReplayFile {
    fn drop(&mut self) {
        // Already gone where an open file can be removed; a failure leaves a stray temporary
        // file, which the system's temporary folder is for.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates a new, empty temporary file for a replay.
fn replay_file() -> Result<(File, ReplayFile)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let path = std::env::temp_dir().join(format!(
            "annals-replay-{}-{}.redb",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                if cfg!(unix) {
                    // The open file lives on without its name, and no crash leaves it behind.
                    let _ = std::fs::remove_file(&path);
                }
                return Ok((file, ReplayFile { path }));
            }
            // Left by an earlier process with the same id: take the next name.
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error.into()),
        }
    }
}

impl Replay {
    /// The replayed tables, for queries and digests; rows that point into the log read the
    /// records of the snapshot replayed.
    pub fn state(&self) -> Result<ReadTables> {
        let txn = redb::ReadableDatabase::begin_read(&self.db)?;
        Ok(
            ReadTables::new(Reader::new(crate::storage::Commit::shared(txn)))
                .reading_log(self.log.clone()),
        )
    }
}

/// Applies the records of `snapshot` before `until` (all of them when `None`) to every
/// projection, starting from empty tables, or for a cut log from the snapshot of the tables
/// the last cut kept, calling `progress` with the number of records applied after each batch.
/// A replay that would end before a cut log's start is [`crate::error::ArchiveError::Archived`]; one
/// of a projection the cut took no snapshot of (or of another version) is
/// [`crate::error::ArchiveError::NotInCut`].
pub(crate) fn replay_with(
    snapshot: &Snapshot,
    projections: &Projections,
    until: Option<Position>,
    progress: &mut dyn FnMut(u64),
) -> Result<Replay> {
    let end = match until {
        Some(until) => until.min(snapshot.head()?.next),
        None => snapshot.head()?.next,
    };
    let start = snapshot.start();
    if end < start {
        snapshot.refuse_archived(end)?;
    }
    let mut replay = Replay::empty(&snapshot.reader)?;
    if let Some(cut) = snapshot.cut() {
        check_in_cut(cut, projections)?;
        let txn = replay.db.begin_write()?;
        for projection in projections.iter() {
            for table in projection.tables() {
                copy_rows(&snapshot.reader, &snapshot_table(table), &txn, table)?;
            }
        }
        txn.commit()?;
    }
    let records = snapshot.records(start, Direction::Forward)?;
    replay.apply(projections, records, start, end, &mut |applied| {
        progress(applied - start.0)
    })?;
    Ok(replay)
}

/// Refuses a replay from `cut`'s snapshot of a projection it has no snapshot of at this
/// projection's version.
pub(crate) fn check_in_cut(cut: &crate::log::cut::Cut, projections: &Projections) -> Result<()> {
    for projection in projections.iter() {
        cut.require_snapshot(projection.name(), projection.version())?;
    }
    Ok(())
}

impl Replay {
    /// Empty projection tables in a new temporary file; rows that point into the log read
    /// `log`.
    pub(crate) fn empty(log: &Reader) -> Result<Replay> {
        let (file, guard) = replay_file()?;
        let db = redb::Builder::new()
            .set_cache_size(REPLAY_CACHE_BYTES)
            .create_with_backend(FileBackend::new(file)?)?;
        Ok(Replay {
            db,
            log: log.clone(),
            _file: guard,
        })
    }

    /// Applies `records`, which must start at `from`, up to `end`, in batches of
    /// [`REPLAY_BATCH_RECORDS`], calling `progress` with the position reached after each.
    pub(crate) fn apply(
        &mut self,
        projections: &Projections,
        mut records: impl Iterator<Item = Result<crate::Record>>,
        from: Position,
        end: Position,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let mut applied = from.0;
        let mut batches = 0u64;
        while applied < end.0 {
            let mut txn = self.db.begin_write()?;
            batches += 1;
            let durability = if batches.is_multiple_of(REPLAY_DURABLE_EVERY_BATCHES) {
                Durability::Immediate
            } else {
                Durability::None
            };
            txn.set_durability(durability)
                .map_err(|error| crate::error::Error::from(redb::Error::from(error)))?;
            {
                let writer = Writer::redb(&txn);
                let tables = TransactionTables::new(&writer);
                let batch = (end.0 - applied).min(REPLAY_BATCH_RECORDS as u64);
                for _ in 0..batch {
                    // The iterator ends at the head or with an error; ending short would loop.
                    let Some(record) = records.next() else {
                        return Err(crate::log::read::missing(Position(applied)));
                    };
                    let record = record?;
                    // Each record once, in order: a replay is the log's fold, gapless.
                    assert_eq!(
                        record.position.0, applied,
                        "a replay applies the log in order"
                    );
                    projections.apply(&tables, &record)?;
                    applied += 1;
                }
            }
            txn.commit()?;
            progress(applied);
        }
        Ok(())
    }

    /// Copies the tables of every projection in `projections` into `txn` under the names
    /// `rename` gives: how a cut keeps its snapshot.
    pub(crate) fn copy_into(
        &self,
        projections: &Projections,
        txn: &Writer<'_>,
        rename: impl Fn(&str) -> String,
    ) -> Result<()> {
        let read = crate::storage::Commit::shared(redb::ReadableDatabase::begin_read(&self.db)?);
        for projection in projections.iter() {
            for table in projection.tables() {
                copy_rows(&read, table, txn, &rename(table))?;
            }
        }
        Ok(())
    }
}
