//! Records crossing to JavaScript in bulk: a read's records packed into three values (their
//! fixed fields, their payloads, their text) that `lib.js` unpacks into `LogRecord` objects.
//!
//! An object made through N-API costs a call and an interned property name per field, and a
//! payload its own external buffer with a finaliser: about 3.5 µs a record, five times what
//! reading it costs. JavaScript builds the same objects from packed fields for a fraction of
//! that (docs: README's "What a call costs").
//!
//! The layout (little-endian `u64`s, [`FIELDS`] per record, then nothing else):
//! position, version, at_ms, schema, payload length in bytes, then the UTF-16 lengths of the
//! stream, the kind, the idempotency key and the subject ([`NO_KEY`] for none) in `text`, then
//! 1 if the payload is erased (0 if not); `text` holds each record's stream, kind, key, 64-digit
//! hash and subject in turn; `payloads` holds the payloads (a personal one's plaintext, an
//! erased one's nothing) in turn.

use crate::erasure::Opened;
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

/// The `u64` fields each record has in `fixed`.
const FIELDS: usize = 10;

/// The length that says a record has no idempotency key, or no subject.
const NO_KEY: u64 = u64::MAX;

/// Records packed for `lib.js`, which gives them as `LogRecord`s (the module's doc has the
/// layout); the package's own, not a type a program meets.
#[napi(object)]
pub struct PackedRecords {
    /// Each record's fixed fields.
    pub fixed: Buffer,
    /// Each record's payload, in turn.
    pub payloads: Buffer,
    /// Each record's stream, kind, key and hash, in turn.
    pub text: String,
}

/// How many UTF-16 code units `text` is in JavaScript.
fn utf16_length(text: &str) -> u64 {
    text.encode_utf16().count() as u64
}

/// `records` packed.
pub fn pack(records: &[Opened]) -> PackedRecords {
    let mut fixed = Vec::with_capacity(records.len() * FIELDS * 8);
    let mut payloads = Vec::with_capacity(
        records
            .iter()
            .map(|opened| opened.record.payload.len())
            .sum(),
    );
    let mut text = String::new();
    for Opened {
        record,
        subject,
        erased,
    } in records
    {
        let key = record.idempotency_key.as_deref();
        for field in [
            record.position.0,
            record.version.0,
            record.at_ms,
            u64::from(record.schema),
            record.payload.len() as u64,
            utf16_length(&record.stream),
            utf16_length(&record.kind),
            key.map_or(NO_KEY, utf16_length),
            subject.as_deref().map_or(NO_KEY, utf16_length),
            u64::from(*erased),
        ] {
            fixed.extend_from_slice(&field.to_le_bytes());
        }
        payloads.extend_from_slice(&record.payload);
        text.push_str(&record.stream);
        text.push_str(&record.kind);
        text.push_str(key.unwrap_or(""));
        text.push_str(&record.hash.to_hex());
        text.push_str(subject.as_deref().unwrap_or(""));
    }
    PackedRecords {
        fixed: fixed.into(),
        payloads: payloads.into(),
        text,
    }
}
