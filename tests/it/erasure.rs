//! Erasure by crypto-shredding (`docs/erasure.md`): a personal payload is sealed before its
//! record is hashed, reads back while its subject's key stands and as erased after
//! `Store::erase`; the chain, proofs, checkpoints and replay never change; after the erasure
//! and a compaction no file of the store (nor a backup, archive, export or tiles made after)
//! holds the plaintext or the key; a kill at any moment of an erasure leaves the key whole or
//! gone; an erasure runs beside a writer in another process.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

pub(crate) use crate::files::{contains, files_under};
use annals::merkle::{TreeHead, check_consistency, check_inclusion};
use annals::projection::{Table, WriteTables};
use annals::testing::internals::demo::Rng;
use annals::tlog::{Checkpoint, Signer};
use annals::{
    Error, ExpectedVersion, NewEvent, Position, Record, Result, Sharing, Store, StoreOptions,
    erasure::Payload, error::ErasureError, error::StoreError, projection::Projection,
};

/// The plaintext personal to `alice` in these tests: searched for in every file.
pub(crate) const PLAINTEXT: &[u8] = b"ada.lovelace@example.com personal-marker-7f3a";

/// Keeps every record's payload bytes as hex, by position: a projection of a host that keeps a
/// personal field, showing what projections keep (the envelope) and that replay reproduces it.
struct Payloads;

const PAYLOADS: Table<u64, String> = Table::new("payloads.by_position");

impl Projection for Payloads {
    fn name(&self) -> &'static str {
        "payloads"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["payloads.by_position"]
    }
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        let hex = annals::display::hex(&record.payload);
        PAYLOADS.insert(tables, &record.position.0, &hex)
    }
}

pub(crate) fn open(path: &Path) -> Store {
    let options = StoreOptions {
        create: true,
        projections: vec![Arc::new(Payloads)],
        ..StoreOptions::default()
    };
    Store::open_with(path, options).expect("open the log")
}

pub(crate) fn personal(store: &Store, subject: &str, stream: &str, payload: &[u8]) -> Position {
    let event = NewEvent::new("email.set", 1_000, payload.to_vec());
    store
        .append_personal(subject, stream, ExpectedVersion::Any, &[event])
        .expect("a personal append")
        .first_position()
}

pub(crate) fn plain(store: &Store, stream: &str, payload: &[u8]) -> Position {
    let event = NewEvent::new("note", 1_000, payload.to_vec());
    store
        .append(stream, ExpectedVersion::Any, &[event])
        .expect("a plain append")
        .first_position()
}

pub(crate) fn record(store: &Store, position: Position) -> Record {
    store
        .snapshot()
        .expect("a read")
        .get(position)
        .expect("a read")
        .expect("a record")
}

/// A log at `<dir>/log.redb` with `alice`'s personal payload at the returned position.
pub(crate) fn with_alice() -> (tempfile::TempDir, PathBuf, Store, Position) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = open(&path);
    let alice = personal(&store, "alice", "people/alice", PLAINTEXT);
    (dir, path, store, alice)
}

/// How many subjects' keys the key store of the log at `log` holds (`schema/FORMAT.md` 3.16).
pub(crate) fn key_count(log: &Path) -> u32 {
    let bytes = std::fs::read(keys_path(log)).expect("the key store");
    u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"))
}

pub(crate) fn keys_path(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".keys");
    PathBuf::from(name)
}

/// The one key of a key store holding one subject's (`schema/FORMAT.md` 3.16): the 32 bytes
/// before the checksum.
pub(crate) fn only_key(log: &Path) -> Vec<u8> {
    assert_eq!(key_count(log), 1, "one subject's key");
    let bytes = std::fs::read(keys_path(log)).expect("the key store");
    bytes[bytes.len() - 64..bytes.len() - 32].to_vec()
}

/// `record`'s payload as `store` reads it: the plaintext while its subject's key stands.
#[track_caller]
pub(crate) fn opened<'r>(store: &Store, record: &'r Record) -> Payload<'r> {
    annals::erasure::PayloadReader::of(store)
        .unwrap()
        .open(record)
        .unwrap()
}

/// Asserts that `store` reads `record`'s payload as `alice`'s, erased.
#[track_caller]
pub(crate) fn assert_erased(store: &Store, record: &Record) {
    let read = opened(store, record);
    assert_eq!(read, Payload::Erased { subject: "alice" });
}

