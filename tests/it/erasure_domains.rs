//! Personal fields inside the built-in domains' commands (issue 55, point 3;
//! `docs/erasure.md`): an outbox row enqueued for a subject (`OutboxCommand::EnqueueFor`) and a
//! span event appended for one (`SpanCommand::AppendEventFor`) have their payload sealed by the
//! store's write session before the event is hashed; the row or the event keeps the envelope,
//! which `PayloadReader::open_field(&….payload_field())` reads back while the key stands and
//! as erased after; replay and `verify` give the same rows byte for byte before and after the
//! erasure, and after a compaction no file holds the plaintext.

use annals::outbox::{OutboxCommand, OutboxOutcome, OutboxRow};
use annals::runs::{Attributes, SpanCommand, SpanCommandOutcome, SpanEvent, SpanKind, SpanOrigin};
use annals::{Command, Error, Store, erasure::Payload, error::ErasureError};

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
    let reader = annals::erasure::PayloadReader::of(store).unwrap();
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
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
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
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
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
    refused_as_erased(&store, &enqueue("mail-3", b"again", Some("alice")), "alice");
}

/// Checks that `command` is refused because `subject` was erased, and writes nothing.
pub(crate) fn refused_as_erased<C: Command>(store: &Store, command: &C, subject: &str)
where
    C::Outcome: std::fmt::Debug,
{
    let head = store.snapshot().unwrap().head().unwrap();
    match store.execute(command) {
        Err(Error::Erasure(ErasureError::Erased {
            subject: erased, ..
        })) => {
            assert_eq!(erased, subject)
        }
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

const RUN: &str = "run-1";
const SPAN: &str = "turn-1";

/// A store whose run `run-1` has its root span `turn-1` open.
fn with_open_span(path: &std::path::Path) -> Store {
    let store = open(path);
    let start = SpanCommand::Start {
        run: RUN.into(),
        span: SPAN.into(),
        parent: None,
        name: "turn".into(),
        kind: SpanKind::Turn,
        origin: SpanOrigin::Session,
        session_id: None,
        job_name: None,
        attributes: Attributes::new(),
        billing_mode: None,
        writer: "host-1".into(),
        now_ms: 1_000,
    };
    match store.execute(&start).unwrap() {
        SpanCommandOutcome::Started { .. } => store,
        other => panic!("{other:?}"),
    }
}

fn personal_event(subject: &str, payload: &[u8]) -> SpanCommand {
    SpanCommand::AppendEventFor {
        subject: subject.into(),
        run: RUN.into(),
        span: SPAN.into(),
        event_type: "prompt".into(),
        payload: payload.to_vec(),
        now_ms: 1_100,
    }
}

fn appended(store: &Store, command: &SpanCommand) -> u64 {
    match store.execute(command).expect("a span event") {
        SpanCommandOutcome::EventAppended {
            event_index,
            truncated: false,
            ..
        } => event_index,
        other => panic!("{other:?}"),
    }
}

fn span_events(store: &Store) -> Vec<SpanEvent> {
    annals::runs::events(&store.snapshot().unwrap().state(), RUN, SPAN).unwrap()
}

#[test]
fn a_span_event_with_a_subject_is_sealed_reads_back_then_reads_erased_and_replays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = with_open_span(&path);
    assert_eq!(appended(&store, &personal_event("alice", PLAINTEXT)), 0);
    let plain = SpanCommand::AppendEvent {
        run: RUN.into(),
        span: SPAN.into(),
        event_type: "log".into(),
        payload: "plain words".into(),
        payload_bytes_max: None,
        now_ms: 1_200,
    };
    assert_eq!(appended(&store, &plain), 1);
    let events = span_events(&store);
    let (personal, plain) = (&events[0], &events[1]);
    let sealed = personal.personal.as_ref().expect("kept sealed");
    assert_eq!(sealed.subject, "alice");
    assert!(personal.payload.is_empty(), "no text stands in for it");
    assert!(!contains(&sealed.envelope, PLAINTEXT));
    assert_eq!(
        (plain.payload.as_str(), plain.personal.is_none()),
        ("plain words", true)
    );
    let record = store
        .snapshot()
        .unwrap()
        .get(annals::Position(personal.position))
        .unwrap()
        .unwrap();
    assert_eq!(record.kind, "run.personal_event_appended");
    assert!(
        !contains(&record.payload, PLAINTEXT),
        "the event holds the envelope"
    );
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
    let opened = reader.open_field(&personal.payload_field()).unwrap();
    assert_eq!(opened.data(), Some(PLAINTEXT));
    let opened = reader.open_field(&plain.payload_field()).unwrap();
    assert_eq!(opened, Payload::Plain(b"plain words"));

    let before = annals::Audit::of(&store).state_json("runs", None).unwrap();
    store.erase("alice", 2_000).unwrap();
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
    let events = span_events(&store);
    assert_eq!(
        reader.open_field(&events[0].payload_field()).unwrap(),
        Payload::Erased { subject: "alice" }
    );
    assert_eq!(events[1], *plain, "a plain event is untouched");
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(
        annals::Audit::of(&store).state_json("runs", None).unwrap(),
        before,
        "replay: the same rows"
    );
    assert_eq!(span_events(&store), events);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    assert!(!contains(&std::fs::read(&path).unwrap(), PLAINTEXT));

    // An erased subject's event is refused, and nothing is written.
    refused_as_erased(&store, &personal_event("alice", b"again"), "alice");
}

#[test]
fn a_personal_span_event_is_refused_unsealed_or_over_the_cap_and_has_a_serde_form_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = with_open_span(&path);
    let head = store.snapshot().unwrap().head().unwrap();
    match personal_event("alice", PLAINTEXT).decide(&store.snapshot().unwrap().state()) {
        Err(Error::Erasure(ErasureError::NotSealed { field, subject })) => {
            assert_eq!((field, subject.as_str()), ("payload", "alice"))
        }
        other => panic!("{other:?}"),
    }
    // Never cut: sealed before it decides, so a payload over the cap is refused, before a
    // key is made for its subject.
    let over = vec![b'x'; annals::runs::EVENT_PAYLOAD_BYTES_MAX as usize + 1];
    match store.execute(&personal_event("bob", &over)) {
        Err(Error::InvalidCommand { field, .. }) => assert_eq!(field, "payload"),
        other => panic!("{other:?}"),
    }
    assert_eq!(store.snapshot().unwrap().head().unwrap(), head);
    assert!(!super::erasure::keys_path(&path).exists(), "no key made");
    let at_cap = vec![b'x'; annals::runs::EVENT_PAYLOAD_BYTES_MAX as usize];
    assert_eq!(appended(&store, &personal_event("bob", &at_cap)), 0);
    // The serde form: a variant of its own; the plain event's is as it was.
    let json = serde_json::to_value(personal_event("alice", &[1])).unwrap();
    assert_eq!(json["event_for"]["subject"], "alice");
    let back: SpanCommand = serde_json::from_value(json).unwrap();
    assert_eq!(back, personal_event("alice", &[1]));
}

