//! Typed table handles: a [`Definition`] names a table and its key and value types, and opens
//! it to read ([`ReadOnly`]) in a redb read transaction or a [`Reader`], or to write
//! ([`Writable`]) in a redb write transaction or a [`Writer`]; both read through [`Readable`].
//! Through a reader or writer with an overlay, a handle answers from redb's rows under the
//! overlay's changes, and a write goes to the command's scratch layer.

use std::borrow::Borrow;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use redb::{
    Key, ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata, TableDefinition,
    TableError, Value, WriteTransaction,
};

use super::access::{Commit, Kind, Reader, Writer};
use super::overlay::{Change, Merged, Scratch, TableChanges, counted, newest_change};
use super::rows::{Guard, Row, Rows};
use crate::error::Result;

/// A table's name and the types of its keys and values. Keys are ordered as `K` orders
/// them (`K::compare` over their bytes).
pub(crate) struct Definition<'n, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    name: &'n str,
    types: PhantomData<(K, V)>,
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Clone
    for Definition<'_, K, V>
{
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Copy
    for Definition<'_, K, V>
{
}

/// Somewhere tables are read: a redb read transaction, or a [`Reader`] (with its overlay).
pub(crate) trait ReadIn {
    /// `definition`'s table, `None` when it does not exist.
    fn open<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        &self,
        definition: Definition<'_, K, V>,
    ) -> Result<Option<ReadOnly<K, V>>>;
}

impl ReadIn for ReadTransaction {
    fn open<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        &self,
        definition: Definition<'_, K, V>,
    ) -> Result<Option<ReadOnly<K, V>>> {
        Ok(stored_table(self, definition)?.map(|base| ReadOnly {
            base: Some(Arc::new(base)),
            layers: Vec::new(),
        }))
    }
}

impl ReadIn for Arc<Commit> {
    fn open<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        &self,
        definition: Definition<'_, K, V>,
    ) -> Result<Option<ReadOnly<K, V>>> {
        Ok(committed_table(self, definition)?.map(|base| ReadOnly {
            base: Some(base),
            layers: Vec::new(),
        }))
    }
}

impl ReadIn for Reader {
    fn open<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        &self,
        definition: Definition<'_, K, V>,
    ) -> Result<Option<ReadOnly<K, V>>> {
        let base = committed_table(self.transaction(), definition)?;
        let layers = self.overlay().table(definition.name());
        // A table the overlay created exists before any drain writes it into redb.
        if base.is_none() && layers.is_empty() {
            return Ok(None);
        }
        Ok(Some(ReadOnly { base, layers }))
    }
}

/// redb's table `definition` in `txn`, `None` when it does not exist.
fn stored_table<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    txn: &ReadTransaction,
    definition: Definition<'_, K, V>,
) -> Result<Option<ReadOnlyTable<K, V>>> {
    match txn.open_table(definition.redb()) {
        Ok(table) => Ok(Some(table)),
        Err(TableError::TableDoesNotExist(_)) => Ok(None),
        Err(error) => Err(error.into()),
    }
}

/// [`stored_table`] in `commit`, opened once there.
fn committed_table<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    commit: &Commit,
    definition: Definition<'_, K, V>,
) -> Result<Option<Arc<ReadOnlyTable<K, V>>>> {
    commit.table(definition.name(), |txn| stored_table(txn, definition))
}

/// Somewhere tables are written: a redb write transaction, or a [`Writer`].
pub(crate) trait WriteIn<'t>: Copy {
    /// `definition`'s table, created empty if it does not exist.
    fn open_write<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<Writable<'t, K, V>>;

    /// Whether `name` exists.
    fn exists(self, name: &str) -> Result<bool>;

    /// Deletes `definition`'s table and its rows: whether it existed.
    fn delete<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<bool>;
}

impl<'t> WriteIn<'t> for &'t WriteTransaction {
    fn open_write<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<Writable<'t, K, V>> {
        Ok(Writable(Handle::Redb(self.open_table(definition.redb())?)))
    }

    fn exists(self, name: &str) -> Result<bool> {
        Ok(super::table_names_in(self)?.iter().any(|held| held == name))
    }

    fn delete<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<bool> {
        Ok(self.delete_table(definition.redb())?)
    }
}

