//! Signed checkpoints and the proofs checked against them (issue 31), through the real
//! binary: `keygen`, `checkpoint`, `prove --checkpoint`, `check-proof --vkey`, each output
//! checked by annals and by Cloudflare's `signed_note` and `tlog_tiles`, which know nothing of
//! annals; every refusal leaves the log's bytes as they were.

use annals::testing::setup::ExpectDone;
use std::path::{Path, PathBuf};

use annals::tlog::{Checkpoint, TlogProof, Verifier};
use annals::{ExpectedVersion, NewEvent, Store, log::Digest};

use crate::{annals, base64, exits, path as text, sha256, stderr, stdout};

const ORIGIN: &str = "example.com/annals-test";

/// A log of `n` records in `dir`, a key for it, and the key's vkey.
struct Setup {
    _dir: tempfile::TempDir,
    log: PathBuf,
    key: PathBuf,
    vkey: String,
    dir: PathBuf,
}

fn setup(n: u64) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    append(&log, n);
    let key = dir.path().join("log.key");
    let made = exits(annals(&["keygen", "--name", ORIGIN, text(&key)]), 0);
    let vkey = stdout(&made).trim_end().to_owned();
    Setup {
        dir: dir.path().to_path_buf(),
        _dir: dir,
        log,
        key,
        vkey,
    }
}

fn append(log: &Path, n: u64) {
    let store = Store::open(log).unwrap();
    let events: Vec<NewEvent> = (0..n)
        .map(|i| NewEvent::new("note", i, i.to_le_bytes().to_vec()))
        .collect();
    if !events.is_empty() {
        store
            .append("notes/a", ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
    }
    store.close().unwrap();
}

impl Setup {
    /// Signs a checkpoint of the head (or `size`) into `name`.
    fn checkpoint(&self, name: &str, size: Option<u64>) -> PathBuf {
        let size = size.map(|size| size.to_string());
        let mut args = vec!["checkpoint", text(&self.log), "--key", text(&self.key)];
        if let Some(size) = &size {
            args.extend(["--size", size]);
        }
        let signed = exits(annals(&args), 0);
        let path = self.dir.join(name);
        std::fs::write(&path, &signed.stdout).unwrap();
        path
    }

    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    }
}

#[test]
fn a_checkpoint_opens_with_annals_and_with_signed_note_and_states_the_logs_tree() {
    let s = setup(300);
    let path = s.checkpoint("c.txt", None);
    let note = std::fs::read_to_string(&path).unwrap();
    let opened = Checkpoint::open(&note, &[Verifier::parse(&s.vkey).unwrap()]).unwrap();
    assert_eq!(opened.checkpoint.origin, ORIGIN);
    assert_eq!(opened.checkpoint.size, 300);
    let store = Store::open_read_only(&s.log).unwrap();
    let root = store.snapshot().unwrap().merkle_root(300).unwrap();
    assert_eq!(opened.checkpoint.root, root.0);
    // Cloudflare's implementation opens it with the vkey alone.
    let verifier = signed_note::StandardVerifier::new(&s.vkey).unwrap();
    let theirs = signed_note::Note::from_bytes(note.as_bytes()).unwrap();
    let (verified, _) = theirs
        .verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
        .unwrap();
    assert_eq!(verified.len(), 1);
    // The log keeps it as the last it signed; `root` then names the origin.
    assert_eq!(
        annals::maintenance::Checkpoints::of(&store)
            .signed()
            .unwrap()
            .unwrap()
            .size,
        300
    );
    let root_json = exits(annals(&["root", text(&s.log), "--json"]), 0);
    let said: serde_json::Value = serde_json::from_slice(&root_json.stdout).unwrap();
    let body = note.split("\n\n").next().unwrap().to_owned() + "\n";
    assert_eq!(said["checkpoint_body"].as_str(), Some(body.as_str()));
    assert_eq!(said["origin"].as_str(), Some(ORIGIN));
    // `root --json`'s output is still a tree head `check-proof --head` reads.
    let kept = s.file("root.json", &root_json.stdout);
    let proof = exits(
        annals(&["prove", text(&s.log), "--position", "7", "--json"]),
        0,
    );
    let proof = s.file("p.json", &proof.stdout);
    let head = format!("@{}", text(&kept));
    exits(annals(&["check-proof", text(&proof), "--head", &head]), 0);
}

