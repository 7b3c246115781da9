//! The README stays a front door, and the guarantees it points to name tests that exist. (Its
//! sample outputs are checked against the command line in `cli/tests/cli/readme.rs`; its Rust
//! snippets are doc tests: `annals::ReadmeSnippets`.)

const README: &str = include_str!("../../README.md");

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
