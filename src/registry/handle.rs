//! The handle grammar: which names an instance may be registered under. Owns [`Handle`] and
//! nothing else; it reads no table.

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::validate::{CommandProblem, invalid};

// The grammar's bounds are the command layer's (`validate.rs`), which names them in its
// refusal; the handle is checked against them here.
pub(crate) use crate::validate::{LABEL_BYTES_MAX, TOKEN_INDEX_DIGITS_MAX, TOKEN_TXID_HEX_DIGITS};
/// Longest handle of either form, in bytes.
pub(crate) const HANDLE_BYTES_MAX: usize = TOKEN_TXID_HEX_DIGITS + 1 + TOKEN_INDEX_DIGITS_MAX;

const _: () = assert!(LABEL_BYTES_MAX <= HANDLE_BYTES_MAX);

/// An instance's handle: one hostname label (`martha`, so `<handle>.<domain>` is its origin)
/// or a path-only token id (`<64 lower-case hex>_<output index>`, reached at `/@<handle>`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Handle(String);

impl Handle {
    /// `handle` if it is a hostname label or a token id; `Error::InvalidCommand` on `field`
    /// ([`CommandProblem::NotAHandle`]) otherwise.
    pub fn parse(field: &'static str, handle: &str) -> Result<Handle> {
        if is_label(handle) || is_token_id(handle) {
            Ok(Handle(handle.to_owned()))
        } else {
            Err(invalid(field, CommandProblem::NotAHandle))
        }
    }

    /// A handle read back from a recorded event: the command that recorded it already
    /// checked the grammar, and `apply` must replay the log as it is.
    pub(crate) fn recorded(handle: String) -> Handle {
        Handle(handle)
    }

    /// The handle as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether it is a token id: reached by `/@<handle>` on the host's origin, never by a
    /// hostname.
    pub fn is_path_only(&self) -> bool {
        is_token_id(&self.0)
    }
}

impl std::fmt::Display for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn is_label(handle: &str) -> bool {
    let bytes = handle.as_bytes();
    let allowed = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-';
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            bytes.len() <= LABEL_BYTES_MAX
                && *first != b'-'
                && *last != b'-'
                && bytes.iter().all(allowed)
        }
        _ => false,
    }
}

fn is_token_id(handle: &str) -> bool {
    let Some((txid, index)) = handle.split_once('_') else {
        return false;
    };
    let lower_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    txid.len() == TOKEN_TXID_HEX_DIGITS
        && txid.as_bytes().iter().all(lower_hex)
        && (1..=TOKEN_INDEX_DIGITS_MAX).contains(&index.len())
        && index.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::error::Error;

    fn check(handle: &str, valid: bool) {
        match Handle::parse("handle", handle) {
            Ok(parsed) => {
                assert!(valid, "{handle:?} is accepted, and should be refused");
                assert_eq!(parsed.as_str(), handle);
            }
            Err(Error::InvalidCommand {
                field: "handle",
                problem: CommandProblem::NotAHandle,
            }) => assert!(!valid, "{handle:?} is refused, and should be accepted"),
            Err(other) => panic!("{handle:?}: expected NotAHandle, got {other:?}"),
        }
    }

    #[test]
    fn hostname_labels_follow_the_dns_label_rule() {
        check("a", true);
        check("0", true);
        check("martha", true);
        check("agent-7", true);
        check("a--b", true);
        check(&"a".repeat(63), true);
        check(&"a".repeat(64), false);
        check("", false);
        check("-a", false);
        check("a-", false);
        check("-", false);
        check("Martha", false);
        check("a.b", false);
        check("a_b", false);
        check("é", false);
    }

    #[test]
    fn token_ids_are_64_lower_hex_an_underscore_and_an_index() {
        let txid = "0123456789abcdef".repeat(4);
        check(&format!("{txid}_0"), true);
        check(&format!("{txid}_007"), true);
        check(&format!("{txid}_{}", "9".repeat(20)), true);
        check(&format!("{txid}_{}", "9".repeat(21)), false);
        check(&format!("{txid}_"), false);
        check(&format!("{txid}_1a"), false);
        check(&format!("{}_1", txid.to_uppercase()), false);
        check(&format!("{}_1", &txid[1..]), false);
        check(&format!("{txid}0_1"), false);
        check(&format!("{txid}_-1"), false);
    }

    #[test]
    fn only_token_ids_are_path_only() {
        let token = format!("{}_3", "ab".repeat(32));
        assert!(Handle::parse("handle", &token).is_ok_and(|h| h.is_path_only()));
        assert!(Handle::parse("handle", "martha").is_ok_and(|h| !h.is_path_only()));
    }
}