fn payload_rows(store: &Store) -> Vec<(u64, String)> {
    PAYLOADS
        .scan_prefix(
            &store.snapshot().unwrap().state(),
            &(),
            annals::Direction::Forward,
            1_000,
        )
        .unwrap()
}

#[test]
fn a_personal_payload_reads_back_until_its_subject_is_erased_then_reads_erased() {
    let (_dir, path, store, alice) = with_alice();
    let bob = personal(&store, "bob", "people/bob", b"bob's own");
    let note = plain(&store, "notes", b"plain words");

    let sealed = record(&store, alice);
    assert!(
        !contains(&sealed.payload, PLAINTEXT),
        "the log holds ciphertext"
    );
    assert!(
        contains(&sealed.payload, b"alice"),
        "the subject is in clear"
    );
    let read = opened(&store, &sealed);
    assert_eq!(read.data(), Some(PLAINTEXT));
    assert_eq!(read.subject(), Some("alice"));
    let note_record = record(&store, note);
    assert_eq!(opened(&store, &note_record), Payload::Plain(b"plain words"));

    let erasure = store.erase("alice", 2_000).unwrap();
    assert!(erasure.appended && erasure.key_destroyed, "{erasure:?}");
    let event = record(&store, erasure.position);
    assert_eq!(
        (
            event.stream.as_str(),
            event.kind.as_str(),
            &event.payload[..]
        ),
        ("annals.erased/alice", "subject.erased", &b"alice"[..])
    );
    assert_eq!(
        record(&store, alice),
        sealed,
        "the record itself never changes"
    );
    assert_erased(&store, &sealed);
    assert_eq!(opened(&store, &sealed).data(), None);
    let bob_record = record(&store, bob);
    assert_eq!(opened(&store, &bob_record).data(), Some(&b"bob's own"[..]));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());

    // Again: nothing appended, nothing left to destroy.
    let again = store.erase("alice", 3_000).unwrap();
    assert_eq!(
        (again.position, again.appended, again.key_destroyed),
        (erasure.position, false, false)
    );
    // A reader in another handle, and a reopened writer, read it erased too.
    drop(store);
    let reader = Store::open_read_only(&path).unwrap();
    assert_erased(&reader, &sealed);
}

#[test]
fn verify_proofs_checkpoints_and_replay_are_unchanged_by_an_erasure() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let alice = personal(&store, "alice", "people/alice", PLAINTEXT);
    plain(&store, "notes", b"between");
    let signer = Signer::generate("example.com/erasure").unwrap();
    let signed = annals::maintenance::Checkpoints::of(&store)
        .sign(&signer)
        .unwrap();
    let before = Checkpoint::open(&signed, &[signer.verifier()])
        .unwrap()
        .checkpoint;
    let rows_before = payload_rows(&store);
    assert!(
        rows_before[alice.0 as usize].1 == annals::display::hex(&record(&store, alice).payload),
        "a projection is applied the envelope, never the plaintext"
    );

    let erasure = store.erase("alice", 2_000).unwrap();
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    let snapshot = store.snapshot().unwrap();
    // The signed checkpoint's tree is unchanged, and the later tree extends it.
    let old_head = TreeHead {
        size: before.size,
        root: annals::log::Digest(before.root),
    };
    assert_eq!(snapshot.merkle_root(before.size).unwrap(), old_head.root);
    let proof = snapshot.inclusion_proof(alice, before.size).unwrap();
    assert_eq!(
        check_inclusion(&proof, &old_head, &record(&store, alice).hash),
        Ok(())
    );
    let size = snapshot.head().unwrap().next.0;
    let new_head = TreeHead {
        size,
        root: snapshot.merkle_root(size).unwrap(),
    };
    let consistency = snapshot.consistency_proof(before.size, size).unwrap();
    assert_eq!(
        check_consistency(&consistency, &old_head, &new_head),
        Ok(())
    );
    let after = annals::maintenance::Checkpoints::of(&store)
        .sign(&signer)
        .unwrap();
    assert!(Checkpoint::open(&after, &[signer.verifier()]).is_ok());

    // Replay gives every row byte for byte: the envelope, the same before and after.
    let rows_after = payload_rows(&store);
    annals::maintenance::Rebuild::of(&store).run(None).unwrap();
    let rebuilt = payload_rows(&store);
    assert_eq!(rebuilt, rows_after);
    assert_eq!(rebuilt[..rows_before.len()], rows_before[..]);
    assert_eq!(rebuilt.len() as u64, erasure.position.0 + 1);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn a_repeated_idempotency_key_with_the_same_plaintext_is_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("log.redb"));
    let event =
        |payload: &[u8]| NewEvent::new("email.set", 1, payload.to_vec()).with_idempotency_key("k1");
    let first = store
        .append_personal(
            "alice",
            "people/alice",
            ExpectedVersion::Any,
            &[event(PLAINTEXT)],
        )
        .unwrap();
    let again = store
        .append_personal(
            "alice",
            "people/alice",
            ExpectedVersion::Any,
            &[event(PLAINTEXT)],
        )
        .unwrap();
    assert!(
        matches!(again, annals::AppendOutcome::Duplicate { .. }),
        "{again:?}"
    );
    assert_eq!(again.first_position(), first.first_position());
    let other = store.append_personal(
        "alice",
        "people/alice",
        ExpectedVersion::Any,
        &[event(b"other")],
    );
    assert!(
        matches!(
            other,
            Err(Error::Append(annals::error::AppendError::Conflict { .. }))
        ),
        "{other:?}"
    );
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(1));
}

