//! Ingest reads from the projection tables: no replay, usable on a snapshot or inside a write
//! (where commands decide).

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::hash::Digest;
use crate::log::read::Direction;
use crate::projection::table::{Table, TableSource};

/// A runtime's event as the hub holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestedEvent {
    /// The runtime's project.
    pub project: String,
    /// The run within the project.
    pub run: String,
    /// The event's sequence within the run, from 1.
    pub sequence: u64,
    /// The hub project that holds it.
    pub hub_project: String,
    /// The runtime the run lives on.
    pub home_runtime: String,
    /// The runtime's name for the event's type.
    pub event_type: String,
    /// blake3 of `bytes` (of the envelope, for an event personal to a subject: a hash of
    /// ciphertext, which says nothing of the plaintext).
    pub content_hash: Digest,
    /// When the hub accepted it (the accepting command's `received_at_ms`).
    pub received_at_ms: u64,
    /// The event as the runtime sent it (sealed into an envelope, for one ingested with a
    /// `subject`: [`IngestedEvent::bytes_field`] opens it).
    #[serde(with = "crate::event::bytes")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub bytes: Vec<u8>,
}

/// A row of `ingest.events`: an accepted event, without the key's parts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredEvent {
    pub(crate) hub_project: String,
    pub(crate) home_runtime: String,
    pub(crate) event_type: String,
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub(crate) content_hash: [u8; 32],
    pub(crate) received_at_ms: u64,
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub(crate) bytes: Vec<u8>,
}

/// A row of `ingest.runs`: what the hub knows of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredRun {
    /// The runtime of the run's first accepted event; every later one must name it.
    pub(crate) home_runtime: String,
    /// The sync cursor: the highest sequence with every sequence from 1 to it held.
    pub(crate) cursor: u64,
}

/// `ingest.events`: (project, run, sequence) → the accepted event.
pub(crate) const EVENTS: Table<(String, String, u64), StoredEvent> = Table::new("ingest.events");
/// `ingest.projects`: project → the hub project its first accepted event named.
pub(crate) const PROJECTS: Table<String, String> = Table::new("ingest.projects");
/// `ingest.runs`: (project, run) → its home runtime and sync cursor.
pub(crate) const RUNS: Table<(String, String), StoredRun> = Table::new("ingest.runs");
/// `ingest.by_hub_project`: (hub project, run, sequence, position of the accepting record) →
/// project. The position orders events of one run id and sequence under two projects of one
/// hub project by when they were accepted.
pub(crate) const BY_HUB_PROJECT: Table<(String, String, u64, u64), String> =
    Table::new("ingest.by_hub_project");

fn typed(project: String, run: String, sequence: u64, stored: StoredEvent) -> IngestedEvent {
    IngestedEvent {
        project,
        run,
        sequence,
        hub_project: stored.hub_project,
        home_runtime: stored.home_runtime,
        event_type: stored.event_type,
        content_hash: Digest(stored.content_hash),
        received_at_ms: stored.received_at_ms,
        bytes: stored.bytes,
    }
}

/// The event held under (`project`, `run`, `sequence`), if any.
pub fn event(
    state: &dyn TableSource,
    project: &str,
    run: &str,
    sequence: u64,
) -> Result<Option<IngestedEvent>> {
    let key = (project.to_owned(), run.to_owned(), sequence);
    let stored = EVENTS.get(state, &key)?;
    Ok(stored.map(|stored| typed(key.0, key.1, key.2, stored)))
}

/// Up to `limit` events `hub_project` holds, by run then sequence (the reference's
/// `listSyncEvents`); one run id and sequence under two projects come in the order they were
/// accepted.
pub fn hub_project_events(
    state: &dyn TableSource,
    hub_project: &str,
    limit: usize,
) -> Result<Vec<IngestedEvent>> {
    let prefix = (hub_project.to_owned(),);
    let index = BY_HUB_PROJECT.scan_prefix(state, &prefix, Direction::Forward, limit)?;
    let mut events = Vec::with_capacity(index.len());
    for ((hub, run, sequence, position), project) in index {
        let key = (project, run, sequence);
        let Some(stored) = EVENTS.get(state, &key)? else {
            return Err(crate::error::Error::CorruptProjection {
                table: EVENTS.name().to_owned(),
                fault: crate::error::TableFault::RowMissing {
                    key: format!(
                        "({:?}, {:?}, {}) (from the row of hub project {hub:?} at position \
                         {position} in {})",
                        key.0,
                        key.1,
                        key.2,
                        BY_HUB_PROJECT.name()
                    ),
                },
            });
        };
        events.push(typed(key.0, key.1, key.2, stored));
    }
    Ok(events)
}

