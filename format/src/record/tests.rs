use super::*;
use crate::record::limits::HEADER_BYTES_CAP;
use view::RecordHashes;

fn placement(position: u64) -> Placement<'static> {
    Placement {
        stream: "s",
        position: Position(position),
        version: StreamVersion(0),
        prev: Digest::ZERO,
    }
}

fn stored(event: &NewEvent, position: u64) -> Vec<u8> {
    let mut out = Vec::new();
    encode_stored(&mut out, event, placement(position)).unwrap();
    out
}

#[test]
fn the_header_cap_is_every_field_at_its_cap() {
    assert_eq!(HEADER_BYTES_CAP, 2424);
    let event =
        NewEvent::new("k".repeat(256), u64::MAX, Vec::new()).with_idempotency_key("i".repeat(1024));
    let stream = "s".repeat(1024);
    let placement = Placement {
        stream: &stream,
        ..placement(u64::MAX)
    };
    let header = header_bytes(&event, placement, Digest::ZERO).unwrap();
    assert_eq!(header.len(), HEADER_BYTES_CAP);
}

#[test]
fn a_stored_record_decodes_to_what_was_encoded() {
    let event = NewEvent::new("kind", 5, b"payload".to_vec()).with_idempotency_key("key");
    let record = decode_stored(&stored(&event, 3), Position(3)).unwrap();
    assert_eq!(
        (
            record.kind.as_str(),
            record.at_ms,
            record.idempotency_key.as_deref()
        ),
        ("kind", 5, Some("key"))
    );
    assert_eq!(record.payload_hash, crate::hash::payload_hash(b"payload"));
}

#[test]
fn decoding_refuses_each_kind_of_damage() {
    let event = NewEvent::new("kind", 5, b"payload".to_vec());
    let good = stored(&event, 3);
    let check = |bytes: &[u8], position: u64, expected: fn(&RecordError) -> bool| {
        let error = decode_stored(bytes, Position(position)).unwrap_err();
        assert!(expected(&error), "unexpected {error:?}");
    };
    check(&good[..10], 3, |e| {
        matches!(e, RecordError::Truncated { .. })
    });
    check(&good[..40], 3, |e| matches!(e, RecordError::Header { .. }));
    check(&good[..good.len() - 1], 3, |e| {
        matches!(e, RecordError::PayloadLength { .. })
    });
    check(&good, 4, |e| matches!(e, RecordError::Position { .. }));
    let mut payload = good.clone();
    *payload.last_mut().unwrap() ^= 1;
    check(&payload, 3, |e| {
        matches!(e, RecordError::PayloadHash { .. })
    });
    let mut hash = good.clone();
    hash[0] ^= 1;
    check(&hash, 3, |e| matches!(e, RecordError::HeaderHash { .. }));
    let mut format = good.clone();
    format[32] = 2;
    check(&format, 3, |e| matches!(e, RecordError::UnknownFormat(2)));
    let mut long_stream = good.clone();
    long_stream[32 + 9..32 + 17].copy_from_slice(&2000u64.to_le_bytes());
    check(&long_stream, 3, |e| {
        matches!(
            e,
            RecordError::Header { .. } | RecordError::FieldOverCap { .. }
        )
    });
}

#[test]
fn a_huge_declared_length_is_refused_before_allocating() {
    let mut bytes = vec![0u8; 32];
    bytes.push(1);
    bytes.extend_from_slice(&0u64.to_le_bytes());
    bytes.extend_from_slice(&u64::MAX.to_le_bytes());
    let error = decode_stored(&bytes, Position(0)).unwrap_err();
    assert!(
        matches!(
            error,
            RecordError::FieldOverCap {
                field: Field::Stream,
                len: u64::MAX,
                ..
            }
        ),
        "{error:?}"
    );
}

/// Stored bytes of an event with the given key at position 7.
fn stored_with_key(key: Option<&str>) -> Vec<u8> {
    let mut event = NewEvent::new("kind.x", 99, b"payload".to_vec());
    event.idempotency_key = key.map(str::to_owned);
    let placement = Placement {
        stream: "s/ü",
        position: Position(7),
        version: StreamVersion(3),
        prev: Digest([5; 32]),
    };
    let mut out = Vec::new();
    encode_stored(&mut out, &event, placement).unwrap();
    out
}

#[test]
fn the_hand_parser_reads_headers_exactly_as_bincode_does() {
    for key in [None, Some("k"), Some("ü")] {
        let bytes = stored_with_key(key);
        let view = view::parse_stored(&bytes, Position(7), RecordHashes::Check).unwrap();
        let (fields, len) = header_by_bincode(&bytes[32..]).unwrap();
        assert_eq!(header_fields(&view), fields);
        assert_eq!(32 + len + view.payload.len(), bytes.len());
        assert_eq!(
            view.to_record(),
            decode_stored(&bytes, Position(7)).unwrap()
        );
    }
}

