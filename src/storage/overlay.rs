//! The overlay: changes to redb's tables that commits made and a drain has not yet written
//! into redb (`docs/design.md`, "Commits").
//!
//! Per table, a layer is a sorted map of changes (a value put, or a tombstone), ordered as redb
//! orders the table's keys (`Key::compare` over their bytes), with the change it made to the
//! table's row count, so `len` is O(1) in the rows and O(layers) in all. A [`Generation`] is an
//! immutable stack of such layers (oldest first), shared by readers: a reader pairs a redb read
//! transaction with the generation current when it began, and neither changes under it. A
//! command writes into a [`Scratch`] layer of its own on top of a generation; a refused or
//! failed command drops it, an acknowledged one is published as the next generation
//! ([`Generation::with`]). Layers merge as a binary counter does (two of equal size become
//! one), so a generation holds O(log n) layers and each change is merged O(log n) times. A
//! drain writes a generation into redb in one write transaction ([`Generation::drain_into`]);
//! the layers after it stay, their counts relative to the new base.
//!
//! It owns the order and the merge of changes; it never knows what a table means, nor opens
//! one (`tables.rs` hands each table's changes the function that drains them).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use super::names::ByName;

use redb::{Key, Value, WriteTransaction};

use super::rows::{Guard, MergedRows, Row, Rows};
use crate::error::Result;

/// How a table orders its keys' bytes (its key type's `compare`).
pub(super) type Order = fn(&[u8], &[u8]) -> Ordering;

/// Writes one table's changes into redb (monomorphised for its key and value types, which
/// redb checks when it opens the table).
pub(super) type Drain = fn(&WriteTransaction, &str, &TableChanges) -> Result<()>;

/// A key's bytes, ordered as its table orders them.
#[derive(Clone)]
pub(super) struct OrderedKey {
    bytes: Arc<[u8]>,
    order: Order,
}

impl OrderedKey {
    pub(super) fn new(bytes: &[u8], order: Order) -> Self {
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
pub(super) enum Change {
    /// The key holds these value bytes.
    Put(Arc<[u8]>),
    /// The key holds nothing (whatever the layers below or redb say). `masks_base`: redb's
    /// commit under the generation holds the key, so this change must reach it; when it does
    /// not, the change only hides older layers' changes, and goes once those are merged in
    /// (a row inserted and removed between two drains leaves nothing for a scan to step over).
    Removed { masks_base: bool },
}

impl Change {
    /// A removal not yet told whether redb holds its key: kept until drained.
    pub(super) const REMOVED: Change = Change::Removed { masks_base: true };
}

/// One table's changes in one layer.
#[derive(Clone)]
pub(super) struct TableChanges {
    order: Order,
    drain: Drain,
    rows: BTreeMap<OrderedKey, Change>,
    /// The rows these changes added to the table's count, less those they removed, relative
    /// to what was below them when they were made.
    counted: i64,
}

impl TableChanges {
    pub(super) fn new(order: Order, drain: Drain) -> Self {
        TableChanges {
            order,
            drain,
            rows: BTreeMap::new(),
            counted: 0,
        }
    }

    /// Each change, in key order.
    pub(super) fn changes(&self) -> impl Iterator<Item = (&[u8], &Change)> {
        self.rows.iter().map(|(key, change)| (&*key.bytes, change))
    }

    /// The rows these changes add to the table's count (less those they remove).
    pub(super) fn counted(&self) -> i64 {
        self.counted
    }

    /// The change of `key`, if any.
    pub(super) fn change(&self, key: &[u8]) -> Option<&Change> {
        self.rows.get(&OrderedKey::new(key, self.order))
    }

    /// `newer` laid over these changes.
    fn merge(&mut self, newer: &TableChanges) {
        for (key, change) in &newer.rows {
            self.rows.insert(key.clone(), change.clone());
        }
        self.counted += newer.counted;
        debug_assert!(
            self.rows.len() >= newer.rows.len(),
            "a merge keeps every change of the newer layer"
        );
    }

    /// Drops each removal that hides nothing: of a key redb does not hold, which no layer of
    /// `below` (the layers this one lies over) changes.
    fn prune_removals(&mut self, name: &str, below: &[Arc<Layer>]) {
        let counted = self.counted;
        self.rows.retain(|key, change| match change {
            Change::Removed { masks_base: false } => below.iter().any(|layer| {
                layer
                    .tables
                    .get(name)
                    .is_some_and(|older| older.rows.contains_key(key))
            }),
            _ => true,
        });
        // A removal that hides nothing removed no row: the count stands.
        assert_eq!(
            self.counted, counted,
            "pruning removals from {name:?} leaves its row count"
        );
    }

    /// Whether it holds a removal that may hide nothing.
    fn may_prune(&self) -> bool {
        self.rows
            .values()
            .any(|change| matches!(change, Change::Removed { masks_base: false }))
    }

    /// `older` laid under these changes: its changes of the keys these leave alone.
    fn absorb_older(&mut self, older: &TableChanges) {
        for (key, change) in &older.rows {
            if !self.rows.contains_key(key) {
                self.rows.insert(key.clone(), change.clone());
            }
        }
        self.counted += older.counted;
        debug_assert!(
            self.rows.len() >= older.rows.len(),
            "absorbing an older layer keeps a change of each of its keys"
        );
    }
}

/// The newest change of `key` in `layers` (oldest first), if one has it.
pub(super) fn newest_change<'l>(layers: &'l [Arc<TableChanges>], key: &[u8]) -> Option<&'l Change> {
    let newest = layers.last()?;
    // One probe for every layer: they order the table's keys alike.
    let probe = OrderedKey::new(key, newest.order);
    layers.iter().rev().find_map(|layer| layer.rows.get(&probe))
}

