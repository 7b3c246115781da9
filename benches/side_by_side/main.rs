//! annals side by side with what it replaces and what it stands on, on the same work in one
//! run: SQLite (through rusqlite's bundled library, WAL, `synchronous=FULL`), raw redb storing
//! records of the same size with no hashing and no projections (the floor), and the disk's own
//! `fdatasync` rate on a small file (the physical limit of a durable commit). Raw redb holds its
//! file exclusively; for single commands it runs shared as well, as annals' default
//! (`Sharing::SingleWriter`) shares its file, because redb then commits in two phases, two syncs
//! where an exclusive commit has one. Each single-command row counts the disk's cache flushes
//! per command, from the kernel's count for the disk (`/sys/dev/block/…/stat`).
//!
//! `cargo bench --bench side_by_side` (1,000,000 bulk events, verify at 100,000 and 4,000,000
//! events, 5 rounds, 3 s per timed row); `-- --quick` (100,000 events, verify at 20,000 and
//! 100,000, 3 rounds, 1 s per timed row); `-- --smoke` (5,000 events, 1,000 interleaved
//! streams, verify at 2,000 and 10,000, 1 round, 0.3 s per timed row: to see every row run,
//! its figures mean nothing). The contenders run interleaved within each round and every
//! figure is the median over rounds, because the machine is shared and its disk's fsync time
//! moves from second to second; every ratio is taken within a round, then the median over
//! rounds. The table goes to stdout, every figure to `target/side_by_side.json`. Logs live
//! under the target directory, on a real disk: an fsync on tmpfs costs nothing and would
//! flatter every row.
//!
//! Regressions and targets (`check.rs`): `-- --check` compares every ratio with the committed
//! `benches/baseline.json` and exits 1 when one is worse by more than the noise measured (its
//! range over rounds relative to its median, this run's or the baseline's, at least 10%);
//! `-- --write-baseline` writes that file from the run, and the ratios table of
//! `docs/performance.md` from it (`-- --docs` writes the table alone, from the committed file;
//! `tests/it/performance_doc.rs` checks the two agree). `-- --history` appends every figure
//! of the run to `docs/performance-history.csv`, a row each. A target missed (issue 15's, and the
//! earlier ones) is listed after the table with the figures of the run that bound it, and is
//! not a failure of `--check`, except `rebuild_rss_2x_vs_1x`, which guards an invariant.
//!
//! The work: a *command* is a lease acquisition by its live holder (decide against the lease
//! row, append one `lease.renewed` event chained by hash, update the lease row), one per
//! durable commit. A *bulk event* is a `lease.acquired` event with a 200-byte payload over
//! 1,000 resources, appended 1,000 to a durable commit, each one applied to the lease
//! projection in the same transaction; SQLite inserts the event row with its chained hash
//! (indexed by stream and version, as annals' stream index is) and upserts the lease row; raw
//! redb inserts one key per record and nothing else. *Interleaved bulk* is the same over
//! 10,000 streams in turn, every event its own run of its stream (`bulk.rs`); the scan a user
//! reaches first, `Snapshot::records` copying each record, reads that log against SQLite's
//! `SELECT` of the same rows (`reading.rs`). *Verify* runs on logs of interleaved bulk events
//! built once before the rounds, at two sizes: the log walk alone and the whole `verify`, the
//! projections' replay being the difference, and the walk's linearity as its time per event at
//! the larger size over that at the smaller; beside them SQLite's chain check (every row's hash
//! recomputed and linked) on its interleaved bulk log.
//!
//! The mixed workload (`mixed.rs`, `mixed_sqlite.rs`): each client cycles through the
//! reference stores' commands (lease acquire, renew and release under the fencing token;
//! outbox enqueue, claim and ack; a span's start, event and end with its run's rollup; a
//! registry upsert and a fuel charge), one durable commit per command, at 1, 8 and 64
//! clients: annals from OS threads through `Store` (a commit each) and through `Writer`'s
//! blocking calls (batched), and from tokio tasks through `Writer`;
//! SQLite from threads with the reference stores' tables, indexes and statements' shapes, one
//! `BEGIN IMMEDIATE` transaction per command, with a connection per client and with one
//! shared connection (the better of the two is the ratios' denominator). The bytes on disk
//! per command are the files' growth over the commands run into them.
//!
//! The sharing modes, in every round: single commands and group commit at 64 tasks on
//! stores opened exclusive, single-writer (the default, which the rows above use) and
//! multi-writer; and a single-writer store in this process followed by the real
//! `annals tail --json` in a child process, for the time from a commit's return to the
//! child's line for it, and for the writer's rate with and without the tail beside it. The
//! child is the `annals` binary of the bench's own profile: run
//! `cargo build --release -p annals-cli` first, or those figures are skipped with a note.
//! Then two writer processes on one file at once (`two_writers.rs`, this binary's own
//! children): annals in multi-writer mode against SQLite with a busy timeout, each process
//! running single durable lease commands on a resource of its own, summed.
//! `-- --sharing-only` runs these figures alone (with `--quick` and `--check` as above) and
//! writes them to `target/side_by_side_sharing.json`.
//!
//! Memory: the peak resident set of every `annals` command (`memory.rs`), each run as a child
//! process under GNU time on demo logs of 500,000 and 1,000,000 records (20,000 and 40,000
//! with `--quick`, 2,000 and 4,000 with `--smoke`), against issue 14's targets (at most 100 MB
//! at the larger log, at most 1.2 times the smaller's); `-- --memory-only` runs them alone and
//! writes `target/side_by_side_memory.json`. Like the tail rows they need the `annals`
//! binary of the bench's profile. The same runs weigh the demo log on disk against its export
//! (issue 14's bound: at most 1.5 times, at the smaller size).
//!
//! For profilers and one-off weighing: `--profile-verify [SIZES…]`, `--profile-bulk
//! [--interleaved]`, `--profile-scan`, `--profile-group`, `--command-trees`, and
//! `--keep-mixed` (the mixed commands' logs left under `target/tmp/mixed-kept/`).

