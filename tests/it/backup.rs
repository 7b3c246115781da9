//! Backups (`Store::backup`): a copy of the log as of one commit, taken while writers go on,
//! that opens as the same log: every table with the same rows, the same head, root, proofs,
//! projections and, for a cut log, the same cut.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use annals::{Error, Position, Sharing, Store, StoreOptions, error::StoreError};

use crate::common::{append_one, open_exclusive, store};

fn assert_sound(store: &Store) {
    let report = annals::Audit::of(store).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
}

/// Everything a reader can ask of a log, for two logs to be compared: its head, where it
/// starts, its root, a consistency and an inclusion proof, its last cut and signed
/// checkpoint, every projection's state, and each table's rows.
fn assert_same(original: &Store, copy: &Store) {
    let head = original.snapshot().expect("head").head().expect("head");
    assert_eq!(
        copy.snapshot()
            .expect("copy head")
            .head()
            .expect("copy head"),
        head
    );
    let (ours, theirs) = (
        original.snapshot().expect("snapshot"),
        copy.snapshot().expect("copy snapshot"),
    );
    assert_eq!(theirs.start(), ours.start());
    assert_eq!(
        theirs.merkle_root(head.next.0).expect("root"),
        ours.merkle_root(head.next.0).expect("root")
    );
    assert_eq!(
        theirs.consistency_proof(1, head.next.0).expect("proof"),
        ours.consistency_proof(1, head.next.0).expect("proof")
    );
    let last = Position(head.next.0 - 1);
    assert_eq!(
        theirs.inclusion_proof(last, head.next.0).expect("proof"),
        ours.inclusion_proof(last, head.next.0).expect("proof")
    );
    assert_eq!(theirs.cut(), ours.cut());
    assert_eq!(
        annals::maintenance::Checkpoints::of(copy)
            .signed()
            .expect("signed"),
        annals::maintenance::Checkpoints::of(original)
            .signed()
            .expect("signed")
    );
    for projection in original.projections().iter() {
        let name = projection.name();
        assert_eq!(
            annals::Audit::of(copy)
                .state_json(name, None)
                .expect("copy state"),
            annals::Audit::of(original)
                .state_json(name, None)
                .expect("state"),
            "{name}"
        );
    }
    let rows = |store: &Store| {
        let mut tables: Vec<(String, u64)> = annals::maintenance::Footprint::of(store)
            .expect("footprint")
            .tables
            .into_iter()
            .map(|table| (table.name, table.rows))
            .collect();
        tables.sort();
        tables
    };
    assert_eq!(rows(copy), rows(original));
}

#[test]
fn a_backup_of_a_cut_log_opens_as_the_same_log() {
    let (dir, store) = store();
    annals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let signer = annals::tlog::Signer::from_seed("example.com/backup", [9; 32]).expect("signer");
    let _signed = annals::maintenance::Checkpoints::of(&store)
        .sign(&signer)
        .expect("checkpoint");
    let head = store.snapshot().expect("head").head().expect("head").next.0;
    let _report = annals::archive::Archives::of(&store)
        .archive_before(Position(head / 2), dir.path().join("demo.archive"))
        .expect("cut");
    annals::demo::run(&store, head + 500, |_| {}).expect("demo after the cut");

    let target = dir.path().join("copy.redb");
    let backup = annals::maintenance::Backup::write(&store, &target).expect("backup");
    assert_eq!(backup.path, target);
    assert_eq!(
        backup.head,
        store.snapshot().expect("head").head().expect("head")
    );
    assert_eq!(
        backup.bytes,
        std::fs::metadata(&target).expect("copy").len()
    );
    let copy = Store::open_read_only(&target).expect("the copy opens");
    assert_eq!(backup.start, copy.snapshot().expect("snapshot").start());
    assert_eq!(backup.start, Position(head / 2));
    assert_same(&store, &copy);
    assert_sound(&copy);
    drop(copy);
    // The copy is a log like any other: it takes appends and verifies its archive.
    let copy = Store::open(&target).expect("the copy opens writable");
    let _position = append_one(&copy, "after", b"the copy goes on");
    assert_sound(&copy);
    assert_eq!(
        annals::archive::Archives::of(&copy)
            .verify(&[dir.path().join("demo.archive")], &mut |_| {})
            .expect("archive"),
        None
    );
}

