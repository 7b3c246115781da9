//! annals' errors as JavaScript errors. napi-rs throws an `Error` whose message is what the
//! binding gives it; the binding gives `annals:` and a JSON object (`code`, `message`,
//! `fields`), which `lib.js` turns into an `AnnalsError` with a stable `code` and the fields
//! the Rust error carries. Every code is one of README's table (test/codes.test.js holds them
//! equal), and a field is named as JavaScript spells it (`ttlMs`, not `ttl_ms`).

use annals::{AppendError, ArchiveError, Error, ErrorKind, OpenError, WriterError};
use serde_json::{Value, json};

/// The prefix of every message the binding throws, for `lib.js` to recognise.
const PREFIX: &str = "annals:";

/// The error a JavaScript caller sees for `error`.
pub fn to_js(error: Error) -> napi::Error {
    let (code, message, fields) = parts(&error);
    coded(code, &message, fields)
}

/// The error a JavaScript caller sees for `error`, met working on the file at `path`: the
/// path is named even where the error does not carry it (an I/O error of the file system).
pub fn at_path(error: Error, path: &str) -> napi::Error {
    let (code, mut message, mut fields) = parts(&error);
    if fields.get("path").is_none() {
        fields["path"] = json!(path);
        if !message.contains(path) {
            message = format!("{path}: {message}");
        }
    }
    coded(code, &message, fields)
}

/// The codes the binding throws of its own, beside the library's kinds (`lib.js` throws
/// `UNSAFE_INTEGER` and `INVALID_ARGUMENT` of its own too).
pub const OWN_CODES: [&str; 2] = ["IN_TRANSACTION", "UNSAFE_INTEGER"];

/// A call that cannot run while a transaction is open, or a transaction whose session ended.
pub const IN_TRANSACTION: &str = OWN_CODES[0];

/// Every code an `AnnalsError` can carry: the library's kinds, then the binding's own
/// (`lib.d.ts`'s `ErrorCode` is generated from it).
pub fn error_codes() -> Vec<String> {
    ErrorKind::ALL
        .iter()
        .map(|kind| kind.code())
        .chain(OWN_CODES)
        .map(str::to_owned)
        .collect()
}

/// An error of `code` with `message` and `fields` (a JSON object, merged into the error by
/// `lib.js`).
pub fn coded(code: &str, message: &str, fields: Value) -> napi::Error {
    let payload = json!({ "code": code, "message": message, "fields": fields });
    napi::Error::new(napi::Status::GenericFailure, format!("{PREFIX}{payload}"))
}

/// A value the caller passed that the binding cannot convert.
pub fn invalid(field: &str, problem: &str) -> napi::Error {
    coded(
        ErrorKind::InvalidArgument.code(),
        &format!("{field}: {problem}"),
        json!({ "field": field }),
    )
}

/// The code, the message and the fields of `error`, its field renamed as JavaScript spells it.
fn parts(error: &Error) -> (&'static str, String, Value) {
    let (code, mut fields) = describe(error);
    let mut message = error.to_string();
    if let Some(field) = field_of(error) {
        let spelled = js_name(field);
        message = message.replacen(field, &spelled, 1);
        fields["field"] = json!(spelled);
    }
    (code, message, fields)
}

/// `ttl_ms` as JavaScript spells it: `ttlMs` (`backoff.base_ms`: `backoff.baseMs`).
pub(crate) fn js_name(field: &str) -> String {
    let mut spelled = String::with_capacity(field.len());
    let mut upper = false;
    for letter in field.chars() {
        match letter {
            '_' => upper = true,
            _ if upper => {
                spelled.extend(letter.to_uppercase());
                upper = false;
            }
            _ => spelled.push(letter),
        }
    }
    spelled
}

/// The field a refusal names, as the crate spells it.
fn field_of(error: &Error) -> Option<&'static str> {
    match error {
        Error::InvalidCommand { field, .. } => Some(field),
        Error::Append(AppendError::Limit(limit)) | Error::Config(limit) => match limit {
            annals::LimitError::TooLong { field, .. }
            | annals::LimitError::TooMany { field, .. }
            | annals::LimitError::Empty { field }
            | annals::LimitError::Misconfigured { field, .. } => Some(field.name()),
            _ => None,
        },
        Error::Writer(WriterError::InvalidOption { field, .. }) => Some(field),
        Error::Writer(WriterError::Batch(inner)) => field_of(inner),
        _ => None,
    }
}

/// `error`'s code (the library's classification, which the command line's kinds also come
/// from) and the fields it carries beside its message.
fn describe(error: &Error) -> (&'static str, Value) {
    (error.kind().code(), fields_of(error))
}

/// What `error` carries that a program may act on, beside its message: a key, a position, a
/// path, a limit.
fn fields_of(error: &Error) -> Value {
    let path = |path: &std::path::Path| json!({ "path": path.display().to_string() });
    match error {
        Error::Append(AppendError::Conflict { key, position }) => {
            json!({ "key": key, "position": position.0.to_string() })
        }
        Error::Append(AppendError::Limit(limit)) | Error::Config(limit) => limit_fields(limit),
        Error::Open(OpenError::Missing { path: missing }) => path(missing),
        Error::Open(OpenError::NotAnnalsLog { path: file, .. }) => path(file),
        Error::Corrupt { position, .. } => json!({ "position": position.0.to_string() }),
        Error::Writer(WriterError::Batch(inner)) => fields_of(inner),
        Error::Writer(WriterError::InvalidOption { max, .. }) => json!({ "limit": max }),
        Error::Archive(ArchiveError::Archived {
            position,
            before,
            archive,
        }) => json!({
            "position": position.0.to_string(),
            "before": before.0.to_string(),
            "archive": archive,
        }),
        Error::Archive(ArchiveError::NotInCut { projection, before }) => {
            json!({ "projection": projection, "before": before.0.to_string() })
        }
        Error::NoSpace { path: device } => path(device),
        Error::OutputPath(refused) => path(refused.path()),
        _ => json!({}),
    }
}

fn limit_fields(limit: &annals::LimitError) -> Value {
    match limit {
        annals::LimitError::TooLong { max, .. } | annals::LimitError::TooMany { max, .. } => {
            json!({ "limit": max })
        }
        _ => json!({}),
    }
}
