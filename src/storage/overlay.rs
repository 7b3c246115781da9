//! The overlay: changes to redb's tables that commits made and a drain has not yet written
//! into redb (`docs/design.md`, "Commits").
//!
//! Per table, a layer is a sorted map of changes (a value put, or a tombstone), ordered as redb
//! orders the table's keys (`Key::compare` over their bytes), with the change it made to the
//! table's row count, so `len` is O(1) in the rows and O(layers) in all. A [`Generation`] is an
//! immutable stack of such layers (oldest first), shared by readers: a reader pairs a redb read
//! transaction with the generation current when it began, and neither changes under it. A
//! command writes into a [`Scratch`] layer of its own on top of a generation; a refused or
//! failed command drops it and leaves nothing, an acknowledged one is published as the next
//! generation ([`Generation::with`]). Layers merge as a binary counter does (two of equal size
//! become one), so a generation holds O(log n) layers and each change is merged O(log n)
//! times. A drain writes a generation into redb in one write transaction
//! ([`Generation::drain_into`]); the layers after it stay, their counts relative to the new
//! base.
//!
//! It owns the order and the merge of changes; it never knows what a table means.

// The commit path that publishes and drains generations lands after this layer (issue 51,
// point 3); until then only its tests, which hold it against redb, use it.
#![allow(dead_code)]

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use redb::{Key, Value, WriteTransaction};

use super::tables::{Definition, Guard, MergedRows, ReadOnly, Readable, Row, Rows};
use crate::error::Result;

/// How a table orders its keys' bytes (its key type's `compare`).
type Order = fn(&[u8], &[u8]) -> Ordering;

/// Writes one table's changes into redb (monomorphised for its key and value types, which
/// redb checks when it opens the table).
type Drain = fn(&WriteTransaction, &str, &TableChanges) -> Result<()>;

/// A key's bytes, ordered as its table orders them.
#[derive(Clone)]
pub(crate) struct OrderedKey {
    bytes: Arc<[u8]>,
    order: Order,
}

impl OrderedKey {
    fn new(bytes: &[u8], order: Order) -> Self {
        OrderedKey {
            bytes: bytes.into(),
            order,
        }
    }
}

impl PartialEq for OrderedKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for OrderedKey {}

impl PartialOrd for OrderedKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for OrderedKey {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.order)(&self.bytes, &other.bytes)
    }
}

/// What a layer says of one key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The key holds these value bytes.
    Put(Arc<[u8]>),
    /// The key holds nothing (whatever the layers below or redb say).
    Removed,
}

/// One table's changes in one layer.
#[derive(Clone)]
pub(crate) struct TableChanges {
    order: Order,
    drain: Drain,
    rows: BTreeMap<OrderedKey, Change>,
    /// The rows these changes added to the table's count, less those they removed, relative
    /// to what was below them when they were made.
    counted: i64,
}

impl TableChanges {
    fn new<K: Key + 'static, V: Value + 'static>() -> Self {
        TableChanges {
            order: K::compare,
            drain: drain_table::<K, V>,
            rows: BTreeMap::new(),
            counted: 0,
        }
    }

    fn key(&self, bytes: &[u8]) -> OrderedKey {
        OrderedKey::new(bytes, self.order)
    }

    /// `newer` laid over these changes.
    fn merge(&mut self, newer: &TableChanges) {
        for (key, change) in &newer.rows {
            self.rows.insert(key.clone(), change.clone());
        }
        self.counted += newer.counted;
    }
}

/// Writes `changes` into the table `name` of `txn`.
fn drain_table<K: Key + 'static, V: Value + 'static>(
    txn: &WriteTransaction,
    name: &str,
    changes: &TableChanges,
) -> Result<()> {
    let mut table = Definition::<K, V>::new(name).write(txn)?;
    for (key, change) in &changes.rows {
        match change {
            Change::Put(value) => {
                table.insert(K::from_bytes(&key.bytes), V::from_bytes(value))?;
            }
            Change::Removed => {
                table.remove(K::from_bytes(&key.bytes))?;
            }
        }
    }
    Ok(())
}

/// One layer: the changes of one or more commits, per table.
#[derive(Clone, Default)]
pub(crate) struct Layer {
    tables: HashMap<String, TableChanges>,
}

impl Layer {
    /// How many changes it holds, in every table.
    fn size(&self) -> usize {
        self.tables.values().map(|table| table.rows.len()).sum()
    }