/// Up to `limit` events of every project, in (project, run, sequence) order.
pub fn events(state: &dyn TableSource, limit: usize) -> Result<Vec<IngestedEvent>> {
    let rows = EVENTS.scan_prefix(state, &(), Direction::Forward, limit)?;
    Ok(rows
        .into_iter()
        .map(|((project, run, sequence), stored)| typed(project, run, sequence, stored))
        .collect())
}

/// The sync cursor of `run` in `project` (the reference's `syncCursor`): the highest sequence
/// with every sequence from 1 up to it held; 0 when sequence 1 is missing.
pub fn cursor(state: &dyn TableSource, project: &str, run: &str) -> Result<u64> {
    let key = (project.to_owned(), run.to_owned());
    Ok(RUNS.get(state, &key)?.map_or(0, |run| run.cursor))
}

/// The hub project that holds `project`'s events, if it has any.
pub fn project_hub(state: &dyn TableSource, project: &str) -> Result<Option<String>> {
    PROJECTS.get(state, &project.to_owned())
}

/// The home runtime of `run` in `project`, if it has any event.
pub fn run_home(state: &dyn TableSource, project: &str, run: &str) -> Result<Option<String>> {
    let key = (project.to_owned(), run.to_owned());
    Ok(RUNS.get(state, &key)?.map(|run| run.home_runtime))
}

/// Every row of the ingest projection, in key order: what `annals state` prints (as JSON,
/// [`state_json`]) and the Node package's `state('ingest')` gives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestTables {
    /// The accepted events, by project, run and sequence.
    pub events: Vec<IngestEventRow>,
    /// The hub project each project's events go to.
    pub projects: Vec<ProjectRow>,
    /// What the hub knows of each run.
    pub runs: Vec<IngestRunRow>,
}

/// An accepted event as the state shows it: its hash and bytes in hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestEventRow {
    /// The runtime's project.
    pub project: String,
    /// The run within the project.
    pub run: String,
    /// The event's sequence within the run, from 1.
    pub sequence: u64,
    /// The hub project that holds it.
    pub hub_project: String,
    /// The runtime the run lives on.
    pub home_runtime: String,
    /// The runtime's name for the event's type.
    pub event_type: String,
    /// blake3 of `bytes`, in hex.
    pub content_hash: String,
    /// When the hub accepted it.
    pub received_at_ms: u64,
    /// The event's stored bytes (an envelope, for a personal one), in hex.
    pub bytes: String,
}

/// The hub project a project's events go to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ProjectRow {
    /// The runtime's project.
    pub project: String,
    /// The hub project.
    pub hub_project: String,
}

/// What the hub knows of one run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestRunRow {
    /// The runtime's project.
    pub project: String,
    /// The run.
    pub run: String,
    /// The runtime of the run's first accepted event.
    pub home_runtime: String,
    /// The sync cursor: the highest sequence with every sequence from 1 to it held.
    pub cursor: u64,
}

/// Every row of the ingest projection, in key order.
pub fn tables(state: &dyn TableSource) -> Result<IngestTables> {
    let events = events(state, usize::MAX)?
        .into_iter()
        .map(|event| IngestEventRow {
            content_hash: event.content_hash.to_hex(),
            bytes: crate::hash::hex(&event.bytes),
            project: event.project,
            run: event.run,
            sequence: event.sequence,
            hub_project: event.hub_project,
            home_runtime: event.home_runtime,
            event_type: event.event_type,
            received_at_ms: event.received_at_ms,
        })
        .collect();
    let projects = PROJECTS
        .scan_prefix(state, &(), Direction::Forward, usize::MAX)?
        .into_iter()
        .map(|(project, hub_project)| ProjectRow {
            project,
            hub_project,
        })
        .collect();
    let runs = RUNS
        .scan_prefix(state, &(), Direction::Forward, usize::MAX)?
        .into_iter()
        .map(|((project, run), stored)| IngestRunRow {
            project,
            run,
            home_runtime: stored.home_runtime,
            cursor: stored.cursor,
        })
        .collect();
    Ok(IngestTables {
        events,
        projects,
        runs,
    })
}

/// Every row of the ingest projection as JSON, in key order: what `annals state` prints.
pub fn state_json(state: &dyn TableSource) -> Result<serde_json::Value> {
    Ok(crate::projection::state_value(&tables(state)?))
}
