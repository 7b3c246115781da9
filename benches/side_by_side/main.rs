//! annals side by side with what it replaces and what it stands on, on the same work in one
//! run: SQLite (through rusqlite's bundled library, WAL, `synchronous=FULL`), raw redb storing
//! records of the same size with no hashing and no projections (the floor), and the disk's own
//! `fdatasync` rate on a small file (the physical limit of a durable commit).
//!
//! `cargo bench --bench side_by_side` (1,000,000 bulk events, 5 rounds, 3 s per timed row);
//! `-- --quick` (100,000 events, 3 rounds, 1 s per timed row); `-- --check` exits 1 when a
//! ratio falls below its target. The contenders run interleaved within each round and every
//! figure is the median over rounds, because the machine is shared and its disk's fsync time
//! moves from second to second. The table goes to stdout, every figure to
//! `target/side_by_side.json`. Logs live under the target directory, on a real disk: an fsync
//! on tmpfs costs nothing and would flatter every row.
//!
//! The work: a *command* is a lease acquisition by its live holder (decide against the lease
//! row, append one `lease.renewed` event chained by hash, update the lease row), one per
//! durable commit. A *bulk event* is a `lease.acquired` event with a 200-byte payload over
//! 1,000 resources, appended 1,000 to a durable commit, each one applied to the lease
//! projection in the same transaction; SQLite inserts the event row with its chained hash and
//! upserts the lease row; raw redb inserts one key per record and nothing else.
//!
//! The sharing modes, in every round: single commands and group commit at 64 tasks on
//! stores opened exclusive, single-writer (the default, which the rows above use) and
//! multi-writer; and a single-writer store in this process followed by the real
//! `annals tail --json` in a child process, for the time from a commit's return to the
//! child's line for it, and for the writer's rate with and without the tail beside it. The
//! child is the `annals` binary of the bench's own profile: run
//! `cargo build --release --features cli` first, or those figures are skipped with a note.
//! `-- --sharing-only` runs these figures alone (with `--quick` and `--check` as above) and
//! writes them to `target/side_by_side_sharing.json`.

mod bulk;
mod commands;
mod memory;
mod reading;
mod report;
mod samples;
mod sharing;
mod sqlite;
mod work;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::TableDefinition;

use crate::bulk::{bulk_annals, bulk_redb, bulk_sqlite};
use crate::commands::{
    command_trees, fsync_floor, group_annals, group_sqlite, single_annals, single_redb,
    single_sqlite,
};
use crate::memory::{rebuild_rss, rss_child};
use crate::reading::{
    encode_and_hash_ns, rebuild, scan_annals, scan_annals_owned, scan_redb, verify_and_blake3,
};
use crate::report::{RATIOS, print_sharing_table, print_table, report, sharing_report};
use crate::samples::{Samples, file_bytes};
use crate::sharing::{annals_binary, run_sharing};

pub(crate) const BATCH_EVENTS: usize = 1_000;
pub(crate) const BULK_RESOURCES: usize = 1_000;
pub(crate) const PAYLOAD_BYTES: usize = 200;
pub(crate) const TTL_MS: u64 = 60_000;
pub(crate) const EPOCH_MS: u64 = 1_700_000_000_000;
pub(crate) const GROUP_TASKS: usize = 64;
/// Records hashed for the blake3 baseline and for the per-phase encode and hash timings.
pub(crate) const SAMPLE_EVENTS_MAX: usize = 100_000;

pub(crate) const RAW: TableDefinition<u64, &[u8]> = TableDefinition::new("records");

