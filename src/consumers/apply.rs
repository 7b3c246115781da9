//! Consumer apply: each event to table writes. Reads only the record and the consumers table.

use super::events::ConsumerEvent;
use super::query::{POSITIONS, StoredCheckpoint};
use crate::error::Result;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Applies one consumer event recorded in `record`.
pub fn apply(tables: &WriteTables<'_>, record: &Record, event: ConsumerEvent) -> Result<()> {
    match event {
        ConsumerEvent::Checkpointed(e) => {
            let stored = StoredCheckpoint {
                position: e.position,
                hash: e.hash,
                at_ms: record.at_ms,
            };
            POSITIONS.insert(tables, &e.consumer, &stored)
        }
    }
}
