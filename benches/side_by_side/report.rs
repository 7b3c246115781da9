//! The report: ratios and their targets, the JSON and the table.

use std::time::Duration;

use serde_json::{Value, json};

use crate::samples::Samples;
use crate::sharing::{TAIL_EVENTS, TAIL_GAP};
use crate::{BATCH_EVENTS, Settings};

/// The ratios taken in every round: (key, numerator, denominator, target, whether higher is
/// better). NaN: reported, no target.
pub(crate) const RATIOS: [(&str, &str, &str, f64, bool); 8] = [
    ("vs_redb_single", "single.annals", "single.redb", 0.8, true),
    (
        "vs_sqlite_single",
        "single.annals",
        "single.sqlite",
        1.5,
        true,
    ),
    (
        "single_vs_fsync_floor",
        "single.annals",
        "single.fsync",
        f64::NAN,
        true,
    ),
    (
        "group_commit_speedup",
        "group.annals_64",
        "group.annals_1",
        20.0,
        true,
    ),
    ("vs_sqlite_bulk", "bulk.annals", "bulk.sqlite", 3.0, true),
    ("vs_redb_bulk", "bulk.annals", "bulk.redb", 1.0 / 1.5, true),
    ("verify_vs_blake3", "verify", "blake3", 0.5, true),
    ("vs_redb_scan", "scan.annals", "scan.redb", 0.7, true),
];

/// The sharing figures' ratios, taken in every round as [`RATIOS`] are.
pub(crate) const SHARING_RATIOS: [(&str, &str, &str, f64, bool); 5] = [
    (
        "single_writer_vs_exclusive_single",
        "sharing.single_single_writer",
        "sharing.single_exclusive",
        0.75,
        true,
    ),
    (
        "multi_writer_vs_exclusive_single",
        "sharing.single_multi_writer",
        "sharing.single_exclusive",
        f64::NAN,
        true,
    ),
    (
        "single_writer_vs_exclusive_group64",
        "sharing.group64_single_writer",
        "sharing.group64_exclusive",
        0.9,
        true,
    ),
    (
        "multi_writer_vs_exclusive_group64",
        "sharing.group64_multi_writer",
        "sharing.group64_exclusive",
        f64::NAN,
        true,
    ),
    (
        "tail_writer_slowdown",
        "tail.writer_without",
        "tail.writer_with",
        f64::NAN,
        false,
    ),
];

/// Every ratio: (key, median over rounds, target, whether higher is better).
pub(crate) fn ratios(
    samples: &Samples,
    rss_1x: f64,
    rss_2x: f64,
) -> Vec<(&'static str, f64, f64, bool)> {
    let mut ratios: Vec<_> = RATIOS
        .iter()
        .chain(&SHARING_RATIOS)
        .map(|&(key, _, _, target, higher)| (key, samples.median(key), target, higher))
        .collect();
    ratios.push(("rebuild_rss_2x_vs_1x", rss_2x / rss_1x, 1.2, false));
    ratios
}

pub(crate) fn sharing_ratios(samples: &Samples) -> Vec<(&'static str, f64, f64, bool)> {
    SHARING_RATIOS
        .iter()
        .map(|&(key, _, _, target, higher)| (key, samples.median(key), target, higher))
        .collect()
}

