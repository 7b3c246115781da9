//! The log: redb tables of segments, the stream index, the idempotency index and the head;
//! appending and reading records. It knows no domain and never decides what an event means.

pub mod append;
pub mod merkle;
pub mod read;
pub mod tables;

use crate::error::{Error, Result};
use crate::hash::Digest;
use crate::record::Position;

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

/// Decodes the stream count stored under `STREAM_COUNT_KEY`.
pub(crate) fn decode_stream_count(bytes: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = bytes.try_into().map_err(|_| {
        Error::CorruptMeta(format!("the stream count is {} bytes, not 8", bytes.len()))
    })?;
    Ok(u64::from_le_bytes(bytes))
}

/// A row of `annals.stream_runs`: records `first_version ..` of a stream at positions
/// `first_position ..`, `count` of them, contiguous in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamRun {
    pub(crate) first_version: u64,
    pub(crate) first_position: u64,
    pub(crate) count: u64,
}

impl StreamRun {
    /// The version after its last record: the stream's length if it is the last run.
    pub(crate) fn end_version(&self) -> Result<u64> {
        self.first_version
            .checked_add(self.count)
            .ok_or_else(|| Error::CorruptMeta("a stream run overflows its versions".into()))
    }
}

/// The last run of `stream`, `None` if it holds no record.
pub(crate) fn last_run(
    runs: &impl redb::ReadableTable<(&'static str, u64), (u64, u64)>,
    stream: &str,
) -> Result<Option<StreamRun>> {
    let Some(entry) = runs.range((stream, 0)..=(stream, u64::MAX))?.next_back() else {
        return Ok(None);
    };
    let (key, value) = entry?;
    let (_, first_version) = key.value();
    let (first_position, count) = value.value();
    Ok(Some(StreamRun {
        first_version,
        first_position,
        count,
    }))
}

/// The number of records in a stream whose last run is `last`.
pub(crate) fn length_after(last: Option<StreamRun>) -> Result<u64> {
    last.map_or(Ok(0), |run| run.end_version())
}

/// The number of records in `stream`: where its last run ends.
pub(crate) fn stream_length(
    runs: &impl redb::ReadableTable<(&'static str, u64), (u64, u64)>,
    stream: &str,
) -> Result<u64> {
    length_after(last_run(runs, stream)?)
}
