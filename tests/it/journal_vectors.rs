//! `schema/vectors/journal_v3.json`: the bytes of a commit journal (`schema/FORMAT.md` 3.15)
//! for fixed commits, as a known answer. The test makes the commits through an exclusive
//! store that never drains, reads the journal back, and checks it is exactly the committed
//! file's bytes but for the journal's random marker (put in the vector's place, with the
//! header's and the synced mark's checks made again), parsing it field by field as FORMAT.md
//! lays it out (with the blake3 crate for the checks, not annals' code);
//! `ANNALS_WRITE_VECTORS=1` rewrites it.
//!
//! `schema/vectors/journal_v1.json` and `journal_v2.json`, the same commits in the layouts
//! older builds wrote, are recovered beside a new log: a crash under an older build loses
//! nothing.

use std::path::PathBuf;

use annals::{ExpectedVersion, JournalOptions, NewEvent, Position, Sharing, Store, StoreOptions};
use serde_json::{Value, json};

fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/journal_v3.json")
}

/// A version 3 header's bytes: its magic, version, marker, check and synced mark.
const HEADER: usize = 64;
const MARKER: usize = 16;

/// The synced mark's check: the first 4 bytes of blake3 derive-key over the marker and the
/// mark's end and epoch.
fn mark_check(marker: &[u8], covered: &[u8]) -> [u8; 4] {
    let hash = blake3::Hasher::new_derive_key("annals 2026-12-06 journal synced mark v3")
        .update(marker)
        .update(covered)
        .finalize();
    hash.as_bytes()[..4].try_into().unwrap()
}

