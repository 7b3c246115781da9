//! The record: what one event is on disk, byte for byte, and how it is hashed.
//!
//! This module owns the canonical encoding of the format (see `schema/FORMAT.md`): the v1
//! header every record hash is taken over, the v1 stored record (`hash ‖ header ‖ payload`),
//! the compact stored record of format v2 (`compact.rs`) and the segment that packs several
//! stored records into one value. It never touches redb and never does I/O; every decoder
//! here is bounded by the caps in [`limits`] before it allocates.

pub mod bytes;
pub mod compact;
pub mod envelope;
pub mod expected;
pub mod limits;
pub mod problem;
pub mod seal;
pub mod segment;
pub mod uleb128;
pub mod view;

use std::fmt;

use bincode::config::{Configuration, Fixint, LittleEndian, NoLimit};

use crate::hash::{self, Digest};
pub use expected::{ExpectedVersion, UnknownExpectedVersion};
use limits::{Field, LimitError, Limits, PAYLOAD_BYTES_CAP, check_len};
pub use seal::SealProblem;
use view::RecordHashes;
pub use view::RecordView;

/// The `format` byte of the header every record hash is taken over (`schema/FORMAT.md` 1.1):
/// 1 in every file format, since format v2 stores records otherwise but hashes the same
/// header.
pub const RECORD_FORMAT: u8 = 1;

/// How a file stores its records: the `format` of its `annals.meta` table. A store writes the
/// format of its file, so a file never mixes them; a record's hash is the same in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// Format v1: each stored record is `hash ‖ header ‖ payload` with the whole header
    /// (`schema/FORMAT.md` 1.3, 3.1).
    V1,
    /// Format v2: each stored record is `hash ‖ compact header ‖ payload`, without what its
    /// segment already determines (`schema/FORMAT.md` 3.8).
    V2,
}

impl Format {
    /// The format of the files this build creates.
    pub const CURRENT: Format = Format::V2;

    /// The version number `annals.meta` stores under `format`.
    pub const fn version(self) -> u32 {
        match self {
            Format::V1 => 1,
            Format::V2 => 2,
        }
    }

    /// The format of version number `version`, `None` for one this build does not know.
    pub fn from_version(version: u32) -> Option<Format> {
        match version {
            1 => Some(Format::V1),
            2 => Some(Format::V2),
            _ => None,
        }
    }
}

/// The one bincode configuration of format v1: little-endian, fixed-width integers
/// (a `u64` is always 8 bytes, a length is a `u64`). Spelled out in `schema/FORMAT.md`.
pub const fn bincode_config() -> Configuration<LittleEndian, Fixint, NoLimit> {
    bincode::config::standard()
        .with_little_endian()
        .with_fixed_int_encoding()
}

/// Encodes a serde value with the format's configuration, into a vector sized up front for
/// the crate's rows and payloads: bincode's serde `encode_to_vec` grows its vector from empty,
/// a reallocation every few fields, which was most of a projection row's encoding time.
pub fn encode_serde<T: serde::Serialize + ?Sized>(
    value: &T,
) -> Result<Vec<u8>, bincode::error::EncodeError> {
    let mut bytes = Vec::with_capacity(ENCODED_CAPACITY);
    bincode::serde::encode_into_std_write(value, &mut bytes, bincode_config())?;
    Ok(bytes)
}

/// The capacity [`encode_serde`] starts with: more than most rows and payloads take.
const ENCODED_CAPACITY: usize = 256;

