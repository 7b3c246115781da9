//! `--history`: every figure of a run appended to `docs/performance-history.csv`, one row a
//! figure, so the history of runs is data the bench writes rather than prose. A figure's row
//! is its path in the run's JSON report (`mixed.annals_store.1`), its column empty; the date,
//! time and commit say which run it was.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Appends every number of `report` to the history file at `path`, naming `table` and the
/// bench command (`cargo bench --bench <bench>`) with the run's own flags (`args`: a `--smoke`
/// run says so).
pub(crate) fn append(
    report: &Value,
    bench: &str,
    table: &str,
    args: &[String],
    path: &Path,
) -> std::io::Result<usize> {
    let flags: Vec<&str> = args
        .iter()
        .map(String::as_str)
        // `cargo bench` passes `--bench` to every bench: not a flag of the run's.
        .filter(|flag| !matches!(*flag, "--history" | "--bench"))
        .collect();
    let bench = match flags.is_empty() {
        true => format!("cargo bench --bench {bench}"),
        false => format!("cargo bench --bench {bench} -- {}", flags.join(" ")),
    };
    let bench = quoted(&bench);
    let (date, time) = now_utc()?;
    let commit = output("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_default();
    let mut figures = Vec::new();
    numbers(report, String::new(), &mut figures);
    let mut rows = String::new();
    for (at, value) in &figures {
        writeln!(
            rows,
            "{date},{time},{commit},{bench},{},{},,{value},",
            quoted(table),
            quoted(at)
        )
        .expect("writing to a string");
    }
    let mut file = std::fs::OpenOptions::new().append(true).open(path)?;
    std::io::Write::write_all(&mut file, rows.as_bytes())?;
    Ok(figures.len())
}

/// Every number under `value`, with its path of keys and indexes joined by dots.
fn numbers(value: &Value, at: String, found: &mut Vec<(String, String)>) {
    let under = |key: &str| {
        if at.is_empty() {
            key.to_owned()
        } else {
            format!("{at}.{key}")
        }
    };
    match value {
        Value::Number(number) => found.push((at, number.to_string())),
        Value::Object(fields) => {
            for (key, inner) in fields {
                numbers(inner, under(key), found);
            }
        }
        Value::Array(items) => {
            for (index, inner) in items.iter().enumerate() {
                numbers(inner, under(&index.to_string()), found);
            }
        }
        _ => {}
    }
}

/// `text` as one CSV field.
fn quoted(text: &str) -> String {
    if text.contains([',', '"', '\n']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_owned()
    }
}

/// Today's date and the time, UTC, as the history writes them (`2026-12-06`, `22:40`).
fn now_utc() -> std::io::Result<(String, String)> {
    let stamp = output("date", &["-u", "+%Y-%m-%d %H:%M"])?;
    let (date, time) = stamp.split_once(' ').unwrap_or((&stamp, ""));
    Ok((date.to_owned(), time.to_owned()))
}

/// What `program` prints, trimmed.
fn output(program: &str, args: &[&str]) -> std::io::Result<String> {
    let run = Command::new(program).args(args).output()?;
    if !run.status.success() {
        return Err(std::io::Error::other(format!("{program} {args:?} failed")));
    }
    Ok(String::from_utf8_lossy(&run.stdout).trim().to_owned())
}
