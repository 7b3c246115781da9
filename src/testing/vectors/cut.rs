//! `schema/vectors/cut_v4.json`: the bytes a cut writes (`schema/FORMAT.md` 3.14) for a log of
//! fixed records: the cut record, the archived blocks the log keeps, the archive's digest.

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::json;

use crate::testing::setup::ExpectDone;
use crate::{ExpectedVersion, NewEvent, Position, Store};

use crate::hash::hex;

/// The text of `schema/vectors/cut_v4.json`: 40 records over two streams, every fifth with an
/// idempotency key, in a new log in `dir`, cut before 21.
pub fn text(dir: &Path) -> String {
    let path = dir.join("log.redb");
    let store = Store::open(&path).expect("open");
    for n in 0..40u64 {
        let stream = if n % 2 == 0 { "orders" } else { "payments" };
        let mut event = NewEvent::new("test.event", 1_000 + n, format!("{{\"n\":{n}}}"));
        if n.is_multiple_of(5) {
            event = event.with_idempotency_key(format!("request-{n}"));
        }
        store
            .append(stream, ExpectedVersion::Any, &[event])
            .expect("append")
            .expect_done();
    }
    let root_before = store
        .snapshot()
        .expect("snapshot")
        .merkle_root(40)
        .expect("root");
    let archive = dir.join("log-0.archive");
    let report = store.archive_before(Position(21), &archive).expect("cut");
    let snapshot = store.snapshot().expect("snapshot");
    let record = snapshot
        .get(report.record)
        .expect("read")
        .expect("the cut record");
    let root_after = snapshot.merkle_root(40).expect("root");
    assert_eq!(root_before, root_after, "a cut leaves the tree as it was");
    drop(snapshot);
    store.close().expect("close");
    let db = redb::Database::open(&path).expect("redb");
    let txn = db.begin_read().expect("read");
    let blocks: TableDefinition<u64, &[u8]> = TableDefinition::new("annals.archived");
    let blocks = txn.open_table(blocks).expect("annals.archived");
    let blocks: Vec<_> = blocks
        .iter()
        .expect("iter")
        .map(|entry| {
            let (key, value) = entry.expect("row");
            json!({ "block": key.value(), "stored_hex": hex(value.value()) })
        })
        .collect();
    let vector = json!({
        "records": 40,
        "before": 21,
        "archive": "log-0.archive",
        "archive_blake3": report.cut.archive_digest.to_string(),
        "archive_bytes": std::fs::metadata(&archive).expect("archive").len(),
        "cut_record": {
            "position": record.position.0,
            "stream": record.stream,
            "version": record.version.0,
            "kind": record.kind,
            "at_ms": record.at_ms,
            "payload_hex": hex(&record.payload),
            "hash": record.hash.to_string(),
        },
        "anchor": report.cut.anchor.to_string(),
        "keyed": report.cut.keyed,
        "archived": blocks,
        "root_of_40": root_before.to_string(),
    });
    super::pretty(&vector)
}
