//! Hashing: the 32-byte [`Digest`] and the blake3 functions the format uses.
//!
//! This module owns the context strings that separate one use of blake3 from another. It does
//! no I/O and knows nothing of redb; `schema/FORMAT.md` specifies every function here.

use std::fmt;
use std::sync::LazyLock;

/// The derive-key context of a record's header hash. Part of format v1: changing it changes
/// every record hash, so it never changes within a format version.
pub const RECORD_HEADER_CONTEXT: &str = "annals 2026-11-29 record header v1";

/// The derive-key context of the content hash that idempotent appends compare.
pub const IDEMPOTENT_CONTENT_CONTEXT: &str = "annals 2026-11-29 idempotent content v1";

/// The derive-key context of a tree head hash, which binds a Merkle root to its tree's size.
pub const TREE_HEAD_CONTEXT: &str = "annals 2026-11-29 tree head v1";

/// The derive-key context of a segment's digest, which lets a sequential read check a whole
/// segment in one hash (fast on long inputs) instead of two short hashes per record.
pub const SEGMENT_CONTEXT: &str = "annals 2026-11-29 segment v1";

/// The derive-key context of a format v2 segment's digest: the same role as
/// [`SEGMENT_CONTEXT`] over another layout.
pub const SEGMENT_V2_CONTEXT: &str = "annals 2026-12-01 segment v2";

/// A 32-byte blake3 output: a record hash, a payload hash or a content hash.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, bincode::Encode, bincode::Decode,
)]
pub struct Digest(pub [u8; 32]);

impl Digest {
    /// All zero bytes: the `prev` of the record at position 0 and the head hash of an empty log.
    pub const ZERO: Digest = Digest([0; 32]);

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lower-case hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parses 64 hex characters (either case).
    ///
    /// ```
    /// let d = annals_format::hash::Digest::from_hex(&"ab".repeat(32)).unwrap();
    /// assert_eq!(d.as_bytes()[0], 0xab);
    /// assert!(annals_format::hash::Digest::from_hex("ab").is_none());
    /// ```
    pub fn from_hex(text: &str) -> Option<Digest> {
        let bytes = unhex(text)?;
        Some(Digest(bytes.try_into().ok()?))
    }
}

impl AsRef<[u8]> for Digest {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// A digest's serde form is its 64 lower-case hex digits, as the command line's JSON and the
/// Node package show it.
impl serde::Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Digest::from_hex(&text)
            .ok_or_else(|| serde::de::Error::custom("must be 64 lower-case hex digits"))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Digest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Digest".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "pattern": "^[0-9a-f]{64}$" })
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({})", self.to_hex())
    }
}

// Derive-key mode first hashes the context string into a key. A hasher made once with that
// key and cloned per use skips that compression on every record: one of about eight for a
// record with a 200-byte payload. The output is the same (the golden vectors check it).
static RECORD_HEADER_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(RECORD_HEADER_CONTEXT));
static SEGMENT_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(SEGMENT_CONTEXT));
static SEGMENT_V2_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(SEGMENT_V2_CONTEXT));
static IDEMPOTENT_CONTENT_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(IDEMPOTENT_CONTENT_CONTEXT));

/// blake3 of the payload bytes, in plain (unkeyed) mode, so that anyone can check a payload
/// with any blake3 tool.
pub fn payload_hash(payload: &[u8]) -> Digest {
    Digest(*blake3::hash(payload).as_bytes())
}

/// The record hash: blake3 in derive-key mode with [`RECORD_HEADER_CONTEXT`] over the
/// canonical header bytes.
pub fn record_hash(header_bytes: &[u8]) -> Digest {
    let mut hasher = RECORD_HEADER_HASHER.clone();
    hasher.update(header_bytes);
    Digest(*hasher.finalize().as_bytes())
}

/// A segment's digest: blake3 in derive-key mode with [`SEGMENT_CONTEXT`] over the segment's
/// bytes after the digest (its count, end table and body).
pub fn segment_digest(covered: &[u8]) -> Digest {
    let mut hasher = SEGMENT_HASHER.clone();
    hasher.update(covered);
    Digest(*hasher.finalize().as_bytes())
}

/// A format v2 segment's digest: blake3 in derive-key mode with [`SEGMENT_V2_CONTEXT`] over
/// the segment's bytes after the digest.
pub fn segment_v2_digest(covered: &[u8]) -> Digest {
    let mut hasher = SEGMENT_V2_HASHER.clone();
    hasher.update(covered);
    Digest(*hasher.finalize().as_bytes())
}

/// The content hash of an idempotent append: blake3 in derive-key mode with
/// [`IDEMPOTENT_CONTENT_CONTEXT`] over its canonical bytes (see `record::content_bytes`).
pub fn content_hash(content_bytes: &[u8]) -> Digest {
    let mut hasher = IDEMPOTENT_CONTENT_HASHER.clone();
    hasher.update(content_bytes);
    Digest(*hasher.finalize().as_bytes())
}

/// Lower-case hex of any bytes.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Bytes from hex (either case); `None` for an odd length or a non-hex character.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    fn nibble(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let text = text.as_bytes();
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.chunks_exact(2)
        .map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_every_byte() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(unhex(&hex(&bytes)), Some(bytes));
    }

    #[test]
    fn unhex_refuses_odd_length_and_non_hex() {
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn contexts_separate_the_record_hash_from_the_content_hash() {
        assert_ne!(record_hash(b"same"), content_hash(b"same"));
        assert_ne!(record_hash(b"same"), payload_hash(b"same"));
    }
}
