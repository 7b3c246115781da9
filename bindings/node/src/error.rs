//! annals' errors as JavaScript errors. The binding makes each error object itself: an `Error`
//! whose `code` is the library's kind (`annals::ErrorKind::code`, the classification the command
//! line's exit kinds come from too) or one of the binding's own, with `field` when the error
//! names a field (as JavaScript spells it: `ttlMs`, not `ttl_ms`), `path` when it names a file,
//! and the other values a program may act on (`position`, `limit`, `archive`, …) as properties.
//! `lib.js` gives it the class of its code's family (`FAMILIES`), an `AnnalsError`. Nothing is
//! carried in the message for anyone to parse.
//!
//! An error object needs the JavaScript thread's environment: on that thread (every
//! synchronous call) the error is made where it is met; work done elsewhere (a commit on libuv's
//! pool, the writer's) carries a [`Failure`] back and makes the error when it settles.

use std::cell::Cell;

use annals::{
    Error, ErrorKind, error::AppendError, error::ArchiveError, error::ErasureError,
    error::OpenError, error::StoreError, error::WriterError,
};
use napi::bindgen_prelude::{BigInt, JsObjectValue, Object};
use napi::{Env, JsValue};

/// The codes the binding throws of its own, beside the library's kinds (`lib.js` throws
/// `UNSAFE_INTEGER` and `INVALID_ARGUMENT` of its own too).
pub const OWN_CODES: [&str; 2] = ["IN_TRANSACTION", "UNSAFE_INTEGER"];

/// A call that cannot run while a transaction is open, or a transaction whose session ended.
pub const IN_TRANSACTION: &str = OWN_CODES[0];

/// The classes of `AnnalsError` a program may catch by family, each with the codes it is
/// thrown for (`lib.js` makes the classes from this list; every code is in one).
pub const FAMILIES: [(&str, &[&str]); 7] = [
    (
        // What the caller passed: `field` names it.
        "InvalidInputError",
        &[
            "INVALID_ARGUMENT",
            "INVALID_COMMAND",
            "INVALID_CONFIG",
            "LIMIT",
            "UNSAFE_INTEGER",
        ],
    ),
    (
        // A write the log refused as it stands; nothing was written.
        "RefusedError",
        &[
            "WRONG_EXPECTED_VERSION",
            "IDEMPOTENCY_CONFLICT",
            "APPEND_REFUSED",
            "FENCED",
            "RESERVED_KIND",
            "REFUSED",
            "ARCHIVE_REFUSED",
        ],
    ),
    (
        // Another process holds the log (`path`): wait, or open it another way.
        "BusyError",
        &["HELD"],
    ),
    (
        // A file, or the file system (`path`).
        "FileError",
        &[
            "NOT_FOUND",
            "IS_A_DIRECTORY",
            "PERMISSION_DENIED",
            "NO_SPACE",
            "NOT_A_LOG",
            "NEEDS_UPGRADE",
            "OPEN_FAILED",
            "EXISTS",
            "STORE_FILE",
            "OUTPUT_PATH",
            "IO",
        ],
    ),
    (
        // Stored data that fails its checks (`position` where known).
        "CorruptError",
        &["CORRUPT"],
    ),
    (
        // Records a cut archived, or a projection a cut does not hold.
        "ArchivedError",
        &["ARCHIVED", "NOT_IN_CUT"],
    ),
    (
        // A call the store, the writer or the transaction is not in a state to run.
        "StateError",
        &[
            "READ_ONLY",
            "CLOSED",
            "IN_TRANSACTION",
            "SUBSCRIPTION_LOST",
            "BEHIND",
            "INTERNAL",
        ],
    ),
];

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

/// A value an error carries beside its message.
#[derive(Clone, Debug)]
enum Carried {
    Text(String),
    /// A position or a version: a `bigint`, as everywhere in the package.
    Big(u64),
    /// A limit: a `number`.
    Number(u64),
}

/// An error met anywhere, to be made a JavaScript error on the JavaScript thread: its code,
/// its message, and what it names.
#[derive(Clone, Debug)]
pub struct Failure {
    code: &'static str,
    message: String,
    values: Vec<(&'static str, Carried)>,
}

impl Failure {
    /// An error of `code` saying `message`, naming nothing.
    pub fn coded(code: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            code,
            message: message.into(),
            values: Vec::new(),
        }
    }

    /// A value the caller passed that the binding cannot take, at `field`.
    pub fn invalid(field: &str, problem: &str) -> Failure {
        Failure::coded(
            ErrorKind::InvalidArgument.code(),
            format!("{field}: {problem}"),
        )
        .with("field", Carried::Text(field.to_owned()))
    }

    /// The library's `error`: its kind's code, its message with its field spelled as
    /// JavaScript spells it, and what it names.
    pub fn of(error: &Error) -> Failure {
        let mut failure = Failure::coded(error.kind().code(), error.to_string());
        if let Some(field) = field_of(error) {
            let spelled = js_name(field);
            failure.message = failure.message.replacen(field, &spelled, 1);
            failure = failure.with("field", Carried::Text(spelled));
        }
        if let Some(path) = path_of(error) {
            failure = failure.with("path", Carried::Text(path.display().to_string()));
        }
        carried(error, failure)
    }

    /// The same, naming `path` (the file the call was working on) if it names none.
    pub fn at_path(mut self, path: &str) -> Failure {
        if !self.values.iter().any(|(name, _)| *name == "path") {
            if !self.message.contains(path) {
                self.message = format!("{path}: {}", self.message);
            }
            self = self.with("path", Carried::Text(path.to_owned()));
        }
        self
    }

    fn with(mut self, name: &'static str, value: Carried) -> Failure {
        self.values.push((name, value));
        self
    }