    /// `newer` laid over this layer.
    fn merge(&mut self, newer: &Layer) {
        for (name, changes) in &newer.tables {
            match self.tables.get_mut(name) {
                Some(older) => older.merge(changes),
                None => {
                    self.tables.insert(name.clone(), changes.clone());
                }
            }
        }
    }
}

/// Changes published and not yet drained: an immutable stack of layers, oldest first.
#[derive(Clone, Default)]
pub(crate) struct Generation {
    layers: Vec<Arc<Layer>>,
}

impl Generation {
    /// Whether it holds no change.
    pub(crate) fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// How many layers it holds: O(log n) in the changes.
    pub(crate) fn depth(&self) -> usize {
        self.layers.len()
    }

    /// This generation with `scratch`'s changes published on top: the next generation.
    pub(crate) fn with(&self, scratch: Scratch<'_>) -> Generation {
        let mut layers = self.layers.clone();
        let mut top = Layer {
            tables: scratch.tables,
        };
        if top.tables.values().all(|table| table.rows.is_empty()) {
            return Generation { layers };
        }
        // A binary counter: the new layer swallows every older one no larger than itself.
        while let Some(below) = layers.last() {
            if below.size() > top.size() {
                break;
            }
            let mut merged = (**below).clone();
            merged.merge(&top);
            top = merged;
            layers.pop();
        }
        layers.push(Arc::new(top));
        Generation { layers }
    }

    /// Writes every change into redb in `txn` (the caller commits it), oldest first.
    pub(crate) fn drain_into(&self, txn: &WriteTransaction) -> Result<()> {
        let mut all = Layer::default();
        for layer in &self.layers {
            all.merge(layer);
        }
        let mut names: Vec<&String> = all.tables.keys().collect();
        names.sort();
        for name in names {
            let changes = &all.tables[name];
            (changes.drain)(txn, name, changes)?;
        }
        Ok(())
    }

    /// The layers published after `drained` (a generation this one was built on, now in
    /// redb): what stays over the new base.
    pub(crate) fn after(&self, drained: &Generation) -> Generation {
        let kept = self
            .layers
            .iter()
            .filter(|layer| !drained.layers.iter().any(|gone| Arc::ptr_eq(gone, layer)))
            .cloned()
            .collect();
        Generation { layers: kept }
    }

    /// `table`'s changes in each layer, oldest first.
    fn table<'g>(&'g self, name: &str) -> Vec<&'g TableChanges> {
        self.layers
            .iter()
            .filter_map(|layer| layer.tables.get(name))
            .collect()
    }

    /// The table `definition` as of this generation over `base` (its redb handle, `None`
    /// when redb has no such table yet).
    pub(crate) fn read<'g, K: Key + 'static, V: Value + 'static>(
        &'g self,
        definition: Definition<'_, K, V>,
        base: Option<&'g ReadOnly<K, V>>,
    ) -> Overlaid<'g, K, V> {
        Overlaid {
            base,
            layers: self.table(definition.name()),
        }
    }
}

/// A command's own changes, on top of a generation: dropped when the command is refused or
/// fails, published when it is acknowledged.
#[derive(Default)]
pub(crate) struct Scratch<'g> {
    tables: HashMap<String, TableChanges>,
    below: Option<&'g Generation>,
}

impl<'g> Scratch<'g> {
    /// An empty scratch layer over `below`.
    pub(crate) fn over(below: &'g Generation) -> Self {
        Scratch {
            tables: HashMap::new(),
            below: Some(below),
        }
    }

