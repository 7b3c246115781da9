//! Real crashes of writer processes sharing one log through its journal (multi-writer mode):
//! two `annals-testing crash-writer` processes append at once, each reporting every append it
//! was answered (`durable <position> <hash>`); one of them, picked at random, is killed with
//! SIGKILL at a moment chosen from its reports, 300 times, and another takes its place beside
//! the survivor. Kills land in commits, in drains (the journal's bound is a few KB, seeded per
//! process) and between them, and in the middle of another writer's turn.
//!
//! After each kill, while the survivor goes on writing: a read-only store sees every append
//! either writer reported, with its hash; every tenth kill a writable multi-writer store
//! beside the survivor sees them too and `verify` passes. At the end both are killed and an
//! exclusive open finds every position ever reported exactly where it was reported.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};

use crate::journal_crash::parse;
use annals::testing::internals::demo::Rng;
use annals::testing::setup::ExpectDone;
use annals::{Position, Sharing, Store, StoreOptions, log::Digest};

const KILLS: u64 = 300;

struct Writer {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

fn start(path: &std::path::Path, rng: &mut Rng) -> Writer {
    let mut child = Command::new(crate::annals_bin::testing())
        .arg("crash-writer")
        .arg(path)
        .args(["--sharing", "multi-writer"])
        .arg("--tasks")
        .arg((1 + rng.below(4)).to_string())
        .arg("--checkpoint-bytes")
        .arg((512 + rng.below(16_384)).to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start a writer");
    let lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
    Writer { child, lines }
}

/// Reads up to `count` reports of `writer` into `reported`; how many it read (fewer when the
/// writer stopped).
fn read_reports(writer: &mut Writer, count: u64, reported: &mut BTreeMap<Position, Digest>) -> u64 {
    let mut seen = 0;
    while seen < count {
        let Some(line) = writer.lines.next() else {
            break;
        };
        let (position, hash) = parse(&line.expect("a line"));
        let earlier = reported.insert(position, hash);
        assert!(earlier.is_none(), "{position} reported twice");
        seen += 1;
    }
    seen
}

/// Every position in `reported` is in `store`'s view with its reported hash, and the head
/// is past `last`, the last position any writer reported.
fn assert_sees(store: &Store, reported: &[(Position, Digest)], last: Position, who: &str) {
    let snapshot = store.snapshot().expect("a snapshot");
    let head = snapshot.head().expect("a head");
    assert!(head.next > last, "{who} misses {last} (head {})", head.next);
    for (position, hash) in reported {
        let record = snapshot.get(*position).expect("a read");
        assert_eq!(
            record.map(|r| r.hash),
            Some(*hash),
            "{who}: position {position}"
        );
    }
}

fn multi_writer() -> StoreOptions {
    StoreOptions {
        sharing: Sharing::MultiWriter,
        ..StoreOptions::default()
    }
}

#[test]
fn every_commit_reported_by_writers_sharing_the_journal_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    let mut rng = Rng::new(0x5EA2_ED01);
    let mut reported: BTreeMap<Position, Digest> = BTreeMap::new();
    // Made before the writers start, so that they race only to write it.
    Store::open(&path).unwrap().close().unwrap();
    let mut writers = [start(&path, &mut rng), start(&path, &mut rng)];
    let mut answered_kills = 0;
    let mut looked_up_to = Position(0);
    for kill in 0..KILLS {
        let victim = rng.below(2) as usize;
        let wait_for = if rng.chance(10) { 0 } else { 1 + rng.below(40) };
        let survivor = 1 - victim;
        // A few of the survivor's first, so that its commits interleave with the victim's.
        read_reports(&mut writers[survivor], rng.below(5), &mut reported);
        answered_kills +=
            u64::from(read_reports(&mut writers[victim], wait_for, &mut reported) > 0);
        // SIGKILL: no destructor, no drain, no clean close; maybe in the survivor's turn.
        let Writer { mut child, lines } =
            std::mem::replace(&mut writers[victim], start(&path, &mut rng));
        child.kill().expect("kill a writer");
        child.wait().expect("reap a writer");
        for line in lines {
            let Ok(line) = line else { break };
            let (position, hash) = parse(&line);
            reported.insert(position, hash);
        }
        // What was reported since the last look, and a few earlier reports at random.
        let last = reported.keys().next_back().copied().unwrap_or(Position(0));
        let mut looked_at: Vec<(Position, Digest)> = reported
            .range(looked_up_to..)
            .map(|(position, hash)| (*position, *hash))
            .collect();
        let earlier: Vec<_> = reported.range(..looked_up_to).collect();
        for _ in 0..earlier.len().min(8) {
            let (position, hash) = earlier[rng.below(earlier.len() as u64) as usize];
            looked_at.push((*position, *hash));
        }
        looked_up_to = Position(last.0 + 1);
        let reader = Store::open_read_only(&path)
            .unwrap_or_else(|error| panic!("kill {kill}: a reader beside the writers: {error}"));
        assert_sees(&reader, &looked_at, last, &format!("kill {kill}: a reader"));
        drop(reader);
        if kill % 10 == 9 {
            let beside = Store::open_with(&path, multi_writer())
                .unwrap_or_else(|error| panic!("kill {kill}: a writer beside them: {error}"));
            assert_sees(&beside, &looked_at, last, &format!("kill {kill}: a writer"));
            let report = annals::Audit::of(&beside).verify().unwrap();
            assert!(report.is_sound(), "kill {kill}: {:?}", report.problem);
            beside.close().unwrap();
        }
    }
    for mut writer in writers {
        writer.child.kill().expect("kill a writer");
        writer.child.wait().expect("reap a writer");
        for line in writer.lines {
            let Ok(line) = line else { break };
            let (position, hash) = parse(&line);
            reported.insert(position, hash);
        }
    }
    let store = Store::open_with(
        &path,
        StoreOptions {
            sharing: Sharing::Exclusive,
            ..StoreOptions::default()
        },
    )
    .expect("the log reopens alone");
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    let all: Vec<_> = reported.iter().map(|(p, h)| (*p, *h)).collect();
    let last = all.last().map_or(Position(0), |(position, _)| *position);
    assert_sees(&store, &all, last, "the last open");
    assert!(
        answered_kills > KILLS / 2,
        "only {answered_kills} of {KILLS} killed writers were answered before their kill"
    );
    eprintln!(
        "{KILLS} kills of writers sharing a journal: {} positions reported durable and found",
        reported.len()
    );
}

/// A byte flipped in a synced frame of the journal writers share, before its last frame: the
/// other writer's next read and write are refused naming the journal, and so is a new
/// writer's open, as a file's only writer refuses it; nothing is read as a torn end.
#[test]
fn writers_sharing_a_journal_refuse_one_damaged_before_its_last_frame() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    let options = || StoreOptions {
        create: true,
        ..multi_writer()
    };
    let first = Store::open_with(&path, options()).unwrap();
    let second = Store::open_with(&path, options()).unwrap();
    // The second writer reads the frames up to its own; the two after it are new to it.
    for (i, store) in [&first, &second, &first, &first].into_iter().enumerate() {
        let event = annals::NewEvent::new("test.kind", i as u64, b"shared".to_vec());
        store
            .append("s", annals::ExpectedVersion::Any, &[event])
            .unwrap()
            .expect_done();
    }
    let journal = annals::journal::journal_path(&path);
    let mut bytes = std::fs::read(&journal).unwrap();
    let frames = annals::testing::damage::journal_frames(&bytes);
    assert_eq!(frames.len(), 4, "each append a frame");
    let (at, len) = frames[2];
    bytes[at + len / 2] ^= 0x40;
    std::fs::write(&journal, &bytes).unwrap();
    let damaged = |result: Result<(), annals::Error>, what: &str| {
        let error = result.expect_err(what);
        assert!(
            matches!(
                &error,
                annals::Error::Journal(annals::error::JournalError::Damaged { .. })
            ),
            "{what}: {error:?}"
        );
    };
    damaged(
        second
            .snapshot()
            .and_then(|snapshot| snapshot.head())
            .map(drop),
        "a read over the damage",
    );
    let event = annals::NewEvent::new("test.kind", 9, b"after".to_vec());
    damaged(
        second
            .append("s", annals::ExpectedVersion::Any, &[event])
            .map(drop),
        "a write over the damage",
    );
    damaged(
        Store::open_with(&path, options()).map(drop),
        "a writer's open",
    );
    assert_eq!(
        std::fs::read(&journal).unwrap(),
        bytes,
        "nothing was written"
    );
}