    /// The JavaScript error, made in `env`: an `Error` with `code`, the carried values and the
    /// message, thrown or rejected as it is.
    pub fn thrown(self, env: &Env) -> napi::Error {
        match self.object(env) {
            Ok(object) => napi::Error::from(object.to_unknown()),
            // Making the object failed (the environment is going away): the message, at least.
            Err(_) => napi::Error::new(napi::Status::GenericFailure, self.message),
        }
    }

    fn object<'env>(&self, env: &'env Env) -> napi::Result<Object<'env>> {
        let mut object = env.create_error(napi::Error::new(
            napi::Status::GenericFailure,
            self.message.clone(),
        ))?;
        object.set_named_property("code", self.code)?;
        for (name, value) in &self.values {
            match value {
                Carried::Text(text) => object.set_named_property(name, text.as_str())?,
                Carried::Big(value) => object.set_named_property(name, BigInt::from(*value))?,
                Carried::Number(value) => object.set_named_property(name, *value as f64)?,
            }
        }
        Ok(object)
    }
}

thread_local! {
    /// The JavaScript environment of this thread, if it is one's (set when the module loads on
    /// it, the main thread or a worker's).
    static ENV: Cell<Option<napi::sys::napi_env>> = const { Cell::new(None) };
}

/// Notes that this thread runs JavaScript in `env`: errors met on it are made at once.
pub fn on_js_thread(env: &Env) {
    ENV.with(|slot| slot.set(Some(env.raw())));
}

impl From<Failure> for napi::Error {
    /// The error made now on the JavaScript thread; elsewhere (which the binding avoids: work off
    /// the thread carries a `Failure` back) its message with `code` lost.
    fn from(failure: Failure) -> napi::Error {
        match ENV.with(Cell::get) {
            Some(raw) => failure.thrown(&Env::from_raw(raw)),
            None => napi::Error::new(napi::Status::GenericFailure, failure.message),
        }
    }
}

/// The error a JavaScript caller sees for `error`.
pub fn to_js(error: Error) -> napi::Error {
    Failure::of(&error).into()
}

/// The error a JavaScript caller sees for `error`, met working on the file at `path`: the
/// path is named even where the error does not carry it (an I/O error of the file system).
pub fn at_path(error: Error, path: &str) -> napi::Error {
    Failure::of(&error).at_path(path).into()
}

/// An error of `code` with `message`, naming nothing.
pub fn coded(code: &'static str, message: &str) -> napi::Error {
    Failure::coded(code, message).into()
}

/// A value the caller passed that the binding cannot convert.
pub fn invalid(field: &str, problem: &str) -> napi::Error {
    Failure::invalid(field, problem).into()
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
            annals::error::LimitError::TooLong { field, .. }
            | annals::error::LimitError::TooMany { field, .. }
            | annals::error::LimitError::Empty { field }
            | annals::error::LimitError::Misconfigured { field, .. } => Some(field.name()),
            _ => None,
        },
        Error::Writer(WriterError::InvalidOption { field, .. }) => Some(field),
        Error::Writer(WriterError::Batch(inner)) => field_of(inner),
        Error::Erasure(ErasureError::Subject { .. } | ErasureError::Erased { .. }) => {
            Some("subject")
        }
        _ => None,
    }
}

/// The file `error` names, if any.
fn path_of(error: &Error) -> Option<&std::path::Path> {
    match error {
        Error::Open(
            OpenError::Missing { path }
            | OpenError::NotAnnalsLog { path, .. }
            | OpenError::UnsupportedFormat { path, .. }
            | OpenError::NeedsUpgrade { path, .. }
            | OpenError::Unreadable { path, .. }
            | OpenError::Held { path, .. },
        ) => Some(path),
        Error::Store(StoreError::WriterBusy { path, .. }) => Some(path),
        Error::NoSpace { path } => Some(path),
        Error::OutputPath(refused) => Some(refused.path()),
        Error::Writer(WriterError::Batch(inner)) => path_of(inner),
        Error::Erasure(ErasureError::Damaged { path, .. }) => Some(path),
        _ => None,
    }
}

/// `failure` with what `error` carries that a program may act on, beside its message: a key,
/// a position, a limit, an archive.
fn carried(error: &Error, failure: Failure) -> Failure {
    match error {
        Error::Append(AppendError::Conflict { key, position }) => failure
            .with("key", Carried::Text(key.clone()))
            .with("position", Carried::Big(position.0)),
        Error::Append(AppendError::Limit(limit)) | Error::Config(limit) => match limit {
            annals::error::LimitError::TooLong { max, .. }
            | annals::error::LimitError::TooMany { max, .. } => {
                failure.with("limit", Carried::Number(*max))
            }
            _ => failure,
        },
        Error::Corrupt { position, .. } => failure.with("position", Carried::Big(position.0)),
        Error::Writer(WriterError::Batch(inner)) => carried(inner, failure),
        Error::Writer(WriterError::InvalidOption { max, .. }) => {
            failure.with("limit", Carried::Number(*max as u64))
        }
        Error::Archive(ArchiveError::Archived {
            position,
            before,
            archive,
        }) => failure
            .with("position", Carried::Big(position.0))
            .with("before", Carried::Big(before.0))
            .with("archive", Carried::Text(archive.to_string())),
        Error::Erasure(
            ErasureError::Erased { subject, position }
            | ErasureError::Unopenable { subject, position },
        ) => failure
            .with("subject", Carried::Text(subject.clone()))
            .with("position", Carried::Big(position.0)),
        Error::Archive(ArchiveError::NotInCut { projection, before }) => failure
            .with("projection", Carried::Text(projection.to_string()))
            .with("before", Carried::Big(before.0)),
        _ => failure,
    }
}
