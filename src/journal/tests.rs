use std::path::Path;

use std::io;
use std::sync::Mutex;

use redb::StorageBackend;

use super::frame::{Frame, decode_frame, encode_frame};
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

fn journal_of(frames: &[Vec<u8>]) -> Memory {
    let file = Memory::default();
    let mut bytes = HEADER.to_vec();
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
    let frame = encode_frame(&records).unwrap();
    let decoded = decode_frame(&frame, 16).unwrap();
    assert_eq!(decoded.records, records);
    assert_eq!(decoded.len, frame.len() as u64);
    assert_eq!(decoded.first().0, 0);
    assert_eq!(decoded.end().0, 5);
    assert!(encode_frame(&[]).is_none());
}

#[test]
fn the_frame_layout_is_length_first_position_count_records_check() {
    let records = records(2);
    let frame = encode_frame(&records).unwrap();
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
fn every_changed_byte_of_a_frame_fails_its_check_or_its_length() {
    let frame = encode_frame(&records(2)).unwrap();
    for at in 0..frame.len() {
        let mut damaged = frame.clone();
        damaged[at] ^= 0x20;
        assert!(decode_frame(&damaged, 16).is_err(), "byte {at}");
    }
}

#[test]
fn a_scan_hands_out_whole_frames_and_drops_a_torn_last_one_at_every_length() {
    let records = records(6);
    let first = encode_frame(&records[..2]).unwrap();
    let second = encode_frame(&records[2..]).unwrap();
    for kept in 0..second.len() {
        let file = journal_of(&[first.clone(), second[..kept].to_vec()]);
        let (frames, scanned) = scan_all(&file).unwrap();
        assert_eq!(frames.len(), 1, "{kept} bytes of the second frame");
        assert_eq!(frames[0].records, records[..2]);
        assert_eq!(scanned.end, 16 + first.len() as u64);
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
    assert_eq!(scanned.end, 16 + (first.len() + second.len()) as u64);
}

#[test]
fn a_frame_zeroed_at_its_end_is_a_torn_tail_too() {
    let records = records(4);
    let first = encode_frame(&records[..2]).unwrap();
    let mut second = encode_frame(&records[2..]).unwrap();
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
    let first = encode_frame(&records[..2]).unwrap();
    let second = encode_frame(&records[2..]).unwrap();
    let file = journal_of(&[first.clone(), second.clone(), vec![0; 10_000]]);
    let (frames, scanned) = scan_all(&file).unwrap();
    assert_eq!(frames.len(), 2);
    assert_eq!(scanned.end, 16 + (first.len() + second.len()) as u64);
    assert_eq!(scanned.dropped, 0);
    // An emptied journal with its room holds no frame.
    let (frames, scanned) = scan_all(&journal_of(&[vec![0; 10_000]])).unwrap();
    assert!(frames.is_empty());
    assert_eq!((scanned.end, scanned.dropped), (16, 0));
}

#[test]
fn a_damaged_frame_with_a_whole_frame_after_it_is_refused_naming_its_offset() {
    let records = records(4);
    let mut first = encode_frame(&records[..2]).unwrap();
    let second = encode_frame(&records[2..]).unwrap();
    first[30] ^= 1;
    let error = scan_all(&journal_of(&[first, second])).unwrap_err();
    match error {
        Error::Journal(JournalError::Damaged { offset, .. }) => assert_eq!(offset, 16),
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
    let mut header = HEADER;
    header[14] = 2;
    later.write(0, &header).unwrap();
    assert!(matches!(
        scan_all(&later),
        Err(Error::Journal(JournalError::Version { found: 2, .. }))
    ));
}

#[test]
fn a_header_cut_short_is_written_whole_again() {
    for kept in 0..HEADER.len() {
        let file = Memory::default();
        file.write(0, &HEADER[..kept]).unwrap();
        let (frames, scanned) = scan_all(&file).unwrap();
        assert!(frames.is_empty());
        assert_eq!(scanned.end, 16);
        let mut header = [0; 16];
        file.read(0, &mut header).unwrap();
        assert_eq!(header, HEADER, "{kept} bytes kept");
    }
}

#[test]
fn a_failed_append_leaves_the_journal_as_it_was() {
    let records = records(2);
    let frame = encode_frame(&records).unwrap();
    let file = journal_of(&[]);
    let mut journal = Journal::new(
        Box::new(file),
        "log.redb.journal".into(),
        16,
        JournalOptions::default(),
    );
    journal.append(&frame).unwrap();
    assert_eq!(journal.held(), frame.len() as u64);
    journal.take_back(frame.len() as u64);
    assert_eq!(journal.held(), 0);
    journal.append(&frame).unwrap();
    journal.empty().unwrap();
    assert_eq!(journal.held(), 0);
    assert!(!journal.checkpoint_due());
}
