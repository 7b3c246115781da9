//! The personal envelope (`schema/FORMAT.md` 1.5): a payload personal to a subject, sealed with
//! XChaCha20-Poly1305 under the subject's data key before its record is hashed, and how a
//! payload read back is told apart as plain, personal or erased ([`Payload`]).
//!
//! This module owns the envelope's bytes, its associated data and the seal and open of the
//! AEAD given a key and a nonce. It does no I/O and draws no randomness: the key store and the
//! nonce are the store's (`src/store/keys.rs`), on the command path, never in an `apply`.

use chacha20poly1305::aead::{Aead, KeyInit, Payload as AeadPayload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

/// The first bytes of every envelope: `0xFF` never begins UTF-8 text or JSON, so no text
/// payload is taken for one, and a plain payload that begins with them is refused at append.
pub const ENVELOPE_MAGIC: [u8; 4] = [0xFF, b'a', b'p', b'e'];

/// The version of the envelope's layout this build writes and reads.
pub const ENVELOPE_VERSION: u8 = 1;

/// The most bytes a subject's id may take (its length is one byte in the envelope, and the
/// erasure stream `annals.erased/<id>` stays within the default stream limit).
pub const SUBJECT_BYTES_MAX: usize = 128;

/// Bytes of a subject's data key (XChaCha20-Poly1305's 256-bit key).
pub const KEY_BYTES: usize = 32;

/// Bytes of an envelope's nonce (XChaCha20's extended nonce, drawn at random per envelope).
pub const NONCE_BYTES: usize = 24;

/// Bytes of the Poly1305 tag that ends the ciphertext.
pub const TAG_BYTES: usize = 16;

/// The domain string that begins every envelope's associated data.
const ASSOCIATED_DOMAIN: &[u8] = b"annals.personal.v1";

/// The kind of the event that records a subject's erasure (annals' `Store::erase`): its
/// payload is the subject's id and nothing else. A raw append of it is refused.
pub const ERASED_KIND: &str = "subject.erased";

/// The prefix of the stream each subject's erasure event goes to (`annals.erased/<id>`),
/// and of no other stream: a raw append to such a stream is refused.
pub const ERASURE_STREAM_PREFIX: &str = "annals.erased/";

/// The stream of `subject`'s erasure event.
pub fn erasure_stream(subject: &str) -> String {
    format!("{ERASURE_STREAM_PREFIX}{subject}")
}

/// Why a subject's id is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubjectProblem {
    /// An empty id.
    #[error("it is empty")]
    Empty,
    /// An id longer than 128 bytes.
    #[error("it is {bytes} bytes, over the limit of {max}")]
    TooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// An id holding a control character or a `/`.
    #[error("it holds {character:?}, which a subject's id may not")]
    Character {
        /// The character refused.
        character: char,
    },
}

/// Checks a subject's id: 1 to 128 bytes (`SUBJECT_BYTES_MAX`) of UTF-8, no control character
/// and no `/` (it names the erasure stream `annals.erased/<id>`).
pub fn check_subject(subject: &str) -> Result<(), SubjectProblem> {
    if subject.is_empty() {
        return Err(SubjectProblem::Empty);
    }
    if subject.len() > SUBJECT_BYTES_MAX {
        return Err(SubjectProblem::TooLong {
            bytes: subject.len(),
            max: SUBJECT_BYTES_MAX,
        });
    }
    match subject.chars().find(|c| c.is_control() || *c == '/') {
        Some(character) => Err(SubjectProblem::Character { character }),
        None => Ok(()),
    }
}

/// An envelope's parts, borrowed from the payload that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// The subject the payload is personal to, in clear.
    pub subject: &'a str,
    /// The nonce it was sealed with.
    pub nonce: &'a [u8; NONCE_BYTES],
    /// The ciphertext and its tag.
    pub ciphertext: &'a [u8],
    /// The bytes before the nonce (magic, version, subject), which the associated data covers.
    header: &'a [u8],
}