#[test]
fn an_empty_stream_kind_or_key_is_not_a_record_even_with_sound_hashes() {
    let stored = |stream: &str, kind: &str, key: Option<&str>| {
        let mut event = NewEvent::new(kind, 99, b"payload".to_vec());
        event.idempotency_key = key.map(str::to_owned);
        let placement = Placement {
            stream,
            ..placement(7)
        };
        let mut out = Vec::new();
        encode_stored(&mut out, &event, placement).unwrap();
        out
    };
    let cases = [
        (stored("", "kind", None), Field::Stream),
        (stored("s", "", None), Field::Kind),
        (stored("s", "kind", Some("")), Field::IdempotencyKey),
    ];
    for (bytes, field) in cases {
        let expected = Err(RecordError::EmptyField { field });
        assert_eq!(decode_stored(&bytes, Position(7)), expected, "{field}");
        for hashes in [RecordHashes::Check, RecordHashes::CoveredBySegmentDigest] {
            let parsed = view::parse_stored(&bytes, Position(7), hashes).map(|v| v.to_record());
            assert_eq!(parsed, expected, "{field}, {hashes:?}");
        }
    }
    assert!(decode_stored(&stored("s", "kind", Some("k")), Position(7)).is_ok());
}

#[test]
fn malformed_header_fields_are_refused_by_name() {
    let header_error = |bytes: &[u8]| match decode_stored(bytes, Position(7)) {
        Err(error @ RecordError::Header { .. }) => error.to_string(),
        other => panic!("expected a header error, got {other:?}"),
    };
    let good = stored_with_key(Some("k"));
    // The key's tag follows format, position, stream, version, kind, schema and at_ms.
    let tag_at = 32 + 1 + 8 + (8 + "s/ü".len()) + 8 + (8 + "kind.x".len()) + 2 + 8;
    assert_eq!(good[tag_at], 1);
    let mut tag = good.clone();
    tag[tag_at] = 2;
    assert!(header_error(&tag).contains("tag is 2"));
    let mut utf8 = good.clone();
    utf8[32 + 1 + 8 + 8 + 2] = 0xff; // inside "ü"
    assert!(header_error(&utf8).contains("not UTF-8"));
    assert!(header_error(&good[..tag_at + 3]).contains("remain"));
}

#[test]
fn a_short_input_cannot_claim_a_large_allocation() {
    // Eight bytes claiming a 20 MB string: bincode would allocate it before reading.
    let claim = 20_000_000u64.to_le_bytes();
    let refused = decode_bounded::<String>(&claim).unwrap_err();
    assert!(refused.to_lowercase().contains("limit"), "{refused}");
}

#[test]
fn values_up_to_32_times_their_encoding_still_decode() {
    let nones: Vec<Option<String>> = vec![None; 1000];
    let bytes = bincode::serde::encode_to_vec(&nones, bincode_config()).unwrap();
    assert_eq!(decode_bounded::<Vec<Option<String>>>(&bytes), Ok(nones));
    let mut trailing = bincode::serde::encode_to_vec(7u64, bincode_config()).unwrap();
    trailing.push(0);
    assert!(
        decode_bounded::<u64>(&trailing)
            .unwrap_err()
            .contains("after")
    );
}

#[test]
fn a_header_laid_out_on_the_stack_or_through_bincode_hashes_and_stores_the_same() {
    let mut laid_out = [false; 2];
    // Filling the stack buffer (`HEADER_BYTES_COMMON`: 112 fixed bytes, 120 with a key) and
    // one byte past it, and every string at its cap.
    for (stream_len, kind_len, key_len) in [
        (1, 1, None),
        (200, 72, None),
        (200, 73, None),
        (200, 57, Some(7)),
        (200, 58, Some(7)),
        (1024, 256, Some(1024)),
    ] {
        let stream = "s".repeat(stream_len);
        let mut event = NewEvent::new("k".repeat(kind_len), 3, b"payload".to_vec());
        event.idempotency_key = key_len.map(|len| "i".repeat(len));
        let placement = Placement {
            stream: &stream,
            ..placement(7)
        };
        let mut bytes = Vec::new();
        encode_stored(&mut bytes, &event, placement).unwrap();
        let header = header_bytes(&event, placement, hash::payload_hash(&event.payload)).unwrap();
        let view = view::parse_stored(&bytes, Position(7), RecordHashes::Check).unwrap();
        let case = format!("stream {stream_len}, kind {kind_len}, key {key_len:?}");
        let on_stack = view.header_fields().write_v1(&mut [0; HEADER_BYTES_COMMON]);
        assert_eq!(
            on_stack.is_some(),
            header.len() <= HEADER_BYTES_COMMON,
            "{case}"
        );
        laid_out[usize::from(on_stack.is_some())] = true;
        assert_eq!(
            view.header_fields().record_hash(),
            hash::record_hash(&header),
            "{case}"
        );
        assert_eq!(view.hash, hash::record_hash(&header), "{case}");
        let mut again = Vec::new();
        view.encode_v1_stored(&mut again);
        assert_eq!(again, bytes, "{case}");
    }
    assert_eq!(laid_out, [true, true], "both ways were taken");
}
