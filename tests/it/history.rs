//! Entity history: for an entity of every kind, the records `history` returns are exactly
//! those a scan of the whole log finds in the entity's streams, in log order.

use std::collections::BTreeSet;

use annals::{Direction, Error, Position, Record, Store, error::AuditError};
use annals::{audit::Entity, testing::internals::audit::history};

fn demo_records(store: &Store) -> Vec<Record> {
    annals::testing::internals::demo::run(store, 1_500, |_| {}).unwrap();
    store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
}

/// The entity spec of the first stream with `prefix`, as `kind:<rest>`.
fn first_entity(records: &[Record], prefix: &str, kind: &str) -> Entity {
    let record = records
        .iter()
        .find(|record| record.stream.starts_with(prefix))
        .unwrap_or_else(|| panic!("the demo writes no {prefix} stream"));
    Entity::parse(&format!("{kind}:{}", &record.stream[prefix.len()..])).unwrap()
}

#[test]
fn history_is_every_record_of_the_entitys_streams_in_log_order() {
    let (_dir, store) = crate::common::store();
    let records = demo_records(&store);
    let entities = [
        first_entity(&records, "lease/", "lease"),
        first_entity(&records, "outbox/", "outbox"),
        first_entity(&records, "run/", "run"),
        first_entity(&records, "registry/", "registry"),
        first_entity(&records, "registry-setting/", "setting"),
        Entity::parse(&format!("stream:{}", records[7].stream)).unwrap(),
    ];
    let snapshot = store.snapshot().unwrap();
    for entity in &entities {
        let streams: BTreeSet<String> = entity.streams().iter().cloned().collect();
        let expected: Vec<&Record> = records
            .iter()
            .filter(|record| streams.contains(&record.stream))
            .collect();
        let found = history(&snapshot, entity).unwrap();
        assert!(!found.is_empty(), "{entity}: no history");
        assert_eq!(found.iter().collect::<Vec<_>>(), expected, "{entity}");
        assert_eq!(annals::Audit::of(&store).history(entity).unwrap(), found);
    }
}

#[test]
fn a_registry_handles_history_merges_its_fuel_ledger_by_position() {
    let (_dir, store) = crate::common::store();
    let records = demo_records(&store);
    let handle = records
        .iter()
        .find_map(|record| record.stream.strip_prefix("fuel/"))
        .expect("the demo charges fuel")
        .to_owned();
    let found = annals::Audit::of(&store)
        .history(&Entity::parse(&format!("registry:{handle}")).unwrap())
        .unwrap();
    let streams: BTreeSet<&str> = found.iter().map(|r| r.stream.as_str()).collect();
    assert!(
        streams.contains(format!("registry/{handle}").as_str()),
        "{streams:?}"
    );
    assert!(
        streams.contains(format!("fuel/{handle}").as_str()),
        "{streams:?}"
    );
    assert!(
        found
            .windows(2)
            .all(|pair| pair[0].position < pair[1].position)
    );
}

#[test]
fn an_unknown_entity_is_empty_and_a_malformed_spec_is_refused() {
    let (_dir, store) = crate::common::store();
    crate::common::append_one(&store, "deploy/web", b"v1");
    // Lane and consumer streams are named as their domains name them.
    assert_eq!(
        Entity::parse("lane:builds/k-1").unwrap().streams(),
        ["lease-lane/builds/k-1"]
    );
    assert_eq!(
        Entity::parse("consumer:mailer").unwrap().streams(),
        ["consumer/mailer"]
    );
    let nothing = Entity::parse("lease:no-such-lock").unwrap();
    assert!(
        annals::Audit::of(&store)
            .history(&nothing)
            .unwrap()
            .is_empty()
    );
    for spec in ["deploy-lock", "lease:", "widget:x", "lane:no-key"] {
        assert!(
            matches!(
                Entity::parse(spec),
                Err(Error::Audit(AuditError::Entity { .. }))
            ),
            "{spec}"
        );
    }
    let web = annals::Audit::of(&store)
        .history(&Entity::parse("stream:deploy/web").unwrap())
        .unwrap();
    assert_eq!(web.len(), 1);
}
