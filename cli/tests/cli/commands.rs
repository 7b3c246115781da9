//! The commands a log starts with: append, log, verify, stats, demo and state.

use annals::testing::damage::{Part, flip};
use serde_json::Value;

use crate::{Log, exits, json, stderr, stdout};

/// Every key of a `log --json` line.
const RECORD_KEYS: [&str; 14] = [
    "position",
    "stream",
    "version",
    "kind",
    "schema",
    "at_ms",
    "at",
    "idempotency_key",
    "payload_encoding",
    "payload",
    "payload_bytes",
    "payload_hash",
    "prev",
    "hash",
];

impl Log {
    /// Appends an event at a fixed time and returns what `append` printed.
    fn append(&self, args: &[&str]) -> String {
        let mut all = args.to_vec();
        all.extend(["--at-ms", "1700000000000"]);
        self.ok("append", &all).trim_end().to_owned()
    }

    /// The records `log --json <args…>` prints, parsed.
    fn records(&self, args: &[&str]) -> Vec<Value> {
        let mut all = vec!["--json"];
        all.extend(args);
        self.ok("log", &all).lines().map(json).collect()
    }
}

fn payloads(records: &[Value]) -> Vec<&str> {
    records
        .iter()
        .map(|record| record["payload"].as_str().expect("payload is a string"))
        .collect()
}

#[test]
fn append_prints_consecutive_positions() {
    let log = Log::new();
    assert!(!log.db.exists());
    for expected in ["0", "1", "2"] {
        assert_eq!(log.append(&["orders/1", "order.placed", "{}"]), expected);
    }
}

#[test]
fn repeated_key_with_same_content_prints_duplicate() {
    let log = Log::new();
    let args = ["orders/1", "order.placed", "same", "--key", "req-1"];
    assert_eq!(log.append(&args), "0");
    assert_eq!(log.append(&args), "duplicate 0");
    assert_eq!(log.records(&[]).len(), 1);
}