#[test]
fn a_backup_never_replaces_a_file_and_leaves_nothing_behind() {
    let (dir, store) = store();
    let _position = append_one(&store, "s", b"one");
    let target = dir.path().join("taken.redb");
    std::fs::write(&target, b"somebody's file").expect("write");
    let refused =
        annals::maintenance::Backup::write(&store, &target).expect_err("the target exists");
    assert!(
        matches!(&refused, Error::Store(StoreError::BackupTargetExists { path }) if *path == target),
        "{refused}"
    );
    assert_eq!(std::fs::read(&target).expect("read"), b"somebody's file");
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .map(|entry| entry.expect("entry").file_name())
        .filter(|name| name.to_string_lossy().contains("backing-up"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_journaled_store_backs_up_what_it_acknowledged() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("log.redb");
    let store = open_exclusive(&path);
    assert!(annals::maintenance::Stats::of(&store).unwrap().journaled);
    for n in 0..20u64 {
        let _position = append_one(&store, &format!("s-{}", n % 3), &n.to_le_bytes());
    }
    let backup =
        annals::maintenance::Backup::write(&store, dir.path().join("copy.redb")).expect("backup");
    assert_eq!(backup.head.next, Position(20));
    let copy = Store::open_read_only(&backup.path).expect("copy");
    assert_same(&store, &copy);
}

/// A backup taken while another thread appends holds one commit whole: its head is a head the
/// log had, its records verify, and the log's later records extend it.
#[test]
fn a_backup_beside_a_writer_holds_one_commit() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("log.redb");
    let store = Arc::new(
        Store::open_with(
            &path,
            StoreOptions {
                create: true,
                sharing: Sharing::SingleWriter,
                ..StoreOptions::default()
            },
        )
        .expect("open"),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut written = 0u64;
            while !stop.load(Ordering::Relaxed) || written < 50 {
                let _position = append_one(&store, &format!("s-{}", written % 7), b"beside");
                written += 1;
            }
        })
    };
    let mut copies = Vec::new();
    for n in 0..3 {
        let target = dir.path().join(format!("copy-{n}.redb"));
        copies.push(annals::maintenance::Backup::write(&store, &target).expect("backup"));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().expect("writer");
    let snapshot = store.snapshot().expect("snapshot");
    for backup in copies {
        let copy = Store::open_read_only(&backup.path).expect("copy");
        assert_eq!(
            copy.snapshot().expect("head").head().expect("head"),
            backup.head
        );
        assert_sound(&copy);
        if let Some(last) = backup.head.next.0.checked_sub(1) {
            assert_eq!(
                snapshot
                    .get(Position(last))
                    .expect("read")
                    .expect("held")
                    .hash,
                backup.head.hash,
                "the log holds the copy's head record"
            );
        }
        assert_extends(&store, &backup.path);
    }
}

fn assert_extends(store: &Store, copy: &Path) {
    let head = Store::open_read_only(copy)
        .expect("copy")
        .snapshot()
        .expect("head")
        .head()
        .expect("head");
    assert!(
        annals::Audit::of(store)
            .check_extends(head)
            .expect("extends")
            .extends(),
        "the log extends its copy at {head:?}"
    );
}

/// A journaling writer's commits not yet drained into the file are in the backup it takes,
/// which opens as the same log. (The backup `annals backup` takes in another process, reading
/// the journal's synced frames with the file: `cli/tests/cli/backup.rs`.)
#[test]
fn a_backup_holds_the_commits_only_the_journal_holds_yet() {
    let dir = tempfile::tempdir().unwrap();
    let store = annals::testing::setup::journal_only_log(&dir.path().join("log.redb"));
    let ours = annals::maintenance::Backup::write(&store, dir.path().join("ours.redb")).unwrap();
    assert_eq!(ours.head, store.snapshot().unwrap().head().unwrap());
    let ours = Store::open_read_only(&ours.path).unwrap();
    assert_same(&store, &ours);
    assert_sound(&ours);
}
