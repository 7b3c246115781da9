//! Commands: what a caller asks of a domain. A command decides, against the current
//! projection tables, which events to append (or that it is refused); the events then
//! record the decision and `apply` projects them.
//!
//! `decide` is pure: it reads the tables it is given and the command, nothing else. Every
//! command carries its own `now` and any fresh token, and the events record them.

use crate::error::Result;
pub use crate::event::{DomainEvent, EventKind, decode_payload, encode_payload, unknown_schema};
use crate::log::append::ExpectedVersion;
use crate::projection::table::TableSource;
use crate::record::NewEvent;

/// Events one command appends to one stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Emit {
    /// The stream.
    pub stream: String,
    /// What the stream must look like (usually `Any`: the decision already read the state).
    pub expected: ExpectedVersion,
    /// The events, in order.
    pub events: Vec<NewEvent>,
}

/// What a command decided: the appends to make and the outcome to report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision<O> {
    /// Appends to make, in order; empty for a refusal or a no-op.
    pub emits: Vec<Emit>,
    /// What the caller is told.
    pub outcome: O,
}

impl<O> Decision<O> {
    /// A decision that appends nothing.
    pub fn nothing(outcome: O) -> Self {
        Decision {
            emits: Vec::new(),
            outcome,
        }
    }

    /// A decision that appends `events` to `stream`.
    pub fn emit(stream: String, events: Vec<NewEvent>, outcome: O) -> Self {
        Decision {
            emits: vec![Emit {
                stream,
                expected: ExpectedVersion::Any,
                events,
            }],
            outcome,
        }
    }

    /// A decision that appends one domain event to `stream` at `now_ms`.
    pub fn event<E: DomainEvent>(stream: String, now_ms: u64, event: E, outcome: O) -> Self {
        Decision::emit(stream, vec![event.to_new_event(now_ms)], outcome)
    }
}

/// A command field's bytes personal to a subject, to be sealed before the command decides
/// (`docs/erasure.md`): the envelope is bound to the stream and kind of the event the field
/// goes into, as a personal payload is to its record's.
#[derive(Clone, Copy, Debug)]
pub struct PersonalField<'a> {
    /// The subject the field belongs to.
    pub subject: &'a str,
    /// The stream of the event that will carry it.
    pub stream: &'a str,
    /// That event's kind.
    pub kind: &'a str,
    /// The field's plaintext.
    pub plaintext: &'a [u8],
    /// How the envelope's nonce is made.
    pub sealing: Sealing<'a>,
}

/// How a personal field's envelope gets its nonce (`docs/erasure.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sealing<'a> {
    /// Drawn at random: sealing the same plaintext twice gives two envelopes that say nothing
    /// of each other. What every personal field takes unless its retries must be recognised.
    Random,
    /// Derived from the subject's key, the envelope's subject, stream and kind, `context` and
    /// the plaintext (`annals_format::record::envelope::synthetic_nonce`): a retry of the same
    /// command seals to the same envelope, so a domain that deduplicates by content finds it.
    /// Two envelopes with the same subject, stream, kind and `context` are then equal exactly
    /// when their plaintexts are, so `context` should name the one slot the field can fill
    /// (an ingested event's sequence), where only a retry can meet it.
    Derived {
        /// What, beside the stream and kind, tells this field's slot from every other.
        context: &'a [u8],
    },
}

/// Refuses a command's `field` personal to `subject` whose bytes are not an envelope sealed
/// for that subject: a command decided without the store's sealing ([`Command::sealed`])
/// would put the plaintext in the log.
pub(crate) fn check_sealed(field: &'static str, bytes: &[u8], subject: &str) -> Result<()> {
    match crate::record::envelope::Envelope::parse(bytes) {
        Some(envelope) if envelope.subject == subject => Ok(()),
        _ => Err(crate::error::ErasureError::NotSealed {
            field,
            subject: subject.to_owned(),
        }
        .into()),
    }
}

/// A command of some domain.
pub trait Command {
    /// What the caller is told: a result or a refusal (refusals are values, not errors).
    type Outcome;
    /// Decides against `state`, the projection tables as of this point of the transaction.
    fn decide(&self, state: &dyn TableSource) -> Result<Decision<Self::Outcome>>;

