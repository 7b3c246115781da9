//! Tests of the sync ingest, written from the reference hub store (`store.ts`): each names the
//! reference function it follows (`ingestSyncEvent`, `listSyncEvents`, `syncCursor`) and checks
//! the outcome, the state read back and the records appended.

use annals::ingest::events::{ACCEPTED, Accepted, IngestEvent};
use annals::ingest::{
    self, EVENT_BYTES_MAX, IngestCommand, IngestConflict, IngestOutcome, IngestedEvent,
};
use annals::testing::internals::event::DomainEvent;
use annals::{Direction, Error, Position, Record, Store, error::CommandProblem, log::Digest};

use crate::common::store;

pub(crate) const T0: u64 = 1_767_225_600_000;

/// Event `sequence` of run `r1` of project `p1` for hub project `hub-eu` from runtime
/// `rt-a`, with `bytes`, received at `T0 + sequence`.
pub(crate) fn push(sequence: u64, bytes: &[u8]) -> IngestCommand {
    IngestCommand {
        project: "p1".into(),
        run: "r1".into(),
        sequence,
        hub_project: "hub-eu".into(),
        home_runtime: "rt-a".into(),
        event_type: "tool.called".into(),
        bytes: bytes.to_vec(),
        received_at_ms: T0 + sequence,
        subject: None,
    }
}

fn hash(bytes: &[u8]) -> Digest {
    Digest(*blake3::hash(bytes).as_bytes())
}

/// The records appended from `from` on.
fn appended(store: &Store, from: u64) -> Vec<Record> {
    store
        .snapshot()
        .unwrap()
        .read_all(Position(from), Direction::Forward, usize::MAX)
        .unwrap()
}

fn next(store: &Store) -> u64 {
    store.snapshot().unwrap().head().unwrap().next.0
}

/// Runs `command`, checks it appended nothing, and returns its outcome.
fn appends_nothing(store: &Store, command: &IngestCommand) -> IngestOutcome {
    let before = next(store);
    let state = annals::Audit::of(store).state_json("ingest", None).unwrap();
    let outcome = store.execute(command).unwrap();
    assert_eq!(next(store), before, "{command:?} appended");
    assert_eq!(
        annals::Audit::of(store).state_json("ingest", None).unwrap(),
        state
    );
    outcome
}

fn accepted(store: &Store, command: &IngestCommand) -> IngestedEvent {
    match store.execute(command).unwrap() {
        IngestOutcome::Accepted { event } => event,
        other => panic!("expected {command:?} accepted, got {other:?}"),
    }
}

fn conflict(outcome: IngestOutcome) -> (IngestConflict, Option<Digest>) {
    match outcome {
        IngestOutcome::Conflict {
            reason,
            existing_hash,
        } => (reason, existing_hash),
        other => panic!("expected a conflict, got {other:?}"),
    }
}

fn sequences(events: &[IngestedEvent]) -> Vec<(&str, &str, u64)> {
    events
        .iter()
        .map(|e| (e.project.as_str(), e.run.as_str(), e.sequence))
        .collect()
}

/// `ingestSyncEvent`: a new key is accepted; it is held under its key with its receipt time
/// and the blake3 of its bytes, and one `ingest.accepted` record on the run's stream says so.
#[test]
fn ingest_sync_event_accepts_a_new_key_and_records_it() {
    let (_dir, store) = store();
    let command = push(1, b"{\"n\":1}");
    let event = accepted(&store, &command);
    let expected = IngestedEvent {
        project: "p1".into(),
        run: "r1".into(),
        sequence: 1,
        hub_project: "hub-eu".into(),
        home_runtime: "rt-a".into(),
        event_type: "tool.called".into(),
        content_hash: hash(b"{\"n\":1}"),
        received_at_ms: T0 + 1,
        bytes: b"{\"n\":1}".to_vec(),
    };
    assert_eq!(event, expected);
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        ingest::event(&state, "p1", "r1", 1).unwrap(),
        Some(expected)
    );
    assert_eq!(
        ingest::project_hub(&state, "p1").unwrap().as_deref(),
        Some("hub-eu")
    );
    assert_eq!(
        ingest::run_home(&state, "p1", "r1").unwrap().as_deref(),
        Some("rt-a")
    );
    assert_eq!(ingest::cursor(&state, "p1", "r1").unwrap(), 1);
    let records = appended(&store, 0);
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert_eq!(
        (record.stream.as_str(), record.kind.as_str(), record.at_ms),
        ("ingest/p1/r1", ACCEPTED, T0 + 1)
    );
    assert_eq!(
        IngestEvent::from_record(record).unwrap(),
        Some(IngestEvent::Accepted(Accepted {
            project: "p1".into(),
            run: "r1".into(),
            sequence: 1,
            hub_project: "hub-eu".into(),
            home_runtime: "rt-a".into(),
            event_type: "tool.called".into(),
            content_hash: hash(b"{\"n\":1}").0,
            bytes: b"{\"n\":1}".to_vec(),
        }))
    );
}

