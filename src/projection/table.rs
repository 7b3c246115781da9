//! Typed access to projection tables.
//!
//! Every projection table in redb maps key bytes to value bytes; [`Table`] gives it a type:
//! keys through [`KeyCodec`] (order-preserving), values through bincode with the format's
//! configuration. Reads go through a [`TableSource`], which a read transaction
//! ([`ReadTables`]) and the write transaction both provide, so the same query serves a reader
//! and a command deciding inside a write. Writes need [`WriteTables`], which only the store
//! makes, scoped to one projection's own tables, and hands only to that projection's `apply`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Bound;
use std::sync::OnceLock;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::key::{KeyCodec, key_bytes, key_from_bytes};
use super::{Projection, ProjectionError};
use crate::error::{Error, Result, TableFault, guarded};
use crate::log::checksum::{seal, unseal};
use crate::log::read::{Direction, Snapshot, missing};
use crate::record::{Position, Record, decode_bounded};
use crate::storage::{Definition, ReadIn, Readable, Reader, Writable, WriteIn, Writer};

pub(crate) fn definition(name: &str) -> Definition<'_, &'static [u8], &'static [u8]> {
    Definition::new(name)
}

/// Raw rows, as stored: key bytes and value bytes.
pub type RawRow = (Vec<u8>, Vec<u8>);

/// Somewhere projection tables can be read: a snapshot or the write transaction.
///
/// It reads the log as well, as of the same commit: a row that points at the record behind
/// it (a span event's row holds the record's position, not a copy of its payload) is read
/// back through [`TableSource::log_record`].
pub trait TableSource {
    /// The value bytes under `key` in `table`.
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>>;
    /// Up to `limit` rows of `table` with keys within the bounds, in `direction`.
    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>>;
    /// The log's record at `position`, as of the same commit as the tables; a position at or
    /// past the head is [`Error::Corrupt`] (a row pointing there is damaged). A projection's
    /// `apply` reads no log: the tables it is handed refuse with
    /// [`ProjectionError::LogNotReadable`].
    fn log_record(&self, position: Position) -> Result<Record>;
    /// How many rows `table` holds, as redb counts them beside the table's root: a walk of
    /// the whole table that meets fewer rows was led past some by a damaged page.
    fn row_count(&self, table: &str) -> Result<u64>;
}

/// Refuses a walk of the whole of `table` that met `walked` rows where `source` says it holds
/// another number: a damaged page of redb's tree can lead a range past rows, and each row's
/// checksum cannot tell a row that is not met.
pub(crate) fn check_walked(source: &dyn TableSource, table: &str, walked: u64) -> Result<()> {
    let held = source.row_count(table)?;
    if held == walked {
        Ok(())
    } else {
        Err(Error::CorruptProjection {
            table: table.to_owned(),
            fault: TableFault::WalkedRows { walked, held },
        })
    }
}

fn collect<'a>(
    name: &str,
    table: &impl Readable<&'static [u8], &'static [u8]>,
    lower: Bound<&'a [u8]>,
    upper: Bound<&'a [u8]>,
    direction: Direction,
    limit: usize,
) -> Result<Vec<RawRow>> {
    if let (Bound::Included(l) | Bound::Excluded(l), Bound::Included(u) | Bound::Excluded(u)) =
        (lower, upper)
        && l > u
    {
        return Ok(Vec::new());
    }
    let range = table.range::<&[u8]>((lower, upper))?;
    let mut rows = Vec::new();
    let mut push =
        |entry: Result<crate::storage::Row<'_, &'static [u8], &'static [u8]>>| -> Result<bool> {
            let (key, value) = entry?;
            let key = key.value();
            let value = unseal(name, key, value.value())?;
            rows.push((key.to_vec(), value.to_vec()));
            Ok(rows.len() < limit)
        };
    match direction {
        Direction::Forward => {
            for entry in range {
                if !push(entry)? {
                    break;
                }
            }
        }
        Direction::Backward => {
            for entry in range.rev() {
                if !push(entry)? {
                    break;
                }
            }
        }
    }
    Ok(rows)
}

