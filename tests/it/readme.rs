//! The README's sample outputs, checked against what the commands print on the deterministic
//! demo it starts from (`annals demo <FILE> --records 2000`): a sample that drifts
//! from the build fails here. (Its Rust snippets are doc tests: `annals::ReadmeSnippets`.)

use std::process::Command;

const README: &str = include_str!("../../README.md");

/// The read commands whose output depends only on the log (not on a key or a clock).
const CHECKED: [&str; 5] = ["log", "streams", "state", "history", "root"];

/// One `annals` command of a `sh` block and the `# ` lines right after it.
#[derive(Debug)]
struct Sample {
    /// The demo's file the block starts by writing.
    log: String,
    args: Vec<String>,
    expected: Vec<String>,
}

/// The samples of every `sh` block that starts with the 2000-record demo.
fn samples() -> Vec<Sample> {
    let mut out = Vec::new();
    let mut lines = README.lines();
    while let Some(line) = lines.next() {
        if line != "```sh" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
        // `annals demo <FILE> --records 2000`: each block its own file, so that the README's
        // blocks run in order in one folder without one demo colliding with another's file.
        let Some(log) = block.first().and_then(|first| {
            first
                .strip_prefix("annals demo ")?
                .strip_suffix(" --records 2000")
        }) else {
            continue;
        };
        for (at, line) in block.iter().enumerate() {
            let command = line.split("  #").next().unwrap().trim_end();
            let Some(args) = command.strip_prefix("annals ") else {
                continue;
            };
            let args: Vec<String> = args.split_whitespace().map(str::to_owned).collect();
            let on_demo = args.get(1).is_some_and(|db| db == log);
            let redirected = args.iter().any(|a| a == ">" || a == "|");
            if !CHECKED.contains(&args[0].as_str()) || !on_demo || redirected {
                continue;
            }
            let expected = block[at + 1..]
                .iter()
                .take_while(|l| l.starts_with('#'))
                .map(|l| l.strip_prefix("# ").unwrap_or("").to_owned())
                .collect();
            out.push(Sample {
                log: log.to_owned(),
                args,
                expected,
            });
        }
    }
    out
}

#[test]
fn every_sample_output_in_the_readme_is_what_the_demo_prints() {
    let samples = samples();
    assert!(
        samples.len() >= 4,
        "the README's demo samples were not found: {samples:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let annals = |args: &[String]| {
        let output = Command::new(crate::annals_bin::annals())
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(output.status.success(), "annals {args:?}: {output:?}");
        String::from_utf8(output.stdout).unwrap()
    };
    let mut logs: Vec<&str> = samples.iter().map(|sample| sample.log.as_str()).collect();
    logs.sort_unstable();
    logs.dedup();
    for log in logs {
        annals(&["demo", log, "--records", "2000"].map(str::to_owned));
    }
    for sample in &samples {
        let printed = annals(&sample.args);
        let printed: Vec<&str> = printed.lines().map(str::trim_end).collect();
        assert!(
            printed.len() >= sample.expected.len(),
            "annals {:?} printed {printed:#?}, the README shows {:#?}",
            sample.args,
            sample.expected
        );
        for (expected, line) in sample.expected.iter().zip(&printed) {
            // A sample cut with `…` shows the start of its line.
            let matches = match expected.strip_suffix('…') {
                Some(start) => line.starts_with(start),
                None => line == expected,
            };
            assert!(
                matches,
                "annals {:?}: the README shows {expected:?}, the build prints {line:?}",
                sample.args
            );
        }
    }
}

#[test]
fn the_readme_stays_a_front_door_of_at_most_150_lines() {
    let lines = README.lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: move detail into docs/ (it keeps what annals is, the two \
         set-up commands with what they print and cost, install, one program, the CLI at a \
         glance and where to read next)"
    );
}

/// Every test docs/guarantees.md names (a backticked `snake_case` name of three words or more,
/// or a `tests/…` or `src/…` path) is one the repository has, so a guarantee cannot outlive
/// the test that checks it.
#[test]
fn every_test_the_guarantees_name_exists() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/guarantees.md")).expect("read the doc");
    let mut sources = String::new();
    for dir in ["tests", "src", "cli", "fuzz/fuzz_targets"] {
        collect_sources(&root.join(dir), &mut sources);
    }
    let mut missing = Vec::new();
    let mut named = 0;
    for quoted in doc.split('`').skip(1).step_by(2) {
        let is_path = quoted.starts_with("tests/") || quoted.starts_with("src/");
        let is_test_name = quoted.split('_').count() >= 3
            && quoted
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if is_path {
            named += 1;
            let path = quoted.split_whitespace().next().unwrap_or(quoted);
            if !root
                .join(path.trim_end_matches(['.', ',', ':', ')']))
                .exists()
            {
                missing.push(quoted.to_owned());
            }
        } else if is_test_name {
            named += 1;
            if !sources.contains(&format!("fn {quoted}(")) {
                missing.push(quoted.to_owned());
            }
        }
    }
    assert!(named >= 20, "docs/guarantees.md names only {named} tests");
    assert!(
        missing.is_empty(),
        "docs/guarantees.md names tests or files that do not exist: {missing:?}"
    );
}

fn collect_sources(dir: &std::path::Path, into: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path
                .file_name()
                .is_some_and(|n| n != "node_modules" && n != "target")
            {
                collect_sources(&path, into);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
}
