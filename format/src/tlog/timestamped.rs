//! The message a `cosignature/v1` signature signs and its check (c2sp.org/tlog-cosignature):
//! what a cosigner signs ([`super::cosignature`]) and what a cosigner's verifier checks
//! ([`super::note::Verifier::verify`]), kept apart from both so neither imports the other.

use ed25519_dalek::Verifier as _;

/// The first line of every cosigned message.
pub const COSIGNATURE_HEADER: &str = "cosignature/v1";

/// The latest timestamp a cosignature carries: 2^63 − 1.
pub const TIMESTAMP_MAX: u64 = (1 << 63) - 1;

/// The message a `cosignature/v1` signs: the header line, the time line, the note text.
pub(super) fn signed_message(body: &[u8], timestamp: u64) -> Vec<u8> {
    let mut message = format!("{COSIGNATURE_HEADER}\ntime {timestamp}\n").into_bytes();
    message.extend_from_slice(body);
    message
}

/// The timestamp of `signature` (the bytes after the key ID) when it is `key`'s valid
/// cosignature of the note text `body`.
pub(super) fn verify(
    key: &ed25519_dalek::VerifyingKey,
    body: &[u8],
    signature: &[u8],
) -> Option<u64> {
    let bytes: &[u8; 72] = signature.try_into().ok()?;
    let (time, signature) = bytes.split_at(8);
    let timestamp = u64::from_be_bytes(time.try_into().ok()?);
    if timestamp > TIMESTAMP_MAX {
        return None;
    }
    let signature = ed25519_dalek::Signature::from_bytes(signature.try_into().ok()?);
    key.verify(&signed_message(body, timestamp), &signature)
        .is_ok()
        .then_some(timestamp)
}
