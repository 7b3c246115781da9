//! Damage to one stored record, written beneath the store through raw redb as a disk or a
//! forger would: the verification tests of the library and of the command line flip a byte
//! and check that it is found and named by its position. Never used by the rest of the crate.

use std::path::Path;

use redb::ReadableTable;

use crate::record::Format;
use crate::record::segment::Segment;
use crate::testing::internals::tables::{META, RECORDS_KEY, SEGMENTS};

/// Which part of a stored record to damage.
#[derive(Clone, Copy)]
pub enum Part {
    /// A byte of the payload (the record's last byte).
    Payload,
    /// A byte of the header's `at_ms` field, which decodes either way.
    HeaderTime,
}

/// Flips one byte of the record at `position`, writing the segment back through raw redb.
pub fn flip(path: &Path, position: u64, part: Part) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut segments = txn.open_table(SEGMENTS).unwrap();
        let (first, mut bytes) = {
            let (first, guard) = segments
                .range(..=position)
                .unwrap()
                .next_back()
                .unwrap()
                .unwrap();
            (first.value(), guard.value().to_vec())
        };
        let index = u32::try_from(position - first).unwrap();
        let format = file_format(&txn);
        let record = Segment::parse(&bytes, format)
            .unwrap()
            .record(index)
            .unwrap();
        let start = record.as_ptr() as usize - bytes.as_ptr() as usize;
        let at_ms_at = match format {
            Format::V1 => {
                let stream_len =
                    u64::from_le_bytes(record[32 + 9..32 + 17].try_into().unwrap()) as usize;
                let kind_len_at = 32 + 17 + stream_len + 8;
                let kind_len =
                    u64::from_le_bytes(record[kind_len_at..kind_len_at + 8].try_into().unwrap())
                        as usize;
                kind_len_at + 8 + kind_len + 2
            }
            Format::V2 => v2_at_ms_offset(record),
        };
        let offset = match part {
            Part::Payload => record.len() - 1,
            Part::HeaderTime => at_ms_at,
        };
        bytes[start + offset] ^= 0x01;
        segments.insert(first, bytes.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

/// How the file open in `txn` stores its records.
fn file_format(txn: &redb::WriteTransaction) -> Format {
    let meta = txn.open_table(META).unwrap();
    let bytes = meta.get(RECORDS_KEY).unwrap().unwrap();
    Format::from_version(u32::from_le_bytes(bytes.value().try_into().unwrap())).unwrap()
}

/// Where `at_ms` starts in a format v2 record (schema/FORMAT.md 3.8): after the hash, the
/// flags, the stream and version and the kind (unless the flags leave them out) and the
/// schema, each length and number a LEB128.
fn v2_at_ms_offset(record: &[u8]) -> usize {
    fn skip_number(record: &[u8], at: &mut usize) -> u64 {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let byte = record[*at];
            *at += 1;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }
    let flags = record[32];
    let mut at = 33;
    if flags & 0x01 == 0 {
        let len = skip_number(record, &mut at) as usize;
        at += len;
        skip_number(record, &mut at);
    }
    if flags & 0x02 == 0 {
        let len = skip_number(record, &mut at) as usize;
        at += len;
    }
    skip_number(record, &mut at);
    at
}

/// Replaces `from` with `to` (as long) in the one segment of the closed log at `path` that
/// holds it, then recomputes that segment's digest over its new bytes: damage the digest
/// alone cannot see, as a forger with the file can make.
pub fn rewrite_under_a_fresh_digest(path: &Path, from: &[u8], to: &[u8]) {
    use crate::hash::{segment_digest, segment_v2_digest};
    assert_eq!(from.len(), to.len());
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(SEGMENTS).unwrap();
        let keys: Vec<u64> = table
            .iter()
            .unwrap()
            .map(|entry| entry.unwrap().0.value())
            .collect();
        let mut rewritten = 0;
        for first in keys {
            let mut bytes = table.get(first).unwrap().unwrap().value().to_vec();
            let Some(at) = bytes.windows(from.len()).position(|window| window == from) else {
                continue;
            };
            // The digest of the segment as stored tells its format.
            let v1 = segment_digest(&bytes[32..]).0 == bytes[..32];
            assert!(v1 || segment_v2_digest(&bytes[32..]).0 == bytes[..32]);
            bytes[at..at + to.len()].copy_from_slice(to);
            let fresh = if v1 {
                segment_digest(&bytes[32..])
            } else {
                segment_v2_digest(&bytes[32..])
            };
            bytes[..32].copy_from_slice(&fresh.0);
            table.insert(first, bytes.as_slice()).unwrap();
            rewritten += 1;
        }
        assert_eq!(rewritten, 1, "one segment holds {from:?}");
    }
    txn.commit().unwrap();
}