/// The ratios' values into `report` and their targets into `report["targets"]`.
pub(crate) fn add_ratios(report: &mut Value, ratios: Vec<(&'static str, f64, f64, bool)>) {
    let mut targets = serde_json::Map::new();
    for (key, value, target, higher) in ratios {
        report[key] = json!(value);
        if !target.is_nan() {
            let bound = if higher { "min" } else { "max" };
            targets.insert(
                key.into(),
                json!({ bound: target, "met": meets(value, target, higher) }),
            );
        }
    }
    report["targets"] = Value::Object(targets);
}

/// The sharing figures: each mode's single commands and group commit, and the tail's.
pub(crate) fn sharing_json(settings: &Settings, samples: &Samples) -> Value {
    let m = |key| samples.median(key);
    json!({
        "single_durable_cmds_per_s": {
            "exclusive": m("sharing.single_exclusive"),
            "single_writer": m("sharing.single_single_writer"),
            "multi_writer": m("sharing.single_multi_writer"),
        },
        "group_commit_64_cmds_per_s": {
            "exclusive": m("sharing.group64_exclusive"),
            "single_writer": m("sharing.group64_single_writer"),
            "multi_writer": m("sharing.group64_multi_writer"),
        },
        "tail": {
            "binary": settings.tail_binary.as_ref().map(|p| p.display().to_string()),
            "note": "a single-writer store in this process appends one event per durable commit, each after a pause, while `annals tail --from 0 --json` follows in a child process; latency runs from the commit's return to the arrival of the child's line; the writer's rate is of back-to-back appends, with the tail following and without it",
            "events_per_round": TAIL_EVENTS,
            "gap_ms": TAIL_GAP.as_secs_f64() * 1e3,
            "commit_to_line_us": {
                "median": m("tail.latency_median_us"),
                "p99": m("tail.latency_p99_us"),
            },
            "writer_commits_per_s": {
                "without_tail": m("tail.writer_without"),
                "with_tail": m("tail.writer_with"),
            },
        },
    })
}

/// The report of `--sharing-only`.
pub(crate) fn sharing_report(settings: &Settings, samples: &Samples, took: Duration) -> Value {
    let mut report = json!({
        "machine": machine(),
        "quick": settings.quick,
        "rounds": settings.rounds,
        "seconds": took.as_secs_f64(),
        "note": "sharing figures only (--sharing-only); medians over rounds, modes interleaved within each round",
        "sharing": sharing_json(settings, samples),
    });
    add_ratios(&mut report, sharing_ratios(samples));
    report
}

pub(crate) fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let memory_kib = std::fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("MemTotal:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .unwrap_or(0);
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map_or(0, |n| n.get()),
        "memory_bytes": memory_kib * 1024,
        "kernel": kernel.trim(),
        "sqlite": rusqlite::version(),
    })
}

pub(crate) fn report(
    settings: &Settings,
    samples: &Samples,
    rss_1x: f64,
    rss_2x: f64,
    took: Duration,
) -> Value {
    let m = |key| samples.median(key);
    let mut report = json!({
        "machine": machine(),
        "quick": settings.quick,
        "rounds": settings.rounds,
        "bulk_events": settings.events,
        "seconds": took.as_secs_f64(),
        "note": "medians over rounds, contenders interleaved within each round; the machine is shared, so the disk's fsync rate moves between rounds",
        "single_durable_cmds_per_s": {
            "annals": m("single.annals"),
            "redb": m("single.redb"),
            "sqlite": m("single.sqlite"),
            "fsync_floor": m("single.fsync"),
        },
        "bytes_written_per_durable_command": {
            "annals": m("written.annals"),
            "redb": m("written.redb"),
            "sqlite": m("written.sqlite"),
        },
        "group_commit_cmds_per_s": {
            "annals_1": m("group.annals_1"),
            "annals_64": m("group.annals_64"),
            "sqlite_64": m("group.sqlite_64"),
        },
        "bulk_events_per_s": {
            "annals": m("bulk.annals"),
            "redb": m("bulk.redb"),
            "sqlite": m("bulk.sqlite"),
        },
        "rebuild_events_per_s": m("rebuild"),
        "verify_bytes_per_s": m("verify"),
        "blake3_bytes_per_s": m("blake3"),
        "scan_events_per_s": {
            "annals": m("scan.annals"),
            "annals_owned": m("scan.annals_owned"),
            "redb": m("scan.redb")
        },
        "bytes_per_event": { "annals": m("bytes.annals"), "sqlite": m("bytes.sqlite") },
        "rebuild_peak_rss_bytes": { "1x": rss_1x, "2x": rss_2x },
        "phases_ns_per_event": phases(samples),
        "sharing": sharing_json(settings, samples),
    });
    add_ratios(&mut report, ratios(samples, rss_1x, rss_2x));
    report
}

