//! Export and import: a demo log survives the round trip with the same head hash and root; a
//! damaged or forged file is refused at its first bad position and the target is untouched.

use annals::testing::setup::ExpectDone;
use std::fs;
use std::path::{Path, PathBuf};

use annals::export::{ExportError, export};
use annals::testing::internals::record::{Placement, encode_stored};
use annals::{Error, NewEvent, Position, Store};
use tempfile::TempDir;

/// A demo log of about 2,000 records and its folder.
fn demo_log() -> (TempDir, PathBuf) {
    demo_log_of(2_000)
}

/// A demo log of about `records` records and its folder.
fn demo_log_of(records: u64) -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("source.redb");
    let store = Store::open(&path).unwrap();
    annals::testing::internals::demo::run(&store, records, |_| {}).unwrap();
    (dir, path)
}

fn export_range(source: &Path, file: &Path, from: u64, to: Option<u64>) {
    let store = Store::open_read_only(source).unwrap();
    let snapshot = store.snapshot().unwrap();
    let to = to.unwrap_or(snapshot.head().unwrap().next.0);
    export(&snapshot, Position(from), Position(to), file, &mut |_| {})
        .unwrap()
        .expect_done();
}

fn import(file: &Path, target: &Path) -> annals::Result<()> {
    annals::maintenance::Import::run(file, target, &mut |_, _| {}).map(drop)
}

/// The byte offset of each record's length prefix in an export file, and the end of the last.
fn record_offsets(file: &Path) -> Vec<usize> {
    let bytes = fs::read(file).unwrap();
    let from = u64::from_le_bytes(bytes[20..28].try_into().unwrap());
    let to = u64::from_le_bytes(bytes[28..36].try_into().unwrap());
    let mut at = 16 + 4 + 8 + 8 + 32 + 32 * from.count_ones() as usize + 32 + 32;
    let mut offsets = Vec::new();
    for _ in from..=to {
        offsets.push(at);
        if offsets.len() as u64 > to - from {
            break;
        }
        let len = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        at += 4 + len;
    }
    offsets
}

