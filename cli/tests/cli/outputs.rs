//! What the commands write, and what they refuse before writing: an output never replaces the
//! log it is made from, a log a writer in another process has open, or anything that is not a
//! regular file; a path that is not a regular file is refused before it is opened (a FIFO
//! would block the open); a refused command leaves the log's bytes as they were (sha256); and
//! the messages name the path and the cause. The real binary, real processes, real files.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use annals::{Direction, Position, Sharing, Store};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::appender::Appender;
use crate::{command, stderr};

/// How long a command given a FIFO may take before the test calls it hung: far longer than
/// any of these commands takes, so only a hang reaches it.
const HANG_BOUND: Duration = Duration::from_secs(60);

/// Runs `command` to its end, or kills it and fails the test once it has run for
/// [`HANG_BOUND`]: a command that blocks on a FIFO must not hang the test.
fn bounded(mut command: Command, what: &str) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start annals");
    let pid = child.id();
    let (sender, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    match finished.recv_timeout(HANG_BOUND) {
        Ok(output) => output.expect("wait for annals"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
            panic!("{what}: still running after {HANG_BOUND:?}, killed");
        }
    }
}

fn exit_code(output: &Output, expected: i32, what: &str) {
    assert_eq!(
        output.status.code(),
        Some(expected),
        "{what}: {}",
        stderr(output)
    );
}

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read the file");
    format!("{:x}", Sha256::digest(&bytes))
}

/// A demo log of `records` records at `dir/name`.
fn demo(dir: &Path, name: &str, records: u64) -> PathBuf {
    let path = dir.join(name);
    let output = command(&[])
        .arg("demo")
        .arg(&path)
        .args(["--records", &records.to_string()])
        .output()
        .unwrap();
    exit_code(&output, 0, "demo");
    path
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

#[test]
fn export_over_the_log_it_reads_beside_a_writer_exits_2_and_loses_no_acknowledged_append() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.redb");
    let writer = Appender::start(&path, Sharing::SingleWriter);
    let link = dir.path().join("link.redb");
    std::fs::hard_link(&path, &link).unwrap();
    let other = demo(dir.path(), "other.redb", 300);
    let attempts: [(&Path, &Path, bool, &str); 4] = [
        (&path, &path, false, "the log as its own export"),
        (
            &path,
            &path,
            true,
            "the log as its own export, with --force",
        ),
        (&path, &link, true, "a hard link to the log"),
        (&other, &path, true, "a log a writer has open"),
    ];
    for (log, file, force, what) in attempts {
        let mut command = command(&[]);
        command.arg("export").arg(log).arg(file);
        if force {
            command.arg("--force");
        }
        let output = bounded(command, what);
        exit_code(&output, 2, what);
        let message = stderr(&output);
        assert!(
            message.contains(&file.display().to_string()),
            "{what}: {message}"
        );
        assert!(message.contains("another path"), "{what}: {message}");
    }
    // The writer went on appending through all of it; every append it acknowledged is there.
    let acknowledged = writer.stop();
    let last = *acknowledged.iter().max().expect("acknowledged appends");
    let store = Store::open_read_only(&path).unwrap();
    let records = store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap();
    assert!(
        records.len() as u64 > last,
        "{} records, but position {last} was acknowledged",
        records.len()
    );
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    assert!(
        !dir.path().join("live.redb.partial").exists(),
        "no export was begun"
    );
}

