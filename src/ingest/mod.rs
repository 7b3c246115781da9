//! The ingest projection: a hub's exactly-once ingest of the events its runtimes push, keyed
//! by (project, run, sequence), with a sync cursor per run and a listing per hub project.
//!
//! An accepted event is recorded as an `ingest.accepted` event on the stream
//! `ingest/<project>/<run>` like every other change; a duplicate and a conflict append
//! nothing.
//!
//! # Rules, from the reference
//!
//! The reference is the hub store's sync ingest (`store.ts`: `ingestSyncEvent`,
//! `listSyncEvents`, `syncCursor`).
//! - An event is held at most once under (project, run, sequence).
//! - An event whose key is already held is a `duplicate` (nothing written) when the held
//!   event has the same content hash and the same hub project; otherwise it is a conflict,
//!   `sequence_reused`, which reports the held content hash. The receipt time, the home
//!   runtime and the event type are left out of that check: a retry received later, or
//!   relayed by another runtime, is still a duplicate.
//! - Otherwise, a project whose events are held by another hub project is a conflict,
//!   `project_mismatch`; then a run that already lives on another runtime is a conflict,
//!   `home_runtime_mismatch`. Both are checked in that order, after the key.
//! - Otherwise the event is accepted, with its receipt time.
//! - Conflicts write nothing; they are outcomes, not errors.
//! - [`hub_project_events`] lists the events one hub project holds, by run then sequence,
//!   in byte order of the run (SQLite's ordering of the reference's text column).
//! - [`cursor`] is a run's sync cursor: the highest sequence with every sequence from 1 up
//!   to it held, 0 while sequence 1 is missing. Events may arrive out of order; the cursor
//!   moves over a gap once it is filled.
//!
//! # Differences from the reference
//!
//! - **The content hash is computed, not taken.** The reference stores the hash the runtime
//!   sends beside the bytes and never compares the two. Here the hash is blake3 of the bytes,
//!   computed by the command (and checked again by `apply`), so a duplicate is the same
//!   bytes, and no runtime can have the hub hold bytes under a hash they do not have.
//! - **Sequence 0 is refused** as an invalid command (`sequence: must not be zero`). The
//!   reference accepts it, and its cursor then stops at 0 for good, since it counts from 1
//!   and breaks at the first sequence that is not the next; a sequence that can never count
//!   is bad input.
//! - **Names are bounded.** Project, run, hub project and runtime names must be non-empty,
//!   at most [`NAME_BYTES_MAX`] bytes and free of control characters, the event type at most
//!   [`EVENT_TYPE_BYTES_MAX`] bytes, the event at most [`EVENT_BYTES_MAX`] bytes; the
//!   reference takes any text. Every accepted event must fit one record of the log.
//! - **The cursor is kept, not recomputed.** The reference reads every sequence of the run on
//!   each call; here `apply` keeps the cursor in the run's row and moves it when a sequence
//!   joins the unbroken prefix, so reading it costs one lookup. The value is the same.
//! - **Ties in the listing come in acceptance order.** Two projects of one hub project may
//!   hold the same run id and sequence; the reference leaves their order to SQLite's plan
//!   (its index on (hub project, run, sequence) yields rowid, that is insertion, order). Here
//!   the index carries the accepting record's position, so the order is always the
//!   acceptance order, and replay reproduces it.
//! - **A duplicate reports the held event.** The reference answers only `duplicate`; the
//!   outcome here also carries the event as first accepted (its receipt time included).
//! - **Run ids sort by bytes, always.** The reference's SQLite store (the durable one) sorts
//!   them by the text column's binary collation, as here; its memory-only store sorts them
//!   by locale, which can differ for non-ASCII names.
//!
//! # Personal events
//!
//! An ingest naming a `subject` has its bytes sealed for that subject by the store's write
//! session before it decides (`docs/erasure.md`), under a nonce derived from the subject's key,
//! the event's place and its bytes, so that a retry seals to the same envelope: the content
//! hash `decide` compares, `apply` checks and the tables keep is blake3 of the envelope, which
//! says nothing of the plaintext, and the rules above hold unchanged. `apply` sees only the
//! envelope and never a key; [`IngestedEvent::bytes_field`] opens it on read.
//!
//! Nothing here reads a clock: the receipt time is the command's `received_at_ms`, recorded
//! as the record's `at_ms`.

pub(crate) mod apply;
pub(crate) mod decide;
pub mod events;
pub(crate) mod query;

use crate::error::Result;
use crate::event::{DomainEvent, EventKind};
use crate::projection::table::{TableSource, WriteTables};
use crate::projection::{EntityKind, Projection};
use crate::record::Record;

pub use decide::{
    EVENT_BYTES_MAX, EVENT_TYPE_BYTES_MAX, IngestCommand, IngestConflict, IngestOutcome,
    NAME_BYTES_MAX, ingest_stream,
};
pub use events::IngestEvent;
pub use query::{
    IngestEventRow, IngestRunRow, IngestTables, IngestedEvent, ProjectRow, cursor, event, events,
    hub_project_events, project_hub, run_home, state_json, tables,
};

/// The ingest projection.
pub struct Ingest;

impl Projection for Ingest {
    fn shown_tables(&self) -> Vec<crate::projection::shown::ShownTable> {
        use crate::projection::shown::ShownTable;
        vec![
            ShownTable::new(&query::EVENTS, &["project", "run", "sequence"], "event"),
            ShownTable::new(&query::PROJECTS, &["project"], "hub_project"),
            ShownTable::new(&query::RUNS, &["project", "run"], "run"),
        ]
    }

    fn name(&self) -> &'static str {
        "ingest"
    }

    fn version(&self) -> u32 {
        1
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "ingest.events",
            "ingest.projects",
            "ingest.runs",
            "ingest.by_hub_project",
        ]
    }

    fn owned_kinds(&self) -> Option<&'static str> {
        Some("ingest.")
    }

    fn catalogue(&self) -> &'static [EventKind] {
        IngestEvent::CATALOGUE
    }

    fn entities(&self) -> &'static [EntityKind] {
        &[EntityKind {
            kind: "ingest",
            shape: "ingest:<project>/<run>",
            streams: |parts| vec![decide::ingest_stream(parts[0], parts[1])],
        }]
    }

    fn check_payload(&self, record: &Record) -> Result<()> {
        IngestEvent::from_record(record).map(drop)
    }

    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        match IngestEvent::from_record(record)? {
            Some(event) => apply::apply(tables, record, event),
            None => Ok(()),
        }
    }

    fn state_json(&self, state: &dyn TableSource) -> Result<serde_json::Value> {
        query::state_json(state)
    }
}
