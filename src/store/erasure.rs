//! Personal data and its erasure by crypto-shredding (`docs/erasure.md`): a payload personal
//! to a subject is sealed under the subject's data key before its record enters the write
//! session ([`Store::append_personal`]), so that the record's hash, the chain, the tree, the
//! checkpoints and the proofs are over the ciphertext; [`Store::erase`] appends the subject's
//! erasure event, durably, then destroys its key; reads ([`PayloadReader`]) give the
//! plaintext while the key stands and [`Payload::Erased`] after.
//!
//! Projections are given the record as stored, the envelope and its ciphertext, and never a
//! key: `apply` sees the same bytes before and after an erasure, so a replay reproduces every
//! projection byte for byte whatever the key store holds.

use std::path::Path;

use zeroize::Zeroizing;

use crate::error::{ErasureError, Result};
use crate::log::append::{AppendOutcome, ExpectedVersion};
use crate::log::read::Snapshot;
use crate::record::envelope::{
    self, ERASED_KIND, Envelope, KEY_BYTES, Payload, SealedField, erasure_stream, seal,
};
use crate::record::{NewEvent, Position, Record};

use super::keys::{KeyStore, fresh_nonce};
use super::{Store, WriteSession};

/// What [`Store::erase`] did.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[non_exhaustive]
pub struct Erasure {
    /// The subject erased.
    pub subject: String,
    /// The position of its erasure event (`subject.erased`).
    pub position: Position,
    /// Whether this call appended the event (`false`: an earlier erasure had).
    pub appended: bool,
    /// Whether this call destroyed a key (`false`: the key store held none for the subject,
    /// which an earlier erasure, or its recovery, destroyed, or which never had personal data).
    pub key_destroyed: bool,
}

/// What [`crate::erasure::Keys::export`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyExport {
    /// The subjects whose keys the file holds, in order.
    pub subjects: Vec<String>,
    /// Subjects whose key the key store still held but whose erasure the log holds (an
    /// erasure a kill interrupted): left out.
    pub erased: Vec<String>,
}

/// What [`crate::erasure::Keys::import`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KeyImport {
    /// The subjects whose keys it added to the key store, in order.
    pub imported: Vec<String>,
    /// Subjects whose key the key store held already (the same key): nothing to do.
    pub held: Vec<String>,
    /// Subjects whose erasure this log holds: their keys were not imported.
    pub erased: Vec<String>,
}

impl Store {
    /// The work of [`Keys::export`].
    pub(crate) fn export_keys(&self, out: &Path) -> Result<KeyExport> {
        let log = self.key_store_log()?;
        self.check_output(out, crate::output_path::Output::File)?;
        let keys = KeyStore::load(log)?;
        // Read after the keys: an erasure whose key was read before is in it.
        let snapshot = self.snapshot()?;
        let (mut subjects, mut erased) = (Vec::new(), Vec::new());
        for subject in keys.subjects() {
            match erasure_position(&snapshot, subject)? {
                Some(_) => erased.push(subject.to_owned()),
                None => subjects.push(subject.to_owned()),
            }
        }
        let exported = keys.keys_of(subjects.iter().map(String::as_str));
        super::keys::write_export(out, &exported)?;
        Ok(KeyExport { subjects, erased })
    }

    /// The work of [`Keys::import`].
    pub(crate) fn import_keys(&self, input: &Path) -> Result<KeyImport> {
        let log = self.key_store_log()?;
        self.require_writable()?;
        let exported = super::keys::read_keys(input, super::keys::KEY_EXPORT)?;
        self.write(|_| {
            let mut keys = KeyStore::load(log)?;
            let snapshot = self.snapshot()?;
            let mut import = KeyImport {
                imported: Vec::new(),
                held: Vec::new(),
                erased: Vec::new(),
            };
            let mut added = std::collections::BTreeMap::new();
            for (subject, key) in exported {
                if erasure_position(&snapshot, &subject)?.is_some() {
                    import.erased.push(subject);
                } else if let Some(held) = keys.key(&subject) {
                    if *held != *key {
                        return Err(ErasureError::KeyConflict { subject }.into());
                    }
                    import.held.push(subject);
                } else {
                    import.imported.push(subject.clone());
                    added.insert(subject, key);
                }
            }
            keys.insert_all(added)?;
            Ok(import)
        })
    }

