//! Real processes sharing one log: readers (`verify`, `tail`, `stats`, `log`) beside a
//! writer in another process, several writer processes in multi-writer mode, a writer that
//! holds the log against another, and races to create a log at one path. Every process here
//! is the `annals` binary; nothing is a thread standing in for a process.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use annals::{Position, Store};

fn annals() -> Command {
    Command::new(crate::annals_bin::annals())
}

/// A `crash-writer` child appending through the async writer in `sharing` mode, once it has
/// reported its first durable append (so it holds the file). Its further reports are read
/// and dropped by a thread of their own, so that a full pipe never stops it.
fn start_writer(path: &Path, sharing: &str) -> Child {
    let mut child = Command::new(crate::annals_bin::testing())
        .arg("crash-writer")
        .arg(path)
        .args(["--tasks", "4", "--sharing", sharing])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the writer");
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let first = lines.next().expect("the writer reports").expect("a line");
    assert!(first.starts_with("durable "), "{first}");
    std::thread::spawn(move || lines.for_each(drop));
    child
}

fn stop(mut child: Child) {
    child.kill().expect("kill");
    child.wait().expect("reap");
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
    let writer = start_writer(&path, "single-writer");
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
    stop(writer);
    let store = Store::open_read_only(&path).unwrap();
    assert!(store.head().unwrap().next.0 >= TAILED);
    assert!(store.verify().unwrap().is_sound());
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
    assert!(store.verify().unwrap().is_sound());
}

#[test]
fn a_writer_that_holds_the_log_makes_another_wait_then_exit_2_naming_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, readable) in [("single-writer", true), ("exclusive", false)] {
        let path = dir.path().join(format!("{mode}.redb"));
        let writer = start_writer(&path, mode);
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
        stop(writer);
    }
}

#[test]
fn processes_racing_to_create_one_log_both_land() {
    let dir = tempfile::tempdir().unwrap();
    for race in 0..10 {
        let path = dir.path().join(format!("race-{race}.redb"));
        let children: Vec<Child> = (0..2)
            .map(|writer| {
                annals()
                    .arg("append")
                    .arg(&path)
                    .arg(format!("s/{writer}"))
                    .arg("test.race")
                    .args(["--wait", "30s"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            succeeded(&child.wait_with_output().unwrap(), "a racing append");
        }
        let store = Store::open_read_only(&path).unwrap();
        assert_eq!(
            store.head().unwrap().next,
            Position(2),
            "race {race}: an append is lost"
        );
    }
}

#[test]
fn an_import_never_replaces_a_log_created_at_its_target_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    succeeded(
        &annals()
            .arg("demo")
            .arg(&source)
            .args(["--records", "2000"])
            .output()
            .unwrap(),
        "demo",
    );
    let export = dir.path().join("source.export");
    succeeded(
        &annals()
            .arg("export")
            .arg(&source)
            .arg(&export)
            .output()
            .unwrap(),
        "export",
    );
    for race in 0..10 {
        let target = dir.path().join(format!("target-{race}.redb"));
        let import = annals()
            .arg("import")
            .arg(&export)
            .arg(&target)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let append = annals()
            .arg("append")
            .arg(&target)
            .args([
                "mine",
                "test.mine",
                "--key",
                "acknowledged",
                "--wait",
                "30s",
            ])
            .output()
            .unwrap();
        let import = import.wait_with_output().unwrap();
        if !append.status.success() {
            // The append found the imported log first and refused nothing else: it can only
            // fail on a held file, which it waited for.
            panic!("race {race}: {}", String::from_utf8_lossy(&append.stderr));
        }
        let store = Store::open_read_only(&target).unwrap();
        let records = store
            .read_all(Position(0), annals::Direction::Forward, usize::MAX)
            .unwrap();
        assert!(
            records
                .iter()
                .any(|r| r.idempotency_key.as_deref() == Some("acknowledged")),
            "race {race}: the acknowledged append is gone (import {:?})",
            import.status
        );
        assert!(store.verify().unwrap().is_sound());
    }
}
