//! `annals replicate` and `annals follow` as real processes: a demo log replicated into a
//! follower's log until both have the same size and root, then both interrupted.

use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cluster::Cluster;

/// Records of the demo log (the demo writes at least this many).
const DEMO_RECORDS: &str = "300";
/// How long the follower may take to reach the writer's root before the test fails.
const DEADLINE: Duration = Duration::from_secs(120);
/// The pause between two looks at the follower's log.
const POLL: Duration = Duration::from_millis(100);

fn annals() -> Command {
    Command::new(crate::ANNALS)
}

/// Runs `annals <args>` to the end; it must succeed.
fn ok(args: &[&str]) -> Output {
    let output = annals().args(args).output().expect("run the annals binary");
    assert!(
        output.status.success(),
        "annals {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `annals root <db> --json`, or `None` while the file cannot be read (not created yet).
fn root(db: &Path) -> Option<String> {
    let output = annals()
        .arg("root")
        .arg(db)
        .arg("--json")
        .output()
        .expect("run the annals binary");
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// A demo log of [`DEMO_RECORDS`] in a folder of its own, beside the path of its replica.
struct Demo {
    dir: tempfile::TempDir,
    writer: std::path::PathBuf,
    replica: std::path::PathBuf,
    /// The writer's `root --json`.
    root: String,
    /// The writer's size.
    size: u64,
}

fn demo_log() -> Demo {
    let dir = tempfile::tempdir().unwrap();
    let (writer, replica) = (
        dir.path().join("demo.redb"),
        dir.path().join("replica.redb"),
    );
    ok(&["demo", writer.to_str().unwrap(), "--records", DEMO_RECORDS]);
    let root = root(&writer).expect("the demo log's root");
    let size: serde_json::Value = serde_json::from_str(&root).unwrap();
    let size = size["size"].as_u64().expect("a size");
    Demo {
        dir,
        writer,
        replica,
        root,
        size,
    }
}

/// Starts `annals <args>` with its standard error into `stderr`.
fn spawn(args: &[&str], stderr: &Path) -> Child {
    annals()
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(stderr).expect("a file for its standard error"))
        .spawn()
        .expect("start the annals binary")
}

/// Sends `signal` to `child` and waits for it to exit.
fn interrupt(child: &mut Child, signal: &str) -> ExitStatus {
    let sent = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{signal} {}", child.id());
    child.wait().expect("the interrupted process reaped")
}

/// Kills what is still running when the test fails half-way.
struct Running(Vec<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        for child in &mut self.0 {
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

#[test]
fn replicate_and_follow_processes_bring_a_follower_to_the_writers_root_and_stop_cleanly() {
    let cluster = Cluster::start(3);
    let Demo {
        dir,
        writer,
        replica,
        root: writer_root,
        size,
    } = demo_log();
    let (writer_db, replica_db) = (writer.to_str().unwrap(), replica.to_str().unwrap());

    let urls = cluster.urls();
    let subject = "annals.cli";
    let (replicate_err, follow_err) = (
        dir.path().join("replicate.err"),
        dir.path().join("follow.err"),
    );
    let mut running = Running(vec![
        spawn(
            &["replicate", writer_db, &urls, "--subject", subject],
            &replicate_err,
        ),
        spawn(&["follow", &urls, subject, replica_db], &follow_err),
    ]);

    // Polled until the follower has the writer's root and the publisher has reported the
    // stream holding every record; the deadline only bounds a failure.
    let progress = format!("annals: {size} records stored by the stream");
    let said = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    poll_until(
        &mut running,
        &|| {
            format!(
                "the follower reaching {writer_root} (it has {:?}); replicate said: {}; follow said: {}",
                root(&replica),
                said(&replicate_err),
                said(&follow_err)
            )
        },
        &|| {
            root(&replica).is_some_and(|root| root == writer_root)
                && said(&replicate_err).lines().any(|line| line == progress)
        },
    );

    let replicated = interrupt(&mut running.0[0], "INT");
    let followed = interrupt(&mut running.0[1], "TERM");
    assert!(replicated.success(), "replicate after SIGINT: {replicated}");
    assert!(followed.success(), "follow after SIGTERM: {followed}");
    let follow_said = std::fs::read_to_string(&follow_err).unwrap();
    assert!(
        follow_said.contains(&format!("following {subject} into")),
        "follow said: {follow_said}"
    );

    let verified = ok(&["verify", replica_db]);
    assert!(
        String::from_utf8_lossy(&verified.stdout).starts_with("sound"),
        "verify said: {}",
        String::from_utf8_lossy(&verified.stdout)
    );
    assert_eq!(root(&replica).as_deref(), Some(writer_root.as_str()));
}

/// Polls `done` until it holds, failing after [`DEADLINE`] with what `what` says, or as soon
/// as one of `running` stops.
fn poll_until(running: &mut Running, what: &dyn Fn() -> String, done: &dyn Fn() -> bool) {
    let started = Instant::now();
    while !done() {
        for child in &mut running.0 {
            if let Some(status) = child.try_wait().unwrap() {
                panic!("a process stopped early ({status}): {}", what());
            }
        }
        assert!(started.elapsed() < DEADLINE, "never: {}", what());
        std::thread::sleep(POLL);
    }
}

#[test]
fn seed_and_follow_from_seed_start_a_replica_of_a_cut_log_without_its_archive() {
    let cluster = Cluster::start(3);
    let dir = tempfile::tempdir().unwrap();
    let (writer, replica) = (
        dir.path().join("demo.redb"),
        dir.path().join("replica.redb"),
    );
    let (writer_db, replica_db) = (writer.to_str().unwrap(), replica.to_str().unwrap());
    ok(&["demo", writer_db, "--records", DEMO_RECORDS]);
    let urls = cluster.urls();
    let subject = "annals.cliseed";
    let (replicate_err, follow_err) = (
        dir.path().join("replicate.err"),
        dir.path().join("follow.err"),
    );
    let mut running = Running(vec![spawn(
        &["replicate", writer_db, &urls, "--subject", subject],
        &replicate_err,
    )]);
    let said = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let stored = |records: u64| {
        let line = format!("annals: {records} records stored by the stream");
        said(&replicate_err).lines().any(|said| said == line)
    };
    let size = |db: &Path| -> u64 {
        let root: serde_json::Value = serde_json::from_str(&root(db).expect("a root")).unwrap();
        root["size"].as_u64().expect("a size")
    };
    let demo_size = size(&writer);
    poll_until(&mut running, &|| said(&replicate_err), &|| {
        stored(demo_size)
    });

    // The writer cuts what the stream holds, and the cut record goes out too.
    let archive = dir.path().join("demo-0.archive");
    ok(&[
        "archive",
        writer_db,
        "--before",
        "150",
        archive.to_str().unwrap(),
    ]);
    let cut_size = size(&writer);
    assert_eq!(cut_size, demo_size + 1, "the cut's record");
    poll_until(&mut running, &|| said(&replicate_err), &|| stored(cut_size));
    let seeded = ok(&["seed", writer_db, &urls, "--subject", subject]);
    let seed_said = String::from_utf8_lossy(&seeded.stderr).into_owned();
    assert!(
        seed_said.contains(&format!(
            "stored the seed: {cut_size} records (held from position 150)"
        )),
        "seed said: {seed_said}"
    );

    running.0.push(spawn(
        &["follow", &urls, subject, replica_db, "--from-seed"],
        &follow_err,
    ));
    let writer_root = root(&writer).expect("the writer's root");
    poll_until(&mut running, &|| said(&follow_err), &|| {
        root(&replica).is_some_and(|root| root == writer_root)
    });
    let followed = interrupt(&mut running.0[1], "TERM");
    assert!(followed.success(), "follow after SIGTERM: {followed}");
    let follow_said = said(&follow_err);
    assert!(
        follow_said.contains("from the seed: ") && follow_said.contains("(held from position 150)"),
        "follow said: {follow_said}"
    );
    let verified = ok(&["verify", replica_db]);
    assert!(
        String::from_utf8_lossy(&verified.stdout).starts_with("sound"),
        "verify said: {}",
        String::from_utf8_lossy(&verified.stdout)
    );
    // The replica is the cut log: its first records are in the writer's archive, not in it.
    let below = annals()
        .args(["log", replica_db, "--from", "0"])
        .output()
        .unwrap();
    assert_eq!(below.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&below.stderr).contains("archived before 150"),
        "log --from 0 said: {}",
        String::from_utf8_lossy(&below.stderr)
    );
    let replicated = interrupt(&mut running.0[0], "INT");
    assert!(replicated.success(), "replicate after SIGINT: {replicated}");
}

#[test]
fn replicate_once_and_follow_once_exit_with_the_replica_at_the_writers_root() {
    let cluster = Cluster::single("");
    let Demo {
        dir: _dir,
        writer,
        replica,
        root: writer_root,
        size,
    } = demo_log();
    let (writer_db, replica_db) = (writer.to_str().unwrap(), replica.to_str().unwrap());
    let urls = cluster.urls();
    let subject = "annals.once";

    // Each runs to its end on its own: no interrupt, no polling.
    let replicated = ok(&[
        "replicate",
        writer_db,
        &urls,
        "--subject",
        subject,
        "--once",
    ]);
    let said = String::from_utf8_lossy(&replicated.stderr);
    assert!(
        said.contains(&format!("annals: {size} records stored by the stream")),
        "replicate said: {said}"
    );
    let followed = ok(&["follow", &urls, subject, replica_db, "--once", "--json"]);
    let last = String::from_utf8_lossy(&followed.stdout)
        .lines()
        .last()
        .map(str::to_owned)
        .unwrap_or_default();
    assert_eq!(
        last,
        serde_json::json!({ "status": format!("caught up: {size} records checked and appended") })
            .to_string()
    );
    assert_eq!(root(&replica).as_deref(), Some(writer_root.as_str()));

    // Again, with nothing new: both exit at once, the replica unchanged.
    let _again = ok(&[
        "replicate",
        writer_db,
        &urls,
        "--subject",
        subject,
        "--once",
    ]);
    let _again = ok(&["follow", &urls, subject, replica_db, "--once"]);
    assert_eq!(root(&replica).as_deref(), Some(writer_root.as_str()));
}