    /// Destroys this store's copies of the keys of the subjects whose erasure events are among
    /// `records` (appended from elsewhere: a follower's, a shared host's), under the write
    /// lock: a replica that imported a key lets it go when the erasure reaches it.
    #[cfg(feature = "jetstream")]
    pub(crate) fn destroy_keys_erased_by(&self, records: &[Record]) -> Result<()> {
        match records.iter().any(|record| record.kind == ERASED_KIND) {
            true => self.finish_erasures(),
            false => Ok(()),
        }
    }

    /// Appends `events` to `stream` as [`Store::append`] does, each payload personal to
    /// `subject`: sealed (`schema/FORMAT.md` 1.5) under the subject's data key, drawn and kept
    /// in the key store beside the log (`<log>.keys`) on the subject's first personal append,
    /// with a fresh random nonce, before the record is hashed. A repeated idempotency key with
    /// the same plaintext is a duplicate, as for a plain append.
    ///
    /// Refused with nothing written: a subject that is not one ([`ErasureError::Subject`]),
    /// one erased ([`ErasureError::Erased`]), a store with no file
    /// ([`ErasureError::NoKeyStore`]), and whatever [`Store::append`] refuses.
    ///
    /// ```
    /// use annals::{ExpectedVersion, NewEvent, Store, erasure::Payload};
    /// # let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path().join("log.redb"))?;
    /// let event = NewEvent::new("email.set", 1_700_000_000_000, b"ada@example.com".to_vec());
    /// let outcome = store.append_personal("user-7", "people/7", ExpectedVersion::Any, &[event])?;
    /// let record = store.snapshot()?.get(outcome.first_position())?.expect("appended");
    /// assert_eq!(annals::erasure::PayloadReader::of(&store)?.open(&record)?.data(), Some(&b"ada@example.com"[..]));
    /// store.erase("user-7", 1_700_000_000_001)?;
    /// assert!(matches!(annals::erasure::PayloadReader::of(&store)?.open(&record)?, Payload::Erased { subject: "user-7" }));
    /// assert!(annals::Audit::of(&store).verify()?.is_sound());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn append_personal(
        &self,
        subject: &str,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        self.check_personal(subject, stream, events)?;
        self.write(|session| {
            // What the log would refuse anyway is refused before a key is made for it (under
            // the write lock: the last commit is the session's start).
            if events.iter().all(|event| event.idempotency_key.is_none()) {
                let current = self.snapshot()?.stream_version(stream)?;
                crate::log::append::check_expected(stream, expected, current)?;
            }
            self.append_personal_in(session, subject, stream, expected, events)
        })
    }

    /// What [`Store::append_personal`] refuses before any transaction: the subject, the kinds
    /// and stream, the limits, a store with no key store.
    pub(crate) fn check_personal(
        &self,
        subject: &str,
        stream: &str,
        events: &[NewEvent],
    ) -> Result<()> {
        check_subject(subject)?;
        self.projections.check_raw_kinds(stream, events)?;
        crate::log::append::check_append(stream, events, &self.limits)?;
        self.key_store_log().map(drop)
    }

    /// The personal append inside `session` (the direct call's transaction, or a writer's
    /// batch): refused for an erased subject; the subject's key made if it has none; each
    /// payload sealed, or an earlier envelope reused for a retry with the same idempotency key
    /// and plaintext.
    pub(crate) fn append_personal_in(
        &self,
        session: &mut WriteSession<'_>,
        subject: &str,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        let log = self.key_store_log()?;
        // Under the write lock: no erasure commits between this read and the append (none
        // runs in a writer's batch), and no other writer rewrites the key store meanwhile.
        if let Some(position) = erasure_position(&self.snapshot()?, subject)? {
            return Err(ErasureError::Erased {
                subject: subject.to_owned(),
                position,
            }
            .into());
        }
        let key = KeyStore::load(log)?.key_or_new(subject)?;
        let sealed = events
            .iter()
            .map(|event| seal_event(session, &key, subject, stream, event))
            .collect::<Result<Vec<_>>>()?;
        session.append_unchecked(stream, expected, &sealed)
    }

    /// Erases `subject`: appends its erasure event (kind `subject.erased`, stream
    /// `annals.erased/<subject>`, the subject's id its only payload, at `at_ms`) durably, then
    /// destroys its key in the key store, whose file is rewritten without it. A kill between
    /// the two leaves the event and the key; the next writable open finishes the erasure
    /// (destroys the key) before it returns, and every read meanwhile gives
    /// [`Payload::Erased`]. Erasing a subject again finishes what is left and appends nothing.
    /// The chain, the tree, checkpoints, proofs and replay are untouched: they are over the
    /// ciphertext.
    pub fn erase(&self, subject: &str, at_ms: u64) -> Result<Erasure> {
        let (position, appended) = self.append_erasure(subject, at_ms)?;
        // The event is durable: only now does the key go, under the write lock again.
        let log = self.key_store_log()?;
        let key_destroyed = self.write(|_| KeyStore::load(log)?.destroy(subject))?;
        Ok(Erasure {
            subject: subject.to_owned(),
            position,
            appended,
            key_destroyed,
        })
    }

    /// The first half of [`Store::erase`]: `subject`'s erasure event appended durably, unless
    /// the log holds one (`false`, with its position). The key is left as it is.
    pub(crate) fn append_erasure(&self, subject: &str, at_ms: u64) -> Result<(Position, bool)> {
        check_subject(subject)?;
        self.require_writable()?;
        self.key_store_log()?;
        self.write(|session| {
            let snapshot = self.snapshot()?;
            if let Some(position) = erasure_position(&snapshot, subject)? {
                return Ok((position, false));
            }
            let event = NewEvent::new(ERASED_KIND, at_ms, subject.as_bytes().to_vec());
            let stream = erasure_stream(subject);
            let outcome = session.append_unchecked(&stream, ExpectedVersion::NoStream, &[event])?;
            Ok((outcome.first_position(), true))
        })
    }

    /// Finishes every erasure a kill interrupted: destroys the key of each subject whose
    /// erasure event the log holds. Run by every writable open of a log file.
    pub(crate) fn finish_erasures(&self) -> Result<()> {
        let Ok(log) = self.key_store_log() else {
            return Ok(());
        };
        if !crate::output_path::keys_path(log).exists() {
            return Ok(());
        }
        self.write(|_| {
            let mut keys = KeyStore::load(log)?;
            let snapshot = self.snapshot()?;
            let mut erased = Vec::new();
            for subject in keys.subjects() {
                if erasure_position(&snapshot, subject)?.is_some() {
                    erased.push(subject.to_owned());
                }
            }
            for subject in erased {
                keys.destroy(&subject)?;
            }
            Ok(())
        })
    }

    /// The work of [`PayloadReader::of`].
    pub(crate) fn payload_reader(&self) -> Result<PayloadReader> {
        let keys = match self.key_store_log().map(KeyStore::load) {
            Ok(Err(crate::error::Error::Io(error)))
                if error.kind() == std::io::ErrorKind::PermissionDenied =>
            {
                None
            }
            Ok(keys) => Some(keys?),
            Err(_) => None,
        };
        Ok(PayloadReader {
            keys,
            snapshot: self.snapshot()?,
        })
    }

    /// The log whose key store this store keeps: refused for a store over a backend.
    fn key_store_log(&self) -> Result<&Path> {
        match self.on_disk {
            true => Ok(&self.path),
            false => Err(ErasureError::NoKeyStore.into()),
        }
    }
}

