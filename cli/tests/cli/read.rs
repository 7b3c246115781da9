//! The reading commands as people use them (`log`, `history`, `streams`, `state`): decoded
//! payloads, times, filters and tables, run through the real binary on real files.

use annals::leases::events::{Acquired, LeaseEvent};
use annals::testing::setup::ExpectDone;
use annals::{ExpectedVersion, Store, command::DomainEvent};
use serde_json::{Value, json};

use crate::{Log, exits, json, stderr, stdout};

/// Appends a raw event at `at_ms` through the binary.
fn append(log: &Log, stream: &str, kind: &str, payload: &str, at_ms: u64) {
    let at = at_ms.to_string();
    let _ = log.ok("append", &[stream, kind, payload, "--at-ms", &at]);
}

/// The lines `<command> --json <args…>` prints, parsed.
fn lines(log: &Log, command: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--json"];
    all.extend(args);
    log.ok(command, &all).lines().map(json).collect()
}

/// The positions of the records `log --json <args…>` prints.
fn positions(log: &Log, args: &[&str]) -> Vec<u64> {
    lines(log, "log", args)
        .iter()
        .map(|record| record["position"].as_u64().unwrap())
        .collect()
}

/// A log with a lease acquired at position 0, written through the library as a host writes
/// it (the CLI refuses raw appends of built-in kinds), then closed.
fn lease_log() -> Log {
    let log = Log::new();
    let store = Store::open(&log.db).unwrap();
    let acquired = LeaseEvent::Acquired(Acquired {
        resource: "deploy-lock".into(),
        holder: "agent-7".into(),
        token: 3,
        expires_at_ms: 1_700_000_030_000,
        project: String::new(),
        name: String::new(),
        holder_name: String::new(),
    });
    store
        .write(|session| {
            session.append_unchecked(
                "lease/deploy-lock",
                ExpectedVersion::Any,
                &[acquired.to_new_event(1_700_000_000_000)],
            )
        })
        .unwrap()
        .expect_done();
    drop(store);
    log
}

#[test]
fn built_in_events_show_their_fields_in_json_and_text() {
    let log = lease_log();
    let records = lines(&log, "log", &[]);
    assert_eq!(records[0]["payload_encoding"], "event");
    assert_eq!(
        records[0]["payload"],
        json!({"resource": "deploy-lock", "holder": "agent-7", "token": 3, "expires_at_ms": 1_700_000_030_000u64, "project": "", "name": "", "holder_name": ""})
    );
    assert_eq!(records[0]["at"], "2023-11-14T22:13:20.000Z");
    let text = log.ok("log", &[]);
    assert!(
        text.ends_with(
            r#" {"resource":"deploy-lock","holder":"agent-7","token":3,"expires_at_ms":1700000030000,"project":"","name":"","holder_name":""}
"#
        ),
        "{text}"
    );
    let history = log.ok("history", &["lease:deploy-lock"]);
    assert_eq!(history, text, "history prints as log does");
}

