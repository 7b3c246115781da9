//! Races between real `annals` processes on one path: two creating the same new log (without
//! waiting for each other, and waiting), an import of a continuation or of a whole log against
//! an append, and readers during a rebuild. Each race ends in one whole log; a loser gets a
//! clear error, never a half-made file.

use annals::testing::setup::ExpectDone;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use annals::{Direction, Position, Store};

fn annals() -> Command {
    crate::command(&[])
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What no racer may ever be told: the symptoms of a log seen half made.
fn assert_not_half_made(output: &Output, what: &str) {
    let said = stderr(output);
    for symptom in ["empty", "not an annals log", "not a redb", "panicked"] {
        assert!(!said.contains(symptom), "{what}: {said}");
    }
}

/// The log at `path` verifies sound, and no private file of a creation or import is left.
fn whole_and_alone(path: &Path, what: &str) -> Store {
    let store = Store::open_read_only(path).unwrap();
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{what}: {:?}", report.problem);
    let name = path.file_name().unwrap().to_str().unwrap();
    let leftovers: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|file| file.starts_with(name) && file != name)
        .collect();
    assert!(leftovers.is_empty(), "{what}: left {leftovers:?}");
    store
}

/// `annals import <file> <target> <import_args…>` started, then `annals append <target> mine
/// test.mine <append_args…>` run beside it: what each said and how it exited.
fn import_racing_an_append(
    file: &Path,
    target: &Path,
    import_args: &[&str],
    append_args: &[&str],
) -> (Output, Output) {
    let import = annals()
        .arg("import")
        .arg(file)
        .arg(target)
        .args(import_args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let append = annals()
        .arg("append")
        .arg(target)
        .args(["mine", "test.mine"])
        .args(append_args)
        .output()
        .unwrap();
    (import.wait_with_output().unwrap(), append)
}

/// Two `annals append` processes started together on `path`, each waiting up to `wait` for
/// the other to let go of the log: what each said and how it exited.
fn racing_appends(path: &Path, wait: &str) -> Vec<Output> {
    let children: Vec<Child> = (0..2)
        .map(|racer| {
            annals()
                .arg("append")
                .arg(path)
                .args([&format!("s/{racer}"), "test.race", "x", "--wait", wait])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| child.wait_with_output().unwrap())
        .collect()
}

#[test]
fn two_processes_creating_one_log_make_exactly_one_whole_log() {
    let dir = tempfile::tempdir().unwrap();
    for race in 0..12 {
        let path = dir.path().join(format!("race-{race}.redb"));
        // Without waiting for each other: a loser may be told the file is held, never that
        // it is empty or not a log.
        let outputs = racing_appends(&path, "0s");
        let mut landed = 0;
        for output in &outputs {
            let what = format!("race {race}");
            assert_not_half_made(output, &what);
            match output.status.code() {
                Some(0) => landed += 1,
                Some(2) => assert!(stderr(output).contains("holds it"), "{what}: {output:?}"),
                _ => panic!("{what}: {output:?}"),
            }
        }
        assert!(landed >= 1, "race {race}: neither append landed");
        let store = whole_and_alone(&path, &format!("race {race}"));
        assert_eq!(
            store.snapshot().unwrap().head().unwrap().next,
            Position(landed)
        );
    }
}

/// Waiting for each other, both racers land: the second waits while the first creates.
#[test]
fn processes_racing_to_create_one_log_both_land() {
    let dir = tempfile::tempdir().unwrap();
    for race in 0..10 {
        let path = dir.path().join(format!("race-{race}.redb"));
        for output in racing_appends(&path, "30s") {
            assert!(
                output.status.success(),
                "race {race}: a racing append: {}",
                stderr(&output)
            );
        }
        let store = Store::open_read_only(&path).unwrap();
        assert_eq!(
            store.snapshot().unwrap().head().unwrap().next,
            Position(2),
            "race {race}: an append is lost"
        );
    }
}

#[test]
fn an_import_racing_an_append_lands_whole_or_is_refused_and_the_append_stays() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    let store = Store::open(&source).unwrap();
    annals::testing::internals::demo::run(&store, 1_000, |_| {}).unwrap();
    let snapshot = store.snapshot().unwrap();
    let end = snapshot.head().unwrap().next;
    let middle = Position(end.0 / 2);
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    annals::export::export(&snapshot, Position(0), middle, &first, &mut |_| {})
        .unwrap()
        .expect_done();
    annals::export::export(&snapshot, middle, end, &second, &mut |_| {})
        .unwrap()
        .expect_done();
    drop((snapshot, store));
    let (mut imported, mut refused) = (0, 0);
    for race in 0..8 {
        let what = format!("race {race}");
        let target = dir.path().join(format!("target-{race}.redb"));
        annals::maintenance::Import::run(&first, &target, &mut |_, _| {})
            .unwrap()
            .expect_done();
        let (import, append) = import_racing_an_append(
            &second,
            &target,
            &["--wait", "30s"],
            &["acknowledged", "--wait", "30s"],
        );
        assert!(append.status.success(), "{what}: {}", stderr(&append));
        assert_not_half_made(&import, &what);
        let store = whole_and_alone(&target, &what);
        let records = store
            .snapshot()
            .unwrap()
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap();
        let mine: Vec<&annals::Record> = records.iter().filter(|r| r.stream == "mine").collect();
        assert_eq!(mine.len(), 1, "{what}: the acknowledged append");
        if import.status.success() {
            // The import went first: all of it, then the append.
            imported += 1;
            assert_eq!(records.len() as u64, end.0 + 1, "{what}");
            assert_eq!(mine[0].position, end, "{what}");
        } else {
            // The append went first: the export no longer continues the log, which says so.
            refused += 1;
            assert_eq!(import.status.code(), Some(1), "{what}: {}", stderr(&import));
            assert!(stderr(&import).contains("does not continue"), "{what}");
            assert_eq!(records.len() as u64, middle.0 + 1, "{what}");
        }
    }
    eprintln!("import against append: {imported} imported first, {refused} refused");
}

#[test]
fn a_reader_during_a_rebuild_sees_the_old_state_the_new_or_behind() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = Store::open(&path).unwrap();
    annals::testing::internals::demo::run(&store, 8_000, |_| {}).unwrap();
    drop(store);
    let state = |projection: &str| {
        annals()
            .arg("state")
            .arg(&path)
            .args([projection, "--json"])
            .output()
            .unwrap()
    };
    let projections = ["leases", "outbox", "runs", "registry"];
    let whole: Vec<Vec<u8>> = projections
        .iter()
        .map(|projection| {
            let output = state(projection);
            assert!(output.status.success(), "{}", stderr(&output));
            output.stdout
        })
        .collect();
    let mut rebuild = annals().arg("rebuild").arg(&path).spawn().unwrap();
    let (mut reads, mut behind) = (0, 0);
    while rebuild.try_wait().unwrap().is_none() {
        for (projection, whole) in projections.iter().zip(&whole) {
            let output = state(projection);
            reads += 1;
            if output.status.success() {
                // A rebuild replays the same log: old and new state are the same rows.
                assert!(
                    output.stdout == *whole,
                    "read {reads}: {projection} half rebuilt"
                );
            } else {
                assert!(stderr(&output).contains("behind"), "{}", stderr(&output));
                behind += 1;
            }
        }
    }
    assert!(rebuild.wait().unwrap().success());
    assert!(reads > 4, "too few reads during the rebuild: {reads}");
    eprintln!("{reads} reads during the rebuild, {behind} told the projection is behind");
}

