//! Every bound on what a record may hold: the format's hard caps, which every decoder enforces,
//! and the configurable [`Limits`] a store enforces on appends, which may only be tighter.

use std::fmt;

/// Hard cap of a stream name, in bytes. A decoder refuses anything longer.
pub const STREAM_BYTES_CAP: u32 = 1024;
/// Hard cap of an event kind, in bytes.
pub const KIND_BYTES_CAP: u32 = 256;
/// Hard cap of an idempotency key, in bytes.
pub const IDEMPOTENCY_KEY_BYTES_CAP: u32 = 1024;
/// Hard cap of one payload, in bytes (256 MiB), so that a record's length fits a `u32`.
pub const PAYLOAD_BYTES_CAP: u32 = 256 * 1024 * 1024;

/// The largest encoded header: every fixed field plus every string at its cap.
/// format u8, position u64, stream (u64 len + bytes), version u64, kind (u64 len + bytes),
/// schema u16, at_ms u64, key (u8 tag + u64 len + bytes), payload_len u32, two digests.
pub const HEADER_BYTES_CAP: usize = 1
    + 8
    + (8 + STREAM_BYTES_CAP as usize)
    + 8
    + (8 + KIND_BYTES_CAP as usize)
    + 2
    + 8
    + (1 + 8 + IDEMPOTENCY_KEY_BYTES_CAP as usize)
    + 4
    + 32
    + 32;

/// Hard cap of the records one stored segment holds.
pub const SEGMENT_RECORDS_CAP: u32 = 65_536;

/// The bounds a store enforces on each append. Each must lie between 1 and its format cap.
///
/// ```
/// use annals_format::record::limits::Limits;
///
/// let limits = Limits { payload_bytes_max: 4 << 20, ..Limits::default() };
/// assert!(limits.check().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest stream name, in bytes. Default 256.
    pub stream_bytes_max: u32,
    /// Longest event kind, in bytes. Default 128.
    pub kind_bytes_max: u32,
    /// Longest idempotency key, in bytes. Default 256.
    pub idempotency_key_bytes_max: u32,
    /// Largest payload of one event, in bytes. Default 1 MiB.
    pub payload_bytes_max: u32,
    /// Most events in one append. Default 10,000.
    pub events_per_append_max: u32,
    /// Largest sum of payload bytes in one append. Default 64 MiB.
    pub append_payload_bytes_max: u64,
}

impl Limits {
    /// The defaults, usable in constant context.
    pub const DEFAULT: Limits = Limits {
        stream_bytes_max: 256,
        kind_bytes_max: 128,
        idempotency_key_bytes_max: 256,
        payload_bytes_max: 1024 * 1024,
        events_per_append_max: 10_000,
        append_payload_bytes_max: 64 * 1024 * 1024,
    };

    /// Checks each limit against its format cap; the error names the first one out of range.
    pub fn check(&self) -> Result<(), LimitError> {
        let bounds = [
            (
                Field::Stream,
                u64::from(self.stream_bytes_max),
                u64::from(STREAM_BYTES_CAP),
            ),
            (
                Field::Kind,
                u64::from(self.kind_bytes_max),
                u64::from(KIND_BYTES_CAP),
            ),
            (
                Field::IdempotencyKey,
                u64::from(self.idempotency_key_bytes_max),
                u64::from(IDEMPOTENCY_KEY_BYTES_CAP),
            ),
            (
                Field::Payload,
                u64::from(self.payload_bytes_max),
                u64::from(PAYLOAD_BYTES_CAP),
            ),
            (
                Field::EventsPerAppend,
                u64::from(self.events_per_append_max),
                u64::from(u32::MAX),
            ),
            (
                Field::AppendPayload,
                self.append_payload_bytes_max,
                u64::MAX,
            ),
        ];
        for (field, value, cap) in bounds {
            if value == 0 || value > cap {
                return Err(LimitError::Misconfigured { field, value, cap });
            }
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

const _: () = assert!(Limits::DEFAULT.stream_bytes_max <= STREAM_BYTES_CAP);
const _: () = assert!(Limits::DEFAULT.kind_bytes_max <= KIND_BYTES_CAP);
const _: () = assert!(Limits::DEFAULT.idempotency_key_bytes_max <= IDEMPOTENCY_KEY_BYTES_CAP);
const _: () = assert!(Limits::DEFAULT.payload_bytes_max >= 1024 * 1024);
const _: () = assert!(Limits::DEFAULT.payload_bytes_max <= PAYLOAD_BYTES_CAP);
const _: () =
    assert!(Limits::DEFAULT.append_payload_bytes_max >= Limits::DEFAULT.payload_bytes_max as u64);

/// The part of an append a limit applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Field {
    /// The stream name.
    Stream,
    /// An event's kind.
    Kind,
    /// An event's idempotency key.
    IdempotencyKey,
    /// An event's payload.
    Payload,
    /// The number of events in one append.
    EventsPerAppend,
    /// The sum of payload bytes in one append.
    AppendPayload,
}

impl Field {
    /// The field's name as the format spec and the command line spell it.
    pub fn name(self) -> &'static str {
        match self {
            Field::Stream => "stream",
            Field::Kind => "kind",
            Field::IdempotencyKey => "idempotency_key",
            Field::Payload => "payload",
            Field::EventsPerAppend => "events_per_append",
            Field::AppendPayload => "append_payload_bytes",
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An input outside a limit. The message names the field, its size and the limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// A value larger than its limit.
    #[error("{field} is {len} bytes, over the limit of {max}")]
    TooLong {
        /// What was too long.
        field: Field,
        /// Its length.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// More items than allowed.
    #[error("{field} is {count}, over the limit of {max}")]
    TooMany {
        /// What was counted.
        field: Field,
        /// How many there were.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// A value that must not be empty was.
    #[error("{field} is empty; it needs at least 1 byte")]
    Empty {
        /// What was empty.
        field: Field,
    },
    /// A configured limit outside 1..=its format cap.
    #[error("limit for {field} is {value}; it must lie between 1 and {cap}")]
    Misconfigured {
        /// Which limit.
        field: Field,
        /// The configured value.
        value: u64,
        /// The format's cap.
        cap: u64,
    },
}

/// Checks a byte string against `1..=max`.
pub fn check_len(field: Field, len: usize, max: u32) -> Result<(), LimitError> {
    let len = len as u64;
    if len == 0 && field != Field::Payload {
        return Err(LimitError::Empty { field });
    }
    if len > u64::from(max) {
        return Err(LimitError::TooLong {
            field,
            len,
            max: u64::from(max),
        });
    }
    Ok(())
}
