//! What `annals` gives a person at a terminal and their shell: completion scripts, manual
//! pages, help wrapped to the terminal's width, colour only where it is wanted, and `log`,
//! `history` and `state` through a pager only on a terminal.
//!
//! A terminal is a real pseudo-terminal: `script` (util-linux) runs the command on one and
//! copies what was written to it. The pagers are small shell scripts that record what they
//! were given, so a test sees whether one ran and what it read.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::{ANNALS, Log, annals, command, path};

/// What starts every ANSI colour or style sequence.
const ESCAPE: &str = "\u{1b}[";

impl Log {
    /// A log of one record in a temporary folder.
    fn one_record() -> Log {
        let log = Log::new();
        log.append_deploy("{\"version\":\"v42\"}");
        log
    }

    /// Appends a `deploy.started` record with `payload` to `deploy/web`.
    fn append_deploy(&self, payload: &str) {
        let appended = annals(&[
            "append",
            self.path(),
            "deploy/web",
            "deploy.started",
            payload,
        ]);
        assert!(appended.status.success(), "{}", text(&appended.stderr));
    }

    /// The arguments of `log`, `history` and `state` on this log: the commands that page.
    fn paged_commands(&self) -> [Vec<&str>; 3] {
        [
            vec!["log", self.path()],
            vec!["history", self.path(), "stream:deploy/web"],
            vec!["state", self.path(), "registry"],
        ]
    }

    /// A pager at `name` in the log's folder that copies what it reads into `name.received`,
    /// and where that file appears once it ran.
    fn recording_pager(&self, name: &str) -> (PathBuf, PathBuf) {
        let received = self.dir.path().join(format!("{name}.received"));
        let script = format!("#!/bin/sh\ncat > {}\n", quote(path(&received)));
        (self.script(name, &script), received)
    }

    /// An executable shell script `name` in the log's folder.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let file = self.dir.path().join(name);
        fs::write(&file, body).expect("write a script");
        fs::set_permissions(&file, fs::Permissions::from_mode(0o755)).expect("make it executable");
        file
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `word` quoted for `sh`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs `annals args` on a pseudo-terminal with `env` added to an environment without colour
/// or pager variables; its exit code and what it wrote to the terminal (standard output and
/// error both), line ends as written (`\r\n` made `\n`).
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let line = std::iter::once(ANNALS)
        .chain(args.iter().copied())
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ");
    let output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env_remove("NO_COLOR")
        .env_remove("PAGER")
        .env_remove("ANNALS_PAGER")
        .env_remove("COLUMNS")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run script (util-linux), which gives annals a terminal");
    (
        output.status.code(),
        text(&output.stdout).replace("\r\n", "\n"),
    )
}

#[test]
fn completions_for_each_shell_name_the_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let output = annals(&["completions", shell]);
        assert!(output.status.success(), "{shell}: {}", text(&output.stderr));
        let script = text(&output.stdout);
        for name in ["append", "verify", "log", "completions"] {
            assert!(script.contains(name), "{shell}'s script lacks {name}");
        }
    }
    let output = annals(&["completions", "tcsh"]);
    assert_eq!(output.status.code(), Some(2), "no such shell");
}