/// `ingestSyncEvent`: the same bytes under a held key and the same hub project are a
/// duplicate, whatever the receipt time, the runtime and the event type; nothing is written
/// and the held event (with its first receipt time) stands.
#[test]
fn ingest_sync_event_repeats_are_duplicates_whatever_the_receipt_time_and_runtime() {
    let (_dir, store) = store();
    let first = accepted(&store, &push(1, b"a"));
    let retries = [
        IngestCommand {
            received_at_ms: T0 + 9_999,
            ..push(1, b"a")
        },
        IngestCommand {
            home_runtime: "rt-b".into(),
            event_type: "other.type".into(),
            ..push(1, b"a")
        },
    ];
    for retry in &retries {
        match appends_nothing(&store, retry) {
            IngestOutcome::Duplicate { event } => assert_eq!(event, first),
            other => panic!("expected a duplicate, got {other:?}"),
        }
    }
    assert_eq!(appended(&store, 0).len(), 1);
}

/// `ingestSyncEvent`: other bytes under a held key, or the same bytes for another hub
/// project, are a conflict `sequence_reused` that reports the held hash; nothing is written.
#[test]
fn ingest_sync_event_other_content_under_a_held_key_is_sequence_reused() {
    let (_dir, store) = store();
    accepted(&store, &push(1, b"a"));
    let other_bytes = push(1, b"b");
    let other_hub = IngestCommand {
        hub_project: "hub-us".into(),
        ..push(1, b"a")
    };
    for command in [&other_bytes, &other_hub] {
        assert_eq!(
            conflict(appends_nothing(&store, command)),
            (IngestConflict::SequenceReused, Some(hash(b"a")))
        );
    }
    let state = store.snapshot().unwrap().state();
    let held = ingest::event(&state, "p1", "r1", 1).unwrap().unwrap();
    assert_eq!(
        (held.bytes, held.hub_project),
        (b"a".to_vec(), "hub-eu".into())
    );
}

/// `ingestSyncEvent`: a new key of a project whose events another hub project holds is a
/// conflict `project_mismatch`, in any run; nothing is written.
#[test]
fn ingest_sync_event_a_project_of_another_hub_project_is_project_mismatch() {
    let (_dir, store) = store();
    accepted(&store, &push(1, b"a"));
    for run in ["r1", "r2"] {
        let command = IngestCommand {
            run: run.into(),
            hub_project: "hub-us".into(),
            ..push(2, b"b")
        };
        assert_eq!(
            conflict(appends_nothing(&store, &command)),
            (IngestConflict::ProjectMismatch, None)
        );
    }
    let state = store.snapshot().unwrap().state();
    assert!(
        ingest::hub_project_events(&state, "hub-us", 10)
            .unwrap()
            .is_empty()
    );
}

