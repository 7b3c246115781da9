//! Conversions between JavaScript's values and annals' types: checked, never lossy, every
//! refusal an `INVALID_ARGUMENT` naming the field.

use annals::{Direction, ExpectedVersion, log::StreamVersion};
use napi::Env;
use napi::bindgen_prelude::{BigInt, Either3, JsObjectValue, Null, Object, Unknown};

use crate::ReadOptions;
use crate::erasure::Opened;
use crate::error::invalid;

/// The largest integer a JavaScript number holds exactly.
const SAFE_INTEGER_MAX: f64 = 9_007_199_254_740_991.0;

/// A `bigint` that must be a `u64`.
pub fn u64_of(value: &BigInt, field: &str) -> napi::Result<u64> {
    let (negative, value, lossless) = value.get_u64();
    if negative || !lossless {
        return Err(invalid(field, "must be a bigint from 0 to 2^64 - 1"));
    }
    Ok(value)
}

/// A position or version given as a `bigint`.
pub fn position(value: &BigInt, field: &str) -> napi::Result<u64> {
    u64_of(value, field)
}

/// A `number` that must be a whole number from 0 to `max` (named `bound` in the refusal):
/// napi-rs's own conversions would wrap -1, 2^32 or NaN to some count instead.
fn whole(value: f64, max: f64, field: &str, bound: &str) -> napi::Result<f64> {
    if !(value.is_finite() && value >= 0.0 && value.fract() == 0.0 && value <= max) {
        return Err(invalid(
            field,
            &format!("{value} is not a whole number from 0 to {bound}"),
        ));
    }
    Ok(value)
}

/// Milliseconds (or a count as large) given as a `number`: a whole number from 0 to 2^53 - 1.
pub fn u64_of_ms(value: f64, field: &str) -> napi::Result<u64> {
    Ok(whole(value, SAFE_INTEGER_MAX, field, "2^53 - 1")? as u64)
}

/// A count given as a `number`: a whole number from 0 to 2^32 - 1.
pub fn u32_of(value: f64, field: &str) -> napi::Result<u32> {
    Ok(whole(value, f64::from(u32::MAX), field, "2^32 - 1")? as u32)
}

/// A count that may be absent.
pub fn optional_u32(value: Option<f64>, field: &str) -> napi::Result<Option<u32>> {
    value.map(|value| u32_of(value, field)).transpose()
}

/// `'any'`, `'none'`, `'exists'` or a version.
pub fn expected(value: napi::Either<String, BigInt>) -> napi::Result<ExpectedVersion> {
    match value {
        napi::Either::A(text) => match text.as_str() {
            "any" => Ok(ExpectedVersion::Any),
            "none" => Ok(ExpectedVersion::NoStream),
            "exists" => Ok(ExpectedVersion::StreamExists),
            _ => Err(invalid(
                "expected",
                "must be 'any', 'none', 'exists' or a bigint version",
            )),
        },
        napi::Either::B(version) => Ok(ExpectedVersion::Exact(StreamVersion(u64_of(
            &version, "expected",
        )?))),
    }
}

/// The events of an append: the library's `NewEvent`s, crossing by serde, a refusal naming
/// the event's place (`events[1].atMs`).
pub fn events(events: Unknown<'_>) -> napi::Result<Vec<annals::NewEvent>> {
    crate::crossing::argument(events, "events")
}

/// How many records a read gives without a `limit`.
pub(crate) const READ_LIMIT: u32 = 1000;

/// Where a read starts, which way it goes, and how many records it asks for: one past its
/// `limit`, which `lib.js` takes off again and reports as the list's `more`.
pub fn read_options(options: Option<ReadOptions>) -> napi::Result<(Option<u64>, Direction, usize)> {
    let Some(options) = options else {
        return Ok((None, Direction::Forward, READ_LIMIT as usize + 1));
    };
    let from = options
        .from
        .as_ref()
        .map(|from| u64_of(from, "from"))
        .transpose()?;
    let direction = match options.direction.as_deref() {
        None | Some("forward") => Direction::Forward,
        Some("backward") => Direction::Backward,
        Some(_) => return Err(invalid("direction", "must be 'forward' or 'backward'")),
    };
    let limit = optional_u32(options.limit, "limit")?.unwrap_or(READ_LIMIT);
    Ok((from, direction, limit as usize + 1))
}

/// A record read, its payload opened (`erasure.rs`), as JavaScript takes it (`LogRecord`): the
/// library's `Record` by its serde form, an erased payload `null`, then `subject` and `erased`
/// as `schemas()` declares them (`OPENED`).
pub fn record_js(env: &Env, opened: Opened) -> napi::Result<Object<'static>> {
    let Opened {
        record,
        subject,
        erased,
    } = opened;
    let Either3::A(mut object) = crate::crossing::to_js(env, &record)? else {
        return Err(napi::Error::from_reason(
            "a record that crossed as no object",
        ));
    };
    if erased {
        object.set_named_property("payload", Null)?;
    }
    if let Some(subject) = subject {
        object.set_named_property("subject", subject)?;
    }
    if erased {
        object.set_named_property("erased", true)?;
    }
    Ok(object)
}

/// A value of one of annals' serde enums (`'llm_call'`, `'succeeded'`, …), named by `field`.
pub fn named<T: serde::de::DeserializeOwned>(text: String, field: &str) -> napi::Result<T> {
    serde_json::from_value(serde_json::Value::String(text))
        .map_err(|error| invalid(field, &error.to_string()))
}

/// Milliseconds or a count that may be absent.
pub fn optional_ms(value: Option<f64>, field: &str) -> napi::Result<Option<u64>> {
    value.map(|value| u64_of_ms(value, field)).transpose()
}
