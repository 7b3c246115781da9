//! A projection's tables as people read them: each table it shows, its columns named, its
//! rows decoded through the table's own key and value types. What `annals state` prints;
//! each built-in projection describes its own tables ([`Projection::shown_tables`]), so a
//! tool shows them without knowing any table's layout.
//!
//! Rows are read a page at a time, so memory stays flat however many rows there are. The
//! tables shown hold a projection's state; its index tables (`by_…`, `due`, `open_…`) repeat
//! what those say in another order and are not shown.
//!
//! ```
//! # fn main() -> annals::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let store = annals::Store::open(dir.path().join("log.redb"))?;
//! let _ = store.execute(&annals::leases::LeaseCommand::Acquire {
//!     resource: "deploy".into(), holder: "agent-1".into(), ttl_ms: 1_000, now_ms: 1,
//! })?;
//! let leases = annals::maintenance::builtin_projections().into_iter().find(|p| p.name() == "leases").unwrap();
//! let held = &leases.shown_tables()[0];
//! assert_eq!(held.name(), "leases.held");
//! let mut rows = Vec::new();
//! held.scan(&store.snapshot()?.state(), &mut |row| { rows.push(row); true })?;
//! assert_eq!(rows[0][0], ("resource".to_owned(), serde_json::json!("deploy")));
//! # Ok(()) }
//! ```
//!
//! [`Projection::shown_tables`]: super::Projection::shown_tables

use std::ops::Bound;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::key::{KeyCodec, key_from_bytes};
use super::table::{Table, TableSource, check_walked};
use crate::error::{Error, Result, TableFault};
use crate::log::read::Direction;
use crate::record::decode_bounded;

/// One row as shown: each column's name and value, in order (the key's parts, then the
/// value's fields in declaration order).
pub type ShownRow = Vec<(String, Value)>;

/// Rows read per page: enough to amortise a range read, few enough to keep memory flat.
const PAGE_ROWS: usize = 512;

/// A table a projection shows, with its columns' names.
#[derive(Clone, Copy)]
pub struct ShownTable {
    rows: &'static dyn Rows,
    key: &'static [&'static str],
    value: &'static str,
}

impl ShownTable {
    /// `table`, its key's parts called `key` and its value (when not a struct) `value`.
    pub(crate) const fn new(
        rows: &'static dyn Rows,
        key: &'static [&'static str],
        value: &'static str,
    ) -> ShownTable {
        ShownTable { rows, key, value }
    }

    /// The table's name, e.g. `leases.held`.
    pub fn name(&self) -> &'static str {
        self.rows.name()
    }

    /// The names of the key's columns, in order.
    pub fn key_columns(&self) -> &'static [&'static str] {
        self.key
    }

    /// Calls `visit` with each row in key order until it returns `false`. A row that does
    /// not decode, or a walk that missed rows (a damaged page), is
    /// [`Error::CorruptProjection`].
    pub fn scan(
        &self,
        source: &dyn TableSource,
        visit: &mut dyn FnMut(ShownRow) -> bool,
    ) -> Result<()> {
        self.rows.scan(source, self, visit)
    }
}

impl std::fmt::Debug for ShownTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShownTable")
            .field("name", &self.name())
            .field("key", &self.key)
            .finish()
    }
}

/// A table's rows decoded through its types; sealed to this crate's tables.
pub(crate) trait Rows: Sync {
    fn name(&self) -> &'static str;
    fn scan(
        &self,
        source: &dyn TableSource,
        shown: &ShownTable,
        visit: &mut dyn FnMut(ShownRow) -> bool,
    ) -> Result<()>;
}

impl<K: KeyCodec + Serialize, V: Serialize + DeserializeOwned> Rows for Table<K, V> {
    fn name(&self) -> &'static str {
        Table::name(self)
    }

    fn scan(
        &self,
        source: &dyn TableSource,
        shown: &ShownTable,
        visit: &mut dyn FnMut(ShownRow) -> bool,
    ) -> Result<()> {
        scan_shown::<K, V, V>(Table::name(self), source, shown, visit, |_, value| {
            Ok(value)
        })
    }
}

/// A table whose rows point into the log, shown as what they point at: each row read back
/// through `resolve` (a span event's row holds its record's position).
pub(crate) struct Resolved<K, V, T> {
    pub(crate) table: Table<K, V>,
    pub(crate) resolve: fn(&dyn TableSource, K, V) -> Result<T>,
}

