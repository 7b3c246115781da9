//! `c2sp.org/signed-note` with Ed25519 and ML-DSA-44: a text ending in a newline, a blank
//! line, then one or more signature lines `— <key name> base64(key ID ‖ signature)`.
//!
//! This module owns the note's grammar, its size limits, the key-name rules, key IDs, and the
//! text forms of keys: the verifier key (`vkey`, defined by the specification) and the private
//! key (`PRIVATE+KEY+…`, which the specification leaves out; the form is the one Go's
//! `golang.org/x/mod/sumdb/note` and Cloudflare's `signed_note` write). It never prints key
//! material: [`Signer`]'s `Debug` is redacted and no error holds a key's bytes.
//!
//! Parsing is strict and canonical (strict base64, nothing but the grammar), so a note that
//! parses writes back byte for byte.

use std::fmt;

use ed25519_dalek::{Signer as _, Verifier as _};
use sha2::{Digest as _, Sha256};

use super::{base64_decode, base64_encode, subtree};

/// The largest note read, in bytes. The specification asks verifiers for a bound that admits
/// at least 16 signatures of up to about 5 kB each (post-quantum ones).
pub const NOTE_BYTES_MAX: usize = 1 << 20;

/// The most signature lines a note may have.
pub const NOTE_SIGNATURES_MAX: usize = 100;

/// The signature lines every verifier must accept (the specification's floor).
const SIGNATURES_ACCEPTED_MIN: usize = 16;

/// The longest signature the specification tells verifiers to make room for ("nearly 5kB").
const SIGNATURE_BYTES_LARGEST: usize = 5_000;

const _: () = assert!(NOTE_SIGNATURES_MAX >= SIGNATURES_ACCEPTED_MIN);
// Sixteen such lines (em dash, spaces, a 1 KiB name, the base64 of key ID and signature)
// fit in a note with room for its text.
const _: () = assert!(
    NOTE_BYTES_MAX
        > SIGNATURES_ACCEPTED_MIN * (5 + 1024 + (4 + SIGNATURE_BYTES_LARGEST) * 4 / 3 + 4)
);

/// The signature type byte of Ed25519 note signatures (signed-note, "Signature types").
pub const ED25519_TYPE: u8 = 0x01;

/// The signature type byte of Ed25519 `cosignature/v1` keys (c2sp.org/tlog-cosignature).
pub const COSIGNATURE_TYPE: u8 = 0x04;

/// The signature type byte of ML-DSA-44 (sub)tree cosignatures, `subtree/v1`
/// (c2sp.org/tlog-cosignature): a witness's cosignature, or a log's own signature of its
/// checkpoint (c2sp.org/tlog-checkpoint recommends it), with a timestamp of 0.
pub const ML_DSA_44_TYPE: u8 = 0x06;

/// The largest private key or vkey text parsed: a name bounded by this leaves room for the
/// rest (fewer than 70 bytes for an Ed25519 key, 1,770 for an ML-DSA-44 vkey).
pub const KEY_TEXT_BYTES_MAX: usize = 4096;

// An ML-DSA-44 vkey with a name as long as `subtree/v1` allows fits.
const _: () = assert!(
    KEY_TEXT_BYTES_MAX
        > super::subtree::SUBTREE_NAME_BYTES_MAX
            + 10
            + (1 + super::subtree::ML_DSA_44_PUBLIC_KEY_BYTES).div_ceil(3) * 4
);

/// The separator of the signature block: em dash (U+2014), space.
const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// A key ID: the first four bytes, big-endian, of `SHA-256(key name ‖ 0x0A ‖ signature type
/// ‖ public key)`; written as 8 lower-case hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub u32);

impl KeyId {
    /// The key ID of an Ed25519 key named `name` (signed-note, "Ed25519 signatures").
    pub fn ed25519(name: &str, public_key: &[u8; 32]) -> KeyId {
        KeyId::of(name, ED25519_TYPE, public_key)
    }

    /// The key ID of a key of signature type `type_byte` named `name`:
    /// `SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4]` (0x01 for note signatures, 0x04 for
    /// `cosignature/v1`).
    pub fn of(name: &str, type_byte: u8, public_key: &[u8; 32]) -> KeyId {
        KeyId::of_key(name, type_byte, public_key)
    }

    /// [`KeyId::of`] for public key material of any length: 0x06's ML-DSA-44 key is 1,312
    /// bytes.
    pub fn of_key(name: &str, type_byte: u8, public_key: &[u8]) -> KeyId {
        let mut hasher = Sha256::new();
        hasher.update(name.as_bytes());
        hasher.update([0x0a, type_byte]);
        hasher.update(public_key);
        let hash = hasher.finalize();
        KeyId(u32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]]))
    }

    /// Parses exactly 8 lower-case hex digits, the fixed-length form the specification uses.
    fn parse_hex(text: &str) -> Option<KeyId> {
        let lower_hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        if text.len() != 8 || !text.bytes().all(lower_hex) {
            return None;
        }
        u32::from_str_radix(text, 16).ok().map(KeyId)
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({:08x})", self.0)
    }
}

/// What makes a key name invalid (signed-note: "non-empty", no Unicode spaces, no `+`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyNameProblem {
    /// The name is empty.
    Empty,
    /// The name holds a plus sign (U+002B), the separator of the key text forms.
    Plus,
    /// The name holds a Unicode space (the `White_Space` property), shown as its code point.
    Space(char),
}

impl fmt::Display for KeyNameProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyNameProblem::Empty => f.write_str("the key name is empty"),
            KeyNameProblem::Plus => f.write_str("the key name holds a '+'"),
            KeyNameProblem::Space(c) => {
                write!(f, "the key name holds a space (U+{:04X})", u32::from(*c))
            }
        }
    }
}

/// Checks a key name against signed-note's rules.
pub fn check_key_name(name: &str) -> Result<(), KeyNameProblem> {
    if name.is_empty() {
        return Err(KeyNameProblem::Empty);
    }
    if name.contains('+') {
        return Err(KeyNameProblem::Plus);
    }
    match name.chars().find(|c| c.is_whitespace()) {
        Some(space) => Err(KeyNameProblem::Space(space)),
        None => Ok(()),
    }
}

/// What is wrong with one signature line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureLineProblem {
    /// The line does not start with an em dash (U+2014) and a space.
    NoEmDash,
    /// No space separates the key name from the signature.
    NoSignature,
    /// The key name breaks the rules.
    KeyName(KeyNameProblem),
    /// The signature is not standard, padded base64.
    Base64,
    /// The signature decodes to fewer than the key ID and one byte.
    TooShort {
        /// Bytes decoded.
        bytes: usize,
    },
}