/// Projection tables read in a read transaction. A table is created with its projection's
/// checkpoint; one missing beside that checkpoint is damage, and reads as
/// [`Error::CorruptProjection`].
///
/// Every read runs inside the store's guard: a panic of redb's on a damaged page becomes
/// [`Error::DamagedFile`], as for [`crate::Snapshot`] reads. A read of the tables of a
/// projection whose checkpoint is behind the log's head (a rebuild stopped or still running)
/// is refused with [`ProjectionError::Behind`]: its rows are not the state.
pub struct ReadTables {
    txn: Reader,
    /// Whether reads refuse a projection behind the head: the live tables do; verify's own
    /// look at them and an in-memory replay (which has no log) do not.
    refuse_behind: bool,
    /// The projections behind the head in this commit, `(name, next, head)`, read once.
    behind: OnceLock<Vec<(String, u64, u64)>>,
    /// The read of the log the rows' positions point into: this commit's own, or for a
    /// replay's tables (a file without a log) the snapshot that was replayed.
    log: Reader,
    /// `log`'s tables, opened on the first record read.
    log_tables: OnceLock<Snapshot>,
}

impl ReadTables {
    /// The live tables, refusing a projection behind the log.
    pub(crate) fn new(txn: Reader) -> Self {
        ReadTables {
            log: txn.clone(),
            txn,
            refuse_behind: true,
            behind: OnceLock::new(),
            log_tables: OnceLock::new(),
        }
    }

    /// The projection tables of `snapshot`'s commit: their reads and the snapshot's agree,
    /// however many commits come after. A projection behind the log there is refused, as
    /// in [`crate::Snapshot::state`].
    ///
    /// ```
    /// # fn main() -> annals::Result<()> {
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// let acquire = |holder: &str, now_ms| annals::leases::LeaseCommand::Acquire {
    ///     resource: "deploy".into(), holder: holder.into(), ttl_ms: 10, now_ms,
    /// };
    /// let _ = store.execute(&acquire("agent-1", 1))?;
    /// let snapshot = store.snapshot()?;
    /// let _ = store.execute(&acquire("agent-2", 100))?; // after the snapshot
    /// let then = annals::projection::ReadTables::of(&snapshot);
    /// assert_eq!(annals::leases::lease(&then, "deploy")?.unwrap().holder, "agent-1");
    /// assert_eq!(snapshot.head()?.next, annals::Position(1));
    /// # Ok(()) }
    /// ```
    pub fn of(snapshot: &Snapshot) -> Self {
        ReadTables::new(snapshot.reader.clone())
    }

    /// These tables reading the records their rows point at from `log`: a replay's tables,
    /// whose file holds no log, read the snapshot they were replayed from.
    pub(crate) fn reading_log(self, log: Reader) -> Self {
        ReadTables {
            log,
            log_tables: OnceLock::new(),
            ..self
        }
    }

    /// The tables as stored, whatever their checkpoints say: for `verify`, which compares
    /// them with a replay, and for a replay's own tables.
    pub(crate) fn as_stored(txn: Reader) -> Self {
        ReadTables {
            refuse_behind: false,
            ..ReadTables::new(txn)
        }
    }

    /// The projections behind the head in this commit: `(name, next position, head)`.
    pub(crate) fn behind(&self) -> Result<&[(String, u64, u64)]> {
        Ok(match self.behind.get() {
            Some(behind) => behind,
            None => {
                let found = behind_in(&self.txn)?;
                self.behind.get_or_init(|| found)
            }
        })
    }

    /// Refuses a read of `table` when its projection is behind the head.
    fn check_current(&self, table: &str) -> Result<()> {
        if !self.refuse_behind {
            return Ok(());
        }
        let behind = self.behind()?;
        let projection = table.split('.').next().unwrap_or(table);
        match behind.iter().find(|(name, _, _)| name == projection) {
            Some((name, at, head)) => Err(ProjectionError::Behind {
                projection: name.clone(),
                at: *at,
                head: *head,
            }
            .into()),
            None => Ok(()),
        }
    }

