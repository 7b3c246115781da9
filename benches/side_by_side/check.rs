//! `--check` and `--write-baseline`: every ratio of a run against the committed baseline
//! (`benches/baseline.json`, the ratios of one run and their noise). A ratio regresses when it
//! is worse than its baseline by more than the noise measured (its range over rounds relative
//! to its median, in this run or the baseline's, whichever is larger, and never less than
//! [`NOISE_FLOOR`]; a change is not judged when neither run had two rounds to measure it,
//! as in `--smoke`). Targets are another matter: a missed target is reported with what bounds
//! it, never a failure of `--check`, except the guards of an invariant ([`GUARDS`]).
//!
//! Only ratios taken within one run are compared: absolute figures (an empty denominator in
//! `RATIOS`) measure the machine, not the code.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::Settings;
use crate::doc_table;
use crate::report::{RATIOS, noise};
use crate::samples::Samples;

/// The least relative change counted as a regression, for ratios whose rounds agreed closely
/// (or a run of one round).
pub(crate) const NOISE_FLOOR: f64 = 0.10;

/// Ratios whose target guards an invariant of ARCHITECTURE.md: missing it fails `--check`.
pub(crate) const GUARDS: [&str; 1] = ["rebuild_rss_2x_vs_1x"];

pub(crate) fn baseline_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/baseline.json"
    ))
}

/// Whether a ratio is one of the machine's absolute figures, left out of the baseline.
fn absolute(key: &str) -> bool {
    RATIOS
        .iter()
        .any(|&(ratio, _, denominator, ..)| ratio == key && denominator.is_empty())
}

/// The ratios of `report` with their direction and noise, as the baseline keeps them.
fn ratios_of(report: &Value, samples: &Samples) -> serde_json::Map<String, Value> {
    let mut ratios = serde_json::Map::new();
    let Some(object) = report.as_object() else {
        return ratios;
    };
    for (key, value) in object {
        let Some(value) = value.as_f64() else {
            continue;
        };
        let known = RATIOS.iter().any(|&(ratio, ..)| ratio == key)
            || crate::report::SHARING_RATIOS
                .iter()
                .any(|&(ratio, ..)| ratio == key)
            || GUARDS.contains(&key.as_str());
        if !known || absolute(key) || !value.is_finite() {
            continue;
        }
        let noise = noise(samples, key);
        let mut ratio = json!({
            "value": value,
            "noise": if noise.is_finite() { json!(noise) } else { Value::Null },
        });
        describe(key, &mut ratio);
        ratios.insert(key.clone(), ratio);
    }
    ratios
}

/// Writes into `ratio` what the code says of `key` (not a measurement): its direction, what
/// it divides, and its target if it has one.
fn describe(key: &str, ratio: &mut Value) {
    ratio["higher_is_better"] = json!(higher_is_better(key));
    if let Some(&(_, numerator, denominator, target, _)) = RATIOS
        .iter()
        .chain(&crate::report::SHARING_RATIOS)
        .find(|&&(ratio, ..)| ratio == key)
    {
        ratio["what"] = json!(format!("`{numerator}` / `{denominator}`"));
        ratio["target"] = if target.is_finite() {
            json!(target)
        } else {
            Value::Null
        };
    }
}

fn docs_path() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/performance.md"))
}

/// Writes `baseline`'s ratios table into `docs/performance.md`.
fn write_docs(baseline: &Value) {
    let path = docs_path();
    let doc = std::fs::read_to_string(&path).expect("read docs/performance.md");
    let table = doc_table::render(baseline);
    let Some(updated) = doc_table::splice(&doc, &table) else {
        panic!(
            "{} lacks the generated table's markers ({} … {})",
            path.display(),
            doc_table::BEGIN,
            doc_table::END
        );
    };
    assert_eq!(doc_table::current(&updated), Some(table.as_str()));
    std::fs::write(&path, updated).expect("write docs/performance.md");
    println!("ratios table written to {}", path.display());
}

/// `--docs`: refreshes what the code says of each ratio of the committed baseline (its
/// direction, what it divides, its target; the measured values stay) and writes its table
/// into `docs/performance.md`.
pub(crate) fn refresh_docs() {
    let path = baseline_path();
    let text = std::fs::read_to_string(&path).expect("read benches/baseline.json");
    let mut baseline: Value = serde_json::from_str(&text).expect("benches/baseline.json is JSON");
    if let Some(ratios) = baseline["ratios"].as_object_mut() {
        for (key, ratio) in ratios.iter_mut() {
            describe(key, ratio);
        }
    }
    let text = serde_json::to_string_pretty(&baseline).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the baseline");
    write_docs(&baseline);
}

fn higher_is_better(key: &str) -> bool {
    RATIOS
        .iter()
        .chain(&crate::report::SHARING_RATIOS)
        .find(|&&(ratio, ..)| ratio == key)
        .is_none_or(|&(.., higher)| higher)
        && !GUARDS.contains(&key)
}

