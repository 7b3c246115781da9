//! Cutting a log (`Store::archive_before`): a prefix goes to an archive file, and everything
//! else works as before the cut.

use annals::{
    AppendOutcome, Direction, Error, ExpectedVersion, Position, Store, audit::Problem,
    error::ArchiveError,
};

use annals::testing::setup::fill_interleaved as fill;

use crate::common::{event, store};

fn assert_sound(store: &Store) {
    let report = annals::Audit::of(store).verify().expect("verify runs");
    assert!(report.is_sound(), "verify: {:?}", report.problem);
}

#[test]
fn every_boundary_cuts_and_the_log_works_after() {
    // `fill` appends three events at once every tenth append: positions 9..12, 21..24,
    // 33..36. So: at 0; at stream s-1's first record (1); inside a multi-event append (10);
    // just after one (12, 24); inside a segment (17, 40, 100, 160); at the head (200).
    for before in [0u64, 1, 10, 12, 17, 24, 40, 100, 160, 200] {
        let (dir, store) = store();
        fill(&store, 200);
        let head = store.snapshot().expect("head").head().expect("head");
        let snapshot = store.snapshot().expect("snapshot");
        let root = snapshot.merkle_root(head.next.0).expect("root");
        let proofs: Vec<_> = [1u64, 3, 16, 17, 50, 150]
            .iter()
            .filter(|size| **size <= head.next.0)
            .map(|size| {
                snapshot
                    .consistency_proof(*size, head.next.0)
                    .expect("proof")
            })
            .collect();
        let inclusion: Vec<_> = (before..head.next.0)
            .step_by(7)
            .map(|p| {
                snapshot
                    .inclusion_proof(Position(p), head.next.0)
                    .expect("inclusion")
            })
            .collect();
        let expected: Vec<_> = snapshot
            .records(Position(before.min(head.next.0)), Direction::Forward)
            .expect("records")
            .map(|r| r.expect("record"))
            .collect();
        drop(snapshot);

        let archive = dir.path().join("log-0.archive");
        let report = annals::archive::Archives::of(&store)
            .archive_before(Position(before), &archive)
            .unwrap_or_else(|error| panic!("cut before {before}: {error}"));
        assert_eq!(report.archived, before);
        assert_eq!(report.record, head.next);
        assert!(archive.exists());
        let _checked = annals::export::check(&archive, &mut |_| {}).expect("the archive checks");
        assert_sound(&store);

        let snapshot = store.snapshot().expect("snapshot");
        assert_eq!(snapshot.start(), Position(before));
        // The tree does not change: the same root, the same proofs.
        assert_eq!(snapshot.merkle_root(head.next.0).expect("root"), root);
        for (size, proof) in [1u64, 3, 16, 17, 50, 150]
            .iter()
            .filter(|size| **size <= head.next.0)
            .zip(&proofs)
        {
            assert_eq!(
                &snapshot
                    .consistency_proof(*size, head.next.0)
                    .expect("proof"),
                proof,
                "consistency from {size} after a cut before {before}"
            );
        }
        for (p, proof) in (before..head.next.0).step_by(7).zip(&inclusion) {
            assert_eq!(
                &snapshot
                    .inclusion_proof(Position(p), head.next.0)
                    .expect("inclusion"),
                proof
            );
        }
        let kept: Vec<_> = snapshot
            .records(Position(before), Direction::Forward)
            .expect("records")
            .map(|r| r.expect("record"))
            .take(expected.len())
            .collect();
        assert_eq!(kept, expected);
        let backward: Vec<_> = snapshot
            .records(Position(u64::MAX), Direction::Backward)
            .expect("records")
            .map(|r| r.expect("record").position.0)
            .collect();
        assert_eq!(backward, (before..=head.next.0).rev().collect::<Vec<_>>());
        if before > 0 {
            let refused = snapshot.get(Position(before - 1)).expect_err("archived");
            assert_eq!(
                refused.to_string(),
                format!(
                    "position {} is archived before {before} in log-0.archive",
                    before - 1
                )
            );
            assert!(matches!(
                snapshot.records(Position(0), Direction::Forward),
                Err(Error::Archive(ArchiveError::Archived { .. }))
            ));
            let stream: Result<Vec<_>, _> = snapshot
                .stream("s-0", annals::log::StreamVersion(0), Direction::Forward)
                .expect("stream")
                .collect();
            assert!(matches!(
                stream,
                Err(Error::Archive(ArchiveError::Archived { .. }))
            ));
        }
        drop(snapshot);

        // Appends go on: versions continue and archived keys still deduplicate.
        let again = store
            .append(
                "s-0",
                ExpectedVersion::Any,
                &[event("test.event", 0, b"0/0").with_idempotency_key("key-0-0")],
            )
            .expect("append");
        assert!(
            matches!(again, AppendOutcome::Duplicate { ref positions } if positions == &[Position(0)]),
            "{again:?}"
        );
        fill(&store, 260);
        assert_sound(&store);
        annals::maintenance::Rebuild::of(&store)
            .run(None)
            .expect("rebuild from the snapshot");
        assert_sound(&store);
    }
}

