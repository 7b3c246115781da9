use std::path::Path;

use std::io;
use std::sync::Mutex;

use redb::StorageBackend;

use super::frame::{Frame, decode_frame, encode_frame};
use super::header::Marker;
use super::*;
use crate::error::Error;
use crate::hash::Digest;
use crate::record::{
    NewEvent, Placement, Position, Record, StreamVersion, decode_stored, encode_stored,
};

/// `count` records chained from position 0, over two streams, every other one keyed.
fn records(count: usize) -> Vec<Record> {
    let mut records: Vec<Record> = Vec::new();
    let mut versions = [0u64; 2];
    for index in 0..count {
        let which = usize::from(index % 3 != 0);
        let stream = ["a", "b"][which];
        let mut event = NewEvent::new(
            "thing.done",
            1_700_000_000_000 + index as u64,
            vec![7; index],
        );
        if index % 2 == 0 {
            event.idempotency_key = Some(format!("key-{index}"));
        }
        let placement = Placement {
            stream,
            position: Position(index as u64),
            version: StreamVersion(versions[which]),
            prev: records.last().map_or(Digest::ZERO, |record| record.hash),
        };
        versions[which] += 1;
        let mut stored = Vec::new();
        encode_stored(&mut stored, &event, placement).unwrap();
        records.push(decode_stored(&stored, Position(index as u64)).unwrap());
    }
    records
}

/// A journal file in memory that grows on writes past its end, as a file does.
#[derive(Debug, Default)]
struct Memory(Mutex<Vec<u8>>);

impl StorageBackend for Memory {
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.lock().unwrap().len() as u64)
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        let bytes = self.0.lock().unwrap();
        let start = offset as usize;
        let source = bytes
            .get(start..start + out.len())
            .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "past the end"))?;
        out.copy_from_slice(source);
        Ok(())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.lock().unwrap().resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut bytes = self.0.lock().unwrap();
        let end = offset as usize + data.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
}

/// The marker of the journals these tests write.
const MARKER: Marker = Marker([0xa5; MARKER_BYTES]);

/// The frame of `records` in a journal marked [`MARKER`].
fn frame(records: &[Record]) -> Vec<u8> {
    encode_frame(&MARKER.0, records).unwrap()
}

/// Where the first frame begins.
const START: u64 = HEADER_BYTES;

fn journal_of(frames: &[Vec<u8>]) -> Memory {
    let file = Memory::default();
    let mut bytes = MARKER.header().to_vec();
    for frame in frames {
        bytes.extend_from_slice(frame);
    }
    file.write(0, &bytes).unwrap();
    file
}

fn scan_all(file: &dyn StorageBackend) -> crate::error::Result<(Vec<Frame>, Scanned)> {
    let mut frames = Vec::new();
    let scanned = scan(file, Path::new("log.redb.journal"), true, &mut |frame| {
        frames.push(frame);
        Ok(())
    })?;
    Ok((frames, scanned))
}

#[test]
fn a_frame_decodes_to_the_records_it_was_encoded_from() {
    let records = records(5);
    let frame = frame(&records);
    let decoded = decode_frame(&frame, START, &MARKER.0).unwrap();
    assert_eq!(decoded.records, records);
    assert_eq!(decoded.len, frame.len() as u64);
    assert_eq!(decoded.first().0, 0);
    assert_eq!(decoded.end().0, 5);
    assert!(encode_frame(&MARKER.0, &[]).is_none());
}

#[test]
fn the_frame_layout_is_marker_length_first_position_count_records_check() {
    let records = records(2);
    let whole = frame(&records);
    let (marker, frame) = whole.split_at(MARKER_BYTES);
    assert_eq!(marker, MARKER.0);
    let body_len = u32::from_le_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(frame.len(), 4 + body_len + 32);
    assert_eq!(u64::from_le_bytes(frame[4..12].try_into().unwrap()), 0);
    assert_eq!(u32::from_le_bytes(frame[12..16].try_into().unwrap()), 2);
    let first_len = u32::from_le_bytes(frame[16..20].try_into().unwrap()) as usize;
    let mut stored = Vec::new();
    records[0].encode_v1_stored(&mut stored);
    assert_eq!(&frame[20..20 + first_len], &stored[..]);
    let check = blake3::Hasher::new_derive_key(FRAME_CONTEXT)
        .update(&frame[..4 + body_len])
        .finalize();
    assert_eq!(&frame[4 + body_len..], check.as_bytes());
}