impl fmt::Display for SignatureLineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureLineProblem::NoEmDash => {
                f.write_str("it does not start with an em dash (U+2014) and a space")
            }
            SignatureLineProblem::NoSignature => {
                f.write_str("no space separates the key name from a signature")
            }
            SignatureLineProblem::KeyName(problem) => problem.fmt(f),
            SignatureLineProblem::Base64 => {
                f.write_str("the signature is not standard base64 with padding")
            }
            SignatureLineProblem::TooShort { bytes } => write!(
                f,
                "the signature is {bytes} bytes, at least 5 (a 4-byte key ID and a signature)"
            ),
        }
    }
}

/// Why a note does not parse or open. Line numbers count from 1 over the whole note.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoteError {
    /// The note is larger than [`NOTE_BYTES_MAX`].
    #[error("the note is {bytes} bytes, more than the {max} read")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// The note is not valid UTF-8.
    #[error("line {line}: the note is not valid UTF-8")]
    NotUtf8 {
        /// The line of the first invalid byte.
        line: usize,
    },
    /// An ASCII control character other than a newline (carriage returns and tabs included).
    #[error("line {line}: control character 0x{byte:02x} (only newlines are allowed)")]
    ControlCharacter {
        /// The line it is on.
        line: usize,
        /// The character.
        byte: u8,
    },
    /// A text that does not end in a newline (a note, or a text to sign).
    #[error("line {line}: the text does not end in a newline")]
    TextNotTerminated {
        /// The text's last line.
        line: usize,
    },
    /// No blank line separates a text from a signature block.
    #[error("no blank line separates the text from signature lines")]
    NoSignatureBlock,
    /// The note does not end in a newline after its last signature line.
    #[error("line {line}: the last signature line does not end in a newline")]
    SignatureNotTerminated {
        /// The last line.
        line: usize,
    },
    /// A signature line that breaks the grammar.
    #[error("line {line}: malformed signature line: {problem}")]
    SignatureLine {
        /// The line.
        line: usize,
        /// What is wrong with it.
        problem: SignatureLineProblem,
    },
    /// More signature lines than [`NOTE_SIGNATURES_MAX`].
    #[error("line {line}: more than {max} signature lines")]
    TooManySignatures {
        /// The first line over the limit.
        line: usize,
        /// The limit.
        max: usize,
    },
    /// A signature by a known key (its name and key ID match a verifier) that does not
    /// verify: the whole note is refused, as the specification recommends.
    #[error("line {line}: the signature of known key {name}+{key_id} does not verify")]
    BadSignature {
        /// The signature's line.
        line: usize,
        /// The key name.
        name: String,
        /// The key ID.
        key_id: KeyId,
    },
    /// No signature by a known key: the note's text must be ignored.
    #[error(
        "no signature by a known key ({signatures} signature lines, none by any of the \
         {verifiers} keys given)"
    )]
    NotVerified {
        /// Signature lines in the note.
        signatures: usize,
        /// Verifiers given.
        verifiers: usize,
    },
    /// A signer whose name breaks the key-name rules.
    #[error("the signer's key name is invalid: {0}")]
    SignerName(KeyNameProblem),
}

/// Why a key's text form does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The text is longer than [`KEY_TEXT_BYTES_MAX`].
    #[error("the key text is {bytes} bytes, more than the {max} read")]
    TooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A private key that does not start with `PRIVATE+KEY+`.
    #[error("a private key starts with PRIVATE+KEY+")]
    NotPrivateKey,
    /// Fewer `+`-separated parts than the form has.
    #[error("the key has {parts} '+'-separated parts, the form has {expected}")]
    Parts {
        /// Parts found.
        parts: usize,
        /// Parts the form has.
        expected: usize,
    },
    /// The key name breaks the rules.
    #[error("{0}")]
    Name(KeyNameProblem),
    /// The key ID is not 8 lower-case hex digits.
    #[error("the key ID is not 8 lower-case hex digits")]
    KeyIdHex,
    /// The key material is not standard, padded base64.
    #[error("the key material is not standard base64 with padding")]
    Base64,
    /// A signature type other than Ed25519 (0x01, 0x04) and ML-DSA-44 (0x06).
    #[error(
        "signature type 0x{type_byte:02x} is not supported (only Ed25519, 0x01 and 0x04, and \
         ML-DSA-44, 0x06)"
    )]
    UnsupportedType {
        /// The type byte.
        type_byte: u8,
    },
    /// A key of the other kind than the one asked for: a log's signer key (0x01) where a
    /// witness's cosigner key (0x04) is wanted, or the reverse.
    #[error("{}", other_kind(*found))]
    OtherKind {
        /// The key's type byte.
        found: u8,
    },
    /// Key material empty or of the wrong length for Ed25519.
    #[error("the Ed25519 key is {bytes} bytes, not 32")]
    KeyLength {
        /// The bytes after the type byte.
        bytes: usize,
    },
    /// An ML-DSA-44 key (type 0x06) of the wrong length: a seed of 32 bytes in a private key,
    /// a public key of 1,312.
    #[error("the ML-DSA-44 {what} is {bytes} bytes, not {expected}")]
    MlDsaKeyLength {
        /// `seed` or `public key`.
        what: &'static str,
        /// The bytes after the type byte.
        bytes: usize,
        /// The length the form has.
        expected: usize,
    },
    /// A key name longer than the 255 bytes an ML-DSA-44 `subtree/v1` message holds.
    #[error("the key name is {bytes} bytes, more than the {max} an ML-DSA-44 key's name may be")]
    MlDsaNameTooLong {
        /// Its length.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A public key that is not a valid Ed25519 point encoding.
    #[error("the public key is not a valid Ed25519 key")]
    InvalidPublicKey,
    /// The key ID in the text is not the one the name and key give.
    #[error("the key ID is {stated}, the name and key give {computed}")]
    KeyIdMismatch {
        /// The ID in the text.
        stated: KeyId,
        /// The ID computed.
        computed: KeyId,
    },
    /// The operating system gave no randomness for a new key.
    #[error("no randomness from the operating system (OS error {os_error:?})")]
    Randomness {
        /// The operating system's error number, when it gave one.
        os_error: Option<i32>,
    },
}

/// One signature line of a note: the key name, the key ID and the signature bytes after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The key ID.
    pub key_id: KeyId,
    /// The signature (without the key ID).
    pub signature: Vec<u8>,
}

