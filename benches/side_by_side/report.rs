//! The report: ratios and their targets, the JSON and the table.

use std::time::Duration;

use serde_json::{Value, json};

use crate::samples::Samples;
use crate::sharing::{TAIL_EVENTS, TAIL_GAP};
use crate::{BATCH_EVENTS, Settings};

/// The ratios taken in every round: (key, numerator, denominator, target, whether higher is
/// better). NaN: reported, no target. An empty denominator: the figure itself (a target in
/// absolute terms, kept out of the baseline because it measures the machine).
pub(crate) const RATIOS: [(&str, &str, &str, f64, bool); 26] = [
    ("vs_redb_single", "single.annals", "single.redb", 0.9, true),
    // The same, against raw redb sharing its file as annals' default does (both two-phase).
    (
        "vs_redb_single_same_sharing",
        "single.annals",
        "single.redb_shared",
        f64::NAN,
        true,
    ),
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
    // Issue 15's targets.
    (
        "vs_sqlite_bulk_interleaved",
        "bulk_interleaved.annals",
        "bulk_interleaved.sqlite",
        1.5,
        true,
    ),
    (
        "vs_redb_bulk_interleaved",
        "bulk_interleaved.annals",
        "bulk_interleaved.redb",
        1.0,
        true,
    ),
    (
        "vs_sqlite_scan_default",
        "scan.default",
        "scan.sqlite",
        1.0,
        true,
    ),
    (
        "mixed_1_vs_redb_single",
        "mixed.annals_threads_1",
        "single.redb",
        0.9,
        true,
    ),
    (
        "mixed_8_vs_sqlite",
        "mixed.annals_tasks_8",
        "mixed.sqlite_best_8",
        1.5,
        true,
    ),
    (
        "mixed_64_vs_sqlite",
        "mixed.annals_tasks_64",
        "mixed.sqlite_best_64",
        5.0,
        true,
    ),
    (
        "mixed_writer_threads_8_vs_sqlite",
        "mixed.annals_writer_threads_8",
        "mixed.sqlite_best_8",
        1.5,
        true,
    ),
    (
        "mixed_writer_threads_64_vs_sqlite",
        "mixed.annals_writer_threads_64",
        "mixed.sqlite_best_64",
        5.0,
        true,
    ),
    (
        "mixed_threads_8_vs_sqlite",
        "mixed.annals_threads_8",
        "mixed.sqlite_best_8",
        f64::NAN,
        true,
    ),
    (
        "mixed_threads_64_vs_sqlite",
        "mixed.annals_threads_64",
        "mixed.sqlite_best_64",
        f64::NAN,
        true,
    ),
    (
        "mixed_1_vs_sqlite",
        "mixed.annals_threads_1",
        "mixed.sqlite_best_1",
        f64::NAN,
        true,
    ),
    // Issue 14's disk targets: the mixed commands' bytes on disk against SQLite's with the
    // reference schema, and the bulk event's bytes on disk (200-byte payloads).
    (
        "mixed_bytes_on_disk_vs_sqlite",
        "mixed_bytes.annals_64",
        "mixed_bytes.sqlite_64",
        1.0,
        false,
    ),
    ("bulk_bytes_per_event", "bytes.annals", "", 300.0, false),
    // Time per event at the larger verify log over that at the smaller: 1.0 is linear.
    (
        "verify_walk_linearity",
        "verify.walk_small",
        "verify.walk_large",
        1.2,
        false,
    ),
    (
        "verify_whole_linearity",
        "verify.whole_small",
        "verify.whole_large",
        f64::NAN,
        false,
    ),
    (
        "verify_walk_events_per_s",
        "verify.walk_large",
        "",
        2_000_000.0,
        true,
    ),
    (
        "verify_whole_events_per_s",
        "verify.whole_large",
        "",
        500_000.0,
        true,
    ),
];

