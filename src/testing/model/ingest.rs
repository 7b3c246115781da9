//! The model's sync ingest: every accepted event in a `BTreeMap` by (project, run, sequence),
//! with the order it was accepted in. It restates the reference hub store's `ingestSyncEvent`,
//! `listSyncEvents` and `syncCursor` as they read: the project's hub and the run's home are
//! found by looking through the held events, and the cursor by walking a run's sorted
//! sequences from 1. It predicts:
//! - an invalid name, type or sequence 0 refused on the first field at fault, in the order
//!   project, run, sequence, hub project, home runtime, event type;
//! - a held key: `duplicate` with the held event when the content hash (blake3 of the bytes)
//!   and the hub project match, `sequence_reused` with the held hash otherwise;
//! - then `project_mismatch`, then `home_runtime_mismatch`; otherwise accepted at the
//!   command's clock, one record on the run's stream;
//! - after each command, every valid hub project's listing (by run, then sequence, then
//!   acceptance) and every valid run's cursor.
//!
//! It never calls the ingest's `decide` or `apply` (only `ingest_stream`, for the stream's
//! name): a rule the store gets wrong must not be wrong here the same way.

use std::collections::BTreeMap;

use super::{Op, pick};
use crate::hash::Digest;
use crate::ingest::{IngestCommand, IngestConflict, IngestOutcome, IngestedEvent, ingest_stream};
use crate::projection::table::TableSource;
use crate::store::WriteSession;

/// Projects (the empty one and the one with a control character are invalid).
const PROJECTS: [&str; 4] = ["ip1", "ip2", "", "ip\u{7}"];
/// Runs (the empty one is invalid).
const RUNS: [&str; 3] = ["ir1", "ir2", ""];
/// Hub projects (the empty one is invalid).
const HUBS: [&str; 3] = ["ih1", "ih2", ""];
/// Runtimes (the empty one is invalid).
const RUNTIMES: [&str; 3] = ["it1", "it2", ""];
/// Event types (the empty one is invalid).
const EVENT_TYPES: [&str; 3] = ["ie1", "ie2", ""];
/// Sequences are drawn modulo this (0 is invalid).
const SEQUENCES: u8 = 5;

/// A record the model predicts: its stream and kind.
type Predicted = (String, &'static str);

/// The sync ingest as the model holds it.
#[derive(Clone, Debug, Default)]
pub struct Ingest {
    /// Accepted events by (project, run, sequence), each with its place in acceptance order.
    events: BTreeMap<(String, String, u64), (u64, IngestedEvent)>,
    /// Events accepted so far.
    accepted: u64,
}

/// What the query functions show after a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    /// For each valid hub project, its events in listing order.
    pub hubs: Vec<Vec<IngestedEvent>>,
    /// For each valid (project, run), its sync cursor.
    pub cursors: Vec<u64>,
}

/// An ingest's outcome and the ingest it leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// The outcome.
    pub done: IngestOutcome,
    /// The ingest after it.
    pub view: View,
}

/// The ingest command `op` states at `now_ms`, if it is one.
pub(super) fn command(op: &Op, now_ms: u64) -> Option<IngestCommand> {
    let Op::Ingest {
        project,
        run,
        sequence,
        hub,
        runtime,
        event_type,
        content,
    } = *op
    else {
        return None;
    };
    Some(IngestCommand {
        project: pick(&PROJECTS, project).into(),
        run: pick(&RUNS, run).into(),
        sequence: u64::from(sequence % SEQUENCES),
        hub_project: pick(&HUBS, hub).into(),
        home_runtime: pick(&RUNTIMES, runtime).into(),
        event_type: pick(&EVENT_TYPES, event_type).into(),
        bytes: vec![content % 3],
        received_at_ms: now_ms,
        subject: None,
    })
}

/// The valid (project, run) pairs, in the order [`View::cursors`] lists them.
fn valid_runs() -> impl Iterator<Item = (&'static str, &'static str)> {
    PROJECTS[..2]
        .iter()
        .flat_map(|project| RUNS[..2].iter().map(move |run| (*project, *run)))
}

/// Runs the command in `session`, and states what it did and what the queries then show.
pub(super) fn run_on_store(
    command: &IngestCommand,
    session: &mut WriteSession<'_>,
) -> crate::error::Result<Seen> {
    let done = session.execute(command)?;
    let view = store_view(session.state())?;
    Ok(Seen { done, view })
}

