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
