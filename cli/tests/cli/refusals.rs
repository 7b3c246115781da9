//! Every refused command leaves the log as it was, byte for byte, saying why with the exit
//! code and `--json` kind the refusal is documented with: each decided before the log is
//! opened for writing (redb rewrites its header and allocator state on a writable open). The
//! library's side of the same refusals is `tests/it/refusals.rs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use annals::testing::forgery::{
    export_range, files_named, forged_export, lease_event_from, undecodable_at,
};
use annals::testing::setup::ExpectDone;
use annals::{Direction, ExpectedVersion, NewEvent, Position, Record, Store};
use tempfile::TempDir;

/// A demo log of about 300 records (every domain writes), its folder, and its records.
fn demo_log() -> (TempDir, PathBuf, Vec<Record>) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.redb");
    let records = annals::testing::setup::demo_log_at(&source, 300).unwrap();
    (dir, source, records)
}

#[test]
fn import_of_an_undecodable_domain_payload_exits_1_naming_its_position_and_makes_no_log() {
    let (dir, source, records) = demo_log();
    let at = lease_event_from(&records, 20);
    let file = dir.path().join("forged");
    forged_export(&source, &records, (0, 200), &file, undecodable_at(at));
    let target = dir.path().join("copy.redb");
    let output = Command::new(crate::ANNALS)
        .arg("import")
        .arg(&file)
        .arg(&target)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("position {at}")), "{stderr}");
    assert!(!target.exists());
    let leftovers = files_named(dir.path(), "copy.redb");
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn an_endless_payload_file_is_refused_over_the_limit_and_no_log_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("log.redb");
    let big = dir.path().join("big");
    fs::write(&big, vec![b'x'; (1 << 20) + 5]).unwrap();
    let append = |payload: &str| {
        Command::new(crate::ANNALS)
            .arg("append")
            .arg(&db)
            .args(["s", "test.big", payload])
            .output()
            .unwrap()
    };
    let mut sources = vec![(format!("@{}", big.display()), "is 1048581 bytes, over", 1)];
    // A device is not read at all: only a regular file is a payload file.
    if Path::new("/dev/zero").exists() {
        sources.push(("@/dev/zero".into(), "not a regular file", 2));
    }
    for (payload, said, exit) in sources {
        let output = append(&payload);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(exit), "{payload}: {stderr}");
        assert!(stderr.contains(said), "{payload}: {stderr}");
        assert!(!stderr.contains(" 0 bytes"), "{payload}: {stderr}");
        assert!(!db.exists(), "{payload}: a refused append made a log");
    }
}

/// One refused command line: `{db}` in its arguments is the log (a fresh copy of the same
/// log for each refusal), `{dir}` the folder the test's files are in.
struct Refusal {
    args: &'static [&'static str],
    /// The exit code.
    exit: i32,
    /// The `kind` of its `--json` error, or `None` for a command without `--json`.
    kind: Option<&'static str>,
    /// Words its error must say (a path, a position).
    said: &'static str,
}

/// A log every writing command can refuse on: 150 records of every domain, three keyed
/// events (`keyed`, keys `k0`..`k2`) and a signed checkpoint of size 100; beside it the export
/// files, key files and paths the refusals need.
struct Refusals {
    dir: TempDir,
    log: std::path::PathBuf,
    /// `{vkey}`: the verifier key of `signer.key`, a log's; `{cosigner}`: that of
    /// `cosigner.key`, a witness's.
    vkeys: [String; 2],
    /// `{busy}`: an address something listens on already.
    busy: std::net::TcpListener,
}

