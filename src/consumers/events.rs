//! Consumer events: what the consumers projection records. Kinds start with `consumer.`;
//! `schema/EVENTS.md` specifies each payload.

use serde::{Deserialize, Serialize};

use crate::domain_events;

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

domain_events! {
    /// Every consumer event.
    pub enum ConsumerEvent {
        /// `consumer.checkpointed`
        Checkpointed(Checkpointed) = pub CHECKPOINTED = "consumer.checkpointed", schema 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::DomainEvent;

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
