//! `c2sp.org/tlog-checkpoint`: a log's tree head (origin, tree size, root hash, extension
//! lines) as the text of a signed note.
//!
//! This module owns the checkpoint's lines and the rule of whose signature makes one
//! trusted. tlog-checkpoint says only that the log's key name SHOULD match the origin line;
//! [`Checkpoint::open`] makes that the rule (an annals log's key is named as its origin, see
//! `annals keygen --name`), and [`Checkpoint::open_for_origin`] is for logs whose key has
//! another name (the Go checksum database signs origin `go.sum database tree` with key
//! `sum.golang.org`), where the caller says which keys speak for which origin, as tlog-proof's
//! verification steps do.

use std::fmt;

use super::note::{KeyId, Note, NoteError, NoteSignature, OpenedNote, Signer, Verifier};
use super::{base64_encode, base64_hash, parse_decimal};

/// What is wrong with a decimal line (a tree size, an index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeProblem {
    /// Not only ASCII digits (or empty).
    NotDecimal,
    /// A leading zero in a number other than 0.
    LeadingZero,
    /// More than `u64::MAX`.
    Overflow,
}

impl fmt::Display for SizeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SizeProblem::NotDecimal => "not an ASCII decimal number",
            SizeProblem::LeadingZero => "a leading zero",
            SizeProblem::Overflow => "larger than 2^64 - 1",
        })
    }
}

/// Why a checkpoint does not parse, open or sign. Line numbers count from 1 over the note.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// The signed note around the checkpoint is malformed or its signatures fail.
    #[error(transparent)]
    Note(#[from] NoteError),
    /// Fewer than the three lines every checkpoint has.
    #[error("the checkpoint has {lines} lines, at least 3 (origin, size, root hash)")]
    TooFewLines {
        /// Lines found.
        lines: usize,
    },
    /// An empty line in the checkpoint text (an empty origin, or an empty extension line).
    #[error("line {line}: empty (every checkpoint line is non-empty)")]
    EmptyLine {
        /// The line.
        line: usize,
    },
    /// The tree size line is not a decimal number as tlog-checkpoint writes it.
    #[error("line {line}: the tree size has {problem}")]
    Size {
        /// The line.
        line: usize,
        /// What is wrong.
        problem: SizeProblem,
    },
    /// The root hash line is not the base64 of 32 bytes.
    #[error("line {line}: the root hash is not standard base64 of 32 bytes{}",
        .bytes.map(|b| format!(" ({b} bytes)")).unwrap_or_default())]
    Root {
        /// The line.
        line: usize,
        /// Bytes decoded, when it was base64.
        bytes: Option<usize>,
    },
    /// A checkpoint to write whose origin or an extension holds a newline or is empty.
    #[error("the checkpoint's {field} is empty or holds a newline")]
    Field {
        /// `origin` or `extension`.
        field: &'static str,
    },
    /// A signer whose key name is not the origin: the log's checkpoints are signed by the key
    /// named as the log.
    #[error(
        "the key {key_name} cannot sign checkpoints of origin {origin}: its name is not the origin"
    )]
    SignerNotOrigin {
        /// The signer's key name.
        key_name: String,
        /// The checkpoint's origin.
        origin: String,
    },
    /// No verified signature by a key named as the origin.
    #[error("no signature by a given key named {origin} (the checkpoint's origin)")]
    NotSignedForOrigin {
        /// The origin.
        origin: String,
    },
    /// No verified signature by one of the log's keys.
    #[error("no signature by any of the {keys} keys given for origin {origin}")]
    NotSignedByLog {
        /// The origin.
        origin: String,
        /// Keys given for it.
        keys: usize,
    },
    /// A checkpoint of another log than the one expected.
    #[error("the checkpoint's origin is {found}, not {expected}")]
    OriginMismatch {
        /// The origin expected.
        expected: String,
        /// The origin of the checkpoint.
        found: String,
    },
}

