//! What a record's payload says, for people: a built-in event decoded into its fields through
//! its domain's event enum (so a new kind needs no change here), else JSON when the payload
//! is JSON, text when it is UTF-8, else hex. A built-in kind whose payload does not decode (an
//! unknown schema, damaged bytes) falls back to the same rules and says why.

use serde::Serialize;
use serde_json::value::Value;

use crate::consumers::events::ConsumerEvent;
use crate::event::DomainEvent;
use crate::hash::hex;
use crate::leases::events::LeaseEvent;
use crate::outbox::events::OutboxEvent;
use crate::record::Record;
use crate::registry::events::RegistryEvent;
use crate::runs::events::RunEvent;

/// A built-in event, serialised as its payload struct's fields in declaration order.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum BuiltIn {
    Registry(RegistryEvent),
    Leases(LeaseEvent),
    Outbox(OutboxEvent),
    Runs(RunEvent),
    Consumers(ConsumerEvent),
}

/// A payload as the command line shows it.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Payload<'a> {
    /// A built-in event's fields.
    Event(BuiltIn),
    /// A payload that parses as JSON.
    Json(Value),
    /// A UTF-8 payload that is not JSON.
    Text(&'a str),
    /// Anything else (or `--raw`), as lower-case hex.
    Hex(String),
}

impl Payload<'_> {
    /// How `payload` spells the bytes in `--json`: `event`, `json`, `utf8` or `hex`.
    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Payload::Event(_) => "event",
            Payload::Json(_) => "json",
            Payload::Text(_) => "utf8",
            Payload::Hex(_) => "hex",
        }
    }

    /// One line of text: compact JSON for events and JSON, a JSON string for text (so quotes,
    /// newlines and control characters are escaped), `hex:…` for the rest.
    pub(crate) fn text(&self) -> String {
        match self {
            Payload::Event(_) | Payload::Json(_) | Payload::Text(_) => {
                // Serialising a decoded payload or a string to JSON cannot fail: every map
                // key is a string.
                serde_json::to_string(self).unwrap_or_default()
            }
            Payload::Hex(digits) => format!("hex:{digits}"),
        }
    }
}

/// A record's payload decoded, and why a built-in kind's payload did not decode (the
/// payload is then shown by the general rules).
pub(crate) fn decode(record: &Record) -> (Payload<'_>, Option<String>) {
    let event = builtin::<RegistryEvent>(record, BuiltIn::Registry)
        .or_else(|| builtin::<LeaseEvent>(record, BuiltIn::Leases))
        .or_else(|| builtin::<OutboxEvent>(record, BuiltIn::Outbox))
        .or_else(|| builtin::<RunEvent>(record, BuiltIn::Runs))
        .or_else(|| builtin::<ConsumerEvent>(record, BuiltIn::Consumers));
    match event {
        Some(Ok(event)) => (Payload::Event(event), None),
        Some(Err(why)) => (general(&record.payload), Some(why)),
        None => (general(&record.payload), None),
    }
}

/// The stored bytes, as `--raw` shows them.
pub(crate) fn raw(record: &Record) -> Payload<'_> {
    Payload::Hex(hex(&record.payload))
}

/// `record` as an event of domain `E`: `None` when the kind is not one of `E`'s.
fn builtin<E: DomainEvent>(
    record: &Record,
    wrap: fn(E) -> BuiltIn,
) -> Option<Result<BuiltIn, String>> {
    match E::from_record(record) {
        Ok(Some(event)) => Some(Ok(wrap(event))),
        Ok(None) => None,
        Err(error) => Some(Err(error.to_string())),
    }
}

/// JSON, else text, else hex.
fn general(bytes: &[u8]) -> Payload<'_> {
    match std::str::from_utf8(bytes) {
        Ok(text) => match serde_json::from_str::<Value>(text) {
            // An empty payload is not JSON; it shows as the empty string.
            Ok(value) => Payload::Json(value),
            Err(_) => Payload::Text(text),
        },
        Err(_) => Payload::Hex(hex(bytes)),
    }
}