/// `journal` with its marker replaced by `marker`: in the header (whose check is made again)
/// and at the start of every frame.
fn with_marker(journal: &[u8], marker: &[u8]) -> Vec<u8> {
    let mut bytes = journal.to_vec();
    bytes[16..32].copy_from_slice(marker);
    let check = blake3::Hasher::new_derive_key("annals 2026-12-05 journal header v2")
        .update(&bytes[..32])
        .finalize();
    bytes[32..48].copy_from_slice(&check.as_bytes()[..16]);
    let mark = mark_check(marker, &bytes[48..60]);
    bytes[60..64].copy_from_slice(&mark);
    let mut at = HEADER;
    while at + MARKER + 4 <= bytes.len() {
        bytes[at..at + MARKER].copy_from_slice(marker);
        let body_len = u32_at(&bytes, at + MARKER) as usize;
        at += MARKER + 4 + body_len + 32;
    }
    bytes
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
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
    // The frames, each its marker first, then the room the journal keeps for the rest of a
    // checkpoint: zeros.
    let marker = file[16..32].to_vec();
    let mut end = HEADER;
    while end + MARKER + 4 <= file.len() && file[end..end + MARKER] == marker[..] {
        end += MARKER + 4 + u32_at(&file, end + MARKER) as usize + 32;
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

/// The vector of fixed commits, its journal's marker put in `committed`'s place.
fn vector(committed: Option<&Value>) -> Value {
    let ((mut journal, file_len), records) = generate();
    if let Some(committed) = committed {
        let theirs = unhex(committed["journal_hex"].as_str().expect("hex"));
        journal = with_marker(&journal, &theirs[16..32]);
    }
    json!({
        "note": "schema/FORMAT.md 3.15: the journal (version 3) of three commits (1, 3 and 1 records) of a new log; its marker is random, so a journal written again equals this one once its marker is put in this one's place (the header's and the synced mark's checks made again); the synced mark says the frames end where journal_hex ends, in epoch 1 (the new journal was emptied once, at its open)",
        "journal_hex": hex(&journal),
        "file_len": file_len,
        "room_note": "past journal_hex the file holds zeros to file_len: the room set aside for the frames to come (no marker there: the frames end)",
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
    assert_eq!(u16::from_le_bytes([bytes[14], bytes[15]]), 3);
    let marker = &bytes[16..32];
    let check = blake3::Hasher::new_derive_key("annals 2026-12-05 journal header v2")
        .update(&bytes[..32])
        .finalize();
    assert_eq!(bytes[32..48], check.as_bytes()[..16], "the header's check");
    let synced_end = u64::from_le_bytes(bytes[48..56].try_into().unwrap());
    let epoch = u32::from_le_bytes(bytes[56..60].try_into().unwrap());
    assert_eq!(
        (synced_end, epoch),
        (bytes.len() as u64, 1),
        "the synced mark: the frames' end, in the epoch after the open's emptying"
    );
    assert_eq!(
        bytes[60..64],
        mark_check(marker, &bytes[48..60]),
        "the mark's check"
    );
    let mut at = HEADER;
    let mut frames = Vec::new();
    while at < bytes.len() {
        assert_eq!(
            &bytes[at..at + MARKER],
            marker,
            "the frame at {at} begins with the marker"
        );
        let length = at + MARKER;
        let body_len = u32_at(bytes, length) as usize;
        let covered = &bytes[length..length + 4 + body_len];
        let check = &bytes[length + 4 + body_len..length + 4 + body_len + 32];
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
            let len = u32_at(body, inner) as usize;
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
        at = length + 4 + body_len + 32;
    }
    frames
}

#[test]
fn the_journal_of_fixed_commits_is_the_committed_vector_byte_for_byte() {
    if std::env::var_os("ANNALS_WRITE_VECTORS").is_some() {
        let text = serde_json::to_string_pretty(&vector(None)).expect("JSON") + "\n";
        std::fs::write(vectors_path(), text).expect("write the vector");
    }
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_path()).expect("the vector"))
            .expect("JSON");
    let found = vector(Some(&committed));
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

#[test]
fn journals_older_builds_left_are_recovered_and_rewritten_as_version_3() {
    for (name, version) in [("journal_v1.json", 1), ("journal_v2.json", 2)] {
        older_journal_is_recovered(name, version);
    }
}

/// The journal of `name` (an older build's, of `version`) read beside a new log, recovered,
/// then rewritten as version 3.
fn older_journal_is_recovered(name: &str, version: u8) {
    let older: Value = serde_json::from_str(
        &std::fs::read_to_string(vectors_path().with_file_name(name)).expect("the older vector"),
    )
    .expect("JSON");
    let dir = tempfile::tempdir().expect("temporary folder");
    let path = dir.path().join("log.redb");
    let created = StoreOptions {
        create: true,
        ..StoreOptions::default()
    };
    drop(Store::open_with(&path, created).expect("a new log"));
    let journal = annals::journal::journal_path(&path);
    let bytes = unhex(older["journal_hex"].as_str().expect("hex"));
    assert_eq!(bytes[14..16], [version, 0], "{name}'s version");
    std::fs::write(&journal, &bytes).expect("the journal an older build left");
    // A reader reads its frames past the file's head, and writes nothing.
    let reader = Store::open_read_only(&path).expect("read beside the journal");
    assert_eq!(reader.head().expect("head").next, Position(5), "{name}");
    drop(reader);
    assert_eq!(std::fs::read(&journal).expect("the journal"), bytes);
    let options = StoreOptions {
        sharing: Sharing::Exclusive,
        ..StoreOptions::default()
    };
    let store = Store::open_with(&path, options).expect("recovered");
    assert_eq!(store.journal_recovery().records, 5, "{name}");
    let hashes: Vec<String> = store
        .read_all(Position(0), annals::Direction::Forward, 10)
        .expect("records")
        .into_iter()
        .map(|record| record.hash.to_string())
        .collect();
    assert_eq!(
        hashes,
        older["record_hashes"]
            .as_array()
            .expect("hashes")
            .iter()
            .map(|h| h.as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    );
    let rewritten = std::fs::read(&journal).expect("the journal, kept");
    assert_eq!(&rewritten[..16], b"annals journal\x03\x00");
    assert!(store.verify().expect("verify").is_sound());
}