fn store_view(state: &dyn TableSource) -> crate::error::Result<View> {
    let mut hubs = Vec::new();
    for hub in &HUBS[..2] {
        hubs.push(crate::ingest::hub_project_events(state, hub, usize::MAX)?);
    }
    let mut cursors = Vec::new();
    for (project, run) in valid_runs() {
        cursors.push(crate::ingest::cursor(state, project, run)?);
    }
    Ok(View { hubs, cursors })
}

/// The field `name` is refused as unless it is non-empty and free of control characters (the
/// model's names are all well under their length limits).
fn check(name: &str, field: &'static str) -> Result<(), &'static str> {
    if name.is_empty() || name.chars().any(char::is_control) {
        return Err(field);
    }
    Ok(())
}

impl Ingest {
    /// What `command` must do, applied to the model: the outcome with the records it writes
    /// (stream and kind), or the field an invalid command names.
    pub(super) fn run(
        &mut self,
        command: &IngestCommand,
    ) -> Result<(Seen, Vec<Predicted>), &'static str> {
        check(&command.project, "project")?;
        check(&command.run, "run")?;
        if command.sequence == 0 {
            return Err("sequence");
        }
        check(&command.hub_project, "hub_project")?;
        check(&command.home_runtime, "home_runtime")?;
        check(&command.event_type, "event_type")?;
        let mut records = Vec::new();
        let done = self.decide(command, &mut records);
        let view = self.view();
        Ok((Seen { done, view }, records))
    }

    fn decide(&mut self, command: &IngestCommand, records: &mut Vec<Predicted>) -> IngestOutcome {
        let hash = Digest(*blake3::hash(&command.bytes).as_bytes());
        let key = (
            command.project.clone(),
            command.run.clone(),
            command.sequence,
        );
        if let Some((_, held)) = self.events.get(&key) {
            if held.content_hash == hash && held.hub_project == command.hub_project {
                return IngestOutcome::Duplicate {
                    event: held.clone(),
                };
            }
            return IngestOutcome::Conflict {
                reason: IngestConflict::SequenceReused,
                existing_hash: Some(held.content_hash),
            };
        }
        let owner = self
            .events
            .values()
            .find(|(_, e)| e.project == command.project)
            .map(|(_, e)| e.hub_project.clone());
        if owner.is_some_and(|hub| hub != command.hub_project) {
            return IngestOutcome::Conflict {
                reason: IngestConflict::ProjectMismatch,
                existing_hash: None,
            };
        }
        let home = self
            .events
            .values()
            .find(|(_, e)| e.project == command.project && e.run == command.run)
            .map(|(_, e)| e.home_runtime.clone());
        if home.is_some_and(|home| home != command.home_runtime) {
            return IngestOutcome::Conflict {
                reason: IngestConflict::HomeRuntimeMismatch,
                existing_hash: None,
            };
        }
        let event = IngestedEvent {
            project: command.project.clone(),
            run: command.run.clone(),
            sequence: command.sequence,
            hub_project: command.hub_project.clone(),
            home_runtime: command.home_runtime.clone(),
            event_type: command.event_type.clone(),
            content_hash: hash,
            received_at_ms: command.received_at_ms,
            bytes: command.bytes.clone(),
        };
        self.events.insert(key, (self.accepted, event.clone()));
        self.accepted += 1;
        records.push((
            ingest_stream(&command.project, &command.run),
            "ingest.accepted",
        ));
        IngestOutcome::Accepted { event }
    }

    fn view(&self) -> View {
        let hubs = HUBS[..2]
            .iter()
            .map(|hub| {
                let mut held: Vec<&(u64, IngestedEvent)> = self
                    .events
                    .values()
                    .filter(|(_, e)| e.hub_project == *hub)
                    .collect();
                held.sort_by(|(a_order, a), (b_order, b)| {
                    (a.run.as_bytes(), a.sequence, a_order).cmp(&(
                        b.run.as_bytes(),
                        b.sequence,
                        b_order,
                    ))
                });
                held.into_iter().map(|(_, e)| e.clone()).collect()
            })
            .collect();
        let cursors = valid_runs()
            .map(|(project, run)| {
                let mut sequences: Vec<u64> = self
                    .events
                    .values()
                    .filter(|(_, e)| e.project == project && e.run == run)
                    .map(|(_, e)| e.sequence)
                    .collect();
                sequences.sort_unstable();
                let mut cursor = 0;
                for sequence in sequences {
                    if sequence != cursor + 1 {
                        break;
                    }
                    cursor = sequence;
                }
                cursor
            })
            .collect();
        View { hubs, cursors }
    }
}
