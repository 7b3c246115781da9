//! Golden record vectors: re-encode and re-hash each, byte for byte.
//!
//! `schema/vectors/records.json` holds format v1 records as hex: the inputs of each and the
//! header, stored bytes and hashes they must produce. These tests replay every vector through
//! the encoder and the decoder, and check the layout and the hashes a second time by hand,
//! without bincode and without `annals::hash`, so that a dependency upgrade that shifts a
//! byte fails here instead of forking the chain. `schema/vectors/README.md` says how to
//! regenerate the file, and why doing so is a format change.

use std::path::PathBuf;

use annals::testing::internals::hash::{hex, unhex};
use annals::testing::internals::record::{self, Placement};
use annals::testing::vectors::records;
use annals::{
    NewEvent, Position,
    error::RecordError,
    log::{Digest, StreamVersion},
};
use serde_json::Value;

/// The record hash of the genesis vector, pinned here as well as in the file so that
/// regenerating the file alone cannot move it.
const GENESIS_HASH: &str = "e027304906321c98a9c36c6ee7da35c8ef786f5dbff78ae50448e3b7f84bd749";

/// The derive-key context of the record hash, spelled out again rather than taken from
/// `annals::hash`, so that a change to the constant fails these tests.
const RECORD_HEADER_CONTEXT: &str = "annals 2026-11-29 record header v1";

/// Where the committed vectors live.
fn vectors_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/records.json")
}

/// One vector as the tests use it: its inputs decoded from the file, its outputs as bytes.
struct Vector {
    name: String,
    position: u64,
    stream: String,
    version: u64,
    kind: String,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<String>,
    prev: Digest,
    payload: Vec<u8>,
    header: Vec<u8>,
    stored: Vec<u8>,
    payload_hash: Digest,
    hash: Digest,
}

impl Vector {
    fn event(&self) -> NewEvent {
        NewEvent {
            kind: self.kind.clone(),
            schema: self.schema,
            at_ms: self.at_ms,
            idempotency_key: self.idempotency_key.clone(),
            payload: self.payload.clone(),
        }
    }

    fn placement(&self) -> Placement<'_> {
        Placement {
            stream: &self.stream,
            position: Position(self.position),
            version: StreamVersion(self.version),
            prev: self.prev,
        }
    }
}

/// Reads and parses the committed vectors; panics naming the vector and field that is wrong.
fn load() -> Vec<Vector> {
    let path = vectors_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let json: Value = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()));
    let items = json.as_array().expect("records.json holds a JSON array");
    items.iter().enumerate().map(parse).collect()
}

fn parse((index, item): (usize, &Value)) -> Vector {
    let name = item["name"]
        .as_str()
        .unwrap_or_else(|| panic!("vector #{index} has no string `name`"))
        .to_owned();
    let field = |key: &str| -> &Value {
        item.get(key)
            .unwrap_or_else(|| panic!("vector {name:?} has no `{key}`"))
    };
    let number = |key: &str| -> u64 {
        field(key)
            .as_u64()
            .unwrap_or_else(|| panic!("vector {name:?}: `{key}` is not a u64"))
    };
    let text = |key: &str| -> String {
        field(key)
            .as_str()
            .unwrap_or_else(|| panic!("vector {name:?}: `{key}` is not a string"))
            .to_owned()
    };
    let bytes = |key: &str| -> Vec<u8> {
        unhex(&text(key)).unwrap_or_else(|| panic!("vector {name:?}: `{key}` is not hex"))
    };
    let digest = |key: &str| -> Digest {
        Digest::from_hex(&text(key))
            .unwrap_or_else(|| panic!("vector {name:?}: `{key}` is not 64 hex digits"))
    };
    let idempotency_key = match field("idempotency_key") {
        Value::Null => None,
        Value::String(key) => Some(key.clone()),
        other => panic!("vector {name:?}: `idempotency_key` is {other}, not a string or null"),
    };
    let schema = u16::try_from(number("schema"))
        .unwrap_or_else(|_| panic!("vector {name:?}: `schema` does not fit a u16"));
    Vector {
        position: number("position"),
        stream: text("stream"),
        version: number("version"),
        kind: text("kind"),
        schema,
        at_ms: number("at_ms"),
        idempotency_key,
        prev: digest("prev"),
        payload: bytes("payload_hex"),
        header: bytes("header_hex"),
        stored: bytes("stored_hex"),
        payload_hash: digest("payload_hash"),
        hash: digest("hash"),
        name,
    }
}

