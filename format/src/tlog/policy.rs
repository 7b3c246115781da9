//! `c2sp.org/tlog-policy`: the trust policy an offline verifier reads — the logs whose
//! checkpoints it accepts, the witnesses it knows, groups of them with thresholds, and the
//! quorum of cosignatures a checkpoint needs.
//!
//! A policy file is lines of items separated by spaces and tabs: `log <vkey> [<url>]`,
//! `witness <name> <vkey> [<url>]`, `group <name> all|any|<k> <name>...` and exactly one
//! `quorum <name>` (`none` for no cosignature at all); blank lines and lines starting with `#`
//! are ignored. A name refers only to a witness or group defined on an earlier line, each name
//! is a member at most once, and a log or witness key appears once. Names, URLs and comments
//! are octets, compared as such (bytes with the high bit set are opaque, never decoded).
//!
//! [`Policy::parse`] refuses every malformed file with the line it stops at
//! ([`PolicyError`]); [`Policy::check`] opens a checkpoint against it. Nothing here reads a
//! file: the bytes come in with the call.

use std::fmt;

use super::checkpoint::{Checkpoint, CheckpointError, OpenedCheckpoint};
use super::cosignature::cosigned_by;
use super::note::{KeyError, Verifier};

/// The largest policy file read, in bytes.
pub const POLICY_BYTES_MAX: usize = 1 << 20;

/// The most logs, witnesses or groups (each) a policy may define: the specification asks for
/// at least 32 of each.
pub const POLICY_ENTRIES_MAX: usize = 1024;

const _: () = assert!(POLICY_ENTRIES_MAX >= 32);

/// The name of the quorum that needs no cosignature, never a witness or group.
const NONE: &[u8] = b"none";

/// Why a policy file was refused: the line (from 1) and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {problem}")]
pub struct PolicyError {
    /// The line the problem is on (for a file too large, the line the limit falls in; for a
    /// missing quorum, the line after the last).
    pub line: usize,
    /// What is wrong.
    pub problem: PolicyProblem,
}

/// What is wrong with a policy line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyProblem {
    /// The file is larger than [`POLICY_BYTES_MAX`].
    #[error("the policy is {bytes} bytes, more than the {max} read")]
    TooLarge {
        /// Its size.
        bytes: usize,
        /// The limit.
        max: usize,
    },
    /// A control character other than tab and newline (a carriage return, say), or DEL.
    #[error(
        "the byte 0x{byte:02x} is not allowed (only tab, newline, printable ASCII and bytes from 0x80)"
    )]
    Character {
        /// The byte.
        byte: u8,
    },
    /// The last line does not end in a newline.
    #[error("the line does not end in a newline")]
    NotTerminated,
    /// A line that starts with a word other than `log`, `witness`, `group` and `quorum`.
    #[error("unknown keyword {0:?} (a line is log, witness, group or quorum)")]
    Keyword(String),
    /// A line with too few or too many items.
    #[error("{keyword} takes {expected}, found {found} item(s) after it")]
    Items {
        /// The line's keyword.
        keyword: &'static str,
        /// What it takes.
        expected: &'static str,
        /// Items found after the keyword.
        found: usize,
    },
    /// A vkey that does not parse.
    #[error("the vkey does not parse: {0}")]
    Vkey(KeyError),
    /// A vkey that is not UTF-8 text.
    #[error("the vkey is not UTF-8 text")]
    VkeyText,
    /// A log key of a type no log signs with (a witness's Ed25519 cosigner key, 0x04).
    #[error("a log's key is of type 0x01 (Ed25519) or 0x06 (ML-DSA-44), not 0x{type_byte:02x}")]
    LogKeyType {
        /// The key's type byte.
        type_byte: u8,
    },
    /// A witness key of a type no cosignature has (a log's Ed25519 note key, 0x01).
    #[error("a witness's key is of type 0x04 (Ed25519) or 0x06 (ML-DSA-44), not 0x{type_byte:02x}")]
    WitnessKeyType {
        /// The key's type byte.
        type_byte: u8,
    },
    /// A log or witness whose public key an earlier line of the same kind holds.
    #[error("the same public key as the {what} on line {first}")]
    DuplicateKey {
        /// `log` or `witness`.
        what: &'static str,
        /// The earlier line.
        first: usize,
    },
    /// A witness or group named `none`, the name of the empty quorum.
    #[error("\"none\" is the quorum of no witness, never a witness's or group's name")]
    NameNone,
    /// A name an earlier witness or group has.
    #[error("the name {name:?} is already defined on line {first}")]
    NameTaken {
        /// The name (non-UTF-8 bytes shown as U+FFFD).
        name: String,
        /// The earlier line.
        first: usize,
    },
    /// A name no earlier line defines.
    #[error("{name:?} is not a witness or group defined on an earlier line")]
    Undefined {
        /// The name.
        name: String,
    },
    /// `none` as a group member.
    #[error("\"none\" cannot be a group member")]
    NoneMember,
    /// A name listed as a group member before (in this group or an earlier one).
    #[error("{name:?} is already a member of the group on line {first}")]
    MemberTwice {
        /// The name.
        name: String,
        /// The line of the group it is a member of.
        first: usize,
    },
    /// A threshold that is not `all`, `any` or a decimal from 1 to the number of members.
    #[error(
        "the threshold {text:?} is not all, any or a decimal from 1 to the {members} member(s)"
    )]
    Threshold {
        /// The threshold as written.
        text: String,
        /// Members listed.
        members: usize,
    },
    /// A second quorum line.
    #[error("a second quorum (the first is on line {first})")]
    SecondQuorum {
        /// The line of the first.
        first: usize,
    },
    /// The file ends without a quorum line.
    #[error("the policy has no quorum line")]
    NoQuorum,
    /// More logs, witnesses or groups than [`POLICY_ENTRIES_MAX`].
    #[error("more than {max} {what}")]
    TooMany {
        /// `logs`, `witnesses` or `groups`.
        what: &'static str,
        /// The limit.
        max: usize,
    },
}