#[test]
fn other_payloads_are_json_text_or_hex() {
    let log = Log::new();
    append(&log, "s", "k", r#"{"b": 1, "a": [true]}"#, 1);
    append(&log, "s", "k", "plain words", 2);
    let binary = log.dir.path().join("binary");
    std::fs::write(&binary, [0xff, 0x00, 0x10]).unwrap();
    append(&log, "s", "k", &format!("@{}", binary.display()), 3);
    let records = lines(&log, "log", &[]);
    let encodings: Vec<&str> = records
        .iter()
        .map(|r| r["payload_encoding"].as_str().unwrap())
        .collect();
    assert_eq!(encodings, ["json", "utf8", "hex"]);
    assert_eq!(records[0]["payload"], json!({"a": [true], "b": 1}));
    assert_eq!(records[2]["payload"], "ff0010");
    assert_eq!(records[2]["payload_bytes"], 3);
    let text = log.ok("log", &[]);
    let text: Vec<&str> = text.lines().collect();
    // Re-encoded compactly, keys in order.
    assert!(text[0].ends_with(r#" {"a":[true],"b":1}"#), "{}", text[0]);
    assert!(text[1].ends_with(r#" "plain words""#), "{}", text[1]);
    assert!(text[2].ends_with(" hex:ff0010"), "{}", text[2]);
}

#[test]
fn raw_shows_the_stored_bytes_in_hex() {
    let log = lease_log();
    let records = lines(&log, "log", &["--raw"]);
    assert_eq!(records[0]["payload_encoding"], "hex");
    let stored = records[0]["payload"].as_str().unwrap();
    assert!(stored.chars().all(|c| c.is_ascii_hexdigit()), "{stored}");
    let text = log.ok("log", &["--raw"]);
    assert!(
        text.trim_end().ends_with(&format!("hex:{stored}")),
        "{text}"
    );
}

#[test]
fn times_are_rfc3339_unless_ms() {
    let log = Log::new();
    append(&log, "s", "k", "x", 1_700_000_000_123);
    assert!(
        log.ok("log", &[])
            .contains(" k 2023-11-14T22:13:20.123Z hash=")
    );
    assert!(log.ok("log", &["--ms"]).contains(" k 1700000000123 hash="));
    let history = log.ok("history", &["stream:s", "--ms"]);
    assert!(history.contains(" 1700000000123 "), "{history}");
}

#[test]
fn long_payloads_are_cut_with_a_marker_unless_full() {
    let log = Log::new();
    let big = log.dir.path().join("big");
    std::fs::write(&big, vec![0xAB; 1_048_576]).unwrap();
    append(&log, "s", "k", &format!("@{}", big.display()), 1);
    let cut = log.ok("log", &[]);
    assert!(
        cut.trim_end()
            .ends_with("… (1,048,576 bytes; --full to see all)"),
        "{}",
        &cut[cut.len() - 80..]
    );
    assert!(cut.len() < 400, "one short line, not 2 MB of hex");
    let full = log.ok("log", &["--full"]);
    assert!(full.trim_end().ends_with(&"ab".repeat(1_048_576)));
    let json_line = &lines(&log, "log", &[])[0];
    assert_eq!(
        json_line["payload"].as_str().unwrap().len(),
        2 * 1_048_576,
        "JSON is whole"
    );
}

/// Five records: kinds `order.placed`, `order.paid`, `note`, times a second apart from
/// 2023-11-14T22:13:20Z, on streams `orders/1` and `notes`.
fn orders() -> Log {
    let log = Log::new();
    let t0 = 1_700_000_000_000u64;
    append(&log, "orders/1", "order.placed", r#"{"item": "apple"}"#, t0);
    append(
        &log,
        "orders/1",
        "order.paid",
        r#"{"item": "apple", "cents": 120}"#,
        t0 + 1000,
    );
    append(&log, "notes", "note", "remember the pears", t0 + 2000);
    append(
        &log,
        "orders/1",
        "order.placed",
        r#"{"item": "pear"}"#,
        t0 + 3000,
    );
    append(
        &log,
        "orders/1",
        "order.paid",
        r#"{"item": "pear", "cents": 90}"#,
        t0 + 4000,
    );
    log
}

#[test]
fn kind_keeps_kinds_starting_with_the_prefix() {
    let log = orders();
    assert_eq!(positions(&log, &["--kind", "order."]), [0, 1, 3, 4]);
    assert_eq!(positions(&log, &["--kind", "order.paid"]), [1, 4]);
    assert_eq!(positions(&log, &["--kind", "nothing"]), Vec::<u64>::new());
}

#[test]
fn since_and_until_take_rfc3339_or_milliseconds_and_include_their_bounds() {
    let log = orders();
    assert_eq!(
        positions(&log, &["--since", "2023-11-14T22:13:21Z"]),
        [1, 2, 3, 4]
    );
    assert_eq!(positions(&log, &["--until", "1700000002000"]), [0, 1, 2]);
    assert_eq!(
        positions(
            &log,
            &[
                "--since",
                "2023-11-14T23:13:21+01:00",
                "--until",
                "2023-11-14T22:13:23.000Z"
            ]
        ),
        [1, 2, 3]
    );
    assert_eq!(
        positions(&log, &["--since", "2023-11-15"]),
        Vec::<u64>::new()
    );
}

#[test]
fn a_time_that_does_not_parse_is_a_usage_error() {
    let log = orders();
    for flag in ["--since", "--until"] {
        let output = exits(log.run("log", &[flag, "yesterday"]), 2);
        assert!(
            stderr(&output).contains("not a time"),
            "{}",
            stderr(&output)
        );
        let _ = exits(log.run("history", &["stream:notes", flag, "2023-02-30"]), 2);
    }
}

#[test]
fn grep_searches_the_decoded_payload() {
    let log = orders();
    assert_eq!(positions(&log, &["--grep", "pear"]), [2, 3, 4]);
    assert_eq!(positions(&log, &["--grep", r#""cents":90"#]), [4]);
    assert_eq!(
        positions(&log, &["--grep", "Pear"]),
        Vec::<u64>::new(),
        "case matters"
    );
    let lease = lease_log();
    assert_eq!(
        lines(&lease, "log", &["--grep", "agent-7", "--raw"]).len(),
        1,
        "decoded, even with --raw"
    );
}

#[test]
fn reverse_and_limit_order_and_bound_what_the_filters_keep() {
    let log = orders();
    assert_eq!(positions(&log, &["--reverse"]), [4, 3, 2, 1, 0]);
    assert_eq!(positions(&log, &["--backward", "--limit", "1"]), [4]);
    assert_eq!(
        positions(&log, &["--kind", "order.", "--reverse", "--limit", "3"]),
        [4, 3, 1]
    );
    assert_eq!(positions(&log, &["--limit", "0"]), Vec::<u64>::new());
    assert_eq!(
        positions(&log, &["--stream", "orders/1", "--reverse", "--limit", "2"]),
        [4, 3]
    );
}

#[test]
fn history_takes_the_same_filters() {
    let log = orders();
    let history = |args: &[&str]| -> Vec<u64> {
        let mut all = vec!["stream:orders/1"];
        all.extend(args);
        lines(&log, "history", &all)
            .iter()
            .map(|record| record["position"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(history(&[]), [0, 1, 3, 4]);
    assert_eq!(history(&["--kind", "order.paid"]), [1, 4]);
    assert_eq!(
        history(&["--since", "1700000001000", "--until", "1700000003000"]),
        [1, 3]
    );
    assert_eq!(history(&["--grep", "apple"]), [0, 1]);
    assert_eq!(history(&["--reverse", "--limit", "2"]), [4, 3]);
    assert_eq!(history(&["--stream", "orders/1"]), [0, 1, 3, 4]);
    let raw = lines(&log, "history", &["stream:notes", "--raw"]);
    assert_eq!(raw[0]["payload_encoding"], "hex");
    let full = log.ok("history", &["stream:notes", "--full"]);
    assert!(full.contains("remember the pears"));
}

#[test]
fn a_stream_or_entity_that_does_not_exist_exits_1_naming_it() {
    let log = orders();
    let output = exits(log.run("log", &["--stream", "orders/2"]), 1);
    assert!(
        stderr(&output).contains("there is no stream orders/2"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "");
    let output = exits(
        log.run("history", &["stream:orders/1", "--stream", "orders/2"]),
        1,
    );
    assert!(
        stderr(&output).contains("there is no stream orders/2"),
        "{}",
        stderr(&output)
    );
    let output = exits(log.run("history", &["lease:nobody"]), 1);
    assert!(
        stderr(&output).contains("no event touched lease:nobody"),
        "{}",
        stderr(&output)
    );
    // A filter that keeps nothing of an entity that exists is not a finding.
    assert_eq!(log.ok("history", &["stream:notes", "--kind", "order."]), "");
}

#[test]
fn streams_lists_each_stream_with_its_length_and_last_position() {
    let log = orders();
    let streams = lines(&log, "streams", &[]);
    assert_eq!(
        streams,
        [
            json!({"stream": "notes", "length": 1, "last_position": 2}),
            json!({"stream": "orders/1", "length": 4, "last_position": 4}),
        ]
    );
    assert_eq!(
        lines(&log, "streams", &["--prefix", "orders/"]),
        [json!({"stream": "orders/1", "length": 4, "last_position": 4})]
    );
    assert_eq!(
        lines(&log, "streams", &["--prefix", "zzz"]),
        Vec::<Value>::new()
    );
    let text = log.ok("streams", &[]);
    let text: Vec<&str> = text.lines().collect();
    assert_eq!(text[0], "     records  last position  stream");
    assert_eq!(text[1], "           1              2  notes");
    assert_eq!(text[2], "           4              4  orders/1");
}

#[test]
fn streams_of_a_missing_file_exits_2() {
    let log = Log::new();
    let output = exits(log.run("streams", &[]), 2);
    assert!(!stderr(&output).is_empty());
    assert!(!log.db.exists());
}

#[test]
fn state_prints_aligned_tables_and_json_lines_one_row_each() {
    let log = Log::new();
    let _ = log.ok("demo", &["--records", "300"]);
    let text = log.ok("state", &["leases"]);
    let mut tables = text.split("\n\n");
    let held = tables.next().unwrap();
    let held: Vec<&str> = held.lines().collect();
    assert!(held[0].starts_with("leases.held ("), "{text}");
    assert!(held[1].starts_with("resource"), "{text}");
    // Every column starts at the same offset on every line.
    let holder = held[1].find("holder").unwrap();
    for row in &held[2..] {
        assert_eq!(row.as_bytes()[holder - 1], b' ', "{text}");
        assert_ne!(row.as_bytes()[holder], b' ', "{text}");
    }
    assert!(text.contains("2026-01-01T"), "times read as times: {text}");
    assert!(
        log.ok("state", &["leases", "--ms"]).contains(" 17672"),
        "--ms: milliseconds"
    );
    let rows = lines(&log, "state", &["leases"]);
    // One JSON line per row of text: every line of a table but its title and header.
    let text_rows: usize = text
        .split("\n\n")
        .map(|table| table.lines().count().saturating_sub(2))
        .sum();
    assert_eq!(rows.len(), text_rows, "{text}");
    for row in &rows {
        assert!(
            row["table"].as_str().unwrap().starts_with("leases."),
            "{row}"
        );
        assert!(row["row"].is_object(), "{row}");
    }
    let first = &rows[0]["row"];
    assert!(
        first["resource"].is_string() && first["token"].is_u64(),
        "{first}"
    );
    for projection in ["registry", "outbox", "runs", "consumers", "ingest"] {
        let _ = log.ok("state", &[projection]);
        let _ = log.ok("state", &[projection, "--json"]);
    }
}

#[test]
fn table_and_key_select_rows() {
    let log = Log::new();
    let _ = log.ok("demo", &["--records", "300"]);
    let held = lines(&log, "state", &["leases", "--table", "held"]);
    assert!(!held.is_empty());
    assert!(held.iter().all(|row| row["table"] == "leases.held"));
    assert_eq!(
        lines(&log, "state", &["leases", "--table", "leases.held"]),
        held
    );
    let resource = held[0]["row"]["resource"].as_str().unwrap().to_owned();
    let one = lines(
        &log,
        "state",
        &["leases", "--table", "held", "--key", &resource],
    );
    assert_eq!(one, [held[0].clone()]);
    let text = log.ok("state", &["leases", "--key", &resource]);
    assert!(text.contains(&resource), "{text}");
    let output = exits(
        log.run("state", &["leases", "--key", "no-such-resource"]),
        1,
    );
    assert!(
        stderr(&output).contains("no row of leases has the key no-such-resource"),
        "{}",
        stderr(&output)
    );
    let output = exits(log.run("state", &["leases", "--table", "nonsense"]), 2);
    assert!(
        stderr(&output).contains("leases has no table nonsense: its tables are leases.held"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn state_at_replays_and_past_the_head_is_an_error() {
    let log = orders();
    assert_eq!(
        log.ok("state", &["leases", "--at", "5"]),
        "leases.held (0 rows)\n\nleases.released_tokens (0 rows)\n\nleases.lanes (0 rows)\n"
    );
    let output = exits(log.run("state", &["leases", "--at", "6"]), 2);
    assert!(
        stderr(&output).contains("past the head"),
        "{}",
        stderr(&output)
    );
    let output = exits(log.run("state", &["nonsense"]), 2);
    assert!(
        stderr(&output).contains("there is no projection nonsense"),
        "{}",
        stderr(&output)
    );
}

/// `annals state` and `annals history` show the fields the reference's rules added: a lease's
/// project, name and holder name, a row's kind and enqueue id, a charge's pre-summed calls.
#[test]
fn state_and_history_show_labels_kinds_and_presummed_calls() {
    use annals::leases::{LeaseCommand, LeaseLabels};
    use annals::outbox::OutboxCommand;
    use annals::registry::ChargeFuel;
    const T0: u64 = 1_767_225_600_000;
    let log = Log::new();
    {
        let store = Store::open(&log.db).unwrap();
        let acquire = LeaseCommand::AcquireLabelled {
            resource: "deploy-lock".into(),
            holder: "agent-7".into(),
            labels: LeaseLabels {
                project: "proj-1".into(),
                name: "deploy".into(),
                holder_name: "Ada".into(),
            },
            ttl_ms: 30_000,
            now_ms: T0,
        };
        store.execute(&acquire).unwrap().expect_done();
        let enqueue = OutboxCommand::Enqueue {
            key: "ev:1".into(),
            peer: "runtime:b".into(),
            kind: "report".into(),
            payload: b"{}".to_vec(),
            now_ms: T0,
        };
        store.execute(&enqueue).unwrap().expect_done();
        let charge = ChargeFuel {
            instance: "alpha".into(),
            caller: String::new(),
            op: "batch".into(),
            calls: 12,
            fuel: 400,
            now_ms: T0,
        };
        store.execute(&charge).unwrap().expect_done();
    }
    let leases = log.ok("state", &["leases", "--json"]);
    assert!(
        leases.contains(r#""project":"proj-1""#)
            && leases.contains(r#""name":"deploy""#)
            && leases.contains(r#""holder_name":"Ada""#),
        "{leases}"
    );
    let outbox = log.ok("state", &["outbox", "--json"]);
    assert!(
        outbox.contains(r#""kind":"report""#) && outbox.contains(r#""enqueue_id":1"#),
        "{outbox}"
    );
    let registry = log.ok("state", &["registry", "--json"]);
    assert!(registry.contains(r#""calls":12"#), "{registry}");
    let history = log.ok("history", &["lease:deploy-lock", "--json"]);
    assert!(
        history.contains("proj-1") && history.contains("holder_name"),
        "{history}"
    );
}