impl NoteSignature {
    /// The line as written in a note, with its newline.
    pub fn to_line(&self) -> String {
        let mut bytes = Vec::with_capacity(4 + self.signature.len());
        bytes.extend_from_slice(&self.key_id.0.to_be_bytes());
        bytes.extend_from_slice(&self.signature);
        format!(
            "{SIGNATURE_PREFIX}{} {}\n",
            self.name,
            base64_encode(&bytes)
        )
    }

    fn parse(line: &str) -> Result<NoteSignature, SignatureLineProblem> {
        let rest = line
            .strip_prefix(SIGNATURE_PREFIX)
            .ok_or(SignatureLineProblem::NoEmDash)?;
        let (name, encoded) = rest
            .split_once(' ')
            .ok_or(SignatureLineProblem::NoSignature)?;
        check_key_name(name).map_err(SignatureLineProblem::KeyName)?;
        let bytes = base64_decode(encoded).ok_or(SignatureLineProblem::Base64)?;
        // The specification's `4+n` bytes: a key ID and a signature that is not empty.
        let [a, b, c, d, signature @ ..] = bytes.as_slice() else {
            return Err(SignatureLineProblem::TooShort { bytes: bytes.len() });
        };
        if signature.is_empty() {
            return Err(SignatureLineProblem::TooShort { bytes: bytes.len() });
        }
        Ok(NoteSignature {
            name: name.to_owned(),
            key_id: KeyId(u32::from_be_bytes([*a, *b, *c, *d])),
            signature: signature.to_vec(),
        })
    }
}

/// A signed note: its text (ending in a newline) and its signature lines, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    text: String,
    signatures: Vec<NoteSignature>,
}

/// The 1-based line of byte offset `at` in `bytes`.
fn line_of(bytes: &[u8], at: usize) -> usize {
    1 + bytes[..at.min(bytes.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Checks what signed-note requires of every byte: valid UTF-8 (given by `&str`), and no ASCII
/// control character but the newline. `first_line` is the number of the text's first line.
fn check_characters(text: &str, first_line: usize) -> Result<(), NoteError> {
    match text.bytes().position(|b| b < 0x20 && b != b'\n') {
        Some(at) => Err(NoteError::ControlCharacter {
            line: first_line - 1 + line_of(text.as_bytes(), at),
            byte: text.as_bytes()[at],
        }),
        None => Ok(()),
    }
}

impl Note {
    /// A note of `text`, without signatures yet: `text` must end in a newline and hold no
    /// control character but newlines.
    pub fn new(text: &str) -> Result<Note, NoteError> {
        Note::check_text(text)?;
        Ok(Note {
            text: text.to_owned(),
            signatures: Vec::new(),
        })
    }

    fn check_text(text: &str) -> Result<(), NoteError> {
        // Room for the blank line and one signature line is left to the note's own check.
        if text.len() > NOTE_BYTES_MAX {
            return Err(NoteError::TooLarge {
                bytes: text.len(),
                max: NOTE_BYTES_MAX,
            });
        }
        check_characters(text, 1)?;
        if !text.ends_with('\n') {
            return Err(NoteError::TextNotTerminated {
                line: line_of(text.as_bytes(), text.len()),
            });
        }
        Ok(())
    }

    /// Parses a signed note from bytes: checks the grammar, not the signatures
    /// ([`Note::open`] does).
    pub fn from_bytes(bytes: &[u8]) -> Result<Note, NoteError> {
        if bytes.len() > NOTE_BYTES_MAX {
            return Err(NoteError::TooLarge {
                bytes: bytes.len(),
                max: NOTE_BYTES_MAX,
            });
        }
        let text = std::str::from_utf8(bytes).map_err(|error| NoteError::NotUtf8 {
            line: line_of(bytes, error.valid_up_to()),
        })?;
        Note::parse(text)
    }

    /// Parses a signed note: checks the grammar, not the signatures ([`Note::open`] does).
    ///
    /// ```
    /// let note = annals_format::tlog::Note::parse("hello\n\n— example.com/k AAAAAAA=\n")?;
    /// assert_eq!(note.text(), "hello\n");
    /// assert_eq!(note.signatures()[0].name, "example.com/k");
    /// # Ok::<(), annals_format::tlog::NoteError>(())
    /// ```
    pub fn parse(message: &str) -> Result<Note, NoteError> {
        if message.len() > NOTE_BYTES_MAX {
            return Err(NoteError::TooLarge {
                bytes: message.len(),
                max: NOTE_BYTES_MAX,
            });
        }
        check_characters(message, 1)?;
        // The text is separated from the signatures by the last blank line; the text keeps
        // its final newline.
        let split = message.rfind("\n\n").ok_or(NoteError::NoSignatureBlock)?;
        let (text, block) = (&message[..=split], &message[split + 2..]);
        let first_signature_line = line_of(message.as_bytes(), split + 2);
        let Some(block) = block.strip_suffix('\n') else {
            return Err(NoteError::SignatureNotTerminated {
                line: line_of(message.as_bytes(), message.len()),
            });
        };
        let mut signatures = Vec::new();
        for (i, line) in block.split('\n').enumerate() {
            let number = first_signature_line + i;
            if i == NOTE_SIGNATURES_MAX {
                return Err(NoteError::TooManySignatures {
                    line: number,
                    max: NOTE_SIGNATURES_MAX,
                });
            }
            let signature =
                NoteSignature::parse(line).map_err(|problem| NoteError::SignatureLine {
                    line: number,
                    problem,
                })?;
            signatures.push(signature);
        }
        Ok(Note {
            text: text.to_owned(),
            signatures,
        })
    }

    /// The text, with its final newline.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The signature lines, in order.
    pub fn signatures(&self) -> &[NoteSignature] {
        &self.signatures
    }

    /// The number of the first signature line in [`Note::to_text`]'s form.
    fn first_signature_line(&self) -> usize {
        line_of(self.text.as_bytes(), self.text.len()) + 1
    }

    /// Signs the text with `signer`, replacing any signature by the same key (name and key
    /// ID), as Go's `note.Sign` does, and appending the new line after the others.
    pub fn sign(&mut self, signer: &Signer) {
        let signature = signer.sign_text(&self.text);
        self.signatures
            .retain(|s| !(s.name == signature.name && s.key_id == signature.key_id));
        self.signatures.push(signature);
    }

    /// Adds a signature line as it is (a cosignature passed on, say), unchecked.
    pub fn push_signature(&mut self, signature: NoteSignature) {
        self.signatures.push(signature);
    }

    /// The signed note's text form: the text, a blank line, the signature lines.
    pub fn to_text(&self) -> String {
        let mut out = String::with_capacity(self.text.len() + 1 + 120 * self.signatures.len());
        out.push_str(&self.text);
        out.push('\n');
        for signature in &self.signatures {
            out.push_str(&signature.to_line());
        }
        out
    }

    /// Opens the note against `verifiers`, as signed-note says: a signature line whose key
    /// name and key ID both match a verifier is verified, every one of them (a bad one refuses
    /// the whole note); the others are kept unverified, to be passed on; at least one must
    /// verify.
    pub fn open(self, verifiers: &[Verifier]) -> Result<OpenedNote, NoteError> {
        let first = self.first_signature_line();
        let mut verified = Vec::new();
        for (i, signature) in self.signatures.iter().enumerate() {
            let known = verifiers
                .iter()
                .find(|v| v.name == signature.name && v.key_id == signature.key_id);
            let Some(verifier) = known else { continue };
            if !verifier.verify(self.text.as_bytes(), &signature.signature) {
                return Err(NoteError::BadSignature {
                    line: first + i,
                    name: signature.name.clone(),
                    key_id: signature.key_id,
                });
            }
            verified.push(i);
        }
        if verified.is_empty() {
            return Err(NoteError::NotVerified {
                signatures: self.signatures.len(),
                verifiers: verifiers.len(),
            });
        }
        let of_kind = |kind: fn(&Verifier) -> bool| {
            verifiers
                .iter()
                .filter(|v| kind(v))
                .map(|v| (v.name.clone(), v.key_id))
                .collect()
        };
        Ok(OpenedNote {
            note: self,
            verified,
            cosigners: of_kind(Verifier::is_cosigner),
            log_keys: of_kind(Verifier::is_log_key),
        })
    }
}

/// A note whose signatures by known keys all verified, at least one of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedNote {
    note: Note,
    verified: Vec<usize>,
    /// The names and key IDs of the cosigner verifiers among those the note was opened with.
    cosigners: Vec<(String, KeyId)>,
    /// Those of the verifiers that can be a log's checkpoint key (types 0x01 and 0x06).
    log_keys: Vec<(String, KeyId)>,
}

impl OpenedNote {
    /// The note, every signature line in its order.
    pub fn note(&self) -> &Note {
        &self.note
    }

    /// The verified text.
    pub fn text(&self) -> &str {
        &self.note.text
    }

    /// The signatures that verified, in order.
    pub fn verified(&self) -> impl Iterator<Item = &NoteSignature> {
        self.verified.iter().map(|&i| &self.note.signatures[i])
    }

    /// Whether `signature`, one of [`OpenedNote::verified`], verified as a cosignature (by a
    /// verifier of type 0x04 or 0x06).
    pub fn verified_by_cosigner(&self, signature: &NoteSignature) -> bool {
        self.cosigners
            .iter()
            .any(|(name, key_id)| *name == signature.name && *key_id == signature.key_id)
    }

    /// Whether `signature`, one of [`OpenedNote::verified`], verified by a key that can be a
    /// log's checkpoint key (a verifier of type 0x01 or 0x06).
    pub fn verified_by_log_key(&self, signature: &NoteSignature) -> bool {
        self.log_keys
            .iter()
            .any(|(name, key_id)| *name == signature.name && *key_id == signature.key_id)
    }

    /// The signatures from keys not given (cosignatures, other keys), in order.
    pub fn unverified(&self) -> impl Iterator<Item = &NoteSignature> {
        self.note
            .signatures
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.verified.contains(i))
            .map(|(_, s)| s)
    }
}

/// The secret of a [`PrivateKey`]: an Ed25519 key, or an ML-DSA-44 key from its seed.
// A key is made once and held for the process: the Ed25519 variant's size costs nothing, and
// keeping it unboxed leaves the Ed25519 path as it was.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(super) enum SecretKey {
    /// Types 0x01 and 0x04.
    Ed25519(ed25519_dalek::SigningKey),
    /// Type 0x06 (its parts boxed inside).
    MlDsa44(subtree::PrivateKey),
}