/// An import into a new path and an append creating a log there, started together: the
/// append waits and lands, and whichever went first, its record is in the log after.
#[test]
fn an_import_never_replaces_a_log_created_at_its_target_meanwhile() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    crate::exits(
        crate::annals(&["demo", crate::path(&source), "--records", "2000"]),
        0,
    );
    let export = dir.path().join("source.export");
    crate::exits(
        crate::annals(&["export", crate::path(&source), crate::path(&export)]),
        0,
    );
    for race in 0..10 {
        let target = dir.path().join(format!("target-{race}.redb"));
        let (import, append) = import_racing_an_append(
            &export,
            &target,
            &[],
            &["--key", "acknowledged", "--wait", "30s"],
        );
        if !append.status.success() {
            // The append found the imported log first and refused nothing else: it can only
            // fail on a held file, which it waited for.
            panic!("race {race}: {}", String::from_utf8_lossy(&append.stderr));
        }
        let store = Store::open_read_only(&target).unwrap();
        let records = store
            .snapshot()
            .unwrap()
            .read_all(Position(0), annals::Direction::Forward, usize::MAX)
            .unwrap();
        assert!(
            records
                .iter()
                .any(|r| r.idempotency_key.as_deref() == Some("acknowledged")),
            "race {race}: the acknowledged append is gone (import {:?})",
            import.status
        );
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    }
}
