//! Cutting a log from the command line: `annals archive` cuts and never overwrites an
//! archive, reads below the cut refuse naming the archive and read as before with it, proofs
//! of archived records need no archive, and `stats` says what the file holds. (The library's
//! side, `Store::archive_before`: `tests/it/archive.rs`.)

use annals::testing::setup::fill_interleaved as fill;
use annals::{Direction, Position, Store};

/// A new store in a fresh folder, and the folder.
fn store(log: &crate::Log) -> (&tempfile::TempDir, Store) {
    (&log.dir, Store::open(&log.db).expect("open a new store"))
}

#[test]
fn the_command_line_cuts_refuses_reads_below_and_verifies_archives() {
    let folder = crate::Log::new();
    let (dir, store) = store(&folder);
    fill(&store, 300);
    let log = store.path().to_owned();
    store.close().expect("close");
    let annals = || std::process::Command::new(crate::ANNALS);
    let uncut_log = String::from_utf8(
        annals()
            .arg("log")
            .arg(&log)
            .output()
            .expect("annals log")
            .stdout,
    )
    .expect("UTF-8");
    let archive = dir.path().join("log-0.archive");
    let cut = annals()
        .arg("archive")
        .arg(&log)
        .args(["--before", "120"])
        .arg(&archive)
        .output()
        .expect("annals archive");
    assert!(
        cut.status.success(),
        "{}",
        String::from_utf8_lossy(&cut.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&cut.stdout),
        "archived 120 records (0..120) to ".to_owned()
            + &archive.display().to_string()
            + "; the log starts at 120, cut record at 300\n"
    );
    let again = annals()
        .arg("archive")
        .arg(&log)
        .args(["--before", "200"])
        .arg(&archive)
        .output()
        .expect("annals archive");
    assert_eq!(
        again.status.code(),
        Some(2),
        "an archive is never overwritten"
    );
    let below = annals()
        .arg("log")
        .arg(&log)
        .args(["--from", "5"])
        .output()
        .expect("annals log");
    assert_eq!(below.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&below.stderr),
        "annals: position 5 is archived before 120 in log-0.archive\n"
    );
    let from_start = annals().arg("log").arg(&log).output().expect("annals log");
    assert!(from_start.status.success());
    assert!(String::from_utf8_lossy(&from_start.stdout).starts_with("120 "));
    // With the archive, the whole history from 0, the same lines as before the cut.
    let whole = annals()
        .arg("log")
        .arg(&log)
        .arg("--archive")
        .arg(&archive)
        .output()
        .expect("annals log --archive");
    assert!(
        whole.status.success(),
        "{}",
        String::from_utf8_lossy(&whole.stderr)
    );
    let whole = String::from_utf8_lossy(&whole.stdout).into_owned();
    let lines: Vec<&str> = whole.lines().collect();
    assert_eq!(lines.len(), 301, "300 records and the cut record");
    assert!(lines[0].starts_with("0 ") && lines[120].starts_with("120 "));
    assert_eq!(
        lines[..300].join("\n") + "\n",
        uncut_log,
        "the archive reads back as the log read before the cut"
    );
    let verified = annals()
        .arg("verify")
        .arg(&log)
        .arg("--archive")
        .arg(&archive)
        .output()
        .expect("annals verify");
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
    let mut bytes = std::fs::read(&archive).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    let damaged = dir.path().join("damaged.archive");
    std::fs::write(&damaged, &bytes).expect("write");
    let refused = annals()
        .arg("verify")
        .arg(&log)
        .arg("--archive")
        .arg(&damaged)
        .output()
        .expect("annals verify");
    assert_eq!(refused.status.code(), Some(1));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(said.contains("position"), "{said}");
}