/// What `layers` added to a table's count.
pub(super) fn counted(layers: &[Arc<TableChanges>]) -> i64 {
    layers.iter().map(|layer| layer.counted).sum()
}

/// One layer: the changes of one or more commits, per table. A table with no change here
/// but an entry was created in it.
#[derive(Clone, Default)]
pub(super) struct Layer {
    tables: ByName<Arc<TableChanges>>,
}

impl Layer {
    /// How many changes it holds, in every table.
    fn size(&self) -> usize {
        self.tables.values().map(|table| table.rows.len()).sum()
    }

    /// What its changes add to the row counts of every table together.
    #[cfg(debug_assertions)]
    fn counted(&self) -> i64 {
        self.tables.values().map(|table| table.counted).sum()
    }

    /// `older` laid under this layer, which is newer: what a merge of the two would give,
    /// copying only the older layer's changes (this one's tables are the caller's own, so
    /// they change in place).
    fn absorb_older(&mut self, older: &Layer) {
        for (name, changes) in &older.tables {
            match self.tables.get_mut(name) {
                Some(newer) => Arc::make_mut(newer).absorb_older(changes),
                None => {
                    self.tables.insert(name.clone(), Arc::clone(changes));
                }
            }
        }
    }

    /// Drops each removal of this layer that hides nothing from the layers `below` it or
    /// from redb ([`TableChanges::prune_removals`]).
    fn prune_removals(&mut self, below: &[Arc<Layer>]) {
        for (name, changes) in &mut self.tables {
            if changes.may_prune() {
                Arc::make_mut(changes).prune_removals(name, below);
            }
        }
    }

