//! Checksums on stored values (format v3): every value outside the segments — projection rows,
//! the head, the stream count, stream tails and archived runs, idempotency entries, Merkle
//! nodes and projection checkpoints — is stored as `value ‖ checksum`, and every read checks
//! it before the value is decoded.
//!
//! redb checks no checksum when it reads a page, so a flipped bit in a row would otherwise be
//! decoded and handed out as truth. Segments carry their own digest and record hashes; these
//! values had none. The checksum covers the table's name and the key as well as the value, so
//! a value moved under another key, or into another table, fails too.
//!
//! `checksum = blake3_derive_key(CONTEXT, u32 LE len(table) ‖ table ‖ u32 LE len(key) ‖ key ‖
//! value)[..8]` (`schema/FORMAT.md` 3.9). Eight bytes are not a defence against a forger (who
//! can recompute them; the record hashes and `verify` are that): they catch damage, with a
//! chance of 2⁻⁶⁴ that a damaged value passes.
//!
//! This module does no I/O: callers hand it the bytes they read or are about to write.

use std::sync::LazyLock;

use crate::error::{Error, Result};

/// The blake3 derive-key context of value checksums.
pub const CHECKSUM_CONTEXT: &str = "annals 2026-12-02 value checksum v3";

/// Bytes of checksum after each value.
pub const CHECKSUM_BYTES: usize = 8;

// Made once and cloned per checksum, as `crate::hash` does for records: derive-key mode's
// hashing of the context is otherwise one more compression on every row read or written.
static CHECKSUM_HASHER: LazyLock<blake3::Hasher> =
    LazyLock::new(|| blake3::Hasher::new_derive_key(CHECKSUM_CONTEXT));

/// The most bytes a checksum's input is joined in on the stack (blake3's block is 64).
const JOINED_BYTES: usize = 256;

/// The checksum of `value` stored under `key` in `table`.
pub fn checksum(table: &str, key: &[u8], value: &[u8]) -> [u8; CHECKSUM_BYTES] {
    let mut hasher = CHECKSUM_HASHER.clone();
    let parts: [&[u8]; 5] = [
        &(table.len() as u32).to_le_bytes(),
        table.as_bytes(),
        &(key.len() as u32).to_le_bytes(),
        key,
        value,
    ];
    // The same bytes hash the same however they are handed over; most values are small, and
    // handed over in one piece they cost one call of blake3's per value rather than five.
    let mut joined = [0; JOINED_BYTES];
    let len: usize = parts.iter().map(|part| part.len()).sum();
    match joined.get_mut(..len) {
        Some(room) => {
            let mut at = 0;
            for part in parts {
                room[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
            hasher.update(room);
        }
        None => {
            for part in parts {
                hasher.update(part);
            }
        }
    }
    let mut out = [0; CHECKSUM_BYTES];
    out.copy_from_slice(&hasher.finalize().as_bytes()[..CHECKSUM_BYTES]);
    out
}

/// `value` as stored under `key` in `table`: the value, then its checksum.
pub fn seal(table: &str, key: &[u8], value: &[u8]) -> Vec<u8> {
    let mut stored = Vec::with_capacity(value.len() + CHECKSUM_BYTES);
    stored.extend_from_slice(value);
    stored.extend_from_slice(&checksum(table, key, value));
    stored
}

/// [`seal`] for the fixed-width tables: `N` must be the value's length plus
/// [`CHECKSUM_BYTES`].
pub fn seal_fixed<const N: usize>(table: &str, key: &[u8], value: &[u8]) -> [u8; N] {
    assert_eq!(
        value.len() + CHECKSUM_BYTES,
        N,
        "a fixed-width value of {table} is {N} bytes stored"
    );
    let mut stored = [0; N];
    stored[..value.len()].copy_from_slice(value);
    stored[value.len()..].copy_from_slice(&checksum(table, key, value));
    stored
}

/// The value of `stored`, read under `key` in `table`, once its checksum holds;
/// [`Error::CorruptValue`] naming the table and key when it does not.
pub fn unseal<'v>(table: &str, key: &[u8], stored: &'v [u8]) -> Result<&'v [u8]> {
    let corrupt = || Error::CorruptValue {
        table: table.to_owned(),
        key: shown_key(key),
    };
    let Some(split) = stored.len().checked_sub(CHECKSUM_BYTES) else {
        return Err(corrupt());
    };
    let (value, found) = stored.split_at(split);
    if found == checksum(table, key, value) {
        Ok(value)
    } else {
        Err(corrupt())
    }
}