/// A log the policy accepts checkpoints from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyLog {
    /// Its key (type 0x01 or 0x06), named as the log's origin.
    pub verifier: Verifier,
    /// Its URL, when given (octets, as written).
    pub url: Option<Vec<u8>>,
}

/// A witness the policy knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyWitness {
    /// Its name in the policy (octets, as written).
    pub name: Vec<u8>,
    /// Its cosigner key (type 0x04 or 0x06).
    pub verifier: Verifier,
    /// Its URL, when given.
    pub url: Option<Vec<u8>>,
}

/// A witness or a group, as a member or the quorum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Member {
    Witness(usize),
    Group(usize),
}

/// A group: witnessed when at least `threshold` of its members are.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    name: Vec<u8>,
    threshold: usize,
    members: Vec<Member>,
}

/// A parsed `tlog-policy` file.
///
/// ```
/// use annals_format::tlog::{Checkpoint, Cosigner, Note, Policy, Signer};
///
/// let log = Signer::from_seed("example.com/log", [1; 32])?;
/// let w1 = Cosigner::ml_dsa_44_from_seed("witness.example/w1", [2; 32])?;
/// let w2 = Cosigner::from_seed("witness.example/w2", [3; 32])?;
/// let text = format!(
///     "log {}\nwitness W1 {}\nwitness W2 {}\ngroup both all W1 W2\nquorum both\n",
///     log.verifier(),
///     w1.verifier(),
///     w2.verifier()
/// );
/// let policy = Policy::parse(text.as_bytes())?;
/// let body = "example.com/log\n3\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n";
/// let mut note = Note::new(body)?;
/// note.sign(&log);
/// note.push_signature(w1.cosign(body, 1_700_000_000)?);
/// assert!(policy.check(&note.to_text(), &[]).is_err(), "W2 has not cosigned");
/// note.push_signature(w2.cosign(body, 1_700_000_001)?);
/// let checked = policy.check(&note.to_text(), &[])?;
/// assert_eq!(checked.witnesses, [b"W1".to_vec(), b"W2".to_vec()]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    logs: Vec<PolicyLog>,
    witnesses: Vec<PolicyWitness>,
    groups: Vec<Group>,
    /// `None` for `quorum none`.
    quorum: Option<Member>,
}

/// A checkpoint that holds under a policy: signed by one of its logs, cosigned by a quorum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyChecked {
    /// The checkpoint, opened against the policy's keys.
    pub checkpoint: OpenedCheckpoint,
    /// The policy's names of the witnesses whose cosignatures verified, in the policy's order.
    pub witnesses: Vec<Vec<u8>>,
}

