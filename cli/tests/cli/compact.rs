//! `annals compact`: its report in JSON and text on a log with free pages, which reads the same
//! after, and its refusal, exit 2 and the file unchanged, while another process has the log
//! open. (The library's side, `Store::compact` and its crashes: `tests/it/compact.rs`.)

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;

use annals::{Direction, Position, Store};

use crate::{Log, exits, json, stderr, stdout};

/// A demo log written live (a durable commit per command) at `path`, then rebuilt: both leave
/// free pages behind.
fn demo_log(path: &Path, records: u64) {
    let store = Store::open(path).expect("a new log");
    annals::testing::internals::demo::run(&store, records, |_| {}).expect("the demo");
    annals::maintenance::Rebuild::of(&store)
        .run(None)
        .expect("a rebuild");
    store.close().expect("close");
}

/// What must be the same after a compaction: every record's hash, in order, and the Merkle
/// root of them all.
fn content(path: &Path) -> (Vec<annals::log::Digest>, annals::log::Digest) {
    let store = Store::open_read_only(path).expect("open the log");
    let hashes = store
        .snapshot()
        .expect("read the log")
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .expect("read the log")
        .iter()
        .map(|record| record.hash)
        .collect();
    let head = store
        .snapshot()
        .expect("the head")
        .head()
        .expect("the head");
    let root = store
        .snapshot()
        .and_then(|snapshot| snapshot.merkle_root(head.next.0))
        .expect("the root");
    (hashes, root)
}

#[test]
fn compaction_reclaims_free_pages_and_the_log_reads_the_same() {
    let log = Log::new();
    demo_log(&log.db, 2_000);
    let before = content(&log.db);
    let bytes_before = std::fs::metadata(&log.db).unwrap().len();

    let report = json(&log.ok("compact", &["--json"]));
    let reclaimed = report["bytes_reclaimed"].as_u64().expect("bytes_reclaimed");
    let bytes_after = std::fs::metadata(&log.db).unwrap().len();
    assert!(reclaimed > 0, "nothing reclaimed: {report}");
    assert_eq!(report["bytes_before"].as_u64(), Some(bytes_before));
    assert_eq!(report["bytes_after"].as_u64(), Some(bytes_after));
    assert_eq!(bytes_before - bytes_after, reclaimed);
    assert_eq!(content(&log.db), before);
    log.ok("verify", &[]);

    // The text form says the same; a second compaction finds little or nothing left.
    let line = log.ok("compact", &[]);
    assert!(
        line.starts_with(&format!("compacted {}: ", log.path())) && line.contains("reclaimed"),
        "{line}"
    );
}

/// Beside a reader in another process (`annals tail`, following the log once it has printed a
/// record), `compact` is refused as held, exit 2, naming the path, and the file is byte for
/// byte as it was; once the reader is gone, it compacts.
#[test]
fn compaction_is_refused_while_another_process_has_the_log_open() {
    let log = Log::new();
    demo_log(&log.db, 500);
    let mut tail = crate::command(&["tail", log.path(), "--from", "0", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start annals tail");
    let mut lines = BufReader::new(tail.stdout.take().expect("its output")).lines();
    assert!(lines.next().expect("tail prints").is_ok());

    let bytes = std::fs::read(&log.db).unwrap();
    let output = exits(log.run("compact", &["--json"]), 2);
    let error = json(&stderr(&output));
    assert_eq!(error["kind"], "held", "{error}");
    let message = error["error"].as_str().expect("a message");
    assert!(
        message.contains("another process has it open") && message.contains(log.path()),
        "{message}"
    );
    assert!(std::fs::read(&log.db).unwrap() == bytes);
    assert_eq!(stdout(&output), "");

    tail.kill().expect("kill the reader");
    tail.wait().expect("the reader ends");
    drop(lines);
    log.ok("compact", &[]);
}