mod bulk;
mod check;
mod commands;
mod doc_table;
#[path = "../support/history.rs"]
mod history;
mod journal;
mod memory;
mod mixed;
mod mixed_sqlite;
mod overlay;
mod reading;
mod report;
mod round;
mod samples;
mod sharing;
mod sqlite;
mod two_writers;
mod work;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use redb::TableDefinition;

use crate::bulk::{INTERLEAVED_STREAMS, bulk_annals, bulk_annals_over, bulk_redb};
use crate::check::{check, refresh_docs, write_baseline};
use crate::commands::{
    RowsLie, command_trees, group_annals, leaf_costs, single_annals, single_annals_in, single_redb,
    single_redb_in,
};
use crate::memory::{command_memory, rebuild_rss, rss_child};
use crate::reading::{rebuild, scan_annals, scan_annals_owned, scan_redb};
use crate::report::{print_misses, print_sharing_table, print_table, report, sharing_report};
use crate::round::{build_verify_logs, run_round};
use crate::samples::Samples;
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
    /// `--smoke`: tiny sizes and one round, to see every row run end to end; its figures mean
    /// nothing.
    pub(crate) smoke: bool,
    /// `--write-baseline`: write this run's ratios to `benches/baseline.json`.
    pub(crate) write_baseline: bool,
    /// Streams the interleaved bulk events go to in turn.
    pub(crate) streams: usize,
    /// The verify logs' sizes in events, the smaller first (4,000,000 in a full run only).
    pub(crate) verify_sizes: [usize; 2],
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(at) = args.iter().position(|a| a == "--two-writers-child") {
        two_writers::two_writers_child(&args[at + 1..]);
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--rss-child") {
        let path = args.get(at + 1).expect("--rss-child needs a path");
        rss_child(Path::new(path));
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--journal-rss-child") {
        let path = args.get(at + 1).expect("--journal-rss-child needs a path");
        let commands = args
            .get(at + 2)
            .and_then(|n| n.parse().ok())
            .expect("--journal-rss-child needs a command count");
        journal::journal_rss_child(Path::new(path), commands);
        return;
    }
    if args.iter().any(|a| a == "--docs") {
        // The ratios table of docs/performance.md from the committed baseline, no run.
        refresh_docs();
        return;
    }
    if args.iter().any(|a| a == "--profile-verify") {
        // Verify alone, for its targets and a profiler: interleaved bulk logs of 100,000 and
        // 4,000,000 events (or the sizes after the flag), kept under the target directory and
        // reused by later runs, each verified three times (walk, whole), then the walk's
        // linearity (time per event at the larger size over the smaller).
        profile_verify(&args);
        return;
    }
    if args.iter().any(|a| a == "--profile-bulk") {
        // For a profiler: annals' bulk append, scan and rebuild alone; with `--interleaved`,
        // the bulk over INTERLEAVED_STREAMS streams in turn.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        if args.iter().any(|a| a == "--interleaved") {
            let rate = bulk_annals_over(&log, 200_000, 0, INTERLEAVED_STREAMS);
            println!("bulk interleaved {rate:.0}/s");
            return;
        }
        println!("bulk {:.0}/s", bulk_annals(&log, 100_000, 0));
        println!("scan {:.0}/s", scan_annals(&log));
        println!("rebuild {:.0}/s", rebuild(&log));
        return;
    }
    if args.iter().any(|a| a == "--leaf-costs") {
        // What a durable commit costs in redb for each leaf and each table it dirties.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let lies = [
            RowsLie::One,
            RowsLie::Clustered(10),
            RowsLie::Spread(10),
            RowsLie::Tables(10),
        ];
        for round in 0..3 {
            for (n, lie) in lies.into_iter().enumerate() {
                let path = dir.path().join(format!("leaves-{n}-{round}.redb"));
                let run = leaf_costs(&path, lie, Duration::from_secs(3));
                println!(
                    "{lie:?}: {:.0} commits/s, {:.0} bytes written and {:.2} disk flushes per \
                     commit",
                    run.per_s(),
                    run.written_per_commit(),
                    run.flushes_per_commit(),
                );
            }
        }
        return;
    }
    if args.iter().any(|a| a == "--command-trees") {
        // What a command's storage alone costs: raw redb writing one tree per commit, against
        // the three an annals command writes, with no hashing, deciding or applying; and
        // annals itself (also the mode to profile single commands under); then both shared
        // as annals' default shares its file, and annals exclusive.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        for round in 0..4 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = single_redb(&at("one"), run_for);
            let three = command_trees(&at("three"), run_for);
            let annals = single_annals(&at("annals"), run_for);
            let shared = single_redb_in(
                &at("one-shared"),
                redb::ConcurrencyMode::SingleWriter,
                run_for,
            );
            let exclusive = single_annals_in(&at("annals-x"), annals::Sharing::Exclusive, run_for);
            println!(
                "commits/s (bytes written, disk flushes per commit): one tree {:.0} ({:.0}, \
                 {:.2}), three trees {:.0} ({:.0}, {:.2}; {:.2} of one), annals {:.0} ({:.0}, \
                 {:.2}; {:.2} of one); shared as annals' default: one tree {:.0} ({:.2}), \
                 annals {:.2} of it; annals exclusive {:.0} ({:.2}; {:.2} of one)",
                one.per_s(),
                one.written_per_commit(),
                one.flushes_per_commit(),
                three.per_s(),
                three.written_per_commit(),
                three.flushes_per_commit(),
                three.per_s() / one.per_s(),
                annals.per_s(),
                annals.written_per_commit(),
                annals.flushes_per_commit(),
                annals.per_s() / one.per_s(),
                shared.per_s(),
                shared.flushes_per_commit(),
                annals.per_s() / shared.per_s(),
                exclusive.per_s(),
                exclusive.flushes_per_commit(),
                exclusive.per_s() / one.per_s(),
            );
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-group") {
        // For a profiler: group commit at 1 and 64 tasks.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let runtime = tokio_runtime();
        for round in 0..3 {
            let at = |name: &str| dir.path().join(format!("{name}-{round}.redb"));
            let run_for = Duration::from_secs(2);
            let one = runtime.block_on(group_annals(&at("group-1"), 1, run_for));
            let many = runtime.block_on(group_annals(&at("group-64"), GROUP_TASKS, run_for));
            println!("group 1: {one:.0}/s, 64: {many:.0}/s, {:.1}x", many / one);
        }
        return;
    }
    if args.iter().any(|a| a == "--profile-mixed") {
        // For a profiler: the mixed commands through a `Writer` at 1, 8 and 64 tasks, with
        // the commands each commit carried and the disk's flushes per commit.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let runtime = tokio_runtime();
        for round in 0..3 {
            for clients in [1, 8, 64] {
                let path = dir.path().join(format!("mixed-{clients}-{round}.redb"));
                let flushes = crate::samples::disk_flushes();
                let written = crate::samples::bytes_written();
                let run = runtime.block_on(crate::mixed::mixed_tasks(
                    &path,
                    clients,
                    Duration::from_secs(3),
                ));
                let commits = run.commits.max(1) as f64;
                println!(
                    "mixed {clients}: {:.0}/s, {:.2} commands per commit, {:.2} flushes and \
                     {:.0} bytes written per commit",
                    run.per_s,
                    run.commands as f64 / commits,
                    flushes
                        .zip(crate::samples::disk_flushes())
                        .map_or(f64::NAN, |(before, after)| (after - before) as f64
                            / commits),
                    (crate::samples::bytes_written() - written) as f64 / commits,
                );
            }
        }
        return;
    }
    if let Some(at) = args.iter().position(|a| a == "--profile-sequential") {
        // For callgrind: COMMANDS (default 3,000) of the mix, one at a time, on a fresh
        // default-mode (single-writer, journaled) log; a count, not a time, so that two
        // builds' instruction counts compare.
        let commands = args
            .get(at + 1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(3_000);
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        crate::journal::sequential_count(&dir.path().join("sequential.redb"), commands);
        return;
    }
    if args.iter().any(|a| a == "--keep-mixed") {
        // The mixed commands at 64 tasks for 3 s, sequentially for 3 s, into logs kept under
        // target/tmp/mixed-kept/, for `annals stats --tables` and `annals export` to weigh.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mixed-kept");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a folder");
        let runtime = tokio_runtime();
        let run_for = Duration::from_secs(3);
        let tasks = dir.join("tasks-64.redb");
        let run = runtime.block_on(crate::mixed::mixed_tasks(&tasks, 64, run_for));
        println!("{}: {} commands", tasks.display(), run.commands);
        let sequential = dir.join("threads-1.redb");
        let run = crate::mixed::mixed_threads(&sequential, 1, run_for);
        println!("{}: {} commands", sequential.display(), run.commands);
        return;
    }
    if args.iter().any(|a| a == "--profile-scan") {
        // For a profiler: annals' scan alone, many times over one log.
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a temporary folder");
        let log = dir.path().join("bulk.redb");
        let raw = dir.path().join("bulk-raw.redb");
        bulk_annals(&log, 100_000, 0);
        bulk_redb(&raw, 100_000, 1);
        for _ in 0..10 {
            println!("scan {:.0}/s", scan_annals(&log));
            println!("owned scan {:.0}/s", scan_annals_owned(&log));
            println!("raw redb scan {:.0}/s", scan_redb(&raw));
        }
        return;
    }
    let smoke = args.iter().any(|a| a == "--smoke");
    let quick = smoke || args.iter().any(|a| a == "--quick");
    let settings = Settings {
        quick,
        check: args.iter().any(|a| a == "--check"),
        sharing_only: args.iter().any(|a| a == "--sharing-only"),
        tail_binary: annals_binary(),
        rounds: match (smoke, quick) {
            (true, _) => 1,
            (_, true) => 3,
            _ => 5,
        },
        events: match (smoke, quick) {
            (true, _) => 5_000,
            (_, true) => 100_000,
            _ => 1_000_000,
        },
        timed: match (smoke, quick) {
            (true, _) => Duration::from_millis(300),
            (_, true) => Duration::from_secs(1),
            _ => Duration::from_secs(3),
        },
        smoke,
        write_baseline: args.iter().any(|a| a == "--write-baseline"),
        streams: if smoke { 1_000 } else { INTERLEAVED_STREAMS },
        verify_sizes: match (smoke, quick) {
            (true, _) => [2_000, 10_000],
            (_, true) => [20_000, 100_000],
            _ => [100_000, 4_000_000],
        },
    };
    let started = Instant::now();
    let runtime = tokio_runtime();
    let mut samples = Samples::default();
    if settings.tail_binary.is_none() {
        println!(
            "note: no annals binary beside this bench; the commit-to-tail figures are skipped \
             (run `cargo build --release -p annals-cli` first)"
        );
    }
    if args.iter().any(|a| a == "--overlay-only") {
        for round in 0..settings.rounds {
            eprintln!("round {} of {} (overlay only)", round + 1, settings.rounds);
            overlay::run_overlay(settings.timed, round, &mut samples);
        }
        overlay::print_overlay(&samples, settings.rounds);
        return;
    }
    if args.iter().any(|a| a == "--journal-only") {
        for round in 0..settings.rounds {
            eprintln!("round {} of {} (journal only)", round + 1, settings.rounds);
            journal::run_journal(settings.timed, &runtime, round, &mut samples);
        }
        let report = journal::print_journal(&samples, settings.rounds);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("side_by_side_journal.json");
        let text = serde_json::to_string_pretty(&report).expect("JSON");
        std::fs::write(&path, text + "\n").expect("write the JSON report");
        println!("figures written to {}", path.display());
        history::append_if_asked(
            &report,
            "side_by_side",
            &[],
            "side_by_side_journal.json",
            &args,
        );
        return;
    }
    if settings.sharing_only {
        for round in 0..settings.rounds {
            eprintln!("round {} of {} (sharing only)", round + 1, settings.rounds);
            run_sharing(&settings, &runtime, round, &mut samples);
        }
        let report = sharing_report(&settings, &samples, started.elapsed());
        let missed = print_sharing_table(&settings, &samples, &report);
        print_misses(&samples, &missed);
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("side_by_side_sharing.json");
        let text = serde_json::to_string_pretty(&report).expect("JSON");
        std::fs::write(&path, text + "\n").expect("write the JSON report");
        println!("figures written to {}", path.display());
        if settings.write_baseline {
            println!("--write-baseline needs the full set of ratios: run without --sharing-only");
        }
        history::append_if_asked(
            &report,
            "side_by_side",
            &[],
            "side_by_side_sharing.json",
            &args,
        );
        finish(&settings, &samples, &report, &missed);
        return;
    }
    if args.iter().any(|a| a == "--memory-only") {
        // The commands' peak memory alone, on demo logs of two sizes.
        let memory = command_memory(&settings).unwrap_or(serde_json::Value::Null);
        let missed = crate::report::print_memory_table(&memory);
        for miss in &missed {
            println!("- {miss}");
        }
        let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("the target directory")
            .join("side_by_side_memory.json");
        let text = serde_json::to_string_pretty(&memory).expect("JSON");
        std::fs::write(&path, text + "\n").expect("write the JSON report");
        println!("figures written to {}", path.display());
        return;
    }
    let (verify_dir, verify_logs) = build_verify_logs(&settings);
    let mut last_round_log = None;
    for round in 0..settings.rounds {
        eprintln!("round {} of {}", round + 1, settings.rounds);
        let (dir, annals_log) = run_round(&settings, &runtime, &verify_logs, &mut samples);
        run_sharing(&settings, &runtime, round, &mut samples);
        last_round_log = Some((dir, annals_log));
    }
    let (dir, log) = last_round_log.expect("at least one round");
    let (rss_1x, rss_2x) = rebuild_rss(&settings, &log);
    drop(dir);
    drop(verify_dir);
    let memory = command_memory(&settings);
    let mut report = report(&settings, &samples, rss_1x, rss_2x, started.elapsed());
    let missed = print_table(&settings, &samples, &report);
    print_misses(&samples, &missed);
    if let Some(memory) = memory {
        for miss in crate::report::print_memory_table(&memory) {
            println!("- {miss}");
        }
        report["command_peak_rss_bytes"] = memory;
    }
    let path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("side_by_side.json");
    let text = serde_json::to_string_pretty(&report).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the JSON report");
    println!("figures written to {}", path.display());
    if settings.write_baseline {
        write_baseline(&settings, &samples, &report);
    }
    history::append_if_asked(&report, "side_by_side", &[], "side_by_side.json", &args);
    finish(&settings, &samples, &report, &missed);
}