    /// The table `definition` as of this point of the command, over `base`.
    pub(crate) fn read<'s, K: Key + 'static, V: Value + 'static>(
        &'s self,
        definition: Definition<'_, K, V>,
        base: Option<&'s ReadOnly<K, V>>,
    ) -> Overlaid<'s, K, V> {
        let mut layers = self
            .below
            .map(|below| below.table(definition.name()))
            .unwrap_or_default();
        if let Some(own) = self.tables.get(definition.name()) {
            layers.push(own);
        }
        Overlaid { base, layers }
    }

    /// Sets `key`'s value in `definition`'s table: whether it replaced one.
    pub(crate) fn insert<'k, 'v, K: Key + 'static, V: Value + 'static>(
        &mut self,
        definition: Definition<'_, K, V>,
        base: Option<&ReadOnly<K, V>>,
        key: impl Borrow<K::SelfType<'k>>,
        value: impl Borrow<V::SelfType<'v>>,
    ) -> Result<bool> {
        let key = K::as_bytes(key.borrow());
        let value = V::as_bytes(value.borrow());
        let change = Change::Put(value.as_ref().into());
        self.change(definition, base, key.as_ref(), change)
    }

    /// Removes `key`'s row from `definition`'s table: whether there was one.
    pub(crate) fn remove<'k, K: Key + 'static, V: Value + 'static>(
        &mut self,
        definition: Definition<'_, K, V>,
        base: Option<&ReadOnly<K, V>>,
        key: impl Borrow<K::SelfType<'k>>,
    ) -> Result<bool> {
        let key = K::as_bytes(key.borrow());
        self.change(definition, base, key.as_ref(), Change::Removed)
    }

    /// Records `change` of `key`: whether the key held a value before it.
    fn change<K: Key + 'static, V: Value + 'static>(
        &mut self,
        definition: Definition<'_, K, V>,
        base: Option<&ReadOnly<K, V>>,
        key: &[u8],
        change: Change,
    ) -> Result<bool> {
        let held = self.read(definition, base).holds(key)?;
        let now = matches!(change, Change::Put(_));
        let table = self
            .tables
            .entry(definition.name().to_owned())
            .or_insert_with(TableChanges::new::<K, V>);
        table.counted += i64::from(now) - i64::from(held);
        let key = table.key(key);
        table.rows.insert(key, change);
        Ok(held)
    }
}

/// One table through the overlay: redb's rows (`base`) under the layers' changes.
pub(crate) struct Overlaid<'a, K: Key + 'static, V: Value + 'static> {
    base: Option<&'a ReadOnly<K, V>>,
    /// Oldest first.
    layers: Vec<&'a TableChanges>,
}

impl<K: Key + 'static, V: Value + 'static> Overlaid<'_, K, V> {
    /// The newest change of `key`, if a layer has one.
    fn change(&self, key: &[u8]) -> Option<&Change> {
        let probe = OrderedKey::new(key, K::compare);
        self.layers
            .iter()
            .rev()
            .find_map(|layer| layer.rows.get(&probe))
    }

    /// Whether `key` holds a value.
    fn holds(&self, key: &[u8]) -> Result<bool> {
        match self.change(key) {
            Some(change) => Ok(matches!(change, Change::Put(_))),
            None => match self.base {
                Some(base) => Ok(base.get(K::from_bytes(key))?.is_some()),
                None => Ok(false),
            },
        }
    }

    /// The layers' first (`Forward`) or last change within `lower..upper`, newest winning a
    /// key several hold.
    fn layer_edge(
        &self,
        lower: &Bound<OrderedKey>,
        upper: &Bound<OrderedKey>,
        forward: bool,
    ) -> Option<(OrderedKey, Change)> {
        let mut best: Option<(&OrderedKey, &Change)> = None;
        for layer in &self.layers {
            let mut range = layer.rows.range((lower.clone(), upper.clone()));
            let Some((key, change)) = (if forward {
                range.next()
            } else {
                range.next_back()
            }) else {
                continue;
            };
            // Oldest first: a later layer's change of the same key replaces the earlier one.
            let better = match best {
                None => true,
                Some((held, _)) => match key.cmp(held) {
                    Ordering::Equal => true,
                    Ordering::Less => forward,
                    Ordering::Greater => !forward,
                },
            };
            if better {
                best = Some((key, change));
            }
        }
        best.map(|(key, change)| (key.clone(), change.clone()))
    }
}