#[test]
fn repeated_key_with_other_payload_exits_1_naming_the_key() {
    let log = Log::new();
    log.append(&["orders/1", "order.placed", "first", "--key", "req-1"]);
    let output = exits(
        log.run(
            "append",
            &["orders/1", "order.placed", "second", "--key", "req-1"],
        ),
        1,
    );
    let message = stderr(&output);
    assert!(message.starts_with("annals: "), "{message}");
    assert!(message.contains("req-1"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn expect_none_on_an_existing_stream_exits_1() {
    let log = Log::new();
    log.append(&["orders/1", "order.placed"]);
    exits(
        log.run("append", &["orders/1", "order.paid", "--expect", "none"]),
        1,
    );
    assert_eq!(log.records(&[]).len(), 1);
}

#[test]
fn expect_version_matches_the_streams_last_version() {
    let log = Log::new();
    log.append(&["orders/1", "order.placed", "--expect", "none"]);
    assert_eq!(
        log.append(&["orders/1", "order.paid", "--expect", "0"]),
        "1"
    );
    exits(
        log.run("append", &["orders/1", "order.shipped", "--expect", "0"]),
        1,
    );
    assert_eq!(
        log.append(&["orders/1", "order.shipped", "--expect", "exists"]),
        "2"
    );
}

#[test]
fn unparseable_expect_is_a_usage_error() {
    let log = Log::new();
    exits(log.run("append", &["s", "k", "--expect", "some"]), 2);
}

#[test]
fn stream_name_over_the_limit_exits_1_naming_field_and_limit() {
    let log = Log::new();
    let stream = "s".repeat(257);
    let output = exits(log.run("append", &[&stream, "order.placed"]), 1);
    let message = stderr(&output);
    assert!(message.contains("stream"), "{message}");
    assert!(message.contains("256"), "{message}");
}

#[test]
fn file_payload_that_is_not_utf8_is_logged_as_hex() {
    let log = Log::new();
    let file = log.dir.path().join("payload.bin");
    std::fs::write(&file, [0xff, 0x00, 0x7f]).expect("write the payload file");
    let payload = format!("@{}", file.display());
    log.append(&["blobs", "blob.stored", &payload]);
    let records = log.records(&[]);
    assert_eq!(records[0]["payload_encoding"], "hex");
    assert_eq!(records[0]["payload"], "ff007f");
}

#[test]
fn missing_payload_file_is_a_usage_error_and_creates_no_log() {
    let log = Log::new();
    let missing = log.dir.path().join("missing.bin");
    exits(
        log.run("append", &["s", "k", &format!("@{}", missing.display())]),
        2,
    );
    assert!(!log.db.exists());
}

#[test]
fn log_json_lines_have_every_key() {
    let log = Log::new();
    log.append(&[
        "orders/1",
        "order.placed",
        "hello",
        "--key",
        "req-1",
        "--schema",
        "3",
    ]);
    log.append(&["orders/1", "order.paid"]);
    let records = log.records(&[]);
    assert_eq!(records.len(), 2);
    for record in &records {
        let object = record.as_object().expect("a JSON object");
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        let mut expected = RECORD_KEYS.to_vec();
        keys.sort_unstable();
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }
    let first = &records[0];
    assert_eq!(first["position"], 0);
    assert_eq!(first["stream"], "orders/1");
    assert_eq!(first["version"], 0);
    assert_eq!(first["kind"], "order.placed");
    assert_eq!(first["schema"], 3);
    assert_eq!(first["at_ms"], 1_700_000_000_000u64);
    assert_eq!(first["idempotency_key"], "req-1");
    assert_eq!(first["payload_encoding"], "utf8");
    assert_eq!(first["payload"], "hello");
    assert_eq!(first["prev"], "0".repeat(64));
    assert_eq!(records[1]["idempotency_key"], Value::Null);
    assert_eq!(records[1]["payload"], "");
    assert_eq!(records[1]["prev"], first["hash"]);
}

#[test]
fn log_stream_reads_one_stream_from_a_version() {
    let log = Log::new();
    for (stream, payload) in [("a", "a0"), ("b", "b0"), ("a", "a1"), ("a", "a2")] {
        log.append(&[stream, "k", payload]);
    }
    assert_eq!(
        payloads(&log.records(&["--stream", "a"])),
        ["a0", "a1", "a2"]
    );
    assert_eq!(
        payloads(&log.records(&["--stream", "a", "--from", "1"])),
        ["a1", "a2"]
    );
    assert_eq!(
        payloads(&log.records(&["--stream", "a", "--backward", "--limit", "2"])),
        ["a2", "a1"]
    );
}

#[test]
fn log_from_and_limit_select_positions() {
    let log = Log::new();
    for payload in ["p0", "p1", "p2", "p3"] {
        log.append(&["s", "k", payload]);
    }
    assert_eq!(
        payloads(&log.records(&["--from", "1", "--limit", "2"])),
        ["p1", "p2"]
    );
    assert_eq!(
        payloads(&log.records(&["--from", "2", "--backward"])),
        ["p2", "p1", "p0"]
    );
}

#[test]
fn log_kind_keeps_only_that_kind() {
    let log = Log::new();
    log.append(&["s", "order.placed", "p0"]);
    log.append(&["s", "order.paid", "p1"]);
    log.append(&["s", "order.placed", "p2"]);
    assert_eq!(
        payloads(&log.records(&["--kind", "order.placed"])),
        ["p0", "p2"]
    );
}

#[test]
fn log_text_has_one_line_per_record() {
    let log = Log::new();
    log.append(&["s", "k", "two\nlines", "--key", "req-1"]);
    log.append(&["s", "k"]);
    let text = log.ok("log", &[]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("0 s@0 k 2023-11-14T22:13:20.000Z key=req-1 hash="),
        "{text}"
    );
    assert!(lines[0].ends_with(" \"two\\nlines\""), "{text}");
    assert!(!lines[1].contains("key="), "{text}");
}

#[test]
fn log_of_a_missing_file_exits_2() {
    let log = Log::new();
    exits(log.run("log", &[]), 2);
    assert!(!log.db.exists());
}

#[test]
fn verify_exits_0_on_a_sound_log() {
    let log = Log::new();
    log.append(&["s", "k", "p0"]);
    log.append(&["t", "k", "p1"]);
    let report = json(&log.ok("verify", &["--json"]));
    assert_eq!(report["sound"], true);
    assert_eq!(report["records"], 2);
    assert_eq!(report["streams"], 2);
    assert_eq!(report["head_position"], 2);
    assert_eq!(report["checked_until"], 2);
    assert_eq!(report["head_hash"], log.records(&[])[1]["hash"]);
    assert_eq!(report["problem"], Value::Null);
    assert!(log.ok("verify", &[]).starts_with("sound"));
}

#[test]
fn verify_of_a_missing_file_exits_2_and_creates_nothing() {
    let log = Log::new();
    let output = exits(log.run("verify", &[]), 2);
    assert!(stderr(&output).starts_with("annals: "));
    assert!(!log.db.exists());
}

#[test]
fn verify_of_a_file_that_is_not_a_log_exits_2() {
    let log = Log::new();
    std::fs::write(&log.db, b"not a database at all").expect("write the garbage file");
    let output = exits(log.run("verify", &[]), 2);
    assert!(stderr(&output).contains("not an annals log"));
}

#[test]
fn stats_json_reports_counts_head_and_file_size() {
    let log = Log::new();
    log.append(&["a", "k", "p0"]);
    log.append(&["b", "k", "p1"]);
    log.append(&["a", "k", "p2"]);
    let before = std::fs::read(&log.db).expect("the log file");
    let head_hash = log.records(&[])[2]["hash"].clone();
    assert_eq!(
        std::fs::read(&log.db).unwrap(),
        before,
        "reading leaves the file untouched"
    );
    let metadata = std::fs::metadata(&log.db).expect("the log file");
    let file_bytes = metadata.len();
    let stats = json(&log.ok("stats", &["--json"]));
    let object = stats.as_object().expect("a JSON object");
    let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "disk_bytes",
            "file_bytes",
            "head_hash",
            "head_position",
            "held",
            "records",
            "start",
            "streams"
        ]
    );
    assert_eq!(stats["records"], 3);
    assert_eq!((&stats["held"], &stats["start"]), (&3.into(), &0.into()));
    assert_eq!(stats["streams"], 2);
    assert_eq!(stats["head_position"], 3);
    assert_eq!(stats["head_hash"], head_hash);
    assert_eq!(stats["file_bytes"], file_bytes);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(stats["disk_bytes"], metadata.blocks() * 512);
    }
}

