//! The crate's private parts that tests reach on purpose, and nothing else does: the redb
//! table definitions (to damage a file the way a disk or a forger would), the format's hash
//! functions and encoders (to build golden vectors and forgeries), the stream index's
//! layout. Not API: behind the `testing` feature, hidden from the docs, free to change.

/// The order-preserving key encoding of projection tables.
pub use crate::projection::key::key_bytes;

/// Every redb table name and layout of the log (`log::tables`), as redb's own definitions: a
/// test damages a file beneath the store, where nothing but redb reads it.
pub mod tables {
    pub use crate::log::tables::*;
    use redb::TableDefinition;

    /// `annals.meta` (`log::tables::META`).
    pub const META: TableDefinition<&str, &[u8]> = crate::log::tables::META.redb();
    /// `annals.segments`.
    pub const SEGMENTS: TableDefinition<u64, &[u8]> = crate::log::tables::SEGMENTS.redb();
    /// `annals.stream_runs`.
    pub const STREAM_RUNS: TableDefinition<(&str, u64), &[u8]> =
        crate::log::tables::STREAM_RUNS.redb();
    /// `annals.idempotency`.
    pub const IDEMPOTENCY: TableDefinition<&str, [u8; IDEMPOTENCY_VALUE_BYTES]> =
        crate::log::tables::IDEMPOTENCY.redb();
    /// `annals.merkle`.
    pub const MERKLE: TableDefinition<(u8, u64), [u8; MERKLE_VALUE_BYTES]> =
        crate::log::tables::MERKLE.redb();
}

/// The `annals.meta` table read and written beneath the store, as a forger with the file (or
/// a build of another format) would: for the tests that plant a value or read a format's
/// counters where no command shows them.
pub mod meta {
    use std::path::Path;

    use redb::ReadableDatabase;

    use crate::error::Result;

    /// The bytes stored under `key` in the log at `path`, as they are on disk (sealed or not).
    pub fn get(path: &Path, key: &str) -> Result<Option<Vec<u8>>> {
        let db = redb::Database::open(path).map_err(redb::Error::from)?;
        let txn = db.begin_read().map_err(redb::Error::from)?;
        let meta = txn
            .open_table(super::tables::META)
            .map_err(redb::Error::from)?;
        let value = meta.get(key).map_err(redb::Error::from)?;
        Ok(value.map(|bytes| bytes.value().to_vec()))
    }

    /// Stores `value` under `key` in the log at `path` (which nothing may hold open), sealed
    /// as the store seals it, so that what a test checks is the meaning of the value, not its
    /// checksum.
    pub fn insert_sealed(path: &Path, key: &str, value: &[u8]) -> Result<()> {
        let db = redb::Database::open(path).map_err(redb::Error::from)?;
        let txn = db.begin_write().map_err(redb::Error::from)?;
        {
            let mut meta = txn
                .open_table(super::tables::META)
                .map_err(redb::Error::from)?;
            let sealed = crate::log::seal_meta(key, value);
            meta.insert(key, sealed.as_slice())
                .map_err(redb::Error::from)?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }
}

/// The checksums that seal every stored value outside the segments (`log::checksum`): a test
/// that plants a value beneath the store seals it as the store would, so that what it tests
/// is the check behind the checksum.
pub mod checksum {
    pub use crate::log::checksum::*;
    pub use crate::log::tables::{seal_meta, unseal_meta};

    /// The `annals.checkpoints` value of projection `name` at `(version, next)`, sealed.
    pub fn seal_checkpoint(name: &str, checkpoint: (u32, u64)) -> [u8; 20] {
        crate::projection::seal_checkpoint(name, checkpoint)
    }
}

/// The stream index's byte layout (`log::stream_index`).
pub mod stream_index {
    pub use crate::log::stream_index::{RUNS_PER_BLOCK, StreamRun};
}

/// The derive-key contexts and hash functions of format v1 (`hash`).
pub mod hash {
    pub use crate::hash::*;
}

/// The record encoding of format v1 (`record`), its caps and its segments.
pub mod record {
    pub use crate::record::limits::{HEADER_BYTES_CAP, PAYLOAD_BYTES_CAP};
    pub use crate::record::segment::Segment;
    pub use crate::record::*;
}

/// The domain events' payload codec (`event`).
pub mod event {
    pub use crate::event::*;
}

/// Reads of the audit layer that the store wraps (`audit`).
pub mod audit {
    pub use crate::audit::history::history;
    pub use crate::audit::verify::verify_log;
    pub use crate::projection::digest::digest;
}

/// The deterministic simulated fleet behind `annals demo`, and its random numbers.
pub mod demo {
    pub use crate::demo::*;
}

/// Creating a log file as `Store::open` does (`store::open`), without opening it afterwards:
/// what a process killed right after the creation leaves.
pub mod open {
    /// Creates a new log at `path` with the built-in projections' checkpoints.
    pub fn create(path: &std::path::Path) -> crate::Result<()> {
        let mut projections = crate::projection::Projections::default();
        for projection in crate::builtins::builtin_projections() {
            projections.register(projection)?;
        }
        crate::store::open::create(path, &projections, crate::record::Format::CURRENT)
    }

