//! `schema/vectors/journal_v1.json`: the bytes of a commit journal (`schema/FORMAT.md` 3.15)
//! for fixed commits, as a known answer. The test makes the commits through an exclusive
//! store that never drains, reads the journal back, and checks it is exactly the committed
//! file's bytes, parsing it field by field as FORMAT.md lays it out (with the blake3 crate for
//! the check, not annals' code); `ANNALS_WRITE_VECTORS=1` rewrites it.

use std::path::PathBuf;

use annals::{ExpectedVersion, JournalOptions, NewEvent, Position, Sharing, Store, StoreOptions};
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/journal_v1.json")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

/// A journal's frames, and its file's length with the room after them.
type Journal = (Vec<u8>, usize);

/// Three commits: one record, three records over two streams in one transaction (one with an
/// idempotency key), one record with an empty payload: the journal's frames and its file's length, and the records' positions and hashes.
fn generate() -> (Journal, Vec<(u64, String)>) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("log.redb");
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        journal: Some(JournalOptions {
            checkpoint_ms: u64::MAX,
            checkpoint_bytes: u64::MAX,
        }),
        ..StoreOptions::default()
    };
    let store = Store::open_with(&path, options).expect("open");
    let _one = store
        .append(
            "orders",
            ExpectedVersion::NoStream,
            &[NewEvent::new("order.placed", 1_000, b"{\"n\":1}".to_vec())],
        )
        .expect("append");
    let _three = store
        .write(|session| {
            let _paid = session.append(
                "orders",
                ExpectedVersion::Any,
                &[NewEvent::new("order.paid", 1_001, b"{\"n\":2}".to_vec())
                    .with_idempotency_key("pay-2")],
            )?;
            session.append(
                "payments",
                ExpectedVersion::NoStream,
                &[
                    NewEvent::new("payment.taken", 1_002, b"{\"n\":3}".to_vec()),
                    NewEvent::new("payment.settled", 1_003, b"{\"n\":4}".to_vec()),
                ],
            )
        })
        .expect("a transaction of three");
    let _empty = store
        .append(
            "orders",
            ExpectedVersion::Any,
            &[NewEvent::new("order.closed", 1_004, Vec::new())],
        )
        .expect("append");
    let file = std::fs::read(annals::journal::journal_path(&path)).expect("the journal");
    // The frames, then the room the journal keeps for the rest of a checkpoint: zeros.
    let mut end = 16;
    while end + 4 <= file.len() {
        let body_len = u32::from_le_bytes(file[end..end + 4].try_into().unwrap()) as usize;
        if body_len == 0 {
            break;
        }
        end += 4 + body_len + 32;
    }
    assert!(
        file[end..].iter().all(|&byte| byte == 0),
        "zeros after the frames"
    );
    let journal = (file[..end].to_vec(), file.len());
    let records = store
        .read_all(Position(0), annals::Direction::Forward, 10)
        .expect("records")
        .into_iter()
        .map(|record| (record.position.0, record.hash.to_string()))
        .collect();
    (journal, records)
}

fn vector() -> Value {
    let ((journal, file_len), records) = generate();
    json!({
        "note": "schema/FORMAT.md 3.15: the journal of three commits (1, 3 and 1 records) of a new log",
        "journal_hex": hex(&journal),
        "file_len": file_len,
        "room_note": "past journal_hex the file holds zeros to file_len: the room set aside for the frames to come (a length field of 0 ends the frames)",
        "frames": [
            { "first": 0, "count": 1 },
            { "first": 1, "count": 3 },
            { "first": 4, "count": 1 },
        ],
        "record_hashes": records.iter().map(|(_, hash)| hash.clone()).collect::<Vec<_>>(),
    })
}

/// Parses `bytes` as FORMAT.md 3.15 lays a journal out: (first, count, record hashes) per frame.
fn parse(bytes: &[u8]) -> Vec<(u64, u32, Vec<String>)> {
    assert_eq!(&bytes[..14], b"annals journal");
    assert_eq!(u16::from_le_bytes([bytes[14], bytes[15]]), 1);
    let mut at = 16;
    let mut frames = Vec::new();
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
    while at < bytes.len() {
        let body_len = u32_at(at) as usize;
        if body_len == 0 {
            break;
        }
        let covered = &bytes[at..at + 4 + body_len];
        let check = &bytes[at + 4 + body_len..at + 4 + body_len + 32];
        let expected = blake3::Hasher::new_derive_key("annals 2026-12-03 journal frame v1")
            .update(covered)
            .finalize();
        assert_eq!(check, expected.as_bytes(), "the check of the frame at {at}");
        let body = &covered[4..];
        let first = u64::from_le_bytes(body[..8].try_into().unwrap());
        let count = u32::from_le_bytes(body[8..12].try_into().unwrap());
        let mut inner = 12;
        let mut hashes = Vec::new();
        for _ in 0..count {
            let len = u32::from_le_bytes(body[inner..inner + 4].try_into().unwrap()) as usize;
            let stored = &body[inner + 4..inner + 4 + len];
            hashes.push(hex(&stored[..32]));
            inner += 4 + len;
        }
        assert_eq!(
            inner,
            body.len(),
            "the frame at {at} holds its records and nothing else"
        );
        frames.push((first, count, hashes));
        at += 4 + body_len + 32;
    }
    frames
}

#[test]
fn the_journal_of_fixed_commits_is_the_committed_vector_byte_for_byte() {
    let found = vector();
    if std::env::var_os("ANNALS_WRITE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&found).expect("JSON") + "\n";
        std::fs::write(vectors_path(), text).expect("write the vector");
    }
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_path()).expect("the vector"))
            .expect("JSON");
    assert!(
        committed == found,
        "the journal's bytes changed: a format change (FORMAT.md 3.15), or regenerate with ANNALS_WRITE_VECTORS=1"
    );
    let bytes = unhex(committed["journal_hex"].as_str().expect("hex"));
    let frames = parse(&bytes);
    let hashes: Vec<String> = frames.iter().flat_map(|(_, _, h)| h.clone()).collect();
    assert_eq!(
        frames
            .iter()
            .map(|(first, count, _)| (*first, *count))
            .collect::<Vec<_>>(),
        [(0, 1), (1, 3), (4, 1)]
    );
    let recorded: Vec<String> = committed["record_hashes"]
        .as_array()
        .expect("hashes")
        .iter()
        .map(|hash| hash.as_str().expect("a hash").to_owned())
        .collect();
    assert_eq!(
        hashes, recorded,
        "each frame holds the log's own stored records"
    );
}