#[test]
fn the_header_is_magic_version_marker_and_a_check_of_them() {
    let header = MARKER.header();
    assert_eq!(&header[..14], b"annals journal");
    assert_eq!(u16::from_le_bytes([header[14], header[15]]), 3);
    assert_eq!(header[16..32], MARKER.0);
    let check = blake3::Hasher::new_derive_key(header::HEADER_CONTEXT)
        .update(&header[..32])
        .finalize();
    assert_eq!(header[32..48], check.as_bytes()[..16]);
    // The synced mark of an empty journal: its end is the header's, in epoch 0, checked.
    let mark: [u8; 16] = header[48..].try_into().unwrap();
    let synced = header::Synced {
        end: HEADER_BYTES,
        epoch: 0,
    };
    assert_eq!(MARKER.read_mark(&mark), Some(synced));
    let mark_check = blake3::Hasher::new_derive_key(header::MARK_CONTEXT)
        .update(&MARKER.0)
        .update(&header[48..60])
        .finalize();
    assert_eq!(header[60..], mark_check.as_bytes()[..4]);
    let mut torn = mark;
    torn[3] ^= 1;
    assert_eq!(MARKER.read_mark(&torn), None, "a torn mark fails its check");
    let other = Marker([0x5a; 16]);
    assert_eq!(other.read_mark(&mark), None, "a mark is its own journal's");
    assert_ne!(Marker::fresh().unwrap(), Marker::fresh().unwrap());
}

#[test]
fn every_changed_byte_of_a_frame_fails_its_check_or_its_length() {
    let frame = frame(&records(2));
    for at in 0..frame.len() {
        let mut damaged = frame.clone();
        damaged[at] ^= 0x20;
        assert!(
            decode_frame(&damaged, START, &MARKER.0).is_err(),
            "byte {at}"
        );
    }
}

#[test]
fn a_scan_hands_out_whole_frames_and_drops_a_torn_last_one_at_every_length() {
    let records = records(6);
    let first = frame(&records[..2]);
    let second = frame(&records[2..]);
    for kept in 0..second.len() {
        let file = journal_of(&[first.clone(), second[..kept].to_vec()]);
        let (frames, scanned) = scan_all(&file).unwrap();
        assert_eq!(frames.len(), 1, "{kept} bytes of the second frame");
        assert_eq!(frames[0].records, records[..2]);
        assert_eq!(scanned.end, START + first.len() as u64);
        assert_eq!(scanned.dropped, written(&second[..kept]));
        // The same torn write into the room an emptied journal keeps: the same scan.
        let file = journal_of(&[first.clone(), second[..kept].to_vec(), vec![0; 4_096]]);
        let (frames, roomy) = scan_all(&file).unwrap();
        assert_eq!(
            (frames.len(), roomy),
            (1, scanned),
            "{kept} bytes, in the room"
        );
    }
    let (frames, scanned) = scan_all(&journal_of(&[first.clone(), second.clone()])).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(scanned.dropped, 0);
    assert_eq!(scanned.end, START + (first.len() + second.len()) as u64);
}

#[test]
fn a_frame_zeroed_at_its_end_is_a_torn_tail_too() {
    let records = records(4);
    let first = frame(&records[..2]);
    let mut second = frame(&records[2..]);
    let len = second.len();
    second[len - 40..].fill(0);
    let (frames, scanned) = scan_all(&journal_of(&[first, second.clone()])).unwrap();
    assert_eq!(frames.len(), 1);
    assert_eq!(scanned.dropped, written(&second));
}

/// The bytes of a torn write a scan counts: up to its last byte that is not zero (zeros
/// after it cannot be told from the journal's room).
fn written(torn: &[u8]) -> u64 {
    torn.iter()
        .rposition(|&byte| byte != 0)
        .map_or(0, |last| last as u64 + 1)
}