/// Why a checkpoint does not hold under a policy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyCheckError {
    /// No log key to open it with: the policy lists no log and none was given.
    #[error("the policy lists no log and no log key was given")]
    NoLog,
    /// The checkpoint does not open (malformed, a bad signature by a known key, no signature
    /// by a key named as its origin).
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The checkpoint is signed by a key named as its origin, but not by one of the logs.
    #[error("the checkpoint of {origin} is signed by none of the policy's logs")]
    NotSignedByLog {
        /// The checkpoint's origin.
        origin: String,
    },
    /// The witnesses that cosigned do not make the quorum.
    #[error("the quorum is not met: cosigned by {}", names(.cosigned))]
    Quorum {
        /// The policy's names of the witnesses that cosigned.
        cosigned: Vec<Vec<u8>>,
    },
}

/// Names as a list for a message.
fn names(names: &[Vec<u8>]) -> String {
    if names.is_empty() {
        return "no witness of the policy".to_owned();
    }
    let shown: Vec<String> = names.iter().map(|n| shown(n)).collect();
    shown.join(", ")
}

/// A name or word as text, bytes that are not UTF-8 shown as U+FFFD.
fn shown(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl fmt::Display for Policy {
    /// The policy as a file, one line per definition (logs, witnesses, groups with numeric
    /// thresholds, the quorum): what [`Policy::parse`] reads back to an equal policy when its
    /// names and URLs are UTF-8 (other bytes are shown as U+FFFD).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = |url: &Option<Vec<u8>>| {
            url.as_ref()
                .map(|u| format!(" {}", shown(u)))
                .unwrap_or_default()
        };
        for log in &self.logs {
            writeln!(f, "log {}{}", log.verifier, url(&log.url))?;
        }
        for witness in &self.witnesses {
            let name = shown(&witness.name);
            writeln!(
                f,
                "witness {name} {}{}",
                witness.verifier,
                url(&witness.url)
            )?;
        }
        for group in &self.groups {
            write!(f, "group {} {}", shown(&group.name), group.threshold)?;
            for member in &group.members {
                write!(f, " {}", shown(self.name(*member)))?;
            }
            writeln!(f)?;
        }
        let quorum = self.quorum.map_or(NONE, |member| self.name(member));
        writeln!(f, "quorum {}", shown(quorum))
    }
}

impl Policy {
    /// Parses a policy file, refusing any line the specification does not allow.
    pub fn parse(bytes: &[u8]) -> Result<Policy, PolicyError> {
        if bytes.len() > POLICY_BYTES_MAX {
            let line = 1 + bytes[..POLICY_BYTES_MAX]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            return Err(PolicyError {
                line,
                problem: PolicyProblem::TooLarge {
                    bytes: bytes.len(),
                    max: POLICY_BYTES_MAX,
                },
            });
        }
        let mut parser = Parser::default();
        let mut rest = bytes;
        let mut line = 0;
        while !rest.is_empty() {
            line += 1;
            let at = |problem| PolicyError { line, problem };
            let Some(end) = rest.iter().position(|&b| b == b'\n') else {
                return Err(at(PolicyProblem::NotTerminated));
            };
            let text = &rest[..end];
            rest = &rest[end + 1..];
            if let Some(&byte) = text
                .iter()
                .find(|&&b| b != b'\t' && (b < 0x20 || b == 0x7f))
            {
                return Err(at(PolicyProblem::Character { byte }));
            }
            parser.line(line, text).map_err(at)?;
        }
        parser.finish().map_err(|problem| PolicyError {
            line: line + 1,
            problem,
        })
    }

