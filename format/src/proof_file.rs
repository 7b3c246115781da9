//! Proof files: an inclusion or consistency proof together with every tree head it proves
//! against, as the JSON that `annals prove --json` prints and `annals check-proof` reads.
//!
//! [`ProofFile::check`] takes the tree heads the auditor trusts ([`Trust`]), finds the one the
//! proof proves in among them, then runs the stateless verifiers of [`crate::merkle`] and checks each tree head
//! hash against its size and root. [`ProofFile::check_self_consistency`] does the latter
//! only: a proof whose size was changed and whose heads were recomputed to match passes it,
//! so it says nothing about a log. This module reads no log and never writes one: a log's
//! proof files are built by annals (`Snapshot::inclusion_proof_file`).

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};

use crate::hash::Digest;
use crate::merkle::{
    ConsistencyProof, InclusionProof, ProofError, TreeHead, Trust, TrustedHead, check_consistency,
    check_inclusion, consistency_sizes_sharing_path,
};
use crate::record::Position;

/// A proof with the tree heads it proves against, in the JSON of `annals prove --json`.
/// Hashes are lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "proof", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProofFile {
    /// The record hashed `record_hash` is at `position` in the tree of `size` records whose
    /// root is `root`.
    Inclusion {
        /// The tree the proof's hashes are of.
        tree: ProofTree,
        /// The record's position (its leaf index).
        position: u64,
        /// The tree's size.
        size: u64,
        /// The record's hash (the leaf is `SHA-256(0x00 ‖ record_hash)`).
        #[serde(with = "hex_digest")]
        record_hash: Digest,
        /// The tree's root.
        #[serde(with = "hex_digest")]
        root: Digest,
        /// The tree head hash of `size` and `root` (see [`TreeHead::hash`]).
        #[serde(with = "hex_digest")]
        tree_head: Digest,
        /// The sibling hashes from the leaf up.
        #[serde(with = "hex_digests")]
        path: Vec<Digest>,
    },
    /// The tree of `from_size` records with root `from_root` is a prefix of the tree of
    /// `size` records with root `root`.
    Consistency {
        /// The tree the proof's hashes are of.
        tree: ProofTree,
        /// The earlier size.
        from_size: u64,
        /// The earlier tree's root.
        #[serde(with = "hex_digest")]
        from_root: Digest,
        /// The tree head hash of `from_size` and `from_root`.
        #[serde(with = "hex_digest")]
        from_tree_head: Digest,
        /// The later size.
        size: u64,
        /// The later tree's root.
        #[serde(with = "hex_digest")]
        root: Digest,
        /// The tree head hash of `size` and `root`.
        #[serde(with = "hex_digest")]
        tree_head: Digest,
        /// The path hashes.
        #[serde(with = "hex_digests")]
        path: Vec<Digest>,
    },
}

/// The tree a proof file's hashes are of, its `tree` field: RFC 6962's with SHA-256, the log's
/// since format v4. Proof files written before it have no `tree` field and hashes of the
/// blake3 tree; they are refused ([`ProofFileError::EarlierTree`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProofTree {
    /// RFC 6962's Merkle tree with SHA-256 over the record hashes.
    #[default]
    Rfc6962,
}

impl ProofFile {
    /// The inclusion proof file of the record hashed `record_hash` at `position` in the tree
    /// `head`, whose sibling hashes from the leaf up are `path`. Nothing is checked: a log
    /// builds it from its own tree (annals' `Snapshot::inclusion_proof_file`), an auditor
    /// checks it ([`ProofFile::check`]).
    pub fn of_inclusion(
        position: Position,
        record_hash: Digest,
        head: TreeHead,
        path: Vec<Digest>,
    ) -> ProofFile {
        ProofFile::Inclusion {
            tree: ProofTree::Rfc6962,
            position: position.0,
            size: head.size,
            record_hash,
            root: head.root,
            tree_head: head.hash(),
            path,
        }
    }

    /// The consistency proof file from the tree head `from` to the later `to`, whose path
    /// hashes are `path`. Nothing is checked, as for [`ProofFile::of_inclusion`].
    pub fn of_consistency(from: TreeHead, to: TreeHead, path: Vec<Digest>) -> ProofFile {
        ProofFile::Consistency {
            tree: ProofTree::Rfc6962,
            from_size: from.size,
            from_root: from.root,
            from_tree_head: from.hash(),
            size: to.size,
            root: to.root,
            tree_head: to.hash(),
            path,
        }
    }

