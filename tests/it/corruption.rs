//! Corruption is found, not trusted: bits flipped in a closed log file make opening,
//! reading or verifying refuse with a typed error or report a bad position; never a panic,
//! never a silent success with changed history. And a log whose records were deleted,
//! swapped, truncated or restored from an older copy does not extend a head saved earlier.

use std::panic::{AssertUnwindSafe, catch_unwind};

use redb::ReadableTable;

use annals::testing::internals::demo::Rng;
use annals::testing::sim::{Fault, SimDisk};
use annals::{Direction, Extension, Head, Position, Record, Store, StoreOptions};

/// Flips in memory images (the file's bytes, opened through the simulated disk).
const MEMORY_FLIPS: u64 = 10_000;
/// Flips written to a real file and opened as the command line opens it.
const FILE_FLIPS: u64 = 300;

/// A small closed log: a few dozen records across the domains.
fn base_file(dir: &std::path::Path) -> (Vec<u8>, Vec<Record>) {
    let path = dir.join("base.redb");
    {
        let store = Store::open(&path).unwrap();
        annals::testing::internals::demo::run(&store, 40, |_| {}).unwrap();
    }
    let store = Store::open_existing(&path).unwrap();
    let records = store
        .read_all(Position(0), Direction::Forward, 10_000)
        .unwrap();
    drop(store);
    (std::fs::read(&path).unwrap(), records)
}

#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    /// Refused with a typed error.
    Refused,
    /// Opened, and verify named a bad position.
    Reported,
    /// Opened and verified, with the original history unchanged.
    Unchanged,
}

/// What the store makes of `store` (already opened): verify, then a full read compared
/// with the original history.
fn judge(store: &Store, original: &[Record]) -> Result<Verdict, String> {
    // A program's own queries read the projection tables outside `verify`: whatever they
    // return, a value or an error, no panic of redb's may escape them.
    if let Ok(state) = store.state() {
        let _ = annals::registry::state_json(&state);
        let _ = annals::leases::state_json(&state);
        let _ = annals::outbox::state_json(&state);
        let _ = annals::runs::state_json(&state);
    }
    let report = match store.verify() {
        Ok(report) => report,
        Err(_) => return Ok(Verdict::Refused),
    };
    if report.problem.is_some() {
        return Ok(Verdict::Reported);
    }
    let records = match store.read_all(Position(0), Direction::Forward, 10_000) {
        Ok(records) => records,
        Err(_) => return Ok(Verdict::Refused),
    };
    if records != original {
        return Err(format!(
            "verify passed, but the history changed ({} records, {} originally)",
            records.len(),
            original.len()
        ));
    }
    Ok(Verdict::Unchanged)
}

/// Picks a bit: half the time anywhere, half the time in a byte that is not zero (where
/// the file's structure and records are).
fn pick_bit(rng: &mut Rng, image: &[u8], used: &[usize]) -> (usize, u8) {
    let offset = if rng.chance(50) || used.is_empty() {
        rng.below(image.len() as u64) as usize
    } else {
        used[rng.below(used.len() as u64) as usize]
    };
    (offset, 1 << rng.below(8))
}

#[test]
fn bit_flips_in_a_closed_log_are_refused_or_reported_never_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let (image, original) = base_file(dir.path());
    let used: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let mut rng = Rng::new(0xF11F);
    let mut tally = [0u64; 3];
    for flip in 0..MEMORY_FLIPS {
        let (offset, mask) = pick_bit(&mut rng, &image, &used);
        let mut damaged = image.clone();
        damaged[offset] ^= mask;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let disk = SimDisk::new(damaged, Fault::None);
            match Store::open_with_backend(disk.backend(), StoreOptions::default()) {
                Ok(store) => judge(&store, &original),
                Err(_) => Ok(Verdict::Refused),
            }
        }));
        let verdict = match outcome {
            Ok(Ok(verdict)) => verdict,
            Ok(Err(violation)) => {
                panic!("flip {flip} (byte {offset}, mask {mask:#x}): {violation}")
            }
            Err(_) => panic!("flip {flip} (byte {offset}, mask {mask:#x}): a panic escaped"),
        };
        tally[verdict as usize] += 1;
    }
    eprintln!(
        "memory flips: refused {}, reported {}, unchanged {}",
        tally[0], tally[1], tally[2]
    );
    assert!(tally[0] + tally[1] > 0, "no flip was ever noticed");
}

