//! Consumer events: what the consumers projection records. Kinds start with `consumer.`;
//! `schema/EVENTS.md` specifies each payload.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::event::{DomainEvent, EventKind, decode_payload, encode_payload, unknown_schema};
use crate::record::Record;

/// A consumer has handled every record up to and including `position`, whose record hash is
/// `hash`. The time is the record's `at_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpointed {
    /// The consumer's name.
    pub consumer: String,
    /// The position of the last record it handled.
    pub position: u64,
    /// That record's hash.
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub hash: [u8; 32],
}

/// Every consumer event.
///
/// Serialised as its payload struct alone (the kind is the record's), for the CLI's JSON.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ConsumerEvent {
    /// `consumer.checkpointed`
    Checkpointed(Checkpointed),
}

/// Kind of [`ConsumerEvent::Checkpointed`].
pub const CHECKPOINTED: &str = "consumer.checkpointed";

impl DomainEvent for ConsumerEvent {
    const CATALOGUE: &'static [EventKind] = &[EventKind {
        kind: CHECKPOINTED,
        schema: 1,
    }];

    fn kind(&self) -> &'static str {
        match self {
            ConsumerEvent::Checkpointed(_) => CHECKPOINTED,
        }
    }

    fn payload(&self) -> Vec<u8> {
        match self {
            ConsumerEvent::Checkpointed(e) => encode_payload(e),
        }
    }

    fn from_record(record: &Record) -> Result<Option<Self>> {
        let event = match (record.kind.as_str(), record.schema) {
            (CHECKPOINTED, 1) => ConsumerEvent::Checkpointed(decode_payload(record)?),
            (kind, _) if Self::CATALOGUE.iter().any(|e| e.kind == kind) => {
                return Err(unknown_schema(record));
            }
            _ => return Ok(None),
        };
        Ok(Some(event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The payload bytes `schema/EVENTS.md` describes.
    #[test]
    fn the_payload_is_encoded_as_the_schema_describes() {
        let event = ConsumerEvent::Checkpointed(Checkpointed {
            consumer: "ab".into(),
            position: 0x0102,
            hash: [7; 32],
        });
        let mut expected = vec![2, 0, 0, 0, 0, 0, 0, 0, b'a', b'b'];
        expected.extend([2, 1, 0, 0, 0, 0, 0, 0]);
        expected.extend([7; 32]);
        assert_eq!(event.payload(), expected);
    }
}
