//! The one seam to redb's tables: typed table handles (get, range in both directions,
//! first/last, len, insert, remove) over a read or a write transaction.
//!
//! Every read and write of a table (the log's, the projections', the checkpoints') goes
//! through this module, and nothing outside it names redb's table types. It is where the
//! overlay of commits not yet drained into redb will live (`docs/design.md`, "Commits"): a
//! handle that answers from redb today answers from redb and a layer of pending changes then,
//! with no change to its callers.
//!
//! It owns how tables are opened, walked and changed; it never knows what a table means.

mod access;
mod database;
mod names;
mod overlay;
mod rows;
mod tables;

pub(crate) use access::{Commit, Reader, Writer};
pub(crate) use database::{Database, OverlayWrite, Shared, WriteTransaction};
pub(crate) use overlay::Generation;
pub(crate) use rows::{Guard, Row, Rows};
pub(crate) use tables::{Definition, ReadIn, ReadOnly, Readable, TableStats, Writable, WriteIn};

use redb::{ReadTransaction, TableHandle};

use crate::error::Result;

/// The names of the tables `txn` holds, in redb's order.
pub(crate) fn table_names(txn: &ReadTransaction) -> Result<Vec<String>> {
    Ok(txn
        .list_tables()?
        .map(|handle| handle.name().to_owned())
        .collect())
}

/// The names of the tables `reader` reads: redb's, and those the overlay created, in name
/// order.
pub(crate) fn table_names_read(reader: &Reader) -> Result<Vec<String>> {
    let mut names = table_names(reader.transaction())?;
    names.extend(reader.overlay().table_names().map(str::to_owned));
    names.sort();
    names.dedup();
    Ok(names)
}

/// The names of the tables `txn` holds, as of this point of the write.
pub(crate) fn table_names_in(txn: &redb::WriteTransaction) -> Result<Vec<String>> {
    Ok(txn
        .list_tables()?
        .map(|handle| handle.name().to_owned())
        .collect())
}

/// A table's rows and pages as of `txn`, whatever its types: for the footprint report.
pub(crate) fn table_stats(txn: &ReadTransaction, name: &str) -> Result<(u64, TableStats)> {
    let handle = txn
        .list_tables()?
        .find(|handle| handle.name() == name)
        .ok_or_else(|| redb::Error::TableDoesNotExist(name.to_owned()))?;
    let table = txn.open_untyped_table(handle)?;
    use redb::ReadableTableMetadata;
    Ok((table.len()?, TableStats::of(table.stats()?)))
}

#[cfg(test)]
mod tests;