/// `history`, `state --at` and `prove --position` of a cut demo log: below the start,
/// `history` and `state --at` refuse without the archive and read as before the cut with it;
/// `prove` needs no archive, the cut keeping every archived record's hash.
#[test]
fn reads_below_a_cut_come_from_its_archive_and_proofs_from_its_hashes() {
    let folder = crate::Log::new();
    let (dir, store) = store(&folder);
    annals::demo::run(&store, 2_000, |_| {}).expect("demo");
    let log = store.path().to_owned();
    let cut = store.snapshot().expect("head").head().expect("head").next.0 / 2;
    // An entity with records on both sides of the cut.
    let entity = "lease:deploy-lock".to_owned();
    let positions: Vec<u64> = store
        .snapshot()
        .expect("the lease's stream")
        .read_stream(
            "lease/deploy-lock",
            annals::log::StreamVersion(0),
            Direction::Forward,
            usize::MAX,
        )
        .expect("the lease's stream")
        .iter()
        .map(|record| record.position.0)
        .collect();
    assert!(positions.iter().any(|&p| p < cut) && positions.iter().any(|&p| p >= cut));
    store.close().expect("close");
    let annals = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(crate::ANNALS)
            .args(args)
            .output()
            .expect("annals runs")
    };
    let log = log.as_os_str();
    let at = (cut / 2).to_string();
    let reads: [Vec<&std::ffi::OsStr>; 4] = [
        vec!["history".as_ref(), log, entity.as_ref()],
        vec![
            "state".as_ref(),
            log,
            "leases".as_ref(),
            "--at".as_ref(),
            at.as_ref(),
            "--json".as_ref(),
        ],
        vec![
            "state".as_ref(),
            log,
            "outbox".as_ref(),
            "--at".as_ref(),
            at.as_ref(),
            "--json".as_ref(),
        ],
        vec![
            "prove".as_ref(),
            log,
            "--position".as_ref(),
            "7".as_ref(),
            "--json".as_ref(),
        ],
    ];
    let before: Vec<String> = reads
        .iter()
        .map(|args| {
            let read = annals(args);
            assert!(
                read.status.success(),
                "{}",
                String::from_utf8_lossy(&read.stderr)
            );
            String::from_utf8(read.stdout).expect("UTF-8")
        })
        .collect();
    let archive = dir.path().join("demo.archive");
    // Before the cut no archive can be the log's: refused, not ignored.
    let mut uncut_log = reads[0].clone();
    uncut_log[0] = "log".as_ref();
    uncut_log.truncate(2);
    for args in reads[..3].iter().chain([&uncut_log]) {
        let mut with_archive = args.clone();
        with_archive.extend(["--archive".as_ref(), archive.as_os_str()]);
        let refused = annals(&with_archive);
        assert!(!refused.status.success(), "{args:?} on a log never cut");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains("never cut"), "{args:?}: {said}");
    }
    let cutting = annals(&[
        "archive".as_ref(),
        log,
        "--before".as_ref(),
        cut.to_string().as_ref(),
        archive.as_os_str(),
    ]);
    assert!(
        cutting.status.success(),
        "{}",
        String::from_utf8_lossy(&cutting.stderr)
    );
    let archived = format!("is archived before {cut} in demo.archive");
    for (args, before) in reads[..3].iter().zip(&before) {
        let refused = annals(args);
        assert_eq!(refused.status.code(), Some(1), "{args:?} below the cut");
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(said.contains(&archived), "{args:?}: {said}");
        let mut with_archive = args.clone();
        with_archive.extend(["--archive".as_ref(), archive.as_os_str()]);
        let read = annals(&with_archive);
        assert!(
            read.status.success(),
            "{}",
            String::from_utf8_lossy(&read.stderr)
        );
        let read = String::from_utf8(read.stdout).expect("UTF-8");
        // The cut record is in a stream of its own: the same lines as before the cut.
        assert_eq!(&read, before, "{args:?} as before the cut");
    }
    // The proof of an archived record is the one made before the cut, to the same root, now
    // of a larger tree: prove it at the size it had.
    let proof_before = &before[3];
    let uncut_size: serde_json::Value = serde_json::from_str(proof_before).expect("a JSON proof");
    let size = uncut_size["size"]
        .as_u64()
        .expect("the proof's size")
        .to_string();
    let proof = annals(&[
        "prove".as_ref(),
        log,
        "--position".as_ref(),
        "7".as_ref(),
        "--size".as_ref(),
        size.as_ref(),
        "--json".as_ref(),
    ]);
    assert!(
        proof.status.success(),
        "{}",
        String::from_utf8_lossy(&proof.stderr)
    );
    assert_eq!(
        &String::from_utf8(proof.stdout).expect("UTF-8"),
        proof_before
    );
    // And at the head, a proof that check-proof takes.
    let proof = annals(&[
        "prove".as_ref(),
        log,
        "--position".as_ref(),
        "7".as_ref(),
        "--json".as_ref(),
    ]);
    assert!(
        proof.status.success(),
        "{}",
        String::from_utf8_lossy(&proof.stderr)
    );
    let proof_path = dir.path().join("proof.json");
    std::fs::write(&proof_path, &proof.stdout).expect("write the proof");
    let checked = annals(&["check-proof".as_ref(), proof_path.as_os_str()]);
    // Self-consistent (exit 3: no trusted head was given, as none is here).
    assert_eq!(
        checked.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[test]
fn stats_of_a_cut_log_says_how_many_records_the_file_holds_and_from_where() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cut.redb");
    let store = Store::open(&log).unwrap();
    annals::testing::internals::demo::run(&store, 1_000, |_| {}).unwrap();
    let head = store.snapshot().unwrap().head().unwrap().next.0;
    let _cut = annals::archive::Archives::of(&store)
        .archive_before(Position(600), dir.path().join("cut.archive"))
        .unwrap();
    store.close().unwrap();
    let run = |json: bool| {
        let mut command = std::process::Command::new(crate::ANNALS);
        command.arg("stats").arg(&log);
        if json {
            command.arg("--json");
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    // The cut record is the head's last record: the history is one longer than before.
    let records = head + 1;
    let stats: serde_json::Value = serde_json::from_str(run(true).trim_end()).unwrap();
    assert_eq!(stats["records"], records);
    assert_eq!(stats["start"], 600);
    assert_eq!(stats["held"], records - 600);
    let text = run(false);
    assert!(
        text.contains(&format!("{} held from position 600", records - 600)),
        "{text}"
    );
}

/// `annals rebuild --archive` rebuilds a cut log's projections through its archives, through
/// the log's head; the built-in projections are in the cut, so nothing is adopted and nothing
/// appended, and the log verifies sound. (Adopting a projection added after the cut:
/// `tests/it/adopt.rs`.)
#[test]
fn the_command_line_rebuilds_a_cut_log_with_its_archives() {
    let folder = crate::Log::new();
    let (dir, store) = store(&folder);
    fill(&store, 120);
    let archive = dir.path().join("log-0.archive");
    let cut = annals::archive::Archives::of(&store)
        .archive_before(Position(80), &archive)
        .expect("the cut");
    let head = store.snapshot().expect("head").head().expect("head").next;
    assert_eq!(cut.record.0 + 1, head.0, "the cut record is the last");
    fill(&store, head.0 + 30);
    let head = store.snapshot().expect("head").head().expect("head").next;
    store.close().expect("close");

    let rebuilt = crate::exits(
        folder.run("rebuild", &["--archive", crate::path(&archive)]),
        0,
    );
    let said = crate::stdout(&rebuilt);
    assert!(
        said.ends_with(&format!("through position {}\n", head.0)),
        "{said}"
    );
    let store = Store::open(&folder.db).expect("open");
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        head
    );
    let report = annals::Audit::of(&store).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
}
