//! Entity history: every event that touched one stream, lease, outbox row, run, registry
//! instance, setting, consumer or ingested run, in log order, with positions and times.
//!
//! An entity maps to the streams its domain writes (the names come from each domain's
//! `decide.rs`), and its history is those streams read through the stream index and merged
//! by position. Reads only; never writes.

use std::fmt;

use crate::error::{AuditError, EntityProblem, Result};
use crate::log::read::{Direction, Snapshot, StreamRecords};
use crate::record::{Record, StreamVersion};

/// Something whose history can be asked for, as `annals history` spells it:
/// `stream:<name>`, `lease:<resource>`, `lane:<lane>/<key>`, `outbox:<key>`, `run:<id>`,
/// `registry:<handle>`, `setting:<key>`, `consumer:<name>` or `ingest:<project>/<run>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entity {
    /// Any stream, by name.
    Stream(String),
    /// A resource lease.
    Lease(String),
    /// A lane lease of one key: `lane:<lane>/<key>`.
    Lane {
        /// The lane.
        lane: String,
        /// The key.
        key: String,
    },
    /// An outbox row, by its idempotency key.
    Outbox(String),
    /// A run.
    Run(String),
    /// A registry instance, by handle: its own events and its fuel ledger.
    Registry(String),
    /// A registry setting.
    Setting(String),
    /// A consumer's checkpoints.
    Consumer(String),
    /// The events one run of a project pushed to the hub: `ingest:<project>/<run>`.
    Ingest {
        /// The runtime's project.
        project: String,
        /// The run.
        run: String,
    },
}

impl Entity {
    /// Parses an entity spec such as `lease:deploy-lock`.
    ///
    /// ```
    /// use annals::audit::Entity;
    /// assert_eq!(Entity::parse("run:r-1").unwrap().streams(), ["run/r-1"]);
    /// assert_eq!(Entity::parse("registry:hub-eu").unwrap().streams(), ["registry/hub-eu", "fuel/hub-eu"]);
    /// assert!(Entity::parse("deploy-lock").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<Entity> {
        let refuse = |reason: EntityProblem| AuditError::Entity {
            spec: spec.to_owned(),
            reason,
        };
        let Some((kind, name)) = spec.split_once(':') else {
            return Err(refuse(EntityProblem::NoKind).into());
        };
        if name.is_empty() {
            return Err(refuse(EntityProblem::EmptyName).into());
        }
        let name = name.to_owned();
        Ok(match kind {
            "stream" => Entity::Stream(name),
            "lease" => Entity::Lease(name),
            "lane" => {
                let Some((lane, key)) = name.split_once('/') else {
                    return Err(refuse(EntityProblem::OnePart {
                        kind: "lane",
                        shape: "lane:<lane>/<key>",
                    })
                    .into());
                };
                Entity::Lane {
                    lane: lane.to_owned(),
                    key: key.to_owned(),
                }
            }
            "outbox" => Entity::Outbox(name),
            "run" => Entity::Run(name),
            "registry" => Entity::Registry(name),
            "setting" => Entity::Setting(name),
            "consumer" => Entity::Consumer(name),
            "ingest" => {
                let Some((project, run)) = name.split_once('/') else {
                    return Err(refuse(EntityProblem::OnePart {
                        kind: "ingest",
                        shape: "ingest:<project>/<run>",
                    })
                    .into());
                };
                Entity::Ingest {
                    project: project.to_owned(),
                    run: run.to_owned(),
                }
            }
            _ => {
                return Err(refuse(EntityProblem::UnknownKind {
                    kind: kind.to_owned(),
                })
                .into());
            }
        })
    }

    /// The streams that hold the entity's events.
    pub fn streams(&self) -> Vec<String> {
        match self {
            Entity::Stream(name) => vec![name.clone()],
            Entity::Lease(resource) => vec![crate::leases::decide::lease_stream(resource)],
            Entity::Lane { lane, key } => vec![crate::leases::decide::lane_stream(lane, key)],
            Entity::Outbox(key) => vec![crate::outbox::decide::row_stream(key)],
            Entity::Run(run) => vec![crate::runs::decide::run_stream(run)],
            Entity::Registry(handle) => vec![
                crate::registry::decide::instance_stream(handle),
                crate::registry::decide::fuel_stream(handle),
            ],
            Entity::Setting(key) => vec![crate::registry::decide::setting_stream(key)],
            Entity::Consumer(name) => vec![crate::consumers::decide::consumer_stream(name)],
            Entity::Ingest { project, run } => {
                vec![crate::ingest::decide::ingest_stream(project, run)]
            }
        }
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entity::Stream(name) => write!(f, "stream:{name}"),
            Entity::Lease(name) => write!(f, "lease:{name}"),
            Entity::Lane { lane, key } => write!(f, "lane:{lane}/{key}"),
            Entity::Outbox(name) => write!(f, "outbox:{name}"),
            Entity::Run(name) => write!(f, "run:{name}"),
            Entity::Registry(name) => write!(f, "registry:{name}"),
            Entity::Setting(name) => write!(f, "setting:{name}"),
            Entity::Consumer(name) => write!(f, "consumer:{name}"),
            Entity::Ingest { project, run } => write!(f, "ingest:{project}/{run}"),
        }
    }
}

/// Every record that touched `entity`, in log order (each checked as every read is). Empty
/// when the log holds nothing of it. Collects them all; [`records`] hands them out one at a
/// time.
pub fn history(snapshot: &Snapshot, entity: &Entity) -> Result<Vec<Record>> {
    records(snapshot, &entity.streams(), Direction::Forward)?.collect()
}

/// The records of `streams` merged by position, in `direction`: each stream is read through
/// the stream index in its own order and only one record per stream is held at a time, so
/// memory does not grow with the history's length.
pub fn records<'s>(
    snapshot: &'s Snapshot,
    streams: &[String],
    direction: Direction,
) -> Result<History<'s>> {
    let from = match direction {
        Direction::Forward => StreamVersion(0),
        Direction::Backward => StreamVersion(u64::MAX),
    };
    let mut sources = Vec::with_capacity(streams.len());
    for stream in streams {
        sources.push((snapshot.stream(stream, from, direction)?, None));
    }
    Ok(History {
        sources,
        direction,
        failed: false,
    })
}

/// Records of several streams merged by position ([`records`]).
pub struct History<'s> {
    /// Each stream's records and the next one read from it, not yet handed out.
    sources: Vec<(StreamRecords<'s>, Option<Record>)>,
    direction: Direction,
    /// Set after an error, which ends the iteration.
    failed: bool,
}

impl Iterator for History<'_> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        for (stream, next) in &mut self.sources {
            if next.is_none() {
                match stream.next() {
                    Some(Ok(record)) => *next = Some(record),
                    Some(Err(error)) => {
                        self.failed = true;
                        return Some(Err(error));
                    }
                    None => {}
                }
            }
        }
        let direction = self.direction;
        let (_, next) = self
            .sources
            .iter_mut()
            .filter(|(_, next)| next.is_some())
            .min_by_key(|(_, next)| {
                let position = next.as_ref().map_or(0, |record| record.position.0);
                match direction {
                    Direction::Forward => position,
                    Direction::Backward => u64::MAX - position,
                }
            })?;
        next.take().map(Ok)
    }
}