    /// The shorthand of `check-proof --witness … --quorum K`: the `witnesses`, each named by
    /// its key name (with `#2`, `#3`… on a name seen before), and a quorum of any `quorum` of
    /// them (`none` when 0). `None` when `quorum` is more than the witnesses or a key is not a
    /// cosigner's.
    pub fn of_witnesses(witnesses: &[Verifier], quorum: usize) -> Option<Policy> {
        if quorum > witnesses.len() || !witnesses.iter().all(Verifier::is_cosigner) {
            return None;
        }
        let mut policy = Policy {
            logs: Vec::new(),
            witnesses: Vec::new(),
            groups: Vec::new(),
            quorum: None,
        };
        for (i, verifier) in witnesses.iter().enumerate() {
            let taken = witnesses[..i].iter().any(|v| v.name() == verifier.name());
            let name = match taken {
                true => format!("{}#{}", verifier.name(), i + 1),
                false => verifier.name().to_owned(),
            };
            policy.witnesses.push(PolicyWitness {
                name: name.into_bytes(),
                verifier: verifier.clone(),
                url: None,
            });
        }
        if quorum > 0 {
            policy.groups.push(Group {
                name: b"quorum".to_vec(),
                threshold: quorum,
                members: (0..witnesses.len()).map(Member::Witness).collect(),
            });
            policy.quorum = Some(Member::Group(0));
        }
        Some(policy)
    }

    /// The logs, in the file's order.
    pub fn logs(&self) -> &[PolicyLog] {
        &self.logs
    }

    /// The witnesses, in the file's order.
    pub fn witnesses(&self) -> &[PolicyWitness] {
        &self.witnesses
    }

    /// Whether the quorum is `none`: no cosignature is needed.
    pub fn needs_no_cosignature(&self) -> bool {
        self.quorum.is_none()
    }

    /// Opens the signed checkpoint `text` under the policy: it must be signed by one of the
    /// policy's logs or of `log_keys` (for a policy that leaves its logs to the context), every
    /// signature by a known key must verify (a bad one refuses it, as signed-note says), and
    /// the witnesses whose cosignatures verified must make the quorum.
    pub fn check(
        &self,
        text: &str,
        log_keys: &[Verifier],
    ) -> Result<PolicyChecked, PolicyCheckError> {
        let logs: Vec<&Verifier> = self
            .logs
            .iter()
            .map(|log| &log.verifier)
            .chain(log_keys)
            .collect();
        if logs.is_empty() {
            return Err(PolicyCheckError::NoLog);
        }
        let verifiers: Vec<Verifier> = logs
            .iter()
            .map(|v| (*v).clone())
            .chain(self.witnesses.iter().map(|w| w.verifier.clone()))
            .collect();
        let checkpoint = Checkpoint::open(text, &verifiers)?;
        let by_log = checkpoint.note().verified().any(|s| {
            logs.iter()
                .any(|log| log.name() == s.name && log.key_id() == s.key_id)
        });
        if !by_log {
            return Err(PolicyCheckError::NotSignedByLog {
                origin: checkpoint.checkpoint.origin.clone(),
            });
        }
        // `cosigned_by` leaves out the log's own signature; a witness counts when its own key
        // (name and key ID) verified as a cosigner.
        let cosigners = cosigned_by(checkpoint.note());
        let note = checkpoint.note();
        let cosigned: Vec<bool> = self
            .witnesses
            .iter()
            .map(|w| {
                let (name, key_id) = (w.verifier.name(), w.verifier.key_id());
                cosigners.iter().any(|(by, _)| by == name)
                    && note.verified().any(|s| {
                        s.name == name && s.key_id == key_id && note.verified_by_cosigner(s)
                    })
            })
            .collect();
        let witnesses: Vec<Vec<u8>> = self
            .witnesses
            .iter()
            .zip(&cosigned)
            .filter(|(_, cosigned)| **cosigned)
            .map(|(w, _)| w.name.clone())
            .collect();
        if !self.quorum_met(&cosigned) {
            return Err(PolicyCheckError::Quorum {
                cosigned: witnesses,
            });
        }
        Ok(PolicyChecked {
            checkpoint,
            witnesses,
        })
    }

    /// Whether the quorum holds when the witnesses `cosigned` (one flag per witness) did.
    fn quorum_met(&self, cosigned: &[bool]) -> bool {
        // Groups name only earlier groups, so one pass in order evaluates them all.
        let mut witnessed: Vec<bool> = Vec::with_capacity(self.groups.len());
        for group in &self.groups {
            let members = group
                .members
                .iter()
                .filter(|member| match member {
                    Member::Witness(i) => cosigned[*i],
                    Member::Group(i) => witnessed[*i],
                })
                .count();
            witnessed.push(members >= group.threshold);
        }
        match self.quorum {
            None => true,
            Some(Member::Witness(i)) => cosigned[i],
            Some(Member::Group(i)) => witnessed[i],
        }
    }