/// The key bytes of a stream's archived block of runs (`annals.stream_runs`), as its checksum
/// covers them: `u32 LE len(stream) ‖ stream ‖ u64 LE first version`.
pub fn stream_runs_key(stream: &str, first_version: u64) -> Vec<u8> {
    let mut key = Vec::with_capacity(4 + stream.len() + 8);
    key.extend_from_slice(&(stream.len() as u32).to_le_bytes());
    key.extend_from_slice(stream.as_bytes());
    key.extend_from_slice(&first_version.to_le_bytes());
    key
}

/// The key bytes of a Merkle node (`annals.merkle`), as its checksum covers them:
/// `level ‖ u64 LE index`.
pub fn merkle_key(level: u8, index: u64) -> [u8; 9] {
    let mut key = [0; 9];
    key[0] = level;
    key[1..].copy_from_slice(&index.to_le_bytes());
    key
}

/// A key as an error message shows it: as text when it is printable UTF-8, else in hex.
fn shown_key(key: &[u8]) -> String {
    match std::str::from_utf8(key) {
        Ok(text) if !text.chars().any(char::is_control) => format!("{text:?}"),
        _ => format!("0x{}", crate::hash::hex(key)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_value_unseals_to_itself() {
        let stored = seal("annals.meta", b"head", b"value");
        assert_eq!(stored.len(), 5 + CHECKSUM_BYTES);
        assert_eq!(unseal("annals.meta", b"head", &stored).unwrap(), b"value");
        let fixed: [u8; 13] = seal_fixed("annals.meta", b"head", b"value");
        assert_eq!(fixed.as_slice(), stored.as_slice());
    }

    #[test]
    fn every_flipped_bit_and_every_truncation_is_refused_naming_table_and_key() {
        let stored = seal("runs.rollup", b"run-7", b"0123456789abcdef");
        for bit in 0..stored.len() * 8 {
            let mut damaged = stored.clone();
            damaged[bit / 8] ^= 1 << (bit % 8);
            match unseal("runs.rollup", b"run-7", &damaged) {
                Err(Error::CorruptValue { table, key }) => {
                    assert_eq!((table.as_str(), key.as_str()), ("runs.rollup", "\"run-7\""));
                }
                other => panic!("bit {bit}: {other:?}"),
            }
        }
        for len in 0..stored.len() {
            assert!(unseal("runs.rollup", b"run-7", &stored[..len]).is_err());
        }
    }

    #[test]
    fn a_value_moved_to_another_key_or_table_is_refused() {
        let stored = seal("outbox.items", b"a", b"row");
        assert!(unseal("outbox.items", b"b", &stored).is_err());
        assert!(unseal("outbox.other", b"a", &stored).is_err());
        // The length prefixes keep table and key apart: moving a byte across fails.
        let stored = seal("ab", b"c", b"row");
        assert!(unseal("a", b"bc", &stored).is_err());
    }

    #[test]
    fn the_checksum_is_the_formats_hash_of_the_joined_input_short_or_long() {
        // FORMAT.md 3.9, hashed in one piece here; inputs that fit the stack buffer and that
        // do not (the value alone is past it).
        for value_len in [0, 100, JOINED_BYTES - 30, JOINED_BYTES, 5_000] {
            let (table, key) = ("runs.rollup", b"run-7".as_slice());
            let value: Vec<u8> = (0..value_len).map(|at| at as u8).collect();
            let mut input = (table.len() as u32).to_le_bytes().to_vec();
            input.extend_from_slice(table.as_bytes());
            input.extend_from_slice(&(key.len() as u32).to_le_bytes());
            input.extend_from_slice(key);
            input.extend_from_slice(&value);
            let whole = blake3::derive_key(CHECKSUM_CONTEXT, &input);
            assert_eq!(
                checksum(table, key, &value),
                whole[..CHECKSUM_BYTES],
                "{value_len}"
            );
        }
    }

    #[test]
    fn keys_that_are_not_text_are_shown_in_hex() {
        assert_eq!(shown_key(&[0, 1, 0xff]), "0x0001ff");
        assert_eq!(shown_key(b"stream:a"), "\"stream:a\"");
    }
}