/// A named private key of one signature type: what a note [`Signer`] and a cosigner
/// (`super::cosignature::Cosigner`) share.
#[derive(Clone)]
pub(super) struct PrivateKey {
    pub(super) name: String,
    pub(super) key_id: KeyId,
    pub(super) key: SecretKey,
    type_byte: u8,
}

impl PrivateKey {
    /// A new key of type `type_byte` named `name`, from the operating system's randomness.
    pub(super) fn generate(name: &str, type_byte: u8) -> Result<PrivateKey, KeyError> {
        check_key_name(name).map_err(KeyError::Name)?;
        PrivateKey::from_seed(name, type_byte, *random_seed()?)
    }

    /// The key of type `type_byte` named `name` whose seed is `seed`: Ed25519's private key
    /// (RFC 8032), or ML-DSA-44's ξ (FIPS 204's `KeyGen_internal`) for type 0x06.
    pub(super) fn from_seed(
        name: &str,
        type_byte: u8,
        seed: [u8; 32],
    ) -> Result<PrivateKey, KeyError> {
        let seed = zeroize::Zeroizing::new(seed);
        check_key_name(name).map_err(KeyError::Name)?;
        let (key, public) = match type_byte {
            ED25519_TYPE | COSIGNATURE_TYPE => {
                let key = ed25519_dalek::SigningKey::from_bytes(&seed);
                let public = key.verifying_key().to_bytes().to_vec();
                (SecretKey::Ed25519(key), public)
            }
            ML_DSA_44_TYPE => {
                check_ml_dsa_name(name)?;
                let key = subtree::PrivateKey::from_seed(&seed);
                let public = key.public().as_bytes().to_vec();
                (SecretKey::MlDsa44(key), public)
            }
            other => return Err(KeyError::UnsupportedType { type_byte: other }),
        };
        Ok(PrivateKey {
            name: name.to_owned(),
            key_id: KeyId::of_key(name, type_byte, &public),
            key,
            type_byte,
        })
    }