impl<'a> Envelope<'a> {
    /// The envelope `payload` holds, or `None` when it is a plain payload: one that does not
    /// begin with [`ENVELOPE_MAGIC`], or does but is not a whole envelope of this version
    /// with a valid subject (read as plain, as it was written before envelopes existed).
    pub fn parse(payload: &'a [u8]) -> Option<Envelope<'a>> {
        let rest = payload.strip_prefix(&ENVELOPE_MAGIC)?;
        let (&version, rest) = rest.split_first()?;
        let (&subject_len, rest) = rest.split_first()?;
        if version != ENVELOPE_VERSION {
            return None;
        }
        let subject_len = usize::from(subject_len);
        if rest.len() < subject_len + NONCE_BYTES + TAG_BYTES {
            return None;
        }
        let (subject, rest) = rest.split_at(subject_len);
        let subject = std::str::from_utf8(subject).ok()?;
        check_subject(subject).ok()?;
        let (nonce, ciphertext) = rest.split_at(NONCE_BYTES);
        Some(Envelope {
            subject,
            nonce: nonce.try_into().ok()?,
            ciphertext,
            header: &payload[..ENVELOPE_MAGIC.len() + 2 + subject_len],
        })
    }

    /// The plaintext, opened with `key` and checked against the record's `stream` and
    /// `kind`; `None` when the tag does not check (another key, another stream or kind, or
    /// altered bytes).
    pub fn open(&self, key: &[u8; KEY_BYTES], stream: &str, kind: &str) -> Option<Vec<u8>> {
        let aad = associated_data(self.header, stream, kind);
        XChaCha20Poly1305::new(key.into())
            .decrypt(
                XNonce::from_slice(self.nonce),
                AeadPayload {
                    msg: self.ciphertext,
                    aad: &aad,
                },
            )
            .ok()
    }
}

/// The most bytes an envelope adds to its plaintext (a subject of the longest).
pub const OVERHEAD_MAX: usize =
    ENVELOPE_MAGIC.len() + 2 + SUBJECT_BYTES_MAX + NONCE_BYTES + TAG_BYTES;

/// How many bytes an envelope for `subject` adds to its plaintext.
pub fn overhead(subject: &str) -> usize {
    ENVELOPE_MAGIC.len() + 2 + subject.len() + NONCE_BYTES + TAG_BYTES
}

/// Seals `plaintext` for `subject` into an envelope with `key` and `nonce` (which must never
/// be used twice with one key: the store draws it at random), bound to the record's `stream`
/// and `kind`. `subject` must pass [`check_subject`].
pub fn seal(
    key: &[u8; KEY_BYTES],
    nonce: &[u8; NONCE_BYTES],
    subject: &str,
    stream: &str,
    kind: &str,
    plaintext: &[u8],
) -> Vec<u8> {
    let mut envelope = header(subject);
    envelope.reserve(NONCE_BYTES + plaintext.len() + TAG_BYTES);
    let aad = associated_data(&envelope, stream, kind);
    let sealed = XChaCha20Poly1305::new(key.into())
        .encrypt(
            XNonce::from_slice(nonce),
            AeadPayload {
                msg: plaintext,
                aad: &aad,
            },
        )
        // Encryption fails only past the cipher's 256 GiB message bound, far past any payload
        // limit (`PAYLOAD_BYTES_CAP`).
        .expect("a payload within the format's cap");
    envelope.extend_from_slice(nonce);
    envelope.extend_from_slice(&sealed);
    envelope
}

/// The bytes of an envelope before its nonce: magic, version, the subject's length and the
/// subject. `subject` must pass [`check_subject`].
fn header(subject: &str) -> Vec<u8> {
    assert!(check_subject(subject).is_ok(), "a checked subject");
    let subject_len = u8::try_from(subject.len()).expect("a checked subject fits a byte");
    let mut header = Vec::with_capacity(ENVELOPE_MAGIC.len() + 2 + subject.len());
    header.extend_from_slice(&ENVELOPE_MAGIC);
    header.push(ENVELOPE_VERSION);
    header.push(subject_len);
    header.extend_from_slice(subject.as_bytes());
    header
}

/// The derive-key context of the key a synthetic nonce is computed under, itself derived from
/// the subject's data key (so the cipher and the nonce's hash never share a key).
const SYNTHETIC_NONCE_CONTEXT: &str = "annals 2026 envelope synthetic nonce v1";

/// A nonce derived from everything sealed (`schema/FORMAT.md` 1.5, SIV style), for a field
/// whose retries must seal to the same envelope so that they are recognised (an ingested
/// event's bytes): blake3, keyed by a key derived from the subject's `key`, of the associated
/// data, `context` after its length as a `u64` little-endian, and the plaintext, its first 24
/// bytes. The same inputs give the same nonce, so the same envelope; inputs that differ in any
/// byte give nonces that differ but with the chance of a 192-bit collision, so a nonce is never
/// used with one key for two plaintexts. What it gives away: two envelopes of one subject,
/// stream, kind and context are equal exactly when their plaintexts are.
pub fn synthetic_nonce(
    key: &[u8; KEY_BYTES],
    subject: &str,
    stream: &str,
    kind: &str,
    context: &[u8],
    plaintext: &[u8],
) -> [u8; NONCE_BYTES] {
    let nonce_key = zeroize::Zeroizing::new(blake3::derive_key(SYNTHETIC_NONCE_CONTEXT, key));
    let mut hasher = blake3::Hasher::new_keyed(&nonce_key);
    hasher.update(&associated_data(&header(subject), stream, kind));
    // A context is bounded by the caller's record, far below 2^64 bytes.
    hasher.update(&(context.len() as u64).to_le_bytes());
    hasher.update(context);
    hasher.update(plaintext);
    let mut nonce = [0u8; NONCE_BYTES];
    hasher.finalize_xof().fill(&mut nonce);
    nonce
}

/// The associated data of an envelope: the domain string, the envelope's bytes before its
/// nonce (magic, version, subject), then the record's stream and kind, each after its length
/// as a `u32` little-endian.
fn associated_data(header: &[u8], stream: &str, kind: &str) -> Vec<u8> {
    let mut aad =
        Vec::with_capacity(ASSOCIATED_DOMAIN.len() + header.len() + 8 + stream.len() + kind.len());
    aad.extend_from_slice(ASSOCIATED_DOMAIN);
    aad.extend_from_slice(header);
    for part in [stream, kind] {
        // Bounded by the format's caps (`STREAM_BYTES_CAP`, `KIND_BYTES_CAP`).
        aad.extend_from_slice(&(part.len() as u32).to_le_bytes());
        aad.extend_from_slice(part.as_bytes());
    }
    aad
}

/// A command's field as a projection keeps it, with the stream and kind of the event it was
/// sealed into when personal: what annals' `PayloadReader::open_field` reads. Each domain with
/// personal fields gives its rows' (e.g. `OutboxRow::payload_field`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedField<'a> {
    /// The field's bytes as kept: plain ones, or an envelope.
    pub bytes: &'a [u8],
    /// The stream of the event that carried it.
    pub stream: String,
    /// That event's kind.
    pub kind: &'a str,
}