/// Decodes a serde value from `bytes` with the format's configuration, refusing trailing
/// bytes, with a bincode allocation limit scaled to the input: in-memory forms of the
/// crate's types are at most 32 times their encoding (an `Option<String>` that is `None`
/// takes one byte on the wire and 24 in memory), so a short input can never claim a large
/// allocation. The error is bincode's account, or how many bytes were left over.
pub fn decode_bounded<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    fn with_limit<T: serde::de::DeserializeOwned, const LIMIT: usize>(
        bytes: &[u8],
    ) -> Result<(T, usize), String> {
        bincode::serde::decode_from_slice(bytes, bincode_config().with_limit::<LIMIT>())
            .map_err(|error| error.to_string())
    }
    const KIB: usize = 1024;
    let (value, read) = match bytes.len() {
        0..=1024 => with_limit::<T, { 32 * KIB + 4 * KIB }>(bytes)?,
        1025..=16_384 => with_limit::<T, { 512 * KIB + 4 * KIB }>(bytes)?,
        16_385..=262_144 => with_limit::<T, { 8 * KIB * KIB + 4 * KIB }>(bytes)?,
        262_145..=4_194_304 => with_limit::<T, { 128 * KIB * KIB + 4 * KIB }>(bytes)?,
        _ => with_limit::<T, { 32 * limits::PAYLOAD_BYTES_CAP as usize }>(bytes)?,
    };
    if read != bytes.len() {
        return Err(format!("{} bytes after the value", bytes.len() - read));
    }
    Ok(value)
}

/// A record's place in the whole log: 0, 1, 2, … with no gap. Its serde form is the number.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Position(pub u64);

/// A record's place within its stream: 0, 1, 2, … with no gap. Its serde form is the number.
#[derive(
    Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize, serde::Deserialize,
)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct StreamVersion(pub u64);

macro_rules! counter_fmt {
    ($name:ident) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}", self.0)
            }
        }
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.0)
            }
        }
    };
}
counter_fmt!(Position);
counter_fmt!(StreamVersion);

/// An event to append: what the caller supplies. Position, version, hashes and the chain link
/// are the store's to assign.
///
/// Its serde form is what a caller gives (the Node package's `NewEvent`): `schema` may be left
/// out for 1, and the payload is serde's bytes (a `Buffer` in the Node package).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct NewEvent {
    /// The event type, e.g. `lease.acquired`.
    pub kind: String,
    /// The payload's schema version, for upcasting. Default 1.
    #[serde(default = "first_schema")]
    pub schema: u16,
    /// The command's clock in milliseconds since the Unix epoch, supplied by the caller.
    pub at_ms: u64,
    /// A key that makes the append idempotent: the same key with the same content is a
    /// duplicate, with other content a conflict.
    pub idempotency_key: Option<String>,
    /// The payload bytes, opaque to the log.
    #[serde(with = "bytes")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub payload: Vec<u8>,
}

/// The schema version of an event that names none: the first.
fn first_schema() -> u16 {
    1
}

impl NewEvent {
    /// An event of `kind` at `at_ms` carrying `payload`, schema 1, no idempotency key.
    ///
    /// ```
    /// use annals_format::record::NewEvent;
    ///
    /// let event = NewEvent::new("lease.acquired", 1_700_000_000_000, b"{}".to_vec())
    ///     .with_idempotency_key("req-42");
    /// assert_eq!(event.idempotency_key.as_deref(), Some("req-42"));
    /// ```
    pub fn new(kind: impl Into<String>, at_ms: u64, payload: impl Into<Vec<u8>>) -> Self {
        NewEvent {
            kind: kind.into(),
            schema: first_schema(),
            at_ms,
            idempotency_key: None,
            payload: payload.into(),
        }
    }

    /// Sets the idempotency key.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets the payload schema version.
    pub fn with_schema(mut self, schema: u16) -> Self {
        self.schema = schema;
        self
    }

    /// Checks kind, key and payload against `limits`.
    pub fn check(&self, limits: &Limits) -> Result<(), LimitError> {
        check_len(Field::Kind, self.kind.len(), limits.kind_bytes_max)?;
        if let Some(key) = &self.idempotency_key {
            check_len(
                Field::IdempotencyKey,
                key.len(),
                limits.idempotency_key_bytes_max,
            )?;
        }
        check_len(Field::Payload, self.payload.len(), limits.payload_bytes_max)
    }
}

/// Checks a stream name against `limits`.
pub fn check_stream(stream: &str, limits: &Limits) -> Result<(), LimitError> {
    check_len(Field::Stream, stream.len(), limits.stream_bytes_max)
}