    /// Reads a proof file from its JSON, refusing any hash that is not 64 lower-case hex
    /// digits with an error that names the field (`root`, `path[3]`, …).
    ///
    /// A key given twice in one object is refused ([`ProofFileError::DuplicateKey`]): a JSON
    /// reader would keep one of the two silently, and which one is not the file's to choose.
    pub fn from_json(bytes: &[u8]) -> Result<ProofFile, ProofFileError> {
        let shape = |error: serde_json::Error| ProofFileError::Shape {
            line: error.line(),
            column: error.column(),
            cause: quoted(&error.to_string()),
        };
        if let Some(key) = duplicate_key(bytes).map_err(shape)? {
            return Err(ProofFileError::DuplicateKey { key: quoted(&key) });
        }
        let value: serde_json::Value = serde_json::from_slice(bytes).map_err(shape)?;
        if let Some(object) = value.as_object() {
            // A proof file of before v4 has every field of today's but `tree`.
            let earlier = ["proof", "root", "path"]
                .iter()
                .all(|key| object.contains_key(*key));
            if earlier && !object.contains_key("tree") {
                return Err(ProofFileError::EarlierTree);
            }
            for field in HASH_FIELDS {
                if let Some(serde_json::Value::String(text)) = object.get(field) {
                    check_lower_hex(field, text)?;
                }
            }
            if let Some(serde_json::Value::Array(path)) = object.get("path") {
                for (index, item) in path.iter().enumerate() {
                    if let serde_json::Value::String(text) = item {
                        check_lower_hex(&format!("path[{index}]"), text)?;
                    }
                }
            }
        }
        serde_json::from_value(value).map_err(shape)
    }

    /// The tree head the proof proves in: an inclusion proof's tree, a consistency proof's
    /// later tree.
    pub fn tree_head(&self) -> TreeHead {
        match self {
            ProofFile::Inclusion { size, root, .. } | ProofFile::Consistency { size, root, .. } => {
                TreeHead {
                    size: *size,
                    root: *root,
                }
            }
        }
    }

    /// A consistency proof's earlier tree head; `None` for an inclusion proof.
    pub fn from_tree_head(&self) -> Option<TreeHead> {
        match self {
            ProofFile::Inclusion { .. } => None,
            ProofFile::Consistency {
                from_size,
                from_root,
                ..
            } => Some(TreeHead {
                size: *from_size,
                root: *from_root,
            }),
        }
    }

    /// Checks the proof against the tree heads the auditor trusts: `Ok` with the proof's tree
    /// head that proves in (an inclusion proof's, a consistency proof's later one) exactly when
    /// the proof is valid and that head is trusted. A consistency proof whose later head is
    /// trusted vouches for its earlier head, a prefix of it.
    ///
    /// A consistency proof whose earlier head alone is trusted is refused
    /// ([`ProofError::LaterHeadNotTrusted`]) once its path is found valid: the path binds
    /// only the earlier size, so the later head is established only by trusting it too.
    /// An inclusion proof of a tree of another size than the trusted heads' is refused
    /// ([`ProofError::TrustedSize`]).
    pub fn check(&self, trust: &Trust) -> Result<TreeHead, ProofError> {
        let to = self.tree_head();
        let from = self.from_tree_head();
        let to_trusted = trust.trusts(&to);
        if !to_trusted && !from.is_some_and(|from| trust.trusts(&from)) {
            return Err(self.untrusted(trust));
        }
        self.check_self_consistency()?;
        match from {
            Some(from) if !to_trusted => {
                // A second head kept, which the later one is not: say how they differ.
                if let Some(other) = trust.heads().iter().find(|head| !head.is(&from)) {
                    return Err(mismatch(other, &[Some((to, "root"))], Some(from.size)));
                }
                let open = consistency_sizes_sharing_path(from.size, to.size);
                Err(ProofError::LaterHeadNotTrusted {
                    from_size: from.size,
                    size: to.size,
                    open_from: *open.start(),
                    open_to: *open.end(),
                })
            }
            _ => Ok(to),
        }
    }

