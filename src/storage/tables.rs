//! Typed table handles: a [`Definition`] names a table and its key and value types, and opens
//! it in a read transaction ([`ReadOnly`]) or a write transaction ([`Writable`]); both read
//! through [`Readable`].

use std::borrow::Borrow;
use std::marker::PhantomData;
use std::ops::RangeBounds;
use std::sync::Arc;

use redb::{
    AccessGuard, Key, ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata,
    TableDefinition, TableError, Value, WriteTransaction,
};

use crate::error::Result;

/// A table's name and the types of its keys and values. Keys are ordered as `K` orders
/// them (`K::compare` over their bytes).
pub(crate) struct Definition<'n, K: Key + 'static, V: Value + 'static> {
    name: &'n str,
    types: PhantomData<(K, V)>,
}

impl<K: Key + 'static, V: Value + 'static> Clone for Definition<'_, K, V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Key + 'static, V: Value + 'static> Copy for Definition<'_, K, V> {}

impl<'n, K: Key + 'static, V: Value + 'static> Definition<'n, K, V> {
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

    /// The table as of `txn`; one that does not exist is an error.
    pub(crate) fn read(&self, txn: &ReadTransaction) -> Result<ReadOnly<K, V>> {
        Ok(ReadOnly(txn.open_table(self.redb())?))
    }

    /// The table as of `txn`, `None` when it does not exist.
    pub(crate) fn read_if_present(&self, txn: &ReadTransaction) -> Result<Option<ReadOnly<K, V>>> {
        match txn.open_table(self.redb()) {
            Ok(table) => Ok(Some(ReadOnly(table))),
            Err(TableError::TableDoesNotExist(_)) => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// The table in the write `txn`, created empty if it does not exist.
    pub(crate) fn write<'t>(&self, txn: &'t WriteTransaction) -> Result<Writable<'t, K, V>> {
        Ok(Writable(txn.open_table(self.redb())?))
    }

    /// Creates the table in `txn` if it does not exist, leaving its rows as they are.
    pub(crate) fn create(&self, txn: &WriteTransaction) -> Result<()> {
        self.write(txn).map(drop)
    }

    /// Whether the table exists in the write `txn`.
    pub(crate) fn exists_in(&self, txn: &WriteTransaction) -> Result<bool> {
        Ok(super::table_names_in(txn)?
            .iter()
            .any(|name| name == self.name))
    }

    /// Deletes the table and its rows from `txn`: whether it existed.
    pub(crate) fn delete(&self, txn: &WriteTransaction) -> Result<bool> {
        Ok(txn.delete_table(self.redb())?)
    }

    /// Gives the table the name of `to` (which must not exist), in `txn`.
    pub(crate) fn rename<W: Value + 'static>(
        &self,
        txn: &WriteTransaction,
        to: Definition<'_, K, W>,
    ) -> Result<()> {
        Ok(txn.rename_table(self.redb(), to.redb())?)
    }
}

/// A value (or key) as a table holds it: borrowed from redb's pages, or a change the overlay
/// holds.
pub(crate) struct Guard<'a, T: Value + 'static>(Held<'a, T>);

enum Held<'a, T: Value + 'static> {
    Stored(AccessGuard<'a, T>),
    Pending(Arc<[u8]>),
}

impl<T: Value + 'static> Guard<'_, T> {
    /// A value of the overlay's.
    pub(super) fn pending(bytes: Arc<[u8]>) -> Self {
        Guard(Held::Pending(bytes))
    }

    /// The value, decoded.
    pub(crate) fn value(&self) -> T::SelfType<'_> {
        match &self.0 {
            Held::Stored(guard) => guard.value(),
            Held::Pending(bytes) => T::from_bytes(bytes),
        }
    }

    /// The value's bytes, as the table stores them.
    pub(super) fn bytes(&self) -> Vec<u8> {
        match &self.0 {
            Held::Stored(guard) => T::as_bytes(&guard.value()).as_ref().to_vec(),
            Held::Pending(bytes) => bytes.to_vec(),
        }
    }
}

fn stored<T: Value + 'static>(guard: AccessGuard<'_, T>) -> Guard<'_, T> {
    Guard(Held::Stored(guard))
}

/// A row: its key and its value.
pub(crate) type Row<'a, K, V> = (Guard<'a, K>, Guard<'a, V>);

/// Rows merged from more than one source (the overlay's), taken from the front (`forward`) or
/// the back.
pub(super) trait MergedRows<K: Key + 'static, V: Value + 'static> {
    /// The next row from that end; its stored rows keep their transaction alive.
    fn next_row(&mut self, forward: bool) -> Option<Result<Row<'static, K, V>>>;
}

/// The rows of a range, in key order forward (`next`) or backward (`next_back`).
pub(crate) struct Rows<'a, K: Key + 'static, V: Value + 'static>(Walk<'a, K, V>);