#[test]
fn cuts_repeat_and_refuse_going_back() {
    let (dir, store) = store();
    fill(&store, 100);
    let _cut = annals::archive::Archives::of(&store)
        .archive_before(Position(30), dir.path().join("a0"))
        .expect("first cut");
    fill(&store, 150);
    let second = annals::archive::Archives::of(&store)
        .archive_before(Position(90), dir.path().join("a1"))
        .expect("second cut");
    assert_eq!(
        (second.cut.from, second.cut.before),
        (Position(30), Position(90))
    );
    assert_sound(&store);
    let back = annals::archive::Archives::of(&store)
        .archive_before(Position(50), dir.path().join("a2"))
        .expect_err("backwards");
    assert!(matches!(
        back,
        Error::Archive(ArchiveError::NotForward { .. })
    ));
    let past = annals::archive::Archives::of(&store)
        .archive_before(Position(10_000), dir.path().join("a2"))
        .expect_err("past the head");
    assert!(matches!(
        past,
        Error::Archive(ArchiveError::PastHead { .. })
    ));
    assert!(!dir.path().join("a2").exists());
    // Reopened, the log reads as cut.
    let path = store.path().to_owned();
    store.close().expect("close");
    let reopened = Store::open(&path).expect("reopen");
    assert_eq!(reopened.snapshot().expect("snapshot").start(), Position(90));
    assert_sound(&reopened);
}

#[test]
fn the_demo_cuts_with_its_projections_and_keeps_what_they_read() {
    let (dir, store) = store();
    annals::demo::run(&store, 3_000, |_| {}).expect("demo");
    let head = store.snapshot().expect("head").head().expect("head").next.0;
    let before_state = annals::Audit::of(&store)
        .state_json("runs", None)
        .expect("runs before");
    let report = annals::archive::Archives::of(&store)
        .archive_before(Position(head / 2), dir.path().join("demo.archive"))
        .expect("cut");
    assert_eq!(
        report.cut.projections.len(),
        store.projections().iter().count()
    );
    // Runs read their span events back from the log: those records stay readable.
    assert_eq!(
        annals::Audit::of(&store)
            .state_json("runs", None)
            .expect("runs after"),
        before_state
    );
    assert_sound(&store);
    let archives = [dir.path().join("demo.archive")];
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(&archives, &mut |_| {})
            .expect("archives"),
        None
    );
    annals::demo::run(&store, head + 2_000, |_| {}).expect("demo after the cut");
    assert_sound(&store);
    let second = annals::archive::Archives::of(&store)
        .archive_before(Position(head + 1_000), dir.path().join("demo-1.archive"))
        .expect("second cut");
    assert_eq!(second.cut.from, Position(head / 2));
    assert_sound(&store);
    let archives = [
        dir.path().join("demo-1.archive"),
        dir.path().join("demo.archive"),
    ];
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(&archives, &mut |_| {})
            .expect("archives"),
        None
    );
    annals::maintenance::Rebuild::of(&store)
        .run(None)
        .expect("rebuild");
    assert_sound(&store);
    // Archives are nothing to a log never cut.
    let (_other_dir, uncut) = crate::common::store();
    fill(&uncut, 10);
    let refused = annals::archive::Archives::of(&uncut)
        .verify(&archives, &mut |_| {})
        .expect_err("never cut");
    assert!(
        matches!(refused, Error::Archive(ArchiveError::NeverCut)),
        "{refused}"
    );
    // Without the first archive, the second does not start at 0.
    let refused = annals::archive::Archives::of(&store)
        .verify(&archives[..1], &mut |_| {})
        .expect_err("a gap");
    assert!(
        matches!(refused, Error::Archive(ArchiveError::ArchiveGap { .. })),
        "{refused}"
    );
}

