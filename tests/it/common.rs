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

/// Standard base64 (with padding) to bytes.
pub fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let mut out = Vec::new();
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').collect();
    for chunk in digits.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c) << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

/// Counts records per kind; `weight` is what each record adds, so that two versions of the
/// projection build different tables from the same log.
pub struct KindCounts {
    pub version: u32,
    pub weight: u64,
}

pub const COUNTS: annals::projection::Table<String, u64> =
    annals::projection::Table::new("kind_counts.counts");

impl annals::projection::Projection for KindCounts {
    fn name(&self) -> &'static str {
        "kind_counts"
    }
    fn version(&self) -> u32 {
        self.version
    }
    fn tables(&self) -> &'static [&'static str] {
        &["kind_counts.counts"]
    }
    fn apply(
        &self,
        tables: &annals::projection::WriteTables<'_>,
        record: &annals::Record,
    ) -> annals::Result<()> {
        let count = COUNTS.get(tables, &record.kind)?.unwrap_or(0);
        COUNTS.insert(tables, &record.kind, &(count + self.weight))
    }
}

/// The faults a crash sweep on the simulated disk tries: at every sync in `syncs`, and at
/// about 60 writes spread over `ops` (every write would be slow in debug builds), a crash
/// losing all, some, or a torn part of what was not synced, and an I/O error.
pub fn sweep_faults(
    syncs: std::ops::RangeInclusive<u64>,
    ops: std::ops::RangeInclusive<u64>,
) -> Vec<annals::testing::sim::Fault> {
    use annals::testing::sim::{Fault, Loss, Trigger};
    let step = ((ops.end() + 1).saturating_sub(*ops.start()) / 60).max(1);
    syncs
        .map(Trigger::Sync)
        .chain(ops.step_by(step as usize).map(Trigger::Op))
        .enumerate()
        .flat_map(|(n, trigger)| {
            let seed = n as u64;
            [
                Fault::Crash(trigger, Loss::DropUnsynced),
                Fault::Crash(trigger, Loss::KeepSome(seed)),
                Fault::Crash(trigger, Loss::TearLast(seed)),
                Fault::FailOnce(trigger),
            ]
        })
        .collect()
}
