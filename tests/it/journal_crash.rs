//! Real crashes through the commit journal: `annals-testing crash-writer`, in exclusive and in
//! single-writer mode by turns (its commits go to `<log>.journal`, drained into the file every
//! few KB, the bound seeded per run so that kills land in commits, in drains and between
//! them), is killed with SIGKILL 300 times over one file, at a moment chosen from its own
//! reports. Beside a single writer, a reader in this process reads the log while it runs:
//! every append reported before the read is there, and the last record it saw must be in the
//! log after the kill with the hash it saw. After every other kill a read-only open reads the
//! log with what the journal holds that the file does not (it never reads a log missing an
//! acknowledged commit); after the others a writable open recovers them: every position ever
//! reported durable is there exactly once with its hash, and `verify` passes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use annals::testing::internals::demo::Rng;
use annals::{Direction, Position, Sharing, Store, StoreOptions, log::Digest};

const KILLS: u64 = 300;

pub(crate) fn parse(line: &str) -> (Position, Digest) {
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("durable"), "{line}");
    let position = words.next().and_then(|p| p.parse().ok()).expect(line);
    let hash = words.next().and_then(Digest::from_hex).expect(line);
    (Position(position), hash)
}

#[test]
fn every_commit_reported_durable_through_the_journal_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journaled.redb");
    let mut reported: BTreeMap<Position, Digest> = BTreeMap::new();
    let mut rng = Rng::new(0x0A55_0035);
    let (mut read_recovered, mut recovered, mut torn) = (0u64, 0u64, 0);
    // Records readers saw beside a live single writer, each to be found after its kill.
    let mut shown: Vec<(u64, Position, Digest)> = Vec::new();
    for kill in 0..KILLS {
        let wait_for = if rng.chance(10) { 0 } else { 1 + rng.below(60) };
        // Two kills a mode in turn: a reader's open and a writer's recovery follow each.
        let sharing = ["exclusive", "single-writer"][(kill / 2 % 2) as usize];
        let mut child = Command::new(crate::annals_bin::testing())
            .arg("crash-writer")
            .arg(&path)
            .args(["--sharing", sharing])
            .arg("--tasks")
            .arg((1 + rng.below(8)).to_string())
            .arg("--checkpoint-bytes")
            .arg((512 + rng.below(16_384)).to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the child");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut seen = 0;
        while seen < wait_for {
            match lines.next() {
                Some(line) => {
                    let (position, hash) = parse(&line.expect("a line"));
                    reported.insert(position, hash);
                    seen += 1;
                }
                None => break,
            }
        }
        if sharing == "single-writer" && seen > 0 {
            // The child holds the file and goes on writing: a reader beside it.
            let reader = Store::open_read_only(&path)
                .unwrap_or_else(|error| panic!("kill {kill}: a reader beside the writer: {error}"));
            let head = reader.snapshot().unwrap().head().unwrap();
            let last_reported = *reported.keys().next_back().expect("reported");
            assert!(
                head.next > last_reported,
                "kill {kill}: a reader beside the writer misses {last_reported} (head {})",
                head.next
            );
            shown.push((kill, Position(head.next.0 - 1), head.hash));
        }
        // SIGKILL: no destructor, no drain, no clean close.
        child.kill().expect("kill the child");
        child.wait().expect("reap the child");
        for line in lines {
            let Ok(line) = line else { break };
            let (position, hash) = parse(&line);
            reported.insert(position, hash);
        }
        if !path.exists() {
            assert!(reported.is_empty(), "kill {kill}: the log is gone");
            continue;
        }
        // Every other kill, a reader first: it reads what the journal holds past the file
        // with the file, sees every acknowledged commit, and leaves the journal as it was for
        // the writer to recover.
        if kill % 2 == 0 {
            let journal = annals::journal::journal_path(&path);
            let before = std::fs::read(&journal).ok();
            let reader = Store::open_read_only(&path)
                .unwrap_or_else(|error| panic!("kill {kill}: a read-only open failed: {error}"));
            let head = reader.snapshot().unwrap().head().unwrap().next;
            for position in reported.keys() {
                assert!(*position < head, "kill {kill}: a reader misses {position}");
            }
            drop(reader);
            assert_eq!(
                std::fs::read(&journal).ok(),
                before,
                "kill {kill}: the reader wrote"
            );
            let header = annals::journal::HEADER_BYTES as usize;
            let had_frames = before.is_some_and(|bytes| {
                bytes.len() > header && bytes[header..].iter().any(|&byte| byte != 0)
            });
            read_recovered += u64::from(had_frames);
        }
        let store = Store::open_with(
            &path,
            StoreOptions {
                sharing: Sharing::Exclusive,
                ..StoreOptions::default()
            },
        )
        .unwrap_or_else(|error| panic!("kill {kill}: the log does not reopen: {error}"));
        let recovery = annals::maintenance::Stats::of(&store)
            .unwrap()
            .journal_recovery;
        recovered += recovery.transactions;
        torn += u64::from(recovery.dropped_bytes > 0);
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(report.is_sound(), "kill {kill}: {:?}", report.problem);
        assert_eq!(
            report.head.next.0,
            store.snapshot().unwrap().head().unwrap().next.0,
            "kill {kill}"
        );
        // One scan of the log, rather than a point read a position: every position ever
        // reported, and every record a reader was shown, is there with its hash.
        let hashes: Vec<Digest> = store
            .snapshot()
            .unwrap()
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap()
            .iter()
            .map(|record| record.hash)
            .collect();
        let hash_at = |position: Position| hashes.get(position.0 as usize).copied();
        for (position, hash) in &reported {
            assert_eq!(
                hash_at(*position),
                Some(*hash),
                "kill {kill}: position {position} was reported durable"
            );
        }
        for (at, position, hash) in shown.drain(..) {
            assert_eq!(
                hash_at(position),
                Some(hash),
                "kill {kill}: position {position}, shown to a reader beside the writer at kill {at}"
            );
        }
        store.close().unwrap();
    }
    assert!(
        reported.len() as u64 > KILLS,
        "the child reported too little to check"
    );
    assert!(
        read_recovered > 0,
        "no reader found commits in the journal alone"
    );
    assert!(recovered > 0, "no writer needed the journal");
    eprintln!(
        "{KILLS} kills: {} positions reported durable and found; {recovered} transactions \
         recovered from the journal by writers, {read_recovered} journals read by readers; {torn} \
         torn frames dropped",
        reported.len()
    );
}

