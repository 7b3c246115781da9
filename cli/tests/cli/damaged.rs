//! What the commands say of logs damaged or forged beneath the store (the damage made through
//! the library's test support, `annals::testing::damage` and `forgery`): each exits 1 naming
//! the position or key the damage is at, and prints nothing the damage forged. The library's
//! side of each damage is in its own tests (`tests/it`: corruption, tiling, open, verify,
//! invariants, journal_crash).

use annals::leases::lease_stream;
use annals::testing::damage;
use annals::testing::forgery::{self, SUPERSEDED_AT_MS, regrant_to_a, superseded_lease};
use annals::testing::internals::forge::append_sealed_unapplied;
use annals::{Record, Store, command::DomainEvent as _};

use crate::{Log, exits, json, stderr, stdout};

/// Runs `annals <command> <log> <args…>`, checks that it exits 1, and returns what it printed
/// on standard output and error.
fn refused(log: &Log, command: &str, args: &[&str]) -> (String, String) {
    let output = exits(log.run(command, args), 1);
    (stdout(&output), stderr(&output))
}

/// Issue 29, point 5: a command that prints a record's hash has checked that record against
/// it. A payload rewritten inside its segment under a recomputed segment digest makes `log`,
/// `tail`, `history` and `prove` exit 1 naming its position and print no forged payload. In
/// both record formats.
#[test]
fn a_payload_rewritten_under_a_fresh_segment_digest_is_refused_by_every_reading_command() {
    for version in [1, 2] {
        let log = Log::new();
        damage::log_with_a_payload_forged_at_17(&log.db, version);
        let runs: [&[&str]; 5] = [
            &["log"],
            &["log", "--json"],
            // Bounded: there are 40 records, so a tail that took the damaged one would end.
            &["tail", "--from", "0", "--count", "40"],
            &["history", "stream:s"],
            &["prove", "--position", "17"],
        ];
        for args in runs {
            let (printed, said) = refused(&log, args[0], &args[1..]);
            assert!(said.contains("position 17"), "v{version} {args:?}: {said}");
            assert!(
                !printed.contains("forged"),
                "v{version} {args:?}: {printed}"
            );
        }
    }
}

/// A segment moved past the head (a flipped bit of its key) leaves a hole at 12: `log`, `log
/// --from`, `state --at` and `rebuild` exit 1 naming it, the records before it listed, no
/// state shown.
#[test]
fn the_command_line_refuses_to_scan_past_a_hole_naming_its_position() {
    let log = Log::new();
    annals::testing::setup::log_of_commits(&log.db, 10, 3);
    damage::move_segment(&log.db, 12, 12 ^ (1 << 40));
    let refused = |command: &str, args: &[&str]| {
        let (printed, message) = refused(&log, command, args);
        assert!(
            message.contains("position 12"),
            "{command} {args:?}: {message}"
        );
        printed
    };
    let listed = refused("log", &[]);
    assert_eq!(
        listed.lines().count(),
        12,
        "the records before the hole are listed"
    );
    refused("log", &["--from", "5"]);
    refused("log", &["--from", "12"]);
    let state = refused("state", &["leases", "--json", "--at", "20"]);
    assert_eq!(state, "", "no state is shown");
    refused("rebuild", &[]);
}

/// A flip that makes redb panic, which the library catches as a damaged file, reaches the user
/// as one line naming the damage, exit 1, with no panic message or backtrace even when
/// `RUST_BACKTRACE` asks for one.
#[test]
fn a_panic_the_store_catches_reaches_the_user_as_one_typed_error_without_a_backtrace() {
    let log = Log::new();
    damage::demo_log_redb_panics_on(&log.dir.path().join("clean.redb"), &log.db);
    let output = crate::command(&["log", log.path()])
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run annals");
    let stderr = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with("annals: damaged file structure"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{stderr}"
    );
}