#[test]
fn a_cut_record_the_log_did_not_make_is_found() {
    let (dir, store) = store();
    fill(&store, 50);
    let refused = store
        .append(
            "annals.cuts",
            ExpectedVersion::Any,
            &[event("annals.cut", 0, b"forged")],
        )
        .expect_err("raw cut records are refused");
    assert!(matches!(
        refused,
        Error::Store(annals::error::StoreError::CutKind { .. })
    ));
    let _cut = annals::archive::Archives::of(&store)
        .archive_before(Position(20), dir.path().join("a0"))
        .expect("cut");
    let forged = store
        .write(|session| {
            session.append_unchecked(
                "annals.cuts",
                ExpectedVersion::Any,
                &[event("annals.cut", 0, b"forged")],
            )
        })
        .expect("append")
        .first_position();
    let report = annals::Audit::of(&store).verify().expect("verify");
    let finding = report.problem.expect("a finding");
    assert_eq!(finding.position, forged);
    assert!(
        matches!(finding.problem, Problem::Cut { .. }),
        "{finding:?}"
    );
}

#[test]
fn tiles_of_a_cut_log_are_those_before_the_cut() {
    let (dir, store) = store();
    fill(&store, 600);
    let signer = annals::tlog::Signer::from_seed("example.com/cut", [7; 32]).expect("signer");
    let before = dir.path().join("before");
    annals::maintenance::Tiles::of(&store)
        .write(&before, &signer)
        .expect("tiles before");
    let _cut = annals::archive::Archives::of(&store)
        .archive_before(Position(530), dir.path().join("a0"))
        .expect("cut");
    let after = dir.path().join("after");
    annals::maintenance::Tiles::of(&store)
        .write(&after, &signer)
        .expect("tiles after");
    // The full tiles of the first 512 leaves, entries and hashes, are byte for byte the same.
    for tile in [
        "tile/0/000",
        "tile/0/001",
        "tile/entries/000",
        "tile/entries/001",
    ] {
        assert_eq!(
            std::fs::read(before.join(tile)).expect("tile before"),
            std::fs::read(after.join(tile)).expect("tile after"),
            "{tile}"
        );
    }
}

#[test]
fn an_archive_that_is_not_the_logs_history_is_refused_naming_the_record() {
    let (dir, store) = store();
    fill(&store, 120);
    let archive = dir.path().join("a0");
    let _cut = annals::archive::Archives::of(&store)
        .archive_before(Position(100), &archive)
        .expect("cut");
    let archives = [archive.clone()];
    assert_eq!(
        annals::archive::Archives::of(&store)
            .verify(&archives, &mut |_| {})
            .expect("sound"),
        None
    );
    // Another log's archive of the same length: its records are not the ones the tree holds.
    let (other_dir, other) = crate::common::store();
    let _other = other
        .append(
            "x",
            ExpectedVersion::Any,
            &[event("test.event", 0, b"other")],
        )
        .expect("append");
    fill(&other, 101);
    let foreign = other_dir.path().join("foreign");
    let _exported = annals::export::export(
        &other.snapshot().expect("snapshot"),
        Position(0),
        Position(100),
        &foreign,
        &mut |_| {},
    )
    .expect("export");
    let refused = annals::archive::Archives::of(&store)
        .verify(&[foreign], &mut |_| {})
        .expect_err("foreign");
    assert!(
        matches!(refused, Error::Archive(ArchiveError::ArchivedHash { .. })),
        "{refused}"
    );
    // A flipped byte in the archive is refused with the record it damaged.
    let mut bytes = std::fs::read(&archive).expect("read");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    let damaged = dir.path().join("damaged");
    std::fs::write(&damaged, &bytes).expect("write");
    let refused = annals::archive::Archives::of(&store)
        .verify(&[damaged], &mut |_| {})
        .expect_err("damaged");
    assert!(
        matches!(&refused, Error::Export(_) | Error::Archive(_)),
        "{refused}"
    );
    assert!(refused.to_string().contains("position"), "{refused}");
}

