//! The commit journal (`annals::journal`, FORMAT 3.15): commits of an exclusive store go to
//! `<log>.journal` first and reach the log file at drains; a crash image (the log file and the
//! journal as a kill leaves them) reopens with every acknowledged commit, recovered from the
//! journal, and a read-only open refuses to read a log whose journal it would miss.

use annals::testing::setup::ExpectDone;
use std::fs;
use std::path::{Path, PathBuf};

use annals::{
    Direction, Durability, Error, ExpectedVersion, NewEvent, Position, Record, Sharing, Store,
    StoreOptions, Writer, error::JournalError, journal::JournalOptions, writer::WriterOptions,
};

use crate::common::event;

/// The journal's header: frames begin after it.
const HEADER: u64 = annals::journal::HEADER_BYTES;

fn journal_of(path: &Path) -> PathBuf {
    annals::journal::journal_path(path)
}

/// The bytes of the journal beside `path` before its room: the header and the frames (the
/// file keeps its length, zeros past them).
fn journal_held(path: &Path) -> u64 {
    let bytes = fs::read(journal_of(path)).unwrap();
    let written = bytes
        .iter()
        .rposition(|&byte| byte != 0)
        .map_or(0, |last| last + 1);
    (written as u64).max(HEADER)
}

fn exclusive(path: &Path, journal: Option<JournalOptions>) -> Store {
    let options = StoreOptions {
        create: true,
        sharing: Sharing::Exclusive,
        journal,
        ..StoreOptions::default()
    };
    Store::open_with(path, options).expect("open an exclusive store")
}

/// Drains only when told to: every commit stays in the journal.
fn never_drained() -> Option<JournalOptions> {
    Some(JournalOptions {
        checkpoint_ms: u64::MAX,
        checkpoint_bytes: u64::MAX,
    })
}

/// The files a kill of the process would leave now: the log file and its journal, copied
/// beside them under `name` while the store is open (its unsynced pages are in memory).
fn crash_image(path: &Path, name: &str) -> PathBuf {
    let copy = path.with_file_name(name);
    fs::copy(path, &copy).unwrap();
    fs::copy(journal_of(path), journal_of(&copy)).unwrap();
    copy
}

fn all(store: &Store) -> Vec<Record> {
    store
        .snapshot()
        .unwrap()
        .read_all(Position(0), Direction::Forward, usize::MAX)
        .unwrap()
}

fn append(store: &Store, stream: &str, count: usize) {
    for index in 0..count {
        let mut event = event("journal.test", 1_700_000_000_000 + index as u64, b"payload");
        event.idempotency_key = Some(format!("{stream}-{index}"));
        store
            .append(stream, ExpectedVersion::Any, &[event])
            .unwrap()
            .expect_done();
    }
}

#[test]
fn an_exclusive_store_commits_through_its_journal_and_a_clean_close_leaves_only_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    assert!(annals::maintenance::Stats::of(&store).unwrap().journaled);
    append(&store, "a", 5);
    let held = journal_held(&path);
    assert!(
        held > HEADER,
        "five commits are in the journal: {held} bytes"
    );
    let records = all(&store);
    assert_eq!(records.len(), 5);
    store.close().unwrap();
    assert!(
        !journal_of(&path).exists(),
        "a clean close drains and removes the journal"
    );
    let reopened = Store::open_read_only(&path).unwrap();
    assert_eq!(all(&reopened), records);
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}

#[test]
fn a_crash_image_recovers_every_acknowledged_commit_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    append(&store, "a", 3);
    store.flush().unwrap();
    assert_eq!(journal_held(&path), HEADER, "a flush drains");
    append(&store, "b", 4);
    append(&store, "c", 2);
    let records = all(&store);
    let copy = crash_image(&path, "crashed.redb");

    // Read-only, the file alone would miss six commits: the reader reads them from the
    // journal, past the file's head, and writes nothing — even where it could not.
    let reader_copy = crash_image(&path, "crashed-read.redb");
    let journal_before = fs::read(journal_of(&reader_copy)).unwrap();
    let mut permissions = fs::metadata(&reader_copy).unwrap().permissions();
    permissions.set_readonly(true);
    fs::set_permissions(&reader_copy, permissions).unwrap();
    let reader = Store::open_read_only(&reader_copy).unwrap();
    assert_eq!(all(&reader), records);
    assert!(annals::Audit::of(&reader).verify().unwrap().is_sound());
    drop(reader);
    assert_eq!(
        fs::read(journal_of(&reader_copy)).unwrap(),
        journal_before,
        "the reader left the journal as it was"
    );

    let recovered = exclusive(&copy, never_drained());
    let recovery = annals::maintenance::Stats::of(&recovered)
        .unwrap()
        .journal_recovery
        .clone();
    assert_eq!(recovery.transactions, 6);
    assert_eq!(recovery.records, 6);
    assert_eq!(recovery.from, Some(Position(3)));
    assert_eq!(recovery.dropped_bytes, 0);
    assert_eq!(all(&recovered), records);
    assert!(annals::Audit::of(&recovered).verify().unwrap().is_sound());
    // The idempotency keys came back with the records: a retry is a duplicate.
    let mut retry = event("journal.test", 1_700_000_000_000, b"payload");
    retry.idempotency_key = Some("b-0".into());
    let outcome = recovered
        .append("b", ExpectedVersion::Any, &[retry])
        .unwrap();
    assert!(
        !matches!(outcome, annals::AppendOutcome::Appended(_)),
        "{outcome:?}"
    );
    drop(recovered);
    let again = Store::open_read_only(&copy).unwrap();
    assert_eq!(all(&again), records);
}