/// What bounds a ratio, from figures of the same run: printed beside a missed target.
pub(crate) fn bound(key: &str, samples: &Samples) -> String {
    let m = |key| samples.median(key);
    let ratio = |a, b| m(a) / m(b);
    match key {
        "vs_redb_single" | "mixed_1_vs_redb_single" => format!(
            "disk flushes per durable command: annals {:.2}, raw redb {:.2}; annals' default \
             sharing commits in two phases, and raw redb so shared runs {}/s ({:.2} of \
             exclusive, annals {:.2} of it); bytes written: annals {}, raw redb {}",
            m("flushes.annals"),
            m("flushes.redb"),
            human(m("single.redb_shared")),
            ratio("single.redb_shared", "single.redb"),
            ratio("single.annals", "single.redb_shared"),
            human(m("written.annals")),
            human(m("written.redb"))
        ),
        "two_writer_processes_vs_sqlite" => format!(
            "each writer's turn takes the other's frames from the shared journal into its \
             overlay (a write session a frame) before its own command, and the other waits \
             for the turn by polling redb's lock: one multi-writer process runs {:.2} of an \
             exclusive one",
            ratio("sharing.single_multi_writer", "sharing.single_exclusive")
        ),
        "vs_sqlite_single" => format!(
            "raw redb's own single commits run at {:.2} of SQLite's",
            ratio("single.redb", "single.sqlite")
        ),
        "group_commit_speedup" => format!(
            "one task's commits run at {:.2} of the disk's fdatasync rate",
            ratio("group.annals_1", "single.fsync")
        ),
        "vs_sqlite_bulk" | "vs_redb_bulk" => format!(
            "raw redb's floor at {:.2} of SQLite; annals' ns per event: hash {:.0}, apply {:.0}",
            ratio("bulk.redb", "bulk.sqlite"),
            m("phase.hash_ns"),
            (1e9 / m("rebuild") - 1e9 / m("scan.annals_owned")).max(0.0),
        ),
        "vs_sqlite_bulk_interleaved" | "vs_redb_bulk_interleaved" => format!(
            "raw redb's floor at {:.2} of SQLite; annals interleaved at {:.2} of its one-stream bulk",
            ratio("bulk_interleaved.redb", "bulk_interleaved.sqlite"),
            ratio("bulk_interleaved.annals", "bulk.annals"),
        ),
        "vs_sqlite_scan_default" => format!(
            "the borrowed scan runs at {:.2} of SQLite's: the copy into `Record`s",
            ratio("scan.annals", "scan.sqlite")
        ),
        "vs_redb_scan" => format!(
            "raw redb's scan varied {} – {} over rounds",
            human(samples.spread("scan.redb").0),
            human(samples.spread("scan.redb").1)
        ),
        "mixed_8_vs_sqlite"
        | "mixed_64_vs_sqlite"
        | "mixed_writer_threads_8_vs_sqlite"
        | "mixed_writer_threads_64_vs_sqlite" => format!(
            "annals' group commit at 64 tasks on lease commands runs {}/s; SQLite shared {}/s, a connection each {}/s",
            human(m("group.annals_64")),
            human(m("mixed.sqlite_shared_64")),
            human(m("mixed.sqlite_conns_64")),
        ),
        "verify_walk_linearity" | "verify_walk_events_per_s" | "verify_whole_events_per_s" => {
            format!(
                "walk {}/s at the smaller log, {}/s at the larger; the replay {}/s; blake3 alone {}B/s; SQLite's chain check {}/s",
                human(m("verify.walk_small")),
                human(m("verify.walk_large")),
                human(m("verify.replay_large")),
                human(m("blake3")),
                human(m("verify.sqlite_chain")),
            )
        }
        "verify_vs_blake3" => "the log walk's hashing and index checks".into(),
        "single_writer_vs_exclusive_single" | "single_writer_vs_exclusive_group64" => format!(
            "single commands: exclusive {}/s, single-writer {}/s; a shared mode commits in two phases",
            human(m("sharing.single_exclusive")),
            human(m("sharing.single_single_writer")),
        ),
        "rebuild_rss_2x_vs_1x" => "the redb cache and the replay's batch".into(),
        "mixed_bytes_on_disk_vs_sqlite" => format!(
            "bytes on disk per command: annals {} at 64 tasks, {} sequential; SQLite {} at 64 clients, {} sequential",
            human(m("mixed_bytes.annals_64")),
            human(m("mixed_bytes.annals_1")),
            human(m("mixed_bytes.sqlite_64")),
            human(m("mixed_bytes.sqlite_1")),
        ),
        "bulk_bytes_per_event" => format!(
            "SQLite's rows take {} B per event on disk",
            human(m("bytes.sqlite"))
        ),
        _ => String::new(),
    }
}