    /// Checks the proof only against the tree heads it carries; `Ok` exactly when it is
    /// self-consistent. This proves nothing about any log: a forger who changes a proof's
    /// size can recompute the heads to match. Use [`ProofFile::check`] with a trusted head.
    pub fn check_self_consistency(&self) -> Result<(), ProofError> {
        match self {
            ProofFile::Inclusion {
                position,
                size,
                record_hash,
                root,
                tree_head,
                path,
                ..
            } => {
                let proof = InclusionProof {
                    position: Position(*position),
                    size: *size,
                    path: path.clone(),
                };
                let head = TreeHead {
                    size: *size,
                    root: *root,
                };
                check_tree_head(&head, tree_head)?;
                check_inclusion(&proof, &head, record_hash)
            }
            ProofFile::Consistency {
                from_size,
                from_root,
                from_tree_head,
                size,
                root,
                tree_head,
                path,
                ..
            } => {
                let proof = ConsistencyProof {
                    from_size: *from_size,
                    size: *size,
                    path: path.clone(),
                };
                let from = TreeHead {
                    size: *from_size,
                    root: *from_root,
                };
                let to = TreeHead {
                    size: *size,
                    root: *root,
                };
                check_tree_head(&from, from_tree_head)?;
                check_tree_head(&to, tree_head)?;
                check_consistency(&proof, &from, &to)
            }
        }
    }

    /// Why none of the proof's tree heads is trusted, told against the first head kept.
    fn untrusted(&self, trust: &Trust) -> ProofError {
        let to = self.tree_head();
        let from = self.from_tree_head();
        // The later head first: when both sizes are equal, either is the one named.
        let candidates = [Some((to, "root")), from.map(|head| (head, "from_root"))];
        match trust.heads().first() {
            Some(trusted) => mismatch(trusted, &candidates, from.map(|from| from.size)),
            None => ProofError::NothingTrusted,
        }
    }
}

/// Why `trusted` is none of `candidates` (a proof's tree heads, each with the name of its root
/// field); `from_size` is a consistency proof's earlier size.
fn mismatch(
    trusted: &TrustedHead,
    candidates: &[Option<(TreeHead, &'static str)>],
    from_size: Option<u64>,
) -> ProofError {
    let candidates = candidates.iter().flatten();
    let Some((to, _)) = candidates.clone().next() else {
        return ProofError::NothingTrusted;
    };
    match trusted {
        TrustedHead::Head(trusted) => {
            match candidates
                .clone()
                .find(|(head, _)| head.size == trusted.size)
            {
                Some((head, which)) => ProofError::TrustedRoot {
                    which,
                    size: head.size,
                    proof: head.root.to_hex(),
                    trusted: trusted.root.to_hex(),
                },
                None => match from_size {
                    None => ProofError::TrustedSize {
                        proof: to.size,
                        trusted: trusted.size,
                    },
                    Some(from_size) => ProofError::TrustedSizes {
                        from_size,
                        size: to.size,
                        trusted: trusted.size,
                    },
                },
            }
        }
        TrustedHead::Hash(hash) => ProofError::TrustedHash {
            trusted: hash.to_hex(),
            found: candidates
                .map(|(head, _)| format!("size {} tree head {}", head.size, head.hash()))
                .collect::<Vec<_>>()
                .join(", "),
        },
    }
}

/// Why bytes are not a proof file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProofFileError {
    /// Not JSON, or JSON of another shape than a proof file's: where the JSON reader stopped
    /// (1-based; 0 when it had no place to name) and its account, quoted.
    #[error("not a proof file: {cause}")]
    Shape {
        /// The line where the reader stopped.
        line: usize,
        /// The column where it stopped.
        column: usize,
        /// The JSON reader's account, quoted.
        cause: String,
    },
    /// A hash spelt with upper-case hex digits: `schema/FORMAT.md` 3.6 spells them in lower
    /// case, one spelling per hash.
    #[error("{field} has upper-case hex digits; a proof file's hashes are lower-case")]
    UpperCaseHex {
        /// The field: `root`, `path[3]`, ….
        field: String,
    },
    /// A key given twice in one JSON object.
    #[error("the key {key} is given twice in one object; a proof file gives each key once")]
    DuplicateKey {
        /// The key, in double quotes with its control characters escaped.
        key: String,
    },
    /// A proof file without a `tree` field: written by annals before log format v4, its hashes
    /// are of the blake3 tree, which no log of this build keeps.
    #[error(
        "the proof file has no \"tree\" field: annals wrote it before log format v4, and its \
         root, tree heads and path are hashes of the blake3 tree, which this build does not \
         keep (it keeps RFC 6962's SHA-256 tree); ask the log for a new proof with `annals \
         prove`, against a tree head or checkpoint of today's tree"
    )]
    EarlierTree,
    /// A hash that is not 64 hex digits.
    #[error("{field} is not 64 lower-case hex digits")]
    NotHex {
        /// The field: `root`, `path[3]`, ….
        field: String,
    },
}