    /// Parses `PRIVATE+KEY+<name>+<key ID hex>+base64(type ‖ seed)` for a key of one of
    /// `types`, checking the key ID against the name and the public key the seed gives.
    pub(super) fn parse(text: &str, types: &[u8]) -> Result<PrivateKey, KeyError> {
        let parts = parse_private_key(text)?;
        if !types.contains(&parts.type_byte) {
            return Err(match parts.type_byte {
                ED25519_TYPE | COSIGNATURE_TYPE => KeyError::OtherKind {
                    found: parts.type_byte,
                },
                other => KeyError::UnsupportedType { type_byte: other },
            });
        }
        let key = PrivateKey::from_seed(&parts.name, parts.type_byte, *parts.seed)?;
        if key.key_id != parts.stated {
            return Err(KeyError::KeyIdMismatch {
                stated: parts.stated,
                computed: key.key_id,
            });
        }
        Ok(key)
    }

    /// The private key text form.
    pub(super) fn to_text(&self) -> zeroize::Zeroizing<String> {
        let seed = match &self.key {
            SecretKey::Ed25519(key) => zeroize::Zeroizing::new(key.to_bytes()),
            SecretKey::MlDsa44(key) => key.seed(),
        };
        private_key_text(&self.name, self.key_id, self.type_byte, &seed)
    }

    /// The verifier of this key's signatures.
    pub(super) fn verifier(&self) -> Verifier {
        let key = match &self.key {
            SecretKey::Ed25519(key) => PublicKey::Ed25519(key.verifying_key()),
            SecretKey::MlDsa44(key) => PublicKey::MlDsa44(key.public().clone()),
        };
        Verifier {
            name: self.name.clone(),
            key_id: self.key_id,
            key,
            type_byte: self.type_byte,
        }
    }

    /// The signature type byte.
    pub(super) fn type_byte(&self) -> u8 {
        self.type_byte
    }

    /// `Debug` as `what`: the name and key ID, never the key.
    pub(super) fn debug(&self, what: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(what)
            .field("name", &self.name)
            .field("key_id", &self.key_id)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// A note signer: a key name and a private key, Ed25519 (type 0x01) or ML-DSA-44 (type 0x06,
/// which signs checkpoints only). Its `Debug` shows the name and key ID only.
#[derive(Clone)]
pub struct Signer {
    key: PrivateKey,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key.debug("Signer", f)
    }
}

impl Signer {
    /// A new Ed25519 key named `name`, from the operating system's randomness.
    pub fn generate(name: &str) -> Result<Signer, KeyError> {
        PrivateKey::generate(name, ED25519_TYPE).map(|key| Signer { key })
    }

    /// The key named `name` whose Ed25519 private key (RFC 8032's 32-byte seed) is `seed`.
    pub fn from_seed(name: &str, seed: [u8; 32]) -> Result<Signer, KeyError> {
        PrivateKey::from_seed(name, ED25519_TYPE, seed).map(|key| Signer { key })
    }

    /// A new ML-DSA-44 key (type 0x06) named `name`, from the operating system's randomness:
    /// a log's checkpoint key that a quantum computer does not break, as tlog-checkpoint
    /// recommends. Its name is the log's origin, of at most 255 bytes.
    pub fn generate_ml_dsa_44(name: &str) -> Result<Signer, KeyError> {
        PrivateKey::generate(name, ML_DSA_44_TYPE).map(|key| Signer { key })
    }

    /// The ML-DSA-44 key (type 0x06) named `name` whose FIPS 204 seed (ξ) is `seed`.
    pub fn ml_dsa_44_from_seed(name: &str, seed: [u8; 32]) -> Result<Signer, KeyError> {
        PrivateKey::from_seed(name, ML_DSA_44_TYPE, seed).map(|key| Signer { key })
    }

    /// Parses the private key text form
    /// `PRIVATE+KEY+<name>+<key ID hex>+base64(type ‖ seed)` of type 0x01 (Ed25519) or 0x06
    /// (ML-DSA-44), checking the key ID against the name and the public key the seed gives.
    pub fn parse(text: &str) -> Result<Signer, KeyError> {
        PrivateKey::parse(text, &[ED25519_TYPE, ML_DSA_44_TYPE]).map(|key| Signer { key })
    }

    /// The private key text form; keep it secret (a file of mode 0600).
    pub fn to_private_key_text(&self) -> zeroize::Zeroizing<String> {
        self.key.to_text()
    }

    /// The verifier of this signer's signatures.
    pub fn verifier(&self) -> Verifier {
        self.key.verifier()
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.key.name
    }

    /// The key ID.
    pub fn key_id(&self) -> KeyId {
        self.key.key_id
    }

    /// The signature type: [`ED25519_TYPE`] or [`ML_DSA_44_TYPE`].
    pub fn signature_type(&self) -> u8 {
        self.key.type_byte()
    }

    /// Whether this signer can sign `text`: an Ed25519 key signs any text; an ML-DSA-44 key
    /// signs the `subtree/v1` message of a checkpoint, so the text must be one whose origin
    /// fits that message (at most 255 bytes).
    pub fn can_sign(&self, text: &str) -> bool {
        match &self.key.key {
            SecretKey::Ed25519(_) => true,
            SecretKey::MlDsa44(_) => subtree::Subtree::of_checkpoint(&self.key.name, 0, text)
                .and_then(|subtree| subtree.message())
                .is_some(),
        }
    }

    /// The signature line of this key over `text`: RFC 8032 Ed25519 over the text's bytes;
    /// for an ML-DSA-44 key, a `timestamped_signature` of timestamp 0 over the `subtree/v1`
    /// message of the checkpoint `text` holds (its extension lines unsigned). A text
    /// [`Signer::can_sign`] refuses gets a line of no signature bytes, which no verifier
    /// accepts and no note parses: [`super::Checkpoint::sign`] checks first.
    pub fn sign_text(&self, text: &str) -> NoteSignature {
        let signature = match &self.key.key {
            SecretKey::Ed25519(key) => key.sign(text.as_bytes()).to_bytes().to_vec(),
            SecretKey::MlDsa44(key) => subtree::Subtree::of_checkpoint(&self.key.name, 0, text)
                .and_then(|subtree| key.sign_subtree(&subtree))
                .unwrap_or_default(),
        };
        NoteSignature {
            name: self.key.name.clone(),
            key_id: self.key.key_id,
            signature,
        }
    }
}

/// What [`KeyError::OtherKind`] says of a key of type `found` given where the other kind is
/// asked for.
fn other_kind(found: u8) -> &'static str {
    if found == COSIGNATURE_TYPE {
        "this is a witness's cosigner key (type 0x04), not a log's signer key (type 0x01)"
    } else {
        "this is a log's signer key (type 0x01), not a witness's cosigner key (type 0x04)"
    }
}