#[test]
fn refused_personal_appends_and_raw_erasure_records_write_nothing() {
    let (_dir, path, store, _) = with_alice();
    store.erase("alice", 2).unwrap();
    let head = store.snapshot().unwrap().head().unwrap();
    let event = || NewEvent::new("email.set", 3, PLAINTEXT.to_vec());
    let refusals: Vec<(&str, Error)> = vec![
        (
            "an erased subject",
            store
                .append_personal("alice", "people/alice", ExpectedVersion::Any, &[event()])
                .unwrap_err(),
        ),
        (
            "a subject with a slash",
            store
                .append_personal("a/b", "people/x", ExpectedVersion::Any, &[event()])
                .unwrap_err(),
        ),
        (
            "the erasure kind",
            store
                .append(
                    "s",
                    ExpectedVersion::Any,
                    &[NewEvent::new("subject.erased", 3, b"bob".to_vec())],
                )
                .unwrap_err(),
        ),
        (
            "an erasure stream",
            store
                .append("annals.erased/bob", ExpectedVersion::Any, &[event()])
                .unwrap_err(),
        ),
        (
            "a plain payload with the envelope's magic",
            store
                .append(
                    "s",
                    ExpectedVersion::Any,
                    &[NewEvent::new("k", 3, b"\xffape\x01".to_vec())],
                )
                .unwrap_err(),
        ),
        (
            "a wrong expected version",
            store
                .append_personal(
                    "carol",
                    "people/alice",
                    ExpectedVersion::NoStream,
                    &[event()],
                )
                .unwrap_err(),
        ),
    ];
    for (what, error) in &refusals {
        let expected = match *what {
            "an erased subject" => matches!(error, Error::Erasure(ErasureError::Erased { .. })),
            "a subject with a slash" => {
                matches!(error, Error::Erasure(ErasureError::Subject { .. }))
            }
            "the erasure kind" => matches!(error, Error::Store(StoreError::ErasureKind { .. })),
            "an erasure stream" => matches!(error, Error::Store(StoreError::ErasureStream { .. })),
            "a plain payload with the envelope's magic" => {
                matches!(
                    error,
                    Error::Erasure(ErasureError::EnvelopeMagic { index: 0 })
                )
            }
            _ => matches!(
                error,
                Error::Append(annals::error::AppendError::WrongExpectedVersion { .. })
            ),
        };
        assert!(expected, "{what}: {error:?}");
        assert!(!error.to_string().is_empty());
    }
    assert_eq!(
        store.snapshot().unwrap().head().unwrap(),
        head,
        "nothing was written"
    );
    drop(store);
    assert_eq!(key_count(&path), 0, "no key made for a refused append");
}

#[test]
fn the_key_store_is_private_and_a_damaged_one_is_refused_as_it_is() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path, store, alice) = with_alice();
    let mode = std::fs::metadata(keys_path(&path))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let mut bytes = std::fs::read(keys_path(&path)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(keys_path(&path), &bytes).unwrap();
    let sealed = record(&store, alice);
    let read = annals::erasure::PayloadReader::of(&store).and_then(|reader| reader.open(&sealed));
    assert!(
        matches!(read, Err(Error::Erasure(ErasureError::Damaged { .. }))),
        "{read:?}"
    );
    assert_eq!(read.unwrap_err().kind(), annals::ErrorKind::Corrupt);
    assert_eq!(
        std::fs::read(keys_path(&path)).unwrap(),
        bytes,
        "left as it is"
    );
}