#[test]
fn man_page_starts_with_a_th_header_naming_annals() {
    let output = annals(&["man"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let page = text(&output.stdout);
    // clap_mangen defines a string for the apostrophe first; the page's first request is
    // its title.
    let first = page
        .lines()
        .find(|line| !line.starts_with(".ie") && !line.starts_with(".el"))
        .unwrap_or_default();
    assert!(first.starts_with(".TH ANNALS 1 "), "{first}");
    assert!(page.contains(".SH SYNOPSIS"), "{page}");
    // The top page lists each command's own page, as git(1) does.
    assert!(page.contains(r"annals\-verify(1)"), "{page}");
}

#[test]
fn man_page_of_a_command_is_named_after_it() {
    let output = annals(&["man", "log"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let page = text(&output.stdout);
    assert!(page.contains("\n.TH ANNALS-LOG 1 "), "{page}");
    assert!(page.contains(r"\-\-no\-pager"), "{page}");
    let output = annals(&["man", "no-such-command"]);
    assert_eq!(output.status.code(), Some(2));
    let error = text(&output.stderr);
    assert!(error.contains("no command no-such-command"), "{error}");
}

#[test]
fn help_wraps_to_the_terminal_width() {
    let width = |columns: &str| {
        let output = command(&["--help"])
            .env("COLUMNS", columns)
            .output()
            .expect("run annals");
        assert!(output.status.success());
        let help = text(&output.stdout);
        help.lines()
            .map(|line| line.chars().count())
            .max()
            .unwrap_or(0)
    };
    assert!(width("80") <= 80, "a line of help is wider than 80 columns");
    // The same help on a wide terminal has longer lines: the width is the terminal's.
    assert!(width("200") > 80, "help did not use a wide terminal");
}

#[test]
fn piped_help_and_errors_have_no_colour_unless_asked() {
    let help = annals(&["--help"]);
    assert!(!text(&help.stdout).contains(ESCAPE), "help into a pipe");
    let error = annals(&["no-such-command"]);
    assert_eq!(error.status.code(), Some(2));
    assert!(
        !text(&error.stderr).contains(ESCAPE),
        "an error into a pipe"
    );
    let forced = annals(&["--color", "always", "no-such-command"]);
    assert!(
        text(&forced.stderr).contains(ESCAPE),
        "--color always colours a pipe"
    );
}

#[test]
fn no_color_turns_colour_off_on_a_terminal() {
    for args in [&["no-such-command"][..], &["--help"]] {
        let (_, coloured) = on_terminal(args, &[]);
        assert!(
            coloured.contains(ESCAPE),
            "{args:?} on a terminal: {coloured}"
        );
        // An empty NO_COLOR counts as unset (no-color.org).
        let (_, empty) = on_terminal(args, &[("NO_COLOR", "")]);
        assert!(
            empty.contains(ESCAPE),
            "{args:?} with NO_COLOR empty: {empty}"
        );
        let (_, plain) = on_terminal(args, &[("NO_COLOR", "1")]);
        assert!(!plain.contains(ESCAPE), "{args:?} with NO_COLOR=1: {plain}");
        assert!(plain.contains("Usage: annals"), "{plain}");
        let never = [&["--color", "never"], args].concat();
        let (_, plain) = on_terminal(&never, &[]);
        assert!(!plain.contains(ESCAPE), "{never:?}: {plain}");
    }
}

#[test]
fn log_history_and_state_piped_are_never_paged() {
    let log = Log::one_record();
    let (pager, received) = log.recording_pager("pager");
    for args in log.paged_commands() {
        for json in [false, true] {
            let args = [&args[..], if json { &["--json"][..] } else { &[] }].concat();
            let output = command(&args)
                .env("PAGER", &pager)
                .env("ANNALS_PAGER", &pager)
                .output()
                .expect("run annals");
            assert!(
                output.status.success(),
                "{args:?}: {}",
                text(&output.stderr)
            );
            assert!(!received.exists(), "{args:?} piped started the pager");
            // The log's one record touched no projection: `state --json` has no row to print.
            let rows_expected = !(json && args[0] == "state");
            assert!(
                !rows_expected || !output.stdout.is_empty(),
                "{args:?} printed nothing"
            );
        }
    }
    shows_the_record(&text(&annals(&["log", log.path()]).stdout));
}

#[test]
fn log_history_and_state_on_a_terminal_go_through_the_pager() {
    let log = Log::one_record();
    for (at, args) in log.paged_commands().into_iter().enumerate() {
        let (pager, received) = log.recording_pager(&format!("pager-{at}"));
        let (code, _) = on_terminal(&args, &[("PAGER", path(&pager))]);
        assert_eq!(code, Some(0), "{args:?}");
        let paged = fs::read(&received).unwrap_or_else(|_| panic!("{args:?}: no pager ran"));
        // The pager is given exactly what the command prints into a pipe.
        assert_eq!(paged, annals(&args).stdout, "{args:?}");
    }
    // ANNALS_PAGER comes before PAGER, as GIT_PAGER does.
    let (first, first_received) = log.recording_pager("annals-pager");
    let (second, second_received) = log.recording_pager("second-pager");
    let env = [("ANNALS_PAGER", path(&first)), ("PAGER", path(&second))];
    let (code, _) = on_terminal(&["log", log.path()], &env);
    assert_eq!(code, Some(0));
    assert!(first_received.exists() && !second_received.exists());
}

#[test]
fn no_pager_or_an_empty_pager_writes_straight_to_the_terminal() {
    let log = Log::one_record();
    let (pager, received) = log.recording_pager("pager");
    let pager = path(&pager);
    for (args, env) in [
        (
            &["log", log.path(), "--no-pager"][..],
            &[("PAGER", pager)][..],
        ),
        (
            &["log", log.path()],
            &[("ANNALS_PAGER", ""), ("PAGER", pager)],
        ),
        (&["log", log.path()], &[("PAGER", "")]),
    ] {
        shown_without_pager(on_terminal(args, env));
        assert!(!received.exists(), "{args:?} {env:?} started the pager");
    }
}

#[test]
fn pager_that_cannot_start_leaves_the_output_on_the_terminal() {
    let log = Log::one_record();
    let missing = log.dir.path().join("no-such-pager");
    shown_without_pager(on_terminal(
        &["log", log.path()],
        &[("PAGER", path(&missing))],
    ));
}

/// Checks that `log` of a [`Log`] ended well, its record written on the terminal itself.
fn shown_without_pager((code, shown): (Option<i32>, String)) {
    assert_eq!(code, Some(0), "{shown}");
    shows_the_record(&shown);
}

/// Checks that `printed` is what `log` prints of a [`Log`]'s record.
fn shows_the_record(printed: &str) {
    let line = "0 deploy/web@0 deploy.started ";
    assert!(printed.starts_with(line), "{printed}");
}

#[test]
fn quitting_the_pager_early_ends_quietly_with_exit_0() {
    let log = Log::one_record();
    // A payload of 1,000,000 bytes, shown whole: far more than a pipe holds, so writing it
    // must meet the pipe the pager closed without reading.
    let payload = log.dir.path().join("payload");
    fs::write(&payload, "a".repeat(1_000_000)).expect("write a payload");
    log.append_deploy(&format!("@{}", path(&payload)));
    let quitter = log.script("quitting-pager", "#!/bin/sh\nexit 0\n");
    let (code, shown) = on_terminal(&["log", log.path(), "--full"], &[("PAGER", path(&quitter))]);
    assert_eq!(code, Some(0), "{shown}");
    assert!(!shown.contains("annals:"), "{shown}");
    assert!(!shown.to_lowercase().contains("broken pipe"), "{shown}");
    assert!(
        !shown.contains("aaaa"),
        "the records went to the terminal, not the pager"
    );
}
