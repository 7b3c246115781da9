//! Entity history: every event that touched one stream, lease, outbox row, run, registry
//! instance, setting, consumer or ingested run, in log order, with positions and times.
//!
//! An entity maps to the streams its domain writes (each projection names its kinds of
//! entity and their streams, [`crate::projection::Projection::entities`]), and its history is those streams read through the stream index and merged
//! by position. Reads only; never writes.

use std::fmt;
use std::sync::Arc;

use crate::error::{AuditError, EntityProblem, Result};
use crate::log::read::{Direction, Snapshot, StreamRecords};
use crate::projection::{EntityKind, Projection};
use crate::record::{Record, StreamVersion};

/// Something whose history can be asked for, as `annals history` spells it:
/// `stream:<name>`, or a kind one of the store's projections names
/// ([`crate::projection::Projection::entities`]); the built-in ones name `lease:<resource>`,
/// `lane:<lane>/<key>`, `outbox:<key>`, `run:<id>`, `registry:<handle>`, `setting:<key>`,
/// `consumer:<name>` and `ingest:<project>/<run>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entity {
    /// The word before the colon.
    kind: String,
    /// The names after it: one, or two for a kind whose shape has two.
    parts: Vec<String>,
    /// The streams its events are written to.
    streams: Vec<String>,
}

/// The kind every log has: any stream, by name (which may hold `/`).
const STREAM: &str = "stream";

impl Entity {
    /// Parses an entity spec such as `lease:deploy-lock`, of the kinds the built-in
    /// projections name ([`crate::maintenance::builtin_projections`]).
    ///
    /// ```
    /// use annals::audit::Entity;
    /// assert_eq!(Entity::parse("run:r-1").unwrap().streams(), ["run/r-1"]);
    /// assert_eq!(Entity::parse("registry:hub-eu").unwrap().streams(), ["registry/hub-eu", "fuel/hub-eu"]);
    /// assert!(Entity::parse("deploy-lock").is_err());
    /// ```
    pub fn parse(spec: &str) -> Result<Entity> {
        Entity::parse_among(spec, &crate::builtins::builtin_projections())
    }

    /// Parses an entity spec of the kinds `projections` name: a store's
    /// ([`crate::Store::projections`]`.iter()`), with projections of one's own among them.
    pub fn parse_among<'p>(
        spec: &str,
        projections: impl IntoIterator<Item = &'p Arc<dyn Projection>>,
    ) -> Result<Entity> {
        let kinds: Vec<EntityKind> = projections
            .into_iter()
            .flat_map(|projection| projection.entities().iter().copied())
            .collect();
        // "stream, lease, … or ingest": what a refusal offers.
        let known = || {
            let names: Vec<&str> = std::iter::once(STREAM)
                .chain(kinds.iter().map(|kind| kind.kind))
                .collect();
            match names.split_last() {
                Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
                _ => STREAM.to_owned(),
            }
        };
        let refuse = |reason: EntityProblem| {
            crate::Error::from(AuditError::Entity {
                spec: spec.to_owned(),
                reason,
            })
        };
        let Some((kind, name)) = spec.split_once(':') else {
            return Err(refuse(EntityProblem::NoKind { known: known() }));
        };
        if name.is_empty() {
            return Err(refuse(EntityProblem::EmptyName));
        }
        if kind == STREAM {
            return Ok(Entity {
                kind: STREAM.to_owned(),
                parts: vec![name.to_owned()],
                streams: vec![name.to_owned()],
            });
        }
        let Some(found) = kinds.iter().find(|known| known.kind == kind) else {
            return Err(refuse(EntityProblem::UnknownKind {
                kind: kind.to_owned(),
                known: known(),
            }));
        };
        let parts: Vec<&str> = match found.parts() {
            1 => vec![name],
            _ => match name.split_once('/') {
                Some((first, second)) => vec![first, second],
                None => {
                    return Err(refuse(EntityProblem::OnePart {
                        kind: found.kind,
                        shape: found.shape,
                    }));
                }
            },
        };
        let streams = (found.streams)(&parts);
        assert!(
            !streams.is_empty(),
            "an entity of kind {kind} names no stream"
        );
        Ok(Entity {
            kind: kind.to_owned(),
            parts: parts.into_iter().map(str::to_owned).collect(),
            streams,
        })
    }

    /// The word before the colon: `stream`, or the kind a projection names.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The streams this entity's events are written to, in the order its kind lists them.
    pub fn streams(&self) -> &[String] {
        &self.streams
    }
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.parts.join("/"))
    }
}

/// Every record that touched `entity`, in log order (each checked as every read is). Empty
/// when the log holds nothing of it. Collects them all; [`records`] hands them out one at a
/// time.
pub fn history(snapshot: &Snapshot, entity: &Entity) -> Result<Vec<Record>> {
    records(snapshot, entity.streams(), Direction::Forward)?.collect()
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
