//! What a record of a built-in domain says: its payload decoded into the event of its domain,
//! for people and for other languages (the command line's `log` and `history`, Node's
//! `decodeEvent` and `history`). Each domain's event enum does the decoding, so a new kind
//! needs no change here; a new domain needs its enum named once, below.

use serde::Serialize;

use crate::consumers::events::ConsumerEvent;
use crate::error::Result;
use crate::event::DomainEvent;
use crate::ingest::events::IngestEvent;
use crate::leases::events::LeaseEvent;
use crate::outbox::events::OutboxEvent;
use crate::record::Record;
use crate::registry::events::RegistryEvent;
use crate::runs::events::RunEvent;

/// The event of a built-in domain a record holds, serialised as its payload struct's fields
/// in declaration order (the kind is the record's).
///
/// ```
/// # fn main() -> annals::Result<()> {
/// # let dir = tempfile::tempdir()?;
/// let store = annals::Store::open(dir.path().join("log.redb"))?;
/// let _ = store.execute(&annals::leases::LeaseCommand::Acquire {
///     resource: "deploy".into(), holder: "agent-7".into(), ttl_ms: 10, now_ms: 1,
/// })?;
/// let record = store.snapshot()?.get(annals::Position(0))?.unwrap();
/// let event = annals::audit::BuiltInEvent::from_record(&record)?.unwrap();
/// let fields = serde_json::to_value(&event).unwrap();
/// assert_eq!(fields["holder"], "agent-7");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum BuiltInEvent {
    /// The registry's.
    Registry(RegistryEvent),
    /// The leases'.
    Leases(LeaseEvent),
    /// The outbox's.
    Outbox(OutboxEvent),
    /// The runs'.
    Runs(RunEvent),
    /// The consumers'.
    Consumers(ConsumerEvent),
    /// The ingest's.
    Ingest(IngestEvent),
}

impl BuiltInEvent {
    /// The event `record` holds: `Ok(None)` for a kind no built-in domain owns (a program's
    /// own), an error ([`crate::Error::UndecodableEvent`]) for a built-in kind whose payload
    /// does not decode (an unknown schema, damaged bytes).
    pub fn from_record(record: &Record) -> Result<Option<BuiltInEvent>> {
        fn of<E: DomainEvent>(
            record: &Record,
            wrap: fn(E) -> BuiltInEvent,
        ) -> Result<Option<BuiltInEvent>> {
            Ok(E::from_record(record)?.map(wrap))
        }
        for decode in [
            |record: &Record| of(record, BuiltInEvent::Registry),
            |record: &Record| of(record, BuiltInEvent::Leases),
            |record: &Record| of(record, BuiltInEvent::Outbox),
            |record: &Record| of(record, BuiltInEvent::Runs),
            |record: &Record| of(record, BuiltInEvent::Consumers),
            |record: &Record| of(record, BuiltInEvent::Ingest),
        ] {
            if let Some(event) = decode(record)? {
                return Ok(Some(event));
            }
        }
        Ok(None)
    }
}
