//! `schema/vectors/records.json` (format v1 records: inputs, header, stored bytes, hashes)
//! and `segments_v2.json` (the same records packed as format v2 segments).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::record::segment::SegmentBuilder;
use crate::record::{self, Format, Placement};
use crate::{NewEvent, Position, hash::Digest, record::StreamVersion};

use crate::hash::hex;

/// A vector's inputs, as the generator states them.
struct Input {
    name: &'static str,
    position: u64,
    stream: &'static str,
    version: u64,
    kind: &'static str,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<&'static str>,
    prev: Prev,
    payload: Vec<u8>,
}

/// What a vector chains to.
enum Prev {
    /// The hash of the vector before it in the file.
    Previous,
    /// Fixed bytes.
    Bytes([u8; 32]),
}

/// One vector as the file stores it; field order is the order in the file.
#[derive(Serialize)]
struct Written {
    name: &'static str,
    position: u64,
    stream: &'static str,
    version: u64,
    kind: &'static str,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<&'static str>,
    prev: String,
    payload_hex: String,
    header_hex: String,
    stored_hex: String,
    payload_hash: String,
    hash: String,
    /// What a v2 segment of the record needs; not in the file.
    #[serde(skip)]
    members: Member,
}

/// A written vector's record as a segment packs it.
struct Member {
    prev: Digest,
    hash: Digest,
    event: NewEvent,
}

/// The inputs of every vector. Appending a vector is fine; changing one is a format change.
fn inputs() -> Vec<Input> {
    let mut non_ascii_payload = "Grüße, 日本".as_bytes().to_vec();
    non_ascii_payload.extend_from_slice(&[0x00, 0xff, 0xfe]);
    let fixed_prev: [u8; 32] = std::array::from_fn(|i| i as u8);
    vec![
        Input {
            name: "genesis-empty-payload",
            position: 0,
            stream: "lease/deploy-lock",
            version: 0,
            kind: "lease.acquired",
            schema: 1,
            at_ms: 1_700_000_000_000,
            idempotency_key: None,
            prev: Prev::Bytes([0; 32]),
            payload: Vec::new(),
        },
        Input {
            name: "idempotency-key-chained-to-genesis",
            position: 1,
            stream: "lease/deploy-lock",
            version: 1,
            kind: "lease.renewed",
            schema: 1,
            at_ms: 1_700_000_030_000,
            idempotency_key: Some("req-42"),
            prev: Prev::Previous,
            payload: br#"{"ttl_ms":30000}"#.to_vec(),
        },
        Input {
            name: "non-ascii-stream-key-and-payload",
            position: 2,
            stream: "lease/Überlauf-日本",
            version: 0,
            kind: "lease.acquired",
            schema: 1,
            at_ms: 1_700_000_060_000,
            idempotency_key: Some("schlüssel-鍵"),
            prev: Prev::Previous,
            payload: non_ascii_payload,
        },
        Input {
            name: "later-position-fixed-prev",
            position: 41,
            stream: "run/nightly-build",
            version: 17,
            kind: "run.finished",
            schema: 1,
            at_ms: 1_700_003_600_000,
            idempotency_key: None,
            prev: Prev::Bytes(fixed_prev),
            payload: b"exit=0".to_vec(),
        },
        Input {
            name: "schema-513",
            position: 42,
            stream: "registry/agent-7",
            version: 3,
            kind: "agent.registered",
            schema: 513,
            at_ms: 1_700_003_600_001,
            idempotency_key: Some("reg-7"),
            prev: Prev::Previous,
            payload: br#"{"v":513}"#.to_vec(),
        },
        Input {
            name: "at-ms-max",
            position: 43,
            stream: "outbox/mail",
            version: 0,
            kind: "outbox.enqueued",
            schema: 1,
            at_ms: u64::MAX,
            idempotency_key: None,
            prev: Prev::Previous,
            payload: vec![0xff; 8],
        },
        Input {
            name: "payload-64-kib",
            position: 44,
            stream: "blob/big",
            version: 0,
            kind: "blob.stored",
            schema: 1,
            at_ms: 1_700_007_200_000,
            idempotency_key: Some("blob-64k"),
            prev: Prev::Previous,
            payload: (0..64 * 1024).map(|i| (i % 251) as u8).collect(),
        },
        Input {
            name: "wide-integers-byte-order",
            position: 0x0102_0304_0506_0708,
            stream: "s",
            version: 0x1112_1314_1516_1718,
            kind: "k",
            schema: u16::MAX,
            at_ms: 0x2122_2324_2526_2728,
            idempotency_key: Some("i"),
            prev: Prev::Bytes([0xff; 32]),
            payload: vec![0x2a],
        },
    ]
}