    /// A missing `table` reads as empty only where nothing says it exists: in a log, every
    /// table of a projection with a checkpoint was created with it (`store::catch_up`), so
    /// its absence is damage (a flipped byte in redb's table tree), not an empty table. A
    /// replay's tables (a file without the log's) may lack any.
    fn missing(&self, table: &str) -> Result<()> {
        let Some(checkpoints) = super::CHECKPOINTS.read_if_present(&self.txn)? else {
            return Ok(());
        };
        let projection = table.split('.').next().unwrap_or(table);
        if checkpoints.get(projection)?.is_some() {
            return Err(Error::CorruptProjection {
                table: table.to_owned(),
                fault: TableFault::Missing {
                    projection: projection.to_owned(),
                },
            });
        }
        Ok(())
    }

    /// The log's tables in `log`, opened once.
    fn log_tables(&self) -> Result<&Snapshot> {
        Ok(match self.log_tables.get() {
            Some(snapshot) => snapshot,
            None => {
                let opened = Snapshot::over(self.log.clone())?;
                self.log_tables.get_or_init(|| opened)
            }
        })
    }
}

/// Every projection whose checkpoint in `txn` is behind the head, with where it stands and
/// the head. A transaction without the log's tables (a replay's) has none.
pub(crate) fn behind_in(txn: &(impl ReadIn + ?Sized)) -> Result<Vec<(String, u64, u64)>> {
    let Some(meta) = crate::log::tables::META.read_if_present(txn)? else {
        return Ok(Vec::new());
    };
    let head = match meta.get(crate::log::tables::HEAD_KEY)? {
        Some(bytes) => {
            let value = crate::log::unseal_meta(crate::log::tables::HEAD_KEY, bytes.value())?;
            crate::log::decode_head(value)?.next.0
        }
        None => {
            return Err(Error::corrupt_meta(
                crate::error::MetaItem::Head,
                crate::error::MetaFault::Missing,
            ));
        }
    };
    let Some(checkpoints) = super::CHECKPOINTS.read_if_present(txn)? else {
        return Ok(Vec::new());
    };
    let mut behind = Vec::new();
    for entry in checkpoints.iter()? {
        let (name, value) = entry?;
        let (_, next) = super::unseal_checkpoint(name.value(), &value.value())?;
        if next != super::AT_HEAD && next < head {
            behind.push((name.value().to_owned(), next, head));
        }
    }
    Ok(behind)
}

impl TableSource for ReadTables {
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        guarded(|| self.check_current(table))?;
        guarded(|| match definition(table).read_if_present(&self.txn)? {
            Some(opened) => match opened.get(key)? {
                Some(stored) => Ok(Some(unseal(table, key, stored.value())?.to_vec())),
                None => Ok(None),
            },
            None => self.missing(table).map(|()| None),
        })
    }

    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>> {
        guarded(|| self.check_current(table))?;
        guarded(|| match definition(table).read_if_present(&self.txn)? {
            Some(opened) => collect(table, &opened, lower, upper, direction, limit),
            None => self.missing(table).map(|()| Vec::new()),
        })
    }

    fn log_record(&self, position: Position) -> Result<Record> {
        guarded(|| {
            self.log_tables()?
                .get(position)?
                .ok_or_else(|| missing(position))
        })
    }

    fn row_count(&self, table: &str) -> Result<u64> {
        guarded(|| match definition(table).read_if_present(&self.txn)? {
            Some(opened) => opened.len(),
            None => self.missing(table).map(|()| 0),
        })
    }
}

/// The name under which a cut keeps projection table `table` as of the cut.
pub(crate) fn snapshot_table(table: &str) -> String {
    format!("{}{table}", crate::log::cut::SNAPSHOT_PREFIX)
}

/// Copies every row of `from_table` in `from` into `to_table` in `to` (created if absent,
/// emptied first), as stored: the rows' checksums cover the projection's table name, which
/// both sides read them under. A table absent from `from` copies as empty.
pub(crate) fn copy_rows<'t>(
    from: &(impl ReadIn + ?Sized),
    from_table: &str,
    to: impl WriteIn<'t> + 't,
    to_table: &str,
) -> Result<()> {
    definition(to_table).delete(to)?;
    let mut target = definition(to_table).write(to)?;
    let Some(source) = definition(from_table).read_if_present(from)? else {
        return Ok(());
    };
    for entry in source.iter()? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
    }
    // The copy holds the source's rows, no more: the emptied target counts only them.
    debug_assert_eq!(
        target.len()?,
        source.len()?,
        "{to_table:?} holds the rows of {from_table:?}"
    );
    Ok(())
}