    /// The policy's name of `member`.
    fn name(&self, member: Member) -> &[u8] {
        match member {
            Member::Witness(i) => &self.witnesses[i].name,
            Member::Group(i) => &self.groups[i].name,
        }
    }
}

/// The state of a parse: what the lines so far defined, and where.
#[derive(Default)]
struct Parser {
    logs: Vec<(PolicyLog, usize)>,
    witnesses: Vec<(PolicyWitness, usize)>,
    groups: Vec<(Group, usize)>,
    /// Each member listed so far, with its group's line.
    members: Vec<(Member, usize)>,
    quorum: Option<(Option<Member>, usize)>,
}

impl Parser {
    /// Reads one line (its newline removed, its bytes checked).
    fn line(&mut self, line: usize, text: &[u8]) -> Result<(), PolicyProblem> {
        let items: Vec<&[u8]> = text
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|item| !item.is_empty())
            .collect();
        let [keyword, rest @ ..] = items.as_slice() else {
            return Ok(());
        };
        if keyword.starts_with(b"#") {
            return Ok(());
        }
        match *keyword {
            b"log" => self.log(line, rest),
            b"witness" => self.witness(line, rest),
            b"group" => self.group(line, rest),
            b"quorum" => self.quorum(line, rest),
            other => Err(PolicyProblem::Keyword(shown(other))),
        }
    }

    fn log(&mut self, line: usize, items: &[&[u8]]) -> Result<(), PolicyProblem> {
        let ([vkey] | [vkey, _]) = items else {
            return Err(items_problem("log", "a vkey and an optional URL", items));
        };
        let verifier = vkey_of(vkey)?;
        if !verifier.is_log_key() {
            return Err(PolicyProblem::LogKeyType {
                type_byte: verifier.signature_type(),
            });
        }
        let earlier = self.logs.iter().map(|(log, line)| (&log.verifier, *line));
        unique_key(earlier, &verifier, "log")?;
        room(self.logs.len(), "logs")?;
        let url = items.get(1).map(|url| url.to_vec());
        self.logs.push((PolicyLog { verifier, url }, line));
        Ok(())
    }

    fn witness(&mut self, line: usize, items: &[&[u8]]) -> Result<(), PolicyProblem> {
        let ([name, vkey] | [name, vkey, _]) = items else {
            return Err(items_problem(
                "witness",
                "a name, a vkey and an optional URL",
                items,
            ));
        };
        self.check_new_name(name)?;
        let verifier = vkey_of(vkey)?;
        if !verifier.is_cosigner() {
            return Err(PolicyProblem::WitnessKeyType {
                type_byte: verifier.signature_type(),
            });
        }
        let earlier = self.witnesses.iter().map(|(w, line)| (&w.verifier, *line));
        unique_key(earlier, &verifier, "witness")?;
        room(self.witnesses.len(), "witnesses")?;
        let witness = PolicyWitness {
            name: name.to_vec(),
            verifier,
            url: items.get(2).map(|url| url.to_vec()),
        };
        self.witnesses.push((witness, line));
        Ok(())
    }

    fn group(&mut self, line: usize, items: &[&[u8]]) -> Result<(), PolicyProblem> {
        let [name, threshold, members @ ..] = items else {
            return Err(items_problem(
                "group",
                "a name, a threshold and at least one member",
                items,
            ));
        };
        if members.is_empty() {
            return Err(items_problem(
                "group",
                "a name, a threshold and at least one member",
                items,
            ));
        }
        self.check_new_name(name)?;
        let threshold = match *threshold {
            b"all" => members.len(),
            b"any" => 1,
            digits => parse_threshold(digits)
                .filter(|k| (1..=members.len()).contains(k))
                .ok_or_else(|| PolicyProblem::Threshold {
                    text: shown(digits),
                    members: members.len(),
                })?,
        };
        let mut listed = Vec::with_capacity(members.len());
        for member in members {
            let member = self.member(member)?;
            if let Some((_, first)) = self.members.iter().find(|(m, _)| *m == member) {
                return Err(PolicyProblem::MemberTwice {
                    name: shown(self.name(member)),
                    first: *first,
                });
            }
            self.members.push((member, line));
            listed.push(member);
        }
        room(self.groups.len(), "groups")?;
        let group = Group {
            name: name.to_vec(),
            threshold,
            members: listed,
        };
        self.groups.push((group, line));
        Ok(())
    }

    fn quorum(&mut self, line: usize, items: &[&[u8]]) -> Result<(), PolicyProblem> {
        let [name] = items else {
            return Err(items_problem("quorum", "one name", items));
        };
        if let Some((_, first)) = self.quorum {
            return Err(PolicyProblem::SecondQuorum { first });
        }
        let quorum = match *name {
            NONE => None,
            name => Some(self.member(name)?),
        };
        self.quorum = Some((quorum, line));
        Ok(())
    }

    /// The witness or group an earlier line named `name`.
    fn member(&self, name: &[u8]) -> Result<Member, PolicyProblem> {
        if name == NONE {
            return Err(PolicyProblem::NoneMember);
        }
        self.defined(name)
            .map(|(member, _)| member)
            .ok_or_else(|| PolicyProblem::Undefined { name: shown(name) })
    }

    /// The member named `name` and the line defining it.
    fn defined(&self, name: &[u8]) -> Option<(Member, usize)> {
        let witness = self
            .witnesses
            .iter()
            .position(|(w, _)| w.name == name)
            .map(|i| (Member::Witness(i), self.witnesses[i].1));
        witness.or_else(|| {
            self.groups
                .iter()
                .position(|(g, _)| g.name == name)
                .map(|i| (Member::Group(i), self.groups[i].1))
        })
    }

    /// Refuses `none` and a name already defined.
    fn check_new_name(&self, name: &[u8]) -> Result<(), PolicyProblem> {
        if name == NONE {
            return Err(PolicyProblem::NameNone);
        }
        match self.defined(name) {
            Some((_, first)) => Err(PolicyProblem::NameTaken {
                name: shown(name),
                first,
            }),
            None => Ok(()),
        }
    }

    fn name(&self, member: Member) -> &[u8] {
        match member {
            Member::Witness(i) => &self.witnesses[i].0.name,
            Member::Group(i) => &self.groups[i].0.name,
        }
    }

    fn finish(self) -> Result<Policy, PolicyProblem> {
        let Some((quorum, _)) = self.quorum else {
            return Err(PolicyProblem::NoQuorum);
        };
        Ok(Policy {
            logs: self.logs.into_iter().map(|(log, _)| log).collect(),
            witnesses: self.witnesses.into_iter().map(|(w, _)| w).collect(),
            groups: self.groups.into_iter().map(|(g, _)| g).collect(),
            quorum,
        })
    }
}

