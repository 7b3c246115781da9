//! The log: redb tables of segments, the stream index, the idempotency index and the head;
//! appending and reading records. It knows no domain and never decides what an event means.

pub mod append;
pub mod merkle;
pub mod read;
pub mod stream_index;
pub mod tables;

use crate::error::{Error, Result};
use crate::hash::Digest;
use crate::record::{Format, Position};

/// The end of the log: the position the next record gets and the hash of the last record
/// (zero for an empty log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Head {
    /// The position the next record will get; also the number of records.
    pub next: Position,
    /// The hash of the record at `next - 1`, or zero for an empty log.
    pub hash: Digest,
}

pub(crate) fn encode_head(head: Head) -> [u8; 40] {
    let mut out = [0; 40];
    out[..8].copy_from_slice(&head.next.0.to_le_bytes());
    out[8..].copy_from_slice(head.hash.as_bytes());
    out
}

/// Decodes the head from the `head` value: its first 40 bytes, which the Merkle frontier of
/// the log's tree follows (32 bytes per set bit of the next position, see `merkle.rs`).
pub(crate) fn decode_head(bytes: &[u8]) -> Result<Head> {
    let Some(bytes) = bytes.get(..40) else {
        return Err(Error::CorruptMeta(format!(
            "the head is {} bytes, fewer than 40",
            bytes.len()
        )));
    };
    let bytes: &[u8; 40] = bytes.try_into().expect("40 bytes");
    let (next, hash) = bytes.split_at(8);
    Ok(Head {
        next: Position(u64::from_le_bytes(next.try_into().expect("8 bytes"))),
        hash: Digest(hash.try_into().expect("32 bytes")),
    })
}

/// Reads the format of the file from `annals.meta`.
pub(crate) fn read_format(
    meta: &impl redb::ReadableTable<&'static str, &'static [u8]>,
) -> Result<Format> {
    let Some(bytes) = meta.get(tables::FORMAT_KEY)? else {
        return Err(Error::CorruptMeta("the format version is missing".into()));
    };
    let version = <[u8; 4]>::try_from(bytes.value())
        .map(u32::from_le_bytes)
        .map_err(|_| Error::CorruptMeta("the format version is not 4 bytes".into()))?;
    Format::from_version(version)
        .ok_or_else(|| Error::CorruptMeta(format!("format version {version} is not known")))
}

/// Decodes the stream count stored under `STREAM_COUNT_KEY`.
pub(crate) fn decode_stream_count(bytes: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| {
        Error::CorruptMeta(format!("the stream count is {} bytes, not 8", bytes.len()))
    })?;
    Ok(u64::from_le_bytes(bytes))
}