#[test]
fn the_room_after_the_frames_ends_them_and_is_not_dropped() {
    let records = records(4);
    let first = frame(&records[..2]);
    let second = frame(&records[2..]);
    let file = journal_of(&[first.clone(), second.clone(), vec![0; 10_000]]);
    let (frames, scanned) = scan_all(&file).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(scanned.end, START + (first.len() + second.len()) as u64);
    assert_eq!(scanned.dropped, 0);
    // An emptied journal with its room holds no frame.
    let (frames, scanned) = scan_all(&journal_of(&[vec![0; 10_000]])).unwrap();
    assert!(frames.is_empty());
    assert_eq!((scanned.end, scanned.dropped), (START, 0));
}

#[test]
fn a_damaged_frame_with_a_whole_frame_after_it_is_refused_naming_its_offset() {
    let records = records(4);
    let mut first = frame(&records[..2]);
    let second = frame(&records[2..]);
    first[30] ^= 1;
    let first_len = first.len() as u64;
    let error = scan_all(&journal_of(&[first, second])).unwrap_err();
    match error {
        Error::Journal(JournalError::Damaged { offset, next, .. }) => {
            assert_eq!((offset, next), (START, START + first_len))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_file_that_is_not_a_journal_or_of_another_version_is_refused() {
    let foreign = Memory::default();
    foreign.write(0, b"SQLite format 3\0 and more").unwrap();
    assert!(matches!(
        scan_all(&foreign),
        Err(Error::Journal(JournalError::NotAJournal { .. }))
    ));
    let later = Memory::default();
    let mut header = MARKER.header();
    header[14] = 4;
    later.write(0, &header).unwrap();
    assert!(matches!(
        scan_all(&later),
        Err(Error::Journal(JournalError::Version { found: 4, .. }))
    ));
}

#[test]
fn a_header_cut_short_is_written_whole_again_with_a_new_marker() {
    let header = MARKER.header();
    // Up to the end of the header's check: the synced mark after it is not recovery's (a
    // header whole but for its mark is taken as it is, and its mark written at the open).
    for kept in 0..header::MARK_OFFSET as usize {
        for room in [0, 4_096] {
            let file = Memory::default();
            file.write(0, &header[..kept]).unwrap();
            file.set_len((kept + room) as u64).unwrap();
            let (frames, scanned) = scan_all(&file).unwrap();
            assert!(frames.is_empty());
            assert_eq!(scanned.end, START);
            let mut written = [0; HEADER_BYTES as usize];
            file.read(0, &mut written).unwrap();
            let marker = scanned.marker.expect("a writable scan writes a header");
            assert_eq!(written, marker.header(), "{kept} bytes kept");
        }
    }
}

#[test]
fn a_damaged_header_with_frames_after_it_is_refused_not_rewritten() {
    let records = records(2);
    let whole = journal_of(&[frame(&records)]);
    for at in 16..header::MARK_OFFSET as usize {
        let file = journal_of(&[frame(&records)]);
        let mut byte = [0];
        file.read(at as u64, &mut byte).unwrap();
        file.write(at as u64, &[byte[0] ^ 0x10]).unwrap();
        match scan_all(&file) {
            Err(Error::Journal(JournalError::Damaged { offset: 0, .. })) => {}
            other => panic!("byte {at} of the header: {other:?}"),
        }
        // Left as it was, but for the damage.
        file.write(at as u64, &byte).unwrap();
        assert_eq!(*file.0.lock().unwrap(), *whole.0.lock().unwrap());
    }
}

/// A version 1 journal, as builds before version 2 wrote it: frames without a marker after a
/// 16-byte header.
fn v1_journal_of(frames: &[Vec<u8>]) -> Memory {
    let file = Memory::default();
    let mut bytes = b"annals journal\x01\x00".to_vec();
    for frame in frames {
        bytes.extend_from_slice(frame);
    }
    file.write(0, &bytes).unwrap();
    file
}

#[test]
fn a_version_1_journal_is_read_and_its_damage_found_behind_a_damaged_length() {
    let records = records(6);
    let frames: Vec<Vec<u8>> = records
        .chunks(2)
        .map(|chunk| encode_frame(&[], chunk).unwrap())
        .collect();
    let (read, scanned) = scan_all(&v1_journal_of(&frames)).unwrap();
    assert_eq!(read.len(), 3);
    assert_eq!(scanned.marker, None, "rewritten as version 3 by a writer");
    let mut damaged = frames.clone();
    // A length that points past the file's end: the frames behind it are still found.
    damaged[0][3] ^= 0x40;
    match scan_all(&v1_journal_of(&damaged)) {
        Err(Error::Journal(JournalError::Damaged { offset: 16, .. })) => {}
        other => panic!("{other:?}"),
    }
}

/// Every way of damaging `at..at + len` of a journal's bytes this sweep tries: each bit
/// flipped (one byte), and overwrites of zeros, ones and a pattern.
fn damages(len: usize) -> Vec<Vec<u8>> {
    let mut damages = Vec::new();
    if len == 1 {
        damages.extend((0..8).map(|bit| vec![1u8 << bit]));
        return damages;
    }
    for fill in [0x00, 0xff, 0x5a] {
        damages.push(vec![fill; len]);
    }
    damages
}

#[test]
fn any_damage_to_the_first_three_of_fifty_frames_recovers_every_commit_or_is_refused() {
    let records = records(100);
    let frames: Vec<Vec<u8>> = records.chunks(2).map(frame).collect();
    let journal = journal_of(&frames);
    let bytes = journal.0.lock().unwrap().clone();
    let third_end = START as usize + frames[..3].iter().map(Vec::len).sum::<usize>();
    let (mut refused, mut whole, mut tried) = (0, 0, 0);
    for at in START as usize..third_end {
        for len in 1..=8 {
            for damage in damages(len) {
                let mut damaged = bytes.clone();
                let end = (at + len).min(damaged.len());
                let changed = &mut damaged[at..end];
                if len == 1 {
                    changed[0] ^= damage[0];
                } else {
                    changed.copy_from_slice(&damage[..end - at]);
                }
                if damaged == bytes {
                    continue;
                }
                tried += 1;
                let file = Memory(Mutex::new(damaged));
                match scan_all(&file) {
                    Err(Error::Journal(JournalError::Damaged { .. })) => refused += 1,
                    Ok((read, _)) if read.len() == frames.len() => whole += 1,
                    other => panic!(
                        "{len} bytes at {at}: a silent loss: {:?}",
                        other.map(|(read, s)| (read.len(), s))
                    ),
                }
            }
        }
    }
    assert_eq!(whole, 0, "every change to a frame's bytes is damage");
    assert_eq!(refused, tried);
    assert!(tried > 10_000, "{tried} damages tried");
}

#[test]
fn a_failed_append_leaves_the_journal_as_it_was() {
    let records = records(2);
    let frame = frame(&records);
    let file = journal_of(&[]);
    let scanned = scan_all(&file).unwrap().1;
    let mut journal = Journal::new(
        Box::new(file),
        "log.redb.journal".into(),
        scanned,
        JournalOptions::default(),
    )
    .unwrap();
    assert_eq!(journal.frame_of(&records).unwrap(), frame);
    journal.append(&frame).unwrap();
    assert_eq!(journal.held(), frame.len() as u64);
    journal.take_back(frame.len() as u64);
    assert_eq!(journal.held(), 0);
    journal.append(&frame).unwrap();
    journal.empty().unwrap();
    assert_eq!(journal.held(), 0);
    assert!(!journal.checkpoint_due());
}

/// A reader whose read begins past where the file now ends (the writer emptied the journal
/// between the reader's look at the mark and its read) is told the frames stop short, for the
/// caller's second look at the mark to send it back; it never fails on the arithmetic.
#[test]
fn a_read_beginning_past_an_emptied_journals_end_stops_short() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    std::fs::write(&log, b"").unwrap();
    let path = journal_path(&log);
    drop(
        JournalFile::open(&log, &path, true)
            .unwrap()
            .expect("created"),
    );
    let tail = tail::Tail::open(&path).unwrap().expect("a whole header");
    let read = tail
        .frames(HEADER_BYTES + 4_096, HEADER_BYTES + 8_192)
        .unwrap();
    assert!(read.frames.is_empty());
    let (offset, problem) = read.stopped.expect("stopped short of the mark");
    assert_eq!(offset, HEADER_BYTES + 4_096);
    assert!(
        matches!(
            problem,
            frame::FrameProblem::Short {
                available: 0,
                needed: 4_096
            }
        ),
        "{problem:?}"
    );
}
