//! Command-field validation: the one place that says what a field of a command may hold
//! and builds the [`Error::InvalidCommand`] that names it. Each domain's `decide` calls these
//! before it reads any state, so a bad field is refused the same way everywhere.
//!
//! Owns [`CommandProblem`] and small checks over plain values; it reads no table and knows
//! no domain rule (which fields a command has, or what a handle looks like, stays with the
//! domain). The handle grammar's bounds are here because [`CommandProblem::NotAHandle`]
//! names them; the registry's `handle.rs` checks a handle against them.

pub(crate) use crate::error::CommandProblem;
pub(crate) use crate::error::command::{
    LABEL_BYTES_MAX, TOKEN_INDEX_DIGITS_MAX, TOKEN_TXID_HEX_DIGITS,
};
use crate::error::{Error, Result};

/// The refusal of `field` for `problem`.
pub(crate) fn invalid(field: &'static str, problem: CommandProblem) -> Error {
    Error::InvalidCommand { field, problem }
}

/// A length as the problem records it. `usize` is at most 64 bits on every target Rust
/// supports, so nothing is lost.
fn wide(len: usize) -> u64 {
    len as u64
}

/// Refuses an empty `value`.
pub(crate) fn non_empty(field: &'static str, value: &str) -> Result<()> {
    if value.is_empty() {
        return Err(invalid(field, CommandProblem::Empty));
    }
    Ok(())
}

/// The value of an optional field this case needs; [`CommandProblem::Missing`] without one.
pub(crate) fn given<T>(field: &'static str, value: Option<T>) -> Result<T> {
    value.ok_or_else(|| invalid(field, CommandProblem::Missing))
}

/// Refuses a zero `value`.
pub(crate) fn positive(field: &'static str, value: u64) -> Result<()> {
    if value == 0 {
        return Err(invalid(field, CommandProblem::Zero));
    }
    Ok(())
}

/// Refuses a field of `len` bytes if that is more than `limit`.
pub(crate) fn at_most_bytes(field: &'static str, len: usize, limit: usize) -> Result<()> {
    if len > limit {
        return Err(invalid(
            field,
            CommandProblem::TooLong {
                len: wide(len),
                limit: wide(limit),
            },
        ));
    }
    Ok(())
}

/// Refuses a list of `count` items if that is more than `limit`.
pub(crate) fn at_most_items(field: &'static str, count: usize, limit: usize) -> Result<()> {
    if count > limit {
        return Err(invalid(
            field,
            CommandProblem::TooMany {
                count: wide(count),
                limit: wide(limit),
            },
        ));
    }
    Ok(())
}

/// Refuses an empty `value`, or one over `bytes_max` bytes.
pub(crate) fn bounded(field: &'static str, value: &str, bytes_max: usize) -> Result<()> {
    non_empty(field, value)?;
    at_most_bytes(field, value.len(), bytes_max)
}

/// Refuses an empty, over-long or control-character-bearing name: what a peer or a key
/// sent over the wire must not be.
pub(crate) fn name(field: &'static str, value: &str, bytes_max: usize) -> Result<()> {
    bounded(field, value, bytes_max)?;
    if value.chars().any(char::is_control) {
        return Err(invalid(field, CommandProblem::ControlCharacter));
    }
    Ok(())
}

/// Refuses `value` if it is below `floor`, the value of `floor_field`.
pub(crate) fn at_least(
    field: &'static str,
    value: u64,
    floor_field: &'static str,
    floor: u64,
) -> Result<()> {
    if value < floor {
        return Err(invalid(
            field,
            CommandProblem::Below {
                value,
                floor_field,
                floor,
            },
        ));
    }
    Ok(())
}

/// The counter after `value`, or [`CommandProblem::Exhausted`] on `field` when `value` is
/// the largest its type holds: a counter never wraps, or a token would be issued twice.
pub(crate) fn next_counter<T: Into<u64> + TryFrom<u64>>(
    field: &'static str,
    value: T,
) -> Result<T> {
    value
        .into()
        .checked_add(1)
        .and_then(|next| T::try_from(next).ok())
        .ok_or_else(|| invalid(field, CommandProblem::Exhausted))
}

/// `total + more`, or [`CommandProblem::Overflow`] on `field` when that does not fit.
pub(crate) fn total(field: &'static str, total: u64, more: u64) -> Result<u64> {
    total
        .checked_add(more)
        .ok_or_else(|| invalid(field, CommandProblem::Overflow))
}

