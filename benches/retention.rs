//! Retention: a demo log of `--records` records (1,000,000 by default) cut down to its last
//! `--keep` (100,000), measured side by side (issue 34):
//!
//! - the file's bytes on disk at the cut's peak (sampled while it runs, issue 50 asks at most
//!   1.25×), its length after the cut and its bytes after `compact`, against before;
//! - `verify` of the cut log against `verify` of a demo log of `--keep` records alone;
//! - the cut's throughput (records archived per second) and its peak resident memory, in a
//!   child process of its own (`VmHWM`);
//! - single durable appends per second from another thread while the cut runs in the same
//!   process, against the same appends with no cut beside them;
//! - the seed a new replica starts from without the archive (`Backup::write` of the cut log):
//!   its bytes against before, and the time to make it.
//!
//! `cargo bench --bench retention` prints a Markdown table and a JSON line. `--records` and
//! `--keep` make it small enough to smoke-run (`.ci/run`); `--history` appends the JSON line's
//! figures to `docs/performance-history.csv`, a row each.

#[path = "support/history.rs"]
mod history;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use annals::{Durability, ExpectedVersion, NewEvent, Position, Sharing, Store, StoreOptions};

struct Settings {
    records: u64,
    keep: u64,
}

fn settings() -> Settings {
    let mut settings = Settings {
        records: 1_000_000,
        keep: 100_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{arg} takes a number"))
        };
        match arg.as_str() {
            "--records" => settings.records = value(),
            "--keep" => settings.keep = value(),
            // cargo bench passes --bench; `--history` is read by `history`.
            "--bench" | "--history" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    assert!(
        settings.keep < settings.records,
        "--keep must be below --records"
    );
    settings
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--archive-child") {
        archive_child(
            Path::new(&args[2]),
            Position(args[3].parse().expect("a position")),
            Path::new(&args[4]),
        );
        return;
    }
    let settings = settings();
    let dir = tempfile::tempdir_in(
        std::env::var_os("ANNALS_BENCH_DIR").map_or_else(std::env::temp_dir, PathBuf::from),
    )
    .expect("a folder for the logs");
    let log = dir.path().join("log.redb");
    eprintln!("writing {} demo records…", settings.records);
    let pruned = demo_log(&log, settings.records);
    let head = Store::open_read_only(&log)
        .expect("the log")
        .snapshot()
        .expect("head")
        .head()
        .expect("head")
        .next
        .0;
    let before = Position(head - settings.keep);
    // Both sides compacted: a log written live holds free pages, which `compact` gives back.
    let _compacted =
        annals::maintenance::Compaction::of_file(&log, Duration::ZERO).expect("compact");
    let bytes_before = std::fs::metadata(&log).expect("the log").len();
    let disk_before = disk_bytes(&log);
    let copy = dir.path().join("copy.redb");
    std::fs::copy(&log, &copy).expect("a copy for the append measurement");

    eprintln!("cutting before {before} in a child process…");
    let archive = dir.path().join("log-0.archive");
    let (peak_bytes, cut_seconds, peak_disk) = archive_in_child(&log, before, &archive);
    let bytes_after = std::fs::metadata(&log).expect("the log").len();
    let archive_bytes = std::fs::metadata(&archive).expect("the archive").len();
    let compacted =
        annals::maintenance::Compaction::of_file(&log, Duration::ZERO).expect("compact");
    let bytes_compacted = std::fs::metadata(&log).expect("the log").len();
    let footprint =
        annals::maintenance::Footprint::of(&Store::open_read_only(&log).expect("the log"))
            .expect("footprint");
    let mut largest = footprint.tables.clone();
    largest.sort_by_key(|table| std::cmp::Reverse(table.page_bytes()));
    eprintln!("after the cut and compact, the largest tables:");
    for table in &largest {
        eprintln!(
            "  {:<32} {:>9} rows {:>8} in pages, {:>8} stored",
            table.name,
            table.rows,
            mb(table.page_bytes()),
            mb(table.stored_bytes)
        );
    }
    eprintln!("  outside tables {}", mb(footprint.outside_tables()));
    let _ = compacted;
    eprintln!("copying the cut log as a replica's seed…");
    let seed = dir.path().join("seed.redb");
    let started = Instant::now();
    let backup =
        annals::maintenance::Backup::write(&Store::open_read_only(&log).expect("the log"), &seed)
            .expect("the seed");
    let seed_seconds = started.elapsed().as_secs_f64();

    eprintln!(
        "verifying the cut log, and a log of {} records alone…",
        settings.keep
    );
    let verify_cut = time_verify(&log);
    let alone = dir.path().join("alone.redb");
    let _pruned = demo_log(&alone, settings.keep);
    let verify_alone = time_verify(&alone);

    eprintln!("appending beside an in-process cut…");
    let (beside, without) = appends_beside_a_cut(&copy, before, &dir.path().join("copy-0.archive"));

    let archived = before.0;
    eprintln!("the demo pruned {pruned} runs' detail as it went");
    let rows = [
        (
            "file bytes on disk at the cut's peak / before",
            format!("{:.3}", peak_disk as f64 / disk_before as f64),
            format!("{} / {}", mb(peak_disk), mb(disk_before)),
        ),
        (
            "file length right after the cut (redb's sparse growth) / before",
            format!("{:.3}", bytes_after as f64 / bytes_before as f64),
            format!("{} / {}", mb(bytes_after), mb(bytes_before)),
        ),
        (
            "file bytes after the cut and `compact` / before",
            format!("{:.3}", bytes_compacted as f64 / bytes_before as f64),
            format!("{} / {}", mb(bytes_compacted), mb(bytes_before)),
        ),
        (
            "verify of the cut log / of a log of the kept records alone",
            format!("{:.2}", verify_cut / verify_alone),
            format!("{verify_cut:.2} s / {verify_alone:.2} s"),
        ),
        (
            "cut throughput, records archived per second",
            format!("{:.0}", archived as f64 / cut_seconds),
            format!("{archived} records in {cut_seconds:.1} s"),
        ),
        (
            "cut peak resident memory",
            mb(peak_bytes as u64),
            String::new(),
        ),
        (
            "seed of the cut log (`Backup::write`) bytes / before",
            format!("{:.3}", backup.bytes as f64 / bytes_before as f64),
            format!(
                "{} / {} in {seed_seconds:.1} s",
                mb(backup.bytes),
                mb(bytes_before)
            ),
        ),
        (
            "durable appends/s beside the cut / without",
            format!("{:.2}", beside / without),
            format!("{beside:.0} / {without:.0}"),
        ),
    ];
    let table = format!(
        "{} demo records cut to the last {}",
        settings.records, settings.keep
    );
    println!("| {table} | ratio or figure | measured |");
    println!("|---|---:|---|");
    for (what, figure, measured) in &rows {
        println!("| {what} | {figure} | {measured} |");
    }
    let figures = serde_json::json!({
            "records": head,
            "kept": settings.keep,
            "bytes_before": bytes_before,
            "bytes_after": bytes_after,
            "disk_bytes_before": disk_before,
            "disk_bytes_peak": peak_disk,
            "bytes_after_compact": bytes_compacted,
            "archive_bytes": archive_bytes,
            "verify_cut_seconds": verify_cut,
            "verify_kept_alone_seconds": verify_alone,
            "cut_seconds": cut_seconds,
            "cut_peak_rss_bytes": peak_bytes,
            "appends_per_second_beside_cut": beside,
            "appends_per_second_without": without,
            "seed_bytes": backup.bytes,
            "seed_seconds": seed_seconds,
    });
    println!("{figures}");
    let env = ["ANNALS_BENCH_DIR"];
    history::append_if_asked(&figures, "retention", &env, &table, &args[1..]);
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// Records the demo writes between two prunes of the runs' detail.
const PRUNE_EVERY_RECORDS: u64 = 25_000;

/// How long a finished run's detail stays before it is pruned, in the demo's time (about
/// 140 records a second of it): half an hour, about 250,000 records.
const RUN_RETENTION_MS: u64 = 30 * 60 * 1000;

/// A demo log of at least `records` records, written with deferred commits (exclusive), as a
/// host with a retention period writes it: every [`PRUNE_EVERY_RECORDS`] the detail of the
/// runs that ended more than [`RUN_RETENTION_MS`] before is pruned (`RunCommand::Prune`, as
/// the activity store prunes after its retention period). The demo resumes where it stopped.
fn demo_log(path: &Path, records: u64) -> u64 {
    let store = Store::open_with(
        path,
        StoreOptions {
            create: true,
            sharing: Sharing::Exclusive,
            ..StoreOptions::default()
        },
    )
    .expect("a new log");
    let mut pruned = 0;
    while store.snapshot().expect("head").head().expect("head").next.0 < records {
        let chunk = PRUNE_EVERY_RECORDS
            .min(records - store.snapshot().expect("head").head().expect("head").next.0);
        let _report =
            annals::demo::run_with(&store, Durability::Deferred, chunk, |_| {}).expect("the demo");
        pruned += prune_runs(&store, RUN_RETENTION_MS);
    }
    store.close().expect("close");
    pruned
}

/// Prunes the detail of every run that ended more than `retention_ms` before the log's last
/// record; returns how many.
fn prune_runs(store: &Store, retention_ms: u64) -> u64 {
    let head = store.snapshot().expect("head").head().expect("head").next.0;
    let now_ms = store
        .snapshot()
        .expect("read")
        .get(Position(head - 1))
        .expect("read")
        .expect("the last record")
        .at_ms;
    let mut pruned = 0;
    loop {
        let prune = annals::runs::RunCommand::Prune {
            digest_floor_at_ms: now_ms.saturating_sub(retention_ms),
            detail_retention_ms: retention_ms,
            hard_ceiling_ms: retention_ms,
            batch: 500,
            now_ms,
        };
        let outcome = store
            .write_with(Durability::Deferred, |session| session.execute(&prune))
            .expect("prune");
        match outcome {
            annals::runs::RunCommandOutcome::Pruned { runs, .. } if !runs.is_empty() => {
                pruned += runs.len() as u64;
            }
            _ => {
                store.flush().expect("flush");
                return pruned;
            }
        }
    }
}

fn time_verify(path: &Path) -> f64 {
    let store = Store::open_read_only(path).expect("the log");
    let started = Instant::now();
    let report = annals::Audit::of(&store).verify().expect("verify");
    let seconds = started.elapsed().as_secs_f64();
    assert!(report.is_sound(), "{:?}", report.problem);
    seconds
}

fn archive_in_child(log: &Path, before: Position, archive: &Path) -> (f64, f64, u64) {
    let mut child = std::process::Command::new(std::env::current_exe().expect("this program"))
        .arg("--archive-child")
        .arg(log)
        .arg(before.0.to_string())
        .arg(archive)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("a child");
    // The file's bytes on disk while the cut runs, sampled until the child exits: the most
    // it took at once. redb grows a file's length by doubling, sparse, so its length says
    // little; the blocks it holds are what a full disk refuses.
    let mut peak_disk = disk_bytes(log);
    while child.try_wait().expect("the child").is_none() {
        peak_disk = peak_disk.max(disk_bytes(log));
        std::thread::sleep(Duration::from_millis(1));
    }
    let output = child.wait_with_output().expect("the child's output");
    peak_disk = peak_disk.max(disk_bytes(log));
    assert!(
        output.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    let peak = words.next().and_then(|w| w.parse().ok()).expect("the peak");
    let seconds = words
        .next()
        .and_then(|w| w.parse().ok())
        .expect("the seconds");
    (peak, seconds, peak_disk)
}

/// The bytes the file at `path` holds on disk (its blocks), 0 once it is gone.
fn disk_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or(0, |metadata| metadata.blocks() * 512)
}

/// In the child: open the log, cut it, print the peak resident set in bytes and the cut's
/// seconds.
fn archive_child(log: &Path, before: Position, archive: &Path) {
    let store = Store::open_with(log, annals::StoreOptions::default()).expect("the log");
    let started = Instant::now();
    let _report = annals::archive::Archives::of(&store)
        .archive_before(before, archive)
        .expect("the cut");
    let seconds = started.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM");
    println!("{} {seconds}", kib * 1024.0);
}

/// Single durable appends per second from one thread while another cuts the log (the same
/// store), then the same appends for as long again with no cut.
fn appends_beside_a_cut(log: &Path, before: Position, archive: &Path) -> (f64, f64) {
    let store = Arc::new(Store::open_with(log, annals::StoreOptions::default()).expect("the log"));
    let done = Arc::new(AtomicBool::new(false));
    let appended = Arc::new(AtomicU64::new(0));
    let appender = {
        let (store, done, appended) =
            (Arc::clone(&store), Arc::clone(&done), Arc::clone(&appended));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                append_one(&store);
                appended.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    let _report = annals::archive::Archives::of(&store)
        .archive_before(before, archive)
        .expect("the cut");
    done.store(true, Ordering::Relaxed);
    appender.join().expect("the appender");
    let elapsed = started.elapsed();
    let beside = appended.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64();
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed() < elapsed.max(Duration::from_secs(2)) {
        append_one(&store);
        count += 1;
    }
    let without = count as f64 / started.elapsed().as_secs_f64();
    (beside, without)
}

fn append_one(store: &Store) {
    let _outcome = store
        .append(
            "bench/appends",
            ExpectedVersion::Any,
            &[NewEvent::new("bench.append", 0, vec![7u8; 200])],
        )
        .expect("an append");
}