/// One record as read back from the log, its hashes checked.
///
/// Its serde form is the record as a reader takes it (the Node package's `LogRecord`): the
/// payload as bytes, the hash as hex, and neither `payload_hash` nor `prev`, which follow
/// from the log (the payload's blake3, the record before's hash) and which `verify` checks.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Record {
    /// Its place in the log.
    pub position: Position,
    /// Its stream.
    pub stream: String,
    /// Its place in the stream.
    pub version: StreamVersion,
    /// The event type.
    pub kind: String,
    /// The payload's schema version.
    pub schema: u16,
    /// The command's clock, milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The idempotency key it was appended with, if any.
    pub idempotency_key: Option<String>,
    /// The payload bytes.
    #[serde(serialize_with = "bytes::serialize")]
    #[cfg_attr(feature = "schema", schemars(with = "Vec<u8>"))]
    pub payload: Vec<u8>,
    /// blake3 of the payload.
    #[serde(skip)]
    pub payload_hash: Digest,
    /// The hash of the record before it (zero at position 0).
    #[serde(skip)]
    pub prev: Digest,
    /// This record's hash: the derive-key hash of its header (over the stored payload: a
    /// personal one's ciphertext), lower-case hex.
    pub hash: Digest,
}

#[cfg(any(test, feature = "testing"))]
/// The header exactly as format v1 lays it out; field order is the byte order.
#[derive(bincode::Encode, bincode::Decode)]
struct Header {
    format: u8,
    position: u64,
    stream: String,
    version: u64,
    kind: String,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<String>,
    payload_len: u32,
    payload_hash: Digest,
    prev: Digest,
}

/// Borrowed header fields, encoded in the same order as [`Header`] without copying strings.
#[derive(bincode::Encode)]
struct HeaderRef<'a> {
    format: u8,
    position: u64,
    stream: &'a str,
    version: u64,
    kind: &'a str,
    schema: u16,
    at_ms: u64,
    idempotency_key: Option<&'a str>,
    payload_len: u32,
    payload_hash: Digest,
    prev: Digest,
}

/// Where a record goes: the fields the log assigns.
#[derive(Clone, Copy, Debug)]
pub struct Placement<'a> {
    /// The stream.
    pub stream: &'a str,
    /// The record's position.
    pub position: Position,
    /// The record's version in its stream.
    pub version: StreamVersion,
    /// The hash of the record at `position - 1`, or zero.
    pub prev: Digest,
}

/// The canonical header bytes of an event placed in the log.
///
/// Refuses a payload over [`PAYLOAD_BYTES_CAP`]; the other fields are the caller's to check
/// (see [`NewEvent::check`]).
pub fn header_bytes(
    event: &NewEvent,
    placement: Placement<'_>,
    payload_hash: Digest,
) -> Result<Vec<u8>, LimitError> {
    check_len(Field::Payload, event.payload.len(), PAYLOAD_BYTES_CAP)?;
    let payload_len = event.payload.len() as u32;
    let header = HeaderRef {
        format: RECORD_FORMAT,
        position: placement.position.0,
        stream: placement.stream,
        version: placement.version.0,
        kind: &event.kind,
        schema: event.schema,
        at_ms: event.at_ms,
        idempotency_key: event.idempotency_key.as_deref(),
        payload_len,
        payload_hash,
        prev: placement.prev,
    };
    Ok(bincode::encode_to_vec(header, bincode_config())
        .expect("encoding to a Vec cannot fail for these field types"))
}

#[cfg(any(test, feature = "testing"))]
/// Encodes the stored form of an event (`hash ‖ header ‖ payload`) onto `out` and returns the
/// record hash.
pub fn encode_stored(
    out: &mut Vec<u8>,
    event: &NewEvent,
    placement: Placement<'_>,
) -> Result<Digest, LimitError> {
    encode_stored_hashed(out, event, placement, hash::payload_hash(&event.payload))
}