#[test]
fn export_replaces_an_existing_file_only_with_force_and_never_a_special_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "log.redb", 300);
    let file = dir.path().join("kept.export");
    std::fs::write(&file, b"a file of the user's").unwrap();
    let before = sha256(&file);
    let refused = command(&[])
        .args(["export", "--json"])
        .arg(&log)
        .arg(&file)
        .output()
        .unwrap();
    exit_code(&refused, 2, "export over an existing file");
    let error: Value = serde_json::from_str(stderr(&refused).trim()).unwrap();
    assert_eq!(error["kind"], "exists", "{error}");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains(&file.display().to_string()),
        "{error}"
    );
    assert_eq!(sha256(&file), before, "the refused export changed the file");
    let forced = command(&[])
        .arg("export")
        .arg(&log)
        .arg(&file)
        .arg("--force")
        .output()
        .unwrap();
    exit_code(&forced, 0, "export --force");
    assert_ne!(sha256(&file), before);
    // A FIFO, a device and a symbolic link to one are refused, with --force too.
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let to_device = dir.path().join("to-null");
    std::os::unix::fs::symlink("/dev/null", &to_device).unwrap();
    for (target, kind) in [
        (fifo.as_path(), "named pipe"),
        (Path::new("/dev/null"), "character device"),
        (to_device.as_path(), "character device"),
    ] {
        let mut command = command(&[]);
        command.arg("export").arg(&log).arg(target).arg("--force");
        let output = bounded(command, "export to a special file");
        exit_code(&output, 2, "export to a special file");
        let message = stderr(&output);
        assert!(
            message.contains(&target.display().to_string()) && message.contains(kind),
            "{message}"
        );
    }
    assert!(
        std::fs::symlink_metadata(&to_device)
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn a_fifo_given_as_any_input_is_refused_at_once_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let log = demo(dir.path(), "log.redb", 300);
    let proof = dir.path().join("proof.json");
    let printed = command(&[])
        .arg("prove")
        .arg(&log)
        .args(["--position", "3", "--json"])
        .output()
        .unwrap();
    exit_code(&printed, 0, "prove");
    std::fs::write(&proof, &printed.stdout).unwrap();
    let fifo_arg = format!("@{}", fifo.display());
    let fifo_text = fifo.display().to_string();
    let log_text = log.display().to_string();
    let proof_text = proof.display().to_string();
    let target = dir.path().join("new.redb");
    let target_text = target.display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["log", &fifo_text],
        vec!["verify", &fifo_text],
        vec!["stats", &fifo_text],
        vec!["tail", &fifo_text, "--count", "1"],
        vec!["state", &fifo_text, "leases"],
        vec!["append", &fifo_text, "s", "k"],
        vec!["rebuild", &fifo_text],
        vec!["compact", &fifo_text],
        vec!["import", &fifo_text, &target_text],
        vec!["append", &log_text, "s", "k", &fifo_arg],
        vec!["check-proof", &fifo_text],
        vec!["check-proof", &proof_text, "--head", &fifo_arg],
    ];
    for args in cases {
        let what = args.join(" ");
        let mut command = command(&[]);
        command.args(&args);
        let output = bounded(command, &what);
        exit_code(&output, 2, &what);
        let message = stderr(&output);
        assert!(
            message.contains(&fifo_text) && message.contains("not a regular file"),
            "{what}: {message}"
        );
    }
    assert!(!target.exists(), "a refused import created its target");
}

#[test]
fn refused_commands_leave_the_logs_bytes_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "log.redb", 300);
    let other = demo(dir.path(), "other.redb", 200);
    let foreign = dir.path().join("other.export");
    let exported = command(&[])
        .arg("export")
        .arg(&other)
        .arg(&foreign)
        .args(["--from", "100"])
        .output()
        .unwrap();
    exit_code(&exported, 0, "export of the other log");
    let whole = dir.path().join("whole.export");
    let exported = command(&[])
        .arg("export")
        .arg(&log)
        .arg(&whole)
        .output()
        .unwrap();
    exit_code(&exported, 0, "export of the log");
    let log_text = log.display().to_string();
    let foreign_text = foreign.display().to_string();
    let whole_text = whole.display().to_string();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["import", &foreign_text, &log_text], 1),
        (vec!["import", &whole_text, &log_text], 1),
        (vec!["append", &log_text, "", "k"], 1),
        (
            vec!["append", &log_text, "fresh", "k", "--expect", "exists"],
            1,
        ),
        (vec!["append", &log_text, "fresh", "k", "--expect", "7"], 1),
        (vec!["rebuild", &log_text, "--projection", "nope"], 2),
        (vec!["demo", &log_text, "--records", "10"], 2),
    ];
    for (args, expected) in cases {
        let what = args.join(" ");
        let before = sha256(&log);
        let output = command(&[]).args(&args).output().unwrap();
        exit_code(&output, expected, &what);
        assert_eq!(sha256(&log), before, "{what} changed the log's bytes");
    }
}

#[test]
fn demo_refuses_an_existing_log_and_appends_to_it_only_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "log.redb", 300);
    let before = annals::testing::setup::head_of(&log);
    let refused = command(&[])
        .arg("demo")
        .arg(&log)
        .args(["--records", "100", "--json"])
        .output()
        .unwrap();
    exit_code(&refused, 2, "demo on an existing log");
    let error: Value = serde_json::from_str(stderr(&refused).trim()).unwrap();
    assert_eq!(error["kind"], "exists", "{error}");
    let message = error["error"].as_str().unwrap();
    assert!(
        message.contains(&log.display().to_string()) && message.contains("--force"),
        "{message}"
    );
    let forced = command(&[])
        .arg("demo")
        .arg(&log)
        .args(["--records", "100", "--force"])
        .output()
        .unwrap();
    exit_code(&forced, 0, "demo --force");
    assert!(annals::testing::setup::head_of(&log) > before);
}

