//! The projection engine: custom projections beside the built-in ones, apply inside the
//! append's transaction, checkpoints, rebuild on a version change, catch-up after a lag,
//! verify against a replay, and schema upcasting.

use annals::testing::setup::ExpectDone;
use std::sync::Arc;

use annals::leases::events::{Acquired, AcquiredV1, LeaseEvent};
use annals::leases::{self, LeaseCommand, LeaseOutcome, LeaseRefusal};
use annals::projection::{Table, WriteTables};
use annals::testing::internals::event::{DomainEvent, encode_payload};
use annals::{
    Error, ExpectedVersion, NewEvent, Position, Record, Result, Store, StoreOptions,
    audit::Problem, error::ProjectionError, projection::Projection,
};
use redb::ReadableTable;

use crate::common::{COUNTS, KindCounts, event};

fn open_with(path: &std::path::Path, projection: Option<KindCounts>) -> Store {
    let projections: Vec<Arc<dyn Projection>> = match projection {
        Some(p) => vec![Arc::new(p)],
        None => Vec::new(),
    };
    let options = StoreOptions {
        create: true,
        projections,
        ..StoreOptions::default()
    };
    Store::open_with(path, options).unwrap()
}

fn count(store: &Store, kind: &str) -> Option<u64> {
    COUNTS
        .get(&store.snapshot().unwrap().state(), &kind.to_owned())
        .unwrap()
}

fn append(store: &Store, kind: &str) {
    store
        .append("s", ExpectedVersion::Any, &[event(kind, 0, b"")])
        .unwrap()
        .expect_done();
}

#[test]
fn a_custom_projection_is_applied_with_every_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_with(
        &dir.path().join("log.redb"),
        Some(KindCounts {
            version: 1,
            weight: 1,
        }),
    );
    append(&store, "a");
    append(&store, "a");
    append(&store, "b");
    assert_eq!((count(&store, "a"), count(&store, "b")), (Some(2), Some(1)));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_changed_version_rebuilds_the_projection_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = open_with(
            &path,
            Some(KindCounts {
                version: 1,
                weight: 1,
            }),
        );
        append(&store, "a");
        append(&store, "a");
    }
    let store = open_with(
        &path,
        Some(KindCounts {
            version: 2,
            weight: 10,
        }),
    );
    assert_eq!(
        count(&store, "a"),
        Some(20),
        "rebuilt from the log by the new version"
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_lagging_projection_is_caught_up_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = open_with(
            &path,
            Some(KindCounts {
                version: 1,
                weight: 1,
            }),
        );
        append(&store, "a");
    }
    {
        // Opened without it: its checkpoint stays behind while the log grows.
        let store = open_with(&path, None);
        append(&store, "a");
        append(&store, "b");
    }
    let store = open_with(
        &path,
        Some(KindCounts {
            version: 1,
            weight: 1,
        }),
    );
    assert_eq!((count(&store, "a"), count(&store, "b")), (Some(2), Some(1)));
    let checkpoint = store
        .snapshot()
        .unwrap()
        .checkpoint("kind_counts")
        .unwrap()
        .unwrap();
    assert_eq!((checkpoint.version, checkpoint.next), (1, Position(3)));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_projection_registered_late_is_built_from_the_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = open_with(&path, None);
        store
            .write(|session| {
                for _ in 0..20_000 {
                    session
                        .append("s", ExpectedVersion::Any, &[event("a", 0, b"")])?
                        .expect_done();
                }
                Ok(())
            })
            .unwrap();
    }
    let store = open_with(
        &path,
        Some(KindCounts {
            version: 1,
            weight: 1,
        }),
    );
    assert_eq!(
        count(&store, "a"),
        Some(20_000),
        "replayed across several batches"
    );
}

#[test]
fn later_commands_in_one_transaction_see_earlier_effects() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    let acquire = |holder: &str| LeaseCommand::Acquire {
        resource: "r".into(),
        holder: holder.into(),
        ttl_ms: 100,
        now_ms: 0,
    };
    let (first, second) = store
        .write(|session| {
            Ok((
                session.execute(&acquire("a"))?,
                session.execute(&acquire("b"))?,
            ))
        })
        .unwrap();
    assert!(matches!(first, LeaseOutcome::Granted { .. }));
    assert!(matches!(
        second,
        LeaseOutcome::Refused {
            reason: LeaseRefusal::Held,
            ..
        }
    ));
}

