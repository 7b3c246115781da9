//! The ratios table of `docs/performance.md`, rendered from `benches/baseline.json` (the
//! committed run's ratios). `--write-baseline` and `--docs` write it between [`BEGIN`] and
//! [`END`]; `tests/it/performance_doc.rs` renders it again from the committed baseline and
//! fails when the document's copy differs, so the table cannot drift from the run it reports.
//!
//! Only `serde_json` and the standard library: the test includes this file as it is.

use serde_json::Value;

/// The line that opens the generated table.
pub const BEGIN: &str = "<!-- ratios: generated from benches/baseline.json by `cargo bench --bench side_by_side -- --docs`; do not edit by hand -->";
/// The line that closes it.
pub const END: &str = "<!-- end of generated ratios -->";

/// The table of `baseline`: the run's date, machine and rounds, then one row per ratio (what
/// it divides, its value, its noise over rounds, its target and whether the run met it).
pub fn render(baseline: &Value) -> String {
    let text = |key: &str| baseline[key].as_str().unwrap_or("unknown").to_owned();
    let machine = &baseline["machine"];
    let gib = machine["memory_bytes"].as_f64().unwrap_or(0.0) / f64::from(1u32 << 30);
    let mut out = String::new();
    out.push_str(&format!(
        "Run of {} ({}, {} rounds): {} cores ({}), {gib:.1} GiB, Linux {}, SQLite {}.\n\n",
        text("date"),
        text("note"),
        baseline["rounds"].as_u64().unwrap_or(0),
        machine["cores"].as_u64().unwrap_or(0),
        machine["cpu"].as_str().unwrap_or("unknown"),
        machine["kernel"].as_str().unwrap_or("unknown"),
        machine["sqlite"].as_str().unwrap_or("unknown"),
    ));
    out.push_str("| ratio | annals / against | value | noise | target | met |\n");
    out.push_str("|---|---|---:|---:|---:|---|\n");
    let empty = serde_json::Map::new();
    let ratios = baseline["ratios"].as_object().unwrap_or(&empty);
    for (key, ratio) in ratios {
        let value = ratio["value"].as_f64().unwrap_or(f64::NAN);
        let higher = ratio["higher_is_better"].as_bool().unwrap_or(true);
        let noise = ratio["noise"]
            .as_f64()
            .map_or("—".to_owned(), |n| format!("±{:.0}%", n * 100.0));
        let target = ratio["target"].as_f64();
        let (target_text, met) = match target {
            Some(t) => (
                format!("{} {}", if higher { "≥" } else { "≤" }, figure(t)),
                if (higher && value >= t) || (!higher && value <= t) {
                    "yes"
                } else {
                    "no"
                },
            ),
            None => ("—".to_owned(), "—"),
        };
        let what = ratio["what"].as_str().unwrap_or("—");
        out.push_str(&format!(
            "| `{key}` | {what} | {} | {noise} | {target_text} | {met} |\n",
            figure(value)
        ));
    }
    out
}

/// `doc` with the text between its [`BEGIN`] and [`END`] lines replaced by `table`; `None`
/// when it lacks either line.
pub fn splice(doc: &str, table: &str) -> Option<String> {
    let begin = doc.find(BEGIN)? + BEGIN.len();
    let end = begin + doc[begin..].find(END)?;
    Some(format!("{}\n{table}{}", &doc[..begin], &doc[end..]))
}

/// The text between `doc`'s [`BEGIN`] and [`END`] lines, as [`splice`] writes it.
pub fn current(doc: &str) -> Option<&str> {
    let begin = doc.find(BEGIN)? + BEGIN.len() + 1;
    let end = begin + doc.get(begin..)?.find(END)?;
    Some(&doc[begin..end])
}

/// A ratio with three significant digits.
fn figure(value: f64) -> String {
    if !value.is_finite() {
        "—".to_owned()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// The UTC date and time of `unix_seconds`, as `2026-12-02 02:55 UTC`.
pub fn utc(unix_seconds: u64) -> String {
    let days = (unix_seconds / 86_400) as i64;
    let minutes = unix_seconds % 86_400 / 60;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        minutes / 60,
        minutes % 60
    )
}