#[test]
fn read_only_commands_beside_multi_writer_appenders_always_open() {
    const READS: usize = 150;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.redb");
    let first = command(&[])
        .arg("append")
        .arg(&path)
        .args(["s", "k", "--sharing", "multi-writer"])
        .output()
        .unwrap();
    exit_code(&first, 0, "the first append");
    let done = AtomicBool::new(false);
    let failures = std::thread::scope(|scope| {
        // Appenders that open and close the log in multi-writer mode over and over.
        for appender in 0..3 {
            let (path, done) = (&path, &done);
            scope.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let output = command(&[])
                        .arg("append")
                        .arg(path)
                        .arg(format!("appender/{appender}"))
                        .arg("test.shared")
                        .args(["--sharing", "multi-writer", "--wait", "30s"])
                        .output()
                        .unwrap();
                    exit_code(&output, 0, "a multi-writer append");
                }
            });
        }
        let mut failures = Vec::new();
        for read in 0..READS {
            let command = ["stats", "verify", "log"][read % 3];
            let mut reader = crate::command(&[]);
            reader.arg(command).arg(&path).stdout(Stdio::null());
            if command == "log" {
                reader.args(["--limit", "1"]);
            }
            let output = reader.output().unwrap();
            if !output.status.success() {
                failures.push(format!("{command}: {}", stderr(&output)));
            }
        }
        done.store(true, Ordering::Relaxed);
        failures
    });
    assert!(
        failures.is_empty(),
        "{} of {READS} reads failed: {failures:?}",
        failures.len()
    );
}

#[test]
fn messages_name_the_path_and_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "demo.redb", 300);
    let file = dir.path().join("log.export");
    let exported = command(&[])
        .arg("export")
        .arg(&log)
        .arg(&file)
        .output()
        .unwrap();
    exit_code(&exported, 0, "export");
    // Into a folder that does not exist.
    let missing = dir.path().join("absent");
    let output = command(&[])
        .arg("import")
        .arg(&file)
        .arg(missing.join("x.redb"))
        .output()
        .unwrap();
    exit_code(&output, 2, "import into a missing folder");
    let message = stderr(&output);
    assert!(
        message.contains(&format!("{}: no such folder", missing.display())),
        "{message}"
    );
    // A log given as the export file.
    let output = command(&[])
        .arg("import")
        .arg(&log)
        .arg(dir.path().join("x.redb"))
        .output()
        .unwrap();
    let message = stderr(&output);
    assert!(
        message.contains(&format!("{}: not an annals export file", log.display())),
        "{message}"
    );
    // A truncated log.
    let truncated = dir.path().join("truncated.redb");
    let bytes = std::fs::read(&log).unwrap();
    std::fs::write(&truncated, &bytes[..(bytes.len() / 2).min(100_000)]).unwrap();
    for command in ["stats", "verify", "log"] {
        let output = crate::command(&[])
            .arg(command)
            .arg(&truncated)
            .output()
            .unwrap();
        exit_code(&output, 2, command);
        let message = stderr(&output);
        assert!(
            message.contains(&truncated.display().to_string()) && message.contains("truncated"),
            "{command}: {message}"
        );
    }
    // A log a writer holds is `held` in JSON, as docs/commands.md says.
    let held = dir.path().join("held.redb");
    let writer = Appender::start(&held, Sharing::Exclusive);
    let output = command(&[])
        .arg("append")
        .arg(&held)
        .args(["s", "k", "--wait", "0s", "--json"])
        .output()
        .unwrap();
    writer.stop();
    exit_code(&output, 2, "append beside an exclusive writer");
    let error: Value = serde_json::from_str(stderr(&output).trim()).unwrap();
    assert_eq!(error["kind"], "held", "{error}");
    // `export --help` names each default once.
    let help = command(&[]).args(["export", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(!help.contains("[default: 0] [default: 0]"), "{help}");
}

#[test]
fn closed_pipes_end_a_command_quietly_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "log.redb", 2_000);
    // `annals log big.redb | head -1`: far more than a pipe holds, read one line, close.
    let mut child = command(&[])
        .arg("log")
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("0 "), "{first}");
    let mut message = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut message)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{message}");
    assert!(!message.contains("panicked"), "{message}");
    // `annals -vv demo ... 2>&1 | head -1`: the spans go to a standard error closed at once.
    let mut child = command(&[])
        .arg("-vv")
        .arg("demo")
        .arg(dir.path().join("new.redb"))
        .args(["--records", "200"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stderr.take());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "-vv with standard error closed");
}