/// Opens records' payloads with the keys of a log's key store, read once.
pub struct PayloadReader {
    keys: Option<KeyStore>,
    snapshot: Snapshot,
}

impl PayloadReader {
    /// A reader of `store`'s personal payloads as of now: the key store read once, and the
    /// log's erasures as of a snapshot taken after it. A process that may not read the key
    /// store (an auditor's) reads every personal payload as erased.
    pub fn of(store: &Store) -> Result<PayloadReader> {
        store.payload_reader()
    }

    /// The subject a stored payload is sealed to, `None` for a plain one: what tells, without
    /// the key store, whether a payload needs a reader at all ([`Self::open`] gives a plain
    /// one back as [`Payload::Plain`]).
    ///
    /// ```
    /// use annals::erasure::PayloadReader;
    /// assert_eq!(PayloadReader::subject_of(b"{\"plain\":true}"), None);
    /// ```
    pub fn subject_of(payload: &[u8]) -> Option<&str> {
        Envelope::parse(payload).map(|envelope| envelope.subject)
    }

    /// `record`'s payload: [`Payload::Plain`] when it is no envelope; [`Payload::Personal`]
    /// opened with its subject's key; [`Payload::Erased`] when the subject's erasure is in the
    /// log or the key store holds no key for it (a follower's, an importer's, a backup's).
    /// A key that does not open it is [`ErasureError::Unopenable`].
    pub fn open<'r>(&self, record: &'r Record) -> Result<Payload<'r>> {
        self.open_as(&record.payload, &record.stream, &record.kind)?
            .ok_or_else(|| {
                let subject = Envelope::parse(&record.payload).map(|envelope| envelope.subject);
                ErasureError::Unopenable {
                    position: record.position,
                    subject: subject.unwrap_or_default().to_owned(),
                }
                .into()
            })
    }

    /// A command field as kept in a projection's row (sealed by [`crate::Command::sealed`]
    /// into the event of its stream and kind, when personal), as [`Self::open`] reads a
    /// payload: [`Payload::Plain`] when they are no envelope, the plaintext, or
    /// [`Payload::Erased`]. Bytes the subject's key does not open for that stream and kind are
    /// [`ErasureError::UnopenableField`].
    pub fn open_field<'f>(&self, field: &SealedField<'f>) -> Result<Payload<'f>> {
        let bytes = field.bytes;
        self.open_as(bytes, &field.stream, field.kind)?
            .ok_or_else(|| {
                let subject = Envelope::parse(bytes).map(|envelope| envelope.subject);
                ErasureError::UnopenableField {
                    stream: field.stream.clone(),
                    kind: field.kind.to_owned(),
                    subject: subject.unwrap_or_default().to_owned(),
                }
                .into()
            })
    }

    /// `bytes` read as sealed into an event of `stream` and `kind`; `None` when the subject's
    /// key is held and does not open them.
    fn open_as<'b>(
        &self,
        bytes: &'b [u8],
        stream: &str,
        kind: &str,
    ) -> Result<Option<Payload<'b>>> {
        let Some(envelope) = Envelope::parse(bytes) else {
            return Ok(Some(Payload::Plain(bytes)));
        };
        let subject = envelope.subject;
        if erasure_position(&self.snapshot, subject)?.is_some() {
            return Ok(Some(Payload::Erased { subject }));
        }
        let Some(key) = self.keys.as_ref().and_then(|keys| keys.key(subject)) else {
            return Ok(Some(Payload::Erased { subject }));
        };
        Ok(envelope
            .open(key, stream, kind)
            .map(|data| Payload::Personal {
                subject,
                data: Zeroizing::new(data),
            }))
    }
}

