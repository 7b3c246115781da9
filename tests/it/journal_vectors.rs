//! `schema/vectors/journal_v3.json`: the bytes of a commit journal (`schema/FORMAT.md` 3.15)
//! for fixed commits, as a known answer. The test makes the commits through an exclusive
//! store that never drains, reads the journal back, and checks it is exactly the committed
//! file's bytes but for the journal's random marker (put in the vector's place, with the
//! header's and the synced mark's checks made again), parsing it field by field as FORMAT.md
//! lays it out (with the blake3 crate for the checks, not annals' code). The commits are
//! `annals::testing::vectors::journal`'s, which the `write_vectors` example writes the file from.
//!
//! `schema/vectors/journal_v1.json` and `journal_v2.json`, the same commits in the layouts
//! older builds wrote, are recovered beside a new log: a crash under an older build loses
//! nothing.

use std::path::PathBuf;

use annals::testing::internals::hash::{hex, unhex};
use annals::testing::vectors::journal::{self, HEADER, MARKER, mark_check, u32_at};
use annals::{Position, Sharing, Store, StoreOptions};
use serde_json::Value;

fn vectors_path() -> PathBuf {
    annals::testing::vectors::path("journal_v3.json")
}

/// `text` as bytes, from hex the vector holds.
fn bytes_of(text: &str) -> Vec<u8> {
    unhex(text).expect("hex")
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
    let committed: Value =
        serde_json::from_str(&std::fs::read_to_string(vectors_path()).expect("the vector"))
            .expect("JSON");
    let dir = tempfile::tempdir().expect("temporary folder");
    let found = journal::vector(dir.path(), Some(&committed));
    assert!(
        committed == found,
        "the journal's bytes changed: a format change (FORMAT.md 3.15), or regenerate with the write_vectors example"
    );
    let bytes = bytes_of(committed["journal_hex"].as_str().expect("hex"));
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
    let bytes = bytes_of(older["journal_hex"].as_str().expect("hex"));
    assert_eq!(bytes[14..16], [version, 0], "{name}'s version");
    std::fs::write(&journal, &bytes).expect("the journal an older build left");
    // A reader reads its frames past the file's head, and writes nothing.
    let reader = Store::open_read_only(&path).expect("read beside the journal");
    assert_eq!(
        reader.snapshot().expect("head").head().expect("head").next,
        Position(5),
        "{name}"
    );
    drop(reader);
    assert_eq!(std::fs::read(&journal).expect("the journal"), bytes);
    let options = StoreOptions {
        sharing: Sharing::Exclusive,
        ..StoreOptions::default()
    };
    let store = Store::open_with(&path, options).expect("recovered");
    assert_eq!(
        annals::maintenance::Stats::of(&store)
            .unwrap()
            .journal_recovery
            .records,
        5,
        "{name}"
    );
    let hashes: Vec<String> = store
        .snapshot()
        .expect("records")
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
    assert!(
        annals::Audit::of(&store)
            .verify()
            .expect("verify")
            .is_sound()
    );
}
