//! Corruption is found, not trusted: bits flipped in a closed log file make opening,
//! reading or verifying refuse with a typed error or report a bad position; never a panic,
//! never a silent success with changed history. And a log whose records were deleted,
//! swapped, truncated or restored from an older copy does not extend a head saved earlier.

use std::panic::{AssertUnwindSafe, catch_unwind};

use redb::ReadableTable;

use annals::testing::internals::demo::Rng;
use annals::testing::sim::{Fault, SimDisk};
use annals::{
    Direction, Position, Record, Store, StoreOptions,
    audit::Extension,
    log::{Head, StreamVersion},
};

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
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    let records = store
        .snapshot()
        .unwrap()
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

/// Every read of records: each either fails or hands out exactly the original history.
/// Scans both ways from the ends and from the middle, their borrowing form, every point read
/// (and the one at the head), and each stream both ways.
///
/// One exception, returned for the caller to hold against `verify`: a stream whose index
/// entry is gone (its key in `annals.meta` changed) reads as a stream with no record. A read
/// cannot tell that from a stream never written without walking the log, which `verify`
/// does; so such a read is allowed only on a log `verify` reports.
fn reads_are_refused_or_unchanged(
    store: &Store,
    original: &[Record],
) -> Result<Option<String>, String> {
    fn same(
        what: &str,
        read: annals::Result<Vec<Record>>,
        expected: &[Record],
    ) -> Result<(), String> {
        match read {
            Ok(records) if records != expected => Err(format!(
                "{what} returned changed history ({} records, {} expected)",
                records.len(),
                expected.len()
            )),
            _ => Ok(()),
        }
    }
    let all = |from: u64, direction| {
        store
            .snapshot()
            .and_then(|snapshot| snapshot.read_all(Position(from), direction, 10_000))
    };
    let backward: Vec<Record> = original.iter().rev().cloned().collect();
    let middle = original.len() / 2;
    same("read_all forward", all(0, Direction::Forward), original)?;
    same(
        "read_all backward",
        all(u64::MAX, Direction::Backward),
        &backward,
    )?;
    same(
        "read_all forward from the middle",
        all(middle as u64, Direction::Forward),
        &original[middle..],
    )?;
    same(
        "read_all backward from the middle",
        all(middle as u64, Direction::Backward),
        &backward[original.len() - middle - 1..],
    )?;
    // The rest read one snapshot, as a program holding one would.
    let Ok(snapshot) = store.snapshot() else {
        return Ok(None);
    };
    let viewed = snapshot
        .records(Position(0), Direction::Forward)
        .and_then(|mut records| {
            let mut viewed = Vec::new();
            while let Some(view) = records.next_view() {
                viewed.push(view?.to_record());
            }
            Ok(viewed)
        });
    same("next_view", viewed, original)?;
    for (position, expected) in original.iter().enumerate() {
        if let Ok(found) = snapshot.get(Position(position as u64))
            && found.as_ref() != Some(expected)
        {
            return Err(format!(
                "get({position}) returned changed history: {found:?}"
            ));
        }
    }
    if let Ok(Some(found)) = snapshot.get(Position(original.len() as u64)) {
        return Err(format!("get at the head returned a record: {found:?}"));
    }
    let streams: std::collections::BTreeSet<&str> = original
        .iter()
        .map(|record| record.stream.as_str())
        .collect();
    let mut unindexed = None;
    for stream in streams {
        let forward: Vec<Record> = original
            .iter()
            .filter(|record| record.stream == stream)
            .cloned()
            .collect();
        let backward: Vec<Record> = forward.iter().rev().cloned().collect();
        let read = |from, direction| {
            snapshot
                .stream(stream, StreamVersion(from), direction)
                .and_then(|records| records.collect::<annals::Result<Vec<Record>>>())
        };
        let read_forward = read(0, Direction::Forward);
        if matches!(&read_forward, Ok(records) if records.is_empty()) {
            unindexed = Some(format!("stream {stream:?} reads as empty"));
            continue;
        }
        same(
            &format!("stream {stream:?} forward"),
            read_forward,
            &forward,
        )?;
        same(
            &format!("stream {stream:?} backward"),
            read(u64::MAX, Direction::Backward),
            &backward,
        )?;
    }
    Ok(unindexed)
}

