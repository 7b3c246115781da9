//! The command line's own writes killed: `append` creating a log, `append` to a log, `import`
//! into a new log and of a continuation, and `rebuild`, each killed with SIGKILL after a seeded
//! pause (printed; `ANNALS_CRASH_SEED` replays it): the path holds no log (a creation cut
//! short) or a whole one (the log sound, a new import all there or absent, a continuation all
//! or nothing, every acknowledged append present, the projections sound or only behind). And
//! `archive` killed at seeded moments: the log is before the cut or cut, and the same command
//! run again completes the cut (a cut that committed before the kill named by the rerun). (A
//! writer killed beside readers: `tests/it/crash.rs`; a cut crashed on the simulated disk:
//! `tests/it/archive_crash.rs`.)

use std::collections::BTreeMap;
use std::process::Stdio;

use annals::testing::internals::demo::Rng;
use annals::testing::setup::ExpectDone;
use annals::{Position, Store};

/// Kills of CLI writes in [`cli_writes_killed_at_random_moments_leave_no_log_or_a_whole_one`].
const CLI_KILLS: u64 = 40;

/// What a killed `annals` process was doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Work {
    /// `append` to a path with no log yet: creates it.
    Create,
    /// `append` to the shared log.
    Append,
    /// `import` into a path with no log yet.
    ImportNew,
    /// `import` of a continuation into a log that ends where it starts.
    ImportContinuation,
    /// `rebuild` of every projection of the shared log.
    Rebuild,
}

/// The seed of a test's kills, `default` unless `ANNALS_CRASH_SEED=<n>` replays a run.
fn crash_seed(default: u64) -> u64 {
    // A seed given replaces the test's own: the kills are as many and checked the same.
    let seed = annals::testing::random::seed_to_replay("ANNALS_CRASH_SEED").unwrap_or(default);
    eprintln!("crash seed {seed} (ANNALS_CRASH_SEED={seed} replays it)");
    seed
}

/// Opens `path` read-only (repairing it first if the kill left it needing that) and checks the
/// log itself: every record, link, index and the tree.
fn log_is_sound(path: &std::path::Path, what: &str) -> Store {
    let store = Store::open_read_only(path)
        .unwrap_or_else(|error| panic!("{what}: the log does not reopen: {error}"));
    let report = annals::testing::internals::audit::verify_log(&store.snapshot().unwrap()).unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.problem);
    store
}

/// A verify that passes whole, or finds the projections only behind the log (a state to
/// catch up, which a writable open does), never damage.
fn sound_or_behind(store: &Store, what: &str) {
    let report = annals::Audit::of(store).verify().unwrap();
    if let Some(problem) = &report.problem {
        assert!(problem.to_string().contains("behind"), "{what}: {problem}");
    }
}