/// A row of a projection changed past the first pages of verify's walk, and a later one
/// removed: `verify --json` exits 1 and its message names the table and the first differing
/// key, not the later one, and says how it differs.
#[test]
fn verify_names_the_first_differing_key_of_a_projection_walked_page_by_page() {
    let log = Log::new();
    annals::testing::setup::paged_lease_log(&log.db);
    let keys = damage::tamper_leases(&log.db, &[530], &[610]);
    let output = exits(log.run("verify", &["--json"]), 1);
    let report = json(&stdout(&output));
    let message = report["problem"]["message"].as_str().expect("a message");
    let first = annals::testing::internals::hash::hex(&keys[0]);
    let later = annals::testing::internals::hash::hex(&keys[1]);
    assert!(message.contains("leases.held"), "{message}");
    assert!(message.contains(&first), "{message}");
    assert!(!message.contains(&later), "{message}");
    assert!(message.contains("other value bytes"), "{message}");
}

/// A forged export regranting a superseded lease: `import` exits 1 naming the forged record's
/// position and the rule it breaks and writes no log; the same records written beneath the
/// projections, `verify` reports the log unsound at that position with that rule.
#[test]
fn the_cli_import_exits_1_naming_position_and_rule_and_verify_reports_the_forged_log() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let base = dir.path().join("base.redb");
    {
        let store = Store::open(&base).expect("a new log");
        superseded_lease(&store);
        assert!(
            annals::Audit::of(&store)
                .verify()
                .expect("verify")
                .is_sound()
        );
    }
    let file = dir.path().join("regrant");
    let regrant = (
        lease_stream("r"),
        regrant_to_a(1).to_new_event(SUPERSEDED_AT_MS + 1_500),
    );
    let first = forgery::forged_continuation(&base, 0, &[regrant], &file);
    let target = dir.path().join("target.redb");
    let output = exits(
        crate::annals(&["import", crate::path(&file), crate::path(&target)]),
        1,
    );
    let said = stderr(&output);
    assert!(
        said.contains(&format!("position {first}")) && said.contains("token_increases"),
        "{said}"
    );
    assert!(!target.exists());

    let records: Vec<Record> = {
        let mut reader = annals::export::open(&file).expect("the forgery opens");
        std::iter::from_fn(|| reader.next_record().expect("the forgery reads"))
            .filter(|record| record.position >= first)
            .collect()
    };
    std::fs::copy(&base, &target).expect("copy the base");
    append_sealed_unapplied(&target, &records).expect("write beneath the projections");
    let output = exits(crate::annals(&["verify", crate::path(&target)]), 1);
    let printed = stdout(&output);
    assert!(
        printed.contains(&format!("unsound at position {first}"))
            && printed.contains("token_increases"),
        "{printed}"
    );
}

/// A writer's journal damaged before its last frame (a copy of the log and its journal while
/// the writer has them open, as a kill would leave them): `verify` exits 1, a finding about
/// the log as every damaged file is, naming the damaged frame's offset, and keeps the journal
/// as it was.
#[test]
fn verify_refuses_a_journal_damaged_before_its_last_frame_naming_its_offset_and_keeps_it() {
    let log = Log::new();
    let writer = annals::testing::setup::journal_only_log(&log.db);
    let copies = damage::journal_damaged_copies(&log.db, log.dir.path());
    drop(writer);
    for copy in copies {
        let what = copy.what;
        let output = crate::annals(&["verify", crate::path(&copy.log)]);
        let said = stderr(&output);
        assert_eq!(output.status.code(), Some(1), "{what}: {said}");
        let offset = copy.frame_offset;
        assert!(
            said.contains(&format!("byte {offset}")) && said.contains("damaged"),
            "{what}: the refusal names the damaged frame's offset {offset}: {said}"
        );
        let journal = annals::journal::journal_path(&copy.log);
        assert_eq!(
            std::fs::read(&journal).expect("the journal"),
            copy.journal,
            "{what}: the journal is kept as it was"
        );
    }
}