/// `ingestSyncEvent`: a new key of a run that lives on another runtime is a conflict
/// `home_runtime_mismatch`; another run of the project may live on that runtime.
#[test]
fn ingest_sync_event_a_run_of_another_runtime_is_home_runtime_mismatch() {
    let (_dir, store) = store();
    accepted(&store, &push(1, b"a"));
    let from_b = IngestCommand {
        home_runtime: "rt-b".into(),
        ..push(2, b"b")
    };
    assert_eq!(
        conflict(appends_nothing(&store, &from_b)),
        (IngestConflict::HomeRuntimeMismatch, None)
    );
    let other_run = IngestCommand {
        run: "r2".into(),
        ..from_b.clone()
    };
    let event = accepted(&store, &other_run);
    assert_eq!(event.home_runtime, "rt-b");
    let state = store.snapshot().unwrap().state();
    assert_eq!(
        ingest::run_home(&state, "p1", "r2").unwrap().as_deref(),
        Some("rt-b")
    );
    assert_eq!(appended(&store, 0).len(), 2);
}

/// `ingestSyncEvent` decides in order: the held key first (so another hub project under a
/// held key is `sequence_reused`, not `project_mismatch`), then the project, then the run's
/// home.
#[test]
fn ingest_sync_event_checks_the_key_then_the_project_then_the_home() {
    let (_dir, store) = store();
    accepted(&store, &push(1, b"a"));
    let everything_else = |sequence| IngestCommand {
        hub_project: "hub-us".into(),
        home_runtime: "rt-b".into(),
        ..push(sequence, b"z")
    };
    assert_eq!(
        conflict(appends_nothing(&store, &everything_else(1))).0,
        IngestConflict::SequenceReused
    );
    assert_eq!(
        conflict(appends_nothing(&store, &everything_else(2))).0,
        IngestConflict::ProjectMismatch
    );
}

/// `syncCursor`: the highest sequence with every sequence from 1 up to it held; 0 while 1 is
/// missing; it moves over a gap once the gap is filled, and runs count apart.
#[test]
fn sync_cursor_is_the_unbroken_prefix_from_one() {
    let (_dir, store) = store();
    let cursor = |run: &str| ingest::cursor(&store.snapshot().unwrap().state(), "p1", run).unwrap();
    assert_eq!(cursor("r1"), 0);
    for (sequence, expected) in [(2, 0), (3, 0), (1, 3), (5, 3), (4, 5), (7, 5)] {
        accepted(&store, &push(sequence, &[sequence as u8]));
        assert_eq!(cursor("r1"), expected, "after sequence {sequence}");
    }
    accepted(
        &store,
        &IngestCommand {
            run: "r2".into(),
            ..push(1, b"x")
        },
    );
    assert_eq!((cursor("r1"), cursor("r2")), (5, 1));
    // A duplicate or a conflict moves nothing; filling the last gap reaches 7.
    let outcome = appends_nothing(&store, &push(4, &[4]));
    assert!(
        matches!(outcome, IngestOutcome::Duplicate { .. }),
        "{outcome:?}"
    );
    let outcome = appends_nothing(&store, &push(5, b"y"));
    assert!(
        matches!(outcome, IngestOutcome::Conflict { .. }),
        "{outcome:?}"
    );
    assert_eq!(cursor("r1"), 5);
    accepted(&store, &push(6, &[6]));
    assert_eq!(cursor("r1"), 7);
}

/// `listSyncEvents`: the events one hub project holds, by run then sequence (run ids in byte
/// order), of every project it holds, and nothing of another hub project.
#[test]
fn list_sync_events_lists_one_hub_project_by_run_then_sequence() {
    let (_dir, store) = store();
    let on = |project: &str, run: &str, sequence: u64, hub: &str| IngestCommand {
        project: project.into(),
        run: run.into(),
        hub_project: hub.into(),
        ..push(sequence, &[sequence as u8])
    };
    for command in [
        on("p1", "r2", 2, "hub-eu"),
        on("p1", "r2", 1, "hub-eu"),
        on("p9", "r1", 1, "hub-us"),
        on("p1", "r1", 3, "hub-eu"),
        on("p2", "r1", 1, "hub-eu"),
        on("p1", "r1", 1, "hub-eu"),
        on("p1", "R0", 1, "hub-eu"),
    ] {
        accepted(&store, &command);
    }
    let state = store.snapshot().unwrap().state();
    let listed = ingest::hub_project_events(&state, "hub-eu", usize::MAX).unwrap();
    // "R0" sorts before "r1" by bytes; p2's r1/1 was accepted before p1's r1/1.
    assert_eq!(
        sequences(&listed),
        [
            ("p1", "R0", 1),
            ("p2", "r1", 1),
            ("p1", "r1", 1),
            ("p1", "r1", 3),
            ("p1", "r2", 1),
            ("p1", "r2", 2),
        ]
    );
    assert!(listed.iter().all(|e| e.hub_project == "hub-eu"));
    assert_eq!(
        sequences(&ingest::hub_project_events(&state, "hub-us", usize::MAX).unwrap()),
        [("p9", "r1", 1)]
    );
    assert_eq!(
        ingest::hub_project_events(&state, "hub-eu", 2)
            .unwrap()
            .len(),
        2
    );
    assert!(
        ingest::hub_project_events(&state, "hub", usize::MAX)
            .unwrap()
            .is_empty(),
        "a prefix of a hub project's name is another hub project"
    );
}