/// `encode_stored` for a caller that has already hashed the payload.
pub fn encode_stored_hashed(
    out: &mut Vec<u8>,
    event: &NewEvent,
    placement: Placement<'_>,
    payload_hash: Digest,
) -> Result<Digest, LimitError> {
    debug_assert_eq!(payload_hash, hash::payload_hash(&event.payload));
    let header = header_bytes(event, placement, payload_hash)?;
    let record_hash = hash::record_hash(&header);
    out.reserve(32 + header.len() + event.payload.len());
    out.extend_from_slice(record_hash.as_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(&event.payload);
    Ok(record_hash)
}

/// The fields of a v1 header, borrowed: what a record hash is recomputed from when the
/// header is not stored as it is hashed (format v2), and what an export writes a record's v1
/// stored form from.
#[derive(Clone, Copy, Debug)]
pub struct HeaderFields<'a> {
    /// The record's position in the log.
    pub position: u64,
    /// Its stream's name.
    pub stream: &'a str,
    /// Its version in its stream.
    pub version: u64,
    /// Its event kind.
    pub kind: &'a str,
    /// Its payload's schema version.
    pub schema: u16,
    /// When it happened, in the caller's milliseconds.
    pub at_ms: u64,
    /// The key an append named it by, if any.
    pub idempotency_key: Option<&'a str>,
    /// Its payload's length in bytes.
    pub payload_len: u32,
    /// The blake3 of its payload.
    pub payload_hash: Digest,
    /// The hash of the record before it.
    pub prev: Digest,
}

/// The room on the stack for a v1 header laid out by hand: every header whose stream, kind
/// and key take 264 bytes together or less. A buffer for the largest header
/// ([`limits::HEADER_BYTES_CAP`], 2,424 bytes) was zeroed at every record hashed or stored,
/// a tenth of an append's instructions; a longer header goes through bincode.
const HEADER_BYTES_COMMON: usize = 384;

impl HeaderFields<'_> {
    /// Lays out the v1 header (`schema/FORMAT.md` 1.1) by hand into `buf` and returns its
    /// length: the bytes [`header_bytes`] encodes through bincode, without an allocation (a v2
    /// read rebuilds one header per record). `None` if it does not fit in `buf`, as a header
    /// whose strings are long may not: the caller encodes it through bincode then.
    fn write_v1(&self, buf: &mut [u8]) -> Option<usize> {
        let mut at = 0;
        let mut put = |bytes: &[u8]| -> Option<()> {
            buf.get_mut(at..at + bytes.len())?.copy_from_slice(bytes);
            at += bytes.len();
            Some(())
        };
        put(&[RECORD_FORMAT])?;
        put(&self.position.to_le_bytes())?;
        put(&(self.stream.len() as u64).to_le_bytes())?;
        put(self.stream.as_bytes())?;
        put(&self.version.to_le_bytes())?;
        put(&(self.kind.len() as u64).to_le_bytes())?;
        put(self.kind.as_bytes())?;
        put(&self.schema.to_le_bytes())?;
        put(&self.at_ms.to_le_bytes())?;
        match self.idempotency_key {
            None => put(&[0])?,
            Some(key) => {
                put(&[1])?;
                put(&(key.len() as u64).to_le_bytes())?;
                put(key.as_bytes())?;
            }
        }
        put(&self.payload_len.to_le_bytes())?;
        put(self.payload_hash.as_bytes())?;
        put(self.prev.as_bytes())?;
        Some(at)
    }

    /// The record hash of these fields: the derive-key hash of their v1 header.
    pub fn record_hash(&self) -> Digest {
        let mut buf = [0; HEADER_BYTES_COMMON];
        match self.write_v1(&mut buf) {
            Some(len) => hash::record_hash(&buf[..len]),
            None => hash::record_hash(&self.v1_header()),
        }
    }

    /// The v1 header of these fields.
    pub fn v1_header(&self) -> Vec<u8> {
        let header = HeaderRef {
            format: RECORD_FORMAT,
            position: self.position,
            stream: self.stream,
            version: self.version,
            kind: self.kind,
            schema: self.schema,
            at_ms: self.at_ms,
            idempotency_key: self.idempotency_key,
            payload_len: self.payload_len,
            payload_hash: self.payload_hash,
            prev: self.prev,
        };
        bincode::encode_to_vec(header, bincode_config())
            .expect("encoding to a Vec cannot fail for these field types")
    }
}

