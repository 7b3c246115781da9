//! The audit commands as real processes: root, prove, check-proof, export, import, history.

use std::fs;
use std::process::Command;

use annals::ProofFile;
use annals::merkle::{LogTreeHasher, TreeHead, leaf_hash, root_from_inclusion};
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

/// Runs `annals check-proof <file> <args…>`: a proof checked against a kept head.
fn check_proof_with(file: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut all = vec!["check-proof".as_ref(), file.as_os_str()];
    all.extend(args.iter().map(std::ffi::OsStr::new));
    annals(&all)
}

/// What `check-proof` says on stderr when it had no trusted head.
const UNTRUSTED: &str = "checked only against the tree heads the proof carries";

/// The first position whose inclusion proof in the tree of `size` also fits the tree of
/// `size - 1`: its proof file, and that file forged into the smaller tree, with the root
/// recomputed from the path and the tree head hash recomputed to match.
fn forged_inclusion(log: &Log, size: u64) -> (Value, Value) {
    for position in (0..size - 1).rev() {
        let size_arg = size.to_string();
        let proof = log.ok(
            "prove",
            &[
                "--position",
                &position.to_string(),
                "--size",
                &size_arg,
                "--json",
            ],
        );
        let valid = json(proof.trim_end());
        let proof = ProofFile::from_json(proof.as_bytes()).unwrap();
        let ProofFile::Inclusion {
            record_hash, path, ..
        } = proof
        else {
            panic!("an inclusion proof")
        };
        let leaf = leaf_hash(&record_hash);
        let Ok(root) = root_from_inclusion(&LogTreeHasher, position, size - 1, &leaf, &path) else {
            continue;
        };
        let mut forged = valid.clone();
        forged["size"] = (size - 1).into();
        forged["root"] = root.to_hex().into();
        let head = TreeHead {
            size: size - 1,
            root,
        };
        forged["tree_head"] = head.hash().to_hex().into();
        return (valid, forged);
    }
    panic!("no position's path fits both sizes")
}

#[test]
fn check_proof_refuses_a_self_consistent_forgery_against_the_kept_head() {
    let log = demo();
    let kept = root(&log, &[]);
    let size = kept["size"].as_u64().unwrap();
    let (kept_root, kept_hash) = (
        kept["root"].as_str().unwrap(),
        kept["tree_head"].as_str().unwrap(),
    );
    let kept_json = log.dir.path().join("kept.json");
    fs::write(&kept_json, kept.to_string()).unwrap();
    let kept_text = log.ok("root", &[]);
    let kept_file = format!("@{}", kept_json.display());
    let (valid, forged) = forged_inclusion(&log, size);
    let file = log.dir.path().join("proof.json");

    fs::write(&file, valid.to_string()).unwrap();
    let said = format!("checked against the trusted head you gave: size {size}, root {kept_root}");
    let size_arg = size.to_string();
    let heads: [&[&str]; 4] = [
        &["--head", &kept_file],
        &["--head", kept_hash],
        &["--head", &kept_text],
        &["--size", &size_arg, "--root", kept_root],
    ];
    for args in heads {
        let output = exits(check_proof_with(&file, args), 0);
        assert!(
            stdout(&output).contains(&said),
            "{args:?}: {}",
            stdout(&output)
        );
        assert!(
            !stderr(&output).contains(UNTRUSTED),
            "{args:?}: {}",
            stderr(&output)
        );
    }

    // The forgery is self-consistent: alone, check-proof accepts it, and says how little that is.
    fs::write(&file, forged.to_string()).unwrap();
    let alone = exits(check_proof(&file), 0);
    assert!(stderr(&alone).contains(UNTRUSTED), "{}", stderr(&alone));
    // Against what the auditor kept it is refused, naming what disagrees.
    let refused = exits(check_proof_with(&file, &["--head", &kept_file]), 1);
    let expected = format!(
        "the proof is for the tree of size {}, the trusted head is of size {size}",
        size - 1
    );
    assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
    let refused = exits(check_proof_with(&file, &["--head", kept_hash]), 1);
    assert!(
        stderr(&refused).contains(&format!(
            "no tree head in the proof is the trusted tree head {kept_hash}"
        )),
        "{}",
        stderr(&refused)
    );
    // A head kept of the forged size has the log's root there, not the forger's.
    let smaller = root(&log, &["--size", &(size - 1).to_string()]);
    let refused = exits(
        check_proof_with(
            &file,
            &[
                "--size",
                &(size - 1).to_string(),
                "--root",
                smaller["root"].as_str().unwrap(),
            ],
        ),
        1,
    );
    let expected = format!(
        "the proof's root for size {} is {}",
        size - 1,
        forged["root"].as_str().unwrap()
    );
    assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
}

