//! The event catalogue: `schema/EVENTS.md` lists exactly the kinds the code declares, every
//! kind the code emits is declared, and the committed payload vectors of every kind still
//! decode (old schemas through their upcasters) and re-encode to the bytes committed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use annals::consumers::{ConsumerCommand, ConsumerEvent};
use annals::leases::LeaseEvent;
use annals::outbox::OutboxEvent;
use annals::registry::RegistryEvent;
use annals::runs::RunEvent;
use annals::testing::internals::demo::Rng;
use annals::testing::internals::event::DomainEvent;
use annals::testing::internals::hash::{hex, unhex};
use annals::{Digest, Direction, Position, Record, Store, StreamVersion};
use serde_json::{Value, json};

/// (projection, kind, schema) for every kind the store's projections declare.
fn catalogue(store: &Store) -> BTreeSet<(String, String, u16)> {
    store
        .projections()
        .iter()
        .flat_map(|p| {
            p.catalogue()
                .iter()
                .map(|e| (p.name().to_owned(), e.kind.to_owned(), e.schema))
        })
        .collect()
}

fn temporary_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    (dir, store)
}

fn document() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/schema/EVENTS.md")).unwrap()
}

#[test]
fn the_summary_in_events_md_is_exactly_the_code_catalogue() {
    let (_dir, store) = temporary_store();
    let document = document();
    let summary = document
        .split("\n## Summary\n")
        .nth(1)
        .expect("a summary section");
    let summary = summary.split("\n## ").next().unwrap_or(summary);
    let documented: BTreeSet<(String, String, u16)> = summary
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let kind = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((
                cells.get(3)?.to_string(),
                kind.to_owned(),
                cells.get(2)?.parse().ok()?,
            ))
        })
        .collect();
    assert_eq!(documented, catalogue(&store));
}

#[test]
fn every_catalogued_kind_has_a_section_in_events_md() {
    let (_dir, store) = temporary_store();
    let document = document();
    for (_, kind, schema) in catalogue(&store) {
        let heading = format!("### `{kind}` (schema {schema})");
        assert!(document.contains(&heading), "EVENTS.md lacks {heading:?}");
    }
}

#[test]
fn every_kind_the_demo_and_random_commands_emit_is_catalogued() {
    let (_dir, store) = temporary_store();
    emit_every_kind(&store);
    let catalogue = catalogue(&store);
    for record in store
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
    {
        let Some(owner) = store.projections().owner_of_kind(&record.kind) else {
            continue;
        };
        let entry = (owner.to_owned(), record.kind.clone(), record.schema);
        assert!(
            catalogue.contains(&entry),
            "emitted but not catalogued: {entry:?}"
        );
    }
}

/// A log holding every catalogued kind: the demo, then random commands until all appear.
fn emit_every_kind(store: &Store) {
    annals::testing::internals::demo::run(store, 2_000, |_| {}).unwrap();
    // A position whose bytes differ, so that their order shows in the payload vector.
    let handled = store.get(Position(0x0102)).unwrap().unwrap();
    let checkpoint = ConsumerCommand::checkpoint_after("demo-reader", &handled, handled.at_ms);
    let _ = store.execute(&checkpoint).unwrap();
    let wanted: BTreeSet<String> = catalogue(store)
        .into_iter()
        .map(|(_, kind, _)| kind)
        .collect();
    let mut rng = Rng::new(7);
    let mut now_ms = annals::testing::internals::demo::DEMO_EPOCH_MS * 2;
    for _ in 0..200 {
        let seen: BTreeSet<String> = store
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap()
            .into_iter()
            .map(|r| r.kind)
            .collect();
        if wanted.is_subset(&seen) {
            return;
        }
        store
            .write(|session| {
                for _ in 0..50 {
                    now_ms += rng.below(40);
                    annals::testing::random::random_command(&mut rng, session, now_ms);
                }
                Ok(())
            })
            .unwrap();
    }
    let seen: BTreeSet<String> = store
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
        .into_iter()
        .map(|r| r.kind)
        .collect();
    let missing: Vec<&String> = wanted.difference(&seen).collect();
    panic!("random commands did not emit every catalogued kind: {missing:?} missing");
}

fn vectors_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/vectors/events.json"
    ))
}

