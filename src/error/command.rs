//! What is wrong with one field of a command, and the bounds of a registry handle that
//! [`CommandProblem::NotAHandle`] names (`validate` re-exports them, and checks against them).

/// Longest hostname-label handle, in bytes (a DNS label's limit).
pub(crate) const LABEL_BYTES_MAX: usize = 63;
/// Hex digits of a token id's transaction id.
pub(crate) const TOKEN_TXID_HEX_DIGITS: usize = 64;
/// Most decimal digits of a token id's output index: enough for any `u64`, and a bound the
/// reference lacks, so that every handle fits a stream name.
pub(crate) const TOKEN_INDEX_DIGITS_MAX: usize = 20;

/// What is wrong with one field of a command; [`Error::InvalidCommand`](crate::Error::InvalidCommand) names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandProblem {
    /// A required text field is empty (a resource, a run, a key).
    #[error("must not be empty")]
    Empty,
    /// An optional field that this case of the command needs was not given (the store of
    /// a new instance).
    #[error("must be given")]
    Missing,
    /// A text or byte field longer than its limit (a key, a payload, an error text).
    #[error("is {len} bytes, over the limit of {limit}")]
    TooLong {
        /// Its length, in bytes.
        len: u64,
        /// The most bytes it may have.
        limit: u64,
    },
    /// A list with more items than its limit (the rows of one ack).
    #[error("has {count} items, over the limit of {limit}")]
    TooMany {
        /// How many items it has.
        count: u64,
        /// The most it may have.
        limit: u64,
    },
    /// A name that contains a control character (a key, a peer, a claim token).
    #[error("must not contain control characters")]
    ControlCharacter,
    /// A duration or count that must be positive is zero (a TTL, a lease, a batch).
    #[error("must not be zero")]
    Zero,
    /// A value below another field's value that bounds it from below (a backoff's maximum
    /// under its base).
    #[error("is {value}, below {floor_field} ({floor})")]
    Below {
        /// The value given.
        value: u64,
        /// The field that bounds it.
        floor_field: &'static str,
        /// That field's value.
        floor: u64,
    },
    /// A counter the command would advance is at its maximum: a resource's fencing token, a
    /// run's seq, a span's depth. The entity takes no further command of the kind.
    #[error("the counter it advances (a token, a seq, a depth) is at its maximum")]
    Exhausted,
    /// A total the command adds to would overflow (an instance's fuel ledger).
    #[error("would overflow the total it adds to")]
    Overflow,
    /// Not a registry handle: neither a hostname label nor a token id.
    #[error(
        "is neither a hostname label (1 to {} of a-z, 0-9 and '-', no '-' at either end) nor a \
         token id ({} lower-case hex digits, '_', 1 to {} decimal digits)",
        LABEL_BYTES_MAX,
        TOKEN_TXID_HEX_DIGITS,
        TOKEN_INDEX_DIGITS_MAX
    )]
    NotAHandle,
}