impl Refusals {
    fn new() -> Refusals {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source.redb");
        let store = Store::open(&source).unwrap();
        for n in 0..3u64 {
            let event = NewEvent::new("test.keyed", 1, b"first".to_vec())
                .with_idempotency_key(format!("k{n}"));
            store
                .append("keyed", ExpectedVersion::Any, &[event])
                .unwrap()
                .expect_done();
        }
        annals::testing::internals::demo::run(&store, 300, |_| {}).unwrap();
        let records = store
            .snapshot()
            .unwrap()
            .read_all(Position(0), Direction::Forward, usize::MAX)
            .unwrap();
        drop(store);
        let log = dir.path().join("log.redb");
        let first = dir.path().join("first.export");
        export_range(&source, &first, 0, 150);
        annals::maintenance::Import::run(&first, &log, &mut |_, _| {})
            .unwrap()
            .expect_done();
        let at = |name: &str| dir.path().join(name);
        // Exports that do not continue the log, or that it could not take.
        export_range(&source, &at("gap.export"), 200, 250);
        export_range(&source, &at("damaged.export"), 150, 200);
        let mut bytes = fs::read(at("damaged.export")).unwrap();
        let flip = bytes.len() - 16 - 8 - 64 - 10;
        bytes[flip] ^= 0x01;
        fs::write(at("damaged.export"), &bytes).unwrap();
        let undecodable = lease_event_from(&records, 160);
        forged_export(
            &source,
            &records,
            (150, 200),
            &at("undecodable.export"),
            undecodable_at(undecodable),
        );
        let keyed = |positions: [u64; 2], key: &'static str| {
            move |record: &Record| {
                positions.contains(&record.position.0).then(|| {
                    let event = NewEvent {
                        kind: record.kind.clone(),
                        schema: record.schema,
                        at_ms: record.at_ms,
                        idempotency_key: Some(key.to_owned()),
                        payload: record.payload.clone(),
                    };
                    (event, record.version.0)
                })
            }
        };
        let (used, repeated) = (at("key-used.export"), at("key-repeated.export"));
        forged_export(
            &source,
            &records,
            (150, 200),
            &used,
            keyed([170, 170], "k0"),
        );
        forged_export(
            &source,
            &records,
            (150, 200),
            &repeated,
            keyed([170, 180], "k9"),
        );
        fs::write(at("exists"), b"not to be replaced").unwrap();
        fs::write(at("big"), vec![b'x'; (1 << 20) + 1]).unwrap();
        let keygen = |args: &[&str], file: &str| {
            let keygen = Command::new(crate::ANNALS)
                .arg("keygen")
                .args(args)
                .arg(at(file))
                .output()
                .unwrap();
            assert!(keygen.status.success(), "{keygen:?}");
            String::from_utf8(keygen.stdout).unwrap().trim().to_owned()
        };
        let vkeys = [
            keygen(&["--name", "example.com/log"], "signer.key"),
            keygen(&["--name", "example.com/w", "--cosigner"], "cosigner.key"),
        ];
        let signed = Command::new(crate::ANNALS)
            .arg("checkpoint")
            .arg(&log)
            .arg("--key")
            .arg(at("signer.key"))
            .args(["--size", "100"])
            .output()
            .unwrap();
        assert!(signed.status.success(), "{signed:?}");
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        Refusals {
            dir,
            log,
            vkeys,
            busy,
        }
    }

    /// Runs `refusal` against a copy of the log and checks its exit, its kind, its words, and
    /// that the copy's bytes are the log's: what it did otherwise, in words.
    fn check(&self, refusal: &Refusal) -> Option<String> {
        let copy = self.dir.path().join("refused.redb");
        fs::copy(&self.log, &copy).unwrap();
        let before = fs::read(&copy).unwrap();
        let busy = self.busy.local_addr().unwrap().to_string();
        let names = [
            ("{dir}", self.dir.path().display().to_string()),
            ("{db}", copy.display().to_string()),
            ("{vkey}", self.vkeys[0].clone()),
            ("{cosigner}", self.vkeys[1].clone()),
            ("{busy}", busy),
        ];
        let named = |text: &str| {
            names.iter().fold(text.to_owned(), |text, (name, value)| {
                text.replace(name, value)
            })
        };
        let args: Vec<String> = refusal.args.iter().map(|arg| named(arg)).collect();
        let output = Command::new(crate::ANNALS).args(&args).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let said = named(refusal.said);
        let kind = refusal.kind.map(|_| {
            serde_json::from_str::<serde_json::Value>(stderr.trim())
                .map(|error| error["kind"].clone())
                .unwrap_or_default()
        });
        let mut wrong = Vec::new();
        if output.status.code() != Some(refusal.exit) {
            wrong.push(format!("exit {:?}", output.status.code()));
        }
        if !stderr.contains(&said) {
            wrong.push(format!("not saying {said:?}"));
        }
        if kind.is_some_and(|kind| kind != refusal.kind.unwrap_or_default()) {
            wrong.push("another kind".to_owned());
        }
        if fs::read(&copy).unwrap() != before {
            wrong.push("the log's bytes changed".to_owned());
        }
        fs::remove_file(&copy).unwrap();
        (!wrong.is_empty())
            .then(|| format!("annals {}: {}: {stderr}", args.join(" "), wrong.join(", ")))
    }
}

