//! Where a log's bytes go: each redb table's pages and what fills them, beside the file's size.
//!
//! A log's size is the sum of its tables' pages, redb's own trees (the table of tables and the
//! free-page tree), and pages the file holds but no tree uses: freed pages not yet reused, and
//! the room redb allocated ahead of use. [`Footprint`] separates them, so that a lever on the
//! storage layout is weighed by measurement (issue 14) rather than by estimate.

use std::fs::Metadata;

use redb::ReadTransaction;

use crate::error::Result;

/// One table's share of the file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TableFootprint {
    /// The table's name (`annals.segments`, `runs.events`, …).
    pub name: String,
    /// Rows in the table.
    pub rows: u64,
    /// Bytes of keys and values the table stores.
    pub stored_bytes: u64,
    /// Bytes of redb's own bookkeeping in the table's pages (offsets, branch keys, checksums).
    pub metadata_bytes: u64,
    /// Bytes of the table's pages that hold nothing: part-filled leaves and the tail of a
    /// large value's power-of-two run of pages.
    pub fragmented_bytes: u64,
    /// Leaf pages.
    pub leaf_pages: u64,
    /// Branch pages.
    pub branch_pages: u64,
}

impl TableFootprint {
    /// Every byte of the table's pages: stored, bookkeeping and unused.
    pub fn page_bytes(&self) -> u64 {
        self.stored_bytes + self.metadata_bytes + self.fragmented_bytes
    }
}

/// Where a log's bytes go.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Footprint {
    /// The file's size in bytes (0 for a store over a storage backend).
    pub file_bytes: u64,
    /// The bytes the file takes on disk (see [`crate::maintenance::Stats::disk_bytes`]).
    pub disk_bytes: u64,
    /// Records in the log.
    pub records: u64,
    /// Every table, the log's and the projections', in name order.
    pub tables: Vec<TableFootprint>,
}

impl Footprint {
    /// Bytes of the file that no table's pages hold: redb's own trees, freed pages not yet
    /// reused, and room allocated ahead of use (on disk or not).
    pub fn outside_tables(&self) -> u64 {
        let in_tables: u64 = self.tables.iter().map(TableFootprint::page_bytes).sum();
        self.file_bytes.saturating_sub(in_tables)
    }
}

/// Each table's footprint as of `txn`.
pub(crate) fn tables(txn: &ReadTransaction) -> Result<Vec<TableFootprint>> {
    let mut tables = Vec::new();
    for name in crate::storage::table_names(txn)? {
        let (rows, stats) = crate::storage::table_stats(txn, &name)?;
        tables.push(TableFootprint {
            name,
            rows,
            stored_bytes: stats.stored_bytes,
            metadata_bytes: stats.metadata_bytes,
            fragmented_bytes: stats.fragmented_bytes,
            leaf_pages: stats.leaf_pages,
            branch_pages: stats.branch_pages,
        });
    }
    tables.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(tables)
}

/// The bytes a file with `metadata` takes on disk: its allocated blocks, which a file grown
/// ahead of use (redb doubles its file) has only where it was written.
#[cfg(unix)]
pub(crate) fn disk_bytes(metadata: &Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    // `blocks` counts 512-byte units whatever the file system's block size.
    metadata.blocks() * 512
}

/// The file's size, where no allocated-block count is at hand.
#[cfg(not(unix))]
pub(crate) fn disk_bytes(metadata: &Metadata) -> u64 {
    metadata.len()
}