/// Bad input is a typed error naming the field, and writes nothing: sequence 0 (whose
/// cursor could never count it), empty names, control characters, an event over the limit.
#[test]
fn invalid_input_is_refused_naming_the_field_and_writes_nothing() {
    let (_dir, store) = store();
    let cases = [
        (push(0, b"a"), "sequence", CommandProblem::Zero),
        (
            IngestCommand {
                project: String::new(),
                ..push(1, b"a")
            },
            "project",
            CommandProblem::Empty,
        ),
        (
            IngestCommand {
                run: "r\n".into(),
                ..push(1, b"a")
            },
            "run",
            CommandProblem::ControlCharacter,
        ),
        (
            IngestCommand {
                hub_project: String::new(),
                ..push(1, b"a")
            },
            "hub_project",
            CommandProblem::Empty,
        ),
        (
            IngestCommand {
                home_runtime: String::new(),
                ..push(1, b"a")
            },
            "home_runtime",
            CommandProblem::Empty,
        ),
        (
            IngestCommand {
                event_type: "t".repeat(129),
                ..push(1, b"a")
            },
            "event_type",
            CommandProblem::TooLong {
                len: 129,
                limit: 128,
            },
        ),
        (
            push(1, &vec![0; EVENT_BYTES_MAX + 1]),
            "bytes",
            CommandProblem::TooLong {
                len: EVENT_BYTES_MAX as u64 + 1,
                limit: EVENT_BYTES_MAX as u64,
            },
        ),
    ];
    for (command, field, problem) in cases {
        match store.execute(&command) {
            Err(Error::InvalidCommand {
                field: named,
                problem: found,
            }) => assert_eq!((named, found), (field, problem)),
            other => panic!("expected {field} refused, got {other:?}"),
        }
    }
    assert_eq!(next(&store), 0);
    // The largest event allowed fits one record.
    accepted(&store, &push(1, &vec![7; EVENT_BYTES_MAX]));
}

/// A log of every outcome: accepted out of order, duplicates and every conflict.
fn mixed_log(store: &Store) {
    for sequence in [2, 1, 3, 5] {
        accepted(store, &push(sequence, &[sequence as u8]));
    }
    let outcome = appends_nothing(store, &push(2, &[2]));
    assert!(
        matches!(outcome, IngestOutcome::Duplicate { .. }),
        "{outcome:?}"
    );
    let outcome = appends_nothing(store, &push(2, b"other"));
    assert!(
        matches!(outcome, IngestOutcome::Conflict { .. }),
        "{outcome:?}"
    );
    let other_hub = IngestCommand {
        hub_project: "hub-us".into(),
        ..push(9, b"x")
    };
    let outcome = appends_nothing(store, &other_hub);
    assert!(
        matches!(outcome, IngestOutcome::Conflict { .. }),
        "{outcome:?}"
    );
    let other_runtime = IngestCommand {
        home_runtime: "rt-b".into(),
        ..push(9, b"x")
    };
    let outcome = appends_nothing(store, &other_runtime);
    assert!(
        matches!(outcome, IngestOutcome::Conflict { .. }),
        "{outcome:?}"
    );
    accepted(
        store,
        &IngestCommand {
            project: "p2".into(),
            hub_project: "hub-us".into(),
            home_runtime: "rt-b".into(),
            ..push(1, b"y")
        },
    );
}