/// Refuses a name too long for an ML-DSA-44 key's `subtree/v1` message.
fn check_ml_dsa_name(name: &str) -> Result<(), KeyError> {
    if name.len() > subtree::SUBTREE_NAME_BYTES_MAX {
        return Err(KeyError::MlDsaNameTooLong {
            bytes: name.len(),
            max: subtree::SUBTREE_NAME_BYTES_MAX,
        });
    }
    Ok(())
}

/// The type byte and the 32-byte seed after it, in a private key of any supported type.
fn seed_material(bytes: &[u8]) -> Result<(u8, [u8; 32]), KeyError> {
    match bytes {
        [] => Err(KeyError::KeyLength { bytes: 0 }),
        [type_byte @ (ED25519_TYPE | COSIGNATURE_TYPE), key @ ..] => key
            .try_into()
            .map(|key| (*type_byte, key))
            .map_err(|_| KeyError::KeyLength { bytes: key.len() }),
        [ML_DSA_44_TYPE, key @ ..] => {
            key.try_into()
                .map(|key| (ML_DSA_44_TYPE, key))
                .map_err(|_| KeyError::MlDsaKeyLength {
                    what: "seed",
                    bytes: key.len(),
                    expected: 32,
                })
        }
        [type_byte, ..] => Err(KeyError::UnsupportedType {
            type_byte: *type_byte,
        }),
    }
}

/// The type byte and the public key after it, in a vkey of any supported type.
fn public_material(bytes: &[u8]) -> Result<(u8, PublicKey), KeyError> {
    match bytes {
        [ML_DSA_44_TYPE, key @ ..] => subtree::PublicKey::from_bytes(key)
            .map(|key| (ML_DSA_44_TYPE, PublicKey::MlDsa44(key)))
            .ok_or(KeyError::MlDsaKeyLength {
                what: "public key",
                bytes: key.len(),
                expected: subtree::ML_DSA_44_PUBLIC_KEY_BYTES,
            }),
        _ => {
            let (type_byte, public) = seed_material(bytes)?;
            let key = ed25519_dalek::VerifyingKey::from_bytes(&public)
                .map_err(|_| KeyError::InvalidPublicKey)?;
            Ok((type_byte, PublicKey::Ed25519(key)))
        }
    }
}

/// A new 32-byte seed from the operating system's randomness.
fn random_seed() -> Result<zeroize::Zeroizing<[u8; 32]>, KeyError> {
    use rand_core::RngCore as _;
    let mut seed = zeroize::Zeroizing::new([0u8; 32]);
    rand_core::OsRng
        .try_fill_bytes(seed.as_mut())
        .map_err(|error| KeyError::Randomness {
            os_error: error.raw_os_error(),
        })?;
    Ok(seed)
}

/// The private key text form of a key of type `type_byte`.
fn private_key_text(
    name: &str,
    key_id: KeyId,
    type_byte: u8,
    seed: &[u8; 32],
) -> zeroize::Zeroizing<String> {
    let mut material = zeroize::Zeroizing::new([0u8; 33]);
    material[0] = type_byte;
    material[1..].copy_from_slice(seed);
    zeroize::Zeroizing::new(format!(
        "PRIVATE+KEY+{name}+{key_id}+{}",
        base64_encode(material.as_ref())
    ))
}

/// What a private key text states: its name, key ID, signature type and seed.
struct PrivateKeyParts {
    name: String,
    stated: KeyId,
    type_byte: u8,
    seed: zeroize::Zeroizing<[u8; 32]>,
}

/// The parts of the private key text form `PRIVATE+KEY+<name>+<key ID hex>+base64(type ‖
/// seed)`. The caller checks the key ID against the key the seed gives.
fn parse_private_key(text: &str) -> Result<PrivateKeyParts, KeyError> {
    if text.len() > KEY_TEXT_BYTES_MAX {
        return Err(KeyError::TooLong {
            bytes: text.len(),
            max: KEY_TEXT_BYTES_MAX,
        });
    }
    let rest = text
        .strip_prefix("PRIVATE+KEY+")
        .ok_or(KeyError::NotPrivateKey)?;
    // Base64 may hold '+', so the last part is everything after the third.
    let parts: Vec<&str> = rest.splitn(3, '+').collect();
    let [name, id, material] = parts[..] else {
        return Err(KeyError::Parts {
            parts: parts.len() + 2,
            expected: 5,
        });
    };
    check_key_name(name).map_err(KeyError::Name)?;
    let stated = KeyId::parse_hex(id).ok_or(KeyError::KeyIdHex)?;
    let bytes = zeroize::Zeroizing::new(base64_decode(material).ok_or(KeyError::Base64)?);
    let (type_byte, seed) = seed_material(&bytes)?;
    Ok(PrivateKeyParts {
        name: name.to_owned(),
        stated,
        type_byte,
        seed: zeroize::Zeroizing::new(seed),
    })
}

/// A verifier's public key: Ed25519 (types 0x01 and 0x04) or ML-DSA-44 (type 0x06).
#[derive(Clone, PartialEq, Eq)]
enum PublicKey {
    Ed25519(ed25519_dalek::VerifyingKey),
    MlDsa44(subtree::PublicKey),
}

impl PublicKey {
    fn as_bytes(&self) -> &[u8] {
        match self {
            PublicKey::Ed25519(key) => key.as_bytes(),
            PublicKey::MlDsa44(key) => key.as_bytes(),
        }
    }
}

/// A verifier: a key name, its key ID and a public key, of a note signer (type 0x01, Ed25519),
/// of a cosigner (type 0x04, Ed25519 `cosignature/v1`: [`super::cosignature`]), or of either
/// with ML-DSA-44 (type 0x06, `subtree/v1`), each checking its own kind of signature line.
#[derive(Clone, PartialEq, Eq)]
pub struct Verifier {
    name: String,
    key_id: KeyId,
    key: PublicKey,
    type_byte: u8,
}

impl fmt::Debug for Verifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Verifier({self})")
    }
}

impl fmt::Display for Verifier {
    /// The vkey text form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut material = vec![self.type_byte];
        material.extend_from_slice(self.key.as_bytes());
        write!(
            f,
            "{}+{}+{}",
            self.name,
            self.key_id,
            base64_encode(&material)
        )
    }
}

