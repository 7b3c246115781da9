//! Ingest apply: each event to table writes. Reads only the record and the ingest tables.
//!
//! Before it writes, apply checks the event against the rules `decide` keeps (see
//! `schema/EVENTS.md`): a live command never breaks one, so a record that does was written
//! around `decide` (a forged import, a log written elsewhere) and is refused with
//! [`crate::error::ProjectionError::Invariant`] at its position.

use super::events::{Accepted, IngestEvent};
use super::query::{BY_HUB_PROJECT, EVENTS, PROJECTS, RUNS, StoredEvent, StoredRun};
use crate::error::{Error, Result};
use crate::hash::payload_hash;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// Sequences count from 1: the sync cursor is the run's unbroken prefix from 1.
pub(crate) const SEQUENCE_FROM_ONE: &str = "sequence_from_one";
/// A (project, run, sequence) is accepted at most once.
pub(crate) const SEQUENCE_ONCE: &str = "sequence_once";
/// Every event of a project names the hub project of its first.
pub(crate) const PROJECT_ONE_HUB: &str = "project_one_hub";
/// Every event of a run names the home runtime of its first.
pub(crate) const RUN_ONE_HOME: &str = "run_one_home";
/// The content hash is blake3 of the bytes.
pub(crate) const HASH_OF_BYTES: &str = "hash_of_bytes";

/// `record` breaks the ingest `rule`, as `detail` says.
fn broken(record: &Record, rule: &'static str, detail: String) -> Error {
    crate::projection::invariant("ingest", record, rule, detail)
}

/// Applies one ingest event recorded in `record`, refusing one that breaks an ingest rule.
pub(crate) fn apply(tables: &WriteTables<'_>, record: &Record, event: IngestEvent) -> Result<()> {
    match event {
        IngestEvent::Accepted(e) => accept(tables, record, e),
    }
}

fn accept(tables: &WriteTables<'_>, record: &Record, e: Accepted) -> Result<()> {
    if e.sequence == 0 {
        let detail = format!("project {:?} run {:?} at sequence 0", e.project, e.run);
        return Err(broken(record, SEQUENCE_FROM_ONE, detail));
    }
    let hash = payload_hash(&e.bytes);
    if hash.0 != e.content_hash {
        let detail = format!(
            "content hash {} for {} bytes whose blake3 is {hash}",
            crate::hash::hex(&e.content_hash),
            e.bytes.len()
        );
        return Err(broken(record, HASH_OF_BYTES, detail));
    }
    let key = (e.project, e.run, e.sequence);
    if EVENTS.get(tables, &key)?.is_some() {
        let detail = format!(
            "project {:?} run {:?} sequence {} is already held",
            key.0, key.1, key.2
        );
        return Err(broken(record, SEQUENCE_ONCE, detail));
    }
    match PROJECTS.get(tables, &key.0)? {
        Some(hub) if hub != e.hub_project => {
            let detail = format!(
                "project {:?} accepted for hub project {:?}, held by {hub:?}",
                key.0, e.hub_project
            );
            return Err(broken(record, PROJECT_ONE_HUB, detail));
        }
        Some(_) => {}
        None => PROJECTS.insert(tables, &key.0, &e.hub_project)?,
    }
    let run_key = (key.0.clone(), key.1.clone());
    let mut run = match RUNS.get(tables, &run_key)? {
        Some(run) if run.home_runtime != e.home_runtime => {
            let detail = format!(
                "project {:?} run {:?} accepted from runtime {:?}, its home is {:?}",
                key.0, key.1, e.home_runtime, run.home_runtime
            );
            return Err(broken(record, RUN_ONE_HOME, detail));
        }
        Some(run) => run,
        None => StoredRun {
            home_runtime: e.home_runtime.clone(),
            cursor: 0,
        },
    };
    let index = (
        e.hub_project.clone(),
        key.1.clone(),
        key.2,
        record.position.0,
    );
    BY_HUB_PROJECT.insert(tables, &index, &key.0)?;
    let stored = StoredEvent {
        hub_project: e.hub_project,
        home_runtime: e.home_runtime,
        event_type: e.event_type,
        content_hash: e.content_hash,
        received_at_ms: record.at_ms,
        bytes: e.bytes,
    };
    EVENTS.insert(tables, &key, &stored)?;
    if run.cursor.checked_add(1) == Some(key.2) {
        run.cursor = advance(tables, &run_key, key.2)?;
    }
    RUNS.insert(tables, &run_key, &run)
}

/// The cursor after `from` joined the run's unbroken prefix: `from`, moved on through every
/// later sequence already held (accepted early, while a gap stood below them).
fn advance(tables: &WriteTables<'_>, run: &(String, String), from: u64) -> Result<u64> {
    let mut cursor = from;
    while let Some(next) = cursor.checked_add(1) {
        let key = (run.0.clone(), run.1.clone(), next);
        if EVENTS.get(tables, &key)?.is_none() {
            break;
        }
        cursor = next;
    }
    Ok(cursor)
}