#[test]
fn bit_flips_in_a_closed_log_file_are_refused_or_reported_by_the_read_only_and_writable_opens() {
    let dir = tempfile::tempdir().unwrap();
    let (image, original) = base_file(dir.path());
    let used: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let path = dir.path().join("damaged.redb");
    let mut rng = Rng::new(0xF1E5);
    let mut noticed = 0;
    for flip in 0..FILE_FLIPS {
        let (offset, mask) = pick_bit(&mut rng, &image, &used);
        let mut damaged = image.clone();
        damaged[offset] ^= mask;
        std::fs::write(&path, &damaged).unwrap();
        let read_only = flip % 2 == 0;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let opened = if read_only {
                Store::open_read_only(&path)
            } else {
                Store::open_existing(&path)
            };
            match opened {
                Ok(store) => judge(&store, &original),
                Err(_) => Ok(Verdict::Refused),
            }
        }));
        match outcome {
            Ok(Ok(Verdict::Unchanged)) => {}
            Ok(Ok(_)) => noticed += 1,
            Ok(Err(violation)) => {
                panic!("file flip {flip} (byte {offset}, mask {mask:#x}): {violation}")
            }
            Err(_) => panic!("file flip {flip} (byte {offset}, mask {mask:#x}): a panic escaped"),
        }
    }
    assert!(noticed > 0, "no flip in a file was ever noticed");
}

/// A log of ten single-record transactions (so ten segments), its heads after each.
fn ten_commits(path: &std::path::Path) -> Vec<Head> {
    let store = Store::open(path).unwrap();
    (0..10u8)
        .map(|i| {
            crate::common::append_one(&store, "audit/trail", &[i]);
            store.head().unwrap()
        })
        .collect()
}

fn extension(path: &std::path::Path, saved: Head) -> Extension {
    Store::open_existing(path)
        .unwrap()
        .check_extends(saved)
        .unwrap()
}

#[test]
fn a_log_extends_every_head_saved_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let heads = ten_commits(&path);
    for head in heads.iter().copied().chain([Head::default()]) {
        assert!(extension(&path, head).extends(), "{head:?}");
    }
}

#[test]
fn a_log_restored_from_an_older_copy_does_not_extend_the_saved_head() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let older = dir.path().join("older.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..4u8 {
            crate::common::append_one(&store, "audit/trail", &[i]);
        }
    }
    std::fs::copy(&path, &older).unwrap();
    let store = Store::open_existing(&path).unwrap();
    for i in 4..8u8 {
        crate::common::append_one(&store, "audit/trail", &[i]);
    }
    let saved = store.head().unwrap();
    drop(store);
    assert!(matches!(
        extension(&older, saved),
        Extension::Shorter { .. }
    ));
    // The older copy, grown past the saved head with other records, has a different history.
    let store = Store::open_existing(&older).unwrap();
    for i in 0..6u8 {
        crate::common::append_one(&store, "audit/trail", &[100 + i]);
    }
    drop(store);
    assert!(
        matches!(extension(&older, saved), Extension::Diverged { position, .. } if position == Position(7))
    );
}

/// Rewrites the segments table of the closed log at `path` with `change`.
fn tamper(path: &std::path::Path, change: impl FnOnce(&mut redb::Table<u64, &[u8]>)) {
    let db = redb::Database::open(path).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut segments = txn
            .open_table(annals::testing::internals::tables::SEGMENTS)
            .unwrap();
        change(&mut segments);
    }
    txn.commit().unwrap();
}

fn segment(table: &redb::Table<u64, &[u8]>, first: u64) -> Vec<u8> {
    table.get(first).unwrap().unwrap().value().to_vec()
}

#[test]
fn a_log_with_records_deleted_swapped_or_truncated_does_not_extend_the_saved_head() {
    type Change = fn(&mut redb::Table<u64, &[u8]>);
    let changes: [(&str, Change); 4] = [
        ("deleted", |t| {
            t.remove(4).unwrap();
        }),
        ("swapped", |t| {
            let (three, six) = (segment(t, 3), segment(t, 6));
            t.insert(3, six.as_slice()).unwrap();
            t.insert(6, three.as_slice()).unwrap();
        }),
        ("truncated", |t| {
            t.remove(8).unwrap();
            t.remove(9).unwrap();
        }),
        ("replaced by a copy of another", |t| {
            let two = segment(t, 2);
            t.insert(5, two.as_slice()).unwrap();
        }),
    ];
    for (what, change) in changes {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb");
        let saved = *ten_commits(&path).last().unwrap();
        tamper(&path, change);
        let found = extension(&path, saved);
        assert!(
            matches!(found, Extension::Broken(_) | Extension::Shorter { .. }),
            "{what}: {found:?}"
        );
    }
}
