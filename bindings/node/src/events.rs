//! Built-in events decoded for JavaScript: `decodeEvent(record)` and `store.history(entity)`.
//! The decoding is the crate's (`annals::BuiltInEvent`, as the command line's `log` shows
//! events); here the fields are only spelled as JavaScript spells them (`ttlMs`).

use annals::{BuiltInEvent, Digest, Direction, Entity, Position, Record, StreamVersion};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::convert::record_js;
use crate::erasure::Opener;
use crate::error::{invalid, js_name, to_js};
use crate::{LogRecord, Store};

/// What decoding a record's event needs of it: a `LogRecord` has these fields.
#[napi(object)]
pub struct EventBytes {
    /// The record's kind.
    pub kind: String,
    /// Its payload's schema version.
    pub schema: u32,
    /// Its payload.
    pub payload: Buffer,
}

/// A record of an entity's history, with its event decoded when a built-in domain owns it.
#[napi(object)]
pub struct HistoryEntry {
    /// The record.
    pub record: LogRecord,
    /// Its event's fields (as `decodeEvent` gives them), or absent for a kind of the program's
    /// own or one that did not decode.
    pub event: Option<Value>,
    /// Why a built-in kind's payload did not decode (an unknown schema, damaged bytes).
    pub undecodable: Option<String>,
}

/// `value` with every object key spelled as JavaScript spells it.
fn camel_cased(value: Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .map(|(key, value)| (js_name(&key), camel_cased(value)))
                .collect::<Map<_, _>>(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(camel_cased).collect()),
        other => other,
    }
}

/// The event `record` holds, as JavaScript reads it: `Ok(None)` for a kind of the program's
/// own.
fn decoded(record: &Record) -> annals::Result<Option<Value>> {
    Ok(BuiltInEvent::from_record(record)?.map(|event| {
        // An event is plain data with string keys: it always serialises.
        camel_cased(serde_json::to_value(event).unwrap_or(Value::Null))
    }))
}

/// The event a record of a built-in domain holds, its fields as JavaScript spells them
/// (`lease.acquired`: `{ resource, holder, token, ttlMs, … }`; integers are numbers), or
/// `null` for a kind no built-in domain owns. A built-in kind whose payload does not decode
/// throws `CORRUPT`.
#[napi]
pub fn decode_event(record: EventBytes) -> napi::Result<Option<Value>> {
    let schema =
        u16::try_from(record.schema).map_err(|_| invalid("schema", "must be at most 65535"))?;
    // Only the kind, the schema and the payload are read in decoding.
    let record = Record {
        position: Position(0),
        stream: String::new(),
        version: StreamVersion(0),
        kind: record.kind,
        schema,
        at_ms: 0,
        idempotency_key: None,
        payload: record.payload.to_vec(),
        payload_hash: Digest([0; 32]),
        prev: Digest([0; 32]),
        hash: Digest([0; 32]),
    };
    decoded(&record).map_err(to_js)
}

#[napi]
impl Store {
    /// Every record that touched `entity`, in log order, each with its event decoded: the
    /// entity as `annals history` spells it (`lease:<resource>`, `lane:<lane>/<key>`,
    /// `outbox:<key>`, `run:<id>`, `registry:<handle>`, `setting:<key>`,
    /// `consumer:<name>`, `ingest:<project>/<run>`, `stream:<name>`).
    #[napi]
    pub fn history(&self, entity: String) -> napi::Result<Vec<HistoryEntry>> {
        let entity =
            Entity::parse(&entity).map_err(|error| invalid("entity", &error.to_string()))?;
        let streams = entity.streams();
        let records = self.read_log(|log, end| {
            crate::view::before(
                annals::history(log, &streams, Direction::Forward)?,
                Direction::Forward,
                end,
            )
            .collect::<annals::Result<Vec<_>>>()
        })?;
        self.with(|store| {
            let mut opener = Opener::new(store);
            records
                .into_iter()
                .map(|record| {
                    let opened = opener.open(record).map_err(to_js)?;
                    // An erased payload has no event to decode.
                    let (event, undecodable) = match opened.erased {
                        true => (None, None),
                        false => match decoded(&opened.record) {
                            Ok(event) => (event, None),
                            Err(error) => (None, Some(error.to_string())),
                        },
                    };
                    Ok(HistoryEntry {
                        record: record_js(opened),
                        event,
                        undecodable,
                    })
                })
                .collect()
        })
    }
}