/// A command's personal `field` sealed with the key store of the log at `log`, whose last
/// commit is `committed` (under the write lock): refused for a subject that is not one, or one
/// erased; the subject's key drawn and kept first when it has none.
pub(crate) fn seal_field(
    log: &Path,
    committed: &Snapshot,
    field: crate::command::PersonalField<'_>,
) -> Result<Vec<u8>> {
    check_subject(field.subject)?;
    if let Some(position) = erasure_position(committed, field.subject)? {
        return Err(ErasureError::Erased {
            subject: field.subject.to_owned(),
            position,
        }
        .into());
    }
    let key = KeyStore::load(log)?.key_or_new(field.subject)?;
    let nonce = match field.sealing {
        crate::command::Sealing::Random => fresh_nonce()?,
        crate::command::Sealing::Derived { context } => envelope::synthetic_nonce(
            &key,
            field.subject,
            field.stream,
            field.kind,
            context,
            field.plaintext,
        ),
    };
    Ok(seal(
        &key,
        &nonce,
        field.subject,
        field.stream,
        field.kind,
        field.plaintext,
    ))
}

/// Refuses a subject's id that is not one ([`ErasureError::Subject`]): one of 1 to 128 bytes
/// of UTF-8 with no control character and no `/`.
pub fn check_subject(subject: &str) -> Result<()> {
    envelope::check_subject(subject).map_err(|problem| {
        ErasureError::Subject {
            subject: subject.to_owned(),
            problem,
        }
        .into()
    })
}

/// The position of `subject`'s erasure event, if the log holds one: the first record of its
/// erasure stream (which only [`Store::erase`] appends to), read from the stream index, so a
/// cut that archived the event does not hide it.
fn erasure_position(snapshot: &Snapshot, subject: &str) -> Result<Option<Position>> {
    let mut first = None;
    snapshot.visit_runs(&erasure_stream(subject), |run| {
        first = Some(Position(run.first_position));
        Ok(false)
    })?;
    Ok(first)
}

