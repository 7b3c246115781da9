//! A reader beside a single writer in another process (`annals-testing crash-writer`): it
//! sees exactly the writer's journaled commits. The `annals` commands beside a writer, several
//! of them writing in multi-writer mode, and their races to create a log:
//! `cli/tests/cli/processes.rs`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use annals::{Position, Store};

fn stop(mut child: Child) {
    child.kill().expect("kill");
    child.wait().expect("reap");
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
        let record = store.snapshot().unwrap().get(Position(*position)).unwrap();
        assert_eq!(
            record.map(|r| r.hash.to_string()).as_ref(),
            Some(hash),
            "position {position}"
        );
    }
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}