/// Where an annals bulk event's time goes, from figures of the same round: encoding and
/// hashing measured alone; apply as a rebuild's time less an owned scan's (both read the log
/// into `Record`s); the rest of the bulk append is redb's inserts and commit, of which one
/// fdatasync per batch is the disk's share. A scan checks one digest per segment and parses
/// each header; it hashes no record on its own.
pub(crate) fn phases(samples: &Samples) -> Value {
    let ns = |per_second: f64| 1e9 / per_second;
    let bulk = ns(samples.median("bulk.annals"));
    let encode = samples.median("phase.encode_ns");
    let hash = samples.median("phase.hash_ns");
    let apply = (ns(samples.median("rebuild")) - ns(samples.median("scan.annals_owned"))).max(0.0);
    json!({
        "bulk_total": bulk,
        "encode": encode,
        "hash": hash,
        "apply": apply,
        "redb_insert_and_commit": (bulk - encode - hash - apply).max(0.0),
        "fsync_per_event_in_batches_of_1000": ns(samples.median("single.fsync")) / BATCH_EVENTS as f64,
        "scan_borrowed": ns(samples.median("scan.annals")),
        "scan_owned": ns(samples.median("scan.annals_owned")),
        "raw_redb_insert": ns(samples.median("bulk.redb")),
        "raw_redb_scan": ns(samples.median("scan.redb")),
    })
}

pub(crate) fn meets(value: f64, target: f64, higher: bool) -> bool {
    if higher {
        value >= target
    } else {
        value <= target
    }
}

pub(crate) fn print_table(settings: &Settings, samples: &Samples, report: &Value) -> usize {
    let row = |figure: &str, contender: &str, key: &str, unit: &str| {
        print_row(samples, figure, contender, key, unit);
    };
    println!(
        "annals side by side: {} bulk events, {} rounds, medians (range over rounds)",
        settings.events, settings.rounds
    );
    println!(
        "| {:<26} | {:<13} | {:>14} | {:>25} |",
        "figure", "contender", "median", "range"
    );
    println!("|{:-<28}|{:-<15}|{:->16}|{:->27}|", "", "", "", "");
    for (contender, key) in [
        ("annals", "single.annals"),
        ("raw redb", "single.redb"),
        ("SQLite", "single.sqlite"),
        ("fdatasync", "single.fsync"),
    ] {
        row("durable single cmds/s", contender, key, "/s");
    }
    for (contender, key) in [
        ("annals", "written.annals"),
        ("raw redb", "written.redb"),
        ("SQLite", "written.sqlite"),
    ] {
        row("bytes written per command", contender, key, "B");
    }
    for (contender, key) in [
        ("annals 1", "group.annals_1"),
        ("annals 64", "group.annals_64"),
        ("SQLite 64", "group.sqlite_64"),
    ] {
        row("group commit cmds/s", contender, key, "/s");
    }
    for (contender, key) in [
        ("annals", "bulk.annals"),
        ("raw redb", "bulk.redb"),
        ("SQLite", "bulk.sqlite"),
    ] {
        row("bulk events/s", contender, key, "/s");
    }
    row("rebuild events/s", "annals", "rebuild", "/s");
    row("verify bytes/s", "annals", "verify", "B/s");
    row("hash bytes/s", "blake3 alone", "blake3", "B/s");
    row("scan events/s", "annals", "scan.annals", "/s");
    row("scan events/s", "annals owned", "scan.annals_owned", "/s");
    row("scan events/s", "raw redb", "scan.redb", "/s");
    row("bytes per event", "annals", "bytes.annals", "B");
    row("bytes per event", "SQLite", "bytes.sqlite", "B");
    let rss = &report["rebuild_peak_rss_bytes"];
    println!(
        "rebuild peak RSS: {} B at 1x, {} B at 2x",
        human(rss["1x"].as_f64().unwrap_or(f64::NAN)),
        human(rss["2x"].as_f64().unwrap_or(f64::NAN))
    );
    println!(
        "phases, ns per bulk event: {}",
        report["phases_ns_per_event"]
    );
    print_sharing_rows(samples);
    println!();
    let mut keys = vec![
        "vs_redb_single",
        "vs_sqlite_single",
        "single_vs_fsync_floor",
        "group_commit_speedup",
        "vs_sqlite_bulk",
        "vs_redb_bulk",
        "verify_vs_blake3",
        "vs_redb_scan",
        "rebuild_rss_2x_vs_1x",
    ];
    keys.extend(SHARING_RATIOS.iter().map(|&(key, ..)| key));
    print_ratios(report, &keys)
}