#[test]
fn refused_checkpoints_name_why_and_leave_the_logs_bytes_as_they_were() {
    let s = setup(50);
    s.checkpoint("c50.txt", None);
    let before = sha256(&s.log);
    let log = text(&s.log);
    let key = text(&s.key);
    // Smaller than the last signed.
    let refused = exits(
        annals(&["checkpoint", log, "--key", key, "--size", "49"]),
        2,
    );
    assert!(stderr(&refused).contains("size 50"), "{}", stderr(&refused));
    // Past the head.
    exits(
        annals(&["checkpoint", log, "--key", key, "--size", "51"]),
        2,
    );
    // Another origin.
    let other = s.dir.join("other.key");
    exits(
        annals(&["keygen", "--name", "other.example/log", text(&other)]),
        0,
    );
    let refused = exits(annals(&["checkpoint", log, "--key", text(&other)]), 2);
    assert!(stderr(&refused).contains(ORIGIN), "{}", stderr(&refused));
    // A key file others may read.
    use std::os::unix::fs::PermissionsExt;
    let open_key = s.dir.join("open.key");
    std::fs::copy(&s.key, &open_key).unwrap();
    std::fs::set_permissions(&open_key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let refused = exits(annals(&["checkpoint", log, "--key", text(&open_key)]), 2);
    assert!(
        stderr(&refused).contains("chmod 600"),
        "{}",
        stderr(&refused)
    );
    assert!(!stderr(&refused).contains("PRIVATE"));
    assert_eq!(
        sha256(&s.log),
        before,
        "a refused checkpoint changed the log"
    );
    // The same size again signs the same tree.
    let again = s.checkpoint("again.txt", Some(50));
    let first = std::fs::read_to_string(s.dir.join("c50.txt")).unwrap();
    assert_eq!(std::fs::read_to_string(again).unwrap(), first);
    // The private key is nowhere in the log, the checkpoint or an export: neither its text
    // nor its seed's bytes.
    let key_text = std::fs::read_to_string(&s.key).unwrap();
    let material = key_text
        .trim_end()
        .splitn(5, '+')
        .nth(4)
        .unwrap()
        .to_owned();
    let seed = base64(&material);
    assert_eq!(seed.len(), 33, "type byte and seed");
    let export = s.dir.join("all.export");
    exits(annals(&["export", log, text(&export)]), 0);
    for file in [s.log.clone(), s.dir.join("c50.txt"), export] {
        let bytes = std::fs::read(&file).unwrap();
        for secret in [&seed[1..], material.as_bytes()] {
            assert!(
                !bytes.windows(secret.len()).any(|window| window == secret),
                "{} holds the private key",
                file.display()
            );
        }
    }
}

#[test]
fn a_log_whose_tree_no_longer_has_the_signed_root_signs_nothing_more() {
    use annals::testing::internals::meta;
    let s = setup(40);
    s.checkpoint("c.txt", None);
    // The last signed checkpoint's root changed as a rewrite of the log would leave it.
    let mut value = 40u64.to_le_bytes().to_vec();
    value.extend_from_slice(&[9; 32]);
    value.extend_from_slice(ORIGIN.as_bytes());
    meta::insert_sealed(&s.log, "signed_checkpoint", &value).unwrap();
    append(&s.log, 3);
    let refused = exits(
        annals(&["checkpoint", text(&s.log), "--key", text(&s.key)]),
        1,
    );
    assert!(
        stderr(&refused).contains("not the one that signed it"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_tlog_proof_verifies_offline_with_the_vkey_and_with_tlog_tiles() {
    let s = setup(1000);
    let checkpoint = s.checkpoint("c.txt", None);
    for position in [0u64, 1, 500, 999] {
        let made = exits(
            annals(&[
                "prove",
                text(&s.log),
                "--position",
                &position.to_string(),
                "--checkpoint",
                text(&checkpoint),
            ]),
            0,
        );
        let proof_text = stdout(&made);
        assert!(proof_text.starts_with("c2sp.org/tlog-proof@v1\n"));
        let proof = s.file("p.txt", proof_text.as_bytes());
        let checked = exits(annals(&["check-proof", text(&proof), "--vkey", &s.vkey]), 0);
        assert!(
            stdout(&checked).starts_with("valid:"),
            "{}",
            stdout(&checked)
        );
        // With --json, one JSON object, as every command prints.
        let checked = exits(
            annals(&["check-proof", text(&proof), "--vkey", &s.vkey, "--json"]),
            0,
        );
        let value: serde_json::Value = serde_json::from_str(stdout(&checked).trim_end())
            .unwrap_or_else(|error| panic!("{error}: {}", stdout(&checked)));
        assert_eq!(value["valid"], true);
        assert_eq!(value["proof"], "inclusion");
        assert_eq!(value["position"], position);
        // tlog_tiles checks the same path against the checkpoint's root.
        let parsed = TlogProof::parse(&proof_text).unwrap();
        let record_hash: [u8; 32] = parsed.extra.as_slice().try_into().unwrap();
        let leaf = tlog_tiles::tlog::record_hash(&record_hash);
        let path: Vec<tlog_tiles::tlog::Hash> = parsed
            .path
            .iter()
            .map(|h| tlog_tiles::tlog::Hash(*h))
            .collect();
        tlog_tiles::tlog::check_record(
            &path,
            1000,
            tlog_tiles::tlog::Hash(parsed.checkpoint().root),
            position,
            leaf,
        )
        .unwrap();
        let store = Store::open_read_only(&s.log).unwrap();
        let record = store
            .snapshot()
            .unwrap()
            .get(annals::Position(position))
            .unwrap()
            .unwrap();
        assert_eq!(record.hash, Digest(record_hash));
        // Any flipped byte of the proof is refused: exit 1 for a proof that does not hold.
        let bytes = proof_text.as_bytes();
        for at in (0..bytes.len()).step_by(7) {
            let mut forged = bytes.to_vec();
            forged[at] ^= 0x01;
            let forged_path = s.file("forged.txt", &forged);
            let checked = annals(&["check-proof", text(&forged_path), "--vkey", &s.vkey]);
            assert_ne!(checked.status.code(), Some(0), "flip at {at} accepted");
        }
    }
    // Without the vkey a signed proof is not checked at all.
    let proof = s.dir.join("p.txt");
    exits(annals(&["check-proof", text(&proof)]), 2);
    // A vkey of another key: the checkpoint does not open.
    let other = s.dir.join("o.key");
    let made = exits(annals(&["keygen", "--name", ORIGIN, text(&other)]), 0);
    let other_vkey = stdout(&made).trim_end().to_owned();
    exits(
        annals(&["check-proof", text(&proof), "--vkey", &other_vkey]),
        1,
    );
}

#[test]
fn prove_refuses_a_checkpoint_of_another_log() {
    let s = setup(20);
    let checkpoint = s.checkpoint("c.txt", None);
    // Another log of as many records and more, none of them the same.
    let other = s.dir.join("other.redb");
    let store = Store::open(&other).unwrap();
    let events: Vec<NewEvent> = (0..25)
        .map(|i| NewEvent::new("other", i, b"x".to_vec()))
        .collect();
    store
        .append("other/b", ExpectedVersion::Any, &events)
        .unwrap()
        .expect_done();
    store.close().unwrap();
    let refused = exits(
        annals(&[
            "prove",
            text(&other),
            "--position",
            "3",
            "--checkpoint",
            text(&checkpoint),
        ]),
        1,
    );
    assert!(
        stderr(&refused).contains("not a checkpoint of this log"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn a_consistency_proof_holds_only_between_two_checkpoints_the_vkey_signed() {
    let s = setup(17);
    let old = s.checkpoint("old.txt", None);
    append(&s.log, 983);
    let new = s.checkpoint("new.txt", None);
    let made = exits(
        annals(&[
            "prove",
            text(&s.log),
            "--checkpoint",
            text(&new),
            "--from-checkpoint",
            text(&old),
        ]),
        0,
    );
    let proof_text = stdout(&made);
    assert!(proof_text.starts_with("old 17\n"), "{proof_text}");
    let proof = s.file("cons.txt", proof_text.as_bytes());
    let check = |proof: &Path, from: &Path| {
        annals(&[
            "check-proof",
            text(proof),
            "--vkey",
            &s.vkey,
            "--from-checkpoint",
            text(from),
        ])
    };
    let checked = exits(check(&proof, &old), 0);
    assert!(stdout(&checked).contains("size 1000 extends the one at size 17"));
    let checked = exits(
        annals(&[
            "check-proof",
            text(&proof),
            "--vkey",
            &s.vkey,
            "--from-checkpoint",
            text(&old),
            "--json",
        ]),
        0,
    );
    let value: serde_json::Value = serde_json::from_str(stdout(&checked).trim_end())
        .unwrap_or_else(|error| panic!("{error}: {}", stdout(&checked)));
    assert_eq!(
        (
            &value["proof"],
            &value["from"]["size"],
            &value["to"]["size"]
        ),
        (&"consistency".into(), &17.into(), &1000.into())
    );
    // tlog_tiles agrees.
    let file = annals::tlog::ConsistencyFile::parse(&proof_text).unwrap();
    let old_note = std::fs::read_to_string(&old).unwrap();
    let old_root = Checkpoint::open(&old_note, &[Verifier::parse(&s.vkey).unwrap()])
        .unwrap()
        .checkpoint
        .root;
    let path: Vec<tlog_tiles::tlog::Hash> = file
        .path
        .iter()
        .map(|h| tlog_tiles::tlog::Hash(*h))
        .collect();
    tlog_tiles::tlog::check_tree(
        &path,
        1000,
        tlog_tiles::tlog::Hash(file.checkpoint().root),
        17,
        tlog_tiles::tlog::Hash(old_root),
    )
    .unwrap();
    // The forged-size class: every later size the path leaves open, written into the carried
    // checkpoint, breaks its signature.
    for size in 513..=1024u64 {
        let forged = proof_text.replacen("\n1000\n", &format!("\n{size}\n"), 1);
        if size == 1000 {
            continue;
        }
        let forged = s.file("forged.txt", forged.as_bytes());
        exits(check(&forged, &old), 1);
    }
    // An earlier checkpoint of another size is refused, naming the size the proof is from.
    let refused = exits(check(&proof, &new), 1);
    assert!(
        stderr(&refused).contains("from size 17"),
        "{}",
        stderr(&refused)
    );
    // Without the earlier checkpoint there is nothing to bind the later one to.
    exits(annals(&["check-proof", text(&proof), "--vkey", &s.vkey]), 2);
}

#[test]
fn a_json_consistency_proof_counts_against_signed_checkpoints_and_forged_sizes_fail() {
    let s = setup(17);
    let old = s.checkpoint("old.txt", None);
    append(&s.log, 983);
    let new = s.checkpoint("new.txt", None);
    let made = exits(
        annals(&["prove", text(&s.log), "--from-size", "17", "--json"]),
        0,
    );
    let proof = s.file("cons.json", &made.stdout);
    let with = |proof: &Path, checkpoints: &[&Path]| {
        let mut args = vec!["check-proof", text(proof), "--vkey", &s.vkey];
        for checkpoint in checkpoints {
            args.extend(["--checkpoint", text(checkpoint)]);
        }
        annals(&args)
    };
    exits(with(&proof, &[&old, &new]), 0);
    exits(with(&proof, &[&new]), 0);
    // The earlier checkpoint alone does not establish the later head.
    let refused = exits(with(&proof, &[&old]), 1);
    assert!(
        stderr(&refused).contains("not established"),
        "{}",
        stderr(&refused)
    );
    // Every forged later size, its tree head recomputed, is refused against the checkpoints.
    let json: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
    let root = Digest::from_hex(json["root"].as_str().unwrap()).unwrap();
    for size in 513..=1024u64 {
        if size == 1000 {
            continue;
        }
        let mut forged = json.clone();
        forged["size"] = size.into();
        forged["tree_head"] = annals::merkle::TreeHead { size, root }
            .hash()
            .to_hex()
            .into();
        let forged = s.file("forged.json", forged.to_string().as_bytes());
        exits(with(&forged, &[&old, &new]), 1);
    }
}

#[test]
fn proof_and_export_files_of_the_blake3_tree_are_refused_saying_why() {
    let s = setup(5);
    let made = exits(
        annals(&["prove", text(&s.log), "--position", "1", "--json"]),
        0,
    );
    let mut json: serde_json::Value = serde_json::from_slice(&made.stdout).unwrap();
    assert_eq!(json["tree"].as_str(), Some("rfc6962"));
    json.as_object_mut().unwrap().remove("tree");
    let old = s.file("old.json", json.to_string().as_bytes());
    let refused = exits(annals(&["check-proof", text(&old)]), 2);
    assert!(
        stderr(&refused).contains("before log format v4"),
        "{}",
        stderr(&refused)
    );
    // An export file of version 1.
    let export = s.dir.join("e.export");
    exits(annals(&["export", text(&s.log), text(&export)]), 0);
    let mut bytes = std::fs::read(&export).unwrap();
    bytes[16..20].copy_from_slice(&1u32.to_le_bytes());
    std::fs::write(&export, &bytes).unwrap();
    let target = s.dir.join("copy.redb");
    let refused = exits(annals(&["import", text(&export), text(&target)]), 1);
    assert!(
        stderr(&refused).contains("before log format v4"),
        "{}",
        stderr(&refused)
    );
    assert!(!target.exists());
}

#[test]
fn a_tlog_proof_with_the_export_it_came_from_checks_the_record_itself() {
    let s = setup(60);
    let checkpoint = s.checkpoint("c.txt", None);
    let export = s.dir.join("log.export");
    exits(annals(&["export", text(&s.log), text(&export)]), 0);
    let made = exits(
        annals(&[
            "prove",
            text(&s.log),
            "--position",
            "41",
            "--checkpoint",
            text(&checkpoint),
        ]),
        0,
    );
    let proof = s.file("p.txt", &made.stdout);
    let with_export = |export: &Path| {
        annals(&[
            "check-proof",
            text(proof.as_path()),
            "--vkey",
            &s.vkey,
            "--export",
            text(export),
        ])
    };
    let checked = exits(with_export(&export), 0);
    assert!(
        stdout(&checked).contains("it is the record in"),
        "{}",
        stdout(&checked)
    );
    // The export of another log of as many records: its record 41 is not the proof's.
    let other = s.dir.join("other.redb");
    let store = Store::open(&other).unwrap();
    let events: Vec<NewEvent> = (0..60)
        .map(|i| NewEvent::new("other", i, b"y".to_vec()))
        .collect();
    store
        .append("other/c", ExpectedVersion::Any, &events)
        .unwrap()
        .expect_done();
    store.close().unwrap();
    let other_export = s.dir.join("other.export");
    exits(annals(&["export", text(&other), text(&other_export)]), 0);
    let refused = exits(with_export(&other_export), 1);
    assert!(
        stderr(&refused).contains("hashes to"),
        "{}",
        stderr(&refused)
    );
    // An export that does not hold the position.
    let short = s.dir.join("short.export");
    exits(
        annals(&["export", text(&s.log), text(&short), "--to", "10"]),
        0,
    );
    exits(with_export(&short), 2);
}

/// `check-proof --witness … --quorum N`: a tlog-proof counts only when at least N of the
/// named witnesses cosigned its checkpoint (c2sp.org/tlog-cosignature), and a bad cosignature
/// from a named witness refuses it.
#[test]
fn a_tlog_proof_needs_its_quorum_of_witness_cosignatures() {
    use annals::tlog::{Cosigner, Note};
    let s = setup(30);
    let checkpoint = s.checkpoint("c.txt", None);
    let note = std::fs::read_to_string(&checkpoint).unwrap();
    let body = note.split("\n\n").next().unwrap().to_owned() + "\n";
    // `keygen --cosigner` writes a witness's key, whose vkey is of type 0x04.
    let key = s.dir.join("w.key");
    let made = exits(
        annals(&[
            "keygen",
            "--cosigner",
            "--name",
            "witness.example/w0",
            text(&key),
        ]),
        0,
    );
    let vkey = Verifier::parse(stdout(&made).trim_end()).unwrap();
    assert!(vkey.is_cosigner());
    let cosigner = Cosigner::parse(std::fs::read_to_string(&key).unwrap().trim_end()).unwrap();
    assert_eq!(cosigner.verifier(), vkey);
    let witnesses: Vec<Cosigner> = (1..=3)
        .map(|i| Cosigner::from_seed(&format!("witness.example/w{i}"), [i; 32]).unwrap())
        .collect();
    // Two of the three cosign.
    let mut cosigned = Note::parse(&note).unwrap();
    for witness in &witnesses[..2] {
        cosigned.push_signature(witness.cosign(&body, 1_767_225_600).unwrap());
    }
    let cosigned = s.file("cosigned.txt", cosigned.to_text().as_bytes());
    let made = exits(
        annals(&[
            "prove",
            text(&s.log),
            "--position",
            "12",
            "--checkpoint",
            text(&cosigned),
        ]),
        0,
    );
    let proof = s.file("p.txt", &made.stdout);
    let vkeys: Vec<String> = witnesses.iter().map(|w| w.verifier().to_string()).collect();
    let check = |named: &[&String], quorum: Option<&str>| {
        let mut args = vec!["check-proof", text(&proof), "--vkey", &s.vkey];
        for vkey in named {
            args.extend(["--witness", vkey.as_str()]);
        }
        if let Some(quorum) = quorum {
            args.extend(["--quorum", quorum]);
        }
        annals(&args)
    };
    let valid = exits(check(&[&vkeys[0], &vkeys[1]], None), 0);
    assert!(
        stdout(&valid).contains("cosigned by witness.example/w2"),
        "{}",
        stdout(&valid)
    );
    exits(check(&[&vkeys[0], &vkeys[1], &vkeys[2]], Some("2")), 0);
    let refused = exits(check(&[&vkeys[0], &vkeys[1], &vkeys[2]], Some("3")), 1);
    assert!(
        stderr(&refused).contains("the quorum is 3"),
        "{}",
        stderr(&refused)
    );
    // A quorum larger than the witnesses named is a usage error; a log key given as a
    // witness too.
    exits(check(&[&vkeys[0]], Some("2")), 2);
    exits(check(&[&s.vkey], None), 2);
    // A flipped byte in a named witness's cosignature refuses the proof; unnamed, it is
    // ignored.
    let text_of = std::fs::read_to_string(&proof).unwrap();
    let line = text_of
        .lines()
        .find(|line| line.contains("witness.example/w1"))
        .unwrap();
    let at = line.len() - 10;
    let mut forged_line = line.to_owned();
    let swap = if &line[at..at + 1] == "A" { "B" } else { "A" };
    forged_line.replace_range(at..at + 1, swap);
    let forged = s.file("forged.txt", text_of.replace(line, &forged_line).as_bytes());
    let with = |named: &String| {
        annals(&[
            "check-proof",
            text(&forged),
            "--vkey",
            &s.vkey,
            "--witness",
            named,
            "--quorum",
            "1",
        ])
    };
    exits(with(&vkeys[0]), 1);
    exits(with(&vkeys[1]), 0);
}

#[test]
fn keygen_writes_a_0600_key_refuses_an_existing_file_and_prints_the_vkey() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("log.key");
    let run = |args: &[&str]| {
        std::process::Command::new(crate::ANNALS)
            .args(args)
            .output()
            .unwrap()
    };
    let path = key.to_str().unwrap();
    let made = run(&["keygen", "--name", "example.com/log", path]);
    assert!(made.status.success());
    let vkey = String::from_utf8(made.stdout).unwrap();
    let signer =
        annals::tlog::Signer::parse(std::fs::read_to_string(&key).unwrap().trim_end()).unwrap();
    assert_eq!(signer.verifier().to_string(), vkey.trim_end());
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let again = run(&["keygen", "--name", "example.com/log", path]);
    assert_eq!(again.status.code(), Some(2));
    let stderr = String::from_utf8(again.stderr).unwrap();
    assert!(stderr.contains("--force"), "{stderr}");
    assert_eq!(
        annals::tlog::Signer::parse(std::fs::read_to_string(&key).unwrap().trim_end())
            .unwrap()
            .verifier(),
        signer.verifier()
    );
    let bad = run(&[
        "keygen",
        "--name",
        "a+b",
        dir.path().join("k2").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(2));
}