    /// This command with its personal fields sealed by `seal` (which returns the envelope),
    /// when it names a subject; `None`, the default, when it has none. The write session runs
    /// it before [`Command::decide`], on the command path (the key store and the randomness
    /// are the store's, never a projection's), so the events hold only envelopes.
    fn sealed(
        &self,
        seal: &mut dyn FnMut(PersonalField<'_>) -> Result<Vec<u8>>,
    ) -> Result<Option<Self>>
    where
        Self: Sized,
    {
        let _ = seal;
        Ok(None)
    }
}

/// A condition a write must meet, checked against the tables in the write's own transaction
/// before it appends anything ([`crate::Store::append_guarded`],
/// [`crate::Store::execute_guarded`], the [`crate::Writer`]'s): a refusal is an error and
/// nothing is written. The store knows no domain's rule: a fencing token is a
/// [`crate::leases::LeaseGuard`], which refuses with
/// [`crate::error::StoreError::Fenced`] unless its token is its resource's live token; a
/// domain of one's own refuses with [`crate::error::StoreError::PreconditionRefused`].
///
/// ```
/// use annals::error::StoreError;
/// use annals::projection::TableSource;
/// use annals::command::Precondition;
/// use annals::{ErrorKind, ExpectedVersion, NewEvent, Store};
///
/// /// Refuses every write: a freeze.
/// struct Frozen;
/// impl Precondition for Frozen {
///     fn check(&self, _: &dyn TableSource) -> annals::Result<()> {
///         let refused = StoreError::PreconditionRefused {
///             precondition: "writes are allowed".to_owned(),
///             reason: "the log is frozen".to_owned(),
///         };
///         Err(refused.into())
///     }
/// }
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("log.redb"))?;
/// let event = NewEvent::new("note", 1, b"x".to_vec());
/// let refused = store.append_guarded("notes", ExpectedVersion::Any, &[event], &Frozen);
/// assert_eq!(refused.unwrap_err().kind(), ErrorKind::Fenced);
/// assert_eq!(store.snapshot()?.head()?.next.0, 0);
/// # Ok::<(), annals::Error>(())
/// ```
pub trait Precondition: Send + Sync {
    /// `Ok(())` when the write may go on, read from `state` as of this point of its
    /// transaction; otherwise the error that refuses it.
    fn check(&self, state: &dyn TableSource) -> Result<()>;
}

/// Declares a domain's events once: the enum of its events (one variant a kind, each
/// wrapping its payload struct), a constant for each kind, and the enum's [`DomainEvent`]
/// (the catalogue, `kind`, `payload` and `from_record`, which decodes the schema written now
/// and upgrades each older one a kind lists; the enum serialises as the payload struct of its
/// variant). A kind, its schema and how an older payload
/// becomes the current one are said in one place, so the catalogue and the three matches
/// can never disagree.
///
/// Each variant reads `Variant(Payload) = VISIBILITY CONSTANT = "kind", schema N`, then,
/// for a kind whose payload changed, `older { M => OldPayload => upgrade, … }`, where
/// `upgrade` is a `fn(OldPayload, &Record) -> Payload` (the record gives what an old payload
/// left to it, such as its time or position).
///
/// ```
/// use annals::command::DomainEvent;
/// use serde::{Deserialize, Serialize};
///
/// /// A door was opened.
/// #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// pub struct Opened { pub door: String, pub by: String }
/// /// `door.opened` as schema 1 wrote it, before it said by whom.
/// #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// pub struct OpenedV1 { pub door: String }
/// /// A door was shut.
/// #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// pub struct Shut { pub door: String }
///
/// annals::domain_events! {
///     /// Every door event.
///     pub enum DoorEvent {
///         /// `door.opened`
///         Opened(Opened) = pub OPENED = "door.opened", schema 2,
///             older { 1 => OpenedV1 => opened_v1 };
///         /// `door.shut`
///         Shut(Shut) = pub SHUT = "door.shut", schema 1;
///     }
/// }
///
/// fn opened_v1(v1: OpenedV1, _: &annals::Record) -> Opened {
///     Opened { door: v1.door, by: String::new() }
/// }
///
/// assert_eq!(DoorEvent::CATALOGUE.len(), 2);
/// let shut = DoorEvent::Shut(Shut { door: "front".to_owned() });
/// assert_eq!(shut.kind(), SHUT);
/// let event = shut.to_new_event(7);
/// assert_eq!((event.kind.as_str(), event.schema), ("door.shut", 1));
/// ```
#[macro_export]
macro_rules! domain_events {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $(
                $(#[$variant_meta:meta])*
                $variant:ident($payload:ty) = $kind_vis:vis $kind:ident = $text:literal,
                    schema $schema:literal
                    $(, older { $($old:literal => $old_payload:ty => $upgrade:expr),+ $(,)? })?
                ;
            )+
        }
    ) => {
        $(#[$meta])*
        ///
        /// Serialised as its payload struct alone (the kind is the record's), for the CLI's JSON.
        #[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
        #[serde(untagged)]
        $vis enum $name {
            $(
                $(#[$variant_meta])*
                $variant($payload),
            )+
        }

        $(
            #[doc = concat!("Kind of [`", stringify!($name), "::", stringify!($variant), "`].")]
            $kind_vis const $kind: &str = $text;
        )+

        impl $crate::command::DomainEvent for $name {
            const CATALOGUE: &'static [$crate::command::EventKind] = &[
                $($crate::command::EventKind { kind: $kind, schema: $schema },)+
            ];

            fn kind(&self) -> &'static str {
                match self {
                    $($name::$variant(_) => $kind,)+
                }
            }

            fn payload(&self) -> Vec<u8> {
                match self {
                    $($name::$variant(payload) => $crate::command::encode_payload(payload),)+
                }
            }

            fn from_record(
                record: &$crate::Record,
            ) -> $crate::Result<Option<Self>> {
                $(
                    if record.kind == $kind {
                        let payload: $payload = match record.schema {
                            $schema => $crate::command::decode_payload(record)?,
                            $($(
                                $old => {
                                    let old: $old_payload =
                                        $crate::command::decode_payload(record)?;
                                    ($upgrade)(old, record)
                                }
                            )+)?
                            _ => return Err($crate::command::unknown_schema(record)),
                        };
                        return Ok(Some($name::$variant(payload)));
                    }
                )+
                Ok(None)
            }
        }
    };
}