/// The sharing figures' ratios, taken in every round as [`RATIOS`] are.
pub(crate) const SHARING_RATIOS: [(&str, &str, &str, f64, bool); 6] = [
    (
        "two_writer_processes_vs_sqlite",
        "sharing.two_writers_annals",
        "sharing.two_writers_sqlite",
        1.0,
        true,
    ),
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
        "smoke": settings.smoke,
        "seconds": took.as_secs_f64(),
        "note": "medians over rounds, contenders interleaved within each round; the machine is shared, so the disk's fsync rate moves between rounds",
        "single_durable_cmds_per_s": {
            "annals": m("single.annals"),
            "redb": m("single.redb"),
            "redb_shared": m("single.redb_shared"),
            "sqlite": m("single.sqlite"),
            "fsync_floor": m("single.fsync"),
        },
        "bytes_written_per_durable_command": {
            "annals": m("written.annals"),
            "redb": m("written.redb"),
            "redb_shared": m("written.redb_shared"),
            "sqlite": m("written.sqlite"),
        },
        "disk_flushes_per_durable_command": {
            "annals": m("flushes.annals"),
            "redb": m("flushes.redb"),
            "redb_shared": m("flushes.redb_shared"),
            "sqlite": m("flushes.sqlite"),
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
        "bulk_interleaved_events_per_s": {
            "streams": settings.streams,
            "annals": m("bulk_interleaved.annals"),
            "redb": m("bulk_interleaved.redb"),
            "sqlite": m("bulk_interleaved.sqlite"),
        },
        "scan_default_events_per_s": {
            "note": "the interleaved bulk log read whole: annals through `Snapshot::records` (each record copied into a `Record`), SQLite through a SELECT of every column ORDER BY position into owned values",
            "annals": m("scan.default"),
            "sqlite": m("scan.sqlite"),
        },
        "verify_events_per_s": verify_json(settings, samples),
        "mixed_cmds_per_s": mixed_json(samples),
        "mixed_bytes_on_disk_per_cmd": {
            "note": "a file's size less a new file's (SQLite: the schema, WAL folded in), over the commands run into it",
            "annals_64_tasks": m("mixed_bytes.annals_64"),
            "sqlite_64_clients": m("mixed_bytes.sqlite_64"),
            "annals_sequential": m("mixed_bytes.annals_1"),
            "sqlite_sequential": m("mixed_bytes.sqlite_1"),
        },
    });
    add_ratios(&mut report, ratios(samples, rss_1x, rss_2x));
    report
}

/// Verify's parts at the two sizes, in events per second.
fn verify_json(settings: &Settings, samples: &Samples) -> Value {
    let m = |key| samples.median(key);
    let [small, large] = settings.verify_sizes;
    json!({
        "note": "bulk events over many streams in turn, every event its own run; walk: `verify_log` (hashes, chain, stream versions, indexes, Merkle tree); whole: `Audit::verify` (the walk, then every projection replayed into memory and compared); replay: the whole's time less the walk's",
        "streams": crate::bulk::INTERLEAVED_STREAMS,
        "events": [small, large],
        "walk": { "small": m("verify.walk_small"), "large": m("verify.walk_large") },
        "replay": { "small": m("verify.replay_small"), "large": m("verify.replay_large") },
        "whole": { "small": m("verify.whole_small"), "large": m("verify.whole_large") },
        "sqlite_chain_check": {
            "note": "SQLite's counterpart of the walk, on the interleaved bulk log (bulk_events rows): every row's hash recomputed and its link checked",
            "events_per_s": m("verify.sqlite_chain"),
        },
    })
}