#[test]
fn check_proof_of_a_smaller_tree_than_the_kept_head_needs_a_consistency_proof() {
    let log = demo();
    let kept = root(&log, &[]);
    let size = kept["size"].as_u64().unwrap();
    let kept_hash = kept["tree_head"].as_str().unwrap();
    let inclusion = log.dir.path().join("inclusion.json");
    let proof = log.ok("prove", &["--position", "123", "--size", "500", "--json"]);
    fs::write(&inclusion, &proof).unwrap();
    let refused = exits(check_proof_with(&inclusion, &["--head", kept_hash]), 1);
    assert!(
        stderr(&refused).contains("a tree head hash alone does not say"),
        "{}",
        stderr(&refused)
    );
    let size_arg = size.to_string();
    let kept_root = kept["root"].as_str().unwrap();
    let refused = exits(
        check_proof_with(&inclusion, &["--size", &size_arg, "--root", kept_root]),
        1,
    );
    assert!(
        stderr(&refused).contains(&format!("consistency proof between sizes 500 and {size}")),
        "{}",
        stderr(&refused)
    );
    // The consistency proof, checked against the kept head, vouches for the head of 500.
    let consistency = log.dir.path().join("consistency.json");
    fs::write(
        &consistency,
        log.ok("prove", &["--from-size", "500", "--json"]),
    )
    .unwrap();
    let linked = stdout(&exits(
        check_proof_with(&consistency, &["--head", kept_hash]),
        0,
    ));
    let head_500 = root(&log, &["--size", "500"]);
    let vouched = format!(
        "the tree head of size 500 is a prefix of yours: root {}, tree head {}",
        head_500["root"].as_str().unwrap(),
        head_500["tree_head"].as_str().unwrap()
    );
    assert!(linked.contains(&vouched), "{linked}");
    let checked = exits(
        check_proof_with(
            &inclusion,
            &["--head", head_500["tree_head"].as_str().unwrap()],
        ),
        0,
    );
    assert!(
        stdout(&checked).contains("size 500"),
        "{}",
        stdout(&checked)
    );
    // From the earlier head, it vouches for the later one.
    let from_500 = stdout(&exits(
        check_proof_with(
            &consistency,
            &["--head", head_500["tree_head"].as_str().unwrap()],
        ),
        0,
    ));
    assert!(
        from_500.contains(&format!(
            "the tree head of size {size} extends yours: root {kept_root}"
        )),
        "{from_500}"
    );
    let other = root(&log, &["--size", "100"]);
    let refused = exits(
        check_proof_with(
            &consistency,
            &["--head", other["tree_head"].as_str().unwrap()],
        ),
        1,
    );
    assert!(
        stderr(&refused).contains("no tree head in the proof"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn check_proof_refuses_upper_case_hex_naming_the_field_and_a_malformed_head() {
    let log = demo();
    let proof = json(log.ok("prove", &["--position", "7", "--json"]).trim_end());
    let file = log.dir.path().join("proof.json");
    for field in ["root", "tree_head", "record_hash"] {
        let mut upper = proof.clone();
        upper[field] = proof[field].as_str().unwrap().to_uppercase().into();
        fs::write(&file, upper.to_string()).unwrap();
        let refused = exits(check_proof(&file), 1);
        assert!(
            stderr(&refused).contains(&format!("{field} has upper-case hex digits")),
            "{}",
            stderr(&refused)
        );
    }
    let mut upper = proof.clone();
    upper["path"][0] = proof["path"][0].as_str().unwrap().to_uppercase().into();
    fs::write(&file, upper.to_string()).unwrap();
    let refused = exits(check_proof(&file), 1);
    assert!(
        stderr(&refused).contains("path[0] has upper-case hex digits"),
        "{}",
        stderr(&refused)
    );

    fs::write(&file, proof.to_string()).unwrap();
    let kept = root(&log, &[]);
    let kept_hash = kept["tree_head"].as_str().unwrap();
    let upper_head = kept_hash.to_uppercase();
    let mut wrong = kept.clone();
    wrong["tree_head"] = kept["root"].clone();
    let wrong_file = log.dir.path().join("wrong.json");
    fs::write(&wrong_file, wrong.to_string()).unwrap();
    let wrong_arg = format!("@{}", wrong_file.display());
    let missing_arg = format!("@{}", log.dir.path().join("missing").display());
    let usage: [(&[&str], &str); 6] = [
        (&["--head", &upper_head], "not 64 lower-case hex digits"),
        (
            &["--head", "size 12"],
            "not a tree head as `annals root` prints it",
        ),
        (&["--head", &wrong_arg], "is not that of size"),
        (&["--head", &missing_arg], "--head @"),
        (&["--size", "12"], "--root"),
        (
            &["--head", kept_hash, "--size", "12", "--root", kept_hash],
            "cannot be used with",
        ),
    ];
    for (args, says) in usage {
        let output = exits(check_proof_with(&file, args), 2);
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
    }
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
    assert!(stderr(&valid).contains(UNTRUSTED), "{}", stderr(&valid));
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