impl RecordView<'_> {
    /// The record's v1 header fields.
    pub fn header_fields(&self) -> HeaderFields<'_> {
        HeaderFields {
            position: self.position.0,
            stream: self.stream,
            version: self.version.0,
            kind: self.kind,
            schema: self.schema,
            at_ms: self.at_ms,
            idempotency_key: self.idempotency_key,
            payload_len: self.payload.len() as u32,
            payload_hash: self.payload_hash(),
            prev: self.prev,
        }
    }

    /// Appends the record's v1 stored form (`hash ‖ header ‖ payload`, `schema/FORMAT.md`
    /// 1.3) to `out`: what export files and the replication wire carry, whatever the format
    /// of the file it was read from.
    pub fn encode_v1_stored(&self, out: &mut Vec<u8>) {
        let mut buf = [0; HEADER_BYTES_COMMON];
        let fields = self.header_fields();
        out.extend_from_slice(self.hash.as_bytes());
        match fields.write_v1(&mut buf) {
            Some(len) => out.extend_from_slice(&buf[..len]),
            None => out.extend_from_slice(&fields.v1_header()),
        }
        out.extend_from_slice(self.payload);
    }
}

/// The canonical bytes of an idempotent append's content: stream, kind and payload hash.
pub fn content_bytes(stream: &str, kind: &str, payload_hash: Digest) -> Vec<u8> {
    bincode::encode_to_vec((stream, kind, payload_hash), bincode_config())
        .expect("encoding to a Vec cannot fail for these field types")
}

/// The content hash an idempotency key is bound to: what makes two appends "the same".
pub fn content_hash(stream: &str, kind: &str, payload_hash: Digest) -> Digest {
    hash::content_hash(&content_bytes(stream, kind, payload_hash))
}

/// What is wrong with a part of a record's header ([`RecordError::Header`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeaderProblem {
    /// It needs `need` bytes at header offset `offset`, and only `remain` are left.
    Short {
        /// Bytes it needs.
        need: u64,
        /// Where in the header it starts.
        offset: u64,
        /// Bytes left from there.
        remain: u64,
    },
    /// A tag other than 0 (absent) or 1 (present).
    Tag {
        /// The tag found.
        found: u8,
    },
    /// Flag bits this format does not define.
    Flags {
        /// The flags byte found.
        found: u8,
    },
    /// Not an unsigned LEB128 number in its shortest form.
    NotLeb128,
    /// A number wider than its field.
    TooWide {
        /// The number.
        value: u64,
        /// The field's width in bits.
        bits: u32,
    },
    /// Not UTF-8: the first `valid_up_to` bytes are.
    NotUtf8 {
        /// How many leading bytes are valid UTF-8.
        valid_up_to: usize,
    },
    /// Absent, and not shared from the first record of its segment either.
    Absent,
    /// Shared from the first record of its segment, by that first record itself (or by a
    /// record whose segment's first record does not hold it).
    SharedWithoutSource,
    /// The version it makes would pass 2^64.
    VersionOverflow,
}

impl std::fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HeaderProblem::Short {
                need,
                offset,
                remain,
            } => write!(
                f,
                "needs {need} bytes at header offset {offset}, {remain} remain"
            ),
            HeaderProblem::Tag { found } => {
                write!(f, "is {found}, neither 0 (absent) nor 1 (present)")
            }
            HeaderProblem::Flags { found } => {
                write!(f, "{found:#04x} set bits this format does not define")
            }
            HeaderProblem::NotLeb128 => {
                f.write_str("is not an unsigned LEB128 number in its shortest form")
            }
            HeaderProblem::TooWide { value, bits } => {
                write!(f, "{value} does not fit {bits} bits")
            }
            HeaderProblem::NotUtf8 { valid_up_to } => {
                write!(f, "is not UTF-8 (valid up to byte {valid_up_to})")
            }
            HeaderProblem::Absent => f.write_str("is absent"),
            HeaderProblem::SharedWithoutSource => f.write_str(
                "is shared from the first record of its segment, which does not hold it",
            ),
            HeaderProblem::VersionOverflow => f.write_str("would pass 2^64"),
        }
    }
}