/// [`PolicyProblem::Items`] for a line of `keyword` with `items` after it.
fn items_problem(keyword: &'static str, expected: &'static str, items: &[&[u8]]) -> PolicyProblem {
    PolicyProblem::Items {
        keyword,
        expected,
        found: items.len(),
    }
}

/// Refuses `verifier` when one of the `earlier` keys (each with its line) wraps the same public
/// key, whatever its name and key ID: the specification's duplicate.
fn unique_key<'a>(
    mut earlier: impl Iterator<Item = (&'a Verifier, usize)>,
    verifier: &Verifier,
    what: &'static str,
) -> Result<(), PolicyProblem> {
    match earlier.find(|(key, _)| key.public_key_bytes() == verifier.public_key_bytes()) {
        Some((_, first)) => Err(PolicyProblem::DuplicateKey { what, first }),
        None => Ok(()),
    }
}

/// Refuses one more entry past [`POLICY_ENTRIES_MAX`].
fn room(len: usize, what: &'static str) -> Result<(), PolicyProblem> {
    if len >= POLICY_ENTRIES_MAX {
        return Err(PolicyProblem::TooMany {
            what,
            max: POLICY_ENTRIES_MAX,
        });
    }
    Ok(())
}

/// A vkey item.
fn vkey_of(item: &[u8]) -> Result<Verifier, PolicyProblem> {
    let text = std::str::from_utf8(item).map_err(|_| PolicyProblem::VkeyText)?;
    Verifier::parse(text).map_err(PolicyProblem::Vkey)
}

/// A threshold written in decimal: ASCII digits, no sign, no leading zero.
fn parse_threshold(digits: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(digits).ok()?;
    let value = super::parse_decimal(text).ok()?;
    usize::try_from(value).ok()
}
