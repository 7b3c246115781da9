//! One round of the main run: every contender on every figure, interleaved.

use std::path::{Path, PathBuf};

use crate::bulk::{INTERLEAVED_STREAMS, bulk_annals, bulk_annals_over, bulk_redb, bulk_sqlite};
use crate::commands::{
    fsync_floor, group_annals, group_sqlite, single_annals, single_redb, single_redb_in,
    single_sqlite,
};
use crate::mixed::{
    MIXED_KEYS, MixedRun, empty_bytes_annals, mixed_tasks, mixed_threads, mixed_writer_threads,
};
use crate::mixed_sqlite::{empty_bytes_sqlite, mixed_sqlite};
use crate::reading::{
    chain_sqlite, encode_and_hash_ns, rebuild, scan_annals, scan_annals_owned, scan_redb,
    scan_sqlite, verify_and_blake3, verify_split,
};
use crate::report::RATIOS;
use crate::samples::{Samples, disk_bytes};
use crate::{GROUP_TASKS, SAMPLE_EVENTS_MAX, Settings};

/// One round: every contender on every figure, interleaved. Returns the round's folder and
/// its annals bulk log, kept for the memory measurement.
pub(crate) fn run_round(
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
    verify_logs: &[(usize, PathBuf); 2],
    samples: &mut Samples,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);

    for (rate, written, flushes, commits) in [
        (
            "single.annals",
            "written.annals",
            "flushes.annals",
            single_annals(&at("single.redb"), settings.timed),
        ),
        (
            "single.redb",
            "written.redb",
            "flushes.redb",
            single_redb(&at("single-raw.redb"), settings.timed),
        ),
        (
            "single.redb_shared",
            "written.redb_shared",
            "flushes.redb_shared",
            single_redb_in(
                &at("single-raw-shared.redb"),
                redb::ConcurrencyMode::SingleWriter,
                settings.timed,
            ),
        ),
        (
            "single.sqlite",
            "written.sqlite",
            "flushes.sqlite",
            single_sqlite(&at("single.sqlite"), settings.timed),
        ),
    ] {
        samples.push(rate, commits.per_s());
        samples.push(written, commits.written_per_commit());
        samples.push(flushes, commits.flushes_per_commit());
    }
    samples.push(
        "single.fsync",
        fsync_floor(&at("fsync.bin"), settings.timed),
    );

    samples.push(
        "group.annals_1",
        runtime.block_on(group_annals(&at("group-1.redb"), 1, settings.timed)),
    );
    samples.push(
        "group.annals_64",
        runtime.block_on(group_annals(
            &at("group-64.redb"),
            GROUP_TASKS,
            settings.timed,
        )),
    );
    samples.push(
        "group.sqlite_64",
        group_sqlite(&at("group-64.sqlite"), GROUP_TASKS, settings.timed),
    );

    let annals_log = at("bulk.redb");
    let raw_log = at("bulk-raw.redb");
    let sqlite_log = at("bulk.sqlite");
    let events = settings.events;
    samples.push("bulk.annals", bulk_annals(&annals_log, events, 0));
    samples.push("bulk.redb", bulk_redb(&raw_log, events, 1));
    samples.push("bulk.sqlite", bulk_sqlite(&sqlite_log, events, 1));
    samples.push("bytes.annals", disk_bytes(&annals_log) / events as f64);
    samples.push("bytes.sqlite", disk_bytes(&sqlite_log) / events as f64);

    samples.push("scan.annals", scan_annals(&annals_log));
    samples.push("scan.annals_owned", scan_annals_owned(&annals_log));
    samples.push("scan.redb", scan_redb(&raw_log));
    let (verify, blake3) = verify_and_blake3(&annals_log);
    samples.push("verify", verify);
    samples.push("blake3", blake3);
    samples.push("rebuild", rebuild(&annals_log));
    let (encode_ns, hash_ns) = encode_and_hash_ns(events.min(SAMPLE_EVENTS_MAX));
    samples.push("phase.encode_ns", encode_ns);
    samples.push("phase.hash_ns", hash_ns);
    interleaved_round(settings, &at, samples);
    mixed_round(settings, runtime, &at, samples);
    verify_round(verify_logs, samples);
    // Each ratio is taken within the round, between contenders that ran minutes apart at
    // most, then the median over rounds: the disk's speed drifts less within a round.
    for (key, numerator, denominator, _, _) in RATIOS {
        let value = if denominator.is_empty() {
            samples.last(numerator)
        } else {
            samples.last(numerator) / samples.last(denominator)
        };
        samples.push(key, value);
    }
    (dir, annals_log)
}