/// What is wrong with stored bytes that should hold a record.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// Too few bytes for the parts the record declares.
    #[error("truncated: {len} bytes, need at least {need}")]
    Truncated {
        /// Bytes present.
        len: u64,
        /// Bytes needed.
        need: u64,
    },
    /// The header bytes do not decode: `field` is the part that does not, `problem` why.
    #[error("header does not decode: {field} {problem}")]
    Header {
        /// The part of the header, e.g. `version`, `idempotency_key tag`, `stream`.
        field: &'static str,
        /// What is wrong with it.
        problem: HeaderProblem,
    },
    /// A record format this code does not know.
    #[error("record format {0} is not supported (this build reads format {RECORD_FORMAT})")]
    UnknownFormat(u8),
    /// A header field over its format cap.
    #[error("header field {field} is {len} bytes, over the format cap of {cap}")]
    FieldOverCap {
        /// Which field.
        field: Field,
        /// Its length.
        len: u64,
        /// The cap.
        cap: u64,
    },
    /// A stream, kind or idempotency key of zero bytes: the format requires at least one.
    #[error("header field {field} is empty; the format requires 1 byte or more")]
    EmptyField {
        /// Which field.
        field: Field,
    },
    /// The payload length in the header differs from the bytes stored after it.
    #[error("header declares a {declared}-byte payload but {stored} bytes follow it")]
    PayloadLength {
        /// What the header says.
        declared: u64,
        /// What is stored.
        stored: u64,
    },
    /// The stored record hash differs from the hash of the stored header.
    #[error("header hash mismatch: stored {stored}, computed {computed}")]
    HeaderHash {
        /// The hash stored with the record.
        stored: Digest,
        /// The hash of the header as stored.
        computed: Digest,
    },
    /// The payload's hash differs from the one its header commits to.
    #[error("payload hash mismatch: header says {declared}, payload hashes to {computed}")]
    PayloadHash {
        /// The hash in the header.
        declared: Digest,
        /// The hash of the stored payload.
        computed: Digest,
    },
    /// The header names another position than the one it is stored at.
    #[error("header says position {found}, stored at position {expected}")]
    Position {
        /// Where it is stored.
        expected: Position,
        /// What its header says.
        found: Position,
    },
}

/// Decodes and checks one stored record found at `position`: the header decodes within the
/// caps, the header hash and payload hash match, and the header names that position.
pub fn decode_stored(bytes: &[u8], position: Position) -> Result<Record, RecordError> {
    view::parse_stored(bytes, position, RecordHashes::Check).map(|view| view.to_record())
}

#[cfg(any(test, feature = "testing"))]
/// The header fields as bincode decodes them from the start of `header_bytes`, and how many
/// bytes they took: a second, independent reading of the layout that tests and the fuzz
/// harness hold the hand-written parser to.
pub fn header_by_bincode(header_bytes: &[u8]) -> Option<(String, usize)> {
    use limits::HEADER_BYTES_CAP;
    let window = &header_bytes[..header_bytes.len().min(HEADER_BYTES_CAP)];
    let (header, len): (Header, usize) =
        bincode::decode_from_slice(window, bincode_config().with_limit::<HEADER_BYTES_CAP>())
            .ok()?;
    let Header {
        format,
        position,
        stream,
        version,
        kind,
        schema,
        at_ms,
        idempotency_key,
        payload_len,
        payload_hash,
        prev,
    } = header;
    let fields = format!(
        "{format} {position} {stream:?} {version} {kind:?} {schema} {at_ms} \
         {idempotency_key:?} {payload_len} {payload_hash} {prev}"
    );
    Some((fields, len))
}

#[cfg(any(test, feature = "testing"))]
/// [`header_by_bincode`]'s rendering of a parsed record's header fields.
pub fn header_fields(view: &RecordView<'_>) -> String {
    format!(
        "{RECORD_FORMAT} {} {:?} {} {:?} {} {} {:?} {} {} {}",
        view.position.0,
        view.stream,
        view.version.0,
        view.kind,
        view.schema,
        view.at_ms,
        view.idempotency_key,
        view.payload.len(),
        view.payload_hash(),
        view.prev
    )
}

#[cfg(test)]
mod tests;
