//! Rebuild is atomic to readers: a rebuild killed between two of its transactions leaves its
//! projections behind the log, never shown as the state. A snapshot's state refuses them,
//! `verify` says they are behind (not unsound), and the next writable open or rebuild
//! finishes them equal to a replay; a write in the same process catches them up before it
//! decides. A behind projection whose rows differ from a replay up to its checkpoint is
//! still damage. (What the command line says of such a log: `cli/tests/cli/rebuild.rs`.)

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use annals::leases::{self, LeaseCommand, LeaseOutcome};
use annals::projection::{ProjectionError, TableSource};
use annals::testing::internals::demo::Rng;
use annals::{Durability, Error, Sharing, Store, StoreOptions};

/// Records in the rebuilt log, at least: three of the rebuild's 8,192-record batches.
const RECORDS: u64 = 17_000;

/// A log of [`RECORDS`] lease records (leases granted, renewed and taken over across a few
/// hundred resources, written without a sync per commit), and the state of each projection.
fn lease_log(path: &Path) -> Vec<String> {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        ..StoreOptions::default()
    };
    let store = Store::open_with(path, options).unwrap();
    let mut rng = Rng::new(0x0005_0013);
    let mut now_ms = 1_000;
    while store.snapshot().unwrap().head().unwrap().next.0 < RECORDS {
        store
            .write_with(Durability::Deferred, |session| {
                for _ in 0..500 {
                    now_ms += 1 + rng.below(20);
                    let resource = format!("resource-{}", rng.below(300));
                    let holder = format!("holder-{}", rng.below(7));
                    let command = LeaseCommand::Acquire {
                        resource,
                        holder,
                        ttl_ms: 1 + rng.below(200),
                        now_ms,
                    };
                    // Random holders contend for few resources: a refusal because another
                    // holds the lease is part of the history this log is meant to have.
                    let outcome = session.execute(&command)?;
                    assert!(
                        matches!(
                            outcome,
                            LeaseOutcome::Granted { .. }
                                | LeaseOutcome::Refused {
                                    reason: leases::LeaseRefusal::Held,
                                    ..
                                }
                        ),
                        "{outcome:?}"
                    );
                }
                Ok(())
            })
            .unwrap();
    }
    store.flush().unwrap();
    drop(store);
    states(path)
}

/// Every projection's state as JSON, in the store's order.
fn states(path: &Path) -> Vec<String> {
    let store = Store::open_read_only(path).unwrap();
    let audit = annals::Audit::of(&store);
    store
        .projections()
        .iter()
        .map(|projection| {
            let state = audit.state_json(projection.name(), None).unwrap();
            serde_json::to_string(&state).unwrap()
        })
        .collect()
}

/// Runs `annals-testing rebuild` and kills it with SIGKILL after its `steps`-th stop (0: as
/// soon as the projections are cleared); returns the position the last stop reported.
fn kill_rebuild_after(path: &Path, steps: u64) -> u64 {
    let mut child = Command::new(crate::annals_bin::testing())
        .args(["rebuild", path.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the rebuild");
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
    let mut at = 0;
    for step in 0..=steps {
        let line = lines
            .next()
            .expect("the rebuild stopped before the kill point")
            .unwrap();
        at = line
            .strip_prefix("rebuild at ")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a step: {line}"));
        if step < steps {
            stdin.write_all(b"\n").unwrap();
        }
    }
    // The child waits for its go-ahead: the kill lands between two of its transactions.
    child.kill().unwrap();
    let _ = child.wait();
    at
}

fn assert_behind(path: &Path, at: u64, head: u64) {
    // A read of the state is refused, by type.
    let store = Store::open_read_only(path).unwrap();
    match leases::lease(&store.snapshot().unwrap().state(), "anything") {
        Err(Error::Projection(ProjectionError::Behind {
            projection,
            at: found,
            head: of,
        })) => assert_eq!((projection.as_str(), found, of), ("leases", at, head)),
        other => panic!("a behind projection was read: {other:?}"),
    }
    let report = annals::Audit::of(&store).verify().unwrap();
    let every = store.projections().iter().count();
    assert!(
        report.is_sound() && report.behind.len() == every,
        "{report:?}"
    );
}

#[test]
fn a_rebuild_killed_between_transactions_is_refused_by_readers_reported_behind_and_finished() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let before = lease_log(&path);
    let head = annals::testing::setup::head_of(&path);
    let batches = head.div_ceil(8192);
    assert!(batches >= 3, "{head} records make too few batches");
    let mut rng = Rng::new(0x0005_0013);
    // Killed right after clearing, then after a seeded batch short of the last.
    for (round, steps) in [0, 1 + rng.below(batches - 1)].into_iter().enumerate() {
        let at = kill_rebuild_after(&path, steps);
        assert!(at < head, "the rebuild finished before the kill");
        assert_behind(&path, at, head);
        // Finished by a writable open in the first round, by a rebuild in the second.
        if round == 0 {
            drop(Store::open_with(&path, annals::StoreOptions::default()).unwrap());
        } else {
            let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
            annals::maintenance::Rebuild::of(&store).run(None).unwrap();
        }
        let store = Store::open_read_only(&path).unwrap();
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(report.is_sound() && report.behind.is_empty(), "{report:?}");
        drop(store);
        assert_eq!(states(&path), before, "round {round}: rebuilt rows differ");
    }
}

#[test]
fn a_behind_projection_whose_rows_differ_from_a_replay_to_its_checkpoint_is_damage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    lease_log(&path);
    let at = kill_rebuild_after(&path, 1);
    // A lease row forged into the half-built table.
    annals::testing::damage::forge_projection_row(&path, "leases.held", b"forged", b"row");
    let store = Store::open_read_only(&path).unwrap();
    let report = annals::Audit::of(&store).verify().unwrap();
    // Compared with a replay up to where its checkpoint stands, not of the whole log.
    match report.problem.map(|finding| finding.problem) {
        Some(annals::audit::Problem::Projection {
            projection,
            replay_end,
            ..
        }) => assert_eq!(
            (projection.as_str(), replay_end),
            ("leases", Some(annals::Position(at)))
        ),
        other => panic!("the forged row was not found as damage: {other:?}"),
    }
}