/// The mixed commands per second at each client count and configuration.
fn mixed_json(samples: &Samples) -> Value {
    let mut by_clients = serde_json::Map::new();
    by_clients.insert(
        "note".into(),
        json!("the reference stores' commands in turn, one durable commit each; annals threads through `Store` (a commit each) and through `Writer`'s blocking calls, tasks through `Writer`; SQLite threads with a connection each or one shared, the better taken"),
    );
    for keys in &crate::mixed::MIXED_KEYS {
        by_clients.insert(
            keys.clients.to_string(),
            json!({
                "annals_threads": samples.median(keys.threads),
                "annals_writer_threads": samples.median(keys.writer_threads),
                "annals_tasks": samples.median(keys.tasks),
                "sqlite_connection_each": samples.median(keys.sqlite_conns),
                "sqlite_shared_connection": samples.median(keys.sqlite_shared),
                "sqlite_better": samples.median(keys.sqlite_best),
            }),
        );
    }
    Value::Object(by_clients)
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

/// The figures' table and the ratios'; returns the ratios that missed their target.
pub(crate) fn print_table(
    settings: &Settings,
    samples: &Samples,
    report: &Value,
) -> Vec<&'static str> {
    let row = |figure: &str, contender: &str, key: &str, unit: &str| {
        print_row(samples, figure, contender, key, unit);
    };
    println!(
        "annals side by side: {} bulk events, {} rounds, medians (range over rounds)",
        settings.events, settings.rounds
    );
    println!(
        "| {:<26} | {:<14} | {:>14} | {:>25} |",
        "figure", "contender", "median", "range"
    );
    println!("|{:-<28}|{:-<16}|{:->16}|{:->27}|", "", "", "", "");
    for (contender, key) in [
        ("annals", "single.annals"),
        ("raw redb", "single.redb"),
        ("redb shared", "single.redb_shared"),
        ("SQLite", "single.sqlite"),
        ("fdatasync", "single.fsync"),
    ] {
        row("durable single cmds/s", contender, key, "/s");
    }
    for (contender, key) in [
        ("annals", "written.annals"),
        ("raw redb", "written.redb"),
        ("redb shared", "written.redb_shared"),
        ("SQLite", "written.sqlite"),
    ] {
        row("bytes written per command", contender, key, "B");
    }
    for (contender, key) in [
        ("annals", "flushes.annals"),
        ("raw redb", "flushes.redb"),
        ("redb shared", "flushes.redb_shared"),
        ("SQLite", "flushes.sqlite"),
    ] {
        row("disk flushes per command", contender, key, "");
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
    for (contender, key) in [
        ("annals", "bulk_interleaved.annals"),
        ("raw redb", "bulk_interleaved.redb"),
        ("SQLite", "bulk_interleaved.sqlite"),
    ] {
        row("bulk interleaved events/s", contender, key, "/s");
    }
    row("scan events/s, records()", "annals", "scan.default", "/s");
    row("scan events/s, records()", "SQLite", "scan.sqlite", "/s");
    let [small, large] = settings.verify_sizes;
    for (size, part, key) in [
        (small, "walk", "verify.walk_small"),
        (small, "replay", "verify.replay_small"),
        (small, "whole", "verify.whole_small"),
        (large, "walk", "verify.walk_large"),
        (large, "replay", "verify.replay_large"),
        (large, "whole", "verify.whole_large"),
    ] {
        row(
            &format!("verify events/s, {}", human(size as f64)),
            part,
            key,
            "/s",
        );
    }
    row(
        "verify events/s, chain",
        "SQLite",
        "verify.sqlite_chain",
        "/s",
    );
    for keys in &crate::mixed::MIXED_KEYS {
        let figure = format!("mixed cmds/s, {} clients", keys.clients);
        row(&figure, "annals threads", keys.threads, "/s");
        row(&figure, "annals Writer threads", keys.writer_threads, "/s");
        row(&figure, "annals tasks", keys.tasks, "/s");
        row(&figure, "SQLite conns", keys.sqlite_conns, "/s");
        row(&figure, "SQLite shared", keys.sqlite_shared, "/s");
    }
    row(
        "mixed bytes on disk/cmd",
        "annals 64",
        "mixed_bytes.annals_64",
        "B",
    );
    row(
        "mixed bytes on disk/cmd",
        "SQLite 64",
        "mixed_bytes.sqlite_64",
        "B",
    );
    row(
        "mixed bytes on disk/cmd",
        "annals 1",
        "mixed_bytes.annals_1",
        "B",
    );
    row(
        "mixed bytes on disk/cmd",
        "SQLite 1",
        "mixed_bytes.sqlite_1",
        "B",
    );
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
    let mut keys: Vec<_> = RATIOS.iter().map(|&(key, ..)| key).collect();
    keys.push("rebuild_rss_2x_vs_1x");
    keys.extend(SHARING_RATIOS.iter().map(|&(key, ..)| key));
    print_ratios(report, samples, &keys)
}

/// A row of the figures' table: the median and the range over rounds.
pub(crate) fn print_row(samples: &Samples, figure: &str, contender: &str, key: &str, unit: &str) {
    let (low, high) = samples.spread(key);
    println!(
        "| {figure:<26} | {contender:<14} | {:>14} | {:>25} |",
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
        "| {:<26} | {:<14} | {:>14} | {:>25} |",
        "sharing figure", "mode", "median", "range"
    );
    println!("|{:-<28}|{:-<16}|{:->16}|{:->27}|", "", "", "", "");
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
        "2 writer processes cmds/s",
        "multi-writer",
        "sharing.two_writers_annals",
        "/s",
    );
    row(
        "2 writer processes cmds/s",
        "SQLite",
        "sharing.two_writers_sqlite",
        "/s",
    );
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
pub(crate) fn print_sharing_table(
    settings: &Settings,
    samples: &Samples,
    report: &Value,
) -> Vec<&'static str> {
    println!(
        "annals sharing modes and tail (--sharing-only): {} rounds, medians (range over rounds)",
        settings.rounds
    );
    print_sharing_rows(samples);
    println!();
    let keys: Vec<_> = SHARING_RATIOS.iter().map(|&(key, ..)| key).collect();
    print_ratios(report, samples, &keys)
}

