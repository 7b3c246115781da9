//! The `annals` binary on its own: it starts, says what it is, and writes and reads a log;
//! `terminal` checks what it gives a person at a terminal and a shell (completions, manual
//! pages, colour, the pager). The command line's behaviour is tested at length by the
//! workspace's tests (`tests/it`), which run this binary as a process; this test also makes
//! `cargo test` build it for them.

mod terminal;

use std::process::Command;

/// `annals` with `args`, in an environment without the variables that change how it writes
/// (colour, the pager), whatever the developer's shell has.
fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_annals"));
    command
        .args(args)
        .env_remove("NO_COLOR")
        .env_remove("PAGER")
        .env_remove("ANNALS_PAGER")
        .env_remove("COLUMNS");
    command
}

fn annals(args: &[&str]) -> std::process::Output {
    command(args).output().expect("run annals")
}

#[test]
fn appends_and_reads_back_a_record() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let db = dir.path().join("log.redb");
    let db = db.to_str().expect("a UTF-8 path");
    let appended = annals(&["append", db, "deploy/web", "deploy.started", "{}"]);
    assert!(
        appended.status.success(),
        "{}",
        String::from_utf8_lossy(&appended.stderr)
    );
    let log = annals(&["log", db]);
    assert!(log.status.success());
    let text = String::from_utf8(log.stdout).expect("UTF-8");
    assert!(text.starts_with("0 deploy/web@0 deploy.started "), "{text}");
    let verify = annals(&["verify", db]);
    assert!(verify.status.success());
}

#[test]
fn the_test_only_children_are_not_commands_of_annals() {
    // `crash-writer` and `rebuild --step` belong to the test support's `annals-testing`.
    let crash = annals(&["crash-writer", "log.redb"]);
    assert_eq!(
        crash.status.code(),
        Some(2),
        "crash-writer is no command of annals"
    );
    let step = annals(&["rebuild", "log.redb", "--step"]);
    assert_eq!(
        step.status.code(),
        Some(2),
        "--step is no option of annals rebuild"
    );
}