/// Fails naming the vector, the part and the first differing byte, without printing
/// kilobytes of hex.
fn assert_bytes(name: &str, what: &str, actual: &[u8], expected: &[u8]) {
    if actual == expected {
        return;
    }
    let at = actual
        .iter()
        .zip(expected)
        .position(|(a, e)| a != e)
        .unwrap_or(actual.len().min(expected.len()));
    let window = |bytes: &[u8]| hex(&bytes[at.min(bytes.len())..(at + 16).min(bytes.len())]);
    panic!(
        "vector {name:?}, {what}: first difference at byte {at} (got {} bytes, committed {}): \
         got {}…, committed {}…",
        actual.len(),
        expected.len(),
        window(actual),
        window(expected),
    );
}

#[test]
fn every_vector_reencodes_to_its_committed_bytes() {
    for v in load() {
        let event = v.event();
        let payload_hash = annals::testing::internals::hash::payload_hash(&v.payload);
        assert_eq!(
            payload_hash, v.payload_hash,
            "vector {:?}: payload hash",
            v.name
        );
        let header = record::header_bytes(&event, v.placement(), payload_hash)
            .unwrap_or_else(|error| panic!("vector {:?}: header_bytes: {error}", v.name));
        assert_bytes(&v.name, "header bytes", &header, &v.header);
        assert_eq!(
            annals::testing::internals::hash::record_hash(&header),
            v.hash,
            "vector {:?}: record hash of the header",
            v.name
        );
        let mut stored = Vec::new();
        let hash = record::encode_stored(&mut stored, &event, v.placement())
            .unwrap_or_else(|error| panic!("vector {:?}: encode_stored: {error}", v.name));
        assert_eq!(hash, v.hash, "vector {:?}: record hash", v.name);
        assert_bytes(&v.name, "stored bytes", &stored, &v.stored);
    }
}

#[test]
fn every_vector_decodes_to_its_inputs() {
    for v in load() {
        let record = record::decode_stored(&v.stored, Position(v.position))
            .unwrap_or_else(|error| panic!("vector {:?}: decode_stored: {error}", v.name));
        let name = &v.name;
        assert_eq!(
            record.position,
            Position(v.position),
            "vector {name:?}: position"
        );
        assert_eq!(record.stream, v.stream, "vector {name:?}: stream");
        assert_eq!(
            record.version,
            StreamVersion(v.version),
            "vector {name:?}: version"
        );
        assert_eq!(record.kind, v.kind, "vector {name:?}: kind");
        assert_eq!(record.schema, v.schema, "vector {name:?}: schema");
        assert_eq!(record.at_ms, v.at_ms, "vector {name:?}: at_ms");
        assert_eq!(
            record.idempotency_key, v.idempotency_key,
            "vector {name:?}: idempotency_key"
        );
        assert_bytes(name, "payload", &record.payload, &v.payload);
        assert_eq!(
            record.payload_hash, v.payload_hash,
            "vector {name:?}: payload_hash"
        );
        assert_eq!(record.prev, v.prev, "vector {name:?}: prev");
        assert_eq!(record.hash, v.hash, "vector {name:?}: hash");
    }
}

#[test]
fn every_vector_refuses_to_decode_at_another_position() {
    for v in load() {
        let elsewhere = Position(v.position.wrapping_add(1));
        match record::decode_stored(&v.stored, elsewhere) {
            Err(RecordError::Position { expected, found }) => {
                assert_eq!((expected, found), (elsewhere, Position(v.position)));
            }
            other => panic!("vector {:?} at {elsewhere}: got {other:?}", v.name),
        }
    }
}

