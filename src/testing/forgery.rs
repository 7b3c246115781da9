//! Export files made beside a log: a range of it as `annals export` writes it, and one whose
//! records a forger changed, every hash, link, the head and the root recomputed to match, so
//! that only the log's own rules can refuse it. Shared by the library's refusal tests and the
//! command line's, which import the same forgeries. Never used outside the tests.

use std::fs;
use std::path::Path;

use crate::export::export;
use crate::merkle::{Frontier, LogTreeHasher, leaf_hash, root_of_leaves};
use crate::record::{Placement, encode_stored};
use crate::testing::setup::ExpectDone;
use crate::{NewEvent, Position, Record, Store, hash::Digest, record::StreamVersion};

/// Writes records `from..to` of the log at `source` to the export file `file`.
pub fn export_range(source: &Path, file: &Path, from: u64, to: u64) {
    let store = Store::open_read_only(source).expect("open the source read-only");
    let snapshot = store.snapshot().expect("a snapshot");
    export(&snapshot, Position(from), Position(to), file, &mut |_| {})
        .expect("export the range")
        .expect_done();
}

/// An export of `records[from..to]` (the log at `source`'s) in which `forge` has changed
/// some records, every hash, link, the head and the root recomputed to match: sound by
/// itself.
pub fn forged_export(
    source: &Path,
    records: &[Record],
    (from, to): (u64, u64),
    file: &Path,
    forge: impl Fn(&Record) -> Option<(NewEvent, u64)>,
) {
    export_range(source, file, from, to);
    let clean = fs::read(file).expect("read the export");
    let header_bytes = 16 + 4 + 8 + 8 + 32 + 32 * from.count_ones() as usize + 32 + 32;
    let mut bytes = clean[..header_bytes].to_vec();
    let mut leaves = Vec::new();
    let mut prev = Digest::ZERO;
    for record in &records[..to as usize] {
        if record.position.0 < from {
            prev = record.hash;
            leaves.push(leaf_hash(&prev));
            continue;
        }
        let (event, version) =
            forge(record).unwrap_or_else(|| (same_event(record), record.version.0));
        let placement = Placement {
            stream: &record.stream,
            position: record.position,
            version: StreamVersion(version),
            prev,
        };
        let mut stored = Vec::new();
        prev = encode_stored(&mut stored, &event, placement).expect("encode the record");
        leaves.push(leaf_hash(&prev));
        bytes.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&stored);
    }
    let root = root_of_leaves(&LogTreeHasher, &leaves);
    bytes[header_bytes - 64..header_bytes - 32].copy_from_slice(prev.as_bytes());
    bytes[header_bytes - 32..header_bytes].copy_from_slice(root.as_bytes());
    bytes.extend_from_slice(b"annals export ok");
    bytes.extend_from_slice(&to.to_le_bytes());
    bytes.extend_from_slice(prev.as_bytes());
    bytes.extend_from_slice(root.as_bytes());
    fs::write(file, &bytes).expect("write the forgery");
    // The forgery reads back whole: only the log's own rules can refuse it.
    let mut reader = crate::export::open(file).expect("the forgery opens");
    while reader.next_record().expect("the forgery reads").is_some() {}
}

/// The event `record` was appended as.
fn same_event(record: &Record) -> NewEvent {
    NewEvent {
        kind: record.kind.clone(),
        schema: record.schema,
        at_ms: record.at_ms,
        idempotency_key: record.idempotency_key.clone(),
        payload: record.payload.clone(),
    }
}