/// What the store makes of `store` (already opened): every read either fails or returns the
/// original history; then verify, and a log it finds sound must hold the original history.
fn judge(store: &Store, original: &[Record]) -> Result<Verdict, String> {
    let unindexed = reads_are_refused_or_unchanged(store, original)?;
    // A program's own queries read the projection tables outside `verify`: whatever they
    // return, a value or an error, no panic of redb's may escape them.
    if let Ok(state) = store.snapshot().map(|snapshot| snapshot.state()) {
        let _ = annals::registry::state_json(&state);
        let _ = annals::leases::state_json(&state);
        let _ = annals::outbox::state_json(&state);
        let _ = annals::runs::state_json(&state);
    }
    let report = match annals::Audit::of(store).verify() {
        Ok(report) => report,
        Err(_) => return Ok(Verdict::Refused),
    };
    if report.problem.is_some() {
        return Ok(Verdict::Reported);
    }
    if let Some(unindexed) = unindexed {
        return Err(format!("verify calls the log sound, but {unindexed}"));
    }
    let records = match store
        .snapshot()
        .and_then(|snapshot| snapshot.read_all(Position(0), Direction::Forward, 10_000))
    {
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

/// The memory flips in four shards of their own seeds, each its own test, so that none runs
/// long on a loaded machine and the harness spreads them over its threads.
const MEMORY_SHARDS: u64 = 4;

/// One shard of the [`MEMORY_FLIPS`]: flips chosen by its own seed, each opened on the
/// simulated disk and judged against the original history.
fn memory_flips(shard: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (image, original) = base_file(dir.path());
    let used: Vec<usize> = (0..image.len()).filter(|&i| image[i] != 0).collect();
    let mut rng = Rng::new(0xF11F + shard);
    let mut tally = [0u64; 3];
    let mut violations = Vec::new();
    for flip in 0..MEMORY_FLIPS / MEMORY_SHARDS {
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
        match outcome {
            Ok(Ok(verdict)) => tally[verdict as usize] += 1,
            Ok(Err(violation)) => {
                violations.push(format!(
                    "shard {shard}, flip {flip} (byte {offset}, mask {mask:#x}): {violation}"
                ));
            }
            Err(_) => panic!(
                "shard {shard}, flip {flip} (byte {offset}, mask {mask:#x}): a panic escaped"
            ),
        }
    }
    eprintln!(
        "memory flips, shard {shard}: refused {}, reported {}, unchanged {}",
        tally[0], tally[1], tally[2]
    );
    assert!(
        violations.is_empty(),
        "{} flips handed out changed history:\n{}",
        violations.len(),
        violations.join("\n")
    );
    assert!(tally[0] + tally[1] > 0, "no flip was ever noticed");
}

#[test]
fn bit_flips_in_a_closed_log_are_refused_or_reported_never_trusted_1_of_4() {
    memory_flips(0);
}

#[test]
fn bit_flips_in_a_closed_log_are_refused_or_reported_never_trusted_2_of_4() {
    memory_flips(1);
}

#[test]
fn bit_flips_in_a_closed_log_are_refused_or_reported_never_trusted_3_of_4() {
    memory_flips(2);
}

#[test]
fn bit_flips_in_a_closed_log_are_refused_or_reported_never_trusted_4_of_4() {
    memory_flips(3);
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
                Store::open_with(&path, annals::StoreOptions::default())
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
            store.snapshot().unwrap().head().unwrap()
        })
        .collect()
}

fn extension(path: &std::path::Path, saved: Head) -> Extension {
    annals::Audit::of(&Store::open_with(path, annals::StoreOptions::default()).unwrap())
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
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    for i in 4..8u8 {
        crate::common::append_one(&store, "audit/trail", &[i]);
    }
    let saved = store.snapshot().unwrap().head().unwrap();
    drop(store);
    assert!(matches!(
        extension(&older, saved),
        Extension::Shorter { .. }
    ));
    // The older copy, grown past the saved head with other records, has a different history.
    let store = Store::open_with(&older, annals::StoreOptions::default()).unwrap();
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

/// Issue 29, point 5: a command that prints a record's hash has checked that record against
/// it. A payload rewritten inside its segment, under a recomputed segment digest, is
/// `Error::Corrupt` at its position on every read (scans both ways, `get`, a stream's
/// records). In both record formats. What `log`, `tail`, `history` and `prove` say of it:
/// `cli/tests/cli/damaged.rs`.
#[test]
fn a_payload_rewritten_under_a_fresh_segment_digest_is_corrupt_on_every_read() {
    use annals::Error;
    for version in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("log.redb");
        annals::testing::damage::log_with_a_payload_forged_at_17(&db, version);
        let at_17 = |result: Result<(), Error>, what: &str| match result {
            Err(Error::Corrupt { position, .. }) => {
                assert_eq!(position, Position(17), "v{version} {what}")
            }
            other => panic!("v{version} {what}: {other:?}"),
        };
        let store = Store::open_read_only(&db).unwrap();
        let snapshot = store.snapshot().unwrap();
        for (direction, from) in [
            (Direction::Forward, Position(0)),
            (Direction::Backward, Position(39)),
        ] {
            let read: Result<Vec<Record>, Error> =
                snapshot.records(from, direction).unwrap().collect();
            at_17(read.map(drop), &format!("records {direction:?}"));
            let mut records = snapshot.records(from, direction).unwrap();
            let mut first_error = None;
            while let Some(view) = records.next_view() {
                if let Err(error) = view {
                    first_error = Some(error);
                    break;
                }
            }
            at_17(
                first_error.map_or(Ok(()), Err),
                &format!("next_view {direction:?}"),
            );
        }
        at_17(snapshot.get(Position(17)).map(drop), "get");
        let stream: Result<Vec<Record>, Error> = snapshot
            .stream("s", StreamVersion(0), Direction::Forward)
            .unwrap()
            .collect();
        at_17(stream.map(drop), "stream");
    }
}