fn refused_at(result: annals::Result<()>) -> Position {
    match result {
        Err(Error::Export(error)) => error
            .position()
            .unwrap_or_else(|| panic!("refused without a position: {error}")),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn head_and_root(path: &Path) -> (annals::log::Head, annals::log::Digest) {
    let store = Store::open_read_only(path).unwrap();
    let snapshot = store.snapshot().unwrap();
    let head = snapshot.head().unwrap();
    (head, snapshot.merkle_root(head.next.0).unwrap())
}

#[test]
fn export_then_import_gives_the_same_head_hash_root_and_state() {
    let (dir, source) = demo_log();
    let file = dir.path().join("demo.annals-export");
    export_range(&source, &file, 0, None);
    let target = dir.path().join("copy.redb");
    import(&file, &target).unwrap();
    let (head, root) = head_and_root(&source);
    assert!(head.next.0 >= 2_000);
    assert_eq!(head_and_root(&target), (head, root));
    let copy = Store::open_read_only(&target).unwrap();
    assert!(annals::Audit::of(&copy).verify().unwrap().is_sound());
    let original = Store::open_read_only(&source).unwrap();
    for projection in ["registry", "leases", "outbox", "runs"] {
        assert_eq!(
            annals::Audit::of(&copy)
                .state_json(projection, None)
                .unwrap(),
            annals::Audit::of(&original)
                .state_json(projection, None)
                .unwrap(),
            "{projection}"
        );
    }
    assert!(!dir.path().join("copy.redb.importing").exists());
}

#[test]
fn an_export_from_a_position_continues_the_log_it_was_cut_from() {
    let (dir, source) = demo_log();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    export_range(&source, &first, 0, Some(777));
    export_range(&source, &second, 777, None);
    let target = dir.path().join("copy.redb");
    // The second half alone cannot start a log.
    assert!(matches!(
        import(&second, &target),
        Err(Error::Export(error)) if matches!(*error, ExportError::Mismatch { .. })
    ));
    assert!(!target.exists());
    import(&first, &target).unwrap();
    assert_eq!(head_and_root(&target).0.next, Position(777));
    import(&second, &target).unwrap();
    assert_eq!(head_and_root(&target), head_and_root(&source));
    // Importing it again does not continue the log any more, and changes nothing.
    let before = fs::read(&target).unwrap();
    assert!(import(&second, &target).is_err());
    assert_eq!(fs::read(&target).unwrap(), before);
}

#[test]
fn a_flipped_byte_is_refused_at_its_record_and_no_log_is_made() {
    let (dir, source) = demo_log();
    let file = dir.path().join("export");
    export_range(&source, &file, 0, None);
    let offsets = record_offsets(&file);
    let clean = fs::read(&file).unwrap();
    let target = dir.path().join("copy.redb");
    for position in [0usize, 1, 500, 1_234, offsets.len() - 2] {
        // The record's hash, a header byte, and its last payload byte.
        let start = offsets[position] + 4;
        let end = offsets[position + 1];
        for at in [start + 3, start + 40, end - 1] {
            let mut bytes = clean.clone();
            bytes[at] ^= 0x10;
            fs::write(&file, &bytes).unwrap();
            assert_eq!(
                refused_at(import(&file, &target)),
                Position(position as u64)
            );
            assert!(!target.exists());
            assert!(!dir.path().join("copy.redb.importing").exists());
        }
    }
}

#[test]
fn a_truncated_file_is_refused_where_it_ends() {
    let (dir, source) = demo_log();
    let file = dir.path().join("export");
    export_range(&source, &file, 0, None);
    let offsets = record_offsets(&file);
    let clean = fs::read(&file).unwrap();
    let target = dir.path().join("copy.redb");
    for (cut, position) in [
        (offsets[900] + 2, 900),
        (offsets[900] + 20, 900),
        (offsets[offsets.len() - 1] + 10, offsets.len() - 1),
    ] {
        fs::write(&file, &clean[..cut]).unwrap();
        assert_eq!(
            refused_at(import(&file, &target)),
            Position(position as u64)
        );
        assert!(!target.exists());
    }
}

#[test]
fn a_resealed_forgery_is_refused_at_the_first_broken_link_or_at_the_root() {
    let (dir, source) = demo_log();
    let file = dir.path().join("export");
    export_range(&source, &file, 0, None);
    let offsets = record_offsets(&file);
    let clean = fs::read(&file).unwrap();
    let records = offsets.len() - 1;
    let reader_records: Vec<annals::Record> = {
        let mut reader = annals::export::open(&file).unwrap();
        std::iter::from_fn(|| reader.next_record().unwrap()).collect()
    };
    let target = dir.path().join("copy.redb");
    // Forge record `position` with another payload, sealed properly: sound by itself.
    for (position, refused) in [(10, 11), (records - 1, records)] {
        let original = &reader_records[position];
        let mut forged = Vec::new();
        let event = NewEvent {
            kind: original.kind.clone(),
            schema: original.schema,
            at_ms: original.at_ms,
            idempotency_key: original.idempotency_key.clone(),
            payload: b"forged".to_vec(),
        };
        let placement = Placement {
            stream: &original.stream,
            position: original.position,
            version: original.version,
            prev: original.prev,
        };
        encode_stored(&mut forged, &event, placement).unwrap();
        let mut bytes = clean[..offsets[position]].to_vec();
        bytes.extend_from_slice(&(forged.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&forged);
        bytes.extend_from_slice(&clean[offsets[position + 1]..]);
        fs::write(&file, &bytes).unwrap();
        // The next record's link breaks; the last record has none, so the head hash does.
        assert_eq!(refused_at(import(&file, &target)), Position(refused as u64));
        assert!(!target.exists());
    }
}

#[test]
fn a_refused_import_leaves_an_existing_log_byte_for_byte_as_it_was() {
    let (dir, source) = demo_log();
    let first = dir.path().join("first");
    let second = dir.path().join("second");
    export_range(&source, &first, 0, Some(1_000));
    export_range(&source, &second, 1_000, None);
    let target = dir.path().join("copy.redb");
    import(&first, &target).unwrap();
    let before = fs::read(&target).unwrap();
    let offsets = record_offsets(&second);
    let mut bytes = fs::read(&second).unwrap();
    // Damage the 600th record of the second file: position 1,600.
    bytes[offsets[600] + 4 + 50] ^= 0x01;
    fs::write(&second, &bytes).unwrap();
    assert_eq!(refused_at(import(&second, &target)), Position(1_600));
    assert_eq!(fs::read(&target).unwrap(), before);
}

#[test]
fn a_file_that_is_not_an_export_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-an-export");
    fs::write(&file, b"annals export v2 and then some").unwrap();
    let target = dir.path().join("copy.redb");
    assert!(matches!(
        import(&file, &target),
        Err(Error::Export(error)) if matches!(*error, ExportError::NotAnExport)
    ));
    assert!(!target.exists());
}

#[test]
fn a_record_length_past_the_cap_or_the_file_is_refused_without_reading_it() {
    let (dir, source) = demo_log_of(100);
    let file = dir.path().join("export");
    export_range(&source, &file, 0, Some(10));
    let offsets = record_offsets(&file);
    let clean = fs::read(&file).unwrap();
    let target = dir.path().join("copy.redb");
    // Over the cap, then within it but far past the end of the file.
    for len in [u32::MAX, 200 * 1024 * 1024] {
        let mut bytes = clean.clone();
        bytes[offsets[3]..offsets[3] + 4].copy_from_slice(&len.to_le_bytes());
        fs::write(&file, &bytes).unwrap();
        assert_eq!(refused_at(import(&file, &target)), Position(3));
        assert!(!target.exists());
    }
}

/// The records of the export `file`, as its reader hands them out.
fn exported_records(file: &Path) -> Vec<annals::Record> {
    let mut reader = annals::export::open(file).unwrap();
    std::iter::from_fn(|| reader.next_record().unwrap()).collect()
}

/// Rewrites the export `file` (from position 0) to hold `records` as given, resealed: every
/// record hash, link, the head, the root and the trailer recomputed, so the file is
/// self-consistent and only the checks of what a record may hold can refuse it.
fn reseal(file: &Path, records: &[annals::Record]) {
    let header = &fs::read(file).unwrap()[..record_offsets(file)[0]];
    let mut bytes = header.to_vec();
    let mut prev = annals::log::Digest::ZERO;
    let mut frontier = annals::merkle::Frontier::new();
    for record in records {
        let event = NewEvent {
            kind: record.kind.clone(),
            schema: record.schema,
            at_ms: record.at_ms,
            idempotency_key: record.idempotency_key.clone(),
            payload: record.payload.clone(),
        };
        let placement = Placement {
            stream: &record.stream,
            position: record.position,
            version: record.version,
            prev,
        };
        let mut stored = Vec::new();
        prev = encode_stored(&mut stored, &event, placement).unwrap();
        frontier.push(
            &annals::merkle::LogTreeHasher,
            annals::merkle::leaf_hash(&prev),
            |_, _, _| {},
        );
        bytes.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&stored);
    }
    let root = frontier.root(&annals::merkle::LogTreeHasher);
    // The header's head and root (its last 64 bytes), then the trailer.
    let at = header.len();
    bytes[at - 64..at - 32].copy_from_slice(prev.as_bytes());
    bytes[at - 32..at].copy_from_slice(root.as_bytes());
    bytes.extend_from_slice(b"annals export ok");
    bytes.extend_from_slice(&(records.len() as u64).to_le_bytes());
    bytes.extend_from_slice(prev.as_bytes());
    bytes.extend_from_slice(root.as_bytes());
    fs::write(file, &bytes).unwrap();
}

#[test]
fn a_forged_stream_version_is_refused_at_its_position_and_no_log_is_made() {
    let (dir, source) = demo_log_of(100);
    let file = dir.path().join("export");
    export_range(&source, &file, 0, Some(50));
    // Record 20's version moved on by one: every hash and link holds, but the stream skips
    // a version.
    let mut records = exported_records(&file);
    records[20].version.0 += 1;
    reseal(&file, &records);
    let target = dir.path().join("copy.redb");
    assert_eq!(refused_at(import(&file, &target)), Position(20));
    assert!(!target.exists());
    assert!(!dir.path().join("copy.redb.importing").exists());
}

#[test]
fn a_forged_record_with_an_empty_stream_kind_or_key_is_refused_naming_position_and_field() {
    let (dir, source) = demo_log_of(100);
    let file = dir.path().join("export");
    export_range(&source, &file, 0, Some(50));
    let clean = exported_records(&file);
    let target = dir.path().join("copy.redb");
    type Forge = fn(&mut annals::Record);
    let forgeries: [(&str, Forge); 3] = [
        ("stream", |record| {
            record.stream.clear();
            record.version = annals::log::StreamVersion(0);
        }),
        ("kind", |record| record.kind.clear()),
        ("idempotency_key", |record| {
            record.idempotency_key = Some(String::new());
        }),
    ];
    for (field, forge) in forgeries {
        let mut records = clean.clone();
        forge(&mut records[20]);
        reseal(&file, &records);
        let refused = import(&file, &target);
        let message = match &refused {
            Err(error) => error.to_string(),
            Ok(()) => panic!("{field}: a forged empty {field} was imported"),
        };
        assert_eq!(refused_at(refused), Position(20), "{field}");
        assert!(
            message.contains(&format!("{field} is empty")),
            "{field}: {message}"
        );
        assert!(!target.exists());
    }
    // The resealing itself is sound: the clean records resealed import.
    reseal(&file, &clean);
    import(&file, &target).unwrap();
}

#[test]
fn a_log_holding_a_record_with_an_empty_stream_is_reported_by_verify() {
    use annals::testing::internals::record::Format;
    use annals::testing::internals::record::segment::SegmentBuilder;
    use annals::testing::internals::tables::SEGMENTS;
    for format in [Format::V1, Format::V2] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.redb");
        annals::testing::internals::open::create_with_format(&path, format.version()).unwrap();
        crate::common::append_one(&Store::open(&path).unwrap(), "s", b"first");
        // The segment rewritten to hold the same record with an empty stream, its hashes and
        // the segment digest recomputed.
        let mut segment = SegmentBuilder::with_format(format);
        let event = NewEvent::new("test.event", 1, b"first".to_vec());
        let placement = Placement {
            stream: "",
            position: Position(0),
            version: annals::log::StreamVersion(0),
            prev: annals::log::Digest::ZERO,
        };
        let mut stored = Vec::new();
        let hash = encode_stored(&mut stored, &event, placement).unwrap();
        match format {
            Format::V1 => {
                segment.body_mut().extend_from_slice(&stored);
                segment.seal_record();
            }
            Format::V2 => segment.push_v2(annals::log::Digest::ZERO, hash, "", 0, &event),
        }
        {
            let db = redb::Database::open(&path).unwrap();
            let txn = db.begin_write().unwrap();
            txn.open_table(SEGMENTS)
                .unwrap()
                .insert(0, segment.finish().as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        empty_stream_is_reported(&path);
    }
}

fn empty_stream_is_reported(path: &Path) {
    let store = Store::open_read_only(path).unwrap();
    let finding = annals::Audit::of(&store)
        .verify()
        .unwrap()
        .problem
        .expect("an unsound log");
    assert_eq!(finding.position, Position(0));
    assert!(
        matches!(
            &finding.problem,
            annals::audit::Problem::Record(annals::error::RecordError::EmptyField {
                field: annals::log::Field::Stream
            })
        ),
        "{finding}"
    );
    assert!(
        store
            .snapshot()
            .and_then(|snapshot| snapshot.read_all(Position(0), annals::Direction::Forward, 10))
            .is_err()
    );
}