#[test]
fn cli_writes_killed_at_random_moments_leave_no_log_or_a_whole_one() {
    let seed = crash_seed(0x000C_1A55_0013);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().unwrap();
    // The export files the imports read: a demo log whole, and cut in two.
    let source = dir.path().join("source.redb");
    let store = Store::open(&source).unwrap();
    annals::testing::internals::demo::run(&store, 1_500, |_| {}).unwrap();
    let snapshot = store.snapshot().unwrap();
    let end = snapshot.head().unwrap().next;
    let middle = Position(end.0 / 2);
    let [whole, first, second] = ["whole", "first", "second"].map(|name| dir.path().join(name));
    for (file, from, to) in [
        (&whole, Position(0), end),
        (&first, Position(0), middle),
        (&second, middle, end),
    ] {
        annals::export::export(&snapshot, from, to, file, &mut |_| {})
            .unwrap()
            .expect_done();
    }
    drop((snapshot, store));
    let source_head = Store::open_read_only(&source)
        .unwrap()
        .snapshot()
        .unwrap()
        .head()
        .unwrap();
    // The shared log that appends and rebuilds go to, with the demo in it to rebuild.
    let shared = dir.path().join("shared.redb");
    annals::maintenance::Import::run(&whole, &shared, &mut |_, _| {})
        .unwrap()
        .expect_done();
    let mut acknowledged: BTreeMap<Position, Vec<u8>> = BTreeMap::new();
    let mut struck: BTreeMap<Work, u64> = BTreeMap::new();
    let kinds = [
        Work::Create,
        Work::Append,
        Work::ImportNew,
        Work::ImportContinuation,
        Work::Rebuild,
    ];
    for kill in 0..CLI_KILLS {
        // The first kills take each kind of work in turn, at once after it starts, so every
        // kind is cut short whatever the machine's speed; the rest are drawn at random.
        let first_round = (kill as usize) < kinds.len();
        let work = if first_round {
            kinds[kill as usize]
        } else {
            kinds[rng.below(5) as usize]
        };
        let target = dir.path().join(format!("target-{kill}.redb"));
        let payload = format!("kill {kill}");
        let mut command = crate::command(&[]);
        let (path, delay_us_max) = match work {
            Work::Create | Work::Append => {
                let path = if work == Work::Create {
                    &target
                } else {
                    &shared
                };
                command
                    .arg("append")
                    .arg(path)
                    .args(["crash/cli", "crash.cli", &payload]);
                (path.clone(), 60_000)
            }
            Work::ImportNew => {
                command.arg("import").arg(&whole).arg(&target);
                (target.clone(), 120_000)
            }
            Work::ImportContinuation => {
                annals::maintenance::Import::run(&first, &target, &mut |_, _| {})
                    .unwrap()
                    .expect_done();
                command.arg("import").arg(&second).arg(&target);
                (target.clone(), 100_000)
            }
            Work::Rebuild => {
                command.arg("rebuild").arg(&shared);
                (shared.clone(), 250_000)
            }
        };
        let child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start annals");
        let delay = if first_round {
            std::time::Duration::ZERO
        } else {
            std::time::Duration::from_micros(rng.below(delay_us_max))
        };
        // Not a timing assertion: the pause only picks the moment of the kill.
        std::thread::sleep(delay);
        let mut child = child;
        child.kill().expect("kill annals");
        let output = child.wait_with_output().expect("reap annals");
        let finished = output.status.success();
        if !finished {
            *struck.entry(work).or_default() += 1;
        }
        let what = format!("kill {kill} ({work:?} after {delay:?}, seed {seed})");
        if work == Work::Append || work == Work::Create {
            let printed = String::from_utf8_lossy(&output.stdout);
            if let Some(position) = printed.split_whitespace().next() {
                let position = Position(position.parse().expect("a position"));
                if work == Work::Append {
                    acknowledged.insert(position, payload.clone().into_bytes());
                }
            }
        }
        if !path.exists() {
            // Only a creation may leave nothing, and only when it was killed.
            assert!(
                matches!(work, Work::Create | Work::ImportNew) && !finished,
                "{what}: no log"
            );
            continue;
        }
        let store = log_is_sound(&path, &what);
        let head = store.snapshot().unwrap().head().unwrap();
        match work {
            Work::Create => {
                assert!(head.next.0 <= 1, "{what}: {head:?}");
                sound_or_behind(&store, &what);
            }
            Work::ImportNew => {
                assert_eq!(head, source_head, "{what}: a partial import is visible");
                sound_or_behind(&store, &what);
            }
            Work::ImportContinuation => {
                assert!(
                    head.next == middle || head == source_head,
                    "{what}: the import is half there: {head:?}"
                );
                sound_or_behind(&store, &what);
            }
            Work::Append | Work::Rebuild => {
                for (position, payload) in &acknowledged {
                    let record = store.snapshot().unwrap().get(*position).unwrap();
                    assert_eq!(
                        record.map(|record| record.payload),
                        Some(payload.clone()),
                        "{what}: acknowledged position {position}"
                    );
                }
                drop(store);
                sound_or_behind(&Store::open_read_only(&path).unwrap(), &what);
                // A rebuild cut short resumes at the next writable open, which brings every
                // projection to the head.
                if work == Work::Rebuild {
                    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
                    let report = annals::Audit::of(&store).verify().unwrap();
                    assert!(report.is_sound(), "{what}: {:?}", report.problem);
                    assert!(report.behind.is_empty(), "{what}: {:?}", report.behind);
                }
            }
        }
    }
    eprintln!(
        "{CLI_KILLS} kills of CLI writes (seed {seed}), struck mid-work: {struck:?}; {} appends acknowledged and found",
        acknowledged.len()
    );
    // Count only what was exercised: every kind of work was killed before it finished.
    assert!(
        struck.len() == kinds.len(),
        "too few kinds of work were cut short: {struck:?}"
    );
}

/// Kills of `annals archive`.
const ARCHIVE_KILLS: u64 = 16;

