//! Consumer apply: each event to table writes. Reads only the record and the consumers table.
//!
//! Before it writes, apply checks the event against the rule `decide` keeps (see
//! `schema/EVENTS.md`): a record that breaks it was written around `decide` and is refused
//! with [`crate::error::ProjectionError::Invariant`] at its position.

use super::events::ConsumerEvent;
use super::query::{POSITIONS, StoredCheckpoint};
use crate::error::Result;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// A consumer's checkpoint only moves forward: each names a later position than the last.
pub(crate) const CHECKPOINT_ADVANCES: &str = "checkpoint_advances";

/// Applies one consumer event recorded in `record`, refusing a checkpoint that does not
/// move forward.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: ConsumerEvent) -> Result<()> {
    match event {
        ConsumerEvent::Checkpointed(e) => {
            if let Some(stored) = POSITIONS.get(tables, &e.consumer)?
                && stored.position >= e.position
            {
                let detail = format!(
                    "consumer {:?} checkpointed at position {} after position {}",
                    e.consumer, e.position, stored.position
                );
                return Err(crate::projection::invariant(
                    "consumers",
                    record,
                    CHECKPOINT_ADVANCES,
                    detail,
                ));
            }
            let stored = StoredCheckpoint {
                position: e.position,
                hash: e.hash,
                at_ms: record.at_ms,
            };
            POSITIONS.insert(tables, &e.consumer, &stored)
        }
    }
}