/// Where an output-taking command is pointed, and how it must be refused: the kind `--json`
/// reports and the path the message names.
struct Target {
    what: &'static str,
    path: PathBuf,
    kind: &'static str,
}

#[test]
fn every_command_that_writes_refuses_the_stores_own_files_fifos_and_missing_folders() {
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let log = demo(dir.path(), "log.redb", 300);
    let cut = command(&[])
        .arg("archive")
        .arg(&log)
        .args(["--before", "50"])
        .arg(at("cut-0.archive"))
        .output()
        .unwrap();
    exit_code(&cut, 0, "the first cut");
    let key = signer_key(dir.path());
    std::os::unix::fs::symlink(&log, at("to-log")).unwrap();
    std::fs::hard_link(&log, at("hard-link")).unwrap();
    mkfifo(&at("fifo"));
    let journal = annals::journal::journal_path(&log);
    let targets = [
        ("the log", log.clone(), "store_file"),
        ("a symbolic link to the log", at("to-log"), "store_file"),
        ("a hard link to the log", at("hard-link"), "store_file"),
        ("the log's journal", journal.clone(), "store_file"),
        ("a FIFO", at("fifo"), "invalid_input"),
        ("a missing folder", at("missing").join("out"), "not_found"),
    ]
    .map(|(what, path, kind)| Target { what, path, kind });
    let log_text = log.display().to_string();
    let key_text = key.display().to_string();
    // Each command that takes a path to write, with `{}` where the path goes.
    let commands: [&[&str]; 5] = [
        &["export", &log_text, "{}", "--force", "--json"],
        &["archive", &log_text, "--before", "100", "{}", "--json"],
        &["backup", &log_text, "{}", "--json"],
        &["tiles", &log_text, "{}", "--key", &key_text, "--json"],
        &["keygen", "--name", "example.com/other", "{}", "--force"],
    ];
    let before = sha256(&log);
    let mut refused = 0;
    for command in commands {
        for target in &targets {
            // keygen writes no file of a log: the log's own names are not its refusals.
            if command[0] == "keygen" && target.kind == "store_file" && target.path != journal {
                continue;
            }
            let path = target.path.display().to_string();
            let args: Vec<&str> = command
                .iter()
                .map(|arg| if *arg == "{}" { path.as_str() } else { arg })
                .collect();
            let what = format!("{} to {}", command[0], target.what);
            let output = bounded(crate::command(&args), &what);
            refused += check_refusal(&output, &path, target.kind, &what);
            assert_eq!(sha256(&log), before, "{what} changed the log's bytes");
            assert!(
                !journal.exists(),
                "{what} made a file at the journal's name"
            );
        }
    }
    // A file of the name the cut gave its archive: perhaps the only copy of the records cut.
    let archive = at("cut-0.archive").display().to_string();
    let archive_before = sha256(&at("cut-0.archive"));
    for args in [
        vec!["export", &log_text, &archive, "--force", "--json"],
        vec!["archive", &log_text, "--before", "100", &archive, "--json"],
    ] {
        let what = format!("{} to the cut's archive", args[0]);
        let output = bounded(command(&args), &what);
        refused += check_refusal(&output, &archive, "store_file", &what);
    }
    assert_eq!(sha256(&at("cut-0.archive")), archive_before);
    assert_eq!(sha256(&log), before);
    assert_eq!(refused, 5 * 6 - 3 + 2, "every case was run");
    let verified = command(&[]).arg("verify").arg(&log).output().unwrap();
    exit_code(&verified, 0, "verify after the refusals");
}

#[test]
fn tiles_refuses_a_fifo_as_its_checkpoint_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = demo(dir.path(), "log.redb", 300);
    let key = signer_key(dir.path());
    let tiles = dir.path().join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    let checkpoint = tiles.join("checkpoint");
    mkfifo(&checkpoint);
    let before = sha256(&log);
    let mut command = command(&[]);
    command
        .arg("tiles")
        .arg(&log)
        .arg(&tiles)
        .arg("--key")
        .arg(&key)
        .arg("--json");
    // Reading the checkpoint back used to open the FIFO and wait for a writer for ever.
    let output = bounded(command, "tiles with a FIFO as its checkpoint");
    let named = checkpoint.display().to_string();
    assert_eq!(check_refusal(&output, &named, "invalid_input", "tiles"), 1);
    assert!(
        stderr(&output).contains("named pipe"),
        "{}",
        stderr(&output)
    );
    assert_eq!(sha256(&log), before, "the refused tiles changed the log");
}