/// [`copy_rows`] between two tables of one write transaction.
pub(crate) fn copy_rows_within(txn: &Writer<'_>, from_table: &str, to_table: &str) -> Result<()> {
    definition(to_table).delete(txn)?;
    let mut target = definition(to_table).write(txn)?;
    let source = definition(from_table).write(txn)?;
    for entry in source.iter()? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
    }
    debug_assert_eq!(
        target.len()?,
        source.len()?,
        "{to_table:?} holds the rows of {from_table:?}"
    );
    Ok(())
}

/// The projection tables as the last cut kept them: table `<t>` read from
/// `annals.cut/<t>`. Rows pointing into the log point below the log's start, and are not
/// read back.
pub(crate) struct SnapshotTables {
    txn: Reader,
}

impl SnapshotTables {
    pub(crate) fn new(txn: Reader) -> Self {
        SnapshotTables { txn }
    }
}

impl TableSource for SnapshotTables {
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        guarded(
            || match definition(&snapshot_table(table)).read_if_present(&self.txn)? {
                Some(opened) => match opened.get(key)? {
                    Some(stored) => Ok(Some(unseal(table, key, stored.value())?.to_vec())),
                    None => Ok(None),
                },
                None => Ok(None),
            },
        )
    }

    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>> {
        guarded(
            || match definition(&snapshot_table(table)).read_if_present(&self.txn)? {
                Some(opened) => collect(table, &opened, lower, upper, direction, limit),
                None => Ok(Vec::new()),
            },
        )
    }

    fn log_record(&self, position: Position) -> Result<Record> {
        Err(missing(position))
    }

    fn row_count(&self, table: &str) -> Result<u64> {
        guarded(
            || match definition(&snapshot_table(table)).read_if_present(&self.txn)? {
                Some(opened) => opened.len(),
                None => Ok(0),
            },
        )
    }
}

impl crate::Snapshot {
    /// The projection tables as of this snapshot's commit: what the domains' queries read,
    /// consistent with the records this snapshot reads. A read of a projection that is
    /// behind the log in this commit is refused with [`ProjectionError::Behind`].
    pub fn state(&self) -> ReadTables {
        ReadTables::new(self.reader.clone())
    }

    /// The projection tables as stored, even those behind the log: what `verify` compares
    /// with a replay.
    pub(crate) fn state_as_stored(&self) -> ReadTables {
        ReadTables::as_stored(self.reader.clone())
    }
}

/// A projection table opened in the write transaction.
type OpenTable<'txn> = Writable<'txn, &'static [u8], &'static [u8]>;

/// Every projection table inside the write transaction: read by commands as they decide,
/// written only through the [`WriteTables`] each projection's `apply` is handed.
///
/// Each table is opened once, on first use, and stays open for the life of this value:
/// opening a redb table looks it up in the transaction's table tree and closing it writes its
/// root back, which cost more than the one row most commands touch. Nothing else opens a
/// projection table in the same transaction while this value lives.
pub(crate) struct TransactionTables<'txn> {
    txn: &'txn Writer<'txn>,
    open: RefCell<HashMap<String, OpenTable<'txn>>>,
}

impl<'txn> TransactionTables<'txn> {
    pub(crate) fn new(txn: &'txn Writer<'txn>) -> Self {
        TransactionTables {
            txn,
            open: RefCell::new(HashMap::new()),
        }
    }