/// Every vector as today's encoder writes it from [`inputs`], in the file's order.
fn generate() -> Vec<Written> {
    let mut written = Vec::new();
    let mut previous = Digest::ZERO;
    for input in inputs() {
        let prev = match input.prev {
            Prev::Previous => previous,
            Prev::Bytes(bytes) => Digest(bytes),
        };
        let event = NewEvent {
            kind: input.kind.to_owned(),
            schema: input.schema,
            at_ms: input.at_ms,
            idempotency_key: input.idempotency_key.map(str::to_owned),
            payload: input.payload,
        };
        let placement = Placement {
            stream: input.stream,
            position: Position(input.position),
            version: StreamVersion(input.version),
            prev,
        };
        let payload_hash = crate::hash::payload_hash(&event.payload);
        let header = record::header_bytes(&event, placement, payload_hash).expect("header");
        let mut stored = Vec::new();
        let hash = record::encode_stored(&mut stored, &event, placement).expect("stored");
        previous = hash;
        written.push(Written {
            name: input.name,
            position: input.position,
            stream: input.stream,
            version: input.version,
            kind: input.kind,
            schema: input.schema,
            at_ms: input.at_ms,
            idempotency_key: input.idempotency_key,
            prev: prev.to_hex(),
            payload_hex: hex(&event.payload),
            header_hex: hex(&header),
            stored_hex: hex(&stored),
            payload_hash: payload_hash.to_hex(),
            hash: hash.to_hex(),
            members: Member { prev, hash, event },
        });
    }
    written
}

/// The text of `schema/vectors/records.json`.
pub fn text() -> String {
    super::pretty(&generate())
}

/// The v2 segments: a name and the v1 vectors each holds, in order (consecutive positions,
/// each chained to the one before).
const SEGMENTS_V2: [(&str, &[&str]); 3] = [
    (
        "genesis-run-shared-stream-and-kind",
        &[
            "genesis-empty-payload",
            "idempotency-key-chained-to-genesis",
            "non-ascii-stream-key-and-payload",
        ],
    ),
    (
        "later-positions-fixed-prev-64-kib",
        &[
            "later-position-fixed-prev",
            "schema-513",
            "at-ms-max",
            "payload-64-kib",
        ],
    ),
    ("wide-integers-alone", &["wide-integers-byte-order"]),
];

/// One v2 segment as the file stores it.
#[derive(Serialize)]
struct WrittenSegment {
    name: &'static str,
    key: u64,
    records: Vec<&'static str>,
    segment_hex: String,
}

/// The text of `schema/vectors/segments_v2.json`: each of `SEGMENTS_V2` packed as the
/// log's writer packs it.
pub fn segments_text() -> String {
    let vectors = generate();
    let by_name: BTreeMap<&str, &Written> = vectors.iter().map(|v| (v.name, v)).collect();
    let written: Vec<WrittenSegment> = SEGMENTS_V2
        .iter()
        .map(|(name, names)| {
            let members: Vec<&Written> = names.iter().map(|name| by_name[name]).collect();
            let mut builder = SegmentBuilder::with_format(Format::V2);
            for v in &members {
                let member = &v.members;
                builder.push_v2(member.prev, member.hash, v.stream, v.version, &member.event);
            }
            WrittenSegment {
                name,
                key: members[0].position,
                records: names.to_vec(),
                segment_hex: hex(&builder.finish()),
            }
        })
        .collect();
    super::pretty(&written)
}
