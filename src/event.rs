//! The shared shape of domain events: a payload struct per kind, encoded with serde and the
//! format's bincode configuration, decoded with bounds, and listed in a catalogue that
//! `schema/EVENTS.md` must match.

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};

use crate::error::{Error, PayloadProblem, Result};
use crate::record::{NewEvent, Record, decode_bounded};

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
    crate::record::encode_serde(payload).expect("domain payload structs always encode")
}

/// Decodes a payload struct from `record`, refusing trailing bytes; allocations are bounded
/// by the payload's size ([`crate::record::decode_bounded`]).
pub fn decode_payload<T: DeserializeOwned>(record: &Record) -> Result<T> {
    decode_bounded(&record.payload).map_err(|cause| Error::UndecodableEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        problem: PayloadProblem::Undecodable { cause },
    })
}

/// The error for a schema version a decoder does not know.
pub fn unknown_schema(record: &Record) -> Error {
    Error::UndecodableEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        problem: PayloadProblem::UnknownSchema,
    }
}

/// The serde form of the bytes of a command or an outcome (`#[serde(with =
/// "crate::event::bytes")]`): the format's, which an event to append (`NewEvent`) takes too.
pub(crate) use annals_format::record::bytes;

/// A `serialize_with` for payload bytes: serde's bytes for a binary format (bincode, where
/// they encode exactly as the sequence of `u8` they were before, a length then the bytes, so the
/// stored format is untouched; the Node package, where they are a `Buffer`), and for a
/// human-readable format (the CLI's JSON) the text when it is UTF-8, else `{"hex": …}`, so that
/// a reader is not handed an array of numbers.
pub(crate) fn readable_bytes<T, S>(bytes: &T, serializer: S) -> std::result::Result<S::Ok, S::Error>
where
    T: AsRef<[u8]> + Serialize,
    S: Serializer,
{
    if !serializer.is_human_readable() {
        return serializer.serialize_bytes(bytes.as_ref());
    }
    match std::str::from_utf8(bytes.as_ref()) {
        Ok(text) => serializer.serialize_str(text),
        Err(_) => {
            use serde::ser::SerializeMap;
            let mut map = serializer.serialize_map(Some(1))?;
            map.serialize_entry("hex", &crate::hash::hex(bytes.as_ref()))?;
            map.end()
        }
    }
}

/// A `serialize_with` for a hash: unchanged for the binary codec, lower-case hex for a
/// human-readable format.
pub(crate) fn hex_bytes<T, S>(bytes: &T, serializer: S) -> std::result::Result<S::Ok, S::Error>
where
    T: AsRef<[u8]> + Serialize,
    S: Serializer,
{
    if serializer.is_human_readable() {
        serializer.serialize_str(&crate::hash::hex(bytes.as_ref()))
    } else {
        bytes.serialize(serializer)
    }
}