/// The names of the files in `dir` that start with `prefix`: what a refused import left
/// beside its target (temporary files included).
pub fn files_named(dir: &Path, prefix: &str) -> Vec<String> {
    fs::read_dir(dir)
        .expect("read the folder")
        .map(|entry| {
            entry
                .expect("an entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with(prefix))
        .collect()
}

/// The first record at or after `from` of a lease event, whose payload `apply` decodes.
pub fn lease_event_from(records: &[Record], from: u64) -> Position {
    records[from as usize..]
        .iter()
        .find(|r| r.kind.starts_with("lease."))
        .expect("the demo writes leases")
        .position
}

/// Undecodable bytes in place of `at`'s payload, the record otherwise as it was.
pub fn undecodable_at(at: Position) -> impl Fn(&Record) -> Option<(NewEvent, u64)> {
    move |record| {
        (record.position == at).then(|| {
            let event = NewEvent {
                payload: vec![0xFF; 3],
                ..same_event(record)
            };
            (event, record.version.0)
        })
    }
}

/// The bytes of an export header before its frontier, and its head and root after it.
const HEADER_FIXED_BYTES: usize = 16 + 4 + 8 + 8 + 32;
/// The trailer: its magic, `to`, head and root.
const TRAILER_BYTES: usize = 16 + 8 + 32 + 32;

/// Writes to `file` an export of `base` from position `from` to its head, followed by
/// `forged`, each record sealed as a writer would seal it: every hash and link, the stream
/// versions, the head and the Merkle root are recomputed, so the file passes every check an
/// export reader can make alone. Returns the position of the first forged record.
pub fn forged_continuation(
    base: &Path,
    from: u64,
    forged: &[(String, NewEvent)],
    file: &Path,
) -> Position {
    let store = Store::open_read_only(base).expect("open the base read-only");
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap();
    export(&snapshot, Position(from), head.next, file, &mut |_| {})
        .unwrap()
        .expect_done();
    let clean = fs::read(file).unwrap();
    let mut reader = crate::export::open(file).unwrap();
    let mut frontier = Frontier::from_nodes(from, reader.header().frontier.clone()).unwrap();
    while let Some(record) = reader.next_record().unwrap() {
        frontier.push(&LogTreeHasher, leaf_hash(&record.hash), |_, _, _| {});
    }
    let header_len = HEADER_FIXED_BYTES + 32 * from.count_ones() as usize + 64;
    let mut body = clean[header_len..clean.len() - TRAILER_BYTES].to_vec();
    let (mut position, mut prev) = (head.next, head.hash);
    let mut versions = std::collections::BTreeMap::new();
    for (stream, event) in forged {
        let version = versions.entry(stream.clone()).or_insert_with(|| {
            snapshot
                .stream_version(stream)
                .unwrap()
                .map_or(0, |last| last.0 + 1)
        });
        let placement = Placement {
            stream,
            position,
            version: StreamVersion(*version),
            prev,
        };
        let mut stored = Vec::new();
        prev = encode_stored(&mut stored, event, placement).unwrap();
        frontier.push(&LogTreeHasher, leaf_hash(&prev), |_, _, _| {});
        body.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        body.extend_from_slice(&stored);
        *version += 1;
        position = Position(position.0 + 1);
    }
    let root = frontier.root(&LogTreeHasher);
    let mut bytes = clean[..header_len].to_vec();
    bytes[28..36].copy_from_slice(&position.0.to_le_bytes());
    bytes[header_len - 64..header_len - 32].copy_from_slice(prev.as_bytes());
    bytes[header_len - 32..].copy_from_slice(root.as_bytes());
    bytes.extend_from_slice(&body);
    bytes.extend_from_slice(b"annals export ok");
    bytes.extend_from_slice(&position.0.to_le_bytes());
    bytes.extend_from_slice(prev.as_bytes());
    bytes.extend_from_slice(root.as_bytes());
    fs::write(file, &bytes).unwrap();
    head.next
}

/// The time the superseded lease's first grant is made at.
pub const SUPERSEDED_AT_MS: u64 = 1_000;

/// `a` held `r` under token 1 until [`SUPERSEDED_AT_MS`] + 100; `b` took it over under token
/// 2, live until [`SUPERSEDED_AT_MS`] + 10,000 (`b`'s lease is what a stale `a` must not
/// write behind); `a` claims key `k` of lane `l`.
pub fn superseded_lease(store: &Store) {
    use crate::leases::{LaneCommand, LeaseCommand};
    let t0 = SUPERSEDED_AT_MS;
    for (holder, now_ms, ttl_ms) in [("a", t0, 100), ("b", t0 + 1_000, 10_000)] {
        store
            .execute(&LeaseCommand::Acquire {
                resource: "r".into(),
                holder: holder.into(),
                ttl_ms,
                now_ms,
            })
            .expect("acquire")
            .expect_done();
    }
    store
        .execute(&LaneCommand::Claim {
            lane: "l".into(),
            key: "k".into(),
            owner: "a".into(),
            ttl_ms: 10_000,
            now_ms: t0,
        })
        .expect("claim")
        .expect_done();
}

/// `r` granted again to its superseded holder `a` under `token`: what only the leases'
/// `token_increases` rule refuses when `token` is not past `b`'s.
pub fn regrant_to_a(token: u64) -> crate::leases::LeaseEvent {
    crate::leases::LeaseEvent::Acquired(crate::leases::events::Acquired {
        resource: "r".into(),
        holder: "a".into(),
        token,
        expires_at_ms: SUPERSEDED_AT_MS + 100_000,
        project: String::new(),
        name: String::new(),
        holder_name: String::new(),
    })
}