pub(crate) struct Settings {
    pub(crate) quick: bool,
    pub(crate) check: bool,
    /// `--sharing-only`: the sharing-mode and tail figures alone.
    pub(crate) sharing_only: bool,
    /// The `annals` command line beside this bench, for the commit-to-tail figures.
    pub(crate) tail_binary: Option<PathBuf>,
    pub(crate) rounds: usize,
    pub(crate) events: usize,
    pub(crate) timed: Duration,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--rss-child") {
        let path = args.get(at + 1).expect("--rss-child needs a path");
        rss_child(Path::new(path));
        return;
    }
    if args.iter().any(|a| a == "--profile-bulk") {
        // For a profiler: annals' bulk append, scan and rebuild alone.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        println!("bulk {:.0}/s", bulk_annals(&log, 100_000, 0));
        println!("scan {:.0}/s", scan_annals(&log));
        println!("rebuild {:.0}/s", rebuild(&log));
        return;
    }
    if args.iter().any(|a| a == "--command-trees") {
        // What a command's storage alone costs: raw redb writing one tree per commit, against
        // the three an annals command writes, with no hashing, deciding or applying; and
        // annals itself (also the mode to profile single commands under).
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        for round in 0..4 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = single_redb(&at("one"), run_for);
            let three = command_trees(&at("three"), run_for);
            let annals = single_annals(&at("annals"), run_for);
            println!(
                "commits/s (bytes written per commit): one tree {:.0} ({:.0}), three trees {:.0} \
                 ({:.0}, {:.2} of one), annals {:.0} ({:.0}, {:.2} of one)",
                one.per_s(),
                one.written_per_commit(),
                three.per_s(),
                three.written_per_commit(),
                three.per_s() / one.per_s(),
                annals.per_s(),
                annals.written_per_commit(),
                annals.per_s() / one.per_s(),
            );
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-group") {
        // For a profiler: group commit at 1 and 64 tasks.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_time()
            .build()
            .expect("a tokio runtime");
        for round in 0..3 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = runtime.block_on(group_annals(&at("group-1"), 1, run_for));
            let many = runtime.block_on(group_annals(&at("group-64"), GROUP_TASKS, run_for));
            println!("group 1: {one:.0}/s, 64: {many:.0}/s, {:.1}x", many / one);
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-scan") {
        // For a profiler: annals' scan alone, many times over one log.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        let raw = dir.path().join("bulk-raw.redb");
        bulk_annals(&log, 100_000, 0);
        bulk_redb(&raw, 100_000);
        for _ in 0..10 {
            println!("scan {:.0}/s", scan_annals(&log));
            println!("raw redb scan {:.0}/s", scan_redb(&raw));
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let settings = Settings {
        quick,
        check: args.iter().any(|a| a == "--check"),
        sharing_only: args.iter().any(|a| a == "--sharing-only"),
        tail_binary: annals_binary(),
        rounds: if quick { 3 } else { 5 },
        events: if quick { 100_000 } else { 1_000_000 },
        timed: Duration::from_secs(if quick { 1 } else { 3 }),
    };
    let started = Instant::now();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime");
    let mut samples = Samples::default();
    if settings.tail_binary.is_none() {
        println!(
            "note: no annals binary beside this bench; the commit-to-tail figures are skipped \
             (run `cargo build --release --features cli` first)"
        );
    }
    if settings.sharing_only {
        for round in 0..settings.rounds {
            eprintln!("round {} of {} (sharing only)", round + 1, settings.rounds);
            run_sharing(&settings, &runtime, round, &mut samples);
        }
        let report = sharing_report(&settings, &samples, started.elapsed());
        let missed = print_sharing_table(&settings, &samples, &report);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("side_by_side_sharing.json");
        let text = serde_json::to_string_pretty(&report).expect("JSON");
        std::fs::write(&path, text + "\n").expect("write the JSON report");
        println!("figures written to {}", path.display());
        if settings.check && missed > 0 {
            eprintln!("{missed} ratio(s) below target");
            std::process::exit(1);
        }
        return;
    }
    let mut last_round_log = None;
    for round in 0..settings.rounds {
        eprintln!("round {} of {}", round + 1, settings.rounds);
        let (dir, annals_log) = run_round(&settings, &runtime, &mut samples);
        run_sharing(&settings, &runtime, round, &mut samples);
        last_round_log = Some((dir, annals_log));
    }
    let (dir, log) = last_round_log.expect("at least one round");
    let (rss_1x, rss_2x) = rebuild_rss(&settings, &log);
    drop(dir);
    let report = report(&settings, &samples, rss_1x, rss_2x, started.elapsed());
    let missed = print_table(&settings, &samples, &report);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("side_by_side.json");
    let text = serde_json::to_string_pretty(&report).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the JSON report");
    println!("figures written to {}", path.display());
    if settings.check && missed > 0 {
        eprintln!("{missed} ratio(s) below target");
        std::process::exit(1);
    }
}

/// One round: every contender on every figure, interleaved. Returns the round's folder and
/// its annals bulk log, kept for the memory measurement.
pub(crate) fn run_round(
    settings: &Settings,
    runtime: &tokio::runtime::Runtime,
    samples: &mut Samples,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
    let at = |name: &str| dir.path().join(name);

    for (rate, written, commits) in [
        (
            "single.annals",
            "written.annals",
            single_annals(&at("single.redb"), settings.timed),
        ),
        (
            "single.redb",
            "written.redb",
            single_redb(&at("single-raw.redb"), settings.timed),
        ),
        (
            "single.sqlite",
            "written.sqlite",
            single_sqlite(&at("single.sqlite"), settings.timed),
        ),
    ] {
        samples.push(rate, commits.per_s());
        samples.push(written, commits.written_per_commit());
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
    samples.push("bulk.redb", bulk_redb(&raw_log, events));
    samples.push("bulk.sqlite", bulk_sqlite(&sqlite_log, events));
    samples.push("bytes.annals", file_bytes(&annals_log) / events as f64);
    samples.push("bytes.sqlite", file_bytes(&sqlite_log) / events as f64);

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
    // Each ratio is taken within the round, between contenders that ran minutes apart at
    // most, then the median over rounds: the disk's speed drifts less within a round.
    for (key, numerator, denominator, _, _) in RATIOS {
        let value = samples.last(numerator) / samples.last(denominator);
        samples.push(key, value);
    }
    (dir, annals_log)
}
