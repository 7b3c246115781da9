//! A personal ingested event (issue 55; `docs/erasure.md`): an `IngestCommand` naming a
//! `subject` has its bytes sealed by the store's write session before the event is hashed,
//! under a nonce derived from the subject's key, the event's place and its bytes, so that a
//! retry seals to the same envelope and is a duplicate; the projection keeps the envelope and
//! a hash of it, never the plaintext or a hash of it; `IngestedEvent::bytes_field` reads the
//! plaintext while the key stands and as erased after; replay and `verify` hold; after an
//! erasure and a compaction no file holds the plaintext, its hash or the key.

use annals::ingest::{self, IngestCommand, IngestConflict, IngestOutcome, IngestedEvent};
use annals::{Command, Error, Store, erasure::Payload, error::ErasureError};

use super::erasure::{PLAINTEXT, contains, keys_path, only_key, open};
use super::erasure_domains::{erased_and_compacted, refused_as_erased};
use super::ingest::T0;

/// Event `sequence` of run `r1` of project `p1` (`ingest.rs`'s), with `bytes`, personal to
/// `subject` if one is given.
fn push(sequence: u64, bytes: &[u8], subject: Option<&str>) -> IngestCommand {
    IngestCommand {
        subject: subject.map(str::to_owned),
        ..super::ingest::push(sequence, bytes)
    }
}

fn accepted(store: &Store, command: &IngestCommand) -> IngestedEvent {
    match store.execute(command).expect("an ingest") {
        IngestOutcome::Accepted { event } => event,
        other => panic!("{other:?}"),
    }
}

fn held(store: &Store, sequence: u64) -> IngestedEvent {
    ingest::event(&store.snapshot().unwrap().state(), "p1", "r1", sequence)
        .unwrap()
        .expect("held")
}

fn read(store: &Store, event: &IngestedEvent) -> Option<Vec<u8>> {
    let reader = annals::erasure::PayloadReader::of(store).unwrap();
    let payload = reader.open_field(&event.bytes_field()).unwrap();
    payload.data().map(<[u8]>::to_vec)
}

fn state(store: &Store) -> serde_json::Value {
    annals::Audit::of(store).state_json("ingest", None).unwrap()
}

/// The hex of blake3 of `bytes`: what a projection would hold had it hashed the plaintext.
fn plaintext_hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[test]
fn a_personal_ingest_is_sealed_reads_back_and_its_retry_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let first = accepted(&store, &push(1, PLAINTEXT, Some("alice")));
    assert!(
        !contains(&first.bytes, PLAINTEXT),
        "the event keeps the envelope"
    );
    assert_eq!(first.content_hash.0, *blake3::hash(&first.bytes).as_bytes());
    assert_eq!(held(&store, 1), first, "the projection keeps the envelope");
    assert_eq!(read(&store, &first).as_deref(), Some(PLAINTEXT));
    let record = super::erasure::record(&store, annals::Position(0));
    assert!(
        !contains(&record.payload, PLAINTEXT),
        "the record holds the envelope"
    );

    // A retry, received later, seals to the same envelope: a duplicate, nothing appended.
    let head = store.snapshot().unwrap().head().unwrap();
    let retry = IngestCommand {
        received_at_ms: T0 + 500,
        ..push(1, PLAINTEXT, Some("alice"))
    };
    match store.execute(&retry).unwrap() {
        IngestOutcome::Duplicate { event } => assert_eq!(event, first),
        other => panic!("{other:?}"),
    }
    // Other bytes under the key are a reused sequence, as for a plain ingest.
    match store
        .execute(&push(1, b"other words", Some("alice")))
        .unwrap()
    {
        IngestOutcome::Conflict {
            reason: IngestConflict::SequenceReused,
            existing_hash,
        } => assert_eq!(existing_hash, Some(first.content_hash)),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap(), head);

    // The same bytes at another sequence seal to another envelope: the nonce's context is
    // the event's place, so equal plaintexts meet only in a retry.
    let second = accepted(&store, &push(2, PLAINTEXT, Some("alice")));
    assert_ne!(second.bytes, first.bytes);
    assert_eq!(read(&store, &second).as_deref(), Some(PLAINTEXT));
    let shown = state(&store).to_string();
    assert!(!shown.contains(&annals::display::hex(PLAINTEXT)));
    assert!(
        !shown.contains(&plaintext_hash_hex(PLAINTEXT)),
        "no hash of the plaintext in the projection"
    );
}

