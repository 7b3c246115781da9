//! The ingest command and its pure decision: state + command → an event, a duplicate, or a
//! conflict.
//!
//! The checks run in the reference's order (`ingestSyncEvent`): an event already held under
//! the key is a duplicate when its content hash and hub project match and `sequence_reused`
//! otherwise; then a project held by another hub project is `project_mismatch`; then a run
//! homed on another runtime is `home_runtime_mismatch`. The receipt time, the home runtime and
//! the event type are left out of the duplicate check, as in the reference. Nothing here
//! reads a clock: the receipt time comes in with the command.

use super::events::{ACCEPTED, Accepted, IngestEvent};
use super::query::{self, IngestedEvent};
use crate::command::{Command, Decision, PersonalField, Sealing, check_sealed};
use crate::error::Result;
use crate::hash::{Digest, payload_hash};
use crate::projection::table::TableSource;
use crate::record::envelope::{OVERHEAD_MAX, overhead};
use crate::record::limits::Limits;
use crate::validate;

/// Longest project, run, hub project or runtime name, in bytes.
pub const NAME_BYTES_MAX: usize = 120;
/// Longest event type, in bytes.
pub const EVENT_TYPE_BYTES_MAX: usize = 128;
/// Largest event a runtime may send, in bytes.
pub const EVENT_BYTES_MAX: usize = 256 * 1024;

const STREAM_PREFIX: &str = "ingest/";

// Every event of a valid command fits the default limits of one record: the stream holds the
// project and the run with a separator, the payload four names, the type, the hash, the bytes
// (sealed, when personal: an envelope's overhead more) and seven length or number fields.
const _: () =
    assert!(STREAM_PREFIX.len() + 2 * NAME_BYTES_MAX < Limits::DEFAULT.stream_bytes_max as usize);
const _: () = assert!(
    4 * NAME_BYTES_MAX + EVENT_TYPE_BYTES_MAX + 32 + EVENT_BYTES_MAX + OVERHEAD_MAX + 7 * 8
        <= Limits::DEFAULT.payload_bytes_max as usize
);

/// Why an event was not accepted: the reference's conflict reasons, each a security alert
/// (a runtime reusing a sequence, or claiming a project or run that is not its own).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum IngestConflict {
    /// The key already holds another event: another content hash, or another hub project.
    SequenceReused,
    /// The project's events are held by another hub project.
    ProjectMismatch,
    /// The run lives on another runtime.
    HomeRuntimeMismatch,
}

impl std::fmt::Display for IngestConflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            IngestConflict::SequenceReused => "sequence_reused",
            IngestConflict::ProjectMismatch => "project_mismatch",
            IngestConflict::HomeRuntimeMismatch => "home_runtime_mismatch",
        })
    }
}

/// Ingest one event a runtime pushed to the hub, exactly once by (`project`, `run`,
/// `sequence`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct IngestCommand {
    /// The runtime's project.
    pub project: String,
    /// The run within the project.
    pub run: String,
    /// The event's sequence within the run, from 1.
    pub sequence: u64,
    /// The hub project that is to hold it.
    pub hub_project: String,
    /// The runtime the run lives on.
    pub home_runtime: String,
    /// The runtime's name for the event's type.
    pub event_type: String,
    /// The event as the runtime sent it, at most [`EVENT_BYTES_MAX`] bytes. Its content hash
    /// is blake3 of these bytes (of their envelope, when personal to a `subject`).
    #[serde(with = "crate::event::bytes")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub bytes: Vec<u8>,
    /// The hub's clock when the event arrived.
    pub received_at_ms: u64,
    /// The subject (a person's pseudonymous id) the event's `bytes` are personal to, if any:
    /// the store's write session seals them under the subject's key before the event is
    /// hashed, with a nonce derived from the key, the event's place and its bytes
    /// ([`Sealing::Derived`]), so that a retry seals to the same envelope and is a duplicate;
    /// [`IngestedEvent::bytes_field`] reads them back, or as erased once the subject is
    /// (`docs/erasure.md`). Absent from the serde form of an ingest that names none, which
    /// reads as it did before personal ingests existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
}

/// What an ingest got.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[must_use]
pub enum IngestOutcome {
    /// Accepted and recorded.
    Accepted {
        /// The event as now held.
        event: IngestedEvent,
    },
    /// The key already holds this content under this hub project; nothing appended.
    Duplicate {
        /// The event as held (with its first receipt time).
        event: IngestedEvent,
    },
    /// Refused; nothing appended.
    Conflict {
        /// Why.
        reason: IngestConflict,
        /// The content hash held under the key, for `sequence_reused`.
        existing_hash: Option<Digest>,
    },
}

/// The stream of one run's ingested events.
pub fn ingest_stream(project: &str, run: &str) -> String {
    format!("{STREAM_PREFIX}{project}/{run}")
}

