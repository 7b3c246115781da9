//! `schema/vectors/cut_v4.json`: the bytes a cut writes (`schema/FORMAT.md` 3.14) for a log
//! of fixed records, as a known answer. The test rebuilds the log, cuts it, and checks the
//! committed file is exactly what it finds; `ANNALS_WRITE_VECTORS=1` rewrites it.

use std::path::PathBuf;

use annals::{ExpectedVersion, NewEvent, Position, Store};
use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::json;

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/cut_v4.json")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 40 records over two streams, every fifth with an idempotency key, cut before 21.
fn generate() -> String {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("log.redb");
    let store = Store::open(&path).expect("open");
    for n in 0..40u64 {
        let stream = if n % 2 == 0 { "orders" } else { "payments" };
        let mut event = NewEvent::new("test.event", 1_000 + n, format!("{{\"n\":{n}}}"));
        if n.is_multiple_of(5) {
            event = event.with_idempotency_key(format!("request-{n}"));
        }
        let _appended = store
            .append(stream, ExpectedVersion::Any, &[event])
            .expect("append");
    }
    let root_before = store
        .snapshot()
        .expect("snapshot")
        .merkle_root(40)
        .expect("root");
    let archive = dir.path().join("log-0.archive");
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
    let mut text = serde_json::to_string_pretty(&vector).expect("json");
    text.push('\n');
    text
}

#[test]
fn cut_vectors_file_is_what_a_cut_writes() {
    let path = vectors_path();
    let text = generate();
    if std::env::var_os("ANNALS_WRITE_VECTORS").is_some_and(|value| value == "1") {
        std::fs::write(&path, &text)
            .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    assert!(
        committed == text,
        "{} differs from what a cut writes. Changing it changes the cut's format (FORMAT.md \
         3.14): see schema/vectors/README.md before regenerating with ANNALS_WRITE_VECTORS=1.",
        path.display()
    );
}

#[test]
fn the_cut_payload_is_laid_out_as_format_says() {
    let text = std::fs::read_to_string(vectors_path()).expect("vectors");
    let vector: serde_json::Value = serde_json::from_str(&text).expect("json");
    let payload: Vec<u8> = (0..vector["cut_record"]["payload_hex"].as_str().unwrap().len() / 2)
        .map(|i| {
            u8::from_str_radix(
                &vector["cut_record"]["payload_hex"].as_str().unwrap()[2 * i..2 * i + 2],
                16,
            )
            .unwrap()
        })
        .collect();
    // u8 version ‖ u64 from ‖ u64 before ‖ anchor ‖ u64 keyed ‖ u16 len ‖ name ‖ blake3 ‖ u32 count
    assert_eq!(payload[0], 1);
    assert_eq!(u64::from_le_bytes(payload[1..9].try_into().unwrap()), 0);
    assert_eq!(u64::from_le_bytes(payload[9..17].try_into().unwrap()), 21);
    assert_eq!(hex(&payload[17..49]), vector["anchor"].as_str().unwrap());
    // Records 0, 5, 10, 15 and 20 carry a key.
    assert_eq!(u64::from_le_bytes(payload[49..57].try_into().unwrap()), 5);
    let name_len = usize::from(u16::from_le_bytes(payload[57..59].try_into().unwrap()));
    assert_eq!(&payload[59..59 + name_len], b"log-0.archive");
    let at = 59 + name_len;
    assert_eq!(
        hex(&payload[at..at + 32]),
        vector["archive_blake3"].as_str().unwrap()
    );
    let count = u32::from_le_bytes(payload[at + 32..at + 36].try_into().unwrap());
    assert_eq!(count as usize, annals::builtin_projections().len());
    // Block 0 holds 16 hashes, block 1 the 5 of positions 16 to 20, each with a checksum.
    let blocks = vector["archived"].as_array().unwrap();
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        blocks[0]["stored_hex"].as_str().unwrap().len(),
        2 * (16 * 32 + 8)
    );
    assert_eq!(
        blocks[1]["stored_hex"].as_str().unwrap().len(),
        2 * (5 * 32 + 8)
    );
}
