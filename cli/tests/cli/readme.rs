//! The README's sample outputs, checked against what the commands print on the deterministic
//! demo it starts from (`annals demo <FILE> --records 2000`): a sample that drifts from the
//! build fails here.

use std::process::Command;

const README: &str = include_str!("../../../README.md");

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
        let output = Command::new(crate::ANNALS)
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