#[test]
fn a_failed_write_leaves_log_and_projections_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    let acquire = LeaseCommand::Acquire {
        resource: "r".into(),
        holder: "a".into(),
        ttl_ms: 100,
        now_ms: 0,
    };
    let result: Result<()> = store.write(|session| {
        session.execute(&acquire)?.expect_done();
        session
            .append("s", ExpectedVersion::NoStream, &[event("k", 0, b"")])?
            .expect_done();
        session
            .append("s", ExpectedVersion::NoStream, &[event("k", 0, b"")])?
            .expect_done();
        Ok(())
    });
    assert!(result.is_err());
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(0));
    assert_eq!(
        leases::lease(&store.snapshot().unwrap().state(), "r").unwrap(),
        None
    );
}

#[test]
fn registering_a_duplicate_or_a_table_outside_the_prefix_is_refused() {
    struct Stray;
    impl Projection for Stray {
        fn name(&self) -> &'static str {
            "stray"
        }
        fn version(&self) -> u32 {
            1
        }
        fn tables(&self) -> &'static [&'static str] {
            &["leases.held"]
        }
        fn apply(&self, _: &WriteTables<'_>, _: &Record) -> Result<()> {
            Ok(())
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let attempts: Vec<(Vec<Arc<dyn Projection>>, ProjectionError)> = vec![
        (
            vec![Arc::new(Stray)],
            ProjectionError::TableOutsidePrefix {
                projection: "stray".into(),
                table: "leases.held".into(),
            },
        ),
        (
            vec![
                Arc::new(KindCounts {
                    version: 1,
                    weight: 1,
                }),
                Arc::new(KindCounts {
                    version: 1,
                    weight: 1,
                }),
            ],
            ProjectionError::Duplicate {
                name: "kind_counts".into(),
            },
        ),
    ];
    for (projections, expected) in attempts {
        let options = StoreOptions {
            create: true,
            projections,
            ..StoreOptions::default()
        };
        match Store::open_with(&path, options) {
            Err(Error::Projection(found)) => assert_eq!(found, expected),
            other => panic!("expected {expected:?}, got {:?}", other.err()),
        }
    }
}

#[test]
fn a_projection_asked_for_by_a_name_none_has_is_refused_with_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    let unknown = ProjectionError::Unknown {
        name: "nowhere".into(),
    };
    match annals::Audit::of(&store).state_json("nowhere", None) {
        Err(Error::Projection(found)) => assert_eq!(found, unknown),
        other => panic!("expected {unknown:?}, got {other:?}"),
    }
    match annals::maintenance::Rebuild::of(&store).run(Some("nowhere")) {
        Err(Error::Projection(found)) => assert_eq!(found, unknown),
        other => panic!("expected {unknown:?}, got {other:?}"),
    }
}

#[test]
fn verify_names_the_projection_table_and_key_of_a_tampered_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for resource in ["alpha", "beta"] {
            let acquire = LeaseCommand::Acquire {
                resource: resource.into(),
                holder: "a".into(),
                ttl_ms: 100,
                now_ms: 0,
            };
            store.execute(&acquire).unwrap().expect_done();
        }
        let release = LeaseCommand::Release {
            resource: "beta".into(),
            holder: "a".into(),
            token: annals::leases::FencingToken(1),
            now_ms: 1,
        };
        store.execute(&release).unwrap().expect_done();
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    }
    // Forge the last token of "beta" beneath the store, as an in-place UPDATE would.
    let key = annals::testing::internals::key_bytes(&"beta".to_owned());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let definition: redb::TableDefinition<&[u8], &[u8]> =
                redb::TableDefinition::new("leases.released_tokens");
            let mut table = txn.open_table(definition).unwrap();
            assert!(table.get(key.as_slice()).unwrap().is_some());
            // Sealed as the store seals it: a forger with the file recomputes the checksum.
            let forged = annals::testing::internals::checksum::seal(
                "leases.released_tokens",
                &key,
                &99u64.to_le_bytes(),
            );
            table.insert(key.as_slice(), forged.as_slice()).unwrap();
        }
        txn.commit().unwrap();
    }
    let report = annals::Audit::of(&Store::open(&path).unwrap())
        .verify()
        .unwrap();
    let finding = report.problem.expect("the forged row is found");
    match finding.problem {
        Problem::Projection {
            projection,
            table,
            key_hex,
            ..
        } => {
            assert_eq!(
                (projection.as_str(), table.as_str()),
                ("leases", "leases.released_tokens")
            );
            assert_eq!(key_hex, annals::testing::internals::hash::hex(&key));
        }
        other => panic!("expected a projection difference, got {other:?}"),
    }
}

/// Appends a lease acquisition as an older program would have: schema 1, with a TTL.
fn acquired_v1(store: &Store, at_ms: u64) {
    let payload = encode_payload(&AcquiredV1 {
        resource: "r".into(),
        holder: "a".into(),
        token: 1,
        ttl_ms: 1_000,
    });
    let event = NewEvent::new("lease.acquired", at_ms, payload).with_schema(1);
    store
        .write(|session| session.append_unchecked("lease/r", ExpectedVersion::Any, &[event]))
        .unwrap()
        .expect_done();
}

