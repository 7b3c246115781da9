//! The audit commands as real processes: root, prove, check-proof, export, import, history.

use std::fs;
use std::process::Command;

use serde_json::Value;

use crate::cli::{Log, exits, json, stderr, stdout};

/// Runs `annals <args…>` with no log argument of its own.
fn annals(args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_annals"))
        .args(args)
        .output()
        .expect("run the annals binary")
}

fn demo() -> Log {
    let log = Log::new();
    log.ok("demo", &["--records", "600"]);
    log
}

fn root(log: &Log, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend(args);
    json(log.ok("root", &all).trim_end())
}

fn check_proof(file: &std::path::Path) -> std::process::Output {
    annals(&["check-proof".as_ref(), file.as_os_str()])
}

#[test]
fn root_json_has_size_root_and_tree_head_and_defaults_to_the_head() {
    let log = demo();
    let stats = json(log.ok("stats", &["--json"]).trim_end());
    let head = root(&log, &[]);
    assert_eq!(head["size"], stats["records"]);
    // verify recomputes the same root from the record hashes.
    let verified = json(log.ok("verify", &["--json"]).trim_end());
    assert_eq!(verified["root"], head["root"]);
    for key in ["root", "tree_head"] {
        assert_eq!(head[key].as_str().unwrap().len(), 64, "{key}");
    }
    let smaller = root(&log, &["--size", "100"]);
    assert_eq!(smaller["size"], 100);
    assert_ne!(smaller["root"], head["root"]);
    let past = exits(log.run("root", &["--size", "100000"]), 2);
    assert!(stderr(&past).contains("past the head"), "{}", stderr(&past));
}

#[test]
fn an_inclusion_proof_file_checks_out_and_any_edit_to_it_fails() {
    let log = demo();
    let proof = log.ok("prove", &["--position", "123", "--size", "500", "--json"]);
    let value = json(proof.trim_end());
    assert_eq!(value["proof"], "inclusion");
    assert_eq!(value["root"], root(&log, &["--size", "500"])["root"]);
    let file = log.dir.path().join("proof.json");
    fs::write(&file, &proof).unwrap();
    let valid = exits(check_proof(&file), 0);
    assert!(stdout(&valid).starts_with("valid"), "{}", stdout(&valid));
    let edits: Vec<(&str, Value)> = vec![
        ("position", 124.into()),
        ("size", 499.into()),
        ("size", 501.into()),
        ("record_hash", value["path"][0].clone()),
        ("root", value["path"][0].clone()),
        ("tree_head", value["root"].clone()),
    ];
    for (key, new) in edits {
        let mut edited = value.clone();
        edited[key] = new;
        fs::write(&file, edited.to_string()).unwrap();
        let output = exits(check_proof(&file), 1);
        assert!(
            stderr(&output).contains("invalid"),
            "{key}: {}",
            stderr(&output)
        );
    }
    for index in 0..value["path"].as_array().unwrap().len() {
        let mut edited = value.clone();
        edited["path"][index] = value["record_hash"].clone();
        fs::write(&file, edited.to_string()).unwrap();
        exits(check_proof(&file), 1);
    }
    fs::write(&file, "{not json").unwrap();
    exits(check_proof(&file), 1);
    exits(check_proof(&log.dir.path().join("missing.json")), 2);
}

#[test]
fn a_consistency_proof_file_checks_out_against_both_roots() {
    let log = demo();
    let proof = log.ok("prove", &["--from-size", "200", "--json"]);
    let value = json(proof.trim_end());
    assert_eq!(value["proof"], "consistency");
    assert_eq!(value["from_root"], root(&log, &["--size", "200"])["root"]);
    assert_eq!(value["root"], root(&log, &[])["root"]);
    let file = log.dir.path().join("consistency.json");
    fs::write(&file, &proof).unwrap();
    exits(check_proof(&file), 0);
    let mut edited = value.clone();
    edited["from_size"] = 201.into();
    fs::write(&file, edited.to_string()).unwrap();
    exits(check_proof(&file), 1);
    let text = log.ok("prove", &["--from-size", "200"]);
    assert!(text.starts_with("consistency of size 200"), "{text}");
    exits(log.run("prove", &["--from-size", "0"]), 2);
    exits(log.run("prove", &[]), 2);
}

#[test]
fn export_then_import_reproduces_head_and_root_and_a_damaged_file_exits_1() {
    let log = demo();
    let file = log.dir.path().join("log.export");
    let copy = log.dir.path().join("copy.redb");
    let exported = log.ok("export", &[file.to_str().unwrap()]);
    assert!(
        exported.starts_with("exported positions 0 .. "),
        "{exported}"
    );
    let clean = fs::read(&file).unwrap();
    let mut damaged = clean.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x01;
    fs::write(&file, &damaged).unwrap();
    let refused = exits(
        annals(&["import".as_ref(), file.as_os_str(), copy.as_os_str()]),
        1,
    );
    assert!(
        stderr(&refused).contains("damaged at position"),
        "{}",
        stderr(&refused)
    );
    assert!(!copy.exists());
    fs::write(&file, &clean).unwrap();
    exits(
        annals(&["import".as_ref(), file.as_os_str(), copy.as_os_str()]),
        0,
    );
    let stats = |path: &std::path::Path| {
        json(
            stdout(&exits(
                annals(&["stats".as_ref(), path.as_os_str(), "--json".as_ref()]),
                0,
            ))
            .trim_end(),
        )
    };
    assert_eq!(stats(&copy)["head_hash"], stats(&log.db)["head_hash"]);
    let copy_root = stdout(&exits(
        annals(&["root".as_ref(), copy.as_os_str(), "--json".as_ref()]),
        0,
    ));
    assert_eq!(json(copy_root.trim_end()), root(&log, &[]));
    exits(annals(&["verify".as_ref(), copy.as_os_str()]), 0);
}

#[test]
fn history_lists_an_entitys_records_in_order_with_positions_and_times() {
    let log = demo();
    let lines = log.ok("history", &["lease:deploy-lock", "--json"]);
    let records: Vec<Value> = lines.lines().map(json).collect();
    assert!(records.len() > 2, "{lines}");
    let positions: Vec<u64> = records
        .iter()
        .map(|r| r["position"].as_u64().unwrap())
        .collect();
    assert!(positions.windows(2).all(|pair| pair[0] < pair[1]));
    for record in &records {
        assert_eq!(record["stream"], "lease/deploy-lock");
        assert!(record["at_ms"].as_u64().is_some());
    }
    let text = log.ok("history", &["lease:deploy-lock"]);
    assert_eq!(text.lines().count(), records.len());
    let refused = exits(log.run("history", &["deploy-lock"]), 2);
    assert!(
        stderr(&refused).contains("not an entity"),
        "{}",
        stderr(&refused)
    );
}