impl<'t> WriteIn<'t> for &'t super::WriteTransaction<'_> {
    fn open_write<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<Writable<'t, K, V>> {
        (&**self).open_write(definition)
    }

    fn exists(self, name: &str) -> Result<bool> {
        (&**self).exists(name)
    }

    fn delete<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<bool> {
        (&**self).delete(definition)
    }
}

impl<'t> WriteIn<'t> for &'t Writer<'_> {
    fn open_write<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<Writable<'t, K, V>> {
        match &self.0 {
            Kind::Redb(txn) => txn.open_write(definition),
            Kind::Overlay { base, scratch } => {
                let below = base.open(definition)?;
                if below.is_none() {
                    // Created here: the table exists from this command on.
                    scratch
                        .borrow_mut()
                        .own_mut(definition.name(), changes_of::<K, V>);
                }
                Ok(Writable(Handle::Overlay {
                    name: definition.name().to_owned(),
                    below: below.unwrap_or(ReadOnly {
                        base: None,
                        layers: Vec::new(),
                    }),
                    scratch,
                }))
            }
        }
    }

    fn exists(self, name: &str) -> Result<bool> {
        match &self.0 {
            Kind::Redb(txn) => txn.exists(name),
            Kind::Overlay { base, scratch } => Ok(RefCell::borrow(scratch).own(name).is_some()
                || !base.overlay().table(name).is_empty()
                || super::table_names(base.transaction())?
                    .iter()
                    .any(|held| held == name)),
        }
    }

    fn delete<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
        self,
        definition: Definition<'_, K, V>,
    ) -> Result<bool> {
        match &self.0 {
            Kind::Redb(txn) => txn.delete(definition),
            Kind::Overlay { .. } => {
                // The overlay keeps no table deletions: every row is removed instead, and the
                // table stays, empty (a write reopens a deleted table in redb anyway).
                let existed = self.exists(definition.name())?;
                let mut table = self.open_write(definition)?;
                let keys: Vec<Arc<[u8]>> = table
                    .iter()?
                    .map(|row| row.map(|(key, _)| key.bytes()))
                    .collect::<Result<_>>()?;
                for key in keys {
                    table.remove(K::from_bytes(&key))?;
                }
                Ok(existed)
            }
        }
    }
}

/// An empty set of changes to a table of `K` and `V`.
fn changes_of<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>() -> TableChanges {
    TableChanges::new(K::compare, drain_table::<K, V>)
}

/// Writes `changes` into the table `name` of `txn`.
fn drain_table<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    txn: &WriteTransaction,
    name: &str,
    changes: &TableChanges,
) -> Result<()> {
    let mut table = txn.open_table(Definition::<K, V>::new(name).redb())?;
    let rows_before = table.len()?;
    for (key, change) in changes.changes() {
        match change {
            Change::Put(value) => {
                table.insert(K::from_bytes(key), V::from_bytes(value))?;
            }
            Change::Removed { .. } => {
                table.remove(K::from_bytes(key))?;
            }
        }
    }
    // The overlay counted every row its changes added or removed: redb now holds as many.
    debug_assert_eq!(
        i128::from(table.len()?),
        i128::from(rows_before) + i128::from(changes.counted()),
        "draining {name:?} leaves the rows the overlay counted"
    );
    Ok(())
}

impl<'n, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Definition<'n, K, V> {
    /// The table called `name`.
    pub(crate) const fn new(name: &'n str) -> Self {
        Definition {
            name,
            types: PhantomData,
        }
    }

