//! A key export for a trusted replica (`Store::export_keys`, `Store::import_keys`,
//! `schema/FORMAT.md` 3.17): explicit and separate from every copy of the records; a replica
//! that imports it reads the personal payloads, its own erasure destroys its copy, and an
//! erased subject's key is never exported nor imported.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use annals::{Error, Position, Store, erasure::Payload, error::ErasureError};

use super::erasure::{
    PLAINTEXT, assert_erased, contains, keys_path, open, personal, record, with_alice,
};

/// The subjects and keys of a key store or a key export (`schema/FORMAT.md` 3.16, 3.17): the
/// 12-byte magic, a count, then each entry.
fn keys_in(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let bytes = std::fs::read(path).expect("a file of keys");
    let count = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
    let mut at = 16;
    let mut keys = BTreeMap::new();
    for _ in 0..count {
        let len = usize::from(bytes[at]);
        let subject = String::from_utf8(bytes[at + 1..at + 1 + len].to_vec()).unwrap();
        at += 1 + len;
        keys.insert(subject, bytes[at..at + 32].to_vec());
        at += 32;
    }
    assert_eq!(at + 32, bytes.len(), "a checksum ends the file");
    keys
}

#[test]
fn an_imported_key_export_lets_a_replica_read_until_it_erases_its_copy() {
    let (dir, path, store, alice) = with_alice();
    let bob = personal(&store, "bob", "people/bob", b"bob's own");
    personal(&store, "carol", "people/carol", b"carol's own");
    let carol_key = keys_in(&keys_path(&path))["carol"].clone();
    store.erase("carol", 2_000).unwrap();
    let replica_path = dir.path().join("replica.redb");
    assert_eq!(
        annals::maintenance::Backup::write(&store, &replica_path)
            .unwrap()
            .head,
        store.snapshot().unwrap().head().unwrap()
    );
    let replica = open(&replica_path);
    let sealed = record(&store, alice);
    assert_erased(&replica, &sealed);

    let export = dir.path().join("keys.export");
    let exported = annals::erasure::Keys::of(&store).export(&export).unwrap();
    assert_eq!(exported.subjects, ["alice", "bob"]);
    assert!(
        exported.erased.is_empty(),
        "carol's key went with her erasure"
    );
    let mode = std::fs::metadata(&export).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode & !0o600, 0, "mode {mode:o}");
    let held = keys_in(&keys_path(&path));
    assert_eq!(keys_in(&export), held, "the key store's keys, no other");
    assert!(!contains(&std::fs::read(&export).unwrap(), &carol_key));
    assert!(!contains(&std::fs::read(&export).unwrap(), PLAINTEXT));

    let import = annals::erasure::Keys::of(&replica).import(&export).unwrap();
    assert_eq!(import.imported, ["alice", "bob"]);
    assert_eq!(keys_in(&keys_path(&replica_path)), held);
    let mode = std::fs::metadata(keys_path(&replica_path))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o177, 0, "the replica's key store is private");
    assert_eq!(
        crate::erasure::opened(&replica, &sealed).data(),
        Some(PLAINTEXT)
    );
    let bob_record = record(&replica, bob);
    assert_eq!(
        crate::erasure::opened(&replica, &bob_record).data(),
        Some(&b"bob's own"[..])
    );
    // Again: every key held already, nothing written.
    let again = annals::erasure::Keys::of(&replica).import(&export).unwrap();
    assert_eq!((again.imported.len(), again.held.len()), (0, 2));

    // The replica's own erasure destroys its copy; the export cannot bring it back.
    let alice_key = held["alice"].clone();
    replica.erase("alice", 3_000).unwrap();
    assert_erased(&replica, &sealed);
    let left = std::fs::read(keys_path(&replica_path)).unwrap();
    assert!(!contains(&left, &alice_key), "the replica's key is gone");
    let refused = annals::erasure::Keys::of(&replica).import(&export).unwrap();
    assert_eq!(refused.erased, ["alice"]);
    assert!(refused.imported.is_empty());
    assert!(!contains(
        &std::fs::read(keys_path(&replica_path)).unwrap(),
        &alice_key
    ));
    assert_erased(&replica, &sealed);
    assert!(annals::Audit::of(&replica).verify().unwrap().is_sound());
    // The writer's own copy is untouched by the replica's erasure.
    assert_eq!(
        crate::erasure::opened(&store, &sealed).data(),
        Some(PLAINTEXT)
    );
}

#[test]
fn a_key_export_is_never_written_over_a_file_nor_taken_from_a_damaged_or_foreign_one() {
    let (dir, path, store, _) = with_alice();
    let export = dir.path().join("keys.export");
    annals::erasure::Keys::of(&store).export(&export).unwrap();
    let written = std::fs::read(&export).unwrap();
    // Over the export just written, or over the log's own key store: refused, both as they were.
    let keys_before = std::fs::read(keys_path(&path)).unwrap();
    match annals::erasure::Keys::of(&store).export(&export) {
        Err(Error::Erasure(ErasureError::KeyExportExists { path })) => assert_eq!(path, export),
        other => panic!("{other:?}"),
    }
    match annals::erasure::Keys::of(&store).export(&keys_path(&path)) {
        Err(Error::OutputPath(annals::error::OutputPathError::StoreFile { file, .. })) => {
            assert_eq!(file, annals::error::StoreFile::Keys)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&export).unwrap(), written);
    assert_eq!(std::fs::read(keys_path(&path)).unwrap(), keys_before);

    // A damaged export, or the key store itself given as one: refused, nothing imported.
    let replica_path = dir.path().join("replica.redb");
    assert_eq!(
        annals::maintenance::Backup::write(&store, &replica_path)
            .unwrap()
            .head,
        store.snapshot().unwrap().head().unwrap()
    );
    let replica = open(&replica_path);
    let mut damaged = written.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 1;
    let damaged_path = dir.path().join("damaged.export");
    std::fs::write(&damaged_path, &damaged).unwrap();
    for given in [&damaged_path, &keys_path(&path)] {
        match annals::erasure::Keys::of(&replica).import(given) {
            Err(Error::Erasure(ErasureError::KeyExport { path, .. })) => {
                assert_eq!(&path, given)
            }
            other => panic!("{}: {other:?}", given.display()),
        }
    }
    assert!(!keys_path(&replica_path).exists(), "no key store made");

    // Another log's keys for the same subject: a conflict, and the key store as it was.
    let other_dir = tempfile::tempdir().unwrap();
    let other = open(&other_dir.path().join("other.redb"));
    personal(&other, "alice", "people/alice", b"another alice");
    let foreign = dir.path().join("foreign.export");
    annals::erasure::Keys::of(&other).export(&foreign).unwrap();
    let refused = annals::erasure::Keys::of(&store)
        .import(&foreign)
        .unwrap_err();
    assert!(
        matches!(&refused, Error::Erasure(ErasureError::KeyConflict { subject }) if subject == "alice"),
        "{refused:?}"
    );
    assert_eq!(std::fs::read(keys_path(&path)).unwrap(), keys_before);

    // A read-only store imports nothing.
    drop(replica);
    let read_only = Store::open_read_only(&replica_path).unwrap();
    assert!(
        annals::erasure::Keys::of(&read_only)
            .import(&export)
            .is_err()
    );
    assert!(!keys_path(&replica_path).exists());
    assert_eq!(store.snapshot().unwrap().head().unwrap().next, Position(1));
    let sealed = record(&store, Position(0));
    assert!(matches!(
        crate::erasure::opened(&store, &sealed),
        Payload::Personal { .. }
    ));
}
