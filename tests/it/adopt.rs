//! Adopting a projection into a cut log (`StoreOptions::archives`): a projection added after
//! the cut, or a new version of one, is replayed from position 0 through the archives, its
//! state at the cut recorded in a cut of no records, and everything works after as before.

use annals::testing::setup::ExpectDone;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use annals::projection::{Table, WriteTables};
use annals::{
    Error, ExpectedVersion, Position, Record, Result, Sharing, Store, StoreOptions,
    error::ArchiveError, projection::Projection,
};

use crate::common::{COUNTS, KindCounts, event};

fn counts(version: u32, weight: u64) -> Option<KindCounts> {
    Some(KindCounts { version, weight })
}

fn open(
    path: &Path,
    projection: Option<KindCounts>,
    archives: &[PathBuf],
    sharing: Sharing,
) -> Result<Store> {
    let projections: Vec<Arc<dyn Projection>> = match projection {
        Some(projection) => vec![Arc::new(projection)],
        None => Vec::new(),
    };
    Store::open_with(
        path,
        StoreOptions {
            create: true,
            projections,
            sharing,
            archives: archives.to_vec(),
            ..StoreOptions::default()
        },
    )
}

fn count(store: &Store, kind: &str) -> Option<u64> {
    COUNTS
        .get(&store.snapshot().expect("state").state(), &kind.to_owned())
        .expect("a count")
}

/// Appends `records` events of kind `test.event` over 4 streams, every fifth append of two.
fn fill(store: &Store, records: u64) {
    let mut written = 0;
    let mut n = 0u64;
    while written < records {
        let batch = if n % 5 == 4 { 2 } else { 1 };
        let events: Vec<_> = (0..batch)
            .map(|i| event("test.event", n, format!("{n}/{i}").as_bytes()))
            .collect();
        let _outcome = store
            .append(&format!("s-{}", n % 4), ExpectedVersion::Any, &events)
            .expect("append");
        written += batch;
        n += 1;
    }
}

fn assert_sound(store: &Store) {
    let report = annals::Audit::of(store).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
}

/// A log of 120 test events written with `projection`, cut before 80 to `log-0.archive`,
/// then 30 more events: 151 records, the cut record at 120.
fn cut_log(dir: &Path, projection: Option<KindCounts>, sharing: Sharing) -> (PathBuf, PathBuf) {
    let path = dir.join("log.redb");
    let archive = dir.join("log-0.archive");
    let store = open(&path, projection, &[], sharing).expect("open");
    fill(&store, 120);
    let report = annals::archive::Archives::of(&store)
        .archive_before(Position(80), &archive)
        .expect("the cut");
    assert_eq!(report.record, Position(120));
    fill(&store, 30);
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        Position(151)
    );
    store.close().expect("close");
    (path, archive)
}

