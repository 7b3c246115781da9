//! The rule against real files: each way a path can name a store's file, and each thing
//! that is not a file to write.

use std::os::unix::fs::{MetadataExt, symlink};
use std::path::Path;

use super::*;

/// A folder with a file `log.redb` that starts as a redb file does.
fn folder_with_log() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    let mut bytes = REDB_MAGIC.to_vec();
    bytes.extend_from_slice(b" and the rest of a log");
    fs::write(&log, bytes).unwrap();
    (dir, log)
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn refused_as(path: &Path, store: &StoreFiles) -> Option<StoreFile> {
    match check(path, Output::File, Some(store)) {
        Err(OutputPathError::StoreFile {
            path: named, file, ..
        }) => {
            assert_eq!(named, path);
            Some(file)
        }
        Ok(()) => None,
        Err(other) => panic!("{}: refused otherwise: {other}", path.display()),
    }
}

#[test]
fn every_name_of_a_stores_file_is_refused() {
    let (dir, log) = folder_with_log();
    let store = StoreFiles::of_log(&log).with_archives(vec![(Position(7), "cut-0.archive".into())]);
    let at = |name: &str| dir.path().join(name);
    symlink(&log, at("to-log")).unwrap();
    symlink("log.redb.journal", at("to-missing-journal")).unwrap();
    symlink("to-log", at("to-link")).unwrap();
    fs::hard_link(&log, at("hard")).unwrap();
    fs::write(at("cut-0.archive"), b"records").unwrap();
    let cases = [
        ("log.redb", Some(StoreFile::Log)),
        ("to-log", Some(StoreFile::Log)),
        ("to-link", Some(StoreFile::Log)),
        ("hard", Some(StoreFile::Log)),
        ("log.redb.journal", Some(StoreFile::Journal)),
        ("to-missing-journal", Some(StoreFile::Journal)),
        ("log.redb.keys", Some(StoreFile::Keys)),
        (
            "log.redb.keying.12",
            Some(StoreFile::Temporary {
                purpose: "keying".into(),
            }),
        ),
        (
            "log.redb.backing-up.12",
            Some(StoreFile::Temporary {
                purpose: "backing-up".into(),
            }),
        ),
        (
            "cut-0.archive",
            Some(StoreFile::Archive { cut: Position(7) }),
        ),
        // A new file of an archive's name loses nothing; nor do other names.
        ("log.redb.other.12", None),
        ("new.export", None),
    ];
    for (name, expected) in cases {
        assert_eq!(refused_as(&at(name), &store), expected, "{name}");
    }
    fs::remove_file(at("cut-0.archive")).unwrap();
    assert_eq!(refused_as(&at("cut-0.archive"), &store), None);
    // Through the folder's other spelling too.
    let dotted = dir.path().join(".").join("sub").join("..").join("log.redb");
    fs::create_dir(dir.path().join("sub")).unwrap();
    assert_eq!(refused_as(&dotted, &store), Some(StoreFile::Log));
}

#[test]
fn any_logs_journal_is_refused_without_its_store() {
    let (dir, log) = folder_with_log();
    let journal = journal_path(&log);
    let Err(OutputPathError::StoreFile {
        log: named, file, ..
    }) = check(&journal, Output::File, None)
    else {
        panic!("another log's journal was accepted");
    };
    assert_eq!((named, file), (log, StoreFile::Journal));
    // Beside a file that is not a log, the name is the user's.
    let notes = dir.path().join("notes");
    fs::write(&notes, b"text").unwrap();
    assert!(check(&journal_path(&notes), Output::File, None).is_ok());
}

#[test]
fn what_is_not_the_file_or_folder_to_write_is_refused_by_its_kind() {
    let (dir, log) = folder_with_log();
    let store = StoreFiles::of_log(&log);
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let cases: [(&Path, Output, FileKind); 4] = [
        (&fifo, Output::File, FileKind::Fifo),
        (Path::new("/dev/null"), Output::File, FileKind::CharDevice),
        (dir.path(), Output::File, FileKind::Folder),
        (&fifo, Output::Folder, FileKind::Fifo),
    ];
    for (path, output, kind) in cases {
        let found = match check(path, output, Some(&store)) {
            Err(
                OutputPathError::NotAFile { found, .. } | OutputPathError::NotAFolder { found, .. },
            ) => found,
            other => panic!("{}: {other:?}", path.display()),
        };
        assert_eq!(found, kind, "{}", path.display());
    }
    assert!(check(dir.path(), Output::Folder, Some(&store)).is_ok());
    let missing = dir.path().join("missing").join("out.export");
    let Err(OutputPathError::NoFolder { folder, .. }) = check(&missing, Output::File, Some(&store))
    else {
        panic!("a path in a missing folder was accepted");
    };
    assert_eq!(folder, dir.path().join("missing"));
    // A file taken for a folder is no folder either.
    let under_log = log.join("out.export");
    assert!(matches!(
        check(&under_log, Output::File, Some(&store)),
        Err(OutputPathError::NoFolder { .. })
    ));
}

#[test]
fn a_new_file_is_never_made_through_a_link_or_wider_than_its_log() {
    let (dir, log) = folder_with_log();
    fs::set_permissions(&log, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let link = dir.path().join("link");
    symlink(&log, &link).unwrap();
    assert!(create_new(&link, Some(&log)).is_err());
    assert!(fs::read(&log).unwrap().starts_with(&REDB_MAGIC));
    let new = dir.path().join("new");
    drop(create_new(&new, Some(&log)).unwrap());
    assert_eq!(fs::metadata(&new).unwrap().mode() & 0o777, 0o600);
    assert!(
        create_new(&new, Some(&log)).is_err(),
        "an existing file was opened"
    );
}

#[test]
fn a_fifo_is_never_opened_to_read_as_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    // Without O_NONBLOCK this open would wait for a writer that never comes.
    let error = open_regular(&fifo).unwrap_err();
    assert!(error.to_string().contains("named pipe"), "{error}");
}