    /// Runs `work` on `table`, opening it on first use.
    fn with_table<R>(
        &self,
        table: &str,
        work: impl FnOnce(&mut OpenTable<'txn>) -> Result<R>,
    ) -> Result<R> {
        let mut open = self.open.borrow_mut();
        if !open.contains_key(table) {
            let opened = definition(table).write(self.txn)?;
            open.insert(table.to_owned(), opened);
        }
        match open.get_mut(table) {
            Some(opened) => work(opened),
            None => unreachable!("the table was opened above"),
        }
    }

    /// The tables as `projection`'s `apply` may see and write them: its own, no other.
    pub(crate) fn scoped<'a>(&'a self, projection: &dyn Projection) -> WriteTables<'a> {
        WriteTables {
            all: self,
            projection: projection.name(),
            tables: projection.tables(),
        }
    }
}

impl RawWrites for TransactionTables<'_> {
    fn insert_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.with_table(table, |opened| {
            opened.insert(key, seal(table, key, value).as_slice())?;
            Ok(())
        })
    }

    fn replace_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_table(table, |opened| {
            match opened.replace(key, seal(table, key, value).as_slice())? {
                Some(old) => Ok(Some(unseal(table, key, old.value())?.to_vec())),
                None => Ok(None),
            }
        })
    }

    fn remove_raw(&self, table: &str, key: &[u8]) -> Result<bool> {
        self.with_table(table, |opened| opened.remove(key))
    }

    fn clear(&self, table: &str) -> Result<()> {
        // redb refuses to delete a table that is open.
        self.open.borrow_mut().remove(table);
        definition(table).delete(self.txn)?;
        debug_assert!(
            !self.open.borrow().contains_key(table),
            "a cleared table {table:?} is opened again only by its next write"
        );
        Ok(())
    }
}

impl TableSource for TransactionTables<'_> {
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.with_table(table, |opened| match opened.get(key)? {
            Some(stored) => Ok(Some(unseal(table, key, stored.value())?.to_vec())),
            None => Ok(None),
        })
    }

    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>> {
        self.with_table(table, |opened| {
            collect(table, opened, lower, upper, direction, limit)
        })
    }

    /// The write transaction's tables alone read no log: they are what `apply`, catch-up and
    /// a replay write through. A write session reads its log itself.
    fn log_record(&self, _position: Position) -> Result<Record> {
        Err(ProjectionError::LogNotReadable.into())
    }

    fn row_count(&self, table: &str) -> Result<u64> {
        self.with_table(table, |opened| opened.len())
    }
}

/// The writes of the write transaction, behind the scoped [`WriteTables`]. Sealed: only the
/// store's write session implements it.
pub(crate) trait RawWrites: TableSource {
    fn insert_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<()>;
    fn replace_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>>;
    fn remove_raw(&self, table: &str, key: &[u8]) -> Result<bool>;
    fn clear(&self, table: &str) -> Result<()>;
}

/// One projection's own tables inside the write transaction, as its [`Projection::apply`]
/// (and [`Projection::clear`]) gets them: readable and writable, and no other table is. Only
/// the store makes one, for the projection whose `apply` it is about to call, so projection
/// rows are written by `apply` alone and always with a record behind them. Reading or writing
/// a table the projection does not declare in [`Projection::tables`] is
/// [`ProjectionError::ForeignTable`].
///
/// A caller of the store reads the tables inside a write session, as a command does:
///
/// ```
/// use annals::projection::TableSource;
/// let dir = tempfile::tempdir()?;
/// let store = annals::Store::open(dir.path().join("log.redb"))?;
/// store.write(|session| session.state().get_raw("leases.held", b"deploy-lock").map(|_| ()))?;
/// # Ok::<(), annals::Error>(())
/// ```
///
/// but cannot get a `WriteTables`, so cannot write a projection's rows:
///
/// ```compile_fail
/// use annals::projection::WriteTables;
/// let dir = tempfile::tempdir().unwrap();
/// let store = annals::Store::open(dir.path().join("log.redb")).unwrap();
/// store.write(|session| {
///     // `state()` is read-only: it has no `insert_raw`.
///     session.state().insert_raw("leases.held", b"deploy-lock", b"forged")
/// }).unwrap();
/// ```
pub struct WriteTables<'a> {
    all: &'a dyn RawWrites,
    projection: &'static str,
    tables: &'static [&'static str],
}