impl Verifier {
    /// Parses the vkey text form `<name>+<key ID hex>+base64(type ‖ public key)` (type 0x01
    /// or 0x04 with a 32-byte Ed25519 key, 0x06 with a 1,312-byte ML-DSA-44 key), checking
    /// the key ID against the name and key.
    ///
    /// ```
    /// // The example of c2sp.org/signed-note.
    /// let vkey = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
    /// let verifier = annals_format::tlog::Verifier::parse(vkey)?;
    /// assert_eq!(verifier.name(), "example.com/foo");
    /// assert_eq!(verifier.to_string(), vkey);
    /// # Ok::<(), annals_format::tlog::KeyError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Verifier, KeyError> {
        if text.len() > KEY_TEXT_BYTES_MAX {
            return Err(KeyError::TooLong {
                bytes: text.len(),
                max: KEY_TEXT_BYTES_MAX,
            });
        }
        let parts: Vec<&str> = text.splitn(3, '+').collect();
        let [name, id, material] = parts[..] else {
            return Err(KeyError::Parts {
                parts: parts.len(),
                expected: 3,
            });
        };
        check_key_name(name).map_err(KeyError::Name)?;
        let stated = KeyId::parse_hex(id).ok_or(KeyError::KeyIdHex)?;
        let bytes = base64_decode(material).ok_or(KeyError::Base64)?;
        let (type_byte, key) = public_material(&bytes)?;
        if type_byte == ML_DSA_44_TYPE {
            check_ml_dsa_name(name)?;
        }
        let computed = KeyId::of_key(name, type_byte, key.as_bytes());
        if computed != stated {
            return Err(KeyError::KeyIdMismatch { stated, computed });
        }
        Ok(Verifier {
            name: name.to_owned(),
            key_id: stated,
            key,
            type_byte,
        })
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key ID.
    pub fn key_id(&self) -> KeyId {
        self.key_id
    }

    /// The 32-byte Ed25519 public key; for an ML-DSA-44 key, which has no 32-byte form, its
    /// first 32 bytes (FIPS 204's ρ): use [`Verifier::public_key_bytes`] for the whole key.
    pub fn public_key(&self) -> [u8; 32] {
        let mut key = [0u8; 32];
        key.copy_from_slice(&self.key.as_bytes()[..32]);
        key
    }

    /// The public key material of the vkey: 32 bytes of Ed25519, or 1,312 of ML-DSA-44.
    pub fn public_key_bytes(&self) -> &[u8] {
        self.key.as_bytes()
    }

    /// The signature type byte: [`ED25519_TYPE`], [`COSIGNATURE_TYPE`] or [`ML_DSA_44_TYPE`].
    pub fn signature_type(&self) -> u8 {
        self.type_byte
    }

    /// Whether this key's signatures are timestamped cosignatures of a checkpoint rather than
    /// note signatures: type 0x04 (Ed25519 `cosignature/v1`) or 0x06 (ML-DSA-44
    /// `subtree/v1`, which a witness and a log both sign with).
    pub fn is_cosigner(&self) -> bool {
        matches!(self.type_byte, COSIGNATURE_TYPE | ML_DSA_44_TYPE)
    }

    /// Whether this key can be a log's checkpoint key: type 0x01 (an Ed25519 note signature)
    /// or 0x06 (ML-DSA-44, as tlog-checkpoint recommends).
    pub fn is_log_key(&self) -> bool {
        matches!(self.type_byte, ED25519_TYPE | ML_DSA_44_TYPE)
    }