#[test]
fn a_torn_frame_at_the_journals_end_is_dropped_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    append(&store, "a", 4);
    let records = all(&store);
    let copy = crash_image(&path, "torn.redb");
    // The start of a frame whose write the kill cut short: never synced, never acknowledged.
    let journal = journal_of(&copy);
    let mut bytes = fs::read(&journal).unwrap();
    let whole = journal_held(&copy) as usize;
    let start = HEADER as usize;
    let marker = annals::journal::MARKER_BYTES;
    let len_field = &bytes[start + marker..start + marker + 4];
    let first_len = marker + 4 + 32 + u32::from_le_bytes(len_field.try_into().unwrap()) as usize;
    let first = bytes[start..start + first_len].to_vec();
    // Into the room past the frames, as the torn write left it.
    let torn = &first[..first_len / 2];
    bytes[whole..whole + torn.len()].copy_from_slice(torn);
    fs::write(&journal, &bytes).unwrap();
    let torn_len = journal_held(&copy) as usize - whole;
    assert!(torn_len > 0 && torn_len <= torn.len());

    let recovered = exclusive(&copy, never_drained());
    assert_eq!(
        annals::maintenance::Stats::of(&recovered)
            .unwrap()
            .journal_recovery
            .transactions,
        4
    );
    // Counted to its last byte that is not a zero: zeros after it are the room's.
    assert_eq!(
        annals::maintenance::Stats::of(&recovered)
            .unwrap()
            .journal_recovery
            .dropped_bytes,
        torn_len as u64
    );
    assert_eq!(all(&recovered), records);
    assert!(annals::Audit::of(&recovered).verify().unwrap().is_sound());
}

#[test]
fn a_journal_of_another_log_is_refused_and_the_log_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (one, other) = (dir.path().join("one.redb"), dir.path().join("other.redb"));
    let store = exclusive(&one, never_drained());
    append(&store, "a", 2);
    store.flush().unwrap();
    let other_store = exclusive(&other, never_drained());
    append(&other_store, "z", 3);
    // This log's file with the other log's journal beside it.
    let copy = dir.path().join("copy.redb");
    fs::copy(&one, &copy).unwrap();
    fs::copy(journal_of(&other), journal_of(&copy)).unwrap();
    drop(store);
    let journal_before = fs::read(journal_of(&copy)).unwrap();
    match exclusive_result(&copy) {
        Err(Error::Journal(JournalError::Diverged { first, head, .. })) => {
            assert_eq!(first, Position(0));
            assert_eq!(head, Position(2));
        }
        other => panic!("expected a diverged journal, got {:?}", other.map(drop)),
    }
    assert!(
        fs::read(journal_of(&copy)).unwrap() == journal_before,
        "the refused open left the journal as it was"
    );
    let log = Store::open_with(
        &copy,
        StoreOptions {
            journal: None,
            ..StoreOptions::default()
        },
    );
    assert!(
        log.is_err(),
        "every writable open refuses the foreign journal"
    );
    fs::remove_file(journal_of(&copy)).unwrap();
    let reader = Store::open_read_only(&copy).unwrap();
    assert_eq!(
        reader.snapshot().unwrap().head().unwrap().next,
        Position(2),
        "the log holds its own two records"
    );
}