/// Point 5 for span events: after `erase` and `compact`, no file of the store holds a span
/// event's plaintext or its subject's key.
#[test]
fn after_erase_and_compact_no_file_holds_a_span_events_plaintext_or_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = with_open_span(&path);
    appended(&store, &personal_event("alice", PLAINTEXT));
    let key = super::erasure::only_key(&path);
    for file in &erased_and_compacted(store, "alice", dir.path()) {
        let bytes = std::fs::read(file).unwrap();
        assert!(
            !contains(&bytes, PLAINTEXT),
            "{} holds the plaintext",
            file.display()
        );
        assert!(!contains(&bytes, &key), "{} holds the key", file.display());
    }
    let store = open(&path);
    let reader = annals::erasure::PayloadReader::of(&store).unwrap();
    let events = span_events(&store);
    let read = reader.open_field(&events[0].payload_field()).unwrap();
    assert_eq!(read, Payload::Erased { subject: "alice" });
}

/// Erases `subject` from `store`, closes it, compacts its log (`log.redb` in `dir`) and gives
/// every file under `dir`, at least the log and its key store.
pub(crate) fn erased_and_compacted(
    store: Store,
    subject: &str,
    dir: &std::path::Path,
) -> Vec<std::path::PathBuf> {
    store.erase(subject, 2_000).unwrap();
    store.close().unwrap();
    let wait = std::time::Duration::from_secs(5);
    annals::maintenance::Compaction::of_file(dir.join("log.redb"), wait)
        .unwrap()
        .bytes_reclaimed();
    let mut files = Vec::new();
    super::erasure::files_under(dir, &mut files);
    assert!(files.len() >= 2, "{files:?}");
    files
}