    /// The table's name.
    pub(crate) fn name(&self) -> &'n str {
        self.name
    }

    /// redb's definition of the table: for this module, and for the tests that damage a
    /// file beneath the store (`testing::internals::tables`).
    pub(crate) const fn redb(&self) -> TableDefinition<'n, K, V> {
        TableDefinition::new(self.name)
    }

    /// The table as `source` reads it; one that does not exist is an error.
    pub(crate) fn read(&self, source: &(impl ReadIn + ?Sized)) -> Result<ReadOnly<K, V>> {
        source
            .open(*self)?
            .ok_or_else(|| redb::Error::TableDoesNotExist(self.name.to_owned()).into())
    }

    /// The table as `source` reads it, `None` when it does not exist.
    pub(crate) fn read_if_present(
        &self,
        source: &(impl ReadIn + ?Sized),
    ) -> Result<Option<ReadOnly<K, V>>> {
        source.open(*self)
    }

    /// The table in the write `to`, created empty if it does not exist.
    pub(crate) fn write<'t>(&self, to: impl WriteIn<'t>) -> Result<Writable<'t, K, V>> {
        to.open_write(*self)
    }

    /// Creates the table in `to` if it does not exist, leaving its rows as they are.
    pub(crate) fn create<'t>(&self, to: impl WriteIn<'t>) -> Result<()> {
        self.write(to).map(drop)
    }

    /// Whether the table exists in the write `to`.
    pub(crate) fn exists_in<'t>(&self, to: impl WriteIn<'t>) -> Result<bool> {
        to.exists(self.name)
    }

    /// Deletes the table and its rows from `to`: whether it existed.
    pub(crate) fn delete<'t>(&self, to: impl WriteIn<'t>) -> Result<bool> {
        to.delete(*self)
    }

    /// Gives the table the name of `to` (which must not exist), in `txn`.
    pub(crate) fn rename<W: Value + Send + Sync + 'static>(
        &self,
        txn: &WriteTransaction,
        to: Definition<'_, K, W>,
    ) -> Result<()> {
        Ok(txn.rename_table(self.redb(), to.redb())?)
    }
}

/// How a table's rows sit in pages.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TableStats {
    /// Bytes of keys and values.
    pub(crate) stored_bytes: u64,
    /// Bytes of the pages' own bookkeeping.
    pub(crate) metadata_bytes: u64,
    /// Bytes of pages left unused.
    pub(crate) fragmented_bytes: u64,
    /// Leaf pages.
    pub(crate) leaf_pages: u64,
    /// Branch pages.
    pub(crate) branch_pages: u64,
}

impl TableStats {
    pub(super) fn of(stats: redb::TableStats) -> Self {
        TableStats {
            stored_bytes: stats.stored_bytes(),
            metadata_bytes: stats.metadata_bytes(),
            fragmented_bytes: stats.fragmented_bytes(),
            leaf_pages: stats.leaf_pages(),
            branch_pages: stats.branch_pages(),
        }
    }
}

/// Reads of a table, the same whether it was opened to read or to write.
pub(crate) trait Readable<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    /// The value under `key`.
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>>;

    /// The rows whose keys are within `range`, in key order.
    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k;

    /// Every row, in key order.
    fn iter(&self) -> Result<Rows<'_, K, V>> {
        self.range::<K::SelfType<'_>>(..)
    }

    /// The row of the greatest key.
    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        self.iter()?.next_back().transpose()
    }

    /// How many rows the table holds (as redb counts them beside the table's root, and the
    /// overlay's changes to that count).
    fn len(&self) -> Result<u64>;
}

