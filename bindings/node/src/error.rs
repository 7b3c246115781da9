//! annals' errors as JavaScript errors. napi-rs throws an `Error` whose message is what the
//! binding gives it; the binding gives `annals:` and a JSON object (`code`, `message`,
//! `fields`), which `lib.js` turns into an `AnnalsError` with a stable `code` and the fields
//! the Rust error carries.

use annals::{AppendError, ArchiveError, Error, OpenError, StoreError};

/// The prefix of every message the binding throws, for `lib.js` to recognise.
const PREFIX: &str = "annals:";

/// The error a JavaScript caller sees for `error`.
pub fn to_js(error: Error) -> napi::Error {
    let (code, fields) = describe(&error);
    coded(code, &error.to_string(), fields)
}

/// An error of `code` with `message` and `fields` (a JSON object, merged into the error by
/// `lib.js`).
pub fn coded(code: &str, message: &str, fields: serde_json::Value) -> napi::Error {
    let payload = serde_json::json!({ "code": code, "message": message, "fields": fields });
    napi::Error::new(napi::Status::GenericFailure, format!("{PREFIX}{payload}"))
}

/// A value the caller passed that the binding cannot convert.
pub fn invalid(field: &str, problem: &str) -> napi::Error {
    coded(
        "INVALID_ARGUMENT",
        &format!("{field}: {problem}"),
        serde_json::json!({ "field": field }),
    )
}

fn describe(error: &Error) -> (&'static str, serde_json::Value) {
    use serde_json::json;
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
        | Error::UndecodableEvent { .. } => ("CORRUPT", json!({})),
        Error::InvalidCommand { field, .. } => ("INVALID_COMMAND", json!({ "field": field })),
        Error::ReadOnly => ("READ_ONLY", json!({})),
        Error::Subscription(_) => ("SUBSCRIPTION_LOST", json!({})),
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
        Error::Journal(annals::JournalError::Unrecovered { from, .. }) => {
            ("NEEDS_RECOVERY", json!({ "from": from.0.to_string() }))
        }
        Error::Journal(annals::JournalError::Poisoned { .. }) => ("IO", json!({})),
        Error::Journal(_) => ("CORRUPT", json!({})),
        Error::OutputPath(refused) => (
            "OUTPUT_PATH",
            json!({ "path": refused.path().display().to_string() }),
        ),
        Error::Io(_) | Error::Storage(_) => ("IO", json!({})),
        _ => ("ANNALS", json!({})),
    }
}

fn limit_fields(limit: &annals::LimitError) -> serde_json::Value {
    match limit {
        annals::LimitError::TooLong { field, max, .. } => {
            serde_json::json!({ "field": field.to_string(), "limit": max })
        }
        annals::LimitError::TooMany { field, max, .. } => {
            serde_json::json!({ "field": field.to_string(), "limit": max })
        }
        _ => serde_json::json!({}),
    }
}