#[test]
fn a_journal_damaged_before_its_last_frame_is_refused_with_none_of_its_frames_in_the_log() {
    // Recovery appends every frame in one commit: a refusal found at a later frame leaves
    // none of the earlier ones in the log file, in either mode of a file's only writer.
    for sharing in [Sharing::Exclusive, Sharing::SingleWriter] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb");
        let store = exclusive(&path, never_drained());
        append(&store, "a", 2);
        store.flush().unwrap();
        append(&store, "b", 5);
        let copy = crash_image(&path, "damaged.redb");
        drop(store);
        let mut journal = fs::read(journal_of(&copy)).unwrap();
        let frames = annals::testing::damage::journal_frames(&journal);
        assert_eq!(frames.len(), 5, "one frame a commit since the flush");
        let (at, len) = frames[2];
        journal[at + len / 2] ^= 0x40;
        fs::write(journal_of(&copy), &journal).unwrap();
        let opened = Store::open_with(
            &copy,
            StoreOptions {
                sharing,
                ..StoreOptions::default()
            },
        );
        match opened {
            Err(Error::Journal(JournalError::Damaged { .. })) => {}
            other => panic!(
                "{sharing:?}: expected a damaged journal, got {:?}",
                other.map(drop)
            ),
        }
        assert!(
            fs::read(journal_of(&copy)).unwrap() == journal,
            "{sharing:?}: the refused open left the journal as it was"
        );
        // The log file alone (redb may have repaired its own crash image, which changes its
        // bytes, not its commits) holds the two flushed records and none of the five frames.
        fs::remove_file(journal_of(&copy)).unwrap();
        let log = Store::open_read_only(&copy).unwrap();
        assert_eq!(
            log.snapshot().unwrap().head().unwrap().next,
            Position(2),
            "{sharing:?}"
        );
    }
}

fn exclusive_result(path: &Path) -> annals::Result<Store> {
    Store::open_with(
        path,
        StoreOptions {
            sharing: Sharing::Exclusive,
            ..StoreOptions::default()
        },
    )
}

#[test]
fn a_single_writer_open_recovers_a_journal_an_exclusive_writer_left_and_journals_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    append(&store, "a", 3);
    let records = all(&store);
    let copy = crash_image(&path, "shared.redb");
    let shared = Store::open_with(&copy, StoreOptions::default()).unwrap();
    assert!(
        annals::maintenance::Stats::of(&shared).unwrap().journaled,
        "the default mode, single-writer, journals"
    );
    assert_eq!(
        annals::maintenance::Stats::of(&shared)
            .unwrap()
            .journal_recovery
            .transactions,
        3
    );
    assert_eq!(
        journal_held(&copy),
        HEADER,
        "recovered into the file, then emptied"
    );
    assert_eq!(all(&shared), records);
    append(&shared, "b", 1);
    assert!(
        journal_held(&copy) > HEADER,
        "the commit went to the journal"
    );
    assert!(annals::Audit::of(&shared).verify().unwrap().is_sound());
    shared.close().unwrap();
    assert!(
        !journal_of(&copy).exists(),
        "a clean close drains and removes it"
    );
}

#[test]
fn a_multi_writer_open_reads_a_journal_left_by_a_crash_and_shares_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    append(&store, "a", 3);
    let records = all(&store);
    let copy = crash_image(&path, "multi.redb");
    let options = StoreOptions {
        sharing: Sharing::MultiWriter,
        ..StoreOptions::default()
    };
    let multi = Store::open_with(&copy, options.clone()).unwrap();
    assert!(
        annals::maintenance::Stats::of(&multi).unwrap().journaled,
        "multi-writer mode commits through the journal"
    );
    assert_eq!(
        all(&multi),
        records,
        "the crash's commits, read from the journal"
    );
    let second = Store::open_with(&copy, options).unwrap();
    assert_eq!(all(&second), records);
    append(&second, "b", 2);
    assert_eq!(all(&multi), all(&second), "each reads the other's commits");
    assert!(
        journal_held(&copy) > HEADER,
        "the commit went to the journal"
    );
    multi.close().unwrap();
    assert!(
        journal_of(&copy).exists(),
        "a writer beside others leaves the journal they share"
    );
    second.flush().unwrap();
    assert!(annals::Audit::of(&second).verify().unwrap().is_sound());
    drop(second);
    let alone = Store::open_with(&copy, annals::StoreOptions::default()).unwrap();
    assert_eq!(
        annals::maintenance::Stats::of(&alone)
            .unwrap()
            .journal_recovery
            .transactions,
        0,
        "all in the file"
    );
    assert_eq!(all(&alone).len(), records.len() + 2);
}

#[test]
fn without_a_journal_an_exclusive_store_commits_to_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, None);
    assert!(!annals::maintenance::Stats::of(&store).unwrap().journaled);
    append(&store, "a", 2);
    assert!(!journal_of(&path).exists());
}