impl WriteTables<'_> {
    /// Refuses a table outside the projection's own.
    fn own(&self, table: &str) -> Result<()> {
        if self.tables.contains(&table) {
            Ok(())
        } else {
            Err(ProjectionError::ForeignTable {
                projection: self.projection.to_owned(),
                table: table.to_owned(),
            }
            .into())
        }
    }

    /// Stores `value` under `key` in `table`.
    pub fn insert_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<()> {
        self.own(table)?;
        self.all.insert_raw(table, key, value)
    }

    /// Stores `value` under `key` in `table`, returning the value it replaces: one B-tree
    /// operation where a read then a write would be two.
    pub fn replace_raw(&self, table: &str, key: &[u8], value: &[u8]) -> Result<Option<Vec<u8>>> {
        self.own(table)?;
        self.all.replace_raw(table, key, value)
    }

    /// Removes `key` from `table`; whether it was there.
    pub fn remove_raw(&self, table: &str, key: &[u8]) -> Result<bool> {
        self.own(table)?;
        self.all.remove_raw(table, key)
    }

    /// Deletes `table` with all its rows.
    pub fn clear(&self, table: &str) -> Result<()> {
        self.own(table)?;
        self.all.clear(table)
    }
}

impl TableSource for WriteTables<'_> {
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.own(table)?;
        self.all.get_raw(table, key)
    }

    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>> {
        self.own(table)?;
        self.all.range_raw(table, lower, upper, direction, limit)
    }

    /// Refused: `apply` reads only its record and its own tables.
    fn log_record(&self, _position: Position) -> Result<Record> {
        Err(ProjectionError::LogNotReadable.into())
    }

    fn row_count(&self, table: &str) -> Result<u64> {
        self.own(table)?;
        self.all.row_count(table)
    }
}

/// A typed projection table: `K` keys (order-preserving), `V` values (bincode).
///
/// ```
/// use annals::projection::Table;
/// const HOLDERS: Table<String, u64> = Table::new("example.holders");
/// assert_eq!(HOLDERS.name(), "example.holders");
/// ```
pub struct Table<K, V> {
    name: &'static str,
    types: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Clone for Table<K, V> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<K, V> Copy for Table<K, V> {}

impl<K: KeyCodec, V: Serialize + DeserializeOwned> Table<K, V> {
    /// A table named `name`; by convention `<projection>.<table>`.
    pub const fn new(name: &'static str) -> Self {
        Table {
            name,
            types: PhantomData,
        }
    }

    /// Its name in redb.
    pub fn name(&self) -> &'static str {
        self.name
    }

    fn decode_value(&self, bytes: &[u8]) -> Result<V> {
        decode_bounded(bytes).map_err(|cause| self.corrupt(TableFault::UndecodableValue { cause }))
    }

    fn encode_value(&self, value: &V) -> Result<Vec<u8>> {
        crate::record::encode_serde(value).map_err(|error| {
            self.corrupt(TableFault::UnencodableValue {
                cause: error.to_string(),
            })
        })
    }

    fn decode_key(&self, bytes: &[u8]) -> Result<K> {
        key_from_bytes(bytes).ok_or_else(|| self.corrupt(TableFault::UndecodableKey))
    }

    fn corrupt(&self, fault: TableFault) -> Error {
        Error::CorruptProjection {
            table: self.name.to_owned(),
            fault,
        }
    }

    /// The value under `key`.
    pub fn get(&self, source: &(impl TableSource + ?Sized), key: &K) -> Result<Option<V>> {
        match source.get_raw(self.name, &key_bytes(key))? {
            Some(bytes) => self.decode_value(&bytes).map(Some),
            None => Ok(None),
        }
    }

