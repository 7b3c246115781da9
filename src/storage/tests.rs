//! The handles against a model: random inserts, replacements and removals through a
//! [`Writable`], then every read (get, ranges both ways with every kind of bound, last, len)
//! through it and, after the commit, through a [`ReadOnly`], compared with a `BTreeMap` of
//! the same rows. The overlay will be held to the same model.

use std::collections::BTreeMap;
use std::ops::Bound;

use redb::backends::InMemoryBackend;
use std::sync::Arc;

use redb::{Database, ReadableDatabase};

use super::{Commit, Definition, Generation, Readable, Reader, Writer};

const ROWS: Definition<&[u8], &[u8]> = Definition::new("storage.test.rows");
const NUMBERS: Definition<u64, u64> = Definition::new("storage.test.numbers");

/// A small deterministic generator (xorshift64*): the same cases on every run.
struct Cases(u64);

impl Cases {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A short key from a small alphabet, so that keys repeat and share prefixes.
    fn key(&mut self) -> Vec<u8> {
        let len = self.below(4) as usize;
        (0..len).map(|_| b'a' + self.below(3) as u8).collect()
    }

    fn bound(&mut self) -> Bound<Vec<u8>> {
        match self.below(3) {
            0 => Bound::Unbounded,
            1 => Bound::Included(self.key()),
            _ => Bound::Excluded(self.key()),
        }
    }
}

fn database() -> Database {
    Database::builder()
        .create_with_backend(InMemoryBackend::new())
        .expect("an in-memory database")
}