#[cfg(test)]
mod tests {
    use super::*;
    use CommandProblem::*;

    const FIELD: &str = "field";

    /// The problem `result` reports, after checking it names [`FIELD`].
    fn check<T: PartialEq + std::fmt::Debug>(
        result: Result<T>,
        expected: std::result::Result<T, CommandProblem>,
    ) {
        let got = result.map_err(|error| match error {
            Error::InvalidCommand { field, problem } => {
                assert_eq!(field, FIELD);
                problem
            }
            other => panic!("expected an invalid command, got {other:?}"),
        });
        assert_eq!(got, expected);
    }

    #[test]
    fn text_fields_are_non_empty_bounded_and_free_of_control_characters() {
        let too_long = |len| Err(TooLong { len, limit: 3 });
        for (value, expected) in [("a", Ok(())), ("", Err(Empty))] {
            check(non_empty(FIELD, value), expected);
        }
        for (value, expected) in [
            ("", Err(Empty)),
            ("abc", Ok(())),
            ("abcd", too_long(4)),
            ("a\nb", Ok(())),
            ("é", Ok(())),
            ("éé", too_long(4)),
        ] {
            check(bounded(FIELD, value, 3), expected);
        }
        for (value, expected) in [
            ("", Err(Empty)),
            ("abc", Ok(())),
            ("abcd", too_long(4)),
            ("a\nb", Err(ControlCharacter)),
            ("\u{7f}", Err(ControlCharacter)),
            ("a\u{85}", Err(ControlCharacter)),
        ] {
            check(name(FIELD, value, 3), expected);
        }
    }

    #[test]
    fn sizes_and_counts_are_checked_against_their_limits() {
        for (len, expected) in [
            (0, Ok(())),
            (3, Ok(())),
            (4, Err(TooLong { len: 4, limit: 3 })),
        ] {
            check(at_most_bytes(FIELD, len, 3), expected);
        }
        for (count, expected) in [(3, Ok(())), (4, Err(TooMany { count: 4, limit: 3 }))] {
            check(at_most_items(FIELD, count, 3), expected);
        }
    }

    #[test]
    fn numbers_are_positive_ordered_and_never_wrap() {
        for (value, expected) in [(0, Err(Zero)), (1, Ok(())), (u64::MAX, Ok(()))] {
            check(positive(FIELD, value), expected);
        }
        let below = |value| {
            Err(Below {
                value,
                floor_field: "base",
                floor: 5,
            })
        };
        for (value, expected) in [(4, below(4)), (5, Ok(())), (6, Ok(()))] {
            check(at_least(FIELD, value, "base", 5), expected);
        }
        for (value, expected) in [
            (0, Ok(1)),
            (u64::MAX - 1, Ok(u64::MAX)),
            (u64::MAX, Err(Exhausted)),
        ] {
            check(next_counter(FIELD, value), expected);
        }
        for (value, expected) in [(7u32, Ok(8u32)), (u32::MAX, Err(Exhausted))] {
            check(next_counter(FIELD, value), expected);
        }
        for (more, expected) in [(0, Ok(u64::MAX - 1)), (1, Ok(u64::MAX)), (2, Err(Overflow))] {
            check(total(FIELD, u64::MAX - 1, more), expected);
        }
        check(given(FIELD, Some(3)), Ok(3));
        check(given::<u8>(FIELD, None), Err(Missing));
    }

    #[test]
    fn the_message_names_the_field_and_the_problem() {
        let cases = [
            (
                invalid("ttl_ms", Zero),
                "invalid command: ttl_ms: must not be zero",
            ),
            (
                invalid(
                    "key",
                    TooLong {
                        len: 129,
                        limit: 128,
                    },
                ),
                "invalid command: key: is 129 bytes, over the limit of 128",
            ),
            (
                invalid(
                    "backoff.max_ms",
                    Below {
                        value: 9,
                        floor_field: "backoff.base_ms",
                        floor: 10,
                    },
                ),
                "invalid command: backoff.max_ms: is 9, below backoff.base_ms (10)",
            ),
            (
                invalid("handle", NotAHandle),
                "invalid command: handle: is neither a hostname label (1 to 63 of a-z, 0-9 and \
                 '-', no '-' at either end) nor a token id (64 lower-case hex digits, '_', 1 to \
                 20 decimal digits)",
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.to_string(), expected);
        }
    }
}
