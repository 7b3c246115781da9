//! The shared shape of domain events: a payload struct per kind, encoded with serde and the
//! format's bincode configuration, decoded with bounds, and listed in a catalogue that
//! `schema/EVENTS.md` must match.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Result};
use crate::record::{NewEvent, Record, bincode_config, decode_bounded};

/// One entry of an event catalogue: a kind and the payload schema version the code writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventKind {
    /// The kind, e.g. `lease.acquired`.
    pub kind: &'static str,
    /// The schema version written now; older versions are upcast when read.
    pub schema: u16,
}

/// A domain's event enum.
pub trait DomainEvent: Sized {
    /// Every kind of the domain with the schema version written now.
    const CATALOGUE: &'static [EventKind];
    /// This event's kind.
    fn kind(&self) -> &'static str;
    /// The payload bytes of this event at the current schema.
    fn payload(&self) -> Vec<u8>;
    /// The event in `record`: `Ok(None)` when the kind is not of this domain, an error when
    /// it is but the payload does not decode (or has an unknown schema).
    fn from_record(record: &Record) -> Result<Option<Self>>;

    /// The event as a [`NewEvent`] at `at_ms`, with the catalogue's schema version.
    fn to_new_event(&self, at_ms: u64) -> NewEvent {
        let kind = self.kind();
        let schema = Self::CATALOGUE
            .iter()
            .find(|entry| entry.kind == kind)
            .map_or(1, |entry| entry.schema);
        NewEvent::new(kind, at_ms, self.payload()).with_schema(schema)
    }
}

/// Encodes a payload struct.
pub fn encode_payload<T: Serialize>(payload: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(payload, bincode_config())
        .expect("domain payload structs always encode")
}

/// Decodes a payload struct from `record`, refusing trailing bytes; allocations are bounded
/// by the payload's size ([`crate::record::decode_bounded`]).
pub fn decode_payload<T: DeserializeOwned>(record: &Record) -> Result<T> {
    decode_bounded(&record.payload).map_err(|detail| Error::UndecodableEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        detail,
    })
}

/// The error for a schema version a decoder does not know.
pub fn unknown_schema(record: &Record) -> Error {
    Error::UndecodableEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        detail: "unknown schema version".into(),
    }
}