/// A signer key for `tiles`, made by `keygen` at `dir/log.key`.
fn signer_key(dir: &Path) -> PathBuf {
    let key = dir.join("log.key");
    let made = command(&[])
        .args(["keygen", "--name", "example.com/log"])
        .arg(&key)
        .output()
        .unwrap();
    exit_code(&made, 0, "keygen");
    key
}

/// Asserts that `output` is a refusal with exit 2 naming `path`, of `kind` when the error is
/// JSON (keygen's is text), and counts it.
fn check_refusal(output: &Output, path: &str, kind: &str, what: &str) -> usize {
    exit_code(output, 2, what);
    let message = stderr(output);
    assert!(message.contains(path), "{what}: {message}");
    if let Ok(error) = serde_json::from_str::<Value>(message.trim()) {
        assert_eq!(error["kind"], kind, "{what}: {error}");
        assert_eq!(error["exit"], 2, "{what}: {error}");
    }
    1
}

#[test]
fn files_written_from_a_private_log_are_as_private_as_it() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let at = |name: &str| dir.path().join(name);
    let log = demo(dir.path(), "log.redb", 300);
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key = signer_key(dir.path());
    let log_text = log.display().to_string();
    let key_text = key.display().to_string();
    let (export, copy, archive, tiles) = (
        at("out.export"),
        at("copy.redb"),
        at("cut.archive"),
        at("tiles"),
    );
    let runs: [Vec<&str>; 4] = [
        vec!["export", &log_text, export.to_str().unwrap()],
        vec!["backup", &log_text, copy.to_str().unwrap()],
        vec![
            "archive",
            &log_text,
            "--before",
            "100",
            archive.to_str().unwrap(),
        ],
        vec![
            "tiles",
            &log_text,
            tiles.to_str().unwrap(),
            "--key",
            &key_text,
        ],
    ];
    for args in runs {
        let output = command(&args).output().unwrap();
        exit_code(&output, 0, args[0]);
    }
    let checkpoint = tiles.join("checkpoint");
    for file in [&export, &copy, &archive, &checkpoint] {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o077, 0, "{}: mode {mode:o}", file.display());
    }
}

#[test]
fn keygen_force_replaces_a_key_never_a_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    annals::Store::open(&log).unwrap().close().unwrap();
    let before = std::fs::read(&log).unwrap();
    let output = command(&[])
        .args(["keygen", "--name", "example.com/log", "--force", "--json"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let error: serde_json::Value = serde_json::from_slice(&output.stderr).unwrap();
    assert_eq!(error["kind"], "store_file", "{error}");
    assert_eq!(std::fs::read(&log).unwrap(), before, "the log is as it was");
    // A key is replaced as before.
    let key = dir.path().join("log.key");
    for _ in 0..2 {
        let made = command(&[])
            .args(["keygen", "--name", "example.com/log", "--force"])
            .arg(&key)
            .output()
            .unwrap();
        assert!(made.status.success(), "{made:?}");
    }
}

#[test]
fn the_backup_command_copies_a_log_and_refuses_a_file_that_exists() {
    use crate::{Log, exits, json, stdout};
    let log = Log::new();
    let _demo = log.ok("demo", &["--records", "200"]);
    let copy = log.dir.path().join("copy.redb");
    let copy_arg = copy.to_str().expect("a UTF-8 path");
    let printed = json(log.ok("backup", &[copy_arg, "--json"]).trim_end());
    let root = json(log.ok("root", &["--json"]).trim_end());
    assert_eq!(printed["records"], root["size"]);
    assert_eq!(printed["target"], copy_arg);
    let copied_root = exits(
        command(&[])
            .args(["root", copy_arg, "--json"])
            .output()
            .expect("run annals"),
        0,
    );
    assert_eq!(json(stdout(&copied_root).trim_end()), root);
    let before = std::fs::read(&copy).expect("the copy");
    let refused = exits(log.run("backup", &[copy_arg, "--json"]), 2);
    let error = json(stderr(&refused).trim_end());
    assert_eq!(error["kind"], "refused", "{error}");
    assert!(
        error["error"]
            .as_str()
            .is_some_and(|message| message.contains("never replaces")),
        "{error}"
    );
    assert_eq!(std::fs::read(&copy).expect("the copy"), before);
}
