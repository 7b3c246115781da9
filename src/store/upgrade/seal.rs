//! The step from format v1 or v2 to v3: every value outside the segments is sealed with its
//! checksum (`log/checksum.rs`).
//!
//! Records are not touched: a v1 log keeps its segments in v1's layout and says so under the
//! meta key `records`, so the record hashes stay as they were. Only this module knows the earlier formats' table types; nothing else reads them.

use redb::WriteTransaction;

use crate::error::Result;
use crate::log::checksum::{merkle_key, seal, seal_fixed, stream_runs_key};
use crate::log::seal_meta;
use crate::log::tables::{
    FORMAT_KEY, IDEMPOTENCY, IDEMPOTENCY_VALUE_BYTES, MAGIC_KEY, MERKLE, MERKLE_VALUE_BYTES, META,
    META_NAME, RECORDS_KEY, SEGMENTS, STREAM_RUNS, STREAM_RUNS_NAME,
};
use crate::projection::{CHECKPOINT_VALUE_BYTES, CHECKPOINTS};
use crate::storage::{Definition, Readable};

/// `annals.idempotency` as formats v1 and v2 typed it: (position, content hash), unsealed.
const IDEMPOTENCY_V2: Definition<&str, (u64, [u8; 32])> = Definition::new("annals.idempotency");
/// `annals.merkle` as formats v1 and v2 typed it: the node, unsealed.
const MERKLE_V2: Definition<(u8, u64), [u8; 32]> = Definition::new("annals.merkle");
/// `annals.checkpoints` as formats v1 and v2 typed it: (version, next), unsealed.
const CHECKPOINTS_V2: Definition<&str, (u32, u64)> = Definition::new("annals.checkpoints");

/// Rows moved at a time: bounds the memory of the copy, whatever the table's size.
const BATCH_ROWS: usize = 4096;

/// Seals every value outside the segments of the v1 or v2 log `txn` writes, and records the
/// layout its segments keep (`version`'s) under `records`. The format version is the
/// caller's to set, once every step of the upgrade is done.
pub(super) fn seal_every_value(txn: &WriteTransaction, version: u32) -> Result<()> {
    debug_assert!(matches!(version, 1 | 2));
    seal_meta_values(txn)?;
    seal_stream_runs(txn)?;
    retype(
        txn,
        IDEMPOTENCY_V2,
        IDEMPOTENCY,
        |key, (position, content)| {
            let mut value = [0; 40];
            value[..8].copy_from_slice(&position.to_le_bytes());
            value[8..].copy_from_slice(&content);
            seal_fixed::<IDEMPOTENCY_VALUE_BYTES>(IDEMPOTENCY.name(), key.as_bytes(), &value)
        },
    )?;
    retype(txn, MERKLE_V2, MERKLE, |(level, index), node| {
        seal_fixed::<MERKLE_VALUE_BYTES>(MERKLE.name(), &merkle_key(level, index), &node)
    })?;
    retype(txn, CHECKPOINTS_V2, CHECKPOINTS, |name, checkpoint| {
        crate::projection::seal_checkpoint(name, checkpoint)
    })?;
    const _: () = assert!(CHECKPOINT_VALUE_BYTES == 20);
    seal_projection_tables(txn)?;
    let mut meta = META.write(txn)?;
    meta.insert(RECORDS_KEY, version.to_le_bytes().as_slice())?;
    Ok(())
}

/// Seals every meta value but the magic and the format version (read before the format is
/// known), a batch of keys at a time.
fn seal_meta_values(txn: &WriteTransaction) -> Result<()> {
    let mut meta = META.write(txn)?;
    let mut after: Option<String> = None;
    loop {
        let batch: Vec<(String, Vec<u8>)> = {
            let range = match &after {
                Some(key) => meta.range::<&str>((
                    std::ops::Bound::Excluded(key.as_str()),
                    std::ops::Bound::Unbounded,
                ))?,
                None => meta.range::<&str>(..)?,
            };
            range
                .take(BATCH_ROWS)
                .map(|entry| {
                    let (key, value) = entry?;
                    Ok((key.value().to_owned(), value.value().to_vec()))
                })
                .collect::<Result<_>>()?
        };
        let Some((last, _)) = batch.last() else {
            return Ok(());
        };
        after = Some(last.clone());
        for (key, value) in batch {
            if key != MAGIC_KEY && key != FORMAT_KEY {
                debug_assert_eq!(META.name(), META_NAME);
                meta.insert(key.as_str(), seal_meta(&key, &value).as_slice())?;
            }
        }
    }
}

