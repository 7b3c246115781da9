//! The redb tables of the log. Their names and value layouts are part of format v1
//! (`schema/FORMAT.md`, "Tables"); renaming one is a format change.

use redb::TableDefinition;

/// `annals.meta`: key → bytes. Holds [`MAGIC_KEY`], [`FORMAT_KEY`], [`HEAD_KEY`],
/// [`STREAM_COUNT_KEY`], and each stream's tail of runs under `stream:<name>`.
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("annals.meta");

/// `annals.segments`: position of the first record → segment bytes.
pub const SEGMENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("annals.segments");

/// `annals.stream_runs`: (stream, first version) → a block of the stream's runs, archived from
/// its tail in [`META`] when the tail filled (`stream_index.rs`).
pub const STREAM_RUNS: TableDefinition<(&str, u64), &[u8]> =
    TableDefinition::new("annals.stream_runs");

/// `annals.idempotency`: idempotency key → (position, content hash).
pub const IDEMPOTENCY: TableDefinition<&str, (u64, [u8; 32])> =
    TableDefinition::new("annals.idempotency");

/// `annals.merkle`: (level, index) → the root of the perfect subtree of the log's Merkle tree
/// over leaves `index·2^level .. (index+1)·2^level`, for every complete one at a level of at
/// least [`MERKLE_STORED_LEVEL_MIN`]. Written once, when its last leaf is appended.
pub const MERKLE: TableDefinition<(u8, u64), [u8; 32]> = TableDefinition::new("annals.merkle");

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
/// Meta key whose value is the head: next position `u64` LE ‖ head hash (32 bytes) ‖ the
/// Merkle frontier of the tree of every record (the roots of its perfect subtrees, largest
/// first, 32 bytes each, one per set bit of the next position).
pub const HEAD_KEY: &str = "head";
/// Meta key whose value is the number of streams holding at least one record, a `u64`
/// little-endian.
pub const STREAM_COUNT_KEY: &str = "streams";

/// The format version of the files this build creates. It reads and writes every version
/// `record::Format` names, each file in its own.
pub const FORMAT_VERSION: u32 = crate::record::Format::CURRENT.version();