#[test]
fn a_write_beside_a_rebuild_in_the_same_process_catches_the_projection_up_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    lease_log(&path);
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    let mut decided = None;
    // In the rebuild's progress callback, between two of its transactions, another write
    // of the same store runs: it must not decide on, or apply to, the half-built leases.
    annals::maintenance::Rebuild::of(&store)
        .run_with(Some("leases"), &mut |done| {
            if done > 0 && decided.is_none() {
                let command = LeaseCommand::Acquire {
                    resource: "rebuild-race".into(),
                    holder: "writer".into(),
                    ttl_ms: 1_000,
                    now_ms: u64::MAX / 4,
                };
                decided = Some(store.execute(&command).unwrap());
            }
        })
        .unwrap();
    assert!(
        matches!(decided, Some(LeaseOutcome::Granted { .. })),
        "{decided:?}"
    );
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound() && report.behind.is_empty(), "{report:?}");
    let held = leases::lease(&store.snapshot().unwrap().state(), "rebuild-race").unwrap();
    assert!(held.is_some());
    // The store's own read of a table it keeps goes through the same check.
    assert!(
        store
            .snapshot()
            .unwrap()
            .state()
            .get_raw("leases.held", b"x")
            .is_ok()
    );
}

#[test]
fn a_multi_writer_beside_another_writers_rebuild_sees_its_batches_and_catches_up_first() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    lease_log(&path);
    let multi_writer = || {
        Store::open_with(
            &path,
            StoreOptions {
                sharing: Sharing::MultiWriter,
                ..StoreOptions::default()
            },
        )
        .unwrap()
    };
    let (writer, rebuilder) = (multi_writer(), multi_writer());
    let acquire = |resource: &str, now_ms: u64| LeaseCommand::Acquire {
        resource: resource.into(),
        holder: "writer".into(),
        ttl_ms: 1_000,
        now_ms,
    };
    // Commands in a row: after the first, the writer knows every checkpoint follows the head
    // and stops reading them, until another commit to the file.
    for round in 0..3 {
        let outcome = writer.execute(&acquire(&format!("warm-{round}"), u64::MAX / 4));
        assert!(
            matches!(outcome, Ok(LeaseOutcome::Granted { .. })),
            "{outcome:?}"
        );
    }
    // The other writer's rebuild commits its batches to the file, the leases behind the head
    // between them: the writer's next command must see that commit, and catch the leases up
    // before it decides, rather than take them as still following.
    let mut decided = None;
    annals::maintenance::Rebuild::of(&rebuilder)
        .run_with(Some("leases"), &mut |done| {
            if done > 0 && decided.is_none() {
                decided = Some(writer.execute(&acquire("beside-rebuild", u64::MAX / 4 + 1)));
                // Its commit drained into the file between two of the rebuild's batches.
                writer.flush().unwrap();
            }
        })
        .unwrap();
    assert!(
        matches!(decided, Some(Ok(LeaseOutcome::Granted { .. }))),
        "{decided:?}"
    );
    for store in [&writer, &rebuilder] {
        let report = annals::Audit::of(store).verify().unwrap();
        assert!(report.is_sound() && report.behind.is_empty(), "{report:?}");
        let state = store.snapshot().unwrap().state();
        for resource in ["warm-0", "warm-2", "beside-rebuild"] {
            assert!(
                leases::lease(&state, resource).unwrap().is_some(),
                "{resource}"
            );
        }
    }
}
