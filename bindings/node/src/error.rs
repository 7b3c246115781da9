//! annals' errors as JavaScript errors. napi-rs throws an `Error` whose message is what the
//! binding gives it; the binding gives `annals:` and a JSON object (`code`, `message`,
//! `fields`), which `lib.js` turns into an `AnnalsError` with a stable `code` and the fields
//! the Rust error carries. Every code is one of README's table (test/codes.test.js holds them
//! equal), and a field is named as JavaScript spells it (`ttlMs`, not `ttl_ms`).

use annals::{AppendError, ArchiveError, Error, OpenError, StoreError, WriterError};
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

/// An error of `code` with `message` and `fields` (a JSON object, merged into the error by
/// `lib.js`).
pub fn coded(code: &str, message: &str, fields: Value) -> napi::Error {
    let payload = json!({ "code": code, "message": message, "fields": fields });
    napi::Error::new(napi::Status::GenericFailure, format!("{PREFIX}{payload}"))
}

/// A value the caller passed that the binding cannot convert.
pub fn invalid(field: &str, problem: &str) -> napi::Error {
    coded(
        "INVALID_ARGUMENT",
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

fn describe(error: &Error) -> (&'static str, Value) {
    match error {
        Error::Append(AppendError::WrongExpectedVersion { .. }) => {
            ("WRONG_EXPECTED_VERSION", json!({}))
        }
        Error::Append(AppendError::Conflict { key, position }) => (
            "IDEMPOTENCY_CONFLICT",
            json!({ "key": key, "position": position.0.to_string() }),
        ),
        Error::Append(AppendError::Limit(limit)) | Error::Config(limit) => {
            ("LIMIT", limit_fields(limit))
        }
        Error::Append(_) => ("APPEND_REFUSED", json!({})),
        Error::Store(StoreError::Fenced { .. }) => ("FENCED", json!({})),
        Error::Store(StoreError::ReservedKind { .. }) => ("RESERVED_KIND", json!({})),
        Error::Store(_) => ("REFUSED", json!({})),
        Error::Open(OpenError::Held { .. }) => ("HELD", json!({})),
        Error::Open(OpenError::Missing { path }) => {
            ("NOT_FOUND", json!({ "path": path.display().to_string() }))
        }
        Error::Open(OpenError::NotAnnalsLog { path, .. }) => {
            ("NOT_A_LOG", json!({ "path": path.display().to_string() }))
        }
        Error::Open(OpenError::NeedsUpgrade { .. }) => ("NEEDS_UPGRADE", json!({})),
        Error::Open(_) => ("OPEN_FAILED", json!({})),
        Error::Corrupt { position, .. } => {
            ("CORRUPT", json!({ "position": position.0.to_string() }))
        }
        Error::CorruptValue { .. }
        | Error::CorruptMeta { .. }
        | Error::DamagedFile { .. }
        | Error::CorruptProjection { .. }
        | Error::UndecodableEvent { .. }
        | Error::Projection(annals::ProjectionError::Invariant { .. })
        // The log under a consumer's checkpoint is not the log it read.
        | Error::Consumer(_) => ("CORRUPT", json!({})),
        Error::InvalidCommand { .. } => ("INVALID_COMMAND", json!({})),
        // A proof asked of a size or position the log does not have.
        Error::Audit(_) => ("INVALID_ARGUMENT", json!({})),
        Error::ReadOnly => ("READ_ONLY", json!({})),
        Error::Subscription(_) => ("SUBSCRIPTION_LOST", json!({})),
        Error::Writer(WriterError::Closed) => ("CLOSED", json!({})),
        Error::Writer(WriterError::Batch(inner)) => describe(inner),
        Error::Writer(WriterError::InvalidOption { max, .. }) => {
            ("INVALID_ARGUMENT", json!({ "limit": max }))
        }
        Error::Archive(ArchiveError::Archived {
            position,
            before,
            archive,
        }) => (
            "ARCHIVED",
            json!({
                "position": position.0.to_string(),
                "before": before.0.to_string(),
                "archive": archive,
            }),
        ),
        Error::Archive(ArchiveError::NotInCut { projection, before }) => (
            "NOT_IN_CUT",
            json!({ "projection": projection, "before": before.0.to_string() }),
        ),
        Error::Archive(_) => ("ARCHIVE_REFUSED", json!({})),
        Error::Journal(annals::JournalError::Unsettled { .. }) => ("HELD", json!({})),
        Error::Journal(
            annals::JournalError::Poisoned { .. } | annals::JournalError::Unusable { .. },
        ) => ("IO", json!({})),
        Error::Journal(_) => ("CORRUPT", json!({})),
        Error::NoSpace { path } => ("IO", json!({ "path": path.display().to_string() })),
        // A missing folder is what `NOT_FOUND` means elsewhere; the rest is a path that must
        // not be written.
        Error::OutputPath(refused @ annals::OutputPathError::NoFolder { .. }) => (
            "NOT_FOUND",
            json!({ "path": refused.path().display().to_string() }),
        ),
        Error::OutputPath(refused) => (
            "OUTPUT_PATH",
            json!({ "path": refused.path().display().to_string() }),
        ),
        Error::Io(_) | Error::Storage(_) => ("IO", json!({})),
        // A writer's job that panicked or whose answer was lost, a projection registered
        // wrongly, signing, export, and what a later annals adds: none is the caller's to
        // fix, and none has a code of its own.
        _ => ("INTERNAL", json!({})),
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