#[test]
fn annals_archive_killed_at_seeded_moments_leaves_the_log_before_or_cut() {
    let seed = crash_seed(0x000C_0A7C_0034);
    let mut rng = Rng::new(seed);
    let dir = tempfile::tempdir().expect("folder");
    let source = dir.path().join("source.redb");
    let store = Store::open(&source).expect("open");
    annals::testing::internals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let head = store.snapshot().expect("head").head().expect("head").next;
    store.close().expect("close");
    let before = Position(head.0 / 2);
    let (mut cut, mut uncut) = (0, 0);
    for kill in 0..ARCHIVE_KILLS {
        let log = dir.path().join(format!("log-{kill}.redb"));
        std::fs::copy(&source, &log).expect("copy the log");
        let archive = dir.path().join(format!("log-{kill}.archive"));
        let mut child = crate::command(&[])
            .arg("archive")
            .arg(&log)
            .arg("--before")
            .arg(before.0.to_string())
            .arg(&archive)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start annals");
        // Not a timing assertion: the pause only picks the moment of the kill (the first
        // kill at once, so one is always cut short).
        let delay =
            std::time::Duration::from_micros(if kill == 0 { 0 } else { rng.below(400_000) });
        std::thread::sleep(delay);
        child.kill().expect("kill");
        let _status = child.wait().expect("reap");
        let what = format!("kill {kill} after {delay:?} (seed {seed})");
        let partial = dir.path().join(format!("log-{kill}.archive.partial"));
        let store = Store::open(&log).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let report = annals::Audit::of(&store).verify().expect("verify");
        assert!(report.is_sound(), "{what}: {:?}", report.problem);
        let snapshot = store.snapshot().expect("snapshot");
        match (snapshot.start(), snapshot.head().expect("head").next) {
            (Position(0), found) if found == head => {
                uncut += 1;
                // The archive takes its name only once the cut has committed.
                assert!(!archive.exists(), "{what}: an archive beside an uncut log");
            }
            (start, found) if start == before && found.0 == head.0 + 1 => {
                cut += 1;
                // Whole under its name, or (killed between the commit and the rename) under
                // its temporary one.
                let whole = if archive.exists() { &archive } else { &partial };
                let _whole = annals::export::check(whole, &mut |_| {})
                    .unwrap_or_else(|error| panic!("{what}: the archive: {error}"));
            }
            other => panic!("{what}: neither before nor cut: {other:?}"),
        }
        drop(snapshot);
        drop(store);
        // The same command run again completes the cut, whatever moment the kill hit.
        let rerun = crate::command(&[])
            .arg("archive")
            .arg(&log)
            .arg("--before")
            .arg(before.0.to_string())
            .arg(&archive)
            .output()
            .expect("run annals again");
        assert!(
            rerun.status.success(),
            "{what}: the rerun: {}",
            String::from_utf8_lossy(&rerun.stderr)
        );
        let store = Store::open(&log).unwrap_or_else(|error| panic!("{what}: open: {error}"));
        let snapshot = store.snapshot().expect("snapshot");
        assert_eq!(snapshot.start(), before, "{what}: the rerun cut the log");
        assert_eq!(
            annals::archive::Archives::of(&store)
                .verify(std::slice::from_ref(&archive), &mut |_| {})
                .unwrap_or_else(|error| panic!("{what}: {error}")),
            None,
            "{what}"
        );
        assert!(!partial.exists(), "{what}: a temporary archive left");
    }
    eprintln!("annals archive killed {ARCHIVE_KILLS} times: {cut} cut, {uncut} before");
    assert!(uncut > 0, "the first kill, at once, leaves the log uncut");
}

/// The moment between a cut's commit and its archive's rename, made exactly: a cut whose
/// archive is put back under its temporary name. A rerun names it; a rerun of a cut that
/// finished says so and changes nothing; a different cut is refused as before.
#[test]
fn a_rerun_names_the_archive_of_a_cut_that_committed_before_a_kill() {
    let dir = tempfile::tempdir().expect("folder");
    let log = dir.path().join("log.redb");
    let store = Store::open(&log).expect("open");
    annals::testing::internals::demo::run(&store, 1_000, |_| {}).expect("demo");
    let archive = dir.path().join("log.archive");
    let report = annals::archive::Archives::of(&store)
        .archive_before(Position(500), &archive)
        .expect("the cut");
    store.close().expect("close");
    let partial = dir.path().join("log.archive.partial");
    std::fs::rename(&archive, &partial).expect("unname the archive");

    let run = |before: &str| {
        crate::command(&[])
            .arg("archive")
            .arg(&log)
            .args(["--before", before])
            .arg(&archive)
            .arg("--json")
            .output()
            .expect("run annals")
    };
    let rerun = run("500");
    assert!(
        rerun.status.success(),
        "{}",
        String::from_utf8_lossy(&rerun.stderr)
    );
    assert!(archive.exists() && !partial.exists());
    let store = Store::open(&log).expect("open");
    assert_eq!(
        store.snapshot().expect("snapshot").start(),
        report.cut.before
    );
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(std::slice::from_ref(&archive), &mut |_| {})
            .expect("verify the archive"),
        None
    );
    drop(store);
    // Once more: the cut is done, and nothing changes.
    let again = run("500");
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(archive.exists() && !partial.exists());
    // Another cut into the same file is refused: it exists.
    let other = run("600");
    assert_eq!(
        other.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&other.stderr)
    );
}
