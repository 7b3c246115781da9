//! Upgrading a log of an earlier format to the current one ([`FORMAT_VERSION`]) on its first
//! writable open, every step in one write transaction, so that the file is either all of the
//! old format or all of the new:
//!
//! - v1 or v2 to v3 ([`seal`]): every value outside the segments sealed with its checksum;
//! - v3 to v4 ([`tree`]): the Merkle tree rebuilt with RFC 6962's SHA-256 from the record
//!   hashes.
//!
//! Records are never touched: a log keeps its segments in the layout they were written in
//! (the meta key `records`), so the record hashes and the chain stay as they were. Only this
//! module knows the earlier formats' table types and trees; nothing else reads them.

mod seal;
mod tree;

#[cfg(any(test, feature = "testing"))]
pub(crate) use seal::initialise_legacy;

use crate::storage::Database;

use crate::error::{Error, Result};
use crate::log::tables::{FORMAT_KEY, FORMAT_VERSION, META};
use crate::log::{read_layout, read_version};

/// Upgrades the log in `db` to [`FORMAT_VERSION`] if it is of an earlier format; does
/// nothing to a log another process upgraded first.
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "info", name = "upgrade", skip_all)
)]
pub(crate) fn to_current(db: &Database) -> Result<()> {
    let txn = db.begin_write()?;
    let version = read_version(&META.write(&txn)?)?;
    if version == FORMAT_VERSION {
        return Ok(());
    }
    if !(1..FORMAT_VERSION).contains(&version) {
        return Err(Error::corrupt_meta(
            crate::error::MetaItem::FormatVersion,
            crate::error::MetaFault::Unknown {
                value: u64::from(version),
            },
        ));
    }
    if version < 3 {
        seal::seal_every_value(&txn, version)?;
    }
    let layout = read_layout(&META.write(&txn)?)?;
    tree::rebuild(&txn, layout)?;
    META.write(&txn)?
        .insert(FORMAT_KEY, FORMAT_VERSION.to_le_bytes().as_slice())?;
    txn.commit()?;
    Ok(())
}