    /// Creates a new, empty log at `path` of format `version`: 1 or 2 as the builds of those
    /// formats created it (their tables, no checksums), which the first writable open
    /// upgrades; the current version as [`create`] does.
    pub fn create_with_format(path: &std::path::Path, version: u32) -> crate::Result<()> {
        let mut projections = crate::projection::Projections::default();
        for projection in crate::builtins::builtin_projections() {
            projections.register(projection)?;
        }
        match version {
            1 | 2 => {
                let db = crate::storage::Database::new(
                    crate::store::open::redb_builder(crate::store::Sharing::Exclusive)
                        .create(path)?,
                );
                crate::store::upgrade::initialise_legacy(&db, &projections, version)
            }
            crate::log::tables::FORMAT_VERSION => {
                crate::store::open::create(path, &projections, crate::record::Format::CURRENT)
            }
            _ => Err(crate::error::Error::corrupt_meta(
                crate::error::MetaItem::FormatVersion,
                crate::error::MetaFault::Unknown {
                    value: u64::from(version),
                },
            )),
        }
    }
}

/// Writing a log beneath the projections, as a forger with the file (or a build of annals
/// without apply's domain checks) would.
pub mod forge {
    use std::path::Path;

    use crate::error::Result;
    use crate::log::append::LogWriter;
    use crate::record::Record;

    /// Appends `records`, sealed elsewhere, to the log at `path` (which nothing may hold
    /// open) through the log layer alone: the chain, segments, stream index, idempotency
    /// index, Merkle tree and head are written as an import writes them, each record
    /// checked to continue the log exactly, but no projection applies them and no
    /// checkpoint moves.
    pub fn append_sealed_unapplied(path: &Path, records: &[Record]) -> Result<()> {
        let db = redb::Database::open(path).map_err(redb::Error::from)?;
        let txn = db.begin_write().map_err(redb::Error::from)?;
        {
            let writer = crate::storage::Writer::redb(&txn);
            let mut log = LogWriter::open_after(&writer, None)?;
            let mut written = Vec::with_capacity(records.len());
            for record in records {
                log.append_sealed(std::slice::from_ref(record), &mut written)?;
            }
            let _end = log.finish()?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }
}

/// Commands through the overlay with no redb transaction of their own (issue 51's commit
/// path, before it is the store's): for the bench that measures what a command costs then.
pub mod overlay {
    use crate::command::Command;
    use crate::error::Result;
    use crate::storage::Generation;
    use crate::store::Store;

    /// Commands the overlay holds before [`OverlayStore::execute`] drains it into the file.
    pub const DRAIN_EVERY_COMMANDS: u64 = 4_096;

    /// A store whose commands go through the overlay: each decided and applied in a write
    /// session over the overlay and published, the overlay drained into the file (one
    /// non-durable redb commit, as a journaled store's drain is, less its sync) every
    /// [`DRAIN_EVERY_COMMANDS`]. No journal, no sync: the CPU of the commit path.
    pub struct OverlayStore<'s> {
        store: &'s Store,
        generation: Generation,
        since_drain: u64,
    }

    impl<'s> OverlayStore<'s> {
        /// Commands over `store`, which must be open in exclusive mode.
        pub fn new(store: &'s Store) -> Self {
            OverlayStore {
                store,
                generation: Generation::default(),
                since_drain: 0,
            }
        }

        /// Runs `command` through the overlay.
        pub fn execute<C: Command>(&mut self, command: &C) -> Result<C::Outcome> {
            let outcome = self
                .store
                .write_over_overlay(&mut self.generation, |session| session.execute(command))?;
            self.since_drain += 1;
            if self.since_drain >= DRAIN_EVERY_COMMANDS {
                self.drain()?;
            }
            Ok(outcome)
        }

        /// Writes the overlay into the file.
        pub fn drain(&mut self) -> Result<()> {
            self.since_drain = 0;
            self.store.drain_overlay(&mut self.generation, false)
        }

        /// How many layers the overlay holds.
        pub fn depth(&self) -> usize {
            self.generation.depth()
        }
    }
}

/// The first half of `Store::erase` alone: the subject's erasure event appended durably, its
/// key left in the key store, as a kill between the two halves leaves them (the next
/// writable open finishes the erasure).
pub fn append_erasure_event(
    store: &crate::Store,
    subject: &str,
    at_ms: u64,
) -> crate::Result<crate::Position> {
    Ok(store.append_erasure(subject, at_ms)?.0)
}

/// A rebuild of every projection stopped after its `transactions`-th transaction (0: right
/// after it cleared them), as a kill between two of its transactions leaves it: the
/// projections behind the log until a writable open or a rebuild finishes them. Returns the
/// next position the projections are to apply.
pub fn rebuild_stopped_after(store: &crate::Store, transactions: u64) -> crate::Result<u64> {
    let (mut done, mut at) = (0, 0);
    store.rebuild_until(None, &mut |next| {
        at = next;
        done += 1;
        match done > transactions {
            true => std::ops::ControlFlow::Break(()),
            false => std::ops::ControlFlow::Continue(()),
        }
    })?;
    Ok(at)
}
