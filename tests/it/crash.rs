//! Real crashes: `annals-testing crash-writer` writes through the async writer and reports every
//! durable append; the test kills it with SIGKILL at a seeded moment chosen from its own
//! output (after the n-th report, n seeded; sometimes before the first), 20 times over the
//! same file, and after each kill reopens the file, verifies it, and checks every position
//! ever reported durable is there with the same hash. Beside each writer, two readers
//! (`annals-testing read`: verify, then every record) run in processes of their own as it is
//! killed: they find the log sound, and read no gap. (The command
//! line's own writes killed: `cli/tests/cli/crash.rs`.)

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use annals::testing::internals::demo::Rng;
use annals::{Position, Store, log::Digest};

/// Kills, each followed by a reopen and the checks.
const KILLS: u64 = 20;

fn parse(line: &str) -> (Position, Digest) {
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("durable"), "{line}");
    let position = words.next().and_then(|p| p.parse().ok()).expect(line);
    let hash = words.next().and_then(Digest::from_hex).expect(line);
    (Position(position), hash)
}

#[test]
fn every_append_reported_durable_survives_sigkill_and_the_log_verifies() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.redb");
    let mut reported: BTreeMap<Position, Digest> = BTreeMap::new();
    let mut rng = Rng::new(0x5161_0009);
    let mut readers_read = 0;
    for kill in 0..KILLS {
        let wait_for = if rng.chance(10) {
            0
        } else {
            1 + rng.below(150)
        };
        let mut child = Command::new(crate::annals_bin::testing())
            .arg("crash-writer")
            .arg(&path)
            .arg("--tasks")
            .arg((1 + rng.below(8)).to_string())
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
        // Readers in processes of their own, beside the writer as it dies: whatever moment
        // the kill strikes, they read whole commits, every record checked.
        let reader = || {
            Command::new(crate::annals_bin::testing())
                .arg("read")
                .arg(&path)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a reader")
        };
        let readers = [reader(), reader()];
        // `Child::kill` sends SIGKILL on Unix: no destructor, no flush, no clean close.
        child.kill().expect("kill the child");
        child.wait().expect("reap the child");
        for reader in readers {
            let output = reader.wait_with_output().expect("a reader's output");
            let said = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success(),
                "kill {kill}: a reader failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            // A reader that started before the writer's first commit finds no log yet.
            if said == "absent\n" {
                continue;
            }
            let positions: Vec<u64> = said
                .lines()
                .map(|line| line.parse().expect("a position"))
                .collect();
            let expected: Vec<u64> = (0..positions.len() as u64).collect();
            assert_eq!(positions, expected, "kill {kill}: a reader read a gap");
            readers_read += positions.len();
        }
        // Whatever it printed before it died was durable when printed.
        for line in lines {
            let Ok(line) = line else { break };
            let (position, hash) = parse(&line);
            reported.insert(position, hash);
        }
        let store = Store::open_with(&path, annals::StoreOptions::default())
            .unwrap_or_else(|error| panic!("kill {kill}: the log does not reopen: {error}"));
        let report = annals::Audit::of(&store).verify().unwrap();
        assert!(report.is_sound(), "kill {kill}: {:?}", report.problem);
        for (position, hash) in &reported {
            let record = store.snapshot().unwrap().get(*position).unwrap();
            assert_eq!(
                record.map(|r| r.hash),
                Some(*hash),
                "kill {kill}: position {position} was reported durable"
            );
        }
    }
    assert!(
        reported.len() as u64 > KILLS,
        "the child reported too little to check"
    );
    assert!(
        readers_read > 0,
        "the readers beside the writer read nothing"
    );
    eprintln!(
        "{KILLS} kills, {} positions reported durable and found, {readers_read} records read beside the writer",
        reported.len()
    );
}