/// The event in `record` re-encoded at its kind's current schema, through its domain's decoder.
fn reencode(record: &Record) -> Vec<u8> {
    fn via<E: DomainEvent>(record: &Record) -> Option<Vec<u8>> {
        E::from_record(record).unwrap().map(|event| event.payload())
    }
    via::<LeaseEvent>(record)
        .or_else(|| via::<ConsumerEvent>(record))
        .or_else(|| via::<RegistryEvent>(record))
        .or_else(|| via::<OutboxEvent>(record))
        .or_else(|| via::<RunEvent>(record))
        .unwrap_or_else(|| panic!("no domain decodes {}", record.kind))
}

fn record(kind: &str, schema: u16, at_ms: u64, payload: Vec<u8>) -> Record {
    Record {
        position: Position(0),
        stream: "vector".into(),
        version: StreamVersion(0),
        kind: kind.into(),
        schema,
        at_ms,
        idempotency_key: None,
        payload_hash: annals::testing::internals::hash::payload_hash(&payload),
        payload,
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    }
}

#[test]
fn every_committed_payload_vector_decodes_and_reencodes() {
    let text = std::fs::read_to_string(vectors_path()).unwrap();
    let vectors: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut covered = BTreeSet::new();
    for vector in &vectors {
        let kind = vector["kind"].as_str().unwrap();
        let schema = vector["schema"].as_u64().unwrap() as u16;
        let at_ms = vector["at_ms"].as_u64().unwrap();
        let payload = unhex(vector["payload_hex"].as_str().unwrap()).unwrap();
        let current = unhex(vector["current_payload_hex"].as_str().unwrap()).unwrap();
        let decoded = reencode(&record(kind, schema, at_ms, payload));
        assert_eq!(
            hex(&decoded),
            hex(&current),
            "vector {kind} schema {schema}"
        );
        covered.insert((kind.to_owned(), schema));
    }
    let (_dir, store) = temporary_store();
    for (_, kind, schema) in catalogue(&store) {
        assert!(
            covered.contains(&(kind.clone(), schema)),
            "no vector for {kind} schema {schema}"
        );
    }
    assert!(
        covered.contains(&("lease.acquired".to_owned(), 1)),
        "the upcast schema has a vector"
    );
}

#[test]
fn a_flipped_payload_vector_byte_does_not_decode_to_the_same_event() {
    let text = std::fs::read_to_string(vectors_path()).unwrap();
    let vectors: Vec<Value> = serde_json::from_str(&text).unwrap();
    let vector = vectors
        .iter()
        .find(|v| v["kind"] == "lease.acquired" && v["schema"] == 2)
        .unwrap();
    let mut payload = unhex(vector["payload_hex"].as_str().unwrap()).unwrap();
    let last = payload.len() - 1;
    payload[last] ^= 0x01;
    let decoded =
        LeaseEvent::from_record(&record("lease.acquired", 2, 0, payload.clone())).unwrap();
    assert_ne!(
        decoded.map(|e| e.payload()),
        Some(unhex(vector["payload_hex"].as_str().unwrap()).unwrap())
    );
    payload.pop();
    assert!(
        LeaseEvent::from_record(&record("lease.acquired", 2, 0, payload)).is_err(),
        "a short payload is refused"
    );
}

#[test]
fn write_event_vectors_when_asked() {
    if std::env::var("ANNALS_WRITE_VECTORS").as_deref() != Ok("1") {
        return;
    }
    let (_dir, store) = temporary_store();
    emit_every_kind(&store);
    let mut first: BTreeMap<(String, u16), Record> = BTreeMap::new();
    for record in store
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
    {
        if store.projections().owner_of_kind(&record.kind).is_some() {
            first
                .entry((record.kind.clone(), record.schema))
                .or_insert(record);
        }
    }
    let v1 =
        annals::testing::internals::event::encode_payload(&annals::leases::events::AcquiredV1 {
            resource: "deploy-lock".into(),
            holder: "agent-7".into(),
            token: 3,
            ttl_ms: 30_000,
        });
    first.insert(
        ("lease.acquired".into(), 1),
        record("lease.acquired", 1, 1_767_225_600_000, v1),
    );
    let vectors: Vec<Value> = first
        .values()
        .map(|r| {
            json!({
                "kind": r.kind,
                "schema": r.schema,
                "at_ms": r.at_ms,
                "payload_hex": hex(&r.payload),
                "current_payload_hex": hex(&reencode(r)),
            })
        })
        .collect();
    let text = serde_json::to_string_pretty(&vectors).unwrap() + "\n";
    std::fs::write(vectors_path(), text).unwrap();
}