    /// `newer` laid over this layer.
    fn merge(&mut self, newer: &Layer) {
        for (name, changes) in &newer.tables {
            match self.tables.get_mut(name) {
                Some(older) => Arc::make_mut(older).merge(changes),
                None => {
                    self.tables.insert(name.clone(), Arc::clone(changes));
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
    pub(crate) fn with(&self, scratch: Scratch) -> Generation {
        let mut layers = self.layers.clone();
        let Scratch { below, tables } = scratch;
        // Let go of the generation the command read, so that its tables are the new layer's
        // alone once published: they change in place as it swallows older layers.
        drop(below);
        if tables.is_empty() {
            return Generation { layers };
        }
        // What the command changed, to check that the next generation reads it back.
        #[cfg(debug_assertions)]
        let published = tables.clone();
        let mut top = Layer { tables };
        // Publishing moves changes between layers, never adds or loses a counted row.
        #[cfg(debug_assertions)]
        let counted_before = self.counted() + top.counted();
        // A binary counter: the new layer swallows every older one no larger than itself,
        // each older change copied in once (the newer ones stay where they are).
        while let Some(below) = layers.last() {
            if below.size() > top.size() {
                break;
            }
            top.absorb_older(below);
            layers.pop();
        }
        top.prune_removals(&layers);
        layers.push(Arc::new(top));
        let next = Generation { layers };
        #[cfg(debug_assertions)]
        {
            debug_assert_eq!(
                next.counted(),
                counted_before,
                "publishing keeps the row counts"
            );
            debug_assert!(
                next.layers
                    .windows(2)
                    .all(|pair| pair[0].size() > pair[1].size()),
                "each layer is smaller than the one below it, as a binary counter's digits"
            );
            debug_assert!(
                published.iter().all(|(name, changes)| {
                    let layers = next.table(name);
                    changes.rows.iter().all(|(key, change)| {
                        match (change, newest_change(&layers, &key.bytes)) {
                            (Change::Put(put), Some(Change::Put(read))) => put == read,
                            // A removal that hid nothing may be pruned: the key still reads empty.
                            (Change::Removed { .. }, None | Some(Change::Removed { .. })) => true,
                            _ => false,
                        }
                    })
                }),
                "the next generation reads back each change the command published"
            );
        }
        next
    }

    /// What its layers add to the row counts of every table together.
    #[cfg(debug_assertions)]
    fn counted(&self) -> i64 {
        self.layers.iter().map(|layer| layer.counted()).sum()
    }

    /// Writes every change into redb in `txn` (the caller commits it), each table's changes
    /// merged, tables in name order.
    pub(crate) fn drain_into(&self, txn: &WriteTransaction) -> Result<()> {
        let mut all = Layer::default();
        for layer in &self.layers {
            all.merge(layer);
        }
        // Each key once, with its newest change: no more changes than the layers hold, and no
        // fewer than the largest of them.
        debug_assert!(
            all.size() <= self.layers.iter().map(|layer| layer.size()).sum::<usize>()
                && all.size()
                    >= self
                        .layers
                        .iter()
                        .map(|layer| layer.size())
                        .max()
                        .unwrap_or(0),
            "a drain writes each changed key of its layers once"
        );
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
    #[cfg(test)]
    pub(crate) fn after(&self, drained: &Generation) -> Generation {
        let kept = self
            .layers
            .iter()
            .filter(|layer| !drained.layers.iter().any(|gone| Arc::ptr_eq(gone, layer)))
            .cloned()
            .collect();
        Generation { layers: kept }
    }

    /// The names of the tables it changes (some perhaps not yet in redb).
    pub(super) fn table_names(&self) -> impl Iterator<Item = &str> {
        self.layers
            .iter()
            .flat_map(|layer| layer.tables.keys().map(String::as_str))
    }

    /// `name`'s changes in each layer, oldest first.
    pub(super) fn table(&self, name: &str) -> Vec<Arc<TableChanges>> {
        self.layers
            .iter()
            .filter_map(|layer| layer.tables.get(name).cloned())
            .collect()
    }
}

/// A command's own changes, on top of a generation: dropped when the command is refused or
/// fails, published when it is acknowledged.
#[derive(Clone, Default)]
pub(crate) struct Scratch {
    below: Generation,
    tables: ByName<Arc<TableChanges>>,
}

impl Scratch {
    /// An empty scratch layer over `below`.
    pub(crate) fn over(below: Generation) -> Self {
        Scratch {
            below,
            tables: ByName::default(),
        }
    }

    /// The generation it lies over.
    pub(crate) fn below(&self) -> &Generation {
        &self.below
    }

    /// `name`'s changes in this layer alone.
    pub(super) fn own(&self, name: &str) -> Option<&Arc<TableChanges>> {
        self.tables.get(name)
    }

    /// `name`'s changes in this layer, made as `new` makes them if it has none yet (its
    /// creation, for a table redb may not have).
    pub(super) fn own_mut(
        &mut self,
        name: &str,
        new: impl FnOnce() -> TableChanges,
    ) -> &mut TableChanges {
        let table = self
            .tables
            .entry(name.to_owned())
            .or_insert_with(|| Arc::new(new()));
        // A range still walking the old changes keeps them: they are copied, not changed.
        Arc::make_mut(table)
    }

    /// Records `change` of `key` in `table`, which held a value before it if `held`.
    pub(super) fn record(table: &mut TableChanges, key: &[u8], change: Change, held: bool) {
        let now = matches!(change, Change::Put(_));
        table.counted += i64::from(now) - i64::from(held);
        let replaced = table.rows.insert(OrderedKey::new(key, table.order), change);
        // The count is right only if `held` agrees with this layer's own last change of the
        // key: a value it put is held, one it removed is not.
        debug_assert!(
            match replaced {
                Some(Change::Put(_)) => held,
                Some(Change::Removed { .. }) => !held,
                None => true,
            },
            "a change of a key counts the row this layer's last change of it left"
        );
    }
}

/// A range through the overlay: redb's rows merged with the layers' changes, in key order from
/// either end.
pub(super) struct Merged<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> {
    /// The layers, oldest first.
    layers: Vec<Arc<TableChanges>>,
    /// What is left of the range for the layers: it narrows as rows are taken from each end.
    lower: Bound<OrderedKey>,
    upper: Bound<OrderedKey>,
    /// redb's rows in the range.
    base: Rows<'static, K, V>,
    /// A row of redb's taken from the front (or back) and not yet yielded.
    front: Option<Row<'static, K, V>>,
    back: Option<Row<'static, K, V>>,
    done: bool,
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> Merged<K, V> {
    /// `base`'s rows within `lower..upper` (the same bounds, as key bytes) under `layers`.
    pub(super) fn new(
        layers: Vec<Arc<TableChanges>>,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        base: Rows<'static, K, V>,
    ) -> Self {
        let ordered = |bound: Bound<&[u8]>| match bound {
            Bound::Included(key) => Bound::Included(OrderedKey::new(key, K::compare)),
            Bound::Excluded(key) => Bound::Excluded(OrderedKey::new(key, K::compare)),
            Bound::Unbounded => Bound::Unbounded,
        };
        Merged {
            layers,
            lower: ordered(lower),
            upper: ordered(upper),
            base,
            front: None,
            back: None,
            done: false,
        }
    }

    /// The layers' first (`forward`) or last change within what is left of the range, the
    /// newest winning a key several hold.
    fn layer_edge(&self, forward: bool) -> Option<(&OrderedKey, &Change)> {
        let mut best: Option<(&OrderedKey, &Change)> = None;
        let bounds = (self.lower.as_ref(), self.upper.as_ref());
        for layer in &self.layers {
            let mut range = layer.rows.range::<OrderedKey, _>(bounds);
            let edge = if forward {
                range.next()
            } else {
                range.next_back()
            };
            let Some((key, change)) = edge else {
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
        best
    }

    /// The next row of redb's from the front (`forward`) or the back, peeked: it stays in its
    /// slot until taken. The last row left may sit in the other end's slot.
    fn peek_base(&mut self, forward: bool) -> Result<Option<&Row<'static, K, V>>> {
        let (own, other) = match forward {
            true => (&mut self.front, &mut self.back),
            false => (&mut self.back, &mut self.front),
        };
        if own.is_none() {
            let next = match forward {
                true => self.base.next().transpose()?,
                false => self.base.next_back().transpose()?,
            };
            *own = next.or_else(|| other.take());
        }
        Ok(own.as_ref())
    }

    fn take_base(&mut self, forward: bool) -> Option<Row<'static, K, V>> {
        match forward {
            true => self.front.take(),
            false => self.back.take(),
        }
    }

    fn step(&mut self, forward: bool) -> Result<Option<Row<'static, K, V>>> {
        loop {
            // How redb's next row stands to the layers' next change, in the walk's order.
            let base_first = {
                self.peek_base(forward)?;
                let base = match forward {
                    true => self.front.as_ref(),
                    false => self.back.as_ref(),
                };
                match (base, self.layer_edge(forward)) {
                    (None, None) => return Ok(None),
                    (Some(_), None) => Some(true),
                    (None, Some(_)) => Some(false),
                    (Some((stored, _)), Some((key, _))) => match stored.compare(&key.bytes) {
                        Ordering::Less => Some(forward),
                        Ordering::Greater => Some(!forward),
                        Ordering::Equal => None,
                    },
                }
            };
            match base_first {
                // redb's row, with no change to it: what is left of the range for the layers
                // needs no narrowing, no change lies between.
                Some(true) => return Ok(self.take_base(forward)),
                // The layer's change replaces redb's row of the same key.
                None => {
                    self.take_base(forward);
                }
                Some(false) => {}
            }
            let (key, change) = match self.layer_edge(forward) {
                Some((key, change)) => (key.clone(), change.clone()),
                None => unreachable!("a layer's change was found above"),
            };
            let past = Bound::Excluded(key.clone());
            match forward {
                true => self.lower = past,
                false => self.upper = past,
            }
            match change {
                Change::Removed { .. } => continue,
                Change::Put(value) => {
                    return Ok(Some((Guard::pending(key.bytes), Guard::pending(value))));
                }
            }
        }
    }
}

impl<K: Key + Send + Sync + 'static, V: Value + Send + Sync + 'static> MergedRows<K, V>
    for Merged<K, V>
{
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