impl<'a, K: Key + 'static, V: Value + 'static> Readable<K, V> for Overlaid<'a, K, V> {
    fn get<'k>(&self, key: impl Borrow<K::SelfType<'k>>) -> Result<Option<Guard<'_, V>>> {
        let change = {
            let bytes = K::as_bytes(key.borrow());
            self.change(bytes.as_ref()).cloned()
        };
        match change {
            Some(Change::Put(value)) => Ok(Some(Guard::pending(value))),
            Some(Change::Removed) => Ok(None),
            None => match self.base {
                Some(base) => base.get(key),
                None => Ok(None),
            },
        }
    }

    fn range<'k, KR>(&self, range: impl RangeBounds<KR> + 'k) -> Result<Rows<'_, K, V>>
    where
        KR: Borrow<K::SelfType<'k>> + 'k,
    {
        let encode = |bound: Bound<&KR>| -> Bound<OrderedKey> {
            let key = |key: &KR| OrderedKey::new(K::as_bytes(key.borrow()).as_ref(), K::compare);
            match bound {
                Bound::Included(bound) => Bound::Included(key(bound)),
                Bound::Excluded(bound) => Bound::Excluded(key(bound)),
                Bound::Unbounded => Bound::Unbounded,
            }
        };
        let (lower, upper) = (encode(range.start_bound()), encode(range.end_bound()));
        let base = match self.base {
            Some(base) => Some(base.range::<KR>(range)?),
            None => None,
        };
        if self.layers.is_empty() {
            return Ok(base.unwrap_or_else(Rows::empty));
        }
        Ok(Rows::merged(Merged {
            view: Overlaid {
                base: None,
                layers: self.layers.clone(),
            },
            lower,
            upper,
            base,
            front: None,
            back: None,
            done: false,
        }))
    }

    fn last(&self) -> Result<Option<Row<'_, K, V>>> {
        self.range::<K::SelfType<'_>>(..)?.next_back().transpose()
    }

    fn len(&self) -> Result<u64> {
        let base = match self.base {
            Some(base) => base.len()?,
            None => 0,
        };
        let counted: i64 = self.layers.iter().map(|layer| layer.counted).sum();
        let len = i128::from(base) + i128::from(counted);
        debug_assert!(len >= 0, "a table holds no fewer than 0 rows");
        Ok(u64::try_from(len).unwrap_or(0))
    }
}

/// A range through the overlay: redb's rows merged with the layers' changes, in key order from
/// either end.
pub(crate) struct Merged<'a, K: Key + 'static, V: Value + 'static> {
    /// The layers alone.
    view: Overlaid<'a, K, V>,
    /// What is left of the range for the layers: it narrows as rows are taken from each end.
    lower: Bound<OrderedKey>,
    upper: Bound<OrderedKey>,
    /// redb's rows in the range.
    base: Option<Rows<'static, K, V>>,
    /// A row of redb's taken from the front (or back) and not yet yielded.
    front: Option<Row<'static, K, V>>,
    back: Option<Row<'static, K, V>>,
    done: bool,
}

impl<'a, K: Key + 'static, V: Value + 'static> Merged<'a, K, V> {
    /// The next row of redb's from the front (`forward`) or the back, peeked: it stays in its
    /// slot until taken. The last row left may sit in the other end's slot.
    fn peek_base(&mut self, forward: bool) -> Result<Option<&Row<'static, K, V>>> {
        let (own, other) = match forward {
            true => (&mut self.front, &mut self.back),
            false => (&mut self.back, &mut self.front),
        };
        if own.is_none() {
            let next = match &mut self.base {
                Some(rows) if forward => rows.next().transpose()?,
                Some(rows) => rows.next_back().transpose()?,
                None => None,
            };
            *own = next.or_else(|| other.take());
        }
        Ok(own.as_ref())
    }

    fn step(&mut self, forward: bool) -> Result<Option<Row<'static, K, V>>> {
        loop {
            let base_key: Option<OrderedKey> = self
                .peek_base(forward)?
                .map(|(key, _)| OrderedKey::new(&key.bytes(), K::compare));
            let change = self.view.layer_edge(&self.lower, &self.upper, forward);
            let take_base = |this: &mut Self| match forward {
                true => this.front.take(),
                false => this.back.take(),
            };
            let (key, from_layer) = match (base_key, change) {
                (None, None) => return Ok(None),
                (Some(key), None) => (key, None),
                (None, Some((key, change))) => (key, Some(change)),
                (Some(stored), Some((key, change))) => {
                    let order = stored.cmp(&key);
                    let base_first = match forward {
                        true => order == Ordering::Less,
                        false => order == Ordering::Greater,
                    };
                    if base_first {
                        (stored, None)
                    } else {
                        if order == Ordering::Equal {
                            // The layer's change replaces redb's row.
                            take_base(self);
                        }
                        (key, Some(change))
                    }
                }
            };
            let past = Bound::Excluded(key.clone());
            match forward {
                true => self.lower = past,
                false => self.upper = past,
            }
            match from_layer {
                None => return Ok(take_base(self)),
                Some(Change::Removed) => continue,
                Some(Change::Put(value)) => {
                    return Ok(Some((Guard::pending(key.bytes), Guard::pending(value))));
                }
            }
        }
    }
}

impl<K: Key + 'static, V: Value + 'static> MergedRows<K, V> for Merged<'_, K, V> {
    fn next_row(&mut self, forward: bool) -> Option<Result<Row<'static, K, V>>> {
        if self.done {
            return None;
        }
        let row = self.step(forward).transpose();
        if matches!(row, Some(Err(_)) | None) {
            self.done = true;
        }
        row
    }
}