#[test]
fn a_projection_added_after_a_cut_is_replayed_from_its_archives() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, archive) = cut_log(dir.path(), None, Sharing::default());

    // Without the archives the open is refused, naming the projection and the cut.
    let refused = open(&path, counts(1, 1), &[], Sharing::default()).err();
    assert!(
        matches!(
            &refused,
            Some(Error::Archive(ArchiveError::NotInCut { projection, before }))
                if projection == "kind_counts" && *before == Position(80)
        ),
        "{refused:?}"
    );
    let store = open(&path, None, &[], Sharing::default()).expect("open as before");
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        Position(151)
    );
    assert_sound(&store);
    store.close().expect("close");

    // With them, the projection holds every record of the log's history, archived or not.
    let store = open(
        &path,
        counts(1, 1),
        std::slice::from_ref(&archive),
        Sharing::default(),
    )
    .expect("the open adopts the projection");
    assert_eq!(count(&store, "test.event"), Some(150));
    // The cut record and the adoption's own (a cut of no records at the log's start).
    assert_eq!(count(&store, "annals.cut"), Some(2));
    let head = store.snapshot().expect("head").head().expect("head").next;
    assert_eq!(head, Position(152));
    let snapshot = store.snapshot().expect("snapshot");
    assert_eq!(snapshot.start(), Position(80));
    let adopted = snapshot
        .get(Position(151))
        .expect("read")
        .expect("the adoption's record");
    assert_eq!(adopted.kind, "annals.cut");
    let cut = annals::archive::Cut::decode(&adopted.payload).expect("a cut");
    assert_eq!((cut.from, cut.before), (Position(80), Position(80)));
    let names: Vec<_> = cut.projections.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"kind_counts"), "{names:?}");
    drop(snapshot);
    assert_sound(&store);
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(std::slice::from_ref(&archive), &mut |_| {})
            .expect("verify the archives"),
        None
    );
    annals::maintenance::Rebuild::of(&store)
        .run(Some("kind_counts"))
        .expect("rebuild");
    assert_eq!(count(&store, "test.event"), Some(150));
    store.close().expect("close");

    // Adopted once: later opens, with or without the archives, append nothing.
    for archives in [vec![], vec![archive.clone()]] {
        let store = open(&path, counts(1, 1), &archives, Sharing::default()).expect("open");
        assert_eq!(
            store.snapshot().expect("head").head().expect("head").next,
            head
        );
        assert_eq!(count(&store, "test.event"), Some(150));
        store.close().expect("close");
    }

    // And the log cuts again, the projection in the new cut's snapshot.
    let store = open(&path, counts(1, 1), &[], Sharing::default()).expect("open");
    fill(&store, 10);
    let second = dir.path().join("log-1.archive");
    let _report = annals::archive::Archives::of(&store)
        .archive_before(Position(140), &second)
        .expect("a second cut");
    assert_sound(&store);
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(&[second, archive], &mut |_| {})
            .expect("verify the archives"),
        None
    );
    assert_eq!(count(&store, "test.event"), Some(160));
}

#[test]
fn a_new_version_of_a_kept_projection_is_replayed_from_its_archives() {
    for sharing in [
        Sharing::SingleWriter,
        Sharing::Exclusive,
        Sharing::MultiWriter,
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let (path, archive) = cut_log(dir.path(), counts(1, 1), sharing);
        let refused = open(&path, counts(2, 10), &[], sharing).err();
        assert!(
            matches!(
                &refused,
                Some(Error::Archive(ArchiveError::NotInCut { projection, .. }))
                    if projection == "kind_counts"
            ),
            "{sharing:?}: {refused:?}"
        );
        let store = open(
            &path,
            counts(2, 10),
            std::slice::from_ref(&archive),
            sharing,
        )
        .unwrap_or_else(|error| panic!("{sharing:?}: {error}"));
        assert_eq!(count(&store, "test.event"), Some(1500), "{sharing:?}");
        assert_eq!(count(&store, "annals.cut"), Some(20), "{sharing:?}");
        assert_sound(&store);
        assert_eq!(
            annals::archive::Archives::of(&store)
                .verify(std::slice::from_ref(&archive), &mut |_| {})
                .expect("verify the archives"),
            None,
            "{sharing:?}"
        );
        fill(&store, 4);
        assert_eq!(count(&store, "test.event"), Some(1540), "{sharing:?}");
        store.close().expect("close");
        let store = open(&path, counts(2, 10), &[], sharing).expect("reopen");
        assert_eq!(count(&store, "test.event"), Some(1540), "{sharing:?}");
        assert_sound(&store);
    }
}

