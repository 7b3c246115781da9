//! Ingest events: what the ingest projection records. Kinds start with `ingest.`;
//! `schema/EVENTS.md` specifies each payload.

use serde::{Deserialize, Serialize};

use crate::domain_events;

/// A runtime's event was accepted under (`project`, `run`, `sequence`). The receipt time is
/// the record's `at_ms`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    /// The runtime's project.
    pub project: String,
    /// The run within the project.
    pub run: String,
    /// The event's sequence within the run, from 1.
    pub sequence: u64,
    /// The hub project that holds the project's events.
    pub hub_project: String,
    /// The runtime the run lives on.
    pub home_runtime: String,
    /// The runtime's name for the event's type.
    pub event_type: String,
    /// blake3 of `bytes`.
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub content_hash: [u8; 32],
    /// The event as the runtime sent it.
    #[serde(serialize_with = "crate::event::hex_bytes")]
    pub bytes: Vec<u8>,
}

domain_events! {
    /// Every ingest event.
    pub enum IngestEvent {
        /// `ingest.accepted`
        Accepted(Accepted) = pub ACCEPTED = "ingest.accepted", schema 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::DomainEvent;

    /// The payload bytes `schema/EVENTS.md` describes.
    #[test]
    fn the_payload_is_encoded_as_the_schema_describes() {
        let event = IngestEvent::Accepted(Accepted {
            project: "p".into(),
            run: "r".into(),
            sequence: 0x0102,
            hub_project: "h".into(),
            home_runtime: "t".into(),
            event_type: "e".into(),
            content_hash: [7; 32],
            bytes: vec![9, 8],
        });
        let text = |byte: u8| {
            let mut field = vec![1, 0, 0, 0, 0, 0, 0, 0];
            field.push(byte);
            field
        };
        let mut expected = Vec::new();
        expected.extend(text(b'p'));
        expected.extend(text(b'r'));
        expected.extend([2, 1, 0, 0, 0, 0, 0, 0]);
        expected.extend(text(b'h'));
        expected.extend(text(b't'));
        expected.extend(text(b'e'));
        expected.extend([7; 32]);
        expected.extend([2, 0, 0, 0, 0, 0, 0, 0, 9, 8]);
        assert_eq!(event.payload(), expected);
    }
}