/// `event` with its payload sealed for `subject`: the envelope of the record an earlier append
/// with the same idempotency key and plaintext wrote (so the log answers duplicate), else a
/// new one under a fresh nonce.
fn seal_event(
    session: &WriteSession<'_>,
    key: &[u8; KEY_BYTES],
    subject: &str,
    stream: &str,
    event: &NewEvent,
) -> Result<NewEvent> {
    let earlier = match &event.idempotency_key {
        Some(idempotency_key) => earlier_envelope(session, idempotency_key, key, stream, event)?,
        None => None,
    };
    let payload = match earlier {
        Some(envelope) => envelope,
        None => seal(
            key,
            &fresh_nonce()?,
            subject,
            stream,
            &event.kind,
            &event.payload,
        ),
    };
    Ok(NewEvent {
        kind: event.kind.clone(),
        schema: event.schema,
        at_ms: event.at_ms,
        idempotency_key: event.idempotency_key.clone(),
        payload,
    })
}

/// The envelope of the record appended with `idempotency_key`, when it is `event` again: the
/// same stream and kind, and a payload that `key` opens to `event`'s plaintext.
fn earlier_envelope(
    session: &WriteSession<'_>,
    idempotency_key: &str,
    key: &[u8; KEY_BYTES],
    stream: &str,
    event: &NewEvent,
) -> Result<Option<Vec<u8>>> {
    let Some(record) = session.record_of_idempotency_key(idempotency_key)? else {
        return Ok(None);
    };
    let same = record.stream == stream
        && record.kind == event.kind
        && Envelope::parse(&record.payload)
            .and_then(|envelope| envelope.open(key, stream, &event.kind))
            .is_some_and(|plaintext| Zeroizing::new(plaintext).as_slice() == event.payload);
    Ok(same.then_some(record.payload))
}

/// The subjects' keys of a store (its key store beside the log): exported for a trusted
/// replica, and imported there. The keys never travel in records, exports or replication.
#[derive(Clone, Copy, Debug)]
pub struct Keys<'s> {
    store: &'s Store,
}

impl<'s> Keys<'s> {
    /// The key store of `store`.
    pub fn of(store: &'s Store) -> Keys<'s> {
        Keys { store }
    }
}

impl Keys<'_> {
    /// Writes the keys of this log's key store to a new file at `out` (mode `0600`, never
    /// over a file there: `schema/FORMAT.md` 3.17), for a trusted replica to import with
    /// [`crate::erasure::Keys::import`] and read the personal payloads it holds as ciphertext. This is
    /// the only way a key leaves its key store, and it is explicit: exports, backups, archives
    /// and replication never carry a key. A subject whose erasure the log holds is left out,
    /// even while a kill left its key. The file is as sensitive as the key store: a copy kept
    /// after an erasure is a copy taken before it (`docs/erasure.md`).
    ///
    /// Refused with nothing written: a store with no file ([`ErasureError::NoKeyStore`]), a
    /// path that is one of the store's files, or one where a file is.
    pub fn export(&self, out: &Path) -> Result<KeyExport> {
        self.store.export_keys(out)
    }

    /// Adds the keys of a key export ([`crate::erasure::Keys::export`], from a log this one replicates
    /// or was imported from) to this log's key store, under the write lock, in one durable
    /// rewrite: from then on this store reads those subjects' personal payloads, until it
    /// erases them or a replicated erasure comes in (either destroys this copy of the key).
    /// Keys of subjects this log holds the erasure of are not imported; keys it holds already
    /// are left as they are.
    ///
    /// Refused with nothing written: a file that is not a key export
    /// ([`ErasureError::KeyExport`]), a key for a subject this key store holds another key for
    /// ([`ErasureError::KeyConflict`]), a read-only store, a store with no file.
    pub fn import(&self, input: &Path) -> Result<KeyImport> {
        self.store.import_keys(input)
    }
}

impl Snapshot {
    /// Refuses with [`ErasureError::Erased`] a subject this log holds the erasure of, as
    /// [`Store::append_personal`] would.
    pub fn check_not_erased(&self, subject: &str) -> Result<()> {
        check_subject(subject)?;
        match erasure_position(self, subject)? {
            Some(position) => Err(ErasureError::Erased {
                subject: subject.to_owned(),
                position,
            }
            .into()),
            None => Ok(()),
        }
    }
}