/// Seals every archived block of stream runs, a batch at a time.
fn seal_stream_runs(txn: &WriteTransaction) -> Result<()> {
    let mut runs = STREAM_RUNS.write(txn)?;
    let mut after: Option<(String, u64)> = None;
    loop {
        let batch: Vec<(String, u64, Vec<u8>)> = {
            let range = match &after {
                Some((stream, version)) => runs.range::<(&str, u64)>((
                    std::ops::Bound::Excluded((stream.as_str(), *version)),
                    std::ops::Bound::Unbounded,
                ))?,
                None => runs.range::<(&str, u64)>(..)?,
            };
            range
                .take(BATCH_ROWS)
                .map(|entry| {
                    let (key, value) = entry?;
                    let (stream, version) = key.value();
                    Ok((stream.to_owned(), version, value.value().to_vec()))
                })
                .collect::<Result<_>>()?
        };
        let Some((stream, version, _)) = batch.last() else {
            return Ok(());
        };
        after = Some((stream.clone(), *version));
        for (stream, version, value) in batch {
            let sealed = seal(STREAM_RUNS_NAME, &stream_runs_key(&stream, version), &value);
            runs.insert((stream.as_str(), version), sealed.as_slice())?;
        }
    }
}

/// Rewrites the table `old` as `new` (same name, the new value type): each row through
/// `convert`, into a table beside it, which then takes the old one's name.
fn retype<K, V, W>(
    txn: &WriteTransaction,
    old: Definition<K, V>,
    new: Definition<K, W>,
    mut convert: impl FnMut(K::SelfType<'_>, V::SelfType<'_>) -> W::SelfType<'static>,
) -> Result<()>
where
    K: redb::Key + Send + Sync + 'static,
    V: redb::Value + Send + Sync + 'static,
    W: redb::Value + Send + Sync + 'static,
    for<'a> W::SelfType<'a>: std::borrow::Borrow<W::SelfType<'a>>,
    for<'a> K::SelfType<'a>: std::borrow::Borrow<K::SelfType<'a>>,
{
    let upgrading = format!("{}~upgrading", old.name());
    let beside: Definition<K, W> = Definition::new(&upgrading);
    {
        let from = old.write(txn)?;
        let mut to = beside.write(txn)?;
        for entry in from.iter()? {
            let (key, value) = entry?;
            to.insert(key.value(), convert(key.value(), value.value()))?;
        }
        debug_assert_eq!(from.len()?, to.len()?);
    }
    old.delete(txn)?;
    beside.rename(txn, new)?;
    Ok(())
}

/// Seals every row of every projection table: each table that is not one of the log's.
fn seal_projection_tables(txn: &WriteTransaction) -> Result<()> {
    let log_tables = [
        META.name(),
        SEGMENTS.name(),
        STREAM_RUNS.name(),
        IDEMPOTENCY.name(),
        MERKLE.name(),
        CHECKPOINTS.name(),
    ];
    let names: Vec<String> = crate::storage::table_names_in(txn)?
        .into_iter()
        .filter(|name| !log_tables.contains(&name.as_str()))
        .collect();
    for name in names {
        let definition = crate::projection::table::definition(&name);
        let mut table = definition.write(txn)?;
        let mut after: Option<Vec<u8>> = None;
        loop {
            let batch: Vec<(Vec<u8>, Vec<u8>)> = {
                let range = match &after {
                    Some(key) => table.range::<&[u8]>((
                        std::ops::Bound::Excluded(key.as_slice()),
                        std::ops::Bound::Unbounded,
                    ))?,
                    None => table.range::<&[u8]>(..)?,
                };
                range
                    .take(BATCH_ROWS)
                    .map(|entry| {
                        let (key, value) = entry?;
                        Ok((key.value().to_vec(), value.value().to_vec()))
                    })
                    .collect::<Result<_>>()?
            };
            let Some((last, _)) = batch.last() else {
                break;
            };
            after = Some(last.clone());
            for (key, value) in batch {
                table.insert(key.as_slice(), seal(&name, &key, &value).as_slice())?;
            }
        }
    }
    Ok(())
}

/// Writes an empty log of format `version` (1 or 2) as the builds of those formats created
/// it, with `projections`' checkpoints at position 0: how tests get the old logs that an
/// upgrade must read.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn initialise_legacy(
    db: &crate::storage::Database,
    projections: &crate::projection::Projections,
    version: u32,
) -> Result<()> {
    use crate::log::tables::{HEAD_KEY, MAGIC, STREAM_COUNT_KEY};
    assert!(matches!(version, 1 | 2), "a legacy format is v1 or v2");
    let txn = db.begin_write()?;
    {
        let mut meta = META.write(&txn)?;
        meta.insert(MAGIC_KEY, MAGIC)?;
        meta.insert(FORMAT_KEY, version.to_le_bytes().as_slice())?;
        let head = crate::log::encode_head(crate::log::Head::default());
        meta.insert(HEAD_KEY, head.as_slice())?;
        meta.insert(STREAM_COUNT_KEY, 0u64.to_le_bytes().as_slice())?;
        SEGMENTS.create(&txn)?;
        STREAM_RUNS.create(&txn)?;
        IDEMPOTENCY_V2.create(&txn)?;
        MERKLE_V2.create(&txn)?;
        let mut checkpoints = CHECKPOINTS_V2.write(&txn)?;
        for projection in projections.iter() {
            checkpoints.insert(projection.name(), (projection.version(), 0))?;
        }
    }
    txn.commit()?;
    Ok(())
}
