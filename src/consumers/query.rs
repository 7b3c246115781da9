//! Consumer reads from the projection tables, and the resume check against the log.

use serde::{Deserialize, Serialize};

pub use crate::error::ConsumerError;
use crate::error::Result;
use crate::hash::Digest;
use crate::log::read::{Direction, Snapshot};
use crate::projection::table::{Table, TableSource};
use crate::record::Position;

/// Where a consumer stopped.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConsumerCheckpoint {
    /// The consumer's name.
    pub consumer: String,
    /// The position of the last record it handled.
    pub position: Position,
    /// That record's hash, as the consumer saw it.
    pub hash: Digest,
    /// When the checkpoint was recorded (the command's `now_ms`).
    pub at_ms: u64,
}

impl ConsumerCheckpoint {
    /// The position to continue from: the one after the checkpoint's.
    pub fn resume_from(&self) -> Position {
        // A record at `u64::MAX` cannot exist: the head would need position 2^64.
        Position(self.position.0.saturating_add(1))
    }
}

/// A row of `consumers.positions`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredCheckpoint {
    pub(crate) position: u64,
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub(crate) hash: [u8; 32],
    pub(crate) at_ms: u64,
}

/// `consumers.positions`: consumer → its last checkpoint.
pub(crate) const POSITIONS: Table<String, StoredCheckpoint> = Table::new("consumers.positions");

fn typed(consumer: String, stored: StoredCheckpoint) -> ConsumerCheckpoint {
    ConsumerCheckpoint {
        consumer,
        position: Position(stored.position),
        hash: Digest(stored.hash),
        at_ms: stored.at_ms,
    }
}

/// The last checkpoint of `consumer`, `None` if it never recorded one.
pub fn checkpoint(state: &dyn TableSource, consumer: &str) -> Result<Option<ConsumerCheckpoint>> {
    let consumer = consumer.to_owned();
    let stored = POSITIONS.get(state, &consumer)?;
    Ok(stored.map(|stored| typed(consumer, stored)))
}

/// Up to `limit` checkpoints in consumer order.
pub fn checkpoints(state: &dyn TableSource, limit: usize) -> Result<Vec<ConsumerCheckpoint>> {
    let rows = POSITIONS.scan_prefix(state, &(), Direction::Forward, limit)?;
    Ok(rows
        .into_iter()
        .map(|(consumer, stored)| typed(consumer, stored))
        .collect())
}

/// Where `consumer` continues, checked against `log` (which must be as of the same commit as
/// `state`): position 0 without a checkpoint, the position after it when the record there
/// still has the checkpoint's hash, [`ConsumerError::Diverged`] otherwise.
pub(crate) fn resume(log: &Snapshot, state: &dyn TableSource, consumer: &str) -> Result<Position> {
    let Some(checkpoint) = checkpoint(state, consumer)? else {
        return Ok(Position(0));
    };
    let found = log.get(checkpoint.position)?.map(|record| record.hash);
    if found != Some(checkpoint.hash) {
        return Err(ConsumerError::Diverged {
            consumer: checkpoint.consumer,
            position: checkpoint.position,
            stored: checkpoint.hash,
            found,
        }
        .into());
    }
    Ok(checkpoint.resume_from())
}

/// Every row of the consumers projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('consumers')` gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ConsumerTables {
    /// Where each consumer stopped, by name.
    pub positions: Vec<ConsumerCheckpoint>,
}

/// Every row of the consumers projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<ConsumerTables> {
    Ok(ConsumerTables {
        positions: checkpoints(state, usize::MAX)?,
    })
}

/// Every row of the consumers projection as JSON, in key order: what `annals state` prints.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}