#[test]
fn stats_tables_accounts_for_every_table_and_the_file() {
    let log = Log::new();
    for i in 0..40 {
        log.append(&["s", "k", &format!("payload {i}")]);
    }
    let stats = json(&log.ok("stats", &["--json", "--tables"]));
    let tables = stats["tables"].as_array().expect("a list of tables");
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "tables come in name order");
    for name in ["annals.segments", "annals.meta", "annals.merkle"] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let segments = tables
        .iter()
        .find(|t| t["name"] == "annals.segments")
        .unwrap();
    let stored = segments["stored_bytes"].as_u64().unwrap();
    assert!(
        stored > 40 * "payload 0".len() as u64,
        "{stored} bytes stored"
    );
    let in_tables: u64 = tables
        .iter()
        .map(|t| {
            ["stored_bytes", "metadata_bytes", "fragmented_bytes"]
                .iter()
                .map(|field| t[*field].as_u64().unwrap())
                .sum::<u64>()
        })
        .sum();
    let file_bytes = stats["file_bytes"].as_u64().unwrap();
    assert!(in_tables <= file_bytes);
    assert_eq!(stats["outside_tables_bytes"], file_bytes - in_tables);
    let text = log.ok("stats", &["--tables"]);
    assert!(text.contains("annals.segments"), "{text}");
    assert!(text.contains("outside tables"), "{text}");
}