#[test]
fn deferred_commits_then_a_durable_one_survive_a_crash_together() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = exclusive(&path, never_drained());
    append(&store, "a", 2);
    for index in 0..3 {
        store
            .write_with(Durability::Deferred, |session| {
                session.append(
                    "deferred",
                    ExpectedVersion::Any,
                    &[event("journal.test", index, b"later")],
                )
            })
            .unwrap()
            .expect_done();
    }
    // The deferred commits are in no frame: the durable commit after them goes to the file
    // and takes them with it; the commits after that go through the journal again.
    append(&store, "c", 1);
    assert_eq!(journal_held(&path), HEADER);
    append(&store, "b", 2);
    let records = all(&store);
    let copy = crash_image(&path, "deferred.redb");
    let recovered = exclusive(&copy, never_drained());
    assert_eq!(all(&recovered), records);
    assert_eq!(
        annals::maintenance::Stats::of(&recovered)
            .unwrap()
            .journal_recovery
            .transactions,
        2
    );
    assert!(annals::Audit::of(&recovered).verify().unwrap().is_sound());
}

#[test]
fn drains_keep_the_journal_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let bound = 4_096;
    let store = exclusive(
        &path,
        Some(JournalOptions {
            checkpoint_ms: u64::MAX,
            checkpoint_bytes: bound,
        }),
    );
    let mut largest = 0;
    for index in 0..200 {
        // A stream each: `append` keys its events by stream and index, so a stream written
        // twice would be a duplicate that adds nothing to the journal.
        append(&store, &format!("s{index}"), 1);
        largest = largest.max(journal_held(&path));
    }
    assert!(largest > HEADER);
    // A frame here is under 300 bytes: the journal holds at most the bound and one frame.
    assert!(
        largest < HEADER + bound + 300,
        "the journal grew to {largest} bytes"
    );
    let records = all(&store);
    let copy = crash_image(&path, "drained.redb");
    let recovered = exclusive(&copy, never_drained());
    assert!(
        annals::maintenance::Stats::of(&recovered)
            .unwrap()
            .journal_recovery
            .already_in_log
            + annals::maintenance::Stats::of(&recovered)
                .unwrap()
                .journal_recovery
                .transactions
            <= 200
    );
    assert_eq!(all(&recovered), records);
}

#[test]
fn group_commit_writes_one_frame_per_batch_and_recovers_whole() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let store = std::sync::Arc::new(exclusive(&path, never_drained()));
    let writer = Writer::start(store.clone(), WriterOptions::default()).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let appends: Vec<_> = (0..64)
            .map(|index| {
                let writer = writer.clone();
                tokio::spawn(async move {
                    writer
                        .append(
                            format!("task/{}", index % 8),
                            ExpectedVersion::Any,
                            vec![NewEvent::new("journal.test", index, vec![1; 10])],
                        )
                        .await
                        .unwrap()
                })
            })
            .collect();
        for append in appends {
            append.await.unwrap().expect_done();
        }
    });
    let records = all(&store);
    assert_eq!(records.len(), 64);
    let copy = crash_image(&path, "group.redb");
    drop(writer);
    let recovered = exclusive(&copy, never_drained());
    let recovery = annals::maintenance::Stats::of(&recovered)
        .unwrap()
        .journal_recovery;
    assert_eq!(recovery.records, 64);
    assert!(recovery.transactions <= 64);
    assert_eq!(all(&recovered), records);
    assert!(annals::Audit::of(&recovered).verify().unwrap().is_sound());
}

#[test]
fn the_journal_takes_no_more_permissions_than_its_log_and_is_never_opened_through_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.redb");
    exclusive(&path, None).close().unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
    let store = exclusive(&path, never_drained());
    append(&store, "a", 2);
    let mode = fs::metadata(journal_of(&path))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "a journal beside a 0600 log: {mode:o}");

    // A journal an older build left readable by all is narrowed to the log's bits.
    let copy = crash_image(&path, "copy.redb");
    store.close().unwrap();
    fs::set_permissions(journal_of(&copy), fs::Permissions::from_mode(0o644)).unwrap();
    let recovered = exclusive(&copy, never_drained());
    let mode = fs::metadata(journal_of(&copy))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    recovered.close().unwrap();
    let journal = journal_of(&path);

    // A symbolic link at the journal's name is not the store's journal: neither followed
    // nor written through, whether it points at a file or nowhere.
    let elsewhere = dir.path().join("elsewhere");
    fs::write(&elsewhere, b"someone else's bytes").unwrap();
    for target in [elsewhere.clone(), dir.path().join("missing")] {
        std::os::unix::fs::symlink(&target, &journal).unwrap();
        for read_only in [false, true] {
            let opened = match read_only {
                true => Store::open_read_only(&path).map(drop),
                false => Store::open_with(
                    &path,
                    StoreOptions {
                        sharing: Sharing::Exclusive,
                        ..StoreOptions::default()
                    },
                )
                .map(drop),
            };
            match opened {
                Err(Error::Journal(JournalError::Unusable {
                    path: named,
                    reason,
                })) => {
                    assert_eq!(named, journal);
                    assert!(reason.contains("symbolic link"), "{reason}");
                }
                other => panic!("{target:?}, read-only {read_only}: {other:?}"),
            }
        }
        assert_eq!(fs::read(&elsewhere).unwrap(), b"someone else's bytes");
        assert!(!dir.path().join("missing").exists());
        fs::remove_file(&journal).unwrap();
    }
}