/// A log in record format `version` at `path` of 40 records (`payload-0000` to
/// `payload-0039`, one stream `s`) whose record 17's payload reads `forged!-0017`, rewritten
/// under a fresh segment digest: only the record's own hash can tell.
pub fn log_with_a_payload_forged_at_17(path: &Path, version: u32) {
    use crate::testing::setup::ExpectDone;
    crate::testing::internals::open::create_with_format(path, version).unwrap();
    {
        let store = crate::Store::open(path).unwrap();
        let events: Vec<_> = (0..40u64)
            .map(|i| crate::NewEvent::new("k", i, format!("payload-{i:04}").into_bytes()))
            .collect();
        store
            .append("s", crate::ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
    }
    rewrite_under_a_fresh_digest(path, b"payload-0017", b"forged!-0017");
}

/// Moves the segment stored under `from` to the key `to` in the closed log at `path`, as a
/// flipped bit of its redb key would: the key `to` must be free.
pub fn move_segment(path: &Path, from: u64, to: u64) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut segments = txn.open_table(SEGMENTS).unwrap();
        let bytes = segments.remove(from).unwrap().unwrap().value().to_vec();
        assert!(segments.insert(to, bytes.as_slice()).unwrap().is_none());
    }
    txn.commit().unwrap();
}

/// Changes the `leases.held` table of the closed log at `path` beneath the store, whose rows
/// are keyed `resource-<i:04>`: the rows of `changed` get other value bytes (sealed again, as
/// a forger with the file would, so that only verify's replay finds them), those of `removed`
/// go. Returns the keys changed, then those removed.
pub fn tamper_leases(path: &Path, changed: &[u32], removed: &[u32]) -> Vec<Vec<u8>> {
    use crate::testing::internals::checksum::{seal, unseal};
    let key = |i: &u32| crate::testing::internals::key_bytes(&format!("resource-{i:04}"));
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let definition: redb::TableDefinition<&[u8], &[u8]> =
            redb::TableDefinition::new("leases.held");
        let mut table = txn.open_table(definition).unwrap();
        for i in changed {
            let stored = table
                .get(key(i).as_slice())
                .unwrap()
                .unwrap()
                .value()
                .to_vec();
            let mut value = unseal("leases.held", &key(i), &stored).unwrap().to_vec();
            let last = value.len() - 1;
            value[last] ^= 0x01;
            let forged = seal("leases.held", &key(i), &value);
            table.insert(key(i).as_slice(), forged.as_slice()).unwrap();
        }
        for i in removed {
            assert!(table.remove(key(i).as_slice()).unwrap().is_some());
        }
    }
    txn.commit().unwrap();
    changed.iter().chain(removed).map(key).collect()
}

