//! Durable single commands and group commit: annals, raw redb, SQLite and the disk.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use annals::{Sharing, Writer, writer::WriterOptions};
use redb::TableDefinition;

use crate::RAW;
use crate::samples::{Commits, bytes_written, in_threads, per_second};
use crate::sqlite::Sqlite;
use crate::work::{granted, lease_command, lease_command_event, open_new, stored_bytes};

pub(crate) fn single_annals(path: &Path, run_for: Duration) -> Commits {
    single_annals_in(path, Sharing::default(), run_for)
}

/// Single durable commands as [`single_annals`], on a store opened in `sharing` mode.
pub(crate) fn single_annals_in(path: &Path, sharing: Sharing, run_for: Duration) -> Commits {
    let store = open_new(path, sharing);
    Commits::measure(run_for, |step| {
        granted(&store.execute(&lease_command(0, step)).expect("a command"));
    })
}

pub(crate) fn single_redb(path: &Path, run_for: Duration) -> Commits {
    single_redb_in(path, redb::ConcurrencyMode::ExclusiveWriter, run_for)
}

/// Raw redb's single commits with the file shared as `mode` says. redb commits in two phases
/// in its multi-process modes (two syncs: the new pages, then the header naming them), and
/// annals' default, `Sharing::SingleWriter`, is one of them: `SingleWriter` here is the floor
/// of annals' default single commits, as `ExclusiveWriter` is of `Sharing::Exclusive`'s.
pub(crate) fn single_redb_in(
    path: &Path,
    mode: redb::ConcurrencyMode,
    run_for: Duration,
) -> Commits {
    let db = redb::Builder::new()
        .set_concurrency_mode(mode)
        .create(path)
        .expect("a redb file");
    let record = stored_bytes(&lease_command_event(), 0);
    Commits::measure(run_for, |step| {
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            table.insert(step, record.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    })
}

/// Raw redb writing what an annals command's commit writes: a record in the segments tree,
/// the head and the stream's tail in the meta tree, and the lease row, three trees.
pub(crate) fn command_trees(path: &Path, run_for: Duration) -> Commits {
    const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
    const HELD: TableDefinition<&str, &[u8]> = TableDefinition::new("held");
    let db = redb::Database::create(path).expect("a redb file");
    let record = stored_bytes(&lease_command_event(), 0);
    let head = [9u8; 40 + 32 * 10];
    let tail = [7u8; 8 + 16];
    let lease = [3u8; 80];
    Commits::measure(run_for, |step| {
        let txn = db.begin_write().expect("a write");
        {
            let mut table = txn.open_table(RAW).expect("the table");
            table.insert(step, record.as_slice()).expect("insert");
            let mut meta = txn.open_table(META).expect("the table");
            meta.insert("head", head.as_slice()).expect("insert");
            meta.insert("stream:lease/resource-0", tail.as_slice())
                .expect("insert");
            let mut held = txn.open_table(HELD).expect("the table");
            held.insert("resource-0", lease.as_slice()).expect("insert");
        }
        txn.commit().expect("commit");
    })
}

pub(crate) fn single_sqlite(path: &Path, run_for: Duration) -> Commits {
    let mut sqlite = Sqlite::open(path);
    Commits::measure(run_for, |step| sqlite.command(0, step))
}

/// The disk's limit: overwrite 64 bytes of a small file and `fdatasync` it, in a loop.
pub(crate) fn fsync_floor(path: &Path, run_for: Duration) -> f64 {
    let file = File::create(path).expect("a file");
    file.write_all_at(&[0; 4096], 0).expect("write");
    file.sync_all().expect("sync");
    let started = Instant::now();
    let mut syncs = 0u64;
    while started.elapsed() < run_for {
        file.write_all_at(&syncs.to_le_bytes().repeat(8), 0)
            .expect("write");
        file.sync_data().expect("fdatasync");
        syncs += 1;
    }
    per_second(syncs, started.elapsed())
}

pub(crate) async fn group_annals(path: &Path, tasks: usize, run_for: Duration) -> f64 {
    group_annals_in(path, Sharing::default(), tasks, run_for).await
}

/// Group commit as [`group_annals`], on a store opened in `sharing` mode.
pub(crate) async fn group_annals_in(
    path: &Path,
    sharing: Sharing,
    tasks: usize,
    run_for: Duration,
) -> f64 {
    let written_before = bytes_written();
    let store = Arc::new(open_new(path, sharing));
    let writer = Writer::start(store, WriterOptions::default()).expect("a writer");
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..tasks)
        .map(|task| {
            let writer = writer.clone();
            let stop = Arc::clone(&stop);
            tokio::spawn(async move {
                let mut commands = 0;
                while !stop.load(Ordering::Relaxed) {
                    granted(
                        &writer
                            .execute(lease_command(task, commands))
                            .await
                            .expect("a command"),
                    );
                    commands += 1;
                }
                commands
            })
        })
        .collect();
    tokio::time::sleep(run_for).await;
    stop.store(true, Ordering::Relaxed);
    let mut commands = 0;
    for worker in workers {
        commands += worker.await.expect("a task");
    }
    let elapsed = started.elapsed();
    let stats = writer.stats();
    if std::env::var_os("ANNALS_BENCH_BATCHES").is_some() {
        let batches = stats.batches.max(1) as f64;
        eprintln!(
            "{tasks} tasks: {:.1} jobs per batch, {:.0} bytes written per batch",
            stats.jobs as f64 / batches,
            (bytes_written() - written_before) as f64 / batches,
        );
    }
    writer.close().await.expect("close");
    per_second(commands, elapsed)
}

