//! Golden event payload vectors (`schema/vectors/events.json`): the log that emits every
//! catalogued kind, the decoders' re-encoding, and the text the generator writes. The
//! generator is an example run by hand (`cargo run --example write_event_vectors --features
//! testing`); the tests check the committed file against the decoders. Never used outside the
//! tests and that example.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::consumers::{ConsumerCommand, ConsumerEvent};
use crate::ingest::IngestEvent;
use crate::leases::LeaseEvent;
use crate::outbox::OutboxEvent;
use crate::registry::RegistryEvent;
use crate::runs::{RunEvent, SpanCommand, SpanCommandOutcome};
use crate::testing::internals::demo::Rng;
use crate::testing::internals::event::DomainEvent;
use crate::testing::internals::hash::hex;
use crate::testing::setup::ExpectDone;
use crate::{Direction, Position, Record, Store, hash::Digest, record::StreamVersion};

/// (projection, kind, schema) for every kind the store's projections declare.
pub fn catalogue(store: &Store) -> BTreeSet<(String, String, u16)> {
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

/// A log holding every catalogued kind: the demo, then random commands until all appear.
pub fn emit_every_kind(store: &Store) {
    crate::testing::internals::demo::run(store, 2_000, |_| {}).unwrap();
    // A position whose bytes differ, so that their order shows in the payload vector.
    let handled = store.get(Position(0x0102)).unwrap().unwrap();
    let checkpoint = ConsumerCommand::checkpoint_after("demo-reader", &handled, handled.at_ms);
    store.execute(&checkpoint).unwrap().expect_done();
    append_personal_span_event(store, handled.at_ms);
    let wanted: BTreeSet<String> = catalogue(store)
        .into_iter()
        .map(|(_, kind, _)| kind)
        .collect();
    let mut rng = Rng::new(7);
    let mut now_ms = crate::testing::internals::demo::DEMO_EPOCH_MS * 2;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for _ in 0..600 {
        seen = store
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
                    crate::testing::random::random_command(&mut rng, session, now_ms);
                }
                Ok(())
            })
            .unwrap();
    }
    let missing: Vec<&String> = wanted.difference(&seen).collect();
    panic!("random commands did not emit every catalogued kind: {missing:?} missing");
}

/// A personal span event (the demo's and the random commands' are all plain) on the first span
/// that took an event.
fn append_personal_span_event(store: &Store, now_ms: u64) {
    let plain = store
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
        .into_iter()
        .find_map(|record| match RunEvent::from_record(&record).unwrap() {
            Some(RunEvent::EventAppended(event)) => Some(event),
            _ => None,
        })
        .expect("the demo appends span events");
    let personal = SpanCommand::AppendEventFor {
        subject: "demo-subject".into(),
        run: plain.run,
        span: plain.span,
        event_type: "prompt".into(),
        payload: b"a prompt".to_vec(),
        now_ms,
    };
    match store.execute(&personal).unwrap() {
        SpanCommandOutcome::EventAppended { .. } => {}
        other => panic!("{other:?}"),
    }
}

/// The event in `record` re-encoded at its kind's current schema, through its domain's decoder.
pub fn reencode(record: &Record) -> Vec<u8> {
    fn via<E: DomainEvent>(record: &Record) -> Option<Vec<u8>> {
        E::from_record(record).unwrap().map(|event| event.payload())
    }
    via::<LeaseEvent>(record)
        .or_else(|| via::<ConsumerEvent>(record))
        .or_else(|| via::<RegistryEvent>(record))
        .or_else(|| via::<OutboxEvent>(record))
        .or_else(|| via::<RunEvent>(record))
        .or_else(|| via::<IngestEvent>(record))
        .unwrap_or_else(|| panic!("no domain decodes {}", record.kind))
}

/// A record of `kind` at `schema` holding `payload`, as a vector's decoder reads it.
pub fn record(kind: &str, schema: u16, at_ms: u64, payload: Vec<u8>) -> Record {
    Record {
        position: Position(0),
        stream: "vector".into(),
        version: StreamVersion(0),
        kind: kind.into(),
        schema,
        at_ms,
        idempotency_key: None,
        payload_hash: crate::testing::internals::hash::payload_hash(&payload),
        payload,
        prev: Digest::ZERO,
        hash: Digest::ZERO,
    }
}

/// The text of `schema/vectors/events.json` made from `store`, a new empty log: the first
/// record of every kind and schema the demo and random commands write, and a vector for each
/// schema the code no longer writes, so that its upcaster stays pinned.
pub fn vectors_text(store: &Store) -> String {
    emit_every_kind(store);
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
    let v1 = crate::testing::internals::event::encode_payload(&crate::leases::events::AcquiredV1 {
        resource: "deploy-lock".into(),
        holder: "agent-7".into(),
        token: 3,
        ttl_ms: 30_000,
    });
    first.insert(
        ("lease.acquired".into(), 1),
        record("lease.acquired", 1, 1_767_225_600_000, v1),
    );
    // The schemas the code no longer writes keep a vector each, so their upcasters stay
    // pinned.
    let old: [(&str, u16, Vec<u8>); 3] = [
        (
            "lease.acquired",
            2,
            crate::testing::internals::event::encode_payload(&crate::leases::events::AcquiredV2 {
                resource: "deploy-lock".into(),
                holder: "agent-7".into(),
                token: 3,
                expires_at_ms: 1_767_225_630_000,
            }),
        ),
        (
            "lease.renewed",
            1,
            crate::testing::internals::event::encode_payload(&crate::leases::events::RenewedV1 {
                resource: "deploy-lock".into(),
                token: 3,
                expires_at_ms: 1_767_225_660_000,
            }),
        ),
        (
            "outbox.enqueued",
            1,
            crate::testing::internals::event::encode_payload(&crate::outbox::events::EnqueuedV1 {
                key: "delivery-s1-1".into(),
                peer: "hub-eu".into(),
                payload: br#"{"to":"hub-eu","seq":1}"#.to_vec(),
            }),
        ),
    ];
    for (kind, schema, payload) in old {
        first.insert(
            (kind.into(), schema),
            record(kind, schema, 1_767_225_600_000, payload),
        );
    }
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
    serde_json::to_string_pretty(&vectors).expect("JSON values serialize") + "\n"
}
