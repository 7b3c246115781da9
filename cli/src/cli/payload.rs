//! What a record's payload says, for people: a built-in event decoded into its fields through
//! its domain's event enum (so a new kind needs no change here), else JSON when the payload
//! is JSON, text when it is UTF-8, else hex. A built-in kind whose payload does not decode (an
//! unknown schema, damaged bytes) falls back to the same rules and says why.

use serde::Serialize;
use serde_json::value::Value;

use annals::Record;
use annals::audit::BuiltInEvent;
use annals::display::hex;

/// A payload as the command line shows it.
#[derive(Serialize)]
#[serde(untagged)]
pub(crate) enum Payload<'a> {
    /// A built-in event's fields.
    Event(Box<BuiltInEvent>),
    /// A payload that parses as JSON (re-encoded compactly, object keys in order).
    Json(Value),
    /// A UTF-8 payload that is not JSON.
    Text(&'a str),
    /// Anything else (or `--raw`), as lower-case hex.
    Hex(String),
    /// A personal payload opened with its subject's key: `data` as JSON, text or hex, as
    /// `encoding` says.
    Personal {
        /// Its subject.
        subject: &'a str,
        /// `json`, `utf8` or `hex`: how `data` spells the plaintext.
        encoding: &'static str,
        /// The plaintext.
        data: Value,
    },
    /// A personal payload whose subject was erased (or whose key this log's key store does
    /// not hold): never its ciphertext.
    Erased {
        /// Its subject.
        subject: &'a str,
        /// Always true: the payload is gone.
        erased: bool,
    },
}

impl Payload<'_> {
    /// How `payload` spells the bytes in `--json`: `event`, `json`, `utf8` or `hex`.
    pub(crate) fn encoding(&self) -> &'static str {
        match self {
            Payload::Event(_) => "event",
            Payload::Json(_) => "json",
            Payload::Text(_) => "utf8",
            Payload::Hex(_) => "hex",
            Payload::Personal { .. } => "personal",
            Payload::Erased { .. } => "erased",
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
            Payload::Personal {
                subject,
                encoding,
                data,
            } => {
                let shown = match (encoding, data) {
                    (&"hex", Value::String(digits)) => format!("hex:{digits}"),
                    _ => serde_json::to_string(data).unwrap_or_default(),
                };
                format!("personal({}) {shown}", super::render::word(subject))
            }
            Payload::Erased { subject, .. } => {
                format!("erased({})", super::render::word(subject))
            }
        }
    }
}

/// A record's payload decoded, given what the log's key store makes of it (`opened`,
/// `Store::payload`), and why a built-in kind's payload did not decode (the payload is then
/// shown by the general rules).
pub(crate) fn decode<'a>(
    record: &'a Record,
    opened: annals::erasure::Payload<'a>,
) -> (Payload<'a>, Option<String>) {
    match opened {
        annals::erasure::Payload::Personal { subject, data } => {
            let (encoding, data) = match general(&data) {
                Payload::Json(value) => ("json", value),
                Payload::Text(text) => ("utf8", Value::String(text.to_owned())),
                _ => ("hex", Value::String(hex(&data))),
            };
            let personal = Payload::Personal {
                subject,
                encoding,
                data,
            };
            return (personal, None);
        }
        annals::erasure::Payload::Erased { subject } => {
            let erased = true;
            return (Payload::Erased { subject, erased }, None);
        }
        _ => {}
    }
    let event = BuiltInEvent::from_record(record);
    match event {
        Ok(Some(event)) => (Payload::Event(Box::new(event)), None),
        Ok(None) => (general(&record.payload), None),
        Err(why) => (general(&record.payload), Some(why.to_string())),
    }
}

/// The stored bytes, as `--raw` shows them.
pub(crate) fn raw(record: &Record) -> Payload<'_> {
    Payload::Hex(hex(&record.payload))
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

#[cfg(test)]
mod tests {
    use super::decode;
    use annals::log::Digest;
    use annals::{Position, Record, log::StreamVersion};

    fn record(kind: &str, schema: u16, payload: &[u8]) -> Record {
        Record {
            position: Position(0),
            stream: "s".into(),
            version: StreamVersion(0),
            kind: kind.into(),
            schema,
            at_ms: 0,
            idempotency_key: None,
            payload: payload.to_vec(),
            payload_hash: Digest([0; 32]),
            prev: Digest([0; 32]),
            hash: Digest([0; 32]),
        }
    }

    // The store refuses to write such records (the projections cannot apply them), so only a
    // log from a newer build or a damaged one holds them; they are shown, not hidden.
    #[test]
    fn a_built_in_kind_that_does_not_decode_falls_back_and_says_why() {
        let check = |kind: &str, schema: u16, bytes: &[u8], encoding: &str, why: &str| {
            let record = record(kind, schema, bytes);
            let (payload, undecodable) =
                decode(&record, annals::erasure::Payload::Plain(&record.payload));
            assert_eq!(payload.encoding(), encoding, "{kind}");
            let undecodable = undecodable.unwrap_or_default();
            assert!(undecodable.contains(why), "{kind}: {undecodable}");
        };
        check(
            "lease.acquired",
            9,
            b"{\"a\":1}",
            "json",
            "unknown schema version",
        );
        check(
            "consumer.checkpointed",
            1,
            b"short",
            "utf8",
            "does not decode",
        );
        check(
            "outbox.enqueued",
            1,
            &[0xff, 0xff],
            "hex",
            "does not decode",
        );
    }

    #[test]
    fn kinds_no_domain_owns_are_not_undecodable() {
        let record = record("lease", 1, b"x");
        let (payload, undecodable) =
            decode(&record, annals::erasure::Payload::Plain(&record.payload));
        assert_eq!((payload.encoding(), undecodable), ("utf8", None));
    }
}