/// A checkpoint: a log's tree head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The log's identity, e.g. `example.com/log42`: non-empty, one line.
    pub origin: String,
    /// The tree size: records in the tree.
    pub size: u64,
    /// The RFC 6962 root hash of the tree of `size` records.
    pub root: [u8; 32],
    /// Extension lines, opaque and non-empty (tlog-checkpoint does not recommend them).
    pub extensions: Vec<String>,
}

impl Checkpoint {
    /// Parses a checkpoint's text (the note's text, with its final newline).
    pub fn parse_body(text: &str) -> Result<Checkpoint, CheckpointError> {
        let Some(body) = text.strip_suffix('\n') else {
            return Err(NoteError::TextNotTerminated {
                line: 1 + text.matches('\n').count(),
            }
            .into());
        };
        let lines: Vec<&str> = body.split('\n').collect();
        if let Some(empty) = lines.iter().position(|line| line.is_empty()) {
            return Err(CheckpointError::EmptyLine { line: empty + 1 });
        }
        let [origin, size, root, extensions @ ..] = lines.as_slice() else {
            return Err(CheckpointError::TooFewLines { lines: lines.len() });
        };
        let size =
            parse_decimal(size).map_err(|problem| CheckpointError::Size { line: 2, problem })?;
        let root = base64_hash(root).map_err(|bytes| CheckpointError::Root { line: 3, bytes })?;
        Ok(Checkpoint {
            origin: (*origin).to_owned(),
            size,
            root,
            extensions: extensions.iter().map(|line| (*line).to_owned()).collect(),
        })
    }

    /// The checkpoint's text: `origin`, `size`, `base64(root)` and the extension lines, each
    /// ending in a newline.
    pub fn body(&self) -> Result<String, CheckpointError> {
        let one_line = |line: &str| !line.is_empty() && !line.contains('\n');
        if !one_line(&self.origin) {
            return Err(CheckpointError::Field { field: "origin" });
        }
        if !self.extensions.iter().all(|line| one_line(line)) {
            return Err(CheckpointError::Field { field: "extension" });
        }
        let mut text = format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            base64_encode(&self.root)
        );
        for line in &self.extensions {
            text.push_str(line);
            text.push('\n');
        }
        Ok(text)
    }

    /// The signed note of this checkpoint, signed by `signer`, whose key name must be the
    /// origin. An ML-DSA-44 signer (type 0x06) signs its `subtree/v1` message with timestamp
    /// 0, which holds no extension line (tlog-checkpoint: they SHOULD then be empty).
    pub fn sign(&self, signer: &Signer) -> Result<String, CheckpointError> {
        if signer.name() != self.origin {
            return Err(CheckpointError::SignerNotOrigin {
                key_name: signer.name().to_owned(),
                origin: self.origin.clone(),
            });
        }
        let body = self.body()?;
        // An ML-DSA-44 key's name fits its message (255 bytes), and the origin is that name.
        assert!(
            signer.can_sign(&body),
            "a checkpoint its log's key cannot sign"
        );
        let mut note = Note::new(&body)?;
        note.sign(signer);
        Ok(note.to_text())
    }

    /// Opens a signed checkpoint: the note opens against `verifiers` (every signature by a
    /// known key verified, a bad one refused) and one verified signature is by a key named as
    /// the origin. The other signature lines (cosignatures) are kept, to be passed on.
    pub fn open(text: &str, verifiers: &[Verifier]) -> Result<OpenedCheckpoint, CheckpointError> {
        let (checkpoint, note) = Checkpoint::open_note(text, verifiers)?;
        let log_keys: Vec<_> = note
            .verified()
            // An Ed25519 cosignature (type 0x04) is no log signature, whatever its name; an
            // ML-DSA-44 one named as the origin is the log's, as tlog-checkpoint recommends.
            .filter(|s| s.name == checkpoint.origin && note.verified_by_log_key(s))
            .map(|s| (s.name.clone(), s.key_id))
            .collect();
        if log_keys.is_empty() {
            return Err(CheckpointError::NotSignedForOrigin {
                origin: checkpoint.origin,
            });
        }
        Ok(OpenedCheckpoint {
            checkpoint,
            note,
            log_keys,
        })
    }

    /// Opens a signed checkpoint of the log `origin`, whose keys are `log_keys` whatever
    /// their names: the origin line must be `origin` and one verified signature must be by
    /// one of `log_keys`. `others` (witnesses' keys, say) are verified as well when their
    /// lines are present.
    pub fn open_for_origin(
        text: &str,
        origin: &str,
        log_keys: &[Verifier],
        others: &[Verifier],
    ) -> Result<OpenedCheckpoint, CheckpointError> {
        let verifiers: Vec<Verifier> = log_keys.iter().chain(others).cloned().collect();
        let (checkpoint, note) = Checkpoint::open_note(text, &verifiers)?;
        if checkpoint.origin != origin {
            return Err(CheckpointError::OriginMismatch {
                expected: origin.to_owned(),
                found: checkpoint.origin,
            });
        }
        let by_log: Vec<_> = note
            .verified()
            .filter(|s| {
                log_keys
                    .iter()
                    .any(|k| k.is_log_key() && k.name() == s.name && k.key_id() == s.key_id)
            })
            .map(|s| (s.name.clone(), s.key_id))
            .collect();
        if by_log.is_empty() {
            return Err(CheckpointError::NotSignedByLog {
                origin: checkpoint.origin,
                keys: log_keys.len(),
            });
        }
        Ok(OpenedCheckpoint {
            checkpoint,
            note,
            log_keys: by_log,
        })
    }

    fn open_note(
        text: &str,
        verifiers: &[Verifier],
    ) -> Result<(Checkpoint, OpenedNote), CheckpointError> {
        let note = Note::parse(text)?;
        // The body is checked before any signature: a malformed checkpoint is refused as
        // such, whoever signed it.
        let checkpoint = Checkpoint::parse_body(note.text())?;
        let note = note.open(verifiers)?;
        Ok((checkpoint, note))
    }
}