#[test]
fn version_1_events_upcast_to_the_same_projection_as_version_2_events() {
    let dir = tempfile::tempdir().unwrap();
    let old = Store::open(dir.path().join("v1.redb")).unwrap();
    acquired_v1(&old, 100);
    let new = Store::open(dir.path().join("v2.redb")).unwrap();
    let event = LeaseEvent::Acquired(Acquired {
        resource: "r".into(),
        holder: "a".into(),
        token: 1,
        expires_at_ms: 1_100,
        project: String::new(),
        name: String::new(),
        holder_name: String::new(),
    });
    assert_eq!(
        event.to_new_event(100).schema,
        3,
        "the code writes version 3"
    );
    new.write(|session| {
        session.append_unchecked("lease/r", ExpectedVersion::Any, &[event.to_new_event(100)])
    })
    .unwrap()
    .expect_done();
    let state = |store: &Store| leases::state_json(&store.snapshot().unwrap().state()).unwrap();
    assert_eq!(state(&old), state(&new));
    assert_eq!(
        leases::lease(&old.snapshot().unwrap().state(), "r")
            .unwrap()
            .unwrap()
            .expires_at_ms,
        1_100
    );
    assert!(
        annals::Audit::of(&old).verify().unwrap().is_sound(),
        "a replay upcasts the same way"
    );
}

#[test]
fn an_unknown_schema_version_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    let event = NewEvent::new("lease.acquired", 0, Vec::new()).with_schema(9);
    let error = store
        .write(|session| session.append_unchecked("lease/r", ExpectedVersion::Any, &[event]))
        .unwrap_err();
    assert!(
        matches!(error, Error::UndecodableEvent { schema: 9, .. }),
        "{error:?}"
    );
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(0));
}

#[test]
fn a_projection_that_touches_a_table_not_its_own_is_refused_and_nothing_is_written() {
    /// Tries to forge a lease row, or to read one, from its own `apply`.
    struct Forger {
        write: bool,
    }
    impl Projection for Forger {
        fn name(&self) -> &'static str {
            "forger"
        }
        fn version(&self) -> u32 {
            1
        }
        fn tables(&self) -> &'static [&'static str] {
            &["forger.rows"]
        }
        fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
            tables.insert_raw("forger.rows", &record.position.0.to_be_bytes(), b"own")?;
            if record.kind != "forge" {
                return Ok(());
            }
            if self.write {
                tables.insert_raw("leases.held", b"deploy-lock", b"forged")
            } else {
                annals::projection::TableSource::get_raw(tables, "leases.held", b"x").map(|_| ())
            }
        }
    }
    for write in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let options = StoreOptions {
            create: true,
            projections: vec![Arc::new(Forger { write })],
            ..StoreOptions::default()
        };
        let store = Store::open_with(dir.path().join("log.redb"), options).unwrap();
        store
            .append("s", ExpectedVersion::Any, &[event("fine", 0, b"")])
            .unwrap()
            .expect_done();
        let head = store.snapshot().unwrap().head().unwrap();
        let error = store
            .append("s", ExpectedVersion::Any, &[event("forge", 0, b"")])
            .unwrap_err();
        assert!(
            matches!(
                &error,
                Error::Projection(ProjectionError::ForeignTable { projection, table })
                    if projection == "forger" && table == "leases.held"
            ),
            "{error:?}"
        );
        assert_eq!(
            store.snapshot().unwrap().head().unwrap(),
            head,
            "the refused append left a trace"
        );
        assert_eq!(
            leases::lease(&store.snapshot().unwrap().state(), "deploy-lock").unwrap(),
            None
        );
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    }
}

/// A lease grant for resource `r` to `a` with `token`, at `at_ms`, live for a second.
fn grant(token: u64, at_ms: u64) -> NewEvent {
    LeaseEvent::Acquired(Acquired {
        resource: "r".into(),
        holder: "a".into(),
        token,
        expires_at_ms: at_ms + 1_000,
        project: String::new(),
        name: String::new(),
        holder_name: String::new(),
    })
    .to_new_event(at_ms)
}

/// The store's head and every lease row, to compare before and after a dropped write.
fn leases_and_head(store: &Store) -> (annals::log::Head, String) {
    let state = leases::state_json(&store.snapshot().unwrap().state()).unwrap();
    (store.snapshot().unwrap().head().unwrap(), state.to_string())
}

