//! Personal payloads and erasure on the command line: `append --subject`, `erase`, and `log`
//! and `history` showing a personal payload opened while its key stands and as erased after;
//! `keys export` and `keys import`, the key export for a trusted replica.

use std::os::unix::fs::PermissionsExt;

use crate::{Log, annals, exits, json, path, stderr, stdout};

/// The payload personal to `alice` in these tests.
const PERSONAL: &str = "{\"email\":\"ada@example.com\"}";

impl Log {
    /// `log --json` lines, parsed.
    fn lines(&self, command: &str, args: &[&str]) -> Vec<serde_json::Value> {
        let mut all = vec!["--json"];
        all.extend(args);
        self.ok(command, &all).lines().map(json).collect()
    }
}

#[test]
fn log_shows_a_personal_payload_opened_then_erased_and_never_its_ciphertext() {
    let log = Log::new();
    let at = ["--at-ms", "1700000000000"];
    let personal = [
        &["people/alice", "email.set", PERSONAL, "--subject", "alice"][..],
        &at,
    ]
    .concat();
    assert_eq!(log.ok("append", &personal).trim(), "0");
    let plain = [&["people/bob", "note", "plain"][..], &at].concat();
    assert_eq!(log.ok("append", &plain).trim(), "1");

    let text = log.ok("log", &[]);
    assert!(
        text.lines()
            .next()
            .is_some_and(|line| line.ends_with("personal(alice) {\"email\":\"ada@example.com\"}")),
        "{text}"
    );
    let records = log.lines("log", &[]);
    assert_eq!(records[0]["payload_encoding"], "personal");
    assert_eq!(records[0]["payload"]["subject"], "alice");
    assert_eq!(records[0]["payload"]["encoding"], "json");
    assert_eq!(records[0]["payload"]["data"]["email"], "ada@example.com");
    assert_eq!(records[1]["payload"], "plain");

    let erased = log.lines("erase", &["alice", "--at-ms", "1700000000001"]);
    assert_eq!(erased[0]["position"], 2);
    assert_eq!(erased[0]["appended"], true);
    assert_eq!(erased[0]["key_destroyed"], true);

    let text = log.ok("log", &[]);
    assert!(!text.contains("ada@example.com"), "{text}");
    assert!(
        text.lines()
            .next()
            .is_some_and(|line| line.ends_with("erased(alice)")),
        "{text}"
    );
    let records = log.lines("log", &[]);
    assert_eq!(records[0]["payload_encoding"], "erased");
    assert_eq!(records[0]["payload"]["erased"], true);
    assert_eq!(records[2]["kind"], "subject.erased");
    assert_eq!(records[2]["stream"], "annals.erased/alice");
    assert_eq!(records[2]["payload"], "alice");
    let history = log.lines("history", &["stream:people/alice"]);
    assert_eq!(history.len(), 1);
    assert_eq!(history[0]["payload_encoding"], "erased");
    assert!(log.ok("verify", &[]).starts_with("sound"));

    // Erasing again appends nothing; a personal append for the subject is refused (exit 1)
    // and leaves the log's bytes as they were.
    assert_eq!(log.ok("erase", &["alice"]).trim(), "2 (erased before)");
    let before = std::fs::read(&log.db).expect("the log");
    let refused = exits(log.run("append", &personal), 1);
    assert!(
        stderr(&refused).contains("was erased at position 2"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(std::fs::read(&log.db).expect("the log"), before);
}

#[test]
fn a_bad_subject_or_a_raw_erasure_record_is_refused_naming_what_is_wrong() {
    let log = Log::new();
    let refused = exits(log.run("append", &["s", "k", "x", "--subject", "a/b"]), 2);
    assert!(
        stderr(&refused).contains("subject \"a/b\""),
        "{}",
        stderr(&refused)
    );
    assert!(!log.db.exists(), "a refused append makes no log");
    log.ok("append", &["s", "k", "x"]);
    let refused = exits(log.run("append", &["annals.erased/alice", "k", "x"]), 1);
    assert!(
        stderr(&refused).contains("only `erase` appends"),
        "{}",
        stderr(&refused)
    );
    let refused = exits(log.run("append", &["s", "subject.erased", "alice"]), 1);
    assert!(
        stderr(&refused).contains("only `erase` appends"),
        "{}",
        stderr(&refused)
    );
    let refused = exits(log.run("erase", &[""]), 2);
    assert!(
        stderr(&refused).contains("it is empty"),
        "{}",
        stderr(&refused)
    );
}

#[test]
fn keys_export_and_import_let_a_replica_read_until_it_erases_and_never_carry_an_erased_key() {
    let log = Log::new();
    for (subject, payload) in [("alice", PERSONAL), ("bob", "bob's"), ("carol", "carol's")] {
        let stream = format!("people/{subject}");
        log.ok("append", &[&stream, "note", payload, "--subject", subject]);
    }
    log.ok("erase", &["carol"]);
    let replica = log.dir.path().join("replica.redb");
    log.ok("backup", &[path(&replica)]);
    let first_payload = |db: &str| -> serde_json::Value {
        let out = exits(annals(&["log", db, "--json"]), 0);
        json(stdout(&out).lines().next().expect("a record"))
    };
    assert_eq!(first_payload(path(&replica))["payload_encoding"], "erased");

    let export = log.dir.path().join("keys.export");
    let exported = exits(annals(&["keys", "export", log.path(), path(&export)]), 0);
    assert_eq!(stdout(&exported), "alice\nbob\n", "never carol's");
    let mode = std::fs::metadata(&export).unwrap().permissions().mode();
    assert_eq!(mode & 0o177, 0, "mode {mode:o}");
    // Never over a file there.
    let before = std::fs::read(&export).unwrap();
    let again = exits(annals(&["keys", "export", log.path(), path(&export)]), 2);
    assert!(
        stderr(&again).contains("a file is there"),
        "{}",
        stderr(&again)
    );
    assert_eq!(std::fs::read(&export).unwrap(), before);

    let imported = exits(
        annals(&["keys", "import", path(&replica), path(&export), "--json"]),
        0,
    );
    let imported = json(stdout(&imported).trim());
    assert_eq!(imported["imported"], serde_json::json!(["alice", "bob"]));
    let read = first_payload(path(&replica));
    assert_eq!(read["payload_encoding"], "personal");
    assert_eq!(read["payload"]["data"]["email"], "ada@example.com");

    // The replica's own erasure destroys its copy; importing the export again brings
    // nothing back.
    exits(annals(&["erase", path(&replica), "alice"]), 0);
    let again = exits(
        annals(&["keys", "import", path(&replica), path(&export)]),
        0,
    );
    assert_eq!(stdout(&again), "", "nothing imported");
    assert_eq!(first_payload(path(&replica))["payload_encoding"], "erased");
    assert_eq!(first_payload(log.path())["payload_encoding"], "personal");

    // A file that is not a key export is refused, naming it, and nothing is imported.
    let damaged = log.dir.path().join("damaged.export");
    std::fs::write(&damaged, b"annals.keyx\x01 and then nothing sound").unwrap();
    let refused = exits(annals(&["keys", "import", log.path(), path(&damaged)]), 1);
    assert!(
        stderr(&refused).contains("not a key export"),
        "{}",
        stderr(&refused)
    );
}