/// The header of `v` laid out by hand from the format v1 rules: fixed-width little-endian
/// integers, strings as a u64 length then UTF-8 bytes, an option as a u8 tag (0 none, 1 some)
/// then the value, digests as 32 raw bytes.
fn header_by_hand(v: &Vector) -> Vec<u8> {
    fn string(out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(&(text.len() as u64).to_le_bytes());
        out.extend_from_slice(text.as_bytes());
    }
    let mut out = vec![0x01];
    out.extend_from_slice(&v.position.to_le_bytes());
    string(&mut out, &v.stream);
    out.extend_from_slice(&v.version.to_le_bytes());
    string(&mut out, &v.kind);
    out.extend_from_slice(&v.schema.to_le_bytes());
    out.extend_from_slice(&v.at_ms.to_le_bytes());
    match &v.idempotency_key {
        None => out.push(0),
        Some(key) => {
            out.push(1);
            string(&mut out, key);
        }
    }
    let payload_len = u32::try_from(v.payload.len()).expect("vector payloads fit a u32");
    out.extend_from_slice(&payload_len.to_le_bytes());
    out.extend_from_slice(blake3::hash(&v.payload).as_bytes());
    out.extend_from_slice(v.prev.as_bytes());
    out
}

#[test]
fn every_header_follows_the_v1_layout_without_bincode() {
    for v in load() {
        assert_bytes(&v.name, "hand-laid header", &header_by_hand(&v), &v.header);
        let mut stored = blake3::Hasher::new_derive_key(RECORD_HEADER_CONTEXT)
            .update(&v.header)
            .finalize()
            .as_bytes()
            .to_vec();
        stored.extend_from_slice(&v.header);
        stored.extend_from_slice(&v.payload);
        assert_bytes(&v.name, "hash ‖ header ‖ payload", &stored, &v.stored);
        assert_eq!(
            blake3::hash(&v.payload).as_bytes(),
            v.payload_hash.as_bytes(),
            "vector {:?}: payload hash is plain blake3",
            v.name
        );
        assert_eq!(
            &v.stored[..32],
            v.hash.as_bytes(),
            "vector {:?}: stored bytes open with the record hash",
            v.name
        );
    }
}

#[test]
fn genesis_header_bytes_are_spelled_out() {
    let vectors = load();
    let genesis = vectors
        .iter()
        .find(|v| v.name == "genesis-empty-payload")
        .expect("the genesis vector");
    let expected = [
        "01",                                 // format 1
        "0000000000000000",                   // position 0, u64 LE
        "1100000000000000",                   // stream length 17, u64 LE
        "6c656173652f6465706c6f792d6c6f636b", // "lease/deploy-lock"
        "0000000000000000",                   // version 0
        "0e00000000000000",                   // kind length 14
        "6c656173652e6163717569726564",       // "lease.acquired"
        "0100",                               // schema 1, u16 LE
        "0068e5cf8b010000",                   // at_ms 1_700_000_000_000, u64 LE
        "00",                                 // no idempotency key
        "00000000",                           // payload length 0, u32 LE
        // blake3 of the empty payload
        "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262",
        // prev: zero at position 0
        "0000000000000000000000000000000000000000000000000000000000000000",
    ]
    .concat();
    assert_eq!(hex(&genesis.header), expected);
    assert_eq!(genesis.hash.to_hex(), GENESIS_HASH);
}