/// SQLite file from many tasks), each command its own durable transaction.
/// SQLite has no group commit: 64 threads share one connection (the usual way to write one
pub(crate) fn group_sqlite(path: &Path, threads: usize, run_for: Duration) -> f64 {
    let sqlite = Arc::new(Mutex::new(Sqlite::open(path)));
    let (done, elapsed) = in_threads(threads, run_for, |task| {
        let sqlite = Arc::clone(&sqlite);
        let mut step = 0;
        move || {
            sqlite.lock().expect("the connection").command(task, step);
            step += 1;
        }
    });
    per_second(done, elapsed)
}

/// Where a raw redb commit's rows lie, for [`leaf_costs`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum RowsLie {
    /// One row in one table.
    One,
    /// `n` rows side by side in one leaf of one table.
    Clustered(usize),
    /// `n` rows in `n` different leaves of one table.
    Spread(usize),
    /// One row in each of `n` tables (each of a leaf and a branch level).
    Tables(usize),
}

/// Raw redb single commits, shared as annals' default shares its file, writing 60-byte rows
/// where `lie` says: what a commit costs for each leaf and each table it touches. Every
/// table holds 20,000 rows first, two levels deep, so that a row's leaf has a branch above it.
pub(crate) fn leaf_costs(path: &Path, lie: RowsLie, run_for: Duration) -> Commits {
    const NAMES: [&str; 10] = ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"];
    const ROWS: u64 = 20_000;
    let table = |n: usize| TableDefinition::<u64, &[u8]>::new(NAMES[n % NAMES.len()]);
    let tables = match lie {
        RowsLie::Tables(n) => n.min(NAMES.len()),
        _ => 1,
    };
    let db = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::SingleWriter)
        .create(path)
        .expect("a redb file");
    let row = [5u8; 60];
    let txn = db.begin_write().expect("a write");
    for n in 0..tables {
        let mut rows = txn.open_table(table(n)).expect("the table");
        for key in 0..ROWS {
            rows.insert(key * 1_000, row.as_slice()).expect("insert");
        }
    }
    txn.commit().expect("commit");
    Commits::measure(run_for, |step| {
        let txn = db.begin_write().expect("a write");
        {
            // Keys between the 20,000 first ones: a new row in an existing leaf each time.
            let fresh = 1 + step % 999;
            let rows = match lie {
                RowsLie::One => 1,
                RowsLie::Clustered(n) | RowsLie::Spread(n) | RowsLie::Tables(n) => n,
            };
            for i in 0..rows {
                let (n, key) = match lie {
                    RowsLie::One | RowsLie::Clustered(_) => {
                        (0, step * 1_000 % (ROWS * 1_000) + fresh + i as u64)
                    }
                    // Rows 2,000 apart, where a leaf holds about 50.
                    RowsLie::Spread(_) => (0, (step * 7 + i as u64 * 2_000) % ROWS * 1_000 + fresh),
                    RowsLie::Tables(_) => (i, step % ROWS * 1_000 + fresh),
                };
                let mut table = txn.open_table(table(n)).expect("the table");
                table.insert(key, row.as_slice()).expect("insert");
            }
        }
        txn.commit().expect("commit");
    })
}
