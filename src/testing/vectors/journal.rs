//! `schema/vectors/journal_v3.json`: the commit journal (`schema/FORMAT.md` 3.15) of three
//! fixed commits to a new log, as a known answer; its random marker is put in the committed
//! vector's place before comparing.

use std::path::Path;

use serde_json::{Value, json};

use crate::hash::{hex, unhex};
use crate::testing::setup::ExpectDone;
use crate::{
    ExpectedVersion, NewEvent, Position, Sharing, Store, StoreOptions, journal::JournalOptions,
};

/// A version 3 header's bytes: its magic, version, marker, check and synced mark.
pub const HEADER: usize = 64;
/// A marker's bytes: the header's and every frame's.
pub const MARKER: usize = 16;

/// The synced mark's check: the first 4 bytes of blake3 derive-key over the marker and the
/// mark's end and epoch.
pub fn mark_check(marker: &[u8], covered: &[u8]) -> [u8; 4] {
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

/// The little-endian `u32` at `at`.
pub fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// A journal's frames, and its file's length with the room after them.
type Journal = (Vec<u8>, usize);

/// Three commits: one record, three records over two streams in one transaction (one with an
/// idempotency key), one record with an empty payload: the journal's frames and its file's length, and the records' positions and hashes.
fn generate(dir: &Path) -> (Journal, Vec<(u64, String)>) {
    let path = dir.join("log.redb");
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
    store
        .append(
            "orders",
            ExpectedVersion::NoStream,
            &[NewEvent::new("order.placed", 1_000, b"{\"n\":1}".to_vec())],
        )
        .expect("append")
        .expect_done();
    store
        .write(|session| {
            session
                .append(
                    "orders",
                    ExpectedVersion::Any,
                    &[NewEvent::new("order.paid", 1_001, b"{\"n\":2}".to_vec())
                        .with_idempotency_key("pay-2")],
                )?
                .expect_done();
            session.append(
                "payments",
                ExpectedVersion::NoStream,
                &[
                    NewEvent::new("payment.taken", 1_002, b"{\"n\":3}".to_vec()),
                    NewEvent::new("payment.settled", 1_003, b"{\"n\":4}".to_vec()),
                ],
            )
        })
        .expect("a transaction of three")
        .expect_done();
    store
        .append(
            "orders",
            ExpectedVersion::Any,
            &[NewEvent::new("order.closed", 1_004, Vec::new())],
        )
        .expect("append")
        .expect_done();
    let file = std::fs::read(crate::journal::journal_path(&path)).expect("the journal");
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
        .read_all(Position(0), crate::Direction::Forward, 10)
        .expect("records")
        .into_iter()
        .map(|record| (record.position.0, record.hash.to_string()))
        .collect();
    (journal, records)
}

/// The vector of fixed commits made in a new log in `dir`, its journal's marker put in
/// `committed`'s place: what `schema/vectors/journal_v3.json` holds.
pub fn vector(dir: &Path, committed: Option<&Value>) -> Value {
    let ((mut journal, file_len), records) = generate(dir);
    if let Some(committed) = committed {
        let theirs = unhex(committed["journal_hex"].as_str().expect("hex")).expect("hex");
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

/// The text of `schema/vectors/journal_v3.json`, its commits made in a new log in `dir`.
pub fn text(dir: &Path) -> String {
    super::pretty(&vector(dir, None))
}
