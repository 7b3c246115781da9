//! The serde form of bytes a caller gives or a reader takes (`#[serde(with =
//! "annals_format::record::bytes")]`): serde's bytes, which the Node package gives as a
//! `Buffer` (and JSON as an array of numbers), read from bytes or a sequence of them. It only
//! converts: no limit is checked here, the type holding the bytes checks its own.

use serde::de::{SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

/// `bytes` as serde's bytes, not as a sequence of numbers one by one.
pub fn serialize<S: Serializer>(bytes: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(bytes)
}

/// Bytes from serde's bytes, or from a sequence of numbers (JSON's form).
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
    deserializer.deserialize_byte_buf(Bytes)
}

struct Bytes;

impl<'de> Visitor<'de> for Bytes {
    type Value = Vec<u8>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("bytes")
    }

    fn visit_bytes<E>(self, bytes: &[u8]) -> Result<Vec<u8>, E> {
        Ok(bytes.to_vec())
    }

    fn visit_byte_buf<E>(self, bytes: Vec<u8>) -> Result<Vec<u8>, E> {
        Ok(bytes)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<u8>, A::Error> {
        let mut bytes = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(byte) = seq.next_element()? {
            bytes.push(byte);
        }
        Ok(bytes)
    }
}