impl SealedField<'_> {
    /// The subject the field is personal to when its bytes are an envelope; `None` for plain
    /// bytes, which a reader takes as they are without any key store.
    pub fn subject(&self) -> Option<&str> {
        Envelope::parse(self.bytes).map(|envelope| envelope.subject)
    }
}

/// A record's payload as a reader may take it: plain bytes, a personal payload opened with its
/// subject's key, or the typed mark of one whose subject was erased (or whose key this store
/// does not hold: a follower's, an importer's). The ciphertext itself is never handed out as
/// data.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Payload<'a> {
    /// A payload no subject owns, as stored.
    Plain(&'a [u8]),
    /// A personal payload, opened.
    Personal {
        /// Its subject.
        subject: &'a str,
        /// The plaintext.
        data: zeroize::Zeroizing<Vec<u8>>,
    },
    /// A personal payload whose subject was erased, or whose key this store does not hold.
    Erased {
        /// Its subject.
        subject: &'a str,
    },
}

impl std::fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Payload::Plain(bytes) => f.debug_tuple("Plain").field(bytes).finish(),
            // The plaintext stays out of logs and panic messages.
            Payload::Personal { subject, data } => f
                .debug_struct("Personal")
                .field("subject", subject)
                .field("bytes", &data.len())
                .finish(),
            Payload::Erased { subject } => {
                f.debug_struct("Erased").field("subject", subject).finish()
            }
        }
    }
}