/// Bulk over [`INTERLEAVED_STREAMS`] streams in turn, each contender; then the scan a user
/// reaches first (`Snapshot::records`, copying each record) against SQLite's scan of the same
/// events.
fn interleaved_round(settings: &Settings, at: &dyn Fn(&str) -> PathBuf, samples: &mut Samples) {
    let annals_log = at("interleaved.redb");
    let sqlite_log = at("interleaved.sqlite");
    let events = settings.events;
    let streams = settings.streams;
    samples.push(
        "bulk_interleaved.annals",
        bulk_annals_over(&annals_log, events, 0, streams),
    );
    samples.push(
        "bulk_interleaved.redb",
        bulk_redb(&at("interleaved-raw.redb"), events, streams),
    );
    samples.push(
        "bulk_interleaved.sqlite",
        bulk_sqlite(&sqlite_log, events, streams),
    );
    samples.push("scan.default", scan_annals_owned(&annals_log));
    samples.push("scan.sqlite", scan_sqlite(&sqlite_log));
    samples.push("verify.sqlite_chain", chain_sqlite(&sqlite_log));
}

/// The mixed commands at each client count: annals from threads and from tasks, SQLite with
/// a connection per client and with one shared; and the bytes on disk per command of the
/// sequential and the 64-client runs.
fn mixed_round(
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
    at: &dyn Fn(&str) -> PathBuf,
    samples: &mut Samples,
) {
    let empty_annals = empty_bytes_annals(&at("mixed-empty.redb"));
    let empty_sqlite = empty_bytes_sqlite(&at("mixed-empty.sqlite"));
    for keys in &MIXED_KEYS {
        let n = keys.clients;
        let threads_log = at(&format!("mixed-threads-{n}.redb"));
        let tasks_log = at(&format!("mixed-tasks-{n}.redb"));
        let conns_log = at(&format!("mixed-conns-{n}.sqlite"));
        let threads = mixed_threads(&threads_log, n, settings.timed);
        let writer_threads = mixed_writer_threads(
            &at(&format!("mixed-writer-threads-{n}.redb")),
            n,
            settings.timed,
        );
        let tasks = runtime.block_on(mixed_tasks(&tasks_log, n, settings.timed));
        let conns = mixed_sqlite(&conns_log, n, false, settings.timed);
        let shared = mixed_sqlite(
            &at(&format!("mixed-shared-{n}.sqlite")),
            n,
            true,
            settings.timed,
        );
        samples.push(keys.threads, threads.per_s);
        samples.push(keys.writer_threads, writer_threads.per_s);
        samples.push(keys.tasks, tasks.per_s);
        samples.push(keys.sqlite_conns, conns.per_s);
        samples.push(keys.sqlite_shared, shared.per_s);
        samples.push(keys.sqlite_best, conns.per_s.max(shared.per_s));
        let per_command = |log: &Path, empty: f64, run: &MixedRun| {
            (disk_bytes(log) - empty) / run.commands.max(1) as f64
        };
        // Sequential: annals through `Store`; 64 clients: annals through `Writer`.
        let (annals_log, annals_run, keys) = match n {
            1 => (
                &threads_log,
                &threads,
                ["mixed_bytes.annals_1", "mixed_bytes.sqlite_1"],
            ),
            64 => (
                &tasks_log,
                &tasks,
                ["mixed_bytes.annals_64", "mixed_bytes.sqlite_64"],
            ),
            _ => continue,
        };
        samples.push(keys[0], per_command(annals_log, empty_annals, annals_run));
        samples.push(keys[1], per_command(&conns_log, empty_sqlite, &conns));
    }
}

/// Verify of the two logs built before the rounds, the smaller first.
fn verify_round(verify_logs: &[(usize, PathBuf); 2], samples: &mut Samples) {
    for ((_, log), (walk, whole, replay)) in verify_logs.iter().zip([
        (
            "verify.walk_small",
            "verify.whole_small",
            "verify.replay_small",
        ),
        (
            "verify.walk_large",
            "verify.whole_large",
            "verify.replay_large",
        ),
    ]) {
        let split = verify_split(log);
        samples.push(walk, split.walk);
        samples.push(whole, split.whole);
        samples.push(replay, split.replay);
    }
}

/// Builds the verify logs: bulk events over [`INTERLEAVED_STREAMS`] streams in turn, every
/// event its own run, at each of the settings' two sizes.
pub(crate) fn build_verify_logs(settings: &Settings) -> (tempfile::TempDir, [(usize, PathBuf); 2]) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let logs = settings.verify_sizes.map(|events| {
        let path = dir.path().join(format!("verify-{events}.redb"));
        eprintln!("building the verify log of {events} events");
        bulk_annals_over(&path, events, 0, INTERLEAVED_STREAMS);
        (events, path)
    });
    (dir, logs)
}