#[test]
fn archives_that_do_not_give_the_cut_are_refused_and_nothing_is_appended() {
    let dir = tempfile::tempdir().expect("dir");
    let (path, archive) = cut_log(dir.path(), counts(1, 1), Sharing::default());
    let other_dir = tempfile::tempdir().expect("dir");
    let (_, other) = {
        // Another log's history, cut at the same place: its records hash otherwise.
        let path = other_dir.path().join("log.redb");
        let store = open(&path, None, &[], Sharing::default()).expect("open");
        store
            .append("x", ExpectedVersion::Any, &[event("other", 1, b"x")])
            .expect("append")
            .expect_done();
        fill(&store, 119);
        let other = other_dir.path().join("log-0.archive");
        let _report = annals::archive::Archives::of(&store)
            .archive_before(Position(80), &other)
            .expect("cut");
        (path, other)
    };

    let not_its_history = open(&path, counts(2, 1), &[other], Sharing::default()).err();
    assert!(
        matches!(
            &not_its_history,
            Some(Error::Archive(ArchiveError::ArchivedHash { position, .. })) if *position == Position(0)
        ),
        "{not_its_history:?}"
    );
    // One version with other rules: the archives replay it to another state than the cut's.
    // (It has its snapshot; the projection added beside it is what makes the open adopt.)
    let projections: Vec<Arc<dyn Projection>> = vec![
        Arc::new(KindCounts {
            version: 1,
            weight: 3,
        }),
        Arc::new(Extra),
    ];
    let differs = Store::open_with(
        &path,
        StoreOptions {
            projections,
            archives: vec![archive],
            ..StoreOptions::default()
        },
    )
    .err();
    assert!(
        matches!(
            &differs,
            Some(Error::Archive(ArchiveError::SnapshotDiffers { projection, before, .. }))
                if projection == "kind_counts" && *before == Position(80)
        ),
        "{differs:?}"
    );
    let store = open(&path, counts(1, 1), &[], Sharing::default()).expect("open");
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        Position(151)
    );
    assert_eq!(count(&store, "annals.cut"), Some(1));
    assert_sound(&store);
    store.close().expect("close");
}

/// A second projection of no tables' worth: its being added is what makes an open adopt.
struct Extra;

const SEEN: Table<String, u64> = Table::new("extra.seen");

impl Projection for Extra {
    fn name(&self) -> &'static str {
        "extra"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &["extra.seen"]
    }
    fn apply(&self, tables: &WriteTables<'_>, record: &Record) -> Result<()> {
        let seen = SEEN.get(tables, &record.stream)?.unwrap_or(0);
        SEEN.insert(tables, &record.stream, &(seen + 1))
    }
}

fn open_on(
    disk: &annals::testing::sim::SimDisk,
    projection: Option<KindCounts>,
    archives: &[PathBuf],
) -> Result<Store> {
    let projections: Vec<Arc<dyn Projection>> = match projection {
        Some(projection) => vec![Arc::new(projection)],
        None => Vec::new(),
    };
    Store::open_with_backend(
        disk.backend(),
        StoreOptions {
            create: true,
            projections,
            archives: archives.to_vec(),
            ..StoreOptions::default()
        },
    )
}

/// The log in `image` is as before the adoption (151 records) or adopted (152, the last a
/// cut of no records); it verifies, and an open with the archive adopts it if it was not.
fn before_or_adopted(image: Vec<u8>, archive: &Path, what: &str) -> bool {
    use annals::testing::sim::{Fault, SimDisk};
    let disk = SimDisk::new(image, Fault::None);
    let head = {
        let store = open_on(&disk, None, &[]).unwrap_or_else(|error| panic!("{what}: {error}"));
        assert_sound(&store);
        store.snapshot().expect("head").head().expect("head").next
    };
    let adopted = match head {
        Position(151) => false,
        Position(152) => true,
        other => panic!("{what}: neither before nor adopted: head {other}"),
    };
    let disk = SimDisk::new(disk.image_after_restart(), Fault::None);
    let store = open_on(&disk, counts(1, 1), &[archive.to_owned()])
        .unwrap_or_else(|error| panic!("{what}: adopt after: {error}"));
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        Position(152),
        "{what}"
    );
    assert_eq!(count(&store, "test.event"), Some(150), "{what}");
    assert_sound(&store);
    adopted
}

