//! `--json` on the writing and evidence commands, errors as JSON objects, messages that name
//! the path and the cause, progress and `-v` on standard error only: the real binary on real
//! files.

use std::fs;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::{ANNALS, Log, annals, command, exits, json, path, stderr, stdout};

/// The one JSON object a `--json` error prints on standard error, checked against its kind
/// and the exit code.
fn error_object(output: Output, kind: &str, exit: i32) -> Value {
    let output = exits(output, exit);
    let text = stderr(&output);
    assert_eq!(text.lines().count(), 1, "one line: {text}");
    let object = json(text.trim_end());
    assert_eq!(object["kind"], kind, "{text}");
    assert_eq!(object["exit"], exit, "{text}");
    assert!(
        object["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{text}"
    );
    assert_eq!(stdout(&output), "", "nothing on stdout");
    object
}

/// A log of three events, and the export of it.
fn log_of_three() -> Log {
    let log = Log::new();
    for payload in ["a", "b", "c"] {
        log.ok("append", &["s", "k", payload, "--at-ms", "1"]);
    }
    log
}

#[test]
fn append_json_prints_the_position_version_and_head_or_the_duplicate() {
    let log = Log::new();
    let args = ["orders/1", "order.placed", "x", "--key", "k1", "--json"];
    let first = json(log.ok("append", &args).trim_end());
    assert_eq!(first["position"], 0);
    assert_eq!(first["duplicate"], false);
    assert_eq!(first["version"], 0);
    let stats = json(log.ok("stats", &["--json"]).trim_end());
    assert_eq!(first["head_hash"], stats["head_hash"], "{stats}");
    let again = json(log.ok("append", &args).trim_end());
    assert_eq!(again["position"], 0);
    assert_eq!(again["duplicate"], true);
    assert!(again.get("version").is_none(), "{again}");
}

#[test]
fn export_and_import_json_print_the_range_and_the_tree_head_root_prints() {
    let log = log_of_three();
    let file = log.dir.path().join("log.export");
    let exported = json(log.ok("export", &[path(&file), "--json"]).trim_end());
    assert_eq!(exported["from"], 0);
    assert_eq!(exported["to"], 3);
    assert_eq!(exported["records"], 3);
    assert_eq!(exported["path"], path(&file));
    let root = json(log.ok("root", &["--json"]).trim_end());
    assert_eq!(exported["root"], root["root"]);
    assert_eq!(exported["tree_head"], root["tree_head"]);

    let copy = log.dir.path().join("copy.redb");
    let imported = exits(annals(&["import", path(&file), path(&copy), "--json"]), 0);
    let imported = json(stdout(&imported).trim_end());
    assert_eq!(imported["path"], path(&copy));
    assert_eq!(imported["records"], 3);
    assert_eq!(imported["tree_head"], root["tree_head"]);
    assert_eq!(imported["head_hash"], exported["head_hash"]);
}

#[test]
fn rebuild_json_names_every_projection_and_the_position() {
    let log = log_of_three();
    let all = json(log.ok("rebuild", &["--json"]).trim_end());
    assert_eq!(
        all["projections"],
        serde_json::json!([
            "registry",
            "leases",
            "outbox",
            "runs",
            "consumers",
            "ingest"
        ])
    );
    assert_eq!(all["through"], 3);
    let one = json(
        log.ok("rebuild", &["--projection", "leases", "--json"])
            .trim_end(),
    );
    assert_eq!(one["projections"], serde_json::json!(["leases"]));
}

#[test]
fn check_proof_json_says_what_it_proved_and_against_which_head() {
    let log = log_of_three();
    let proof = log.dir.path().join("proof.json");
    fs::write(&proof, log.ok("prove", &["--position", "1", "--json"])).expect("write proof");
    let head = json(log.ok("root", &["--json"]).trim_end());
    let tree_head = head["tree_head"].as_str().expect("tree head");
    let checked = exits(
        annals(&["check-proof", path(&proof), "--head", tree_head, "--json"]),
        0,
    );
    let checked = json(stdout(&checked).trim_end());
    assert_eq!(checked["valid"], true);
    assert_eq!(checked["proof"], "inclusion");
    assert_eq!(checked["position"], 1);
    assert_eq!(checked["trusted"]["tree_head"], tree_head);
    assert_eq!(checked["to"]["root"], head["root"]);
    assert_eq!(checked["established"], true);

    // Without a head the proof is checked only against itself: `trusted` is null, it is not
    // established, and the exit code (3) says so to a script that reads no JSON.
    let unanchored = exits(annals(&["check-proof", path(&proof), "--json"]), 3);
    assert_eq!(json(stdout(&unanchored).trim_end())["trusted"], Value::Null);
    assert_eq!(json(stdout(&unanchored).trim_end())["established"], false);

    // A kept head in a file that is not there names the file.
    let absent = log.dir.path().join("kept-head.txt");
    let head_arg = format!("@{}", path(&absent));
    let object = error_object(
        annals(&["check-proof", path(&proof), "--head", &head_arg, "--json"]),
        "not_found",
        2,
    );
    assert_eq!(
        object["error"],
        format!("--head @{}: no such file or directory", path(&absent)).as_str()
    );

    // Another tree head: invalid, exit 1, as a JSON error.
    let other = "0".repeat(64);
    let refused = annals(&["check-proof", path(&proof), "--head", &other, "--json"]);
    let object = error_object(refused, "invalid_proof", 1);
    assert!(
        object["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("invalid: "))
    );
}

#[test]
fn demo_json_reports_what_it_wrote_and_that_verify_passed() {
    let log = Log::new();
    let output = exits(
        annals(&["demo", path(&log.db), "--records", "200", "--json"]),
        0,
    );
    let demo = json(stdout(&output).trim_end());
    assert_eq!(stdout(&output).lines().count(), 1);
    assert!(demo["records"].as_u64().is_some_and(|n| n >= 200), "{demo}");
    assert_eq!(demo["sound"], true);
    assert_eq!(demo["verified_records"], demo["head"]);
    let per_projection: u64 = demo["per_projection"]
        .as_object()
        .expect("per projection")
        .values()
        .map(|n| n.as_u64().expect("count"))
        .sum();
    assert_eq!(Some(per_projection), demo["records"].as_u64());
    // Standard error is a pipe here: no progress bar is drawn into it.
    assert_eq!(stderr(&output), "");
}

#[test]
fn demo_text_ends_with_the_next_step() {
    let log = Log::new();
    let output = exits(annals(&["demo", path(&log.db), "--records", "100"]), 0);
    let text = stdout(&output);
    assert!(text.contains("cargo install --locked --path cli"), "{text}");
    assert!(text.contains("annals log "), "{text}");
}

#[test]
fn errors_with_json_are_one_object_with_kind_and_exit_on_stderr() {
    let log = Log::new();
    // A missing log: not_found, 2.
    let missing = error_object(log.run("verify", &["--json"]), "not_found", 2);
    assert!(
        missing["error"]
            .as_str()
            .is_some_and(|e| e.contains(path(&log.db)))
    );
    // A refused append keeps its exit code 1.
    log.ok("append", &["s", "k", "--at-ms", "1"]);
    error_object(
        log.run("append", &["s", "k", "--expect", "none", "--json"]),
        "refused",
        1,
    );
    // A kind over its limit is a refusal too (exit 1), of bad input.
    let long_kind = "k".repeat(129);
    error_object(
        log.run("append", &["s", &long_kind, "--json"]),
        "invalid_input",
        1,
    );
    // A size past the head.
    error_object(
        log.run("root", &["--size", "9", "--json"]),
        "invalid_input",
        2,
    );
    // Arguments clap refuses: usage, 2, one line without clap's hint.
    let usage = error_object(log.run("verify", &["--bogus", "--json"]), "usage", 2);
    assert!(
        usage["error"]
            .as_str()
            .is_some_and(|e| e.contains("--bogus")),
        "{usage}"
    );
    // Without --json, the same error is a line of text as before.
    let text = exits(log.run("append", &["s", "k", "--expect", "none"]), 1);
    assert!(
        stderr(&text).starts_with("annals: stream "),
        "{}",
        stderr(&text)
    );
}

#[test]
fn a_damaged_log_is_a_corrupt_error() {
    let log = Log::new();
    fs::write(&log.db, b"not a log at all, just bytes").expect("write");
    error_object(log.run("verify", &["--json"]), "not_a_log", 2);
    let export = log.dir.path().join("bad.export");
    fs::write(&export, b"ANNALSEXxxxxxxxxxxxxxxxxxxxxxxx").expect("write");
    let copy = log.dir.path().join("copy.redb");
    error_object(
        annals(&["import", path(&export), path(&copy), "--json"]),
        "corrupt",
        1,
    );
}

#[test]
fn a_directory_in_place_of_a_file_is_named_as_one() {
    let log = Log::new();
    fs::create_dir(&log.db).expect("mkdir");
    let expected = format!("{}: is a directory", path(&log.db));
    for (command, args) in [
        ("append", vec!["s", "k"]),
        ("log", vec![]),
        ("verify", vec![]),
        ("rebuild", vec![]),
    ] {
        let mut all = args.clone();
        all.push("--json");
        let object = error_object(log.run(command, &all), "is_a_directory", 2);
        assert_eq!(object["error"], expected.as_str(), "{command}");
        let text = exits(log.run(command, &args), 2);
        assert_eq!(stderr(&text), format!("annals: {expected}\n"), "{command}");
    }
    // An export written over a directory, and an import from one.
    let source = log_of_three();
    let object = error_object(
        source.run("export", &[path(&log.db), "--json"]),
        "is_a_directory",
        2,
    );
    assert_eq!(object["error"], expected.as_str());
    let copy = log.dir.path().join("copy.redb");
    let object = error_object(
        annals(&["import", path(&log.db), path(&copy), "--json"]),
        "is_a_directory",
        2,
    );
    assert_eq!(object["error"], expected.as_str());
    // A proof file that is a directory.
    error_object(
        annals(&["check-proof", path(&log.db), "--json"]),
        "is_a_directory",
        2,
    );
}

#[test]
fn a_log_in_a_missing_folder_names_the_folder() {
    let log = Log::new();
    let folder = log.dir.path().join("absent");
    let db = folder.join("log.redb");
    let object = error_object(
        annals(&["append", path(&db), "s", "k", "--json"]),
        "not_found",
        2,
    );
    assert_eq!(
        object["error"],
        format!("{}: no such folder", path(&folder)).as_str()
    );
    assert!(!folder.exists());
}

#[test]
fn a_read_only_log_is_not_writable_not_unreadable() {
    let log = log_of_three();
    let mut mode = fs::metadata(&log.db).expect("metadata").permissions();
    mode.set_readonly(true);
    fs::set_permissions(&log.db, mode).expect("chmod");
    // Root writes read-only files; as root the binary runs as `nobody` (setpriv, util-linux),
    // for which the folder is open and the file read-only.
    let run = |args: &[&str]| {
        let mut command = if is_root() {
            let mut dir_mode = fs::metadata(log.dir.path()).expect("dir").permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut dir_mode, 0o755);
            fs::set_permissions(log.dir.path(), dir_mode).expect("chmod dir");
            let mut command = Command::new("setpriv");
            command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
            command.arg(ANNALS);
            command
        } else {
            command(&[])
        };
        command.args(args).output().expect("run annals")
    };
    let db = path(&log.db);
    let object = error_object(
        run(&["append", db, "s", "k", "--json"]),
        "permission_denied",
        2,
    );
    assert_eq!(
        object["error"],
        format!("{db}: not writable: permission denied").as_str()
    );
    let text = exits(run(&["rebuild", db]), 2);
    assert_eq!(
        stderr(&text),
        format!("annals: {db}: not writable: permission denied\n")
    );
    // Reading needs no write permission.
    exits(run(&["verify", db]), 0);
}

fn is_root() -> bool {
    // The numeric id of the folder a process creates is its own.
    let dir = tempfile::tempdir().expect("temporary folder");
    std::os::unix::fs::MetadataExt::uid(&fs::metadata(dir.path()).expect("metadata")) == 0
}

#[test]
fn a_full_disk_says_no_space_left_on_the_device() {
    let log = log_of_three();
    // /dev/full fails every write with ENOSPC; it is opened, never created or replaced.
    let full = fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let output = command(&[])
        .args(["log", path(&log.db), "--json"])
        .stdout(Stdio::from(full))
        .output()
        .expect("run annals");
    let output = exits(output, 2);
    let object = json(stderr(&output).trim_end());
    assert_eq!(object["kind"], "no_space");
    assert_eq!(
        object["error"],
        "writing output: no space left on the device"
    );
}

#[test]
fn append_help_states_the_limits() {
    let output = exits(annals(&["append", "--help"]), 0);
    let help = stdout(&output);
    let limits = annals::log::Limits::default();
    assert_eq!(limits.payload_bytes_max, 1024 * 1024);
    for phrase in [
        "payload of at most 1 MiB (1048576 bytes)".to_owned(),
        format!("stream name of at most {} bytes", limits.stream_bytes_max),
        format!("kind of at most {} bytes", limits.kind_bytes_max),
        format!(
            "idempotency key of at most {} bytes",
            limits.idempotency_key_bytes_max
        ),
    ] {
        assert!(
            help.replace('\n', " ").contains(&phrase),
            "{phrase}: {help}"
        );
    }
}

#[test]
fn verbose_prints_spans_on_stderr_and_leaves_stdout_alone() {
    let log = log_of_three();
    let quiet = log.ok("verify", &["--json"]);
    let output = exits(log.run("verify", &["--json", "-v"]), 0);
    assert_eq!(stdout(&output), quiet);
    let spans = stderr(&output);
    assert!(spans.contains("verify"), "{spans}");
    assert!(spans.contains("close"), "{spans}");
    assert!(!spans.contains('\u{1b}'), "no colours into a pipe: {spans}");
    // -vv adds every commit.
    let output = exits(log.run("append", &["s", "k", "-vv"]), 0);
    assert!(stderr(&output).contains("commit"), "{}", stderr(&output));
    // Without -v, nothing.
    let output = exits(log.run("append", &["s", "k"]), 0);
    assert_eq!(stderr(&output), "");
}

#[test]
fn long_commands_draw_no_progress_into_a_pipe() {
    let log = log_of_three();
    let file = log.dir.path().join("log.export");
    for (command, args) in [
        ("verify", vec![]),
        ("rebuild", vec![]),
        ("export", vec![path(&file)]),
    ] {
        let output = exits(log.run(command, &args), 0);
        assert_eq!(stderr(&output), "", "{command}");
    }
    let copy = log.dir.path().join("copy.redb");
    let output = exits(annals(&["import", path(&file), path(&copy)]), 0);
    assert_eq!(stderr(&output), "");
}

#[test]
fn demo_draws_a_bar_of_records_when_stderr_is_a_terminal() {
    let log = Log::new();
    // `script` (util-linux) runs the demo on a pseudo-terminal and copies what it drew;
    // standard output goes to /dev/null, so only the bar reaches the transcript.
    let command = format!(
        "'{}' demo '{}' --records 300 > /dev/null",
        ANNALS,
        path(&log.db)
    );
    let output = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .expect("run script (util-linux)");
    let output = exits(output, 0);
    let drawn = String::from_utf8_lossy(&output.stdout);
    assert!(drawn.contains("demo ["), "{drawn}");
    assert!(drawn.contains("/300 records"), "{drawn}");
}

#[test]
fn an_append_payload_file_that_is_missing_or_a_directory_is_named_with_its_cause() {
    let log = log_of_three();
    let missing = log.dir.path().join("no-such-payload");
    let object = error_object(
        log.run(
            "append",
            &["s", "k", &format!("@{}", path(&missing)), "--json"],
        ),
        "not_found",
        2,
    );
    let message = object["error"].as_str().unwrap();
    assert!(message.starts_with(path(&missing)), "{message}");
    assert!(!message.contains("os error"), "{message}");
    let folder = log.dir.path();
    let object = error_object(
        log.run(
            "append",
            &["s", "k", &format!("@{}", path(folder)), "--json"],
        ),
        "is_a_directory",
        2,
    );
    assert_eq!(
        object["error"],
        format!("{}: is a directory", path(folder)).as_str()
    );
}
