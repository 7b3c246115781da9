//! Built-in events decoded for JavaScript: `decodeEvent(record)` and `store.history(entity)`.
//! The decoding is the crate's (`annals::audit::BuiltInEvent`, as the command line's `log` shows
//! events); the event crosses by its serde form as every outcome does (`crossing.rs`): fields
//! as JavaScript spells them (`ttlMs`), 64-bit integers `bigint` but milliseconds `number`,
//! bytes a `Buffer`.

use annals::{
    Direction, Position, Record,
    audit::BuiltInEvent,
    audit::Entity,
    log::{Digest, StreamVersion},
};
use napi::Env;
use napi::bindgen_prelude::{Buffer, Either3, Object};
use napi_derive::napi;

use crate::Store;
use crate::convert::record_js;
use crate::crossing::{Made, to_js as crossed};
use crate::erasure::Opener;
use crate::error::{invalid, to_js};

// The package's own: the three fields of a `Record` that decoding reads, so that a program may
// decode bytes it holds without a whole record.
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

// The package's own pairing: the crate's `history` gives records, and decoding each is
// `BuiltInEvent`'s; both halves cross by serde.
/// A record of an entity's history, with its event decoded when a built-in domain owns it.
#[napi(object, object_from_js = false)]
pub struct HistoryEntry {
    /// The record.
    #[napi(ts_type = "LogRecord")]
    pub record: Object<'static>,
    /// Its event's fields (as `decodeEvent` gives them), or absent for a kind of the program's
    /// own or one that did not decode.
    #[napi(ts_type = "Record<string, unknown>")]
    pub event: Option<Object<'static>>,
    /// Why a built-in kind's payload did not decode (an unknown schema, damaged bytes).
    pub undecodable: Option<String>,
}

/// The event `record` holds, crossed to JavaScript: `Ok(None)` for a kind of the program's
/// own.
fn decoded(env: &Env, record: &Record) -> Result<Option<Object<'static>>, Undecoded> {
    let Some(event) = BuiltInEvent::from_record(record).map_err(Undecoded::Event)? else {
        return Ok(None);
    };
    match crossed(env, &event).map_err(Undecoded::Crossing)? {
        Either3::A(object) => Ok(Some(object)),
        // An event is a struct: it crosses as an object.
        _ => Ok(None),
    }
}

/// Why an event did not decode: its payload, or (never, for plain data) its crossing.
enum Undecoded {
    Event(annals::Error),
    Crossing(napi::Error),
}

/// The event a record of a built-in domain holds, its fields as JavaScript spells them
/// (`lease.acquired`: `{ resource, holder, token, expiresAtMs, … }`; 64-bit integers are
/// `bigint`, milliseconds `number`, as in every outcome), or `null` for a kind no built-in
/// domain owns. A built-in kind whose payload does not decode throws `CORRUPT`.
#[napi(ts_return_type = "Record<string, unknown> | null")]
pub fn decode_event(env: Env, record: EventBytes) -> napi::Result<Made> {
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
    match decoded(&env, &record) {
        Ok(Some(event)) => Ok(Either3::A(event)),
        Ok(None) => Ok(Either3::C(napi::bindgen_prelude::Null)),
        Err(Undecoded::Event(error)) => Err(to_js(error)),
        Err(Undecoded::Crossing(error)) => Err(error),
    }
}

#[napi]
impl Store {
    /// Every record that touched `entity`, in log order, each with its event decoded: the
    /// entity as `annals history` spells it (`lease:<resource>`, `lane:<lane>/<key>`,
    /// `outbox:<key>`, `run:<id>`, `registry:<handle>`, `setting:<key>`,
    /// `consumer:<name>`, `ingest:<project>/<run>`, `stream:<name>`).
    #[napi]
    pub fn history(&self, env: Env, entity: String) -> napi::Result<Vec<HistoryEntry>> {
        let entity =
            Entity::parse(&entity).map_err(|error| invalid("entity", &error.to_string()))?;
        let streams = entity.streams();
        let records = self.read_log(|log, end| {
            crate::view::before(
                annals::audit::history(log, streams, Direction::Forward)?,
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
                        false => match decoded(&env, &opened.record) {
                            Ok(event) => (event, None),
                            Err(Undecoded::Event(error)) => (None, Some(error.to_string())),
                            Err(Undecoded::Crossing(error)) => return Err(error),
                        },
                    };
                    Ok(HistoryEntry {
                        record: record_js(&env, opened)?,
                        event,
                        undecodable,
                    })
                })
                .collect()
        })
    }
}