impl IngestedEvent {
    /// Its bytes as [`crate::erasure::PayloadReader::open_field`] reads them (`docs/erasure.md`): those
    /// of an event ingested with no subject; for one ingested with a `subject`, the plaintext
    /// while the subject's key stands, and [`crate::erasure::Payload::Erased`] once the subject is
    /// erased or where the store holds no key for it (a follower, an importer).
    pub fn bytes_field(&self) -> crate::record::envelope::SealedField<'_> {
        crate::record::envelope::SealedField {
            bytes: &self.bytes,
            stream: ingest_stream(&self.project, &self.run),
            kind: ACCEPTED,
        }
    }
}

impl IngestCommand {
    /// Refuses an empty, over-long or control-character-bearing name, an over-long type or
    /// event, and sequence 0. `bytes_max` is [`EVENT_BYTES_MAX`], and an envelope's overhead
    /// more for bytes sealed for a subject.
    fn validate(&self, bytes_max: usize) -> Result<()> {
        validate::name("project", &self.project, NAME_BYTES_MAX)?;
        validate::name("run", &self.run, NAME_BYTES_MAX)?;
        validate::positive("sequence", self.sequence)?;
        validate::name("hub_project", &self.hub_project, NAME_BYTES_MAX)?;
        validate::name("home_runtime", &self.home_runtime, NAME_BYTES_MAX)?;
        validate::name("event_type", &self.event_type, EVENT_TYPE_BYTES_MAX)?;
        validate::at_most_bytes("bytes", self.bytes.len(), bytes_max)
    }

    /// The most bytes the command's `bytes` may hold: for a subject, whose bytes must be an
    /// envelope sealed for it ([`Command::sealed`] made it, or the plaintext would go in the
    /// log), the plaintext's limit and the envelope's overhead.
    fn bytes_max(&self) -> Result<usize> {
        match &self.subject {
            Some(subject) => {
                check_sealed("bytes", &self.bytes, subject)?;
                Ok(EVENT_BYTES_MAX + overhead(subject))
            }
            None => Ok(EVENT_BYTES_MAX),
        }
    }
}

impl Command for IngestCommand {
    type Outcome = IngestOutcome;

    /// An ingest naming a subject, with its bytes sealed for it into the event
    /// `ingest.accepted` of stream `ingest/<project>/<run>`, under a nonce derived from the
    /// sequence and the bytes: the same ingest sealed again is the same envelope, so the same
    /// content hash, and a retry is a duplicate.
    fn sealed(
        &self,
        seal: &mut dyn FnMut(PersonalField<'_>) -> Result<Vec<u8>>,
    ) -> Result<Option<Self>> {
        let Some(subject) = &self.subject else {
            return Ok(None);
        };
        // Refused on the plaintext, before a key is made for it.
        self.validate(EVENT_BYTES_MAX)?;
        let envelope = seal(PersonalField {
            subject,
            stream: &ingest_stream(&self.project, &self.run),
            kind: ACCEPTED,
            plaintext: &self.bytes,
            sealing: Sealing::Derived {
                context: &self.sequence.to_le_bytes(),
            },
        })?;
        Ok(Some(IngestCommand {
            bytes: envelope,
            ..self.clone()
        }))
    }

    fn decide(&self, state: &dyn TableSource) -> Result<Decision<IngestOutcome>> {
        self.validate(self.bytes_max()?)?;
        let content_hash = payload_hash(&self.bytes);
        let conflict = |reason, existing_hash| {
            Ok(Decision::nothing(IngestOutcome::Conflict {
                reason,
                existing_hash,
            }))
        };
        if let Some(held) = query::event(state, &self.project, &self.run, self.sequence)? {
            if held.content_hash == content_hash && held.hub_project == self.hub_project {
                return Ok(Decision::nothing(IngestOutcome::Duplicate { event: held }));
            }
            return conflict(IngestConflict::SequenceReused, Some(held.content_hash));
        }
        if query::project_hub(state, &self.project)?.is_some_and(|hub| hub != self.hub_project) {
            return conflict(IngestConflict::ProjectMismatch, None);
        }
        if query::run_home(state, &self.project, &self.run)?
            .is_some_and(|home| home != self.home_runtime)
        {
            return conflict(IngestConflict::HomeRuntimeMismatch, None);
        }
        let event = IngestEvent::Accepted(Accepted {
            project: self.project.clone(),
            run: self.run.clone(),
            sequence: self.sequence,
            hub_project: self.hub_project.clone(),
            home_runtime: self.home_runtime.clone(),
            event_type: self.event_type.clone(),
            content_hash: content_hash.0,
            bytes: self.bytes.clone(),
        });
        let held = IngestedEvent {
            project: self.project.clone(),
            run: self.run.clone(),
            sequence: self.sequence,
            hub_project: self.hub_project.clone(),
            home_runtime: self.home_runtime.clone(),
            event_type: self.event_type.clone(),
            content_hash,
            received_at_ms: self.received_at_ms,
            bytes: self.bytes.clone(),
        };
        Ok(Decision::event(
            ingest_stream(&self.project, &self.run),
            self.received_at_ms,
            event,
            IngestOutcome::Accepted { event: held },
        ))
    }
}