/// With `--check`, compares the run with the baseline and exits 1 on a regression.
fn finish(settings: &Settings, samples: &Samples, report: &serde_json::Value, missed: &[&str]) {
    if !settings.check {
        return;
    }
    let failures = check(settings, samples, report, missed);
    if failures > 0 {
        eprintln!("--check: {failures} regression(s) beyond the noise, or guard(s) missed");
        std::process::exit(1);
    }
}

/// `--profile-verify [SIZES…]`: the verify rows alone, best of three per size.
fn profile_verify(args: &[String]) {
    let sizes: Vec<usize> = args
        .iter()
        .skip_while(|a| *a != "--profile-verify")
        .skip(1)
        .map_while(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![100_000, 4_000_000]
    } else {
        sizes
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("profile-verify");
    std::fs::create_dir_all(&dir).expect("the profile folder");
    let mut per_event = Vec::new();
    for events in sizes {
        let path = dir.join(format!("verify-{events}.redb"));
        if !path.exists() {
            eprintln!("building the verify log of {events} events");
            let building = path.with_extension("building");
            let _ = std::fs::remove_file(&building);
            bulk::bulk_annals_over(&building, events, 0, INTERLEAVED_STREAMS);
            std::fs::rename(&building, &path).expect("publish the verify log");
        }
        let (mut walk, mut whole) = (0f64, 0f64);
        for _ in 0..3 {
            let split = reading::verify_split(&path);
            walk = walk.max(split.walk);
            whole = whole.max(split.whole);
        }
        println!("verify {events} events: walk {walk:.0}/s, whole {whole:.0}/s");
        per_event.push(1.0 / walk);
    }
    if let (Some(first), Some(last)) = (per_event.first(), per_event.last()) {
        println!(
            "walk linearity (time per event, largest over smallest): {:.2}",
            last / first
        );
    }
}

/// The multi-threaded tokio runtime the async rows run on.
fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_time()
        .build()
        .expect("a tokio runtime")
}