/// A row of the figures' table: the median and the range over rounds.
pub(crate) fn print_row(samples: &Samples, figure: &str, contender: &str, key: &str, unit: &str) {
    let (low, high) = samples.spread(key);
    println!(
        "| {figure:<26} | {contender:<13} | {:>14} | {:>25} |",
        format!("{} {unit}", human(samples.median(key))),
        format!("{} – {}", human(low), human(high)),
    );
}

/// The sharing figures' rows, under the table's header.
pub(crate) fn print_sharing_rows(samples: &Samples) {
    let row = |figure: &str, contender: &str, key: &str, unit: &str| {
        print_row(samples, figure, contender, key, unit);
    };
    println!();
    println!(
        "| {:<26} | {:<13} | {:>14} | {:>25} |",
        "sharing figure", "mode", "median", "range"
    );
    println!("|{:-<28}|{:-<15}|{:->16}|{:->27}|", "", "", "", "");
    for (mode, key) in [
        ("exclusive", "sharing.single_exclusive"),
        ("single-writer", "sharing.single_single_writer"),
        ("multi-writer", "sharing.single_multi_writer"),
    ] {
        row("durable single cmds/s", mode, key, "/s");
    }
    for (mode, key) in [
        ("exclusive", "sharing.group64_exclusive"),
        ("single-writer", "sharing.group64_single_writer"),
        ("multi-writer", "sharing.group64_multi_writer"),
    ] {
        row("group commit 64 cmds/s", mode, key, "/s");
    }
    row(
        "tail latency median",
        "single-writer",
        "tail.latency_median_us",
        "µs",
    );
    row(
        "tail latency p99",
        "single-writer",
        "tail.latency_p99_us",
        "µs",
    );
    row(
        "writer commits/s, no tail",
        "single-writer",
        "tail.writer_without",
        "/s",
    );
    row(
        "writer commits/s, tailed",
        "single-writer",
        "tail.writer_with",
        "/s",
    );
}

/// The `--sharing-only` table: the sharing rows and their ratios. Returns the ratios missed.
pub(crate) fn print_sharing_table(settings: &Settings, samples: &Samples, report: &Value) -> usize {
    println!(
        "annals sharing modes and tail (--sharing-only): {} rounds, medians (range over rounds)",
        settings.rounds
    );
    print_sharing_rows(samples);
    println!();
    let keys: Vec<_> = SHARING_RATIOS.iter().map(|&(key, ..)| key).collect();
    print_ratios(report, &keys)
}

/// The ratios' table, with their targets. Returns how many missed their target.
pub(crate) fn print_ratios(report: &Value, keys: &[&str]) -> usize {
    println!(
        "| {:<34} | {:>8} | {:>8} | {:<4} |",
        "ratio", "value", "target", "met"
    );
    println!("|{:-<36}|{:->10}|{:->10}|{:-<6}|", "", "", "", "");
    let mut missed = 0;
    let targets = &report["targets"];
    for &key in keys {
        let value = report[key].as_f64().unwrap_or(f64::NAN);
        let (target, met) = match targets.get(key) {
            Some(t) => {
                let bound = t
                    .get("min")
                    .map(|b| format!("≥ {:.2}", b.as_f64().unwrap_or(f64::NAN)))
                    .or_else(|| {
                        t.get("max")
                            .map(|b| format!("≤ {:.2}", b.as_f64().unwrap_or(f64::NAN)))
                    })
                    .unwrap_or_default();
                let met = t["met"].as_bool().unwrap_or(false);
                if !met {
                    missed += 1;
                }
                (bound, if met { "yes" } else { "NO" })
            }
            None => ("—".to_owned(), ""),
        };
        println!("| {key:<34} | {value:>8.2} | {target:>8} | {met:<4} |");
    }
    missed
}

/// A figure with three significant digits and an SI suffix.
pub(crate) fn human(value: f64) -> String {
    if !value.is_finite() {
        return "n/a".into();
    }
    let (scaled, suffix) = if value >= 1e9 {
        (value / 1e9, "G")
    } else if value >= 1e6 {
        (value / 1e6, "M")
    } else if value >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let digits = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    format!("{scaled:.digits$}{suffix}")
}
