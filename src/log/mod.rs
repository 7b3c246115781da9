//! The log: redb tables of segments, the stream index, the idempotency index and the head;
//! appending and reading records. It knows no domain and never decides what an event means.
//!
//! Public are the names a reader of records meets beyond the crate root's [`Snapshot`] and
//! [`Record`]: a log's [`Head`] and last [`SignedHead`], the iterators [`Records`] and
//! [`StreamRecords`], a stream's [`StreamSummary`], a record's [`StreamVersion`], its hash
//! ([`Digest`]) and its bytes checked in place ([`RecordView`]); and what an append is held
//! to before it is written: the [`Limits`] (each [`Field`]), [`check_append`], what an append
//! gave ([`Appended`]), and the [`FORMAT_VERSION`] a log is written in. The tables and the
//! writer stay private.
//!
//! [`Snapshot`]: crate::Snapshot
//! [`Record`]: crate::Record

pub(crate) mod append;
pub(crate) mod checkpoints;
pub(crate) mod checksum;
pub(crate) mod cut;
pub(crate) mod merkle;
pub(crate) mod read;
pub(crate) mod signed;
pub(crate) mod stream_index;
pub(crate) mod tables;

use crate::error::{Error, Result};
pub use crate::hash::Digest;
pub use crate::record::limits::{Field, Limits};
use crate::record::{Format, Position};
pub use crate::record::{RecordView, StreamVersion};
pub use append::{Appended, check_append};
pub use read::{Records, StreamRecords, StreamSummary};
pub use signed::SignedHead;
pub use tables::FORMAT_VERSION;
pub(crate) use tables::{seal_meta, unseal_meta};

/// The end of the log: the position the next record gets and the hash of the last record
/// (zero for an empty log).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
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
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::Head,
            crate::error::MetaFault::TooShort {
                found: bytes.len(),
                least: 40,
            },
        ));
    };
    let bytes: &[u8; 40] = bytes.try_into().expect("40 bytes");
    let (next, hash) = bytes.split_at(8);
    Ok(Head {
        next: Position(u64::from_le_bytes(next.try_into().expect("8 bytes"))),
        hash: Digest(hash.try_into().expect("32 bytes")),
    })
}

/// Reads the format version of the file from `annals.meta`.
pub(crate) fn read_version(
    meta: &impl crate::storage::Readable<&'static str, &'static [u8]>,
) -> Result<u32> {
    let Some(bytes) = meta.get(tables::FORMAT_KEY)? else {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::FormatVersion,
            crate::error::MetaFault::Missing,
        ));
    };
    <[u8; 4]>::try_from(bytes.value())
        .map(u32::from_le_bytes)
        .map_err(|_| wrong_length(crate::error::MetaItem::FormatVersion, bytes.value(), 4))
}

/// Reads how the file's segments store their records from `annals.meta`: a log of the
/// current format says so under [`tables::RECORDS_KEY`]. A log of an earlier format is
/// refused: only its upgrade (`store/upgrade.rs`) reads it.
pub(crate) fn read_format(
    meta: &impl crate::storage::Readable<&'static str, &'static [u8]>,
) -> Result<Format> {
    let version = read_version(meta)?;
    if version != tables::FORMAT_VERSION {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::FormatVersion,
            crate::error::MetaFault::Unknown {
                value: u64::from(version),
            },
        ));
    }
    read_layout(meta)
}

/// Reads how the file's segments store their records, [`tables::RECORDS_KEY`], whatever the
/// format version: what an upgrade from v3 needs before the version is current.
pub(crate) fn read_layout(
    meta: &impl crate::storage::Readable<&'static str, &'static [u8]>,
) -> Result<Format> {
    let Some(bytes) = meta.get(tables::RECORDS_KEY)? else {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::RecordLayout,
            crate::error::MetaFault::Missing,
        ));
    };
    let layout = <[u8; 4]>::try_from(bytes.value())
        .map(u32::from_le_bytes)
        .map_err(|_| wrong_length(crate::error::MetaItem::RecordLayout, bytes.value(), 4))?;
    Format::from_version(layout).ok_or_else(|| {
        Error::corrupt_meta(
            crate::error::MetaItem::RecordLayout,
            crate::error::MetaFault::Unknown {
                value: u64::from(layout),
            },
        )
    })
}

/// Decodes the stream count stored under `STREAM_COUNT_KEY`.
pub(crate) fn decode_stream_count(bytes: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = bytes
        .try_into()
        .map_err(|_| wrong_length(crate::error::MetaItem::StreamCount, bytes, 8))?;
    Ok(u64::from_le_bytes(bytes))
}

/// [`Error::CorruptMeta`]: `item`'s stored `bytes` are not the `expected` length.
fn wrong_length(item: crate::error::MetaItem, bytes: &[u8], expected: usize) -> Error {
    Error::corrupt_meta(
        item,
        crate::error::MetaFault::WrongLength {
            found: bytes.len(),
            expected,
        },
    )
}