#[test]
fn an_adoption_crashed_or_failed_at_any_write_or_sync_leaves_the_log_before_or_adopted() {
    use annals::testing::sim::{Fault, SimDisk};
    let dir = tempfile::tempdir().expect("dir");
    let archive = dir.path().join("log-0.archive");
    let image = {
        let disk = SimDisk::new(Vec::new(), Fault::None);
        let store = open_on(&disk, None, &[]).expect("open");
        fill(&store, 120);
        let _report = annals::archive::Archives::of(&store)
            .archive_before(Position(80), &archive)
            .expect("cut");
        fill(&store, 30);
        store.close().expect("close");
        disk.image_after_restart()
    };
    // A dry run counts the adopting open's operations.
    let dry = SimDisk::new(image.clone(), Fault::None);
    let store = open_on(&dry, counts(1, 1), std::slice::from_ref(&archive)).expect("adopt");
    let (ops, syncs) = (dry.ops(), dry.syncs());
    drop(store);
    let (mut adopted, mut before) = (0, 0);
    for fault in crate::common::sweep_faults(1..=syncs, 1..=ops) {
        let what = format!("{fault:?}");
        let disk = SimDisk::new(image.clone(), fault);
        let result = open_on(&disk, counts(1, 1), std::slice::from_ref(&archive));
        let acknowledged = result.is_ok() && !matches!(fault, Fault::Crash(..));
        drop(result);
        let survived = match fault {
            Fault::FailOnce(_) => disk.image_after_restart(),
            _ => disk.image_after_power_loss(),
        };
        let was_adopted = before_or_adopted(survived, &archive, &what);
        assert!(
            was_adopted || !acknowledged,
            "{what}: acknowledged, not adopted"
        );
        if was_adopted {
            adopted += 1;
        } else {
            before += 1;
        }
    }
    // Both outcomes were reached: the sweep crossed the commit.
    assert!(
        adopted > 0 && before > 0,
        "adopted {adopted}, before {before}"
    );
}

#[test]
fn a_refused_adoption_after_a_journals_recovery_leaves_the_old_version_whole() {
    // An exclusive writer with KindCounts v1 cuts its log, journals 30 more events and is
    // killed (its file and journal copied while it is open). An open with v2 and no archives
    // recovers the journal and is refused; v1 then still counts every event.
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("log.redb");
    let store = Store::open_with(
        &path,
        StoreOptions {
            create: true,
            sharing: Sharing::Exclusive,
            projections: vec![Arc::new(KindCounts {
                version: 1,
                weight: 1,
            })],
            journal: Some(annals::journal::JournalOptions {
                checkpoint_ms: u64::MAX,
                checkpoint_bytes: u64::MAX,
            }),
            ..StoreOptions::default()
        },
    )
    .expect("open");
    fill(&store, 120);
    let _report = annals::archive::Archives::of(&store)
        .archive_before(Position(80), dir.path().join("log-0.archive"))
        .expect("cut");
    fill(&store, 30);
    let crashed = dir.path().join("crashed.redb");
    std::fs::copy(&path, &crashed).expect("copy the log");
    std::fs::copy(
        annals::journal::journal_path(&path),
        annals::journal::journal_path(&crashed),
    )
    .expect("copy the journal");
    drop(store);

    let refused = open(&crashed, counts(2, 10), &[], Sharing::Exclusive).err();
    assert!(
        matches!(
            &refused,
            Some(Error::Archive(ArchiveError::NotInCut { .. }))
        ),
        "{refused:?}"
    );
    let store = open(&crashed, counts(1, 1), &[], Sharing::Exclusive).expect("open v1");
    assert_eq!(
        store.snapshot().expect("head").head().expect("head").next,
        Position(151)
    );
    assert_eq!(count(&store, "test.event"), Some(150));
    assert_sound(&store);
}
