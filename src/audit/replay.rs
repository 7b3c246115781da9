//! Replay into memory: a fresh in-memory redb that holds only projection tables, filled by
//! applying the log's records from position 0. `verify` compares it with the live tables;
//! `state --at N` reads it as of the first N records.

use redb::backends::InMemoryBackend;
use redb::{Database, Durability};

use crate::error::Result;
use crate::log::read::{Direction, Snapshot};
use crate::projection::Projections;
use crate::projection::table::{ReadTables, TransactionTables};
use crate::record::Position;

/// Records applied per in-memory transaction, so no transaction grows with the log.
const REPLAY_BATCH_RECORDS: usize = 8192;

/// Projection tables rebuilt from a log, in memory.
pub struct Replay {
    db: Database,
}

impl Replay {
    /// The replayed tables, for queries and digests.
    pub fn state(&self) -> Result<ReadTables> {
        let txn = redb::ReadableDatabase::begin_read(&self.db)?;
        Ok(ReadTables::new(std::sync::Arc::new(txn)))
    }
}

/// Applies the records of `snapshot` before `until` (all of them when `None`) to every
/// projection, starting from empty tables, calling `progress` with the number of records
/// applied after each batch.
pub fn replay_with(
    snapshot: &Snapshot,
    projections: &Projections,
    until: Option<Position>,
    progress: &mut dyn FnMut(u64),
) -> Result<Replay> {
    let db = redb::Builder::new().create_with_backend(InMemoryBackend::new())?;
    let end = match until {
        Some(until) => until.min(snapshot.head()?.next),
        None => snapshot.head()?.next,
    };
    let mut records = snapshot.records(Position(0), Direction::Forward)?;
    let mut applied = 0u64;
    while applied < end.0 {
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::None)
            .map_err(|error| crate::error::Error::Storage(error.into()))?;
        {
            let tables = TransactionTables::new(&txn);
            let batch = (end.0 - applied).min(REPLAY_BATCH_RECORDS as u64);
            for _ in 0..batch {
                // The iterator ends at the head or with an error; ending short would loop.
                let Some(record) = records.next() else {
                    return Err(crate::log::read::missing(Position(applied)));
                };
                projections.apply(&tables, &record?)?;
                applied += 1;
            }
        }
        txn.commit()?;
        progress(applied);
    }
    Ok(Replay { db })
}
