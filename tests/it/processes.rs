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

/// The default mode, single-writer, journals: its writer syncs each commit to the journal and
/// the log file takes them in at drains (here every 8 KB of frames). A reader in another
/// process (this one) reads the journal's synced frames with the file: every read holds every
/// append the writer reported before it began, the records it holds chain from the first, and
/// every record a reader saw is in the log, with the hash it saw, once the writer is killed and
/// the log recovered — no reader was shown a commit that could be lost.
#[test]
fn a_reader_in_another_process_sees_exactly_a_single_writers_journaled_commits() {
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.redb");
    let mut child = Command::new(crate::annals_bin::testing())
        .arg("crash-writer")
        .arg(&path)
        .args(["--tasks", "4", "--sharing", "single-writer"])
        .args(["--checkpoint-bytes", "8192"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the writer");
    let reported = Arc::new(Mutex::new(BTreeMap::<u64, String>::new()));
    // One past the highest position reported durable.
    let acknowledged = Arc::new(AtomicU64::new(0));
    let lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let reading = {
        let (reported, acknowledged) = (Arc::clone(&reported), Arc::clone(&acknowledged));
        std::thread::spawn(move || {
            for line in lines {
                let Ok(line) = line else { break };
                let mut fields = line.split(' ');
                assert_eq!(fields.next(), Some("durable"), "{line}");
                let position: u64 = fields.next().unwrap().parse().unwrap();
                let hash = fields.next().unwrap().to_owned();
                reported.lock().unwrap().insert(position, hash);
                acknowledged.fetch_max(position + 1, Ordering::Release);
            }
        })
    };
    while acknowledged.load(Ordering::Acquire) == 0 {
        std::thread::yield_now();
    }
    let journal = annals::journal::journal_path(&path);
    assert!(journal.exists(), "the single writer journals");
    let reader = Store::open_read_only(&path).unwrap();
    let mut seen: BTreeMap<u64, String> = BTreeMap::new();
    let mut last_hash = None;
    // Reads until 2,000 records were seen, bounded: the writer appends without a pause.
    let mut read = 0u64;
    while seen.len() < 2_000 {
        read += 1;
        assert!(
            read < 10_000_000,
            "the writer stopped: {} records seen",
            seen.len()
        );
        let before = acknowledged.load(Ordering::Acquire);
        let snapshot = reader.snapshot().unwrap();
        let head = snapshot.head().unwrap().next.0;
        assert!(
            head >= before,
            "read {read}: the head {head} misses appends reported before it ({before})"
        );
        let from = seen.len() as u64;
        let records = snapshot
            .records(Position(from), annals::Direction::Forward)
            .unwrap();
        for record in records.take((head - from) as usize) {
            let record = record.unwrap();
            assert_eq!(record.position.0, seen.len() as u64, "read {read}");
            if let Some(hash) = last_hash {
                assert_eq!(record.prev, hash, "read {read}: the chain");
            }
            last_hash = Some(record.hash);
            seen.insert(record.position.0, record.hash.to_string());
        }
    }
    drop(reader);
    stop(child);
    reading.join().unwrap();
    let reported = reported.lock().unwrap().clone();
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    for (position, hash) in reported.iter().chain(seen.iter()) {
        let record = store.get(Position(*position)).unwrap();
        assert_eq!(
            record.map(|r| r.hash.to_string()).as_ref(),
            Some(hash),
            "position {position}"
        );
    }
    assert!(store.verify().unwrap().is_sound());
}