/// Commands through the overlay, drained into the file every few kilobytes of frames, with
/// readers in other threads all along: every read (a whole `verify` of one snapshot, the lease
/// table of one `state`) holds every commit acknowledged before it began and nothing torn — no
/// generation counted twice over the redb commit that absorbed it, none missing.
#[test]
fn readers_see_exactly_the_acknowledged_commits_through_the_overlay_and_its_drains() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.redb");
    let drained_often = Some(JournalOptions {
        checkpoint_ms: u64::MAX,
        checkpoint_bytes: 2048,
    });
    let store = Arc::new(exclusive(&path, drained_often));
    // Records acknowledged, and leases granted, as the writer last saw them returned.
    let acknowledged = Arc::new(AtomicU64::new(0));
    let granted = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|reader| {
            let (store, acknowledged, granted, done) = (
                Arc::clone(&store),
                Arc::clone(&acknowledged),
                Arc::clone(&granted),
                Arc::clone(&done),
            );
            std::thread::spawn(move || {
                let mut reads = 0u64;
                while !done.load(Ordering::Acquire) || reads == 0 {
                    let before = acknowledged.load(Ordering::Acquire);
                    let leases_before = granted.load(Ordering::Acquire);
                    if reader == 0 {
                        let report = annals::Audit::of(&store).verify().unwrap();
                        assert!(report.is_sound(), "read {reads}: {report:?}");
                        assert!(
                            report.head.next.0 >= before,
                            "read {reads} missed acknowledged commits: head {} < {before}",
                            report.head.next.0
                        );
                    } else {
                        let state = store.snapshot().unwrap().state();
                        let held = annals::leases::leases(&state, usize::MAX).unwrap();
                        assert!(
                            held.len() as u64 >= leases_before,
                            "read {reads} missed granted leases: {} < {leases_before}",
                            held.len()
                        );
                    }
                    reads += 1;
                }
                reads
            })
        })
        .collect();
    for index in 0..300u64 {
        let position = match index % 3 {
            0 => {
                let command = annals::leases::LeaseCommand::Acquire {
                    resource: format!("resource-{index}"),
                    holder: "host".into(),
                    ttl_ms: 60_000,
                    now_ms: 1_700_000_000_000 + index,
                };
                let outcome = store.execute(&command).unwrap();
                assert!(
                    matches!(outcome, annals::leases::LeaseOutcome::Granted { .. }),
                    "{outcome:?}"
                );
                granted.fetch_add(1, Ordering::Release);
                store.snapshot().unwrap().head().unwrap().next.0
            }
            _ => {
                let mut one = event("journal.overlay", 1_700_000_000_000 + index, b"payload");
                one.idempotency_key = Some(format!("key-{index}"));
                let stream = format!("stream-{}", index % 7);
                match store.append(&stream, ExpectedVersion::Any, &[one]).unwrap() {
                    annals::AppendOutcome::Appended(appended) => appended.head.next.0,
                    other => panic!("expected an append, got {other:?}"),
                }
            }
        };
        acknowledged.fetch_max(position, Ordering::Release);
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().unwrap() > 0);
    }
    let report = annals::Audit::of(&store).verify().unwrap();
    assert!(report.is_sound(), "{report:?}");
    assert_eq!(report.head.next, Position(300));
    // The drains ran: the journal was emptied into the file again and again, and holds at
    // most its bound and one frame.
    assert!(journal_held(&path) < HEADER + 2048 + 1024);
    Arc::into_inner(store).unwrap().close().unwrap();
    let reopened = exclusive(&path, None);
    assert_eq!(
        reopened.snapshot().unwrap().head().unwrap().next,
        Position(300)
    );
    assert!(annals::Audit::of(&reopened).verify().unwrap().is_sound());
}