#[test]
fn the_archives_and_an_export_of_the_rest_rebuild_the_whole_history() {
    let (dir, store) = store();
    annals::demo::run(&store, 2_000, |_| {}).expect("demo");
    let original_root = {
        let snapshot = store.snapshot().expect("snapshot");
        snapshot
            .merkle_root(snapshot.head().expect("head").next.0)
            .expect("root")
    };
    let archive = dir.path().join("a0");
    let report = annals::archive::Archives::of(&store)
        .archive_before(Position(900), &archive)
        .expect("cut");
    let rest = dir.path().join("rest.export");
    let snapshot = store.snapshot().expect("snapshot");
    let head = snapshot.head().expect("head").next;
    let _exported = annals::export::export(&snapshot, Position(900), head, &rest, &mut |_| {})
        .expect("an export from the cut");
    drop(snapshot);
    // A log never cut, holding the whole history, the cut record with it.
    let restored = dir.path().join("restored.redb");
    let _first = annals::maintenance::Import::run(&archive, &restored, &mut |_, _| {})
        .expect("import the archive");
    let _rest = annals::maintenance::Import::run(&rest, &restored, &mut |_, _| {})
        .expect("import the rest");
    let restored = Store::open(&restored).expect("open");
    let snapshot = restored.snapshot().expect("snapshot");
    assert_eq!(snapshot.start(), Position(0));
    assert_eq!(
        snapshot.merkle_root(report.record.0).expect("root"),
        original_root
    );
    drop(snapshot);
    // The cut record stands: a replay of this log reaches the digests it names.
    assert_sound(&restored);
}

#[test]
fn a_cut_record_whose_digests_are_not_the_logs_is_found() {
    let (_dir, store) = store();
    annals::demo::run(&store, 500, |_| {}).expect("demo");
    let head = store.snapshot().expect("head").head().expect("head");
    let forged = annals::archive::Cut {
        from: Position(0),
        before: Position(100),
        anchor: store
            .snapshot()
            .expect("snapshot")
            .get(Position(99))
            .expect("read")
            .expect("record")
            .hash,
        keyed: 0,
        archive: "nowhere".to_owned(),
        archive_digest: annals::log::Digest([0; 32]),
        projections: vec![annals::archive::CutProjection {
            name: "leases".to_owned(),
            version: store.projections().get("leases").expect("leases").version(),
            digest: annals::log::Digest([1; 32]),
        }],
    };
    let position = store
        .write(|session| {
            session.append_unchecked(
                "annals.cuts",
                ExpectedVersion::Any,
                &[event("annals.cut", 0, &forged.encode())],
            )
        })
        .expect("append")
        .first_position();
    assert_eq!(position, head.next);
    let finding = annals::Audit::of(&store)
        .verify()
        .expect("verify")
        .problem
        .expect("a finding");
    assert_eq!(finding.position, position);
    assert!(
        finding.to_string().contains("projection leases digests to"),
        "{finding}"
    );
}

#[test]
fn a_cut_that_drops_keys_leaves_the_archived_ones_free_and_the_kept_ones_duplicates() {
    let (dir, store) = store();
    fill(&store, 120);
    let options = annals::archive::ArchiveOptions { drop_keys: true };
    let report = annals::archive::Archives::of(&store)
        .archive_before_with(Position(60), &dir.path().join("a0"), options, &mut |_| {})
        .expect("cut");
    assert_eq!(report.cut.keyed, 0);
    assert_sound(&store);
    // Position 0 carried key-0-0: archived and dropped, it appends anew.
    let again = store
        .append(
            "s-0",
            ExpectedVersion::Any,
            &[event("test.event", 0, b"0/0").with_idempotency_key("key-0-0")],
        )
        .expect("append");
    assert!(matches!(again, AppendOutcome::Appended(_)), "{again:?}");
    // A key of a kept record is still a duplicate.
    let kept = store
        .snapshot()
        .expect("snapshot")
        .records(Position(60), Direction::Forward)
        .expect("records")
        .map(|r| r.expect("record"))
        .find(|r| r.idempotency_key.is_some())
        .expect("a kept record with a key");
    let repeat = store
        .append(
            &kept.stream,
            ExpectedVersion::Any,
            &[event(&kept.kind, kept.at_ms, &kept.payload)
                .with_idempotency_key(kept.idempotency_key.clone().expect("key"))],
        )
        .expect("append");
    assert!(
        matches!(repeat, AppendOutcome::Duplicate { ref positions } if positions == &[kept.position]),
        "{repeat:?}"
    );
    assert_sound(&store);
}
