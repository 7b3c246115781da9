//! Several writers on one log, as the reference hosts run: a long-lived server that keeps the
//! log open in multi-writer mode, serving one small transaction per request (the test's own,
//! on a thread: `annals::testing::host`), and short `annals append` processes writing beside
//! it, each waiting its turn per transaction, for at most its busy timeout. Every `annals` is a
//! real process, and the server is the test's process, another than theirs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, PipeWriter, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::thread::JoinHandle;

use annals::{Direction, Position, Store, leases};

/// A writer of the test's own on `path`, on a thread: `host` (`annals::testing::host::serve`)
/// or `hold-write` (`hold_write`), once it has printed its first line (`expected`). Returns
/// its thread, the pipe to its input (to stop or release it), and the rest of its lines,
/// gathered by a thread of their own so that a full pipe never stops it.
fn start(
    what: &'static str,
    path: &Path,
    expected: &str,
) -> (
    JoinHandle<annals::Result<()>>,
    PipeWriter,
    JoinHandle<Vec<String>>,
) {
    let (input, to_input) = std::io::pipe().expect("a pipe");
    let (from_output, mut output) = std::io::pipe().expect("a pipe");
    let path = path.to_owned();
    let writer = std::thread::spawn(move || {
        let mut input = BufReader::new(input);
        match what {
            "host" => annals::testing::host::serve(&path, input, &mut output),
            _ => annals::testing::host::hold_write(&path, &mut input, &mut output),
        }
    });
    let mut lines = BufReader::new(from_output).lines();
    let first = lines.next().expect("the writer reports").expect("a line");
    assert_eq!(first, expected, "{what}'s first line");
    let rest = std::thread::spawn(move || lines.map(|line| line.expect("a line")).collect());
    (writer, to_input, rest)
}

/// The writer's thread ended without an error.
fn ended(writer: JoinHandle<annals::Result<()>>, what: &str) {
    let result = writer.join().expect("the writer's thread");
    if let Err(error) = result {
        panic!("{what}: {error}");
    }
}

fn finished(child: Child, what: &str) -> Output {
    let output = child.wait_with_output().expect("wait for the child");
    assert!(
        output.status.success(),
        "{what}: {:?}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `annals append` of one event with the idempotency key `key`, in multi-writer mode.
fn append(path: &Path, key: &str, wait: &str) -> Command {
    let mut command = crate::command(&[]);
    command
        .arg("append")
        .arg(path)
        .args(["cli/requests", "cli.request", "{}", "--key", key])
        .args(["--sharing", "multi-writer", "--wait", wait, "--json"]);
    command
}

/// The position an `annals append --json` printed.
fn appended_at(output: &Output) -> u64 {
    let line: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("append's JSON line");
    assert_eq!(line["duplicate"], false, "{line}");
    line["position"].as_u64().expect("a position")
}

/// Every record's idempotency key, with the positions it is found at.
fn positions_by_key(store: &Store) -> BTreeMap<String, Vec<u64>> {
    let mut by_key: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let records = store
        .snapshot()
        .expect("read the log")
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .expect("read the log");
    for record in records {
        if let Some(key) = record.idempotency_key {
            by_key.entry(key).or_default().push(record.position.0);
        }
    }
    by_key
}

#[test]
fn cli_processes_append_beside_a_host_serving_requests_in_multi_writer_mode_each_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host.redb");
    let (host, host_input, host_lines) = start("host", &path, "open");

    // Short processes beside the host, three at a time, each one transaction.
    let mut cli = BTreeMap::new();
    for round in 0..6 {
        let children: Vec<(String, Child)> = (0..3)
            .map(|i| {
                let key = format!("cli-{round}-{i}");
                let child = append(&path, &key, "30s")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start annals append");
                (key, child)
            })
            .collect();
        for (key, child) in children {
            let output = finished(child, &key);
            cli.insert(key, appended_at(&output));
        }
    }
    // The host served requests all along; closing its input stops it.
    drop(host_input);
    ended(host, "the host");
    let host_lines = host_lines.join().expect("the host's lines");

    let store = Store::open_read_only(&path).expect("open the log");
    let by_key = positions_by_key(&store);
    for (key, position) in &cli {
        assert_eq!(by_key.get(key), Some(&vec![*position]), "{key}");
    }
    let state = store.snapshot().expect("state").state();
    let (mut served, mut granted) = (0, 0);
    for line in &host_lines {
        match line.split(' ').collect::<Vec<_>>()[..] {
            ["appended", key, position] => {
                let position: u64 = position.parse().expect("a position");
                assert_eq!(by_key.get(key), Some(&vec![position]), "{key}");
                served += 1;
            }
            ["granted", resource, token] => {
                let lease = leases::lease(&state, resource)
                    .expect("read the lease")
                    .unwrap_or_else(|| panic!("{resource} was granted and is not held"));
                assert_eq!(lease.token.0.to_string(), token, "{resource}");
                granted += 1;
            }
            _ => panic!("the host printed {line:?}"),
        }
    }
    assert!(
        served > 0 && granted > 0,
        "the host served {served} appends and {granted} leases"
    );
    // Nothing but the acknowledged requests: the host's appends and leases, the CLI's appends.
    assert_eq!(by_key.len(), cli.len() + served, "{by_key:?}");
    assert!(
        annals::Audit::of(&store)
            .verify()
            .expect("verify")
            .is_sound()
    );
}

#[test]
fn a_write_waits_its_turn_for_another_process_up_to_its_busy_timeout_then_goes_through_once_free() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("held.redb");
    let (holder, mut holder_input, holder_lines) = start("hold-write", &path, "holding");

    // The other process's write is open: an append waits its 200 ms, then gives up having
    // written nothing, naming the wait (exit 2, kind `held`).
    let refused = append(&path, "too-soon", "200ms")
        .output()
        .expect("run append");
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
    let error: serde_json::Value =
        serde_json::from_slice(&refused.stderr).expect("append's JSON error");
    assert_eq!(error["kind"], "held", "{error}");
    let message = error["error"].as_str().expect("a message");
    assert!(
        message.contains("another process kept writing"),
        "{message}"
    );
    assert!(message.contains("nothing was written"), "{message}");

    // One that waits longer goes through once the holder commits.
    let waiting = append(&path, "in-turn", "60s")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start annals append");
    writeln!(holder_input, "commit").expect("release the holder");
    ended(holder, "the holder");
    let committed = holder_lines.join().expect("the holder's lines");
    let output = finished(waiting, "the waiting append");
    let in_turn = appended_at(&output);

    let store = Store::open_read_only(&path).expect("open the log");
    let by_key = positions_by_key(&store);
    assert_eq!(by_key.get("in-turn"), Some(&vec![in_turn]));
    assert_eq!(
        by_key.get("too-soon"),
        None,
        "a refused append left nothing"
    );
    let held: Vec<u64> = store
        .snapshot()
        .expect("read the held stream")
        .read_stream(
            "held",
            annals::log::StreamVersion(0),
            Direction::Forward,
            10,
        )
        .expect("read the held stream")
        .iter()
        .map(|record| record.position.0)
        .collect();
    assert_eq!(committed, vec![format!("committed {}", held[0])]);
    assert_eq!(held.len(), 1);
    assert!(
        annals::Audit::of(&store)
            .verify()
            .expect("verify")
            .is_sound()
    );
}