// redb's range is walked on every read path (a segment's lookup opens one): boxed, it would
// cost an allocation per range; the rare merged walk is boxed instead.
#[allow(clippy::large_enum_variant)]
enum Walk<'a, K: Key + 'static, V: Value + 'static> {
    Stored(redb::Range<'a, K, V>),
    Merged(Box<dyn MergedRows<K, V> + 'a>),
    Empty,
}

impl<'a, K: Key + 'static, V: Value + 'static> Rows<'a, K, V> {
    /// No rows.
    pub(super) fn empty() -> Self {
        Rows(Walk::Empty)
    }

    /// redb's rows merged with the overlay's changes.
    pub(super) fn merged(merged: impl MergedRows<K, V> + 'a) -> Self {
        Rows(Walk::Merged(Box::new(merged)))
    }

    fn stored(
        row: std::result::Result<(AccessGuard<'a, K>, AccessGuard<'a, V>), redb::StorageError>,
    ) -> Result<Row<'a, K, V>> {
        let (key, value) = row?;
        Ok((stored(key), stored(value)))
    }
}

impl<'a, K: Key + 'static, V: Value + 'static> Iterator for Rows<'a, K, V> {
    type Item = Result<Row<'a, K, V>>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Stored(range) => range.next().map(Rows::stored),
            Walk::Merged(merged) => merged.next_row(true),
            Walk::Empty => None,
        }
    }
}

impl<K: Key + 'static, V: Value + 'static> DoubleEndedIterator for Rows<'_, K, V> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Stored(range) => range.next_back().map(Rows::stored),
            Walk::Merged(merged) => merged.next_row(false),
            Walk::Empty => None,
        }
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
pub(crate) trait Readable<K: Key + 'static, V: Value + 'static> {
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
    fn last(&self) -> Result<Option<Row<'_, K, V>>>;

    /// How many rows the table holds (as redb counts them beside the table's root).
    fn len(&self) -> Result<u64>;
}

/// A table opened in a read transaction: its rows as of that commit. Its rows and ranges
/// keep the transaction alive, so they may outlive the handle.
pub(crate) struct ReadOnly<K: Key + 'static, V: Value + 'static>(ReadOnlyTable<K, V>);

impl<K: Key + 'static, V: Value + 'static> ReadOnly<K, V> {
    /// [`Readable::range`], its rows independent of this handle's lifetime (they keep the
    /// transaction alive): the inherent method, which a call on a `ReadOnly` finds first.
    pub(crate) fn range<'k, KR>(
        &self,
        range: impl RangeBounds<KR> + 'k,
    ) -> Result<Rows<'static, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        Ok(Rows(Walk::Stored(self.0.range(range)?)))
    }
}

impl<K: Key + 'static, V: Value + 'static> Readable<K, V> for ReadOnly<K, V> {
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>> {
        Ok(ReadableTable::get(&self.0, key)?.map(stored))
    }

    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        ReadOnly::range(self, range)
    }

    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        Ok(ReadableTable::last(&self.0)?.map(|(key, value)| (stored(key), stored(value))))
    }

    fn len(&self) -> Result<u64> {
        Ok(ReadableTableMetadata::len(&self.0)?)
    }
}

/// A table opened in a write transaction: its rows as of this point of the write.
pub(crate) struct Writable<'t, K: Key + 'static, V: Value + 'static>(redb::Table<'t, K, V>);

impl<K: Key + 'static, V: Value + 'static> Writable<'_, K, V> {
    /// Sets `key`'s value: whether it replaced one.
    pub(crate) fn insert<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<bool> {
        Ok(self.0.insert(key, value)?.is_some())
    }

    /// Sets `key`'s value: the value it replaced, if any.
    pub(crate) fn replace<'k, 'v>(
        &mut self,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<Option<Guard<'_, V>>> {
        Ok(self.0.insert(key, value)?.map(stored))
    }

    /// Removes `key`'s row: whether there was one.
    pub(crate) fn remove<'k>(&mut self, key: impl Borrow<K::SelfType<'k>>) -> Result<bool> {
        Ok(self.0.remove(key)?.is_some())
    }

    /// Keeps only the rows for which `keep` holds.
    pub(crate) fn retain(
        &mut self,
        keep: impl for<'f> FnMut(K::SelfType<'f>, V::SelfType<'f>) -> bool,
    ) -> Result<()> {
        Ok(self.0.retain(keep)?)
    }
}

impl<K: Key + 'static, V: Value + 'static> Readable<K, V> for Writable<'_, K, V> {
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>> {
        Ok(ReadableTable::get(&self.0, key)?.map(stored))
    }

    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        Ok(Rows(Walk::Stored(ReadableTable::range(&self.0, range)?)))
    }

    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        Ok(ReadableTable::last(&self.0)?.map(|(key, value)| (stored(key), stored(value))))
    }

    fn len(&self) -> Result<u64> {
        Ok(ReadableTableMetadata::len(&self.0)?)
    }
}
