//! Opening files: a new file is created atomically; a missing, empty, foreign, garbage,
//! truncated or future-format file is refused with a typed error, never a panic.

use std::fs;

use annals::{Error, Store, error::OpenError};

use crate::common::append_one;

fn open_error(path: &std::path::Path) -> Error {
    match Store::open(path) {
        Err(error) => error,
        Ok(_) => panic!("{} should not open", path.display()),
    }
}

#[test]
fn a_new_file_is_created_and_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.redb");
    drop(Store::open(&path).unwrap());
    assert!(path.exists());
    let leftovers: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["new.redb"], "a temporary file was left behind");
    let store = Store::open_with(&path, annals::StoreOptions::default()).unwrap();
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
}

#[test]
fn open_existing_refuses_a_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let error = Store::open_with(
        dir.path().join("absent.redb"),
        annals::StoreOptions::default(),
    )
    .err()
    .unwrap();
    assert!(
        matches!(error, Error::Open(OpenError::Missing { .. })),
        "{error:?}"
    );
}

#[test]
fn an_empty_file_is_not_an_annals_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.redb");
    fs::write(&path, b"").unwrap();
    assert!(matches!(
        open_error(&path),
        Error::Open(OpenError::NotAnnalsLog { .. })
    ));
    assert_eq!(
        fs::metadata(&path).unwrap().len(),
        0,
        "the refused file is untouched"
    );
}

#[test]
fn a_garbage_file_is_not_an_annals_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.redb");
    let garbage: Vec<u8> = (0..100_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&path, &garbage).unwrap();
    assert!(matches!(
        open_error(&path),
        Error::Open(OpenError::NotAnnalsLog { .. })
    ));
    assert_eq!(
        fs::read(&path).unwrap(),
        garbage,
        "the refused file is untouched"
    );
}

#[test]
fn a_redb_file_without_annals_tables_is_not_an_annals_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("foreign.redb");
    {
        let db = redb::Database::create(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let table: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("other");
            txn.open_table(table).unwrap().insert(1, 2).unwrap();
        }
        txn.commit().unwrap();
    }
    let error = open_error(&path);
    assert!(
        matches!(error, Error::Open(OpenError::NotAnnalsLog { .. })),
        "{error:?}"
    );
}

#[test]
fn a_file_of_an_unknown_format_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.redb");
    drop(Store::open(&path).unwrap());
    {
        let db = redb::Database::open(&path).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta = txn
                .open_table(annals::testing::internals::tables::META)
                .unwrap();
            meta.insert(
                annals::testing::internals::tables::FORMAT_KEY,
                5u32.to_le_bytes().as_slice(),
            )
            .unwrap();
        }
        txn.commit().unwrap();
    }
    match open_error(&path) {
        Error::Open(OpenError::UnsupportedFormat {
            found, supported, ..
        }) => {
            assert_eq!((found, supported), (5, 4));
        }
        other => panic!("expected an unsupported format, got {other:?}"),
    }
}

#[test]
fn a_truncated_file_is_refused_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        for i in 0..200u32 {
            append_one(&store, "s", &i.to_le_bytes());
        }
    }
    let whole = fs::read(&path).unwrap();
    for keep in [5, 9, 64, 512, 4096, whole.len() / 2] {
        let cut = dir.path().join(format!("cut-{keep}.redb"));
        fs::write(&cut, &whole[..keep]).unwrap();
        let error = open_error(&cut);
        assert!(
            matches!(
                error,
                Error::Open(OpenError::NotAnnalsLog { .. } | OpenError::Unreadable { .. })
            ),
            "{keep} bytes: {error:?}"
        );
    }
}

#[test]
fn a_read_only_store_reads_and_refuses_appends_without_touching_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    {
        let store = Store::open(&path).unwrap();
        append_one(&store, "s", b"x");
    }
    let before = fs::read(&path).unwrap();
    {
        let store = Store::open_read_only(&path).unwrap();
        assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
        assert_eq!(
            store.snapshot().unwrap().head().unwrap().next,
            annals::Position(1)
        );
        let refused = store.append(
            "s",
            annals::ExpectedVersion::Any,
            &[crate::common::event("k", 1, b"")],
        );
        assert!(matches!(refused, Err(Error::ReadOnly)));
    }
    assert_eq!(fs::read(&path).unwrap(), before);
    let error = Store::open_read_only(dir.path().join("absent.redb"))
        .err()
        .unwrap();
    assert!(matches!(error, Error::Open(OpenError::Missing { .. })));
}

#[test]
fn a_created_log_is_whole_before_anything_opens_it() {
    // What a process killed right after the creation, before its first open, leaves: the
    // published file alone. It must verify sound as it is, read-only, with no catch-up.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.redb");
    annals::testing::internals::open::create(&path).unwrap();
    let store = Store::open_read_only(&path).unwrap();
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{:?}", report.problem);
    assert_eq!(store.snapshot().unwrap().head().unwrap().next.0, 0);
    for projection in store.projections().iter() {
        let checkpoint = store.snapshot().unwrap().checkpoint(projection.name());
        assert!(
            matches!(checkpoint, Ok(Some(_))),
            "{}: {checkpoint:?}",
            projection.name()
        );
    }
}

#[test]
fn stale_private_files_of_dead_processes_are_swept_and_live_ones_stay() {
    if !std::path::Path::new("/proc/self").exists() {
        return; // The sweep asks /proc whether a process runs; without it, nothing is swept.
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3_600);
    let left = |name: String, modified: std::time::SystemTime| {
        let file = dir.path().join(name);
        fs::write(&file, b"redb\x1a\x0a\xa9").unwrap();
        fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(modified)
            .unwrap();
        file
    };
    // A half-made file of a process killed mid-creation, an hour ago (its pid cannot be
    // running: above the kernel's pid_max), and one of an import killed as long ago.
    let dead = left("log.redb.creating.4294967295".into(), hour_ago);
    let dead_import = left("log.redb.importing.4294967294".into(), hour_ago);
    // Files of running processes (init, this one), and a dead one's written just now.
    let init = left("log.redb.creating.1".into(), hour_ago);
    let own = left(
        format!("log.redb.importing.{}", std::process::id()),
        hour_ago,
    );
    let fresh = left(
        "log.redb.creating.4294967293".into(),
        std::time::SystemTime::now(),
    );
    // Another log's, and a name that only looks private.
    let other = left("other.redb.creating.4294967295".into(), hour_ago);
    let lookalike = left("log.redb.backup.4294967295".into(), hour_ago);
    let store = Store::open(&path).unwrap();
    append_one(&store, "s", b"x");
    assert!(annals::Audit::of(&store).verify().unwrap().is_sound());
    assert!(!dead.exists() && !dead_import.exists(), "stale files stay");
    for kept in [init, own, fresh, other, lookalike] {
        assert!(kept.exists(), "{} was swept", kept.display());
    }
}

/// A flip that makes redb panic reaches the caller as one typed error, `DamagedFile`. What the
/// command line says of it: `cli/tests/cli/damaged.rs`.
#[test]
fn a_panic_the_store_catches_reaches_the_caller_as_one_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.redb");
    annals::testing::damage::demo_log_redb_panics_on(&dir.path().join("clean.redb"), &path);
    let read = Store::open_read_only(&path).and_then(|store| {
        store.snapshot().and_then(|snapshot| {
            snapshot.read_all(annals::Position(0), annals::Direction::Forward, usize::MAX)
        })
    });
    assert!(matches!(read, Err(Error::DamagedFile { .. })), "{read:?}");
}
