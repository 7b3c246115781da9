//! Real processes sharing one log: the readers (`verify`, `tail`, `stats`, `log`) beside a
//! writer in another process (the test's own, `crate::appender`), several `annals` processes
//! appending in multi-writer mode, and a writer that holds the log against another (the races
//! to create one log: `races.rs`). Every reader and writer but the test's own is the `annals`
//! binary; nothing is a thread standing in for one. (A library reader beside a writer process:
//! `tests/it/processes.rs`.)

use std::collections::BTreeSet;
use std::process::{Output, Stdio};

use annals::{Position, Sharing, Store};

use crate::appender::Appender;

fn annals() -> std::process::Command {
    crate::command(&[])
}

fn succeeded(output: &Output, what: &str) -> String {
    assert!(
        output.status.success(),
        "{what}: {:?}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8 output")
}

/// The `position` of every JSON line `log --json` or `tail --json` printed.
fn positions(json_lines: &str) -> Vec<u64> {
    json_lines
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            value["position"].as_u64().expect("a position")
        })
        .collect()
}

#[test]
fn readers_in_other_processes_verify_tail_and_stat_a_log_while_a_writer_appends() {
    const TAILED: u64 = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.redb");
    let writer = Appender::start(&path, Sharing::SingleWriter);
    let tail = annals()
        .arg("tail")
        .arg(&path)
        .args(["--from", "0", "--count", &TAILED.to_string(), "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tail");
    let mut heads = Vec::new();
    for round in 0..4 {
        succeeded(
            &annals().arg("verify").arg(&path).output().unwrap(),
            &format!("verify {round} beside the writer"),
        );
        let stats = succeeded(
            &annals()
                .arg("stats")
                .arg(&path)
                .arg("--json")
                .output()
                .unwrap(),
            "stats beside the writer",
        );
        let stats: serde_json::Value = serde_json::from_str(stats.trim()).unwrap();
        heads.push(stats["records"].as_u64().expect("records"));
        let log = succeeded(
            &annals()
                .arg("log")
                .arg(&path)
                .arg("--json")
                .output()
                .unwrap(),
            "log beside the writer",
        );
        let seen = positions(&log);
        assert_eq!(
            seen,
            (0..seen.len() as u64).collect::<Vec<_>>(),
            "log {round}"
        );
    }
    assert!(
        heads.windows(2).all(|w| w[0] <= w[1]),
        "the head went back: {heads:?}"
    );
    let tailed = succeeded(&tail.wait_with_output().unwrap(), "tail beside the writer");
    assert_eq!(positions(&tailed), (0..TAILED).collect::<Vec<_>>());
    writer.stop();
    let store = Store::open_read_only(&path).unwrap();
    assert!(store.snapshot().unwrap().head().unwrap().next.0 >= TAILED);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn three_processes_appending_in_multi_writer_mode_land_each_append_exactly_once() {
    const PROCESSES: u64 = 3;
    const APPENDS: u64 = 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    std::thread::scope(|scope| {
        for process in 0..PROCESSES {
            let path = &path;
            scope.spawn(move || {
                for append in 0..APPENDS {
                    let key = format!("p{process}-{append}");
                    let output = annals()
                        .arg("append")
                        .arg(path)
                        .arg(format!("writer/{process}"))
                        .arg("test.shared")
                        .arg(&key)
                        .args(["--key", &key, "--sharing", "multi-writer", "--wait", "30s"])
                        .output()
                        .unwrap();
                    succeeded(&output, &format!("append {key}"));
                }
            });
        }
    });
    let store = Store::open_read_only(&path).unwrap();
    let records = store
        .snapshot()
        .unwrap()
        .read_all(Position(0), annals::Direction::Forward, usize::MAX)
        .unwrap();
    let positions: Vec<u64> = records.iter().map(|r| r.position.0).collect();
    assert_eq!(positions, (0..PROCESSES * APPENDS).collect::<Vec<_>>());
    let keys: BTreeSet<&str> = records
        .iter()
        .filter_map(|r| r.idempotency_key.as_deref())
        .collect();
    assert_eq!(
        keys.len() as u64,
        PROCESSES * APPENDS,
        "an append is missing or twice"
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_writer_that_holds_the_log_makes_another_wait_then_exit_2_naming_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (sharing, readable) in [(Sharing::SingleWriter, true), (Sharing::Exclusive, false)] {
        let mode = sharing.to_string();
        let path = dir.path().join(format!("{mode}.redb"));
        let writer = Appender::start(&path, sharing);
        let output = annals()
            .arg("append")
            .arg(&path)
            .args(["s", "test.kind", "--wait", "300ms"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{mode}: {stderr}");
        assert!(
            stderr.contains(&format!("in {mode} mode")),
            "{mode}: {stderr}"
        );
        assert!(stderr.contains("waited 300ms"), "{mode}: {stderr}");
        let log = annals().arg("stats").arg(&path).output().unwrap();
        assert_eq!(
            log.status.success(),
            readable,
            "{mode}: stats beside the writer"
        );
        if !readable {
            let stderr = String::from_utf8_lossy(&log.stderr);
            assert!(stderr.contains("exclusive mode"), "{stderr}");
        }
        writer.stop();
    }
}