/// Inserts a row `key` → `value` into the projection table `table` of the closed log at
/// `path` beneath the store, sealed as the store seals it (a forger with the file recomputes
/// the checksum), so that only verify's comparison with a replay finds it.
pub fn forge_projection_row(path: &Path, table: &str, key: &[u8], value: &[u8]) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let definition: redb::TableDefinition<&[u8], &[u8]> = redb::TableDefinition::new(table);
        let mut rows = txn.open_table(definition).unwrap();
        let forged = crate::testing::internals::checksum::seal(table, key, value);
        rows.insert(key, forged.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

/// Writes a demo log of about 300 records at `clean`, and to `damaged` a copy of it with one
/// bit flipped that makes redb panic on a whole read (about one flip in a hundred does,
/// mostly in page headers), which the library catches as [`crate::Error::DamagedFile`]. The
/// demo and the flips are drawn from fixed seeds, so every run damages the same byte. Panics
/// when none of 2,000 flips does.
pub fn demo_log_redb_panics_on(clean: &Path, damaged: &Path) {
    let store = crate::Store::open(clean).unwrap();
    crate::demo::run(&store, 300, |_| {}).unwrap();
    drop(store);
    let clean = std::fs::read(clean).unwrap();
    let mut rng = crate::demo::Rng::new(11);
    let pages = clean.len() as u64 / 4096;
    let panicking = (0..2_000).find_map(|_| {
        let offset = (rng.below(pages) * 4096 + rng.below(64)) as usize;
        let mut bytes = clean.clone();
        bytes[offset] ^= 1 << rng.below(8);
        std::fs::write(damaged, &bytes).unwrap();
        let read = crate::Store::open_read_only(damaged).and_then(|store| {
            store.read_all(crate::Position(0), crate::Direction::Forward, usize::MAX)
        });
        matches!(read, Err(crate::Error::DamagedFile { .. })).then_some(bytes)
    });
    let bytes = panicking.expect("no flip made redb panic");
    std::fs::write(damaged, &bytes).unwrap();
}

/// The frames of the journal `bytes`, as (offset, length): each begins with the marker the
/// header names (FORMAT 3.15, version 2).
pub fn journal_frames(bytes: &[u8]) -> Vec<(usize, usize)> {
    let start = crate::journal::HEADER_BYTES as usize;
    let marker = &bytes[16..16 + crate::journal::MARKER_BYTES];
    let mut frames = Vec::new();
    let mut at = start;
    while bytes.len() >= at + marker.len() + 4 && bytes[at..].starts_with(marker) {
        let field = at + marker.len();
        let body = u32::from_le_bytes(bytes[field..field + 4].try_into().unwrap()) as usize;
        let len = marker.len() + 4 + body + 32;
        frames.push((at, len));
        at += len;
    }
    frames
}

/// A copy of a log beside a journal damaged before its last frame ([`journal_damaged_copies`]).
pub struct DamagedJournalCopy {
    /// Where in the journal the damage is, in words.
    pub what: &'static str,
    /// The copy of the log, its damaged journal beside it.
    pub log: std::path::PathBuf,
    /// The damaged journal's bytes, as written.
    pub journal: Vec<u8>,
    /// The offset of the frame the damage is in.
    pub frame_offset: u64,
}

/// Copies of the log at `log` (whose journal holds at least 10 frames not yet drained: a
/// killed writer's, or one still open) into `dir`, each beside a copy of its journal with one
/// bit flipped before frames that are whole: in the first frame's and the second's length
/// field (where a damaged length had hidden the frames after it), the third's marker and the
/// fourth's body.
pub fn journal_damaged_copies(log: &Path, dir: &Path) -> Vec<DamagedJournalCopy> {
    let journal = std::fs::read(crate::journal::journal_path(log)).unwrap();
    let found = journal_frames(&journal);
    assert!(found.len() >= 10, "{} frames", found.len());
    let damages: [(&str, usize); 4] = [
        ("the first frame's length field", found[0].0 + 16 + 2),
        ("the second frame's length field", found[1].0 + 16),
        ("the third frame's marker", found[2].0 + 5),
        ("the fourth frame's body", found[3].0 + found[3].1 - 40),
    ];
    damages
        .into_iter()
        .map(|(what, at)| {
            let copy = dir.join(format!("image-{at}.redb"));
            std::fs::copy(log, &copy).unwrap();
            let mut damaged = journal.clone();
            damaged[at] ^= 0x01;
            std::fs::write(crate::journal::journal_path(&copy), &damaged).unwrap();
            let frame = found
                .iter()
                .find(|(start, len)| (*start..start + len).contains(&at))
                .expect("the damage is in a frame");
            DamagedJournalCopy {
                what,
                log: copy,
                journal: damaged,
                frame_offset: frame.0 as u64,
            }
        })
        .collect()
}