/// The work of a write that swallows `failure` and returns `Ok` anyway is dropped, whole.
fn assert_dropped_after(
    store: &Store,
    failure: impl Fn(&mut annals::writer::WriteSession<'_>) -> bool,
) {
    let before = leases_and_head(store);
    let written = store.write(|session| {
        assert!(failure(session), "the failure the write goes on past");
        Ok(())
    });
    match written {
        Err(Error::Store(annals::error::StoreError::PartialWrite { cause, .. })) => {
            assert!(!cause.is_empty());
        }
        other => panic!("expected the write dropped as partial, got {other:?}"),
    }
    assert_eq!(
        leases_and_head(store),
        before,
        "nothing of it was committed"
    );
    assert!(annals::Audit::of(store).verify().unwrap().is_sound());
}

#[test]
fn a_write_that_goes_on_past_a_half_made_change_is_dropped_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path().join("log.redb")).unwrap();
    store
        .write(|session| {
            session.append_unchecked("lease/r", ExpectedVersion::Any, &[grant(5, 100)])
        })
        .unwrap()
        .expect_done();
    // A grant whose token does not exceed the last: refused by the leases projection's apply
    // after the record went into the log (and the held row with it, in one B-tree operation).
    assert_dropped_after(&store, |session| {
        let refused = session.append_unchecked("lease/r", ExpectedVersion::Any, &[grant(3, 5_000)]);
        matches!(
            refused,
            Err(Error::Projection(ProjectionError::Invariant { rule, .. })) if rule == "token_increases"
        )
    });
    // A command whose second append is refused after its first went in.
    struct TwoGrants;
    impl annals::Command for TwoGrants {
        type Outcome = ();
        fn decide(
            &self,
            _: &dyn annals::projection::TableSource,
        ) -> Result<annals::command::Decision<()>> {
            let emit = |stream: &str, expected| annals::command::Emit {
                stream: stream.into(),
                expected,
                events: vec![crate::common::event("test.two", 7, b"x")],
            };
            Ok(annals::command::Decision {
                emits: vec![
                    emit("two/a", ExpectedVersion::Any),
                    emit("lease/r", ExpectedVersion::NoStream),
                ],
                outcome: (),
            })
        }
    }
    assert_dropped_after(&store, |session| {
        matches!(session.execute(&TwoGrants), Err(Error::Append(_)))
    });
    // Refused before anything was written: the write goes on and commits what follows.
    store
        .write(|session| {
            let refused =
                session.append("lease/r", ExpectedVersion::NoStream, &[event("k", 0, b"")]);
            assert!(matches!(refused, Err(Error::Append(_))));
            session.append("other", ExpectedVersion::Any, &[event("k", 0, b"")])
        })
        .unwrap()
        .expect_done();
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(2));
}

/// Moves one entry of `moves.index` as each record's payload says: `from>to`, each side `key=value`
/// or `-` for no entry.
struct Moves;

const MOVED: Table<String, u64> = Table::new("moves.index");

fn entry(side: &str) -> Option<(String, u64)> {
    let (key, value) = side.split_once('=')?;
    Some((key.to_owned(), value.parse().ok()?))
}

impl Projection for Moves {
    fn name(&self) -> &'static str {
        "moves"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["moves.index"]
    }
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        let text = String::from_utf8_lossy(&record.payload).into_owned();
        let (from, to) = text.split_once('>').unwrap_or((&text, "-"));
        MOVED.move_entry(tables, entry(from), entry(to))
    }
}

#[test]
fn an_index_entry_moves_only_where_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions {
        create: true,
        projections: vec![Arc::new(Moves)],
        ..StoreOptions::default()
    };
    let store = Store::open_with(dir.path().join("log.redb"), options).unwrap();
    let rows = |store: &Store| {
        MOVED
            .scan_prefix(
                &store.snapshot().unwrap().state(),
                &(),
                annals::Direction::Forward,
                10,
            )
            .unwrap()
    };
    // Each move, and the whole index after it.
    type Move<'a> = (&'a [u8], &'a [(&'a str, u64)]);
    let moves: [Move<'_>; 6] = [
        (b"->a=1", &[("a", 1)]),
        (b"a=1>a=2", &[("a", 2)]),
        (b"a=2>b=2", &[("b", 2)]),
        // The same entry on both sides writes nothing: `x` is not there and stays away.
        (b"x=5>x=5", &[("b", 2)]),
        (b"b=2>-", &[]),
        (b"->c=3", &[("c", 3)]),
    ];
    for (payload, expected) in moves {
        store
            .append("s", ExpectedVersion::Any, &[event("move", 0, payload)])
            .unwrap()
            .expect_done();
        let expected: Vec<(String, u64)> =
            expected.iter().map(|(k, v)| ((*k).into(), *v)).collect();
        assert_eq!(
            rows(&store),
            expected,
            "after {}",
            String::from_utf8_lossy(payload)
        );
    }
    assert!(
        annals::Audit::of(&store).verify().unwrap().is_sound(),
        "a replay moves them the same way"
    );
}