/// The ratios' table, with their noise (range over rounds relative to the median) and
/// targets. Returns the ratios that missed their target.
pub(crate) fn print_ratios<'k>(
    report: &Value,
    samples: &Samples,
    keys: &[&'k str],
) -> Vec<&'k str> {
    println!(
        "| {:<34} | {:>8} | {:>7} | {:>8} | {:<4} |",
        "ratio", "value", "noise", "target", "met"
    );
    println!(
        "|{:-<36}|{:->10}|{:->9}|{:->10}|{:-<6}|",
        "", "", "", "", ""
    );
    let mut missed = Vec::new();
    let targets = &report["targets"];
    for &key in keys {
        let value = report[key].as_f64().unwrap_or(f64::NAN);
        let (target, met) = match targets.get(key) {
            Some(t) => {
                let bound = t
                    .get("min")
                    .map(|b| format!("≥ {}", number(b.as_f64().unwrap_or(f64::NAN))))
                    .or_else(|| {
                        t.get("max")
                            .map(|b| format!("≤ {}", number(b.as_f64().unwrap_or(f64::NAN))))
                    })
                    .unwrap_or_default();
                let met = t["met"].as_bool().unwrap_or(false);
                if !met {
                    missed.push(key);
                }
                (bound, if met { "yes" } else { "NO" })
            }
            None => ("—".to_owned(), ""),
        };
        let noise = noise(samples, key);
        let noise = if noise.is_finite() {
            format!("{:.0}%", noise * 100.0)
        } else {
            "—".into()
        };
        println!(
            "| {key:<34} | {:>8} | {noise:>7} | {target:>8} | {met:<4} |",
            number(value)
        );
    }
    missed
}

/// The targets missed, each with what bounds it in this run. Not a failure of `--check`.
pub(crate) fn print_misses(samples: &Samples, missed: &[&str]) {
    if missed.is_empty() {
        return;
    }
    println!();
    println!("targets missed (issue 15's and earlier; reported, not failures of --check):");
    for key in missed {
        println!("- {key}: {}", bound(key, samples));
    }
}

/// A ratio's noise in this run: its range over rounds relative to its median (NaN with
/// fewer than two rounds' values).
pub(crate) fn noise(samples: &Samples, key: &str) -> f64 {
    let rounds = samples.0.get(key).map_or(0, Vec::len);
    if rounds < 2 {
        return f64::NAN;
    }
    let (low, high) = samples.spread(key);
    (high - low) / samples.median(key).abs()
}