/// Replay reproduces the tables: a rebuild gives the same state, as does a replay to any
/// position, and `verify` (which compares each projection with a fresh replay) is sound.
#[test]
fn replay_reproduces_the_ingest_tables_and_verify_is_sound() {
    let (dir, store) = store();
    mixed_log(&store);
    let live = annals::Audit::of(&store)
        .state_json("ingest", None)
        .unwrap();
    assert_eq!(live["events"].as_array().unwrap().len(), 5);
    assert_eq!(
        live["runs"],
        serde_json::json!([
            {"project": "p1", "run": "r1", "home_runtime": "rt-a", "cursor": 3},
            {"project": "p2", "run": "r1", "home_runtime": "rt-b", "cursor": 1},
        ])
    );
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    let head = next(&store);
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("ingest", Some(Position(head)))
            .unwrap(),
        live
    );
    // As of the first two records, sequence 1 was not yet held under sequence 2's arrival.
    let early = annals::Audit::of(&store)
        .state_json("ingest", Some(Position(1)))
        .unwrap();
    assert_eq!(early["runs"][0]["cursor"], 0);
    annals::maintenance::Rebuild::of(&store)
        .run(Some("ingest"))
        .unwrap();
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("ingest", None)
            .unwrap(),
        live
    );
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("ingest", None)
            .unwrap(),
        live
    );
    drop(store);
    let reopened = Store::open(dir.path().join("log.redb")).unwrap();
    assert_eq!(
        annals::Audit::of(&reopened)
            .state_json("ingest", None)
            .unwrap(),
        live
    );
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}

/// The commands in one write transaction see each other's effects, as one by one.
#[test]
fn one_transaction_sees_its_own_ingests() {
    let (_dir, store) = store();
    let outcomes = store
        .write(|session| {
            let first = session.execute(&push(1, b"a"))?;
            let again = session.execute(&push(1, b"a"))?;
            let reused = session.execute(&push(1, b"b"))?;
            Ok(vec![first, again, reused])
        })
        .unwrap();
    assert!(matches!(outcomes[0], IngestOutcome::Accepted { .. }));
    assert!(matches!(outcomes[1], IngestOutcome::Duplicate { .. }));
    assert_eq!(
        conflict(outcomes[2].clone()),
        (IngestConflict::SequenceReused, Some(hash(b"a")))
    );
    assert_eq!(appended(&store, 0).len(), 1);
}

/// The demo pushes runs' events to the hub (out of order, with a duplicate and a conflict):
/// the hub's projection holds the run's events once each, in sequence order, with the first
/// receipt of a retried one, and refuses the event another runtime pushed. What `annals state
/// ingest` and `annals history` show of it: `cli/tests/cli/commands.rs`.
#[test]
fn the_demo_ingests_out_of_order_pushes_once_each() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("demo.redb");
    let store = Store::open(&path).unwrap();
    annals::testing::internals::demo::run(&store, 300, |_| {}).unwrap();
    let state = store.snapshot().unwrap().state();
    // The first push (tick 41, step 1): project api-s0 on hub-us from runtime-b, sequences 1,
    // 3, 2, a retry of 3, then sequence 4 from runtime-a, refused.
    let mut run = ingest::hub_project_events(&state, "hub-us", usize::MAX).unwrap();
    run.retain(|e| e.run == "run-1");
    assert_eq!(
        sequences(&run),
        [
            ("api-s0", "run-1", 1),
            ("api-s0", "run-1", 2),
            ("api-s0", "run-1", 3)
        ]
    );
    assert_eq!(ingest::cursor(&state, "api-s0", "run-1").unwrap(), 3);
    assert!(run.iter().all(|e| e.home_runtime == "runtime-b"));
    // Pushed together, 5 ms before the retry of 3: the duplicate kept the first receipt.
    assert!(
        run.iter()
            .all(|e| e.received_at_ms == run[0].received_at_ms),
        "{run:?}"
    );
    assert_eq!(ingest::event(&state, "api-s0", "run-1", 4).unwrap(), None);
}