#[test]
fn verify_of_a_damaged_log_exits_1_naming_the_position() {
    let log = Log::new();
    for i in 0..6 {
        log.append(&["s", "k", &format!("payload {i}")]);
    }
    flip(&log.db, 4, Part::Payload);
    let output = exits(log.run("verify", &[]), 1);
    let report = format!("{}{}", stdout(&output), stderr(&output));
    assert!(report.contains("position 4"), "{report}");
    let output = exits(log.run("verify", &["--json"]), 1);
    let report = json(&stdout(&output));
    assert_eq!(report["sound"], false);
    assert_eq!(report["problem"]["position"], 4);
    // The bad position is not the log's head: the head is unknown, the check stopped at 4.
    assert_eq!(report["head_position"], Value::Null);
    assert_eq!(report["head_hash"], Value::Null);
    assert_eq!(report["checked_until"], 4);
    let output = exits(log.run("log", &[]), 1);
    assert_eq!(
        stdout(&output).lines().count(),
        4,
        "the sound records before it are listed"
    );
    assert!(
        stderr(&output).contains("position 4"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn demo_writes_every_projection_and_verify_passes() {
    let log = Log::new();
    let output = log.ok("demo", &["--records", "1500"]);
    for projection in ["registry", "leases", "outbox", "runs"] {
        let line = output
            .lines()
            .find(|line| line.trim_start().starts_with(projection))
            .unwrap_or_else(|| panic!("no line for {projection} in {output}"));
        let count: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert!(count > 0, "{projection} got no records: {output}");
    }
    assert!(output.contains("verify: sound"), "{output}");
    log.ok("verify", &[]);
    // A second run continues the same log when told to, and it still verifies.
    log.ok("demo", &["--records", "500", "--force"]);
    let stats = json(&log.ok("stats", &["--json"]));
    assert!(stats["records"].as_u64().unwrap() >= 2000);
    log.ok("verify", &[]);
}

/// `demo --durability deferred` writes the records the durable demo writes, byte for byte
/// (the same export file), past one of its intermediate flushes; it needs an exclusive store.
#[test]
fn demo_with_deferred_commits_writes_the_same_records() {
    let records = (annals::testing::internals::demo::DEMO_DEFERRED_FLUSH_RECORDS + 200).to_string();
    let durable = Log::new();
    durable.ok("demo", &["--records", &records]);
    let deferred = Log::new();
    let refused = exits(
        deferred.run("demo", &["--records", &records, "--durability", "deferred"]),
        2,
    );
    assert!(
        stderr(&refused).contains("--sharing exclusive"),
        "{}",
        stderr(&refused)
    );
    assert!(!deferred.db.exists(), "a refused demo creates no file");
    let output = deferred.ok(
        "demo",
        &[
            "--records",
            &records,
            "--durability",
            "deferred",
            "--sharing",
            "exclusive",
        ],
    );
    assert!(output.contains("verify: sound"), "{output}");
    let exports = [&durable, &deferred].map(|log| {
        let file = log.dir.path().join("log.export");
        log.ok("export", &[file.to_str().expect("a UTF-8 path")]);
        std::fs::read(&file).expect("the export file")
    });
    assert!(exports[0].len() > 100_000, "{} bytes", exports[0].len());
    assert!(exports[0] == exports[1], "the exports differ");
}

#[test]
fn state_json_is_the_same_bytes_before_and_after_rebuild() {
    let log = Log::new();
    log.ok("demo", &["--records", "1500"]);
    for projection in ["registry", "leases", "outbox", "runs"] {
        let before = log.ok("state", &[projection, "--json"]);
        assert!(before.len() > 50, "{projection}: {before}");
        log.ok("rebuild", &["--projection", projection]);
        assert_eq!(
            log.ok("state", &[projection, "--json"]),
            before,
            "{projection}"
        );
    }
    let before: Vec<String> = ["registry", "leases", "outbox", "runs"]
        .iter()
        .map(|p| log.ok("state", &[p, "--json"]))
        .collect();
    log.ok("rebuild", &[]);
    let after: Vec<String> = ["registry", "leases", "outbox", "runs"]
        .iter()
        .map(|p| log.ok("state", &[p, "--json"]))
        .collect();
    assert_eq!(before, after);
    log.ok("verify", &[]);
}

#[test]
fn state_at_a_position_replays_only_the_records_before_it() {
    let log = Log::new();
    log.ok("demo", &["--records", "800"]);
    let head = json(&log.ok("stats", &["--json"]))["head_position"]
        .as_u64()
        .unwrap();
    let live = log.ok("state", &["leases", "--json"]);
    assert_eq!(
        log.ok("state", &["leases", "--json", "--at", &head.to_string()]),
        live
    );
    let empty = log.ok("state", &["leases", "--json", "--at", "0"]);
    assert_eq!(empty, "", "no row before the first record");
    let early = log.ok("state", &["leases", "--json", "--at", "200"]);
    assert_ne!(
        early, live,
        "two hundred records in, the leases stood otherwise"
    );
}

#[test]
fn state_of_an_unknown_projection_is_a_usage_error() {
    let log = Log::new();
    log.append(&["s", "k", "x"]);
    let output = exits(log.run("state", &["nonsense"]), 2);
    assert!(stderr(&output).contains("nonsense"));
}

#[test]
fn a_stream_or_entity_that_does_not_exist_exits_1_and_a_state_past_the_head_exits_2() {
    let log = Log::new();
    // A fresh append at position 0, not a duplicate: the stream exists.
    assert_eq!(log.append(&["deploy/web", "deploy.started", "v1"]), "0");
    let missing = exits(log.run("log", &["--stream", "deploy/nope"]), 1);
    assert!(
        stderr(&missing).contains("no stream deploy/nope"),
        "{}",
        stderr(&missing)
    );
    let nobody = exits(log.run("history", &["lease:nobody"]), 1);
    assert!(
        stderr(&nobody).contains("no event touched lease:nobody"),
        "{}",
        stderr(&nobody)
    );
    let _ = log.ok("history", &["stream:deploy/web"]);
    let _ = log.ok("log", &["--stream", "deploy/web"]);
    let past = exits(log.run("state", &["leases", "--at", "2"]), 2);
    assert!(stderr(&past).contains("past the head"), "{}", stderr(&past));
    let _ = log.ok("state", &["leases", "--at", "1"]);
}

/// The demo pushes runs' events to the hub: `state ingest` shows its three tables, a run's row
/// its cursor, and `history` the run's accepted events, each once, in sequence order.
#[test]
fn the_demo_ingests_and_state_and_history_show_it() {
    let log = Log::new();
    log.ok("demo", &["--records", "300"]);
    let text = log.ok("state", &["ingest"]);
    for table in ["ingest.events (", "ingest.projects (", "ingest.runs ("] {
        assert!(text.contains(table), "{text}");
    }
    let rows = log.ok("state", &["ingest", "--table", "runs", "--json"]);
    let row = json(rows.lines().next().expect("a row"));
    assert_eq!(row["table"], "ingest.runs");
    assert_eq!(row["row"]["cursor"], 3, "{row}");
    let history = log.ok("history", &["ingest:api-s0/run-1", "--json"]);
    let lines: Vec<Value> = history.lines().map(json).collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l["kind"] == annals::ingest::events::ACCEPTED),
        "{lines:?}"
    );
    assert_eq!(lines[1]["payload"]["sequence"], 3, "{lines:?}");
}
