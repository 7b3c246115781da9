//! Export files made beside a log: a range of it as `annals export` writes it, and one whose
//! records a forger changed, every hash, link, the head and the root recomputed to match, so
//! that only the log's own rules can refuse it. Shared by the library's refusal tests and the
//! command line's, which import the same forgeries. Never used outside the tests.

use std::fs;
use std::path::Path;

use crate::export::{ExportReader, export};
use crate::merkle::{LogTreeHasher, leaf_hash, root_of_leaves};
use crate::record::{Placement, encode_stored};
use crate::testing::setup::ExpectDone;
use crate::{Digest, NewEvent, Position, Record, Store, StreamVersion};

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
    let mut reader = ExportReader::open(file).expect("the forgery opens");
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