/// Every refusal of every command that writes a log: each decided before the log is opened
/// for writing (redb rewrites its header and allocator state on a writable open), so the
/// log's bytes are as they were.
const REFUSALS: &[Refusal] = &[
    // append
    Refusal {
        args: &["append", "{db}", "s", "lease.acquired", "p", "--json"],
        exit: 1,
        kind: Some("refused"),
        said: "lease.acquired",
    },
    Refusal {
        args: &["append", "{db}", "s", "annals.cut", "p", "--json"],
        exit: 1,
        kind: Some("refused"),
        said: "annals.cut",
    },
    Refusal {
        args: &[
            "append", "{db}", "s", "test.k", "p", "--expect", "5", "--json",
        ],
        exit: 1,
        kind: Some("refused"),
        said: "expected",
    },
    Refusal {
        args: &[
            "append", "{db}", "keyed", "test.k", "p", "--expect", "none", "--json",
        ],
        exit: 1,
        kind: Some("refused"),
        said: "expected",
    },
    Refusal {
        args: &[
            "append",
            "{db}",
            "keyed",
            "test.keyed",
            "other",
            "--key",
            "k0",
            "--json",
        ],
        exit: 1,
        kind: Some("refused"),
        said: "k0",
    },
    Refusal {
        args: &[
            "append",
            "{db}",
            "keyed",
            "test.keyed",
            "other",
            "--key",
            "k1",
            "--expect",
            "0",
            "--json",
        ],
        exit: 1,
        kind: Some("refused"),
        said: "k1",
    },
    Refusal {
        args: &["append", "{db}", "s", "test.big", "@{dir}/big", "--json"],
        exit: 1,
        kind: Some("invalid_input"),
        said: "1048577",
    },
    // archive
    Refusal {
        args: &["archive", "{db}", "--before", "100000", "{dir}/a", "--json"],
        exit: 1,
        kind: Some("refused"),
        said: "100000",
    },
    Refusal {
        args: &[
            "archive",
            "{db}",
            "--before",
            "10",
            "{dir}/exists",
            "--json",
        ],
        exit: 2,
        kind: Some("exists"),
        said: "{dir}/exists",
    },
    Refusal {
        args: &["archive", "{db}", "--before", "10", "{db}", "--json"],
        exit: 2,
        kind: Some("store_file"),
        said: "{db}",
    },
    Refusal {
        args: &[
            "archive",
            "{db}",
            "--before",
            "10",
            "{dir}/missing/a",
            "--json",
        ],
        exit: 2,
        kind: Some("not_found"),
        said: "{dir}/missing",
    },
    Refusal {
        args: &["archive", "{db}", "--before", "10", "{dir}", "--json"],
        exit: 2,
        kind: Some("is_a_directory"),
        said: "{dir}",
    },
    Refusal {
        args: &["archive", "{db}", "--before", "10", "{dir}/..", "--json"],
        exit: 2,
        kind: Some("is_a_directory"),
        said: "{dir}/..",
    },
    // import
    Refusal {
        args: &["import", "{dir}/damaged.export", "{db}", "--json"],
        exit: 1,
        kind: Some("corrupt"),
        said: "damaged.export",
    },
    Refusal {
        args: &["import", "{dir}/gap.export", "{db}", "--json"],
        exit: 1,
        kind: Some("refused"),
        said: "200",
    },
    Refusal {
        args: &["import", "{dir}/undecodable.export", "{db}", "--json"],
        exit: 1,
        kind: Some("corrupt"),
        said: "undecodable.export",
    },
    Refusal {
        args: &["import", "{dir}/key-used.export", "{db}", "--json"],
        exit: 1,
        kind: Some("corrupt"),
        said: "k0",
    },
    Refusal {
        args: &["import", "{dir}/key-repeated.export", "{db}", "--json"],
        exit: 1,
        kind: Some("corrupt"),
        said: "k9",
    },
    Refusal {
        args: &["import", "{db}", "{db}", "--json"],
        exit: 2,
        kind: Some("invalid_input"),
        said: "same file",
    },
    Refusal {
        args: &["import", "{dir}/no.export", "{db}", "--json"],
        exit: 2,
        kind: Some("not_found"),
        said: "{dir}/no.export",
    },
    // rebuild
    Refusal {
        args: &["rebuild", "{db}", "--projection", "nope", "--json"],
        exit: 2,
        kind: Some("io"),
        said: "nope",
    },
    Refusal {
        args: &["rebuild", "{db}", "--archive", "{dir}/missing", "--json"],
        exit: 2,
        kind: Some("not_found"),
        said: "{dir}/missing",
    },
    Refusal {
        args: &["rebuild", "{db}", "--archive", "{db}", "--json"],
        exit: 2,
        kind: Some("invalid_input"),
        said: "never cut",
    },
    // demo
    Refusal {
        args: &["demo", "{db}", "--json"],
        exit: 2,
        kind: Some("exists"),
        said: "{db}",
    },
    Refusal {
        args: &[
            "demo",
            "{db}",
            "--force",
            "--durability",
            "deferred",
            "--json",
        ],
        exit: 2,
        kind: Some("usage"),
        said: "exclusive",
    },
    // checkpoint
    Refusal {
        args: &["checkpoint", "{db}", "--key", "{dir}/no.key"],
        exit: 2,
        kind: None,
        said: "{dir}/no.key",
    },
    Refusal {
        args: &[
            "checkpoint",
            "{db}",
            "--key",
            "{dir}/signer.key",
            "--size",
            "50",
        ],
        exit: 2,
        kind: None,
        said: "100",
    },
    Refusal {
        args: &[
            "checkpoint",
            "{db}",
            "--key",
            "{dir}/signer.key",
            "--size",
            "100000",
        ],
        exit: 2,
        kind: None,
        said: "100000",
    },
    // tiles
    Refusal {
        args: &[
            "tiles",
            "{db}",
            "{dir}/tiles",
            "--key",
            "{dir}/no.key",
            "--json",
        ],
        exit: 2,
        kind: Some("not_found"),
        said: "{dir}/no.key",
    },
    // witness serve (its state log) and witness request
    Refusal {
        args: &[
            "witness",
            "serve",
            "{db}",
            "--key",
            "{dir}/cosigner.key",
            "--log",
            "{vkey}",
            "--listen",
            "{busy}",
        ],
        exit: 2,
        kind: None,
        said: "cannot listen on {busy}",
    },
    Refusal {
        args: &[
            "witness",
            "serve",
            "{db}",
            "--key",
            "{dir}/cosigner.key",
            "--log",
            "{cosigner}",
        ],
        exit: 2,
        kind: None,
        said: "example.com/w",
    },
    Refusal {
        args: &[
            "witness",
            "serve",
            "{db}",
            "--key",
            "{dir}/no.key",
            "--log",
            "{vkey}",
        ],
        exit: 2,
        kind: None,
        said: "{dir}/no.key",
    },
    Refusal {
        args: &[
            "witness",
            "request",
            "{db}",
            "--key",
            "{dir}/signer.key",
            "--witness",
            "http://127.0.0.1:9={cosigner}",
            "--quorum",
            "2",
            "--json",
        ],
        exit: 2,
        kind: Some("invalid_input"),
        said: "--quorum 2",
    },
];