/// The bounds of `range` as key bytes.
fn key_bounds<'k, K: Key + Send + Sync + 'static, KR: Borrow<K::SelfType<'k>> + 'k>(
    range: &impl RangeBounds<KR>,
) -> (Bound<Vec<u8>>, Bound<Vec<u8>>) {
    let bytes = |bound: Bound<&KR>| match bound {
        Bound::Included(key) => Bound::Included(K::as_bytes(key.borrow()).as_ref().to_vec()),
        Bound::Excluded(key) => Bound::Excluded(K::as_bytes(key.borrow()).as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    };
    (bytes(range.start_bound()), bytes(range.end_bound()))
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// A table as one read sees it: redb's rows as of its commit (none when redb does not have
/// the table yet) under the overlay's layers. Its rows and ranges keep the transaction alive,
/// so they may outlive the handle.
pub(crate) struct ReadOnly<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    base: Option<Arc<ReadOnlyTable<K, V>>>,
    /// The overlay's changes to the table, oldest first.
    layers: Vec<Arc<TableChanges>>,
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> ReadOnly<K, V> {
    /// [`Readable::range`], its rows independent of this handle's lifetime (they keep the
    /// transaction alive): the inherent method, which a call on a `ReadOnly` finds first.
    pub(crate) fn range<'k, KR>(
        &self,
        range: impl RangeBounds<KR> + 'k,
    ) -> Result<Rows<'static, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        self.range_under(range, Vec::new())
    }

    /// The range under these layers and `more` (newer) besides.
    fn range_under<'k, KR>(
        &self,
        range: impl RangeBounds<KR> + 'k,
        more: Vec<Arc<TableChanges>>,
    ) -> Result<Rows<'static, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        if self.layers.is_empty() && more.is_empty() {
            return match &self.base {
                Some(base) => Ok(Rows::stored(base.range(range)?)),
                None => Ok(Rows::empty()),
            };
        }
        let (lower, upper) = key_bounds::<K, KR>(&range);
        let base = match &self.base {
            Some(base) => Rows::stored(base.range(range)?),
            None => Rows::empty(),
        };
        let mut layers = self.layers.clone();
        layers.extend(more);
        Ok(Rows::merged(Merged::new(
            layers,
            as_slice(&lower),
            as_slice(&upper),
            base,
        )))
    }

    /// The value of `key` below any layer `newer` than these.
    /// Whether redb's commit under the layers holds `key`, whatever the layers say.
    fn base_holds(&self, key: &[u8]) -> Result<bool> {
        match &self.base {
            Some(base) => Ok(ReadableTable::get(&**base, K::from_bytes(key))?.is_some()),
            None => Ok(false),
        }
    }

    fn get_bytes(&self, key: &[u8]) -> Result<Option<Guard<'_, V>>> {
        match newest_change(&self.layers, key) {
            Some(Change::Put(value)) => Ok(Some(Guard::pending(Arc::clone(value)))),
            Some(Change::Removed { .. }) => Ok(None),
            None => match &self.base {
                Some(base) => {
                    Ok(ReadableTable::get(&**base, K::from_bytes(key))?.map(Guard::stored))
                }
                None => Ok(None),
            },
        }
    }
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Readable<K, V>
    for ReadOnly<K, V>
{
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>> {
        if self.layers.is_empty() {
            return match &self.base {
                Some(base) => Ok(ReadableTable::get(&**base, key)?.map(Guard::stored)),
                None => Ok(None),
            };
        }
        self.get_bytes(K::as_bytes(key.borrow()).as_ref())
    }

    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        ReadOnly::range(self, range)
    }

    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        if self.layers.is_empty() {
            return match &self.base {
                Some(base) => Ok(ReadableTable::last(&**base)?
                    .map(|(key, value)| (Guard::stored(key), Guard::stored(value)))),
                None => Ok(None),
            };
        }
        self.iter()?.next_back().transpose()
    }

    fn len(&self) -> Result<u64> {
        let base = match &self.base {
            Some(base) => ReadableTableMetadata::len(&**base)?,
            None => 0,
        };
        Ok(count(base, counted(&self.layers)))
    }
}

/// A count of `base` rows changed by `counted`.
fn count(base: u64, counted: i64) -> u64 {
    let len = i128::from(base) + i128::from(counted);
    debug_assert!(len >= 0, "a table holds no fewer than 0 rows");
    u64::try_from(len).unwrap_or(0)
}

/// A table opened to write: its rows as of this point of the write.
pub(crate) struct Writable<'t, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    Handle<'t, K, V>,
);