/// `--write-baseline`: this run's ratios into `benches/baseline.json`.
pub(crate) fn write_baseline(settings: &Settings, samples: &Samples, report: &Value) {
    let note = if settings.smoke {
        "PROVISIONAL: written by a --smoke run (tiny sizes, one round) on a loaded machine; its values are placeholders, not a measurement. Replace it with `cargo bench --bench side_by_side -- --write-baseline` on a quiet machine."
    } else if settings.quick {
        "written by a --quick run; replace it with a full run's on a quiet machine"
    } else {
        "written by a full run"
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let baseline = json!({
        "note": note,
        "date": doc_table::utc(now),
        "machine": report["machine"],
        "quick": settings.quick,
        "smoke": settings.smoke,
        "rounds": settings.rounds,
        "noise_floor": NOISE_FLOOR,
        "ratios": ratios_of(report, samples),
    });
    let path = baseline_path();
    let text = serde_json::to_string_pretty(&baseline).expect("JSON");
    std::fs::write(&path, text + "\n").expect("write the baseline");
    println!("baseline written to {}", path.display());
    write_docs(&baseline);
}

/// `--check`: prints each ratio against its baseline; returns how many regressed (and the
/// guards missed). No baseline file counts as one failure.
pub(crate) fn check(
    settings: &Settings,
    samples: &Samples,
    report: &Value,
    missed: &[&str],
) -> usize {
    let path = baseline_path();
    let Some(baseline) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
    else {
        eprintln!(
            "--check: no baseline at {} (write one with --write-baseline)",
            path.display()
        );
        return 1;
    };
    let now = ratios_of(report, samples);
    println!();
    println!(
        "--check against {} ({})",
        path.display(),
        baseline["note"].as_str().unwrap_or("no note")
    );
    let sizes = |quick: bool, smoke: bool| match (smoke, quick) {
        (true, _) => "--smoke",
        (_, true) => "--quick",
        _ => "full",
    };
    let (was, is) = (
        sizes(
            baseline["quick"].as_bool().unwrap_or(false),
            baseline["smoke"].as_bool().unwrap_or(false),
        ),
        sizes(settings.quick, settings.smoke),
    );
    if was != is {
        // Ratios move with the log's size (caches, B-tree depth): a change may be the sizes'.
        println!(
            "note: the baseline is a {was} run's and this is a {is} run: sizes differ, so read a \
             change with that in mind, or write a baseline of this run's kind"
        );
    }
    println!(
        "| {:<34} | {:>8} | {:>8} | {:>9} | {:>9} | {:<9} |",
        "ratio", "baseline", "now", "change", "tolerance", "verdict"
    );
    println!(
        "|{:-<36}|{:->10}|{:->10}|{:->11}|{:->11}|{:-<11}|",
        "", "", "", "", "", ""
    );
    let mut failures = 0;
    let mut unmeasured = 0;
    let empty = serde_json::Map::new();
    let before = baseline["ratios"].as_object().unwrap_or(&empty);
    for (key, current) in &now {
        let Some(old) = before.get(key) else {
            println!(
                "| {key:<34} | {:>8} | {:>8.2} | {:>9} | {:>9} | {:<9} |",
                "—",
                current["value"].as_f64().unwrap_or(f64::NAN),
                "",
                "",
                "new"
            );
            continue;
        };
        let (was, is) = (
            old["value"].as_f64().unwrap_or(f64::NAN),
            current["value"].as_f64().unwrap_or(f64::NAN),
        );
        let change = (is - was) / was.abs();
        let worse = if higher_is_better(key) {
            -change
        } else {
            change
        };
        let (noise_was, noise_is) = (old["noise"].as_f64(), current["noise"].as_f64());
        let tolerance = [
            noise_was.unwrap_or(0.0),
            noise_is.unwrap_or(0.0),
            NOISE_FLOOR,
        ]
        .into_iter()
        .fold(0.0, f64::max);
        let verdict = if worse <= tolerance {
            "ok"
        } else if noise_was.is_none() && noise_is.is_none() {
            // Neither run had two rounds: no noise was measured to judge the change against.
            unmeasured += 1;
            "worse?"
        } else {
            failures += 1;
            "REGRESSED"
        };
        println!(
            "| {key:<34} | {was:>8.2} | {is:>8.2} | {:>8.0}% | {:>8.0}% | {verdict:<9} |",
            change * 100.0,
            tolerance * 100.0
        );
    }
    if unmeasured > 0 {
        println!(
            "--check: {unmeasured} ratio(s) worse by more than {:.0}%, but neither this run nor \
             the baseline had two rounds to measure their noise: not counted",
            NOISE_FLOOR * 100.0
        );
    }
    for guard in GUARDS {
        if missed.contains(&guard) && settings.smoke {
            println!(
                "--check: {guard} missed, not enforced in --smoke (its logs are too small to mean anything)"
            );
        } else if missed.contains(&guard) {
            eprintln!("--check: {guard} missed its target, which guards an invariant");
            failures += 1;
        }
    }
    failures
}
