//! The model's raw appends: each stream's version and each idempotency key's first append,
//! kept in the [`Model`]'s `BTreeMap`s. It predicts, in the order the store checks them:
//! reserved kinds (`lease.…`) refused, repeated keys within one append refused, idempotency (a
//! whole repeat is a duplicate with the earlier positions; the same key with other stream,
//! kind or payload a conflict; a mix of repeated and new events a partial duplicate), then the
//! expected-version check (`any`, `none`, `exists`, exact), and the positions and stream
//! versions written. It also holds a raw append's vocabulary ([`Expect`], [`EventSpec`]) and
//! the names of its errors. It never calls the log's append checks or a domain's `decide` or
//! `apply`: a rule the store gets wrong must not be wrong here the same way.

use arbitrary::Arbitrary;

use super::{Model, Op, Outcome, failed, pick};
use crate::log::append::{AppendError, AppendOutcome, ExpectedVersion};
use crate::record::{NewEvent, StreamVersion};
use crate::store::WriteSession;

/// Streams of raw appends.
const STREAMS: [&str; 3] = ["app/a", "app/b", "app/c"];
/// Kinds of raw appends; the last is reserved by the leases projection.
const KINDS: [&str; 3] = ["app.x", "app.y", "lease.acquired"];
/// Idempotency keys.
const KEYS: [&str; 3] = ["k1", "k2", "k3"];

/// The expected version of a raw append.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub enum Expect {
    /// `ExpectedVersion::Any`.
    Any,
    /// `ExpectedVersion::NoStream`.
    NoStream,
    /// `ExpectedVersion::StreamExists`.
    StreamExists,
    /// `ExpectedVersion::Exact` of the version given modulo 4.
    Exact(u8),
}

/// One event of a raw append: indexes into small sets of names, so that commands collide.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct EventSpec {
    /// The kind, modulo the kinds.
    pub kind: u8,
    /// The payload: this one byte, modulo 3.
    pub payload: u8,
    /// The idempotency key, modulo the keys.
    pub key: Option<u8>,
}

/// An idempotency key's first append: where it went and what it carried.
#[derive(Clone, Debug)]
pub(super) struct Keyed {
    position: u64,
    content: (String, String, Vec<u8>),
}

impl Expect {
    fn version(self) -> ExpectedVersion {
        match self {
            Expect::Any => ExpectedVersion::Any,
            Expect::NoStream => ExpectedVersion::NoStream,
            Expect::StreamExists => ExpectedVersion::StreamExists,
            Expect::Exact(v) => ExpectedVersion::Exact(StreamVersion(u64::from(v % 4))),
        }
    }
}

/// The name of an append error, as the model states it.
pub(super) fn append_error_name(error: &AppendError) -> &'static str {
    match error {
        AppendError::WrongExpectedVersion { .. } => "wrong_expected_version",
        AppendError::Conflict { .. } => "conflict",
        AppendError::PartialDuplicate { .. } => "partial_duplicate",
        AppendError::RepeatedKey { .. } => "repeated_key",
        AppendError::NoEvents => "no_events",
        AppendError::Limit(_) => "limit",
        AppendError::LogFull => "log_full",
        AppendError::NotSealable { .. } => "not_sealable",
    }
}

fn new_event(spec: EventSpec, now_ms: u64) -> NewEvent {
    let event = NewEvent::new(pick(&KINDS, spec.kind), now_ms, vec![spec.payload % 3]);
    match spec.key {
        Some(key) => event.with_idempotency_key(pick(&KEYS, key)),
        None => event,
    }
}

/// A raw append as an [`Op::Append`] states it.
pub(super) struct RawAppend {
    stream: &'static str,
    expected: ExpectedVersion,
    specs: Vec<EventSpec>,
}

/// The raw append `op` states, if it is one.
pub(super) fn append_command(op: &Op) -> Option<RawAppend> {
    let Op::Append {
        stream,
        expect,
        first,
        second,
    } = *op
    else {
        return None;
    };
    Some(RawAppend {
        stream: pick(&STREAMS, stream),
        expected: expect.version(),
        specs: std::iter::once(first).chain(second).collect(),
    })
}

/// Runs the raw append in `session` at `now_ms`, and states what it did.
pub(super) fn append_on_store(
    append: &RawAppend,
    session: &mut WriteSession<'_>,
    now_ms: u64,
) -> Outcome {
    let events: Vec<NewEvent> = append
        .specs
        .iter()
        .map(|spec| new_event(*spec, now_ms))
        .collect();
    match session.append(append.stream, append.expected, &events) {
        Ok(AppendOutcome::Appended(appended)) => Outcome::Appended {
            first: appended.first_position.0,
            version: appended.first_version.0,
            count: appended.count,
        },
        Ok(AppendOutcome::Duplicate { positions }) => {
            Outcome::Duplicate(positions.iter().map(|p| p.0).collect())
        }
        Err(error) => failed(error),
    }
}

impl Model {
    /// What the raw append must do, applied to the model.
    pub(super) fn append(&mut self, append: RawAppend) -> Outcome {
        let RawAppend {
            stream,
            expected,
            specs,
        } = append;
        if specs
            .iter()
            .any(|s| pick(&KINDS, s.kind).starts_with("lease."))
        {
            return Outcome::AppendRefused("reserved_kind");
        }
        let keys: Vec<Option<&str>> = specs
            .iter()
            .map(|s| s.key.map(|k| pick(&KEYS, k)))
            .collect();
        if keys.len() == 2 && keys[0].is_some() && keys[0] == keys[1] {
            return Outcome::AppendRefused("repeated_key");
        }
        let mut duplicates = Vec::new();
        for (spec, key) in specs.iter().zip(&keys) {
            let Some(key) = key else { continue };
            let Some(keyed) = self.keys.get(*key) else {
                continue;
            };
            let content = (
                stream.to_owned(),
                pick(&KINDS, spec.kind).to_owned(),
                vec![spec.payload % 3],
            );
            if keyed.content != content {
                return Outcome::AppendRefused("conflict");
            }
            duplicates.push(keyed.position);
        }
        if !duplicates.is_empty() {
            return if duplicates.len() == specs.len() {
                Outcome::Duplicate(duplicates)
            } else {
                Outcome::AppendRefused("partial_duplicate")
            };
        }
        let current = self.streams.get(stream).map(|count| count - 1);
        let matches = match expected {
            ExpectedVersion::Any => true,
            ExpectedVersion::NoStream => current.is_none(),
            ExpectedVersion::StreamExists => current.is_some(),
            ExpectedVersion::Exact(v) => current == Some(v.0),
        };
        if !matches {
            return Outcome::AppendRefused("wrong_expected_version");
        }
        for (offset, (spec, key)) in specs.iter().zip(&keys).enumerate() {
            if let Some(key) = key {
                let keyed = Keyed {
                    position: self.next + offset as u64,
                    content: (
                        stream.to_owned(),
                        pick(&KINDS, spec.kind).to_owned(),
                        vec![spec.payload % 3],
                    ),
                };
                self.keys.insert((*key).to_owned(), keyed);
            }
        }
        self.write(stream, specs.len() as u64)
    }
}