/// A ratio with two decimals, a large figure as [`human`] writes it.
fn number(value: f64) -> String {
    if value.abs() >= 1_000.0 {
        human(value)
    } else {
        format!("{value:.2}")
    }
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

/// The command rows' figures: each command's peak resident set at the two demo logs' sizes,
/// its growth between them, and issue 14's targets (at most 100 MB at the larger, at most
/// 1.2 times the smaller's).
pub(crate) fn memory_json(
    rows: &[crate::memory::CommandRss],
    footprints: &[crate::memory::DemoFootprint],
    sizes: [usize; 2],
) -> Value {
    use crate::memory::{COMMAND_RSS_BYTES_MAX, COMMAND_RSS_GROWTH_MAX, DEMO_DISK_VS_EXPORT_MAX};
    let mut commands = serde_json::Map::new();
    for row in rows {
        let growth = row.large / row.small;
        commands.insert(
            row.command.into(),
            json!({
                "small": row.small,
                "large": row.large,
                "growth": growth,
                "peak_met": row.large <= COMMAND_RSS_BYTES_MAX,
                "growth_met": growth <= COMMAND_RSS_GROWTH_MAX,
            }),
        );
    }
    let footprints: Vec<Value> = footprints
        .iter()
        .map(|f| {
            let per_record = |bytes: f64| bytes / f.records as f64;
            json!({
                "records": f.records,
                "log_disk_bytes": f.log_disk,
                "log_file_bytes": f.log_file,
                "export_bytes": f.export,
                "imported_disk_bytes": f.imported_disk,
                "log_disk_bytes_per_record": per_record(f.log_disk),
                "export_bytes_per_record": per_record(f.export),
                "log_disk_vs_export": f.log_disk / f.export,
                "log_file_vs_export": f.log_file / f.export,
                "imported_disk_vs_export": f.imported_disk / f.export,
            })
        })
        .collect();
    json!({
        "note": "peak resident set (GNU time's maximum RSS of the child) of the annals binary on demo logs of two sizes; demo is the run that wrote the log and verified it",
        "records": sizes,
        "targets": {
            "peak_bytes_max": COMMAND_RSS_BYTES_MAX,
            "growth_max": COMMAND_RSS_GROWTH_MAX,
            "demo_disk_vs_export_max": DEMO_DISK_VS_EXPORT_MAX,
        },
        "commands": Value::Object(commands),
        "demo_footprint_note": "the demo log (one transaction per command, made durable every 4,096 records) on disk right after the demo, against its export file; per record at the nominal record count",
        "demo_footprint": footprints,
    })
}

/// The command rows' table; returns the commands that missed a target, with what they missed.
pub(crate) fn print_memory_table(memory: &Value) -> Vec<String> {
    let records = &memory["records"];
    let (small, large) = (
        records[0].as_f64().unwrap_or(f64::NAN),
        records[1].as_f64().unwrap_or(f64::NAN),
    );
    println!();
    println!(
        "| {:<26} | {:>14} | {:>14} | {:>7} | {:<4} |",
        "peak RSS of",
        format!("{} records", human(small)),
        format!("{} records", human(large)),
        "growth",
        "met"
    );
    println!(
        "|{:-<28}|{:->16}|{:->16}|{:->9}|{:-<6}|",
        "", "", "", "", ""
    );
    let mut missed = Vec::new();
    let Some(commands) = memory["commands"].as_object() else {
        return missed;
    };
    for (command, row) in commands {
        let figure = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
        let met = row["peak_met"].as_bool().unwrap_or(false)
            && row["growth_met"].as_bool().unwrap_or(false);
        if !met {
            missed.push(format!(
                "memory of {command}: {} B at the larger log, {:.2} times the smaller's",
                human(figure("large")),
                figure("growth")
            ));
        }
        println!(
            "| {command:<26} | {:>14} | {:>14} | {:>7} | {:<4} |",
            format!("{} B", human(figure("small"))),
            format!("{} B", human(figure("large"))),
            format!("{:.2}", figure("growth")),
            if met { "yes" } else { "NO" }
        );
    }
    missed.extend(print_demo_footprint(memory));
    missed
}

/// The demo logs' bytes against their exports' (see `memory::DemoFootprint`); returns the
/// sizes that missed issue 14's bound.
fn print_demo_footprint(memory: &Value) -> Vec<String> {
    let mut missed = Vec::new();
    let Some(footprints) = memory["demo_footprint"].as_array() else {
        return missed;
    };
    let bound = memory["targets"]["demo_disk_vs_export_max"]
        .as_f64()
        .unwrap_or(f64::NAN);
    println!();
    println!(
        "| {:<16} | {:>13} | {:>13} | {:>13} | {:>11} | {:>11} | {:<4} |",
        "demo log", "disk B/rec", "export B/rec", "disk/export", "file/export", "import/exp", "met"
    );
    println!(
        "|{:-<18}|{:->15}|{:->15}|{:->15}|{:->13}|{:->13}|{:-<6}|",
        "", "", "", "", "", "", ""
    );
    for row in footprints {
        let figure = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
        let ratio = figure("log_disk_vs_export");
        let met = ratio <= bound;
        if !met {
            missed.push(format!(
                "demo log at {} records: {ratio:.2} times its export on disk, bound {bound}",
                human(figure("records"))
            ));
        }
        println!(
            "| {:<16} | {:>13.1} | {:>13.1} | {:>13.2} | {:>11.2} | {:>11.2} | {:<4} |",
            format!("{} records", human(figure("records"))),
            figure("log_disk_bytes_per_record"),
            figure("export_bytes_per_record"),
            ratio,
            figure("log_file_vs_export"),
            figure("imported_disk_vs_export"),
            if met { "yes" } else { "NO" }
        );
    }
    missed
}