enum Handle<'t, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    Redb(redb::Table<'t, K, V>),
    Overlay {
        name: String,
        /// The table as the command's reader sees it, under the scratch layer.
        below: ReadOnly<K, V>,
        scratch: &'t RefCell<Scratch>,
    },
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Writable<'_, K, V> {
    /// Sets `key`'s value: whether it replaced one.
    pub(crate) fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<bool> {
        if let Handle::Redb(table) = &mut self.0 {
            return Ok(table.insert(key, value)?.is_some());
        }
        let put = Change::Put(V::as_bytes(value.borrow()).as_ref().into());
        Ok(self
            .change(K::as_bytes(key.borrow()).as_ref(), put)?
            .is_some())
    }

    /// Sets `key`'s value: the value it replaced, if any.
    pub(crate) fn replace<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<Option<Guard<'_, V>>> {
        if !matches!(self.0, Handle::Overlay { .. }) {
            let Handle::Redb(table) = &mut self.0 else {
                unreachable!("not the overlay");
            };
            return Ok(table.insert(key, value)?.map(Guard::stored));
        }
        let put = Change::Put(V::as_bytes(value.borrow()).as_ref().into());
        let old = self.change(K::as_bytes(key.borrow()).as_ref(), put)?;
        Ok(old.map(Guard::pending))
    }

    /// Removes `key`'s row: whether there was one.
    pub(crate) fn remove<'k>(&mut self, key: impl Borrow<K::SelfType<'k>>) -> Result<bool> {
        if let Handle::Redb(table) = &mut self.0 {
            return Ok(table.remove(key)?.is_some());
        }
        let gone = self.change(K::as_bytes(key.borrow()).as_ref(), Change::REMOVED)?;
        Ok(gone.is_some())
    }

    /// Keeps only the rows for which `keep` holds.
    pub(crate) fn retain(
        &mut self,
        mut keep: impl for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    ) -> Result<()> {
        if let Handle::Redb(table) = &mut self.0 {
            return Ok(table.retain(keep)?);
        }
        let mut gone = Vec::new();
        for row in self.iter()? {
            let (key, value) = row?;
            if !keep(key.value(), value.value()) {
                gone.push(key.bytes());
            }
        }
        for key in gone {
            self.change(&key, Change::REMOVED)?;
        }
        Ok(())
    }

    /// The scratch layer's own changes to this table, as a layer over the ones below.
    fn own(&self) -> Vec<Arc<TableChanges>> {
        match &self.0 {
            Handle::Redb(_) => Vec::new(),
            Handle::Overlay { name, scratch, .. } => RefCell::borrow(scratch)
                .own(name)
                .cloned()
                .into_iter()
                .collect(),
        }
    }

    /// Records `change` of `key` in the scratch layer: the value it replaced, if any.
    fn change(&mut self, key: &[u8], change: Change) -> Result<Option<Arc<[u8]>>> {
        let Handle::Overlay {
            name,
            below,
            scratch,
        } = &self.0
        else {
            unreachable!("only the overlay records changes");
        };
        let old = {
            let scratch = RefCell::borrow(scratch);
            match scratch.own(name).and_then(|own| own.change(key)) {
                Some(Change::Put(value)) => Some(Arc::clone(value)),
                Some(Change::Removed { .. }) => None,
                None => below.get_bytes(key)?.map(|value| value.bytes()),
            }
        };
        // A removal that hides nothing of redb's can go once the changes it hides are merged
        // in: ask redb alone, whose commit under the generation does not change until a drain.
        let change = match change {
            Change::Removed { .. } => Change::Removed {
                masks_base: below.base_holds(key)?,
            },
            put => put,
        };
        let put = matches!(change, Change::Put(_));
        let mut scratch = scratch.borrow_mut();
        let own = scratch.own_mut(name, changes_of::<K, V>);
        Scratch::record(own, key, change, old.is_some());
        // A read of the key in this command now gives what it just wrote.
        debug_assert_eq!(
            scratch
                .own(name)
                .and_then(|own| own.change(key))
                .map(|change| matches!(change, Change::Put(_))),
            Some(put),
            "the scratch layer holds the key's latest change"
        );
        Ok(old)
    }
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Readable<K, V>
    for Writable<'_, K, V>
{
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>> {
        match &self.0 {
            Handle::Redb(table) => Ok(ReadableTable::get(table, key)?.map(Guard::stored)),
            Handle::Overlay {
                name,
                below,
                scratch,
            } => {
                let bytes = K::as_bytes(key.borrow());
                let own = RefCell::borrow(scratch)
                    .own(name)
                    .and_then(|own| own.change(bytes.as_ref()).cloned());
                match own {
                    Some(Change::Put(value)) => Ok(Some(Guard::pending(value))),
                    Some(Change::Removed { .. }) => Ok(None),
                    None => below.get_bytes(bytes.as_ref()),
                }
            }
        }
    }

    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        match &self.0 {
            Handle::Redb(table) => Ok(Rows::stored(ReadableTable::range(table, range)?)),
            Handle::Overlay { below, .. } => below.range_under(range, self.own()),
        }
    }

    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        match &self.0 {
            Handle::Redb(table) => Ok(ReadableTable::last(table)?
                .map(|(key, value)| (Guard::stored(key), Guard::stored(value)))),
            Handle::Overlay { .. } => self.iter()?.next_back().transpose(),
        }
    }

    fn len(&self) -> Result<u64> {
        match &self.0 {
            Handle::Redb(table) => Ok(ReadableTableMetadata::len(table)?),
            Handle::Overlay { below, .. } => Ok(count(below.len()?, counted(&self.own()))),
        }
    }
}
