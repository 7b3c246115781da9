//! The event catalogue: `schema/EVENTS.md` lists exactly the kinds the code declares, every
//! kind the code emits is declared, and the committed payload vectors of every kind still
//! decode (old schemas through their upcasters) and re-encode to the bytes committed.

use std::collections::BTreeSet;
use std::path::PathBuf;

use annals::leases::LeaseEvent;
use annals::testing::event_vectors::{catalogue, emit_every_kind, record, reencode};
use annals::testing::internals::event::DomainEvent;
use annals::testing::internals::hash::{hex, unhex};
use annals::{Direction, Position, Store};
use serde_json::Value;

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
        .snapshot()
        .unwrap()
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

fn vectors_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schema/vectors/events.json"
    ))
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