/// A checkpoint whose log signature verified, with the note it came in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedCheckpoint {
    /// The checkpoint.
    pub checkpoint: Checkpoint,
    note: OpenedNote,
    /// The log's keys (name, key ID) whose signatures verified.
    log_keys: Vec<(String, KeyId)>,
}

impl OpenedCheckpoint {
    /// The signed note, every signature line in its order.
    pub fn note(&self) -> &OpenedNote {
        &self.note
    }

    /// The signature lines not by the log's keys (cosignatures from witnesses, signatures by
    /// keys not given), to pass on with the checkpoint.
    pub fn cosignatures(&self) -> impl Iterator<Item = &NoteSignature> {
        self.note.note().signatures().iter().filter(|s| {
            !self
                .log_keys
                .iter()
                .any(|(name, key_id)| *name == s.name && *key_id == s.key_id)
        })
    }

    /// The signed note's text, as it was read (parsing is canonical, so it is the same
    /// bytes).
    pub fn to_text(&self) -> String {
        self.note.note().to_text()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> Signer {
        Signer::from_seed("example.com/log", [5; 32]).unwrap()
    }

    fn checkpoint() -> Checkpoint {
        Checkpoint {
            origin: "example.com/log".into(),
            size: 42,
            root: [7; 32],
            extensions: vec!["ext one".into()],
        }
    }

    #[test]
    fn spec_example_body_parses() {
        let body =
            "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n";
        let parsed = Checkpoint::parse_body(body).unwrap();
        assert_eq!(parsed.origin, "example.com/behind-the-sofa");
        assert_eq!(parsed.size, 20852163);
        assert_eq!(parsed.body().unwrap(), body);
    }

    #[test]
    fn body_rules_name_the_line() {
        let root = base64_encode(&[1; 32]);
        let check = |text: &str, expected: CheckpointError| {
            assert_eq!(Checkpoint::parse_body(text), Err(expected), "{text:?}");
        };
        check("o\n5\n", CheckpointError::TooFewLines { lines: 2 });
        check(
            &format!("\n5\n{root}\n"),
            CheckpointError::EmptyLine { line: 1 },
        );
        check(
            &format!("o\n5\n{root}\n\nx\n"),
            CheckpointError::EmptyLine { line: 4 },
        );
        for (size, problem) in [
            ("05", SizeProblem::LeadingZero),
            ("+5", SizeProblem::NotDecimal),
            ("5 ", SizeProblem::NotDecimal),
            ("99999999999999999999", SizeProblem::Overflow),
        ] {
            check(
                &format!("o\n{size}\n{root}\n"),
                CheckpointError::Size { line: 2, problem },
            );
        }
        check(
            &format!("o\n5\n{}\n", base64_encode(&[1; 31])),
            CheckpointError::Root {
                line: 3,
                bytes: Some(31),
            },
        );
        check(
            "o\n5\nnot base64\n",
            CheckpointError::Root {
                line: 3,
                bytes: None,
            },
        );
        check(
            &format!("o\n5\n{root}"),
            CheckpointError::Note(NoteError::TextNotTerminated { line: 3 }),
        );
        // The origin is not a key name: spaces and plus signs are only recommended against.
        assert!(Checkpoint::parse_body(&format!("go.sum database tree\n0\n{root}\n")).is_ok());
    }

    #[test]
    fn signed_checkpoint_opens_and_writes_back_the_same_bytes() {
        let text = checkpoint().sign(&log()).unwrap();
        let opened = Checkpoint::open(&text, &[log().verifier()]).unwrap();
        assert_eq!(opened.checkpoint, checkpoint());
        assert_eq!(opened.to_text(), text);
        assert_eq!(opened.cosignatures().count(), 0);
    }

    #[test]
    fn a_key_of_another_name_neither_signs_nor_opens_by_default() {
        let other = Signer::from_seed("example.com/other", [6; 32]).unwrap();
        assert!(matches!(
            checkpoint().sign(&other),
            Err(CheckpointError::SignerNotOrigin { .. })
        ));
        let mut note = Note::new(&checkpoint().body().unwrap()).unwrap();
        note.sign(&other);
        let text = note.to_text();
        assert_eq!(
            Checkpoint::open(&text, &[other.verifier()]),
            Err(CheckpointError::NotSignedForOrigin {
                origin: "example.com/log".into()
            })
        );
        // Said explicitly: this key speaks for this origin.
        let opened =
            Checkpoint::open_for_origin(&text, "example.com/log", &[other.verifier()], &[])
                .unwrap();
        assert_eq!(opened.checkpoint.size, 42);
        assert_eq!(opened.cosignatures().count(), 0, "the log's own line");
        assert_eq!(
            Checkpoint::open_for_origin(&text, "example.com/x", &[other.verifier()], &[]),
            Err(CheckpointError::OriginMismatch {
                expected: "example.com/x".into(),
                found: "example.com/log".into()
            })
        );
    }

    #[test]
    fn cosignatures_are_kept_for_passing_on() {
        let text = checkpoint().sign(&log()).unwrap();
        let witness = NoteSignature {
            name: "witness.example/w1".into(),
            key_id: KeyId(0x8d66cf3f),
            signature: vec![0; 72],
        };
        let text = format!("{text}{}", witness.to_line());
        let opened = Checkpoint::open(&text, &[log().verifier()]).unwrap();
        assert_eq!(opened.cosignatures().collect::<Vec<_>>(), vec![&witness]);
        assert_eq!(opened.to_text(), text);
    }

    #[test]
    fn fields_that_are_not_one_line_are_refused_when_writing() {
        let mut bad = checkpoint();
        bad.origin = "a\nb".into();
        assert_eq!(bad.body(), Err(CheckpointError::Field { field: "origin" }));
        let mut bad = checkpoint();
        bad.extensions.push(String::new());
        assert_eq!(
            bad.body(),
            Err(CheckpointError::Field { field: "extension" })
        );
    }
}
