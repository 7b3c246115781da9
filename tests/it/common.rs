//! Helpers shared by the integration tests.

use annals::{AppendOutcome, ExpectedVersion, NewEvent, Position, Store};
use tempfile::TempDir;

/// A store in a fresh temporary folder; keep the folder alive as long as the store.
pub fn store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = Store::open(dir.path().join("log.redb")).expect("open a new store");
    (dir, store)
}

/// An event of kind `kind` at time `at_ms` with `payload`.
pub fn event(kind: &str, at_ms: u64, payload: &[u8]) -> NewEvent {
    NewEvent::new(kind, at_ms, payload.to_vec())
}

/// Appends one event with `ExpectedVersion::Any` and returns its position.
pub fn append_one(store: &Store, stream: &str, payload: &[u8]) -> Position {
    match store
        .append(
            stream,
            ExpectedVersion::Any,
            &[event("test.event", 1, payload)],
        )
        .expect("append")
    {
        AppendOutcome::Appended(appended) => appended.first_position,
        other => panic!("expected a fresh append, got {other:?}"),
    }
}
