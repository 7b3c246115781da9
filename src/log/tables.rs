//! The redb tables of the log. Their names and value layouts are part of the format
//! (`schema/FORMAT.md`, "Tables"); renaming one is a format change. Every value outside
//! [`SEGMENTS`] (and the magic and format version, read before the format is known) is stored
//! sealed with its checksum (`checksum.rs`).

use crate::storage::Definition;

use super::checksum::{seal, seal_fixed, unseal};
use crate::error::Result;

/// `annals.meta`: key → bytes. Holds [`MAGIC_KEY`], [`FORMAT_KEY`], [`HEAD_KEY`],
/// [`STREAM_COUNT_KEY`], and each stream's tail of runs under `stream:<name>`.
pub(crate) const META: Definition<&str, &[u8]> = Definition::new(META_NAME);

/// The name of [`META`], which its values' checksums cover.
pub const META_NAME: &str = "annals.meta";

/// `annals.segments`: position of the first record → segment bytes.
pub(crate) const SEGMENTS: Definition<u64, &[u8]> = Definition::new("annals.segments");

/// `annals.stream_runs`: (stream, first version) → a block of the stream's runs, archived from
/// its tail in [`META`] when the tail filled (`stream_index.rs`).
pub(crate) const STREAM_RUNS: Definition<(&str, u64), &[u8]> = Definition::new(STREAM_RUNS_NAME);

/// The name of [`STREAM_RUNS`], which its values' checksums cover.
pub const STREAM_RUNS_NAME: &str = "annals.stream_runs";

/// `annals.idempotency`: idempotency key → position `u64` LE ‖ content hash (32 bytes) ‖
/// checksum.
pub(crate) const IDEMPOTENCY: Definition<&str, [u8; IDEMPOTENCY_VALUE_BYTES]> =
    Definition::new(IDEMPOTENCY_NAME);

/// The stored bytes of an [`IDEMPOTENCY`] value.
pub const IDEMPOTENCY_VALUE_BYTES: usize = 8 + 32 + super::checksum::CHECKSUM_BYTES;

/// `annals.merkle`: (level, index) → the root of the perfect subtree of the log's Merkle tree
/// over leaves `index·2^level .. (index+1)·2^level`, for every complete one at a level of at
/// least [`MERKLE_STORED_LEVEL_MIN`], then its checksum. Written once, when its last leaf is
/// appended.
pub(crate) const MERKLE: Definition<(u8, u64), [u8; MERKLE_VALUE_BYTES]> =
    Definition::new(MERKLE_NAME);

/// The stored bytes of a [`MERKLE`] value.
pub const MERKLE_VALUE_BYTES: usize = 32 + super::checksum::CHECKSUM_BYTES;

/// The lowest level of the Merkle tree kept in [`MERKLE`]: subtrees of fewer than 16 leaves are
/// recomputed from their records when a proof needs them, so appending a record costs one
/// insert per 8 records here instead of two per record.
pub const MERKLE_STORED_LEVEL_MIN: u8 = 4;

/// Meta key whose value is [`MAGIC`].
pub const MAGIC_KEY: &str = "magic";
/// The bytes that mark a redb file as an annals log.
pub const MAGIC: &[u8] = b"annals event log";
/// Meta key whose value is the format version, a `u32` little-endian.
pub const FORMAT_KEY: &str = "format";
/// Meta key whose value is how the segments store their records (format v3 on): `1` for the
/// whole header of format v1, `2` for the compact header of format v2, a `u32` little-endian.
/// A log upgraded from v1 keeps its records as they are.
pub const RECORDS_KEY: &str = "records";
/// Meta key whose value is the head: next position `u64` LE ‖ head hash (32 bytes) ‖ the
/// Merkle frontier of the tree of every record (the roots of its perfect subtrees, largest
/// first, 32 bytes each, one per set bit of the next position).
pub const HEAD_KEY: &str = "head";
/// Meta key whose value is the number of streams holding at least one record, a `u64`
/// little-endian.
pub const STREAM_COUNT_KEY: &str = "streams";

/// The format version of the files this build creates and writes: v4, whose values are
/// sealed with checksums (since v3) and whose Merkle tree is RFC 6962's, with SHA-256. A log of
/// v1, v2 or v3 is upgraded to it by its first writable open (`store/upgrade/`); its records
/// stay in the layout they were written in.
pub const FORMAT_VERSION: u32 = 4;

/// The name of [`IDEMPOTENCY`], which its values' checksums cover.
const IDEMPOTENCY_NAME: &str = "annals.idempotency";
/// The name of [`MERKLE`], which its values' checksums cover.
const MERKLE_NAME: &str = "annals.merkle";

/// The [`IDEMPOTENCY`] value of `key`: the position of its record and its content hash.
pub fn seal_idempotency(
    key: &str,
    position: u64,
    content: &[u8; 32],
) -> [u8; IDEMPOTENCY_VALUE_BYTES] {
    let mut value = [0; 40];
    value[..8].copy_from_slice(&position.to_le_bytes());
    value[8..].copy_from_slice(content);
    seal_fixed(IDEMPOTENCY_NAME, key.as_bytes(), &value)
}

/// The position and content hash of `key`'s [`IDEMPOTENCY`] value, once its checksum holds.
pub fn unseal_idempotency(
    key: &str,
    stored: &[u8; IDEMPOTENCY_VALUE_BYTES],
) -> Result<(u64, [u8; 32])> {
    let value = unseal(IDEMPOTENCY_NAME, key.as_bytes(), stored)?;
    let (position, content) = value.split_at(8);
    Ok((
        u64::from_le_bytes(position.try_into().expect("8 bytes")),
        content.try_into().expect("32 bytes"),
    ))
}

/// The [`MERKLE`] value of node `(level, index)`.
pub fn seal_merkle_node(level: u8, index: u64, node: &[u8; 32]) -> [u8; MERKLE_VALUE_BYTES] {
    seal_fixed(
        MERKLE_NAME,
        &super::checksum::merkle_key(level, index),
        node,
    )
}

/// The node of the [`MERKLE`] value of `(level, index)`, once its checksum holds.
pub fn unseal_merkle_node(
    level: u8,
    index: u64,
    stored: &[u8; MERKLE_VALUE_BYTES],
) -> Result<[u8; 32]> {
    let node = unseal(
        MERKLE_NAME,
        &super::checksum::merkle_key(level, index),
        stored,
    )?;
    Ok(node.try_into().expect("32 bytes"))
}

/// The most memory redb's page cache takes, in bytes. redb's default (1 GiB) lets a scan, a
/// rebuild or a verify grow the process by about the size of the log read, up to that much;
/// bounded, memory stays flat as the log grows, and bulk work measures no slower.
pub(crate) const REDB_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// The value of meta key `key` as stored: `value` sealed with its checksum.
pub fn seal_meta(key: &str, value: &[u8]) -> Vec<u8> {
    seal(META_NAME, key.as_bytes(), value)
}

/// The value of meta key `key` in `stored`, once its checksum holds.
pub fn unseal_meta<'v>(key: &str, stored: &'v [u8]) -> Result<&'v [u8]> {
    unseal(META_NAME, key.as_bytes(), stored)
}