impl Payload<'_> {
    /// The subject of a personal or erased payload.
    pub fn subject(&self) -> Option<&str> {
        match self {
            Payload::Plain(_) => None,
            Payload::Personal { subject, .. } | Payload::Erased { subject } => Some(subject),
        }
    }

    /// The bytes a reader may use: plain ones, or a personal payload's plaintext; `None` once
    /// erased.
    pub fn data(&self) -> Option<&[u8]> {
        match self {
            Payload::Plain(bytes) => Some(bytes),
            Payload::Personal { data, .. } => Some(data),
            Payload::Erased { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The vector of `schema/FORMAT.md` 1.5.
    const KEY: [u8; KEY_BYTES] = [0x42; KEY_BYTES];
    const NONCE: [u8; NONCE_BYTES] = [0x07; NONCE_BYTES];

    #[test]
    fn the_format_vector_seals_and_opens() {
        let sealed = seal(
            &KEY,
            &NONCE,
            "alice",
            "people/alice",
            "email.set",
            b"a@example.com",
        );
        let hex: String = sealed.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(
            hex,
            include_str!("../../../schema/vectors/envelope.hex").trim()
        );
        let envelope = Envelope::parse(&sealed).expect("an envelope");
        assert_eq!(envelope.subject, "alice");
        let opened = envelope.open(&KEY, "people/alice", "email.set");
        assert_eq!(opened.as_deref(), Some(&b"a@example.com"[..]));
    }

    #[test]
    fn a_synthetic_nonce_is_the_same_for_the_same_inputs_and_differs_for_any_other() {
        let nonce = |key: &[u8; KEY_BYTES], stream, context: &[u8], plaintext: &[u8]| {
            synthetic_nonce(key, "alice", stream, "ingest.accepted", context, plaintext)
        };
        let first = nonce(&KEY, "ingest/p/r", &[1], b"hello");
        assert_eq!(first, nonce(&KEY, "ingest/p/r", &[1], b"hello"));
        for other in [
            nonce(&[0x43; KEY_BYTES], "ingest/p/r", &[1], b"hello"),
            nonce(&KEY, "ingest/p/s", &[1], b"hello"),
            nonce(&KEY, "ingest/p/r", &[2], b"hello"),
            nonce(&KEY, "ingest/p/r", &[1], b"hellp"),
            // The context's length keeps it apart from the plaintext.
            nonce(&KEY, "ingest/p/r", &[1, b'h'], b"ello"),
        ] {
            assert_ne!(first, other);
        }
        let hex: String = first.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(
            hex,
            include_str!("../../../schema/vectors/synthetic_nonce.hex").trim()
        );
        let sealed = seal(
            &KEY,
            &first,
            "alice",
            "ingest/p/r",
            "ingest.accepted",
            b"hello",
        );
        let envelope = Envelope::parse(&sealed).expect("an envelope");
        let opened = envelope.open(&KEY, "ingest/p/r", "ingest.accepted");
        assert_eq!(opened.as_deref(), Some(&b"hello"[..]));
    }

    #[test]
    fn an_envelope_opens_only_with_its_key_stream_and_kind() {
        let sealed = seal(&KEY, &NONCE, "alice", "people/alice", "email.set", b"x");
        let envelope = Envelope::parse(&sealed).expect("an envelope");
        assert_eq!(
            envelope.open(&[0x43; KEY_BYTES], "people/alice", "email.set"),
            None
        );
        assert_eq!(envelope.open(&KEY, "people/bob", "email.set"), None);
        assert_eq!(envelope.open(&KEY, "people/alice", "email.unset"), None);
        let mut moved = sealed.clone();
        moved[7] = b'b';
        let moved = Envelope::parse(&moved).expect("an envelope");
        assert_eq!(moved.open(&KEY, "people/alice", "email.set"), None);
    }

    #[test]
    fn plain_payloads_are_not_envelopes() {
        for plain in [
            &b""[..],
            b"{}",
            b"\xffape",
            b"\xffape\x02\x01a",
            b"\xffape\x01\x00",
        ] {
            assert_eq!(Envelope::parse(plain), None, "{plain:?}");
        }
        let mut short = seal(&KEY, &NONCE, "alice", "s", "k", b"");
        short.pop();
        assert_eq!(Envelope::parse(&short), None);
    }

    #[test]
    fn subjects_are_checked() {
        assert_eq!(check_subject(""), Err(SubjectProblem::Empty));
        assert_eq!(
            check_subject("a/b"),
            Err(SubjectProblem::Character { character: '/' })
        );
        assert_eq!(
            check_subject(&"x".repeat(129)),
            Err(SubjectProblem::TooLong {
                bytes: 129,
                max: 128
            })
        );
        assert_eq!(check_subject("user-42"), Ok(()));
    }
}
