//! Functions fit on a screen (STYLE.md, "Limits and invariants"): outside tests, none is longer
//! than 70 lines, counted from its `fn` line to its closing brace. Test code is exempt: files
//! named `tests.rs` or under a `tests` folder, `#[cfg(test)]` modules, and `src/testing/`, the
//! test-support module behind the `testing` feature.

use std::fs;
use std::path::{Path, PathBuf};

/// The most lines a function outside tests may take.
const FUNCTION_LINES_MAX: usize = 70;

/// The folders whose functions are measured.
const ROOTS: &[&str] = &["src", "cli/src", "format/src"];

/// Test support, measured by nothing: its scripted models read best whole.
const TEST_SUPPORT: &str = "src/testing";

#[test]
fn no_function_outside_tests_is_longer_than_70_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut over = Vec::new();
    for folder in ROOTS {
        for file in rust_files(&root.join(folder)) {
            let relative = file
                .strip_prefix(root)
                .expect("under the repository")
                .to_string_lossy()
                .replace('\\', "/");
            if relative.starts_with(TEST_SUPPORT) || is_test_file(&relative) {
                continue;
            }
            let text = fs::read_to_string(&file).expect("read a source file");
            for (name, line, lines) in long_functions(&text) {
                over.push((relative.clone(), name, line, lines));
            }
        }
    }
    let found: Vec<String> = over
        .iter()
        .map(|(file, name, line, lines)| format!("{file}:{line} `{name}`: {lines} lines"))
        .collect();
    assert!(
        found.is_empty(),
        "functions over {FUNCTION_LINES_MAX} lines (split each by what its parts mean):\n  {}",
        found.join("\n  ")
    );
}

/// The measure itself, on a function of 71 lines, one of 70, and one of 80 in a test module.
#[test]
fn a_function_is_measured_from_its_fn_line_to_its_closing_brace() {
    let body = |lines: usize| "    let _ = 1;\n".repeat(lines - 2);
    let text = format!(
        "pub(crate) fn long(\n{}}}\n\nasync fn fits() {{\n{}}}\n\n#[cfg(test)]\nmod tests {{\n    \
         fn in_a_test() {{\n{}    }}\n}}\n",
        body(71),
        body(70),
        body(80)
    );
    assert_eq!(long_functions(&text), vec![("long".to_owned(), 1, 71)]);
}

/// Whether `relative` is a file of tests: `tests.rs`, `*_tests.rs`, or under a `tests` folder.
fn is_test_file(relative: &str) -> bool {
    let name = relative.rsplit('/').next().unwrap_or(relative);
    name.contains("tests") || relative.split('/').any(|part| part == "tests")
}

/// Every `.rs` file under `folder`, in name order.
fn rust_files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut entries: Vec<_> = fs::read_dir(folder)
        .expect("read a source folder")
        .map(|entry| entry.expect("a folder entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            found.extend(rust_files(&path));
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
    found
}

/// The functions of `text` longer than [`FUNCTION_LINES_MAX`] outside `#[cfg(test)]`
/// modules: name, first line (from 1) and length in lines. A function ends at the first line
/// after its `fn` line that is its indentation and a closing brace (as rustfmt writes it).
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    let mut at = 0;
    while at < lines.len() {
        let line = lines[at];
        let indent = &line[..line.len() - line.trim_start().len()];
        if line.trim() == "#[cfg(test)]"
            && lines
                .get(at + 1)
                .is_some_and(|next| is_module_start(next.trim()))
        {
            at = closing(&lines, at + 1, indent) + 1;
            continue;
        }
        if let Some(name) = function_name(line.trim_start()) {
            let end = closing(&lines, at, indent);
            let length = end - at + 1;
            if length > FUNCTION_LINES_MAX {
                found.push((name.to_owned(), at + 1, length));
            }
        }
        at += 1;
    }
    found
}

/// Whether `line` opens an inline module (`mod tests {`).
fn is_module_start(line: &str) -> bool {
    let line = line
        .strip_prefix("pub(crate) ")
        .or_else(|| line.strip_prefix("pub "))
        .unwrap_or(line);
    line.starts_with("mod ") && line.ends_with('{')
}

/// The name of the function whose definition `line` (trimmed) begins, if it begins one with
/// a body (a trait's declaration ending in `;` has none).
fn function_name(line: &str) -> Option<&str> {
    if line.trim_end().ends_with(';') {
        return None;
    }
    let mut rest = line;
    for prefix in ["pub(crate) ", "pub(super) ", "pub ", "const ", "async "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let name = rest.strip_prefix("fn ")?;
    let end = name
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(name.len());
    (end > 0).then(|| &name[..end])
}

/// The line of the brace that closes what opens at `start`, indented `indent`: the first line
/// after it that is exactly `indent` and `}` (the last line when none is).
fn closing(lines: &[&str], start: usize, indent: &str) -> usize {
    (start + 1..lines.len())
        .find(|&at| {
            lines[at]
                .strip_prefix(indent)
                .is_some_and(|rest| rest.trim_end() == "}")
        })
        .unwrap_or(lines.len().saturating_sub(1))
}
