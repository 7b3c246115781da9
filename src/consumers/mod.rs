//! The consumers projection: durable checkpoints of named consumers of the log, so that a
//! consumer (a subscriber that forwards records somewhere, say) resumes after a restart where
//! it stopped.
//!
//! A checkpoint is a position together with the hash of the record there, recorded as a
//! `consumer.checkpointed` event on the stream `consumer/<name>` like every other change.
//! Resuming checks the hash against the log: if the record at that position is no longer the
//! one the consumer handled (a log replaced or rewritten beneath it), [`resume`] refuses with
//! [`ConsumerError::Diverged`] rather than skip or repeat records silently.
//!
//! Everything is decided against the command's `now_ms`; nothing here reads a clock, and
//! nothing here reads records other than the one a resume checks.

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::log::read::Snapshot;
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::{Position, Record};

pub use decide::{ConsumerCommand, ConsumerOutcome, ConsumerRefusal, consumer_stream};
pub use events::ConsumerEvent;
pub use query::*;
pub use query::{ConsumerCheckpoint, ConsumerError};

/// The consumers projection.
pub struct Consumers;

impl Projection for Consumers {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![ShownTable::new(
            &query::POSITIONS,
            &["consumer"],
            "checkpoint",
        )]
    }

    fn name(&self) -> &'static str {
        "consumers"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        &["consumers.positions"]
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("consumer.")
    }

    fn catalogue(&self) -> &'static [EventKind] {
        ConsumerEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[EntityKind {
            kind: "consumer",
            shape: "consumer:<name>",
            streams: |parts| vec![decide::consumer_stream(parts[0])],
        }]
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        ConsumerEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match ConsumerEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}

/// Where `consumer` continues in the log `snapshot` reads: position 0 if it never
/// checkpointed, the position after its checkpoint if the record there still has the
/// checkpointed hash, and [`ConsumerError::Diverged`] otherwise. The log and the checkpoint
/// are read as of the snapshot's one commit.
pub fn resume(snapshot: &Snapshot, consumer: &str) -> Result<Position> {
    query::resume(snapshot, &snapshot.state(), consumer)
}