/// The most characters of untrusted text that [`quoted`] shows.
const QUOTED_CHARS_MAX: usize = 80;

/// Untrusted text as messages show it: in double quotes, every control character (terminal
/// escapes included), quote and backslash escaped as Rust escapes them, and cut after
/// `QUOTED_CHARS_MAX` characters with `…` after the closing quote. Bytes from a file or the
/// network never reach a terminal raw.
pub fn quoted(text: &str) -> String {
    let mut shown: String = text
        .chars()
        .take(QUOTED_CHARS_MAX)
        .flat_map(char::escape_debug)
        .collect();
    shown.insert(0, '"');
    shown.push('"');
    if text.chars().nth(QUOTED_CHARS_MAX).is_some() {
        shown.push('…');
    }
    shown
}

/// The first key that some object in the JSON `bytes` gives twice, if any; an error when the
/// bytes are not JSON.
fn duplicate_key(bytes: &[u8]) -> Result<Option<String>, serde_json::Error> {
    let mut found = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    Walk { found: &mut found }.deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(found)
}

/// Walks one JSON value, recording in `found` the first key repeated in an object.
struct Walk<'a> {
    found: &'a mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq
            .next_element_seed(Walk {
                found: &mut *self.found,
            })?
            .is_some()
        {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value_seed(Walk {
                found: &mut *self.found,
            })?;
            if !keys.insert(key.clone()) && self.found.is_none() {
                *self.found = Some(key);
            }
        }
        Ok(())
    }
}

/// The fields of either kind of proof file that hold one hash.
const HASH_FIELDS: [&str; 5] = [
    "record_hash",
    "root",
    "tree_head",
    "from_root",
    "from_tree_head",
];

fn check_lower_hex(field: &str, text: &str) -> Result<(), ProofFileError> {
    if lower_hex_digest(text).is_some() {
        return Ok(());
    }
    let field = field.to_string();
    if text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ProofFileError::UpperCaseHex { field });
    }
    Err(ProofFileError::NotHex { field })
}

/// The digest spelt by exactly 64 lower-case hex digits, the one spelling proof files (and
/// the tree heads `annals root` prints) use.
pub fn lower_hex_digest(text: &str) -> Option<Digest> {
    let lower = text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if lower { Digest::from_hex(text) } else { None }
}

fn check_tree_head(head: &TreeHead, found: &Digest) -> Result<(), ProofError> {
    if head.hash() == *found {
        return Ok(());
    }
    Err(ProofError::TreeHeadHash {
        size: head.size,
        found: found.to_hex(),
    })
}

mod hex_digest {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use crate::hash::Digest;

    pub(super) fn serialize<S: Serializer>(
        digest: &Digest,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&digest.to_hex())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Digest, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::lower_hex_digest(&text)
            .ok_or_else(|| D::Error::custom("not 64 lower-case hex digits"))
    }
}

mod hex_digests {
    use serde::{Deserialize, Deserializer, Serializer, de::Error, ser::SerializeSeq};

    use crate::hash::Digest;

    pub(super) fn serialize<S: Serializer>(
        digests: &[Digest],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(digests.len()))?;
        for digest in digests {
            seq.serialize_element(&digest.to_hex())?;
        }
        seq.end()
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Digest>, D::Error> {
        let texts = Vec::<String>::deserialize(deserializer)?;
        texts
            .iter()
            .map(|text| {
                super::lower_hex_digest(text)
                    .ok_or_else(|| D::Error::custom("not 64 lower-case hex digits"))
            })
            .collect()
    }
}