impl<K: KeyCodec + Serialize, V: Serialize + DeserializeOwned, T: Serialize> Rows
    for Resolved<K, V, T>
{
    fn name(&self) -> &'static str {
        Table::name(&self.table)
    }

    fn scan(
        &self,
        source: &dyn TableSource,
        shown: &ShownTable,
        visit: &mut dyn FnMut(ShownRow) -> bool,
    ) -> Result<()> {
        scan_shown::<K, V, T>(self.name(), source, shown, visit, |key, value| {
            (self.resolve)(source, key, value)
        })
    }
}

/// Calls `visit` with each row of `table` (keys `K`, values `V`) in key order, its value
/// shown as `show` makes it, until `visit` returns `false`.
fn scan_shown<K: KeyCodec + Serialize, V: DeserializeOwned, T: Serialize>(
    table: &'static str,
    source: &dyn TableSource,
    shown: &ShownTable,
    visit: &mut dyn FnMut(ShownRow) -> bool,
    show: impl Fn(K, V) -> Result<T>,
) -> Result<()> {
    let corrupt = |fault: TableFault| Error::CorruptProjection {
        table: table.to_owned(),
        fault,
    };
    let undecodable = |cause: String| corrupt(TableFault::UndecodableValue { cause });
    let unencodable = |cause: String| corrupt(TableFault::UnencodableValue { cause });
    let mut after: Option<Vec<u8>> = None;
    let mut walked = 0u64;
    loop {
        let lower = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let page = source.range_raw(
            table,
            lower,
            Bound::Unbounded,
            Direction::Forward,
            PAGE_ROWS,
        )?;
        walked += page.len() as u64;
        if page.len() < PAGE_ROWS {
            // The rows shown must be the whole table: a damaged page of redb's can lead the
            // walk past some.
            check_walked(source, table, walked)?;
        }
        for (key_bytes, value_bytes) in &page {
            let key: K =
                key_from_bytes(key_bytes).ok_or_else(|| corrupt(TableFault::UndecodableKey))?;
            let value: V = decode_bounded(value_bytes).map_err(undecodable)?;
            let mut row = key_columns(&key, shown.key).map_err(unencodable)?;
            let value = show(key, value)?;
            for (name, value) in fields(&value, shown.value).map_err(unencodable)? {
                // A value that repeats its key shows it once, in the key's column.
                if !row.iter().any(|(column, _)| *column == name) {
                    row.push((name, value));
                }
            }
            if !visit(row) {
                return Ok(());
            }
        }
        if page.len() < PAGE_ROWS {
            return Ok(());
        }
        after = page.last().map(|(key, _)| key.clone());
    }
}

/// A key as columns: a tuple's parts under `names`, anything else under the first name.
fn key_columns(key: &impl Serialize, names: &[&str]) -> std::result::Result<ShownRow, String> {
    let value = serde_json::to_value(key).map_err(|error| error.to_string())?;
    Ok(match value {
        Value::Array(parts) if names.len() > 1 => names
            .iter()
            .map(|name| (*name).to_owned())
            .zip(parts)
            .collect(),
        Value::Null => Vec::new(),
        single => vec![(names.first().copied().unwrap_or("key").to_owned(), single)],
    })
}

/// The fields of a value serialised as a JSON object, in the order it writes them (a value
/// that is not an object is one column called `value_column`).
fn fields(value: &impl Serialize, value_column: &str) -> std::result::Result<ShownRow, String> {
    let text = serde_json::to_string(value).map_err(|error| error.to_string())?;
    match serde_json::from_str::<Fields>(&text) {
        Ok(Fields(fields)) => Ok(fields),
        Err(_) => {
            let value = serde_json::from_str(&text).map_err(|error| error.to_string())?;
            Ok(vec![(value_column.to_owned(), value)])
        }
    }
}

/// A JSON object read into pairs, in the order of the text (`serde_json::Map` would sort).
struct Fields(ShownRow);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Fields;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Fields, A::Error> {
                let mut fields = Vec::new();
                while let Some(pair) = map.next_entry::<String, Value>()? {
                    fields.push(pair);
                }
                Ok(Fields(fields))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}