    /// Whether `signature` is this key's signature of the note text `message`: for a note
    /// signer, Ed25519 over the text (64 bytes); for a cosigner, a `timestamped_signature`
    /// (a big-endian `u64` time of at most 2^63 − 1, then Ed25519 over `cosignature/v1\n`,
    /// `time <t>\n` and the text: 72 bytes); for an ML-DSA-44 key, a `timestamped_signature`
    /// over the `subtree/v1` message of the checkpoint the text holds (2,428 bytes).
    pub fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let key = match &self.key {
            PublicKey::MlDsa44(key) => {
                return std::str::from_utf8(message)
                    .ok()
                    .and_then(|text| key.verify_checkpoint(&self.name, text, signature))
                    .is_some();
            }
            PublicKey::Ed25519(key) => key,
        };
        if self.type_byte == COSIGNATURE_TYPE {
            return super::timestamped::verify(key, message, signature).is_some();
        }
        let Ok(bytes) = <[u8; 64]>::try_from(signature) else {
            return false;
        };
        let signature = ed25519_dalek::Signature::from_bytes(&bytes);
        key.verify(message, &signature).is_ok()
    }

    /// Whether `signature` (a `timestamped_signature` of timestamp 0) is this ML-DSA-44
    /// key's `subtree/v1` cosignature of the subtree `[start, end)` of the log `origin` whose
    /// hash is `hash`: what tlog-witness's `sign-subtree` returns. False for an Ed25519 key,
    /// whose cosignatures sign no subtree.
    pub fn verify_subtree(
        &self,
        origin: &str,
        start: u64,
        end: u64,
        hash: &[u8; 32],
        signature: &[u8],
    ) -> bool {
        let PublicKey::MlDsa44(key) = &self.key else {
            return false;
        };
        let Some((0, signature)) = subtree::split_timestamped(signature) else {
            return false;
        };
        let subtree = subtree::Subtree {
            cosigner: &self.name,
            timestamp: 0,
            origin,
            start,
            end,
            hash: *hash,
        };
        subtree
            .message()
            .is_some_and(|message| key.verify(&message, signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of signed-note's "Verifier keys" section.
    const SPEC_VKEY: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
    const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

    fn signer(name: &str) -> Signer {
        Signer::from_seed(name, [3; 32]).unwrap()
    }

    #[test]
    fn spec_example_note_opens_with_spec_vkey() {
        let verifier = Verifier::parse(SPEC_VKEY).unwrap();
        let opened = Note::parse(SPEC_NOTE).unwrap().open(&[verifier]).unwrap();
        assert_eq!(opened.text(), "This is an example message.\n");
        assert_eq!(opened.verified().count(), 1);
        assert_eq!(opened.note().to_text(), SPEC_NOTE);
    }

    #[test]
    fn key_names_refuse_empty_plus_and_unicode_spaces() {
        assert_eq!(check_key_name("example.com/log"), Ok(()));
        assert_eq!(check_key_name(""), Err(KeyNameProblem::Empty));
        assert_eq!(check_key_name("a+b"), Err(KeyNameProblem::Plus));
        for space in [' ', '\t', '\u{a0}', '\u{2003}', '\u{3000}', '\u{85}'] {
            let name = format!("a{space}b");
            assert_eq!(check_key_name(&name), Err(KeyNameProblem::Space(space)));
        }
    }

    #[test]
    fn private_key_round_trips_and_debug_is_redacted() {
        let signer = signer("example.com/log");
        let text = signer.to_private_key_text();
        assert!(text.starts_with("PRIVATE+KEY+example.com/log+"));
        let parsed = Signer::parse(&text).unwrap();
        assert_eq!(parsed.verifier(), signer.verifier());
        let debug = format!("{parsed:?}");
        let material = text.rsplit('+').next().unwrap();
        assert!(!debug.contains(material), "{debug}");
        assert!(debug.contains("<redacted>"));
    }

    #[test]
    fn key_texts_refuse_a_wrong_key_id_type_and_length() {
        let signer = signer("example.com/log");
        let vkey = signer.verifier().to_string();
        let (prefix, material) = vkey.rsplit_once('+').unwrap();
        let (name, _) = prefix.split_once('+').unwrap();
        assert!(matches!(
            Verifier::parse(&format!("{name}+00000000+{material}")),
            Err(KeyError::KeyIdMismatch { .. })
        ));
        assert_eq!(
            Verifier::parse(prefix),
            Err(KeyError::Parts {
                parts: 2,
                expected: 3
            })
        );
        let mut other_type = base64_decode(material).unwrap();
        other_type[0] = 0x02;
        assert_eq!(
            Verifier::parse(&format!("{prefix}+{}", base64_encode(&other_type))),
            Err(KeyError::UnsupportedType { type_byte: 0x02 })
        );
        // A cosigner's type with the note key's ID: the ID binds the type.
        other_type[0] = COSIGNATURE_TYPE;
        assert!(matches!(
            Verifier::parse(&format!("{prefix}+{}", base64_encode(&other_type))),
            Err(KeyError::KeyIdMismatch { .. })
        ));
        assert_eq!(
            Verifier::parse(&format!("{prefix}+{}", base64_encode(&[1; 32]))),
            Err(KeyError::KeyLength { bytes: 31 })
        );
        let upper = vkey.replacen(&signer.key_id().to_string(), "ABCDEF01", 1);
        assert_eq!(Verifier::parse(&upper), Err(KeyError::KeyIdHex));
        assert_eq!(Signer::parse(&vkey).err(), Some(KeyError::NotPrivateKey));
    }

    #[test]
    fn unknown_signatures_are_kept_and_a_bad_known_one_refuses_the_note() {
        let log = signer("example.com/log");
        let other = Signer::from_seed("witness.example", [9; 32]).unwrap();
        let mut note = Note::new("body\n").unwrap();
        note.sign(&log);
        note.sign(&other);
        let opened = note.clone().open(&[log.verifier()]).unwrap();
        assert_eq!(opened.verified().count(), 1);
        assert_eq!(opened.unverified().next().unwrap().name, "witness.example");
        assert!(matches!(
            note.clone().open(&[other.verifier(), log.verifier()]),
            Ok(opened) if opened.verified().count() == 2
        ));
        // A key sharing the name but not the ID is unknown: ignored, so nothing verifies.
        let impostor = Signer::from_seed("example.com/log", [4; 32]).unwrap();
        assert_eq!(
            note.clone().open(&[impostor.verifier()]),
            Err(NoteError::NotVerified {
                signatures: 2,
                verifiers: 1
            })
        );
        // A second signature line of the known key, damaged: verified too, and refused.
        let mut damaged = log.sign_text("body\n");
        damaged.signature[0] ^= 1;
        note.push_signature(damaged);
        assert_eq!(
            note.open(&[log.verifier()]),
            Err(NoteError::BadSignature {
                line: 5,
                name: "example.com/log".into(),
                key_id: log.key_id()
            })
        );
    }

    #[test]
    fn grammar_errors_name_the_line() {
        let check = |text: &str, expected: NoteError| {
            assert_eq!(Note::parse(text), Err(expected), "{text:?}");
        };
        check("a\n", NoteError::NoSignatureBlock);
        check("a\n\n", NoteError::SignatureNotTerminated { line: 3 });
        check(
            "a\r\n\n— k AAAAAAA=\n",
            NoteError::ControlCharacter {
                line: 1,
                byte: 0x0d,
            },
        );
        check(
            "a\n\n- k AAAAAAA=\n",
            NoteError::SignatureLine {
                line: 3,
                problem: SignatureLineProblem::NoEmDash,
            },
        );
        check(
            "a\n\n— k AAAAAAA=\n— kAAAA\n",
            NoteError::SignatureLine {
                line: 4,
                problem: SignatureLineProblem::NoSignature,
            },
        );
        check(
            "a\n\n— k AAAAAA==\n",
            NoteError::SignatureLine {
                line: 3,
                problem: SignatureLineProblem::TooShort { bytes: 4 },
            },
        );
        check(
            "a\n\n— k AAAAAAA\n",
            NoteError::SignatureLine {
                line: 3,
                problem: SignatureLineProblem::Base64,
            },
        );
        check(
            "a\n\n— k+1 AAAAAAA=\n",
            NoteError::SignatureLine {
                line: 3,
                problem: SignatureLineProblem::KeyName(KeyNameProblem::Plus),
            },
        );
        assert_eq!(
            Note::from_bytes(b"a\n\xff\n\n"),
            Err(NoteError::NotUtf8 { line: 2 })
        );
        let many = format!("a\n\n{}", "— k AAAAAAA=\n".repeat(NOTE_SIGNATURES_MAX + 1));
        check(
            &many,
            NoteError::TooManySignatures {
                line: 3 + NOTE_SIGNATURES_MAX,
                max: NOTE_SIGNATURES_MAX,
            },
        );
        assert!(Note::parse(&"— k AAAAAAA=\n".repeat(NOTE_SIGNATURES_MAX)).is_err());
    }

    #[test]
    fn text_may_hold_blank_lines_and_the_last_blank_line_separates() {
        let log = signer("example.com/log");
        for text in ["\n", "a\n\nb\n", "a\n\n\n", "a\n\n— k AAAAAAA=\n"] {
            let mut note = Note::new(text).unwrap();
            note.sign(&log);
            let parsed = Note::parse(&note.to_text()).unwrap();
            assert_eq!(parsed.text(), text);
            assert!(parsed.open(&[log.verifier()]).is_ok());
        }
        assert_eq!(
            Note::new("a"),
            Err(NoteError::TextNotTerminated { line: 1 })
        );
        assert_eq!(Note::new(""), Err(NoteError::TextNotTerminated { line: 1 }));
    }
}