fn as_slice(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match bound {
        Bound::Included(key) => Bound::Included(key.as_slice()),
        Bound::Excluded(key) => Bound::Excluded(key.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Whether redb takes the bounds as a range: it refuses a lower bound past the upper.
fn ordered(lower: &Bound<Vec<u8>>, upper: &Bound<Vec<u8>>) -> bool {
    match (lower, upper) {
        (Bound::Included(l) | Bound::Excluded(l), Bound::Included(u) | Bound::Excluded(u)) => {
            l < u || (l == u && matches!((lower, upper), (Bound::Included(_), Bound::Included(_))))
        }
        _ => true,
    }
}

/// Every read of `table` agrees with `model`.
fn reads_agree(
    table: &impl Readable<&'static [u8], &'static [u8]>,
    model: &BTreeMap<Vec<u8>, Vec<u8>>,
    cases: &mut Cases,
) {
    assert_eq!(table.len().expect("len"), model.len() as u64);
    let last = table.last().expect("last");
    assert_eq!(
        last.map(|(key, value)| (key.value().to_vec(), value.value().to_vec())),
        model
            .iter()
            .next_back()
            .map(|(k, v)| (k.clone(), v.clone()))
    );
    for _ in 0..8 {
        let key = cases.key();
        let got = table.get(key.as_slice()).expect("get");
        assert_eq!(
            got.map(|value| value.value().to_vec()),
            model.get(&key).cloned()
        );
        let (lower, upper) = (cases.bound(), cases.bound());
        if !ordered(&lower, &upper) {
            continue;
        }
        let expected: Vec<(Vec<u8>, Vec<u8>)> = model
            .range::<Vec<u8>, _>((lower.clone(), upper.clone()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let read = |backward: bool| -> Vec<(Vec<u8>, Vec<u8>)> {
            let rows = table
                .range::<&[u8]>((as_slice(&lower), as_slice(&upper)))
                .expect("range");
            let row = |row: crate::error::Result<super::Row<'_, &[u8], &[u8]>>| {
                let (key, value) = row.expect("a row");
                (key.value().to_vec(), value.value().to_vec())
            };
            match backward {
                false => rows.map(row).collect(),
                true => rows.rev().map(row).collect(),
            }
        };
        assert_eq!(read(false), expected);
        let mut backward = read(true);
        backward.reverse();
        assert_eq!(backward, expected);
    }
}

#[test]
fn the_handles_read_what_the_model_holds_after_random_writes() {
    for seed in 1..=24u64 {
        let mut cases = Cases(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let db = database();
        let mut model = BTreeMap::new();
        for _commit in 0..4 {
            let txn = db.begin_write().expect("a write");
            {
                let mut table = ROWS.write(&txn).expect("open to write");
                for _ in 0..40 {
                    let key = cases.key();
                    match cases.below(3) {
                        0 => {
                            let removed = table.remove(key.as_slice()).expect("remove");
                            assert_eq!(removed, model.remove(&key).is_some());
                        }
                        1 => {
                            let value = cases.next().to_le_bytes().to_vec();
                            let replaced = table
                                .replace(key.as_slice(), value.as_slice())
                                .expect("replace")
                                .map(|old| old.value().to_vec());
                            assert_eq!(replaced, model.insert(key, value));
                        }
                        _ => {
                            let value = vec![b'v'; cases.below(5) as usize];
                            let replaced = table
                                .insert(key.as_slice(), value.as_slice())
                                .expect("insert");
                            assert_eq!(replaced, model.insert(key, value).is_some());
                        }
                    }
                }
                reads_agree(&table, &model, &mut cases);
            }
            txn.commit().expect("commit");
            let read = db.begin_read().expect("a read");
            reads_agree(&ROWS.read(&read).expect("open to read"), &model, &mut cases);
        }
    }
}

#[test]
fn retain_keeps_exactly_the_rows_it_is_told_to() {
    let db = database();
    let txn = db.begin_write().expect("a write");
    {
        let mut table = NUMBERS.write(&txn).expect("open to write");
        for n in 0..100u64 {
            table.insert(n, n * n).expect("insert");
        }
        table
            .retain(|key, value| key % 3 == 0 && value < 2_500)
            .expect("retain");
        let kept: Vec<u64> = table
            .iter()
            .expect("iter")
            .map(|row| row.expect("a row").0.value())
            .collect();
        assert_eq!(kept, (0..50).filter(|n| n % 3 == 0).collect::<Vec<_>>());
        assert_eq!(table.len().expect("len"), 17);
    }
    txn.commit().expect("commit");
}

#[test]
fn a_missing_table_reads_as_absent_and_is_created_only_by_a_write() {
    let db = database();
    let read = db.begin_read().expect("a read");
    assert!(ROWS.read_if_present(&read).expect("open").is_none());
    assert!(
        ROWS.read(&read).is_err(),
        "a missing table is an error to read"
    );
    drop(read);
    let txn = db.begin_write().expect("a write");
    assert!(!ROWS.exists_in(&txn).expect("exists"));
    ROWS.create(&txn).expect("create");
    assert!(ROWS.exists_in(&txn).expect("exists"));
    txn.commit().expect("commit");
    let read = db.begin_read().expect("a read");
    let table = ROWS.read_if_present(&read).expect("open").expect("created");
    assert_eq!(table.len().expect("len"), 0);
    assert_eq!(
        super::table_names(&read).expect("names"),
        ["storage.test.rows"]
    );
    let (rows, _) = super::table_stats(&read, "storage.test.rows").expect("stats");
    assert_eq!(rows, 0);
}

/// The overlay against redb as the oracle: the same random commands (inserts, replacements,
/// removals, retains; some refused) go to one database directly, each in a write transaction
/// of its own that a refusal aborts, and to another through a [`Writer`] over the overlay,
/// whose scratch layer is published as the next generation (a refusal drops it), with drains
/// into that database now and then. After each command every read through the overlay, of the
/// generation alone and of a command's writer still open, gives redb's answer.
#[test]
fn the_overlay_reads_as_redb_through_commands_refusals_and_drains() {
    for seed in 1..=16u64 {
        let mut cases = Cases(seed.wrapping_mul(0xD6E8_FEB8_6659_FD93) | 1);
        let oracle = database();
        let drained = database();
        let mut generation = Generation::default();
        let mut drains = 0;
        for _command in 0..120 {
            let refused = cases.below(5) == 0;
            let txn = oracle.begin_write().expect("a write");
            let base = Commit::shared(drained.begin_read().expect("a read"));
            let writer = Writer::overlay(Reader::over(Arc::clone(&base), generation.clone()));
            {
                let mut table = ROWS.write(&txn).expect("open to write");
                let mut overlay = ROWS.write(&writer).expect("open the overlay to write");
                for _ in 0..cases.below(6) {
                    let key = cases.key();
                    match cases.below(7) {
                        0 | 1 => {
                            let in_redb = table.remove(key.as_slice()).expect("remove");
                            let in_overlay = overlay.remove(key.as_slice()).expect("remove");
                            assert_eq!(in_overlay, in_redb, "remove {key:?}");
                        }
                        2 => {
                            let value = vec![b'r'; cases.below(3) as usize];
                            let in_redb = table
                                .replace(key.as_slice(), value.as_slice())
                                .expect("replace")
                                .map(|old| old.value().to_vec());
                            let in_overlay = overlay
                                .replace(key.as_slice(), value.as_slice())
                                .expect("replace")
                                .map(|old| old.value().to_vec());
                            assert_eq!(in_overlay, in_redb, "replace {key:?}");
                        }
                        3 => {
                            let cut = cases.key();
                            let keep = |key: &[u8], _: &[u8]| key < cut.as_slice();
                            table.retain(keep).expect("retain");
                            overlay.retain(keep).expect("retain");
                        }
                        _ => {
                            let value = vec![cases.below(250) as u8; cases.below(4) as usize];
                            let in_redb = table
                                .insert(key.as_slice(), value.as_slice())
                                .expect("insert");
                            let in_overlay = overlay
                                .insert(key.as_slice(), value.as_slice())
                                .expect("insert");
                            assert_eq!(in_overlay, in_redb, "insert {key:?}");
                        }
                    }
                }
                // Mid-command, the writer reads as the transaction does.
                reads_agree_with(&table, &overlay, &mut cases);
            }
            if refused {
                txn.abort().expect("abort");
                drop(writer);
            } else {
                txn.commit().expect("commit");
                let scratch = writer.into_scratch().expect("an overlay's changes");
                generation = generation.with(scratch);
            }
            assert!(generation.depth() <= 12, "layers merge as a binary counter");
            let read = oracle.begin_read().expect("a read");
            let model = rows_of(ROWS.read_if_present(&read).expect("open").as_ref());
            let reader = Reader::over(Arc::clone(&base), generation.clone());
            match ROWS.read_if_present(&reader).expect("open") {
                Some(table) => reads_agree(&table, &model, &mut cases),
                None => assert!(model.is_empty(), "the overlay lost a table"),
            }
            drop(reader);
            drop(base);
            if cases.below(10) == 0 {
                let txn = drained.begin_write().expect("a drain");
                generation.drain_into(&txn).expect("drain");
                txn.commit().expect("commit the drain");
                generation = generation.after(&generation);
                drains += 1;
                let read = drained.begin_read().expect("a read");
                let after = rows_of(ROWS.read_if_present(&read).expect("open").as_ref());
                assert_eq!(after, model, "a drain writes what was read");
            }
        }
        assert!(drains > 0, "seed {seed} drained");
    }
}

/// Every row of `table`, `None` being an absent table.
fn rows_of(
    table: Option<&super::ReadOnly<&'static [u8], &'static [u8]>>,
) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let Some(table) = table else {
        return BTreeMap::new();
    };
    table
        .iter()
        .expect("iter")
        .map(|row| {
            let (key, value) = row.expect("a row");
            (key.value().to_vec(), value.value().to_vec())
        })
        .collect()
}

/// `overlay` reads as `table` does, both held to the rows `table` walks.
fn reads_agree_with(
    table: &impl Readable<&'static [u8], &'static [u8]>,
    overlay: &impl Readable<&'static [u8], &'static [u8]>,
    cases: &mut Cases,
) {
    let model: BTreeMap<Vec<u8>, Vec<u8>> = table
        .iter()
        .expect("iter")
        .map(|row| {
            let (key, value) = row.expect("a row");
            (key.value().to_vec(), value.value().to_vec())
        })
        .collect();
    reads_agree(overlay, &model, cases);
}

/// Keys ordered by their type, not their bytes: `u64`s stored little-endian walk through the
/// overlay in numeric order, as redb walks them, from both ends and from within.
#[test]
fn the_overlay_orders_keys_as_their_type_does() {
    fn walk<'a>(
        rows: impl Iterator<Item = crate::error::Result<super::Row<'a, u64, u64>>>,
    ) -> Vec<(u64, u64)> {
        rows.map(|row| {
            let (key, value) = row.expect("a row");
            (key.value(), value.value())
        })
        .collect()
    }
    let oracle = database();
    let drained = database();
    let mut generation = Generation::default();
    let mut cases = Cases(0x5EED);
    for command in 0..200u64 {
        let txn = oracle.begin_write().expect("a write");
        let base = Commit::shared(drained.begin_read().expect("a read"));
        let writer = Writer::overlay(Reader::over(Arc::clone(&base), generation.clone()));
        {
            let mut table = NUMBERS.write(&txn).expect("open to write");
            let mut overlay = NUMBERS.write(&writer).expect("open the overlay");
            for _ in 0..4 {
                // Keys that differ in their high bytes, where byte order and number order part.
                let key = cases.below(64) << (8 * cases.below(3));
                if cases.below(4) == 0 {
                    table.remove(key).expect("remove");
                    overlay.remove(key).expect("remove");
                } else {
                    table.insert(key, command).expect("insert");
                    overlay.insert(key, command).expect("insert");
                }
            }
        }
        txn.commit().expect("commit");
        generation = generation.with(writer.into_scratch().expect("changes"));
        let read = oracle.begin_read().expect("a read");
        let expected = NUMBERS.read(&read).expect("open");
        let overlay = NUMBERS
            .read(&Reader::over(Arc::clone(&base), generation.clone()))
            .expect("open");
        let from = cases.below(64) << 8;
        let all = (Bound::Unbounded, Bound::Unbounded);
        for (bounds, name) in [
            (all, "all"),
            ((Bound::Included(from), Bound::Unbounded), "from"),
        ] {
            let want = walk(expected.range::<u64>(bounds).expect("range"));
            assert_eq!(
                walk(overlay.range::<u64>(bounds).expect("range")),
                want,
                "{name}"
            );
            let mut back = walk(overlay.range::<u64>(bounds).expect("range").rev());
            back.reverse();
            assert_eq!(back, want, "{name}, backward");
        }
        assert_eq!(overlay.len().expect("len"), expected.len().expect("len"));
        drop(overlay);
        drop(base);
        if command % 37 == 36 {
            let txn = drained.begin_write().expect("a drain");
            generation.drain_into(&txn).expect("drain");
            txn.commit().expect("commit the drain");
            generation = Generation::default();
        }
    }
}
