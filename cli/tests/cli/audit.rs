//! The audit commands as real processes: root, prove, check-proof, export, import, history.

use annals::testing::setup::ExpectDone;
use std::fs;

use annals::audit::ProofFile;
use annals::merkle::{LogTreeHasher, TreeHead, leaf_hash, root_from_inclusion};
use serde_json::Value;

use crate::{Log, exits, json, stderr, stdout};

/// Runs `annals <args…>` with no log argument of its own.
fn annals(args: &[&std::ffi::OsStr]) -> std::process::Output {
    crate::command(&[])
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

    // The forgery is self-consistent: alone, check-proof finds it so, says how little that is
    // and exits 3, never 0, so that no script takes it for a proof.
    fs::write(&file, forged.to_string()).unwrap();
    let alone = exits(check_proof(&file), 3);
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
    // From the earlier head alone, it vouches for no later one: its path leaves the later
    // size open. With the later head kept too, it links the two.
    let from_500 = exits(
        check_proof_with(
            &consistency,
            &["--head", head_500["tree_head"].as_str().unwrap()],
        ),
        1,
    );
    assert!(
        stderr(&from_500).contains(&format!("does not establish the later head of size {size}")),
        "{}",
        stderr(&from_500)
    );
    assert_eq!(stdout(&from_500), "");
    let both = stdout(&exits(
        check_proof_with(
            &consistency,
            &[
                "--head",
                head_500["tree_head"].as_str().unwrap(),
                "--head",
                kept_hash,
            ],
        ),
        0,
    ));
    assert!(
        both.contains(&format!(
            "it extends the trusted head of size 500 you gave: root {}",
            head_500["root"].as_str().unwrap()
        )),
        "{both}"
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
    let valid = exits(check_proof(&file), 3);
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
    exits(check_proof(&file), 2);
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
    exits(check_proof(&file), 3);
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

/// A log of `records` records, appended through the library in batches (much faster than
/// `demo`), closed before the binary runs on it.
fn log_of(records: u64) -> Log {
    let log = Log::new();
    let store = annals::Store::open(&log.db).unwrap();
    let mut appended = 0;
    while appended < records {
        let batch = (records - appended).min(250);
        let events: Vec<_> = (appended..appended + batch)
            .map(|i| annals::NewEvent::new("k", i, i.to_le_bytes().to_vec()))
            .collect();
        store
            .append("s", annals::ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
        appended += batch;
    }
    drop(store);
    log
}

/// RFC 9162 §2.1.4.2 exactly as the RFC words its steps, over the log's tree hash: whether
/// `path` proves the tree of `first` leaves with root `first_hash` a prefix of the tree of
/// `second` leaves with root `second_hash`. Written here apart from the library's verifier,
/// so that the sizes it accepts are the RFC's, not the library's.
fn rfc9162_consistency(
    first: u64,
    second: u64,
    path: &[annals::log::Digest],
    first_hash: &annals::log::Digest,
    second_hash: &annals::log::Digest,
) -> bool {
    use annals::merkle::TreeHasher;
    let hash =
        |left: &annals::log::Digest, right: &annals::log::Digest| LogTreeHasher.node(left, right);
    if first == second {
        return path.is_empty() && first_hash == second_hash;
    }
    // Step 1 (an empty path fails) and step 2 (a power of two is prepended).
    let mut path = path.to_vec();
    if first.is_power_of_two() {
        path.insert(0, *first_hash);
    }
    let Some((seed, rest)) = path.split_first() else {
        return false;
    };
    let (mut fn_, mut sn) = (first - 1, second - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    let (mut fr, mut sr) = (*seed, *seed);
    for c in rest {
        if sn == 0 {
            return false;
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = hash(c, &fr);
            sr = hash(c, &sr);
            if fn_ & 1 == 0 {
                while fn_ & 1 == 0 && fn_ != 0 {
                    fn_ >>= 1;
                    sn >>= 1;
                }
            }
        } else {
            sr = hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    fr == *first_hash && sr == *second_hash && sn == 0
}

/// Issue 29, point 2: RFC 9162's consistency check binds the earlier size, not the later one.
/// For several real proofs, every later size the RFC's steps accept with the same path and
/// roots is forged into the proof (its tree head recomputed), and each forgery is refused by
/// `check-proof` with only the earlier head trusted and by `ProofFile::check`.
#[test]
fn a_consistency_proof_vouches_for_no_later_size_the_earlier_head_alone_cannot_fix() {
    use annals::merkle::{ProofError, Trust, TrustedHead, consistency_sizes_sharing_path};
    let log = log_of(1000);
    let pairs = [
        (17, 1000),
        (500, 1000),
        (999, 1000),
        (100, 150),
        (3, 7),
        (5, 6),
    ];
    let file = log.dir.path().join("forged.json");
    let (mut forged_sizes, mut self_consistent_forgeries) = (0u64, 0u64);
    let mut widest = 0usize;
    for (from_size, size) in pairs {
        let args = [
            "--from-size".to_string(),
            from_size.to_string(),
            "--size".to_string(),
            size.to_string(),
            "--json".to_string(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let text = log.ok("prove", &args);
        let valid = json(text.trim_end());
        let proof = ProofFile::from_json(text.as_bytes()).unwrap();
        let ProofFile::Consistency {
            from_root,
            root,
            path,
            ..
        } = proof.clone()
        else {
            panic!("a consistency proof")
        };
        let earlier = TreeHead {
            size: from_size,
            root: from_root,
        };
        let later = TreeHead { size, root };
        assert!(rfc9162_consistency(
            from_size, size, &path, &from_root, &root
        ));
        // Every later size for which the RFC accepts the same path and roots: no size past
        // twice the real one can share its path.
        let open: Vec<u64> = (from_size + 1..=2 * size + 2)
            .filter(|&other| rfc9162_consistency(from_size, other, &path, &from_root, &root))
            .collect();
        assert!(open.contains(&size), "{from_size}..{size}");
        let range = consistency_sizes_sharing_path(from_size, size);
        assert_eq!(
            open,
            range.clone().collect::<Vec<_>>(),
            "{from_size}..{size}"
        );
        widest = widest.max(open.len());

        // The valid proof: refused with only the earlier head trusted, naming the open sizes;
        // accepted with the later head trusted too.
        let only_earlier = Trust::from(TrustedHead::Head(earlier));
        assert_eq!(
            proof.check(&only_earlier),
            Err(ProofError::LaterHeadNotTrusted {
                from_size,
                size,
                open_from: *range.start(),
                open_to: *range.end(),
            })
        );
        let both = only_earlier.clone().with(TrustedHead::Hash(later.hash()));
        assert_eq!(proof.check(&both), Ok(later));
        fs::write(&file, &text).unwrap();
        let earlier_hash = earlier.hash().to_hex();
        let refused = exits(check_proof_with(&file, &["--head", &earlier_hash]), 1);
        let says = format!("every later size from {} to {}", range.start(), range.end());
        assert!(stderr(&refused).contains(&says), "{}", stderr(&refused));
        assert_eq!(stdout(&refused), "");
        let later_hash = later.hash().to_hex();
        exits(
            check_proof_with(&file, &["--head", &earlier_hash, "--head", &later_hash]),
            0,
        );

        for &other in open.iter().filter(|&&other| other != size) {
            let mut forged = valid.clone();
            forged["size"] = other.into();
            let head = TreeHead { size: other, root };
            forged["tree_head"] = head.hash().to_hex().into();
            let text = forged.to_string();
            let forged = ProofFile::from_json(text.as_bytes()).unwrap();
            if forged.check_self_consistency().is_ok() {
                self_consistent_forgeries += 1;
            }
            for trusted in [
                TrustedHead::Head(earlier),
                TrustedHead::Hash(earlier.hash()),
            ] {
                let checked = forged.check(&Trust::from(trusted));
                assert!(checked.is_err(), "{from_size}..{other}: {checked:?}");
            }
            fs::write(&file, &text).unwrap();
            let refused = exits(check_proof_with(&file, &["--head", &earlier_hash]), 1);
            assert_eq!(stdout(&refused), "", "{from_size}..{other}");
            forged_sizes += 1;
        }
    }
    // The test exercises the hole: some pair leaves more than its own size open, and the
    // library's own verifier accepts some of those forgeries as self-consistent.
    assert!(widest > 1, "{widest}");
    assert!(forged_sizes > 0 && self_consistent_forgeries > 0);
}

/// A forged later head never becomes a head an inclusion proof can be checked against:
/// `check-proof` no longer prints the later head of a consistency proof checked from the
/// earlier head alone (on a69ee89 it printed "the tree head of size 995 extends yours" with
/// its tree head hash, which the auditor then trusted), and the inclusion proof forged into
/// that size is refused against the earlier head kept.
#[test]
fn an_inclusion_proof_of_a_forged_later_size_gets_no_head_to_pass_against() {
    use annals::merkle::{Trust, TrustedHead};
    let log = log_of(1000);
    let earlier = root(&log, &["--size", "17"]);
    let earlier_hash = earlier["tree_head"].as_str().unwrap();

    let text = log.ok("prove", &["--from-size", "17", "--size", "1000", "--json"]);
    let mut consistency = json(text.trim_end());
    let root_1000 = lower_hex(consistency["root"].as_str().unwrap());
    consistency["size"] = 995.into();
    let forged_later = TreeHead {
        size: 995,
        root: root_1000,
    };
    consistency["tree_head"] = forged_later.hash().to_hex().into();
    let file = log.dir.path().join("forged-consistency.json");
    fs::write(&file, consistency.to_string()).unwrap();
    let refused = exits(check_proof_with(&file, &["--head", earlier_hash]), 1);
    assert_eq!(stdout(&refused), "");
    assert!(
        !stderr(&refused).contains(&forged_later.hash().to_hex()),
        "{}",
        stderr(&refused)
    );
    let refused = exits(
        check_proof_with(&file, &["--head", earlier_hash, "--json"]),
        1,
    );
    assert_eq!(stdout(&refused), "");
    assert_eq!(json(stderr(&refused).trim_end())["kind"], "invalid_proof");

    let text = log.ok("prove", &["--position", "900", "--size", "1000", "--json"]);
    let mut forged = json(text.trim_end());
    let ProofFile::Inclusion {
        record_hash, path, ..
    } = ProofFile::from_json(text.as_bytes()).unwrap()
    else {
        panic!("an inclusion proof")
    };
    let root_995 = root_from_inclusion(&LogTreeHasher, 900, 995, &leaf_hash(&record_hash), &path)
        .expect("the path of position 900 fits the tree of 995 too");
    forged["size"] = 995.into();
    forged["root"] = root_995.to_hex().into();
    let forged_head = TreeHead {
        size: 995,
        root: root_995,
    };
    forged["tree_head"] = forged_head.hash().to_hex().into();
    fs::write(&file, forged.to_string()).unwrap();
    let refused = exits(check_proof_with(&file, &["--head", earlier_hash]), 1);
    assert!(stderr(&refused).contains("invalid"), "{}", stderr(&refused));
    let forged = ProofFile::from_json(forged.to_string().as_bytes()).unwrap();
    assert_eq!(forged.check_self_consistency(), Ok(()));
    let kept = lower_hex(earlier_hash);
    assert!(forged.check(&Trust::from(TrustedHead::Hash(kept))).is_err());
}

fn lower_hex(text: &str) -> annals::log::Digest {
    annals::log::Digest::from_hex(text).expect("64 hex digits")
}

/// Issue 29, point 8: a kept head read from a file is never echoed raw. Its terminal escapes
/// are shown escaped, and a long one is cut short.
#[test]
fn check_proof_quotes_a_kept_head_file_escapes_and_all_never_echoing_it_raw() {
    let log = log_of(20);
    let proof = log.dir.path().join("proof.json");
    fs::write(&proof, log.ok("prove", &["--position", "3", "--json"])).unwrap();
    let head = log.dir.path().join("head.txt");
    let hostile = [
        "\u{1b}[31mred\u{1b}]0;title\u{7}".to_string(),
        format!("size 12\nroot \u{1b}[2J{}\ntree head x", "a".repeat(3000)),
        format!(
            "size \u{1b}[5m12\nroot {}\ntree head {}",
            "0".repeat(64),
            "0".repeat(64)
        ),
        format!(
            "{{\"size\": 1, \"root\": \"{}\", \"tree_head\": \"\u{1b}c\"}}",
            "0".repeat(64)
        ),
    ];
    for text in hostile {
        fs::write(&head, &text).unwrap();
        let arg = format!("@{}", head.display());
        let refused = exits(check_proof_with(&proof, &["--head", &arg]), 2);
        let said = stderr(&refused);
        assert!(!said.contains('\u{1b}'), "{said:?}");
        assert!(!said.contains('\u{7}'), "{said:?}");
        assert!(said.len() < 600, "{} bytes: {said:?}", said.len());
        assert!(
            said.contains(&format!("--head @{}", head.display())),
            "{said}"
        );
    }
    // The first one is a bare value: shown quoted, its escapes spelt out.
    fs::write(&head, "\u{1b}[31mred").unwrap();
    let arg = format!("@{}", head.display());
    let refused = exits(check_proof_with(&proof, &["--head", &arg]), 2);
    assert!(
        stderr(&refused).contains(r#""\u{1b}[31mred": not 64 lower-case hex digits"#),
        "{}",
        stderr(&refused)
    );
}

/// Issue 29, point 8: a proof file that gives a key twice is refused naming the key (a JSON
/// reader would keep the last one silently); one that is not JSON, or not a proof file's
/// shape, is bad input (exit 2), not a proof that failed (exit 1).
#[test]
fn check_proof_refuses_a_repeated_key_naming_it_and_non_json_as_bad_input() {
    let log = log_of(20);
    let text = log.ok("prove", &["--position", "3", "--json"]);
    let valid = json(text.trim_end());
    let file = log.dir.path().join("proof.json");
    let body = text.trim_end().strip_suffix('}').unwrap().to_string();
    let repeats = [
        ("root", valid["path"][0].as_str().unwrap().to_string()),
        ("root", valid["root"].as_str().unwrap().to_string()),
        ("size", "20".to_string()),
        ("proof", "inclusion".to_string()),
    ];
    for (key, value) in repeats {
        let value = if key == "size" {
            value
        } else {
            format!("\"{value}\"")
        };
        let repeated = format!("{body},\"{key}\":{value}}}");
        fs::write(&file, &repeated).unwrap();
        let refused = exits(check_proof(&file), 2);
        let says = format!("the key \"{key}\" is given twice");
        assert!(stderr(&refused).contains(&says), "{}", stderr(&refused));
        assert!(matches!(
            ProofFile::from_json(repeated.as_bytes()),
            Err(annals::error::ProofFileError::DuplicateKey { .. })
        ));
    }
    // The file as it was passes.
    fs::write(&file, &text).unwrap();
    exits(check_proof(&file), 3);
    for not_a_proof in [
        "{not json",
        "",
        "[1, 2]",
        "{\"proof\": \"inclusion\"}",
        "\u{1b}[31m",
    ] {
        fs::write(&file, not_a_proof).unwrap();
        let refused = exits(check_proof(&file), 2);
        assert!(
            stderr(&refused).contains("not a proof file"),
            "{not_a_proof:?}: {}",
            stderr(&refused)
        );
        assert!(!stderr(&refused).contains('\u{1b}'));
    }
    fs::write(&file, "{not json").unwrap();
    let refused = exits(check_proof_with(&file, &["--json"]), 2);
    assert_eq!(json(stderr(&refused).trim_end())["kind"], "invalid_input");
}

/// Issue 29, point 8: `--size -1` is told what sizes and positions are, not clap's tip to
/// write `-- -1`, which would not help.
#[test]
fn a_negative_size_or_position_is_told_sizes_count_records() {
    let log = log_of(20);
    let proof = log.dir.path().join("proof.json");
    fs::write(&proof, log.ok("prove", &["--position", "3", "--json"])).unwrap();
    let runs: [(Vec<&str>, &str); 6] = [
        (
            vec!["root", "--size", "-1"],
            "sizes are counts of records, 0 or more",
        ),
        (
            vec!["prove", "--position", "3", "--size", "-1"],
            "sizes are counts of records, 0 or more",
        ),
        (
            vec!["prove", "--from-size", "-1"],
            "sizes are counts of records, 0 or more",
        ),
        (
            vec!["prove", "--position", "-1"],
            "positions count records from 0, so 0 or more",
        ),
        (
            vec!["prove", "--position", "x"],
            "positions count records from 0, so 0 or more",
        ),
        (
            vec!["root", "--size", "1.5"],
            "sizes are counts of records, 0 or more",
        ),
    ];
    for (args, says) in runs {
        let output = exits(log.run(args[0], &args[1..]), 2);
        assert!(
            stderr(&output).contains(says),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            !stderr(&output).contains("-- -1"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let root = json(log.ok("root", &["--json"]).trim_end());
    let output = exits(
        check_proof_with(
            &proof,
            &["--size", "-1", "--root", root["root"].as_str().unwrap()],
        ),
        2,
    );
    assert!(
        stderr(&output).contains("sizes are counts of records, 0 or more"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("-- -1"));
}