#[test]
fn flipping_any_stored_byte_fails_decoding() {
    for v in load() {
        let header_end = 32 + v.header.len();
        // Every byte of the small vectors; for big payloads, the hash, the header and a
        // sample of payload bytes, since each flip re-hashes the whole payload.
        let offsets: Vec<usize> = if v.stored.len() <= 4096 {
            (0..v.stored.len()).collect()
        } else {
            let mut offsets: Vec<usize> = (0..header_end + 1).collect();
            offsets.extend((header_end..v.stored.len()).step_by(4099));
            offsets.push(v.stored.len() - 1);
            offsets
        };
        for at in offsets {
            let mut bytes = v.stored.clone();
            bytes[at] ^= 0x01;
            let result = record::decode_stored(&bytes, Position(v.position));
            let expected_kind = if at < 32 {
                matches!(result, Err(RecordError::HeaderHash { .. }))
            } else if at >= header_end {
                matches!(result, Err(RecordError::PayloadHash { .. }))
            } else {
                result.is_err()
            };
            assert!(
                expected_kind,
                "vector {:?}: flipping byte {at} of {} gave {result:?}",
                v.name,
                v.stored.len()
            );
        }
    }
}

/// A property one of the vectors must have.
type Case = fn(&Vector) -> bool;

#[test]
fn vectors_cover_the_required_cases() {
    let vectors = load();
    assert!(vectors.len() >= 7, "only {} vectors", vectors.len());
    let mut names: Vec<&str> = vectors.iter().map(|v| v.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), vectors.len(), "vector names are not unique");
    let cases: [(&str, Case); 9] = [
        ("an empty payload", |v| v.payload.is_empty()),
        ("a 64 KiB payload", |v| v.payload.len() == 64 * 1024),
        ("a non-ASCII stream name", |v| !v.stream.is_ascii()),
        ("an idempotency key", |v| v.idempotency_key.is_some()),
        ("no idempotency key", |v| v.idempotency_key.is_none()),
        ("position 0 with a zero prev", |v| {
            v.position == 0 && v.prev == Digest::ZERO
        }),
        ("a later position with a non-zero prev", |v| {
            v.position > 0 && v.prev != Digest::ZERO
        }),
        ("a schema other than 1", |v| v.schema != 1),
        ("at_ms = u64::MAX", |v| v.at_ms == u64::MAX),
    ];
    for (case, holds) in cases {
        assert!(vectors.iter().any(holds), "no vector has {case}");
    }
}

/// The committed file is exactly what the generator (`annals::testing::vectors::records`)
/// writes, so that it was neither edited by hand nor left behind by a change to the inputs.
#[test]
fn vectors_file_is_what_the_generator_writes() {
    let path = vectors_path();
    let text = records::text();
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    assert!(
        committed == text,
        "{} differs from what the generator writes. Changing a vector changes format v1: \
         see schema/vectors/README.md before regenerating with the write_vectors example.",
        path.display()
    );
}

// Format v2 (schema/FORMAT.md 3.8): the records above stored as v2 segments, in
// `schema/vectors/segments_v2.json`. Each segment holds consecutive vectors chained to one
// another; their record hashes are the v1 vectors' own, which is the point of format v2.

use annals::testing::internals::record::Format;
use annals::testing::internals::record::segment::Segment;

/// Where the committed v2 segment vectors live.
fn segments_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/segments_v2.json")
}

/// The v1 vectors a v2 segment holds.
fn members<'v>(vectors: &'v [Vector], names: &[&str]) -> Vec<&'v Vector> {
    names
        .iter()
        .map(|name| {
            vectors
                .iter()
                .find(|v| v.name == *name)
                .unwrap_or_else(|| panic!("no v1 vector {name:?}"))
        })
        .collect()
}

/// The committed v2 segments: name, key, the v1 vectors they hold, bytes.
fn load_segments() -> Vec<(String, u64, Vec<String>, Vec<u8>)> {
    let path = segments_path();
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    let json: Value = serde_json::from_str(&text).expect("segments_v2.json is JSON");
    json.as_array()
        .expect("a JSON array")
        .iter()
        .map(|item| {
            let name = item["name"].as_str().expect("a name").to_owned();
            let key = item["key"].as_u64().expect("a key");
            let records = item["records"]
                .as_array()
                .expect("records")
                .iter()
                .map(|r| r.as_str().expect("a vector name").to_owned())
                .collect();
            let bytes = unhex(item["segment_hex"].as_str().expect("hex")).expect("hex");
            (name, key, records, bytes)
        })
        .collect()
}