    /// Up to `limit` rows whose key starts with the encoding of `prefix`, in `direction`.
    /// `prefix` is a leading part of the key tuple (or the whole key, or `()` for every row).
    pub fn scan_prefix<P: KeyCodec>(
        &self,
        source: &(impl TableSource + ?Sized),
        prefix: &P,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(K, V)>> {
        let lower = key_bytes(prefix);
        let upper = prefix_end(&lower);
        let upper_bound = match &upper {
            Some(upper) => Bound::Excluded(upper.as_slice()),
            None => Bound::Unbounded,
        };
        self.decode_rows(source.range_raw(
            self.name,
            Bound::Included(lower.as_slice()),
            upper_bound,
            direction,
            limit,
        )?)
    }

    /// Up to `limit` rows with `from <= key < to`, in `direction`.
    pub fn scan_between(
        &self,
        source: &(impl TableSource + ?Sized),
        from: &K,
        to: &K,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<(K, V)>> {
        let (from, to) = (key_bytes(from), key_bytes(to));
        let rows = source.range_raw(
            self.name,
            Bound::Included(from.as_slice()),
            Bound::Excluded(to.as_slice()),
            direction,
            limit,
        )?;
        self.decode_rows(rows)
    }

    fn decode_rows(&self, rows: Vec<RawRow>) -> Result<Vec<(K, V)>> {
        rows.into_iter()
            .map(|(key, value)| Ok((self.decode_key(&key)?, self.decode_value(&value)?)))
            .collect()
    }

    /// Stores `value` under `key`.
    pub fn insert(&self, tables: &WriteTables<'_>, key: &K, value: &V) -> Result<()> {
        let bytes = self.encode_value(value)?;
        tables.insert_raw(self.name, &key_bytes(key), &bytes)
    }

    /// Stores `value` under `key`, returning the value it replaces.
    pub fn replace(&self, tables: &WriteTables<'_>, key: &K, value: &V) -> Result<Option<V>> {
        let bytes = self.encode_value(value)?;
        match tables.replace_raw(self.name, &key_bytes(key), &bytes)? {
            Some(old) => self.decode_value(&old).map(Some),
            None => Ok(None),
        }
    }

    /// Removes `key`; whether it was there.
    pub fn remove(&self, tables: &WriteTables<'_>, key: &K) -> Result<bool> {
        tables.remove_raw(self.name, &key_bytes(key))
    }

    /// Moves an index entry from `from` (the row's entry before a change, if it had one) to
    /// `to` (after it), and writes nothing when the two are the same. A row's index entries
    /// mostly outlive its changes (an outbox row keeps its enqueue id through its claim and
    /// ack), and an entry removed and written back copies its B-tree leaf into the commit all
    /// the same: each further leaf a durable commit dirties costs it about 7.6 KB, a table
    /// about 12.4 KB (`cargo bench --bench side_by_side -- --leaf-costs`).
    pub fn move_entry(
        &self,
        tables: &WriteTables<'_>,
        from: Option<(K, V)>,
        to: Option<(K, V)>,
    ) -> Result<()>
    where
        K: PartialEq,
        V: PartialEq,
    {
        if from == to {
            return Ok(());
        }
        if let Some((key, _)) = from
            && to.as_ref().is_none_or(|(new_key, _)| *new_key != key)
        {
            self.remove(tables, &key)?;
        }
        match to {
            Some((key, value)) => self.insert(tables, &key, &value),
            None => Ok(()),
        }
    }
}

/// The smallest byte string greater than every string starting with `prefix`, or `None` if
/// there is none (a prefix of only `0xFF` bytes, or empty).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use redb::backends::InMemoryBackend;

    use super::*;

    #[test]
    fn a_table_kept_open_by_a_write_can_be_cleared_and_used_again_in_it() {
        let db = redb::Builder::new()
            .create_with_backend(InMemoryBackend::new())
            .unwrap();
        let txn = db.begin_write().unwrap();
        {
            let writer = Writer::redb(&txn);
            let tables = TransactionTables::new(&writer);
            tables.insert_raw("example.rows", b"k", b"v").unwrap();
            assert_eq!(
                tables.get_raw("example.rows", b"k").unwrap(),
                Some(b"v".to_vec())
            );
            tables.clear("example.rows").unwrap();
            assert_eq!(tables.get_raw("example.rows", b"k").unwrap(), None);
            tables.insert_raw("example.rows", b"k", b"w").unwrap();
            assert!(tables.remove_raw("example.rows", b"k").unwrap());
            assert!(!tables.remove_raw("example.rows", b"k").unwrap());
        }
        txn.commit().unwrap();
    }
}