#[test]
fn every_refused_command_leaves_the_log_bytes_as_they_were() {
    let refusals = Refusals::new();
    let mut checked: Vec<&Refusal> = REFUSALS.iter().collect();
    // Where a path names no file of this test's: the kernel's.
    let kernel = Refusal {
        args: &[
            "archive",
            "{db}",
            "--before",
            "10",
            "/proc/version",
            "--json",
        ],
        exit: 2,
        kind: Some("exists"),
        said: "/proc/version",
    };
    if Path::new("/proc/version").exists() {
        checked.push(&kernel);
    }
    // An upgrade of a log already of this format is a read.
    let upgrade = Refusal {
        args: &["upgrade", "{db}", "--json"],
        exit: 0,
        kind: None,
        said: "",
    };
    checked.push(&upgrade);
    let wrong: Vec<String> = checked
        .iter()
        .filter_map(|refusal| refusals.check(refusal))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        checked.len(),
        wrong.join("\n")
    );
}

#[test]
fn an_append_refused_on_a_missing_log_makes_no_log() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.redb");
    let refusals: [&[&str]; 3] = [
        &["s", "lease.acquired", "p"],
        &["s", "test.k", "p", "--expect", "3"],
        &["s", "test.k", "p", "--expect", "exists"],
    ];
    for args in refusals {
        let output = Command::new(crate::ANNALS)
            .arg("append")
            .arg(&db)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?}");
        assert!(
            stderr.contains(args[1]) || stderr.contains("expected"),
            "{args:?}: {stderr}"
        );
        assert!(!db.exists(), "{args:?}: a refused append made a log");
    }
}

#[test]
fn a_compaction_refused_beside_a_reader_leaves_the_log_bytes_as_they_were() {
    use std::io::BufRead;
    let (_dir, source, _) = demo_log();
    let bytes = fs::read(&source).unwrap();
    let mut reader = Command::new(crate::ANNALS)
        .arg("tail")
        .arg(&source)
        .args(["--from", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Its first record printed, the reader has the log open.
    let mut line = String::new();
    let mut out = std::io::BufReader::new(reader.stdout.take().unwrap());
    out.read_line(&mut line).unwrap();
    assert!(!line.is_empty(), "the reader printed nothing");
    let compact = Command::new(crate::ANNALS)
        .arg("compact")
        .arg(&source)
        .arg("--json")
        .output()
        .unwrap();
    reader.kill().unwrap();
    reader.wait().unwrap();
    let stderr = String::from_utf8_lossy(&compact.stderr);
    assert_eq!(compact.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("\"kind\":\"held\""), "{stderr}");
    assert_eq!(
        fs::read(&source).unwrap(),
        bytes,
        "the refused compaction wrote"
    );
}
