//! Helpers shared by the integration tests.

use annals::{AppendOutcome, ExpectedVersion, NewEvent, Position, Sharing, Store, StoreOptions};
use tempfile::TempDir;

/// A store in a fresh temporary folder; keep the folder alive as long as the store.
pub fn store() -> (TempDir, Store) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let store = Store::open(dir.path().join("log.redb")).expect("open a new store");
    (dir, store)
}

/// The store at `path` (created if missing), this process's alone: the only sharing mode in
/// which commits may be deferred.
pub fn open_exclusive(path: &std::path::Path) -> Store {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        ..StoreOptions::default()
    };
    Store::open_with(path, options).expect("open an exclusive store")
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
