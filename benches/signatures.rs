//! What ML-DSA-44 costs beside Ed25519 (issue 56): a log signing its checkpoint, a witness
//! cosigning it, a verifier opening it, each timed, and the bytes of keys, signature lines and
//! a checkpoint with one cosignature. Prints the table of `docs/performance.md`'s
//! "Signatures" section; `-- --history` appends each figure to
//! `docs/performance-history.csv`, a row each.
//!
//! `cargo bench --bench signatures [-- --history]`

#[path = "support/history.rs"]
mod history;

use std::hint::black_box;
use std::time::{Duration, Instant};

use annals::tlog::{Checkpoint, Cosigner, Note, Signer, Verifier};

/// How long one round of an operation runs.
const ROUND: Duration = Duration::from_millis(300);

/// Rounds of each operation; the median round is reported.
const ROUNDS: usize = 5;

/// The median over [`ROUNDS`] rounds of `op`'s microseconds of CPU per call: the thread's
/// own time on a core (`/proc/thread-self/schedstat`), so that other work on the shared
/// machine does not count.
fn micros(mut op: impl FnMut()) -> f64 {
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            let cpu_start = cpu_ns();
            let mut calls = 0u32;
            while start.elapsed() < ROUND {
                op();
                calls += 1;
            }
            (cpu_ns() - cpu_start) as f64 / 1e3 / f64::from(calls)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

/// The nanoseconds this thread has run on a core (the first field of its schedstat).
fn cpu_ns() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux's schedstat");
    let first = stat.split_whitespace().next().expect("a first field");
    first.parse().expect("nanoseconds")
}

/// One algorithm's keys: the log's signer and a witness's cosigner.
struct Keys {
    name: &'static str,
    log: Signer,
    witness: Cosigner,
}

/// The figures of one algorithm.
fn measure(keys: &Keys) -> serde_json::Value {
    let checkpoint = Checkpoint {
        origin: "example.com/log".into(),
        size: 1_000_000,
        root: [0xab; 32],
        extensions: Vec::new(),
    };
    let body = checkpoint.body().expect("a checkpoint body");
    let signed = checkpoint.sign(&keys.log).expect("the log signs");
    let line = keys.witness.cosign(&body, 1_700_000_000).expect("cosigns");
    let mut note = Note::parse(&signed).expect("a note");
    note.push_signature(line.clone());
    let cosigned = note.to_text();
    let log_key = keys.log.verifier();
    let verifiers: Vec<Verifier> = vec![log_key.clone(), keys.witness.verifier()];
    // ML-DSA signs by rejection sampling, and deterministically: one message always takes the
    // same number of tries, so each call signs another size (and cosigns at another time).
    let mut next = checkpoint.clone();
    let sign_us = micros(|| {
        next.size += 1;
        black_box(next.sign(&keys.log).expect("signs"));
    });
    let mut time = 1_700_000_000;
    let cosign_us = micros(|| {
        time += 1;
        black_box(keys.witness.cosign(&body, time).expect("cosigns"));
    });
    let verify_us = micros(|| {
        black_box(Checkpoint::open(&signed, std::slice::from_ref(&log_key)).expect("opens"));
    });
    let verify_cosigned_us = micros(|| {
        black_box(Checkpoint::open(&cosigned, &verifiers).expect("opens"));
    });
    let key_text = keys.log.to_private_key_text();
    let parse_key_us = micros(|| {
        black_box(Signer::parse(&key_text).expect("parses"));
    });
    serde_json::json!({
        "sign_checkpoint_us": round(sign_us),
        "cosign_us": round(cosign_us),
        "verify_checkpoint_us": round(verify_us),
        "verify_cosigned_checkpoint_us": round(verify_cosigned_us),
        "read_key_file_us": round(parse_key_us),
        "signature_line_bytes": line.to_line().len(),
        "vkey_bytes": keys.witness.verifier().to_string().len(),
        "cosigned_checkpoint_bytes": cosigned.len(),
    })
}

fn round(micros: f64) -> f64 {
    (micros * 10.0).round() / 10.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let algorithms = [
        Keys {
            name: "ed25519",
            log: Signer::from_seed("example.com/log", [1; 32]).expect("a key"),
            witness: Cosigner::from_seed("witness.example/w1", [2; 32]).expect("a key"),
        },
        Keys {
            name: "ml_dsa_44",
            log: Signer::ml_dsa_44_from_seed("example.com/log", [1; 32]).expect("a key"),
            witness: Cosigner::ml_dsa_44_from_seed("witness.example/w1", [2; 32]).expect("a key"),
        },
    ];
    let mut report = serde_json::Map::new();
    for keys in &algorithms {
        report.insert(keys.name.to_owned(), measure(keys));
    }
    let report = serde_json::Value::Object(report);
    let rows = [
        ("a log signs its checkpoint", "sign_checkpoint_us", "µs"),
        ("a witness cosigns it", "cosign_us", "µs"),
        (
            "a verifier opens it (log's signature)",
            "verify_checkpoint_us",
            "µs",
        ),
        (
            "… with one cosignature too",
            "verify_cosigned_checkpoint_us",
            "µs",
        ),
        ("a key file read (key expanded)", "read_key_file_us", "µs"),
        ("a signature line", "signature_line_bytes", "bytes"),
        ("a vkey", "vkey_bytes", "bytes"),
        (
            "a checkpoint with its cosignature",
            "cosigned_checkpoint_bytes",
            "bytes",
        ),
    ];
    println!("| | Ed25519 | ML-DSA-44 | ratio |\n|---|---:|---:|---:|");
    for (row, key, unit) in rows {
        let ed = report["ed25519"][key].as_f64().expect("a figure");
        let pq = report["ml_dsa_44"][key].as_f64().expect("a figure");
        println!("| {row} ({unit}) | {ed} | {pq} | {:.1}× |", pq / ed);
    }
    let table = "Signatures: Ed25519 beside ML-DSA-44";
    history::append_if_asked(&report, "signatures", &[], table, &args);
}