#[test]
fn a_killed_writers_journal_damaged_before_its_last_frame_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.redb");
    let mut child = Command::new(crate::annals_bin::testing())
        .arg("crash-writer")
        .arg(&path)
        .args(["--sharing", "exclusive", "--tasks", "1"])
        .args(["--checkpoint-bytes", "1000000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child");
    let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    for _ in 0..40 {
        parse(&lines.next().expect("the child reports").expect("a line"));
    }
    child.kill().expect("kill the child");
    child.wait().expect("reap the child");
    for copy in annals::testing::damage::journal_damaged_copies(&path, dir.path()) {
        let what = copy.what;
        // A writable open refuses, naming the damaged frame's offset, and keeps the journal as
        // it was. (What `annals verify` says of it: `cli/tests/cli/damaged.rs`.)
        match Store::open_with(
            &copy.log,
            StoreOptions {
                sharing: Sharing::Exclusive,
                ..StoreOptions::default()
            },
        )
        .map(drop)
        {
            Err(annals::Error::Journal(annals::error::JournalError::Damaged {
                offset: at,
                ..
            })) => {
                assert_eq!(at, copy.frame_offset, "{what}")
            }
            other => panic!("{what}: expected the journal's refusal, got {other:?}"),
        }
        assert_eq!(
            fs_read(&annals::journal::journal_path(&copy.log)),
            copy.journal,
            "{what}: the journal is kept as it was"
        );
    }
}

fn fs_read(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