/// Point 5 of issue 55: after `erase` and `compact`, no file of the store, nor a backup, an
/// archive, an export or tiles made after, holds the plaintext or the key.
#[test]
fn after_erase_and_compact_no_file_of_the_store_holds_the_plaintext_or_the_key() {
    let (dir, path, store, alice) = with_alice();
    for n in 0..50u64 {
        plain(&store, "notes", format!("note {n}").as_bytes());
    }
    let key = only_key(&path);
    assert!(!contains(&std::fs::read(&path).unwrap(), PLAINTEXT));
    store.erase("alice", 2_000).unwrap();
    // Searched with the store open, the journal beside it.
    let search = |when: &str| {
        let mut files = Vec::new();
        files_under(dir.path(), &mut files);
        assert!(files.len() >= 2, "{files:?}");
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            assert!(
                !contains(&bytes, PLAINTEXT),
                "{when}: {} holds the plaintext",
                file.display()
            );
            assert!(
                !contains(&bytes, &key),
                "{when}: {} holds the key",
                file.display()
            );
        }
        files.len()
    };
    search("after erase");
    // Compaction needs the log to itself, as `annals compact` does.
    store.close().unwrap();
    let wait = std::time::Duration::from_secs(5);
    annals::maintenance::Compaction::of_file(&path, wait)
        .unwrap()
        .bytes_reclaimed();
    let store = open(&path);
    let signer = Signer::generate("example.com/erasure").unwrap();
    let backup =
        annals::maintenance::Backup::write(&store, dir.path().join("backup.redb")).unwrap();
    assert_eq!(backup.head, store.snapshot().unwrap().head().unwrap());
    let tiles = annals::maintenance::Tiles::of(&store)
        .write(&dir.path().join("tiles"), &signer)
        .unwrap();
    assert_eq!(tiles.size, backup.head.next.0);
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap().next;
    let export = dir.path().join("export.annals");
    let exported = annals::export::export(&snapshot, Position(0), head, &export, &mut |_| {});
    assert_eq!(exported.unwrap().header.to, head);
    drop(snapshot);
    let archive = dir.path().join("archive.annals");
    let archived = annals::archive::Archives::of(&store)
        .archive_before(Position(10), archive)
        .unwrap();
    assert_eq!(archived.archived, 10);
    let searched = search("after compact, backup, tiles, export and archive");
    store.close().unwrap();
    let closed = search("after close");
    assert!(
        searched >= 6 && closed >= 5,
        "{searched} then {closed} files searched"
    );
    // The backup and the archive read the personal record as erased: they carry no key.
    let backup = Store::open_read_only(dir.path().join("backup.redb")).unwrap();
    let sealed = record(&backup, alice);
    assert_erased(&backup, &sealed);
}