#[test]
fn after_erase_a_personal_ingest_reads_erased_replays_the_same_and_its_retry_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let personal = accepted(&store, &push(1, PLAINTEXT, Some("alice")));
    let plain = accepted(&store, &push(2, b"plain words", None));
    assert_eq!(plain.bytes, b"plain words");
    let before = state(&store);

    store.erase("alice", T0 + 1_000).unwrap();
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
    assert_eq!(
        reader.open_field(&held(&store, 1).bytes_field()).unwrap(),
        Payload::Erased { subject: "alice" }
    );
    assert_eq!(
        reader.open_field(&plain.bytes_field()).unwrap(),
        Payload::Plain(b"plain words")
    );
    assert_eq!(state(&store), before, "the rows are as they were");
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(state(&store), before, "replay gives the same rows");
    assert_eq!(held(&store, 1), personal);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());

    // A retry after the erasure cannot be sealed (the key is gone): refused, nothing written.
    refused_as_erased(&store, &push(1, PLAINTEXT, Some("alice")), "alice");
}

#[test]
fn a_personal_ingest_is_refused_unsealed_or_over_the_limit_and_has_a_serde_field_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = open(&path);
    // Decided without the store's sealing, the bytes would go in clear: refused.
    match push(1, PLAINTEXT, Some("alice")).decide(&store.snapshot().unwrap().state()) {
        Err(Error::Erasure(ErasureError::NotSealed { field, subject })) => {
            assert_eq!((field, subject.as_str()), ("bytes", "alice"))
        }
        other => panic!("{other:?}"),
    }
    // The plaintext's limit is checked before a key is made for its subject.
    let over = vec![b'x'; ingest::EVENT_BYTES_MAX + 1];
    match store.execute(&push(1, &over, Some("bob"))) {
        Err(Error::InvalidCommand { field, .. }) => assert_eq!(field, "bytes"),
        other => panic!("{other:?}"),
    }
    match store.execute(&push(1, b"x", Some("a/b"))) {
        Err(Error::Erasure(ErasureError::Subject { subject, .. })) => assert_eq!(subject, "a/b"),
        other => panic!("{other:?}"),
    }
    assert!(!keys_path(&path).exists(), "no key made");
    let at_limit = vec![b'x'; ingest::EVENT_BYTES_MAX];
    accepted(&store, &push(1, &at_limit, Some("bob")));
    // The serde form: an ingest with no subject says nothing of one, and reads as before.
    let plain = serde_json::to_value(push(3, &[1], None)).unwrap();
    assert!(plain.get("subject").is_none(), "{plain}");
    let back: IngestCommand = serde_json::from_value(plain).unwrap();
    assert_eq!(back, push(3, &[1], None));
    let with = serde_json::to_value(push(3, &[1], Some("alice"))).unwrap();
    assert_eq!(with["subject"], "alice");
    let back: IngestCommand = serde_json::from_value(with).unwrap();
    assert_eq!(back, push(3, &[1], Some("alice")));
}

/// Point 5 for ingested events: after `erase` and `compact`, no file of the store holds the
/// plaintext, a hash of it, or its subject's key.
#[test]
fn after_erase_and_compact_no_file_holds_an_ingested_plaintext_its_hash_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = open(&path);
    accepted(&store, &push(1, PLAINTEXT, Some("alice")));
    let key = only_key(&path);
    let hash = blake3::hash(PLAINTEXT);
    for file in &erased_and_compacted(store, "alice", dir.path()) {
        let bytes = std::fs::read(file).unwrap();
        for (what, needle) in [
            ("the plaintext", PLAINTEXT),
            ("the plaintext's hash", hash.as_bytes().as_slice()),
            ("the key", key.as_slice()),
        ] {
            assert!(!contains(&bytes, needle), "{} holds {what}", file.display());
        }
    }
    let store = open(&path);
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
    let event = held(&store, 1);
    let read = reader.open_field(&event.bytes_field()).unwrap();
    assert_eq!(read, Payload::Erased { subject: "alice" });
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}
