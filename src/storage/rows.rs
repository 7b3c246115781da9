//! What a read of a table hands out: values ([`Guard`]), rows ([`Row`]) and ranges of rows
//! ([`Rows`]), from redb's pages or from the overlay's changes.

use std::sync::Arc;

use redb::{AccessGuard, Key, Value};

use crate::error::Result;

/// A value (or key) as a table holds it: borrowed from redb's pages, or a change the overlay
/// holds.
pub(crate) struct Guard<'a, T: Value + Send + Sync + 'static>(Held<'a, T>);

enum Held<'a, T: Value + Send + Sync + 'static> {
    Stored(AccessGuard<'a, T>),
    Pending(Arc<[u8]>),
}

impl<'a, T: Value + Send + Sync + 'static> Guard<'a, T> {
    /// A value of redb's.
    pub(super) fn stored(guard: AccessGuard<'a, T>) -> Self {
        Guard(Held::Stored(guard))
    }

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
    pub(super) fn bytes(&self) -> Arc<[u8]> {
        match &self.0 {
            Held::Stored(guard) => T::as_bytes(&guard.value()).as_ref().into(),
            Held::Pending(bytes) => Arc::clone(bytes),
        }
    }
}

impl<T: Key + Send + Sync + 'static> Guard<'_, T> {
    /// How this key stands to the key bytes `other`, in its type's order.
    pub(super) fn compare(&self, other: &[u8]) -> std::cmp::Ordering {
        match &self.0 {
            Held::Stored(guard) => T::compare(T::as_bytes(&guard.value()).as_ref(), other),
            Held::Pending(bytes) => T::compare(bytes, other),
        }
    }
}

/// A row: its key and its value.
pub(crate) type Row<'a, K, V> = (Guard<'a, K>, Guard<'a, V>);

/// Rows merged from more than one source (the overlay's), taken from the front (`forward`) or
/// the back.
pub(super) trait MergedRows<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    /// The next row from that end; its stored rows keep their transaction alive.
    fn next_row(&mut self, forward: bool) -> Option<Result<Row<'static, K, V>>>;
}

/// The rows of a range, in key order forward (`next`) or backward (`next_back`).
pub(crate) struct Rows<'a, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static>(
    Walk<'a, K, V>,
);

// redb's range is walked on every read path (a segment's lookup opens one): boxed, it would
// cost an allocation per range; the rarer merged walk is boxed instead.
#[allow(clippy::large_enum_variant)]
enum Walk<'a, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    Stored(redb::Range<'a, K, V>),
    Merged(Box<dyn MergedRows<K, V> + 'a>),
    Empty,
}

impl<'a, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Rows<'a, K, V> {
    /// redb's rows.
    pub(super) fn stored(range: redb::Range<'a, K, V>) -> Self {
        Rows(Walk::Stored(range))
    }

    /// No rows.
    pub(super) fn empty() -> Self {
        Rows(Walk::Empty)
    }

    /// redb's rows merged with the overlay's changes.
    pub(super) fn merged(merged: impl MergedRows<K, V> + 'a) -> Self {
        Rows(Walk::Merged(Box::new(merged)))
    }

    fn row(
        row: std::result::Result<(AccessGuard<'a, K>, AccessGuard<'a, V>), redb::StorageError>,
    ) -> Result<Row<'a, K, V>> {
        let (key, value) = row?;
        Ok((Guard::stored(key), Guard::stored(value)))
    }
}

impl<'a, K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Iterator
    for Rows<'a, K, V>
{
    type Item = Result<Row<'a, K, V>>;

    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Stored(range) => range.next().map(Rows::row),
            Walk::Merged(merged) => merged.next_row(true),
            Walk::Empty => None,
        }
    }
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> DoubleEndedIterator
    for Rows<'_, K, V>
{
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Walk::Stored(range) => range.next_back().map(Rows::row),
            Walk::Merged(merged) => merged.next_row(false),
            Walk::Empty => None,
        }
    }
}
