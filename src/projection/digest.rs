//! The canonical digest of a projection's tables, and the first difference between two
//! copies of them.
//!
//! The digest is blake3 over, for each table in name order: the name, then each row in key
//! order as `u64 key length ‖ key ‖ u64 value length ‖ value`, then a row count. Equal
//! digests mean byte-identical tables.
//!
//! Both walk a table a page of rows at a time ([`TableRows`]), so their memory does not grow
//! with the table: a projection of a million rows is compared in the memory of a few pages.

use std::ops::Bound;

use super::Projection;
use super::table::{RawRow, TableSource};
use crate::error::Result;
use crate::hash::hex;
use crate::log::read::Direction;
use crate::record::problem::RowDifference;

/// The derive-key context of projection digests.
pub(crate) const PROJECTION_DIGEST_CONTEXT: &str = "annals 2026-11-29 projection digest v1";

/// Rows read at a time while walking a table.
const PAGE_ROWS: usize = 256;

/// A table's rows in key order, read [`PAGE_ROWS`] at a time: each page starts after the last
/// key of the one before.
struct TableRows<'a> {
    source: &'a dyn TableSource,
    table: &'a str,
    page: std::vec::IntoIter<RawRow>,
    /// The last key of the page read last; `None` before the first.
    after: Option<Vec<u8>>,
    /// Whether the page read last was the table's last.
    ended: bool,
    /// Rows read so far, checked against the table's count at the end.
    walked: u64,
}

impl<'a> TableRows<'a> {
    fn new(source: &'a dyn TableSource, table: &'a str) -> Self {
        TableRows {
            source,
            table,
            page: Vec::new().into_iter(),
            after: None,
            ended: false,
            walked: 0,
        }
    }

    /// The next row, `None` past the last.
    fn next_row(&mut self) -> Result<Option<RawRow>> {
        if let Some(row) = self.page.next() {
            return Ok(Some(row));
        }
        if self.ended {
            return Ok(None);
        }
        let lower = match &self.after {
            Some(key) => Bound::Excluded(key.as_slice()),
            None => Bound::Unbounded,
        };
        let page = self.source.range_raw(
            self.table,
            lower,
            Bound::Unbounded,
            Direction::Forward,
            PAGE_ROWS,
        )?;
        self.ended = page.len() < PAGE_ROWS;
        self.walked += page.len() as u64;
        if self.ended {
            super::table::check_walked(self.source, self.table, self.walked)?;
        }
        self.after = page.last().map(|(key, _)| key.clone());
        self.page = page.into_iter();
        Ok(self.page.next())
    }
}

/// The digest of every table of `projection` in `source` (the format's projection digest, which
/// verify's key-order comparison stands for, and each cut record carries).
pub fn digest(
    source: &dyn TableSource,
    projection: &dyn Projection,
) -> Result<crate::hash::Digest> {
    let mut names: Vec<&str> = projection.tables().to_vec();
    names.sort_unstable();
    let mut hasher = blake3::Hasher::new_derive_key(PROJECTION_DIGEST_CONTEXT);
    for name in names {
        hasher.update(&(name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        let mut rows = TableRows::new(source, name);
        let mut count = 0u64;
        while let Some((key, value)) = rows.next_row()? {
            hasher.update(&(key.len() as u64).to_le_bytes());
            hasher.update(&key);
            hasher.update(&(value.len() as u64).to_le_bytes());
            hasher.update(&value);
            count += 1;
        }
        hasher.update(&count.to_le_bytes());
    }
    Ok(crate::hash::Digest(*hasher.finalize().as_bytes()))
}

/// Where two copies of a projection's tables first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Difference {
    /// The table.
    pub table: String,
    /// The first key (hex) that is missing on one side or holds other bytes.
    pub key_hex: String,
    /// What differs there.
    pub difference: RowDifference,
}

/// The first difference between `live` and `expected`, `None` if they are identical: both
/// walked side by side in key order, table by table in name order, a page at a time.
pub(crate) fn first_difference(
    live: &dyn TableSource,
    expected: &dyn TableSource,
    projection: &dyn Projection,
) -> Result<Option<Difference>> {
    let mut names: Vec<&str> = projection.tables().to_vec();
    names.sort_unstable();
    for name in names {
        let mut live_rows = TableRows::new(live, name);
        let mut expected_rows = TableRows::new(expected, name);
        let (mut live_row, mut expected_row) = (live_rows.next_row()?, expected_rows.next_row()?);
        loop {
            let (key, difference) = match (&live_row, &expected_row) {
                (None, None) => break,
                (Some((key, _)), None) => (key, RowDifference::NotReplayed),
                (None, Some((key, _))) => (key, RowDifference::MissingLive),
                (Some((lk, lv)), Some((ek, ev))) => {
                    if lk < ek {
                        (lk, RowDifference::NotReplayed)
                    } else if ek < lk {
                        (ek, RowDifference::MissingLive)
                    } else if lv != ev {
                        (lk, RowDifference::Value)
                    } else {
                        live_row = live_rows.next_row()?;
                        expected_row = expected_rows.next_row()?;
                        continue;
                    }
                }
            };
            return Ok(Some(Difference {
                table: name.to_owned(),
                key_hex: hex(key),
                difference,
            }));
        }
    }
    Ok(None)
}