#[test]
fn segments_v2_file_is_what_the_generator_writes() {
    let path = segments_path();
    let text = records::segments_text();
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    assert!(
        committed == text,
        "{} differs from what the generator writes. Changing a vector changes format v2: \
         see schema/vectors/README.md before regenerating with the write_vectors example.",
        path.display()
    );
}

#[test]
fn every_v2_segment_decodes_to_its_v1_records_with_their_hashes() {
    let vectors = load();
    for (name, key, names, bytes) in load_segments() {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let members = members(&vectors, &names);
        assert_eq!(key, members[0].position, "segment {name:?}: key");
        let segment = Segment::parse(&bytes, Format::V2)
            .unwrap_or_else(|error| panic!("segment {name:?}: {error}"));
        assert_eq!(segment.digest_error(), None, "segment {name:?}: digest");
        let records = segment
            .decode_all(Position(key))
            .unwrap_or_else(|error| panic!("segment {name:?}: {error:?}"));
        assert_eq!(records.len(), members.len());
        for (record, v) in records.iter().zip(&members) {
            let expected = record::decode_stored(&v.stored, Position(v.position)).unwrap();
            assert_eq!(record, &expected, "segment {name:?}, vector {:?}", v.name);
            assert_eq!(record.hash, v.hash);
        }
        // Elsewhere in the log, every record's rebuilt header hashes otherwise.
        match segment.decode_all(Position(key.wrapping_add(1))) {
            Err((0, RecordError::HeaderHash { .. })) => {}
            other => panic!("segment {name:?} one position on: {other:?}"),
        }
    }
}

/// The v2 layout read by hand, without annals' segment code: the digest under its context
/// spelled out, the tag, the count, `prev`, the lengths, and each record's hash and flags.
#[test]
fn every_v2_segment_follows_the_layout_by_hand() {
    fn uleb(bytes: &mut &[u8]) -> u64 {
        let (mut value, mut shift) = (0u64, 0);
        loop {
            let (byte, rest) = bytes.split_first().expect("a LEB128 byte");
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return value;
            }
            shift += 7;
        }
    }
    let vectors = load();
    for (name, _, names, bytes) in load_segments() {
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let members = members(&vectors, &names);
        let digest = blake3::Hasher::new_derive_key("annals 2026-12-01 segment v2")
            .update(&bytes[32..])
            .finalize();
        assert_eq!(&bytes[..32], digest.as_bytes(), "segment {name:?}: digest");
        assert_eq!(bytes[32], 0x02, "segment {name:?}: format byte");
        let mut rest = &bytes[33..];
        assert_eq!(uleb(&mut rest), members.len() as u64);
        assert_eq!(
            &rest[..32],
            members[0].prev.as_bytes(),
            "segment {name:?}: prev"
        );
        rest = &rest[32..];
        let lengths: Vec<usize> = members.iter().map(|_| uleb(&mut rest) as usize).collect();
        assert_eq!(lengths.iter().sum::<usize>(), rest.len());
        for (index, (len, v)) in lengths.iter().zip(&members).enumerate() {
            let (record, after) = rest.split_at(*len);
            rest = after;
            assert_eq!(
                &record[..32],
                v.hash.as_bytes(),
                "{name:?}: hash of {}",
                v.name
            );
            let flags = record[32];
            let first = members[0];
            let same_stream =
                index > 0 && v.stream == first.stream && v.version == first.version + index as u64;
            let same_kind = index > 0 && v.kind == first.kind;
            let keyed = v.idempotency_key.is_some();
            let expected = u8::from(same_stream) | u8::from(same_kind) << 1 | u8::from(keyed) << 2;
            assert_eq!(flags, expected, "{name:?}: flags of {}", v.name);
            assert!(
                record.ends_with(&v.payload),
                "{name:?}: payload of {}",
                v.name
            );
        }
    }
}
