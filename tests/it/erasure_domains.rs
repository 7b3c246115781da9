//! Personal fields inside the built-in domains' commands (issue 55, point 3;
//! `docs/erasure.md`): an outbox row enqueued for a subject (`OutboxCommand::EnqueueFor`) has its
//! payload sealed by the
//! store's write session before the event is hashed; the row keeps the envelope, which
//! `PayloadReader::open_field(&row.payload_field())` reads back while the key stands and as erased after; replay and `verify`
//! give the same rows byte for byte before and after the erasure.

use annals::outbox::{OutboxCommand, OutboxOutcome, OutboxRow};
use annals::{Command, ErasureError, Error, Payload, Store};

use super::erasure::{PLAINTEXT, contains, open};

/// An enqueue of `payload` at `now_ms`, personal to `subject` if one is given.
fn enqueue_with(
    key: &str,
    peer: &str,
    payload: &[u8],
    now_ms: u64,
    subject: Option<&str>,
) -> OutboxCommand {
    let (key, peer, kind, payload) = (key.into(), peer.into(), "message".into(), payload.to_vec());
    match subject {
        Some(subject) => OutboxCommand::EnqueueFor {
            subject: subject.to_owned(),
            key,
            peer,
            kind,
            payload,
            now_ms,
        },
        None => OutboxCommand::Enqueue {
            key,
            peer,
            kind,
            payload,
            now_ms,
        },
    }
}

fn enqueue(key: &str, payload: &[u8], subject: Option<&str>) -> OutboxCommand {
    enqueue_with(key, "mailbox-7", payload, 1_000, subject)
}

fn enqueued(store: &Store, command: &OutboxCommand) -> OutboxRow {
    match store.execute(command).expect("an enqueue") {
        OutboxOutcome::Enqueued { row } => row,
        other => panic!("{other:?}"),
    }
}

fn read(store: &Store, row: &OutboxRow) -> Option<Vec<u8>> {
    let reader = annals::PayloadReader::of(store).unwrap();
    let payload = reader.open_field(&row.payload_field()).unwrap();
    payload.data().map(<[u8]>::to_vec)
}

#[test]
fn an_outbox_payload_with_a_subject_is_sealed_reads_back_then_reads_erased_and_replays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = open(&path);
    let personal = enqueued(&store, &enqueue("mail-1", PLAINTEXT, Some("alice")));
    let plain = enqueued(&store, &enqueue("mail-2", b"plain words", None));
    assert!(
        !contains(&personal.payload, PLAINTEXT),
        "the row keeps the envelope"
    );
    assert_eq!(plain.payload, b"plain words");
    let record = store
        .snapshot()
        .unwrap()
        .get(annals::Position(0))
        .unwrap()
        .unwrap();
    assert!(
        !contains(&record.payload, PLAINTEXT),
        "the event holds the envelope"
    );
    assert_eq!(read(&store, &personal).as_deref(), Some(PLAINTEXT));
    assert_eq!(read(&store, &plain).as_deref(), Some(&b"plain words"[..]));
    let row = annals::outbox::row(&store.snapshot().unwrap().state(), "mail-1")
        .unwrap()
        .unwrap();
    assert_eq!(
        row.payload, personal.payload,
        "the projection keeps the envelope"
    );

    let before = annals::Audit::of(&store)
        .state_json("outbox", None)
        .unwrap();
    store.erase("alice", 2_000).unwrap();
    let reader = annals::PayloadReader::of(&store).unwrap();
    assert_eq!(
        reader.open_field(&row.payload_field()).unwrap(),
        Payload::Erased { subject: "alice" }
    );
    assert_eq!(read(&store, &plain).as_deref(), Some(&b"plain words"[..]));
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("outbox", None)
            .unwrap(),
        before
    );
    annals::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("outbox", None)
            .unwrap(),
        before,
        "replay gives the same rows, envelope and all"
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    let log = std::fs::read(&path).unwrap();
    assert!(!contains(&log, PLAINTEXT), "the log file never held it");

    // An erased subject's field is refused, and nothing is written.
    let head = store.snapshot().unwrap().head().unwrap();
    match store.execute(&enqueue("mail-3", b"again", Some("alice"))) {
        Err(Error::Erasure(ErasureError::Erased { subject, .. })) => assert_eq!(subject, "alice"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap(), head);
}

#[test]
fn a_subject_field_is_refused_unsealed_or_malformed_and_absent_in_the_serde_form_is_not_personal() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    // Decided without the store's sealing, the payload would go in clear: refused.
    let unsealed =
        enqueue("mail-1", PLAINTEXT, Some("alice")).decide(&store.snapshot().unwrap().state());
    match unsealed {
        Err(Error::Erasure(ErasureError::NotSealed { field, subject })) => {
            assert_eq!((field, subject.as_str()), ("payload", "alice"))
        }
        other => panic!("{other:?}"),
    }
    match store.execute(&enqueue("mail-1", b"x", Some("a/b"))) {
        Err(Error::Erasure(ErasureError::Subject { subject, .. })) => assert_eq!(subject, "a/b"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap().next,
        annals::Position(0)
    );
    // The serde form: an enqueue as it was before personal payloads is not personal, and says
    // nothing of a subject; a personal one is a variant of its own.
    let json = r#"{"enqueue":{"key":"k","peer":"p","kind":"message","payload":[1],"now_ms":5}}"#;
    let command: OutboxCommand = serde_json::from_str(json).unwrap();
    assert_eq!(command, enqueue_at("k", &[1], None));
    assert!(!serde_json::to_string(&command).unwrap().contains("subject"));
    let with = serde_json::to_value(enqueue_at("k", &[1], Some("alice"))).unwrap();
    assert_eq!(with["enqueue_for"]["subject"], "alice");
    let back: OutboxCommand = serde_json::from_value(with).unwrap();
    assert_eq!(back, enqueue_at("k", &[1], Some("alice")));
}

fn enqueue_at(key: &str, payload: &[u8], subject: Option<&str>) -> OutboxCommand {
    enqueue_with(key, "p", payload, 5, subject)
}