/// A kill between the two halves of an erasure (the event durable, the key not yet destroyed):
/// every read gives erased at once, and the next writable open destroys the key.
#[test]
fn a_kill_between_the_erasure_event_and_the_key_leaves_the_rest_to_the_next_open() {
    let (_dir, path, store, alice) = with_alice();
    personal(&store, "bob", "people/bob", b"bob's");
    let sealed = record(&store, alice);
    store.close().unwrap();
    let mut child = Command::new(crate::annals_bin::testing())
        .args(["erase-halfway", path.to_str().unwrap(), "alice"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "appended 2", "the child's first half");
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success(), "killed, not finished");
    assert_eq!(key_count(&path), 2, "both keys still in the key store");
    let reader = Store::open_read_only(&path).unwrap();
    assert_erased(&reader, &sealed);
    drop(reader);
    let store = open(&path);
    assert_eq!(key_count(&path), 1, "the open destroyed alice's key");
    let keys = std::fs::read(keys_path(&path)).unwrap();
    assert!(!contains(&keys, b"alice"));
    let bob = record(&store, Position(1));
    assert_eq!(opened(&store, &bob).data(), Some(&b"bob's"[..]));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

/// An erasure (`Store::erase`, in an `annals-testing erase` process, as `annals erase` makes
/// it) killed at seeded moments: each kill leaves the key whole (no event, the payload opens)
/// or the event in the log (the payload reads erased, and the next writable open leaves no
/// key).
#[test]
fn erase_killed_at_random_moments_leaves_the_key_whole_or_gone() {
    let mut rng = Rng::new(0x5ec7_0055);
    let dir = tempfile::tempdir().unwrap();
    // How long a whole erasure process takes here: the kills are spread over it and a little
    // past, so that some strike before its event, some between, some after.
    let timed = dir.path().join("timed.redb");
    personal(&open(&timed), "alice", "people/alice", PLAINTEXT);
    let started = std::time::Instant::now();
    let finished = Command::new(crate::annals_bin::testing())
        .args(["erase", timed.to_str().unwrap(), "alice"])
        .output()
        .unwrap();
    assert!(finished.status.success(), "{finished:?}");
    let whole_erase_us = started.elapsed().as_micros() as u64;
    let (mut whole, mut gone, mut struck) = (0, 0, 0);
    for kill in 0..12u64 {
        let path = dir.path().join(format!("log-{kill}.redb"));
        let store = open(&path);
        let alice = personal(&store, "alice", "people/alice", PLAINTEXT);
        let sealed = record(&store, alice);
        store.close().unwrap();
        let mut child = Command::new(crate::annals_bin::testing())
            .args(["erase", path.to_str().unwrap(), "alice"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Not a timing assertion: the pause only picks the moment of the kill.
        let pause = rng.below(whole_erase_us + whole_erase_us / 4);
        std::thread::sleep(std::time::Duration::from_micros(pause));
        child.kill().unwrap();
        let status = child.wait().unwrap();
        struck += u32::from(status.code().is_none());
        // A reader beside the file as the kill left it: the event it sees reads erased; with
        // none, the key opens the payload.
        let reader = Store::open_read_only(&path).unwrap();
        let seen = reader
            .snapshot()
            .and_then(|snapshot| snapshot.check_not_erased("alice"))
            .is_err();
        let read = opened(&reader, &sealed);
        drop(reader);
        match seen {
            true => assert_eq!(read, Payload::Erased { subject: "alice" }, "kill {kill}"),
            false => assert_eq!(read.data(), Some(PLAINTEXT), "kill {kill}: the key whole"),
        }
        // The writable open recovers the journal (a synced frame the reader could not see yet
        // may hold the event) and finishes the erasure: event and no key, or neither.
        let store = open(&path);
        assert!(
            annals::Audit::of(&store).verify().unwrap().is_sound(),
            "kill {kill}"
        );
        let erased = store
            .snapshot()
            .and_then(|snapshot| snapshot.check_not_erased("alice"))
            .is_err();
        assert!(
            erased || !seen,
            "kill {kill}: an erasure seen is never lost"
        );
        assert_eq!(key_count(&path), u32::from(!erased), "kill {kill}");
        let read = opened(&store, &sealed);
        match erased {
            true => gone += 1,
            false => whole += 1,
        }
        assert_eq!(read.data().is_none(), erased, "kill {kill}");
    }
    eprintln!("{whole} kills left the key whole, {gone} the erasure in the log, {struck} struck");
    // Count only what was exercised: some kills struck an erase still running.
    assert!(
        struck > 0,
        "no kill struck a running erase ({whole} whole, {gone} gone)"
    );
    assert_eq!(whole + gone, 12);
}

/// An erasure in this process beside a writer in another, both in multi-writer mode: the
/// writer's appends all stay, the subject reads erased, its key is gone, the log verifies.
#[test]
fn an_erasure_beside_a_writer_in_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let options = || StoreOptions {
        create: true,
        sharing: Sharing::MultiWriter,
        busy_timeout: std::time::Duration::from_secs(10),
        ..StoreOptions::default()
    };
    let store = Store::open_with(&path, options()).unwrap();
    let alice = personal(&store, "alice", "people/alice", PLAINTEXT);
    let mut child = Command::new(crate::annals_bin::testing())
        .args([
            "crash-writer",
            path.to_str().unwrap(),
            "--sharing",
            "multi-writer",
        ])
        .args(["--tasks", "2", "--records", "300"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Once the writer has written, the erasure runs while it goes on.
    let first = lines.next().expect("the writer's first report").unwrap();
    assert!(first.starts_with("durable "), "{first}");
    personal(&store, "bob", "people/bob", b"bob's");
    let erasure = store.erase("alice", 2_000).unwrap();
    let reported = 1 + lines.map_while(std::result::Result::ok).count();
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "the writer: {stderr}");
    assert_eq!(reported, 300);
    let sealed = record(&store, alice);
    assert_erased(&store, &sealed);
    assert!(erasure.key_destroyed);
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 300 + 3);
    assert_eq!(key_count(&path), 1, "bob's key alone");
}

/// Point 4 of issue 55: a backup, an export and its import carry the records (ciphertext) and
/// never a key: opened elsewhere, every personal payload reads as erased, while the log with
/// its key store still opens it.
#[test]
fn a_backup_or_an_import_carries_ciphertext_and_no_key_and_reads_erased() {
    let (dir, _path, store, alice) = with_alice();
    plain(&store, "notes", b"plain words");
    let backup = dir.path().join("backup.redb");
    assert_eq!(
        annals::maintenance::Backup::write(&store, &backup)
            .unwrap()
            .head
            .next,
        Position(2)
    );
    let export = dir.path().join("export.annals");
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap().next;
    let exported = annals::export::export(&snapshot, Position(0), head, &export, &mut |_| {});
    assert_eq!(exported.unwrap().header.to, head);
    let imported = dir.path().join("imported.redb");
    let summary = annals::maintenance::Import::run(&export, &imported, &mut |_, _| {}).unwrap();
    assert_eq!(summary.header.to, head);
    for copy in [&backup, &export, &imported] {
        assert!(
            !contains(&std::fs::read(copy).unwrap(), PLAINTEXT),
            "{}",
            copy.display()
        );
        assert!(
            !keys_path(copy).exists(),
            "{} has a key store",
            copy.display()
        );
    }
    let sealed = record(&store, alice);
    for copy in [&backup, &imported] {
        let elsewhere = Store::open_read_only(copy).unwrap();
        assert_eq!(record(&elsewhere, alice), sealed, "the same record");
        assert_erased(&elsewhere, &sealed);
    }
    assert_eq!(opened(&store, &sealed).data(), Some(PLAINTEXT));
}

/// Personal appends through the group-committing writer, queued together so that they share
/// batches: each reads back, a retry with the same idempotency key is a duplicate (in the
/// first's batch or a later one: the session's index is read, not the last commit's), an
/// erased subject is refused.
#[test]
fn personal_appends_through_the_writer_batch_as_they_run_alone() {
    let (_dir, _path, store, alice) = with_alice();
    let store = Arc::new(store);
    let writer =
        annals::Writer::start(Arc::clone(&store), annals::writer::WriterOptions::default())
            .expect("a writer");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let outcomes = runtime.block_on(async {
        let append = |subject: &'static str, key: &'static str| {
            let writer = writer.clone();
            let event = NewEvent::new("email.set", 5, subject.as_bytes().to_vec())
                .with_idempotency_key(key);
            tokio::spawn(async move {
                let stream = format!("people/{subject}");
                writer
                    .append_personal(subject, stream, ExpectedVersion::Any, vec![event])
                    .await
            })
        };
        let jobs = [
            append("bob", "b1"),
            append("carol", "c1"),
            append("bob", "b1"),
            append("dave", "d1"),
        ];
        let mut outcomes = Vec::new();
        for job in jobs {
            outcomes.push(job.await.unwrap().unwrap());
        }
        outcomes
    });
    assert_eq!(outcomes[0].first_position(), outcomes[2].first_position());
    assert!(
        matches!(outcomes[2], annals::AppendOutcome::Duplicate { .. }),
        "{outcomes:?}"
    );
    for (outcome, subject) in outcomes.iter().zip(["bob", "carol", "bob", "dave"]) {
        let record = record(&store, outcome.first_position());
        assert_eq!(opened(&store, &record).data(), Some(subject.as_bytes()));
    }
    store.erase("alice", 6).unwrap();
    let refused = runtime.block_on(writer.append_personal(
        "alice",
        "people/alice",
        ExpectedVersion::Any,
        vec![NewEvent::new("email.set", 7, b"again".to_vec())],
    ));
    assert!(
        matches!(refused, Err(Error::Erasure(ErasureError::Erased { .. }))),
        "{refused:?}"
    );
    runtime.block_on(writer.close()).unwrap();
    assert_erased(&store, &record(&store, alice));
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}
