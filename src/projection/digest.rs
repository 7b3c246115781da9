//! The canonical digest of a projection's tables, and the first difference between two
//! copies of them.
//!
//! The digest is blake3 over, for each table in name order: the name, then each row in key
//! order as `u64 key length ‖ key ‖ u64 value length ‖ value`, then a row count. Equal
//! digests mean byte-identical tables.

use std::ops::Bound;

use super::Projection;
use super::table::{RawRow, TableSource};
use crate::error::Result;
use crate::hash::{Digest, hex};
use crate::log::read::Direction;

/// The derive-key context of projection digests.
pub const PROJECTION_DIGEST_CONTEXT: &str = "annals 2026-11-29 projection digest v1";

fn rows(source: &dyn TableSource, table: &str) -> Result<Vec<RawRow>> {
    source.range_raw(
        table,
        Bound::Unbounded,
        Bound::Unbounded,
        Direction::Forward,
        usize::MAX,
    )
}

/// The digest of every table of `projection` in `source`.
pub fn digest(source: &dyn TableSource, projection: &dyn Projection) -> Result<Digest> {
    let mut names: Vec<&str> = projection.tables().to_vec();
    names.sort_unstable();
    let mut hasher = blake3::Hasher::new_derive_key(PROJECTION_DIGEST_CONTEXT);
    for name in names {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        let rows = rows(source, name)?;
        for (key, value) in &rows {
            hasher.update(&(key.len() as u64).to_le_bytes());
            hasher.update(key);
            hasher.update(&(value.len() as u64).to_le_bytes());
            hasher.update(value);
        }
        hasher.update(&(rows.len() as u64).to_le_bytes());
    }
    Ok(Digest(*hasher.finalize().as_bytes()))
}

/// Where two copies of a projection's tables first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The table.
    pub table: String,
    /// The first key (hex) that is missing on one side or holds other bytes.
    pub key_hex: String,
    /// What differs there.
    pub detail: String,
}

/// The first difference between `live` and `expected`, `None` if they are identical.
pub fn first_difference(
    live: &dyn TableSource,
    expected: &dyn TableSource,
    projection: &dyn Projection,
) -> Result<Option<Difference>> {
    let mut names: Vec<&str> = projection.tables().to_vec();
    names.sort_unstable();
    for name in names {
        let (live_rows, expected_rows) = (rows(live, name)?, rows(expected, name)?);
        let mut live_iter = live_rows.iter();
        let mut expected_iter = expected_rows.iter();
        loop {
            let difference = match (live_iter.next(), expected_iter.next()) {
                (None, None) => break,
                (Some((key, _)), None) => Some((key, "a row the replay does not have")),
                (None, Some((key, _))) => Some((key, "a row missing from the live table")),
                (Some((lk, lv)), Some((ek, ev))) => {
                    if lk < ek {
                        Some((lk, "a row the replay does not have"))
                    } else if ek < lk {
                        Some((ek, "a row missing from the live table"))
                    } else if lv != ev {
                        Some((lk, "other value bytes than the replay's"))
                    } else {
                        None
                    }
                }
            };
            if let Some((key, detail)) = difference {
                return Ok(Some(Difference {
                    table: name.to_owned(),
                    key_hex: hex(key),
                    detail: detail.to_owned(),
                }));
            }
        }
    }
    Ok(None)
}
