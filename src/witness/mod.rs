//! A witness (`c2sp.org/tlog-witness`): it keeps the latest checkpoint it cosigned of each
//! log it is configured for, checks every new one against it with a consistency proof, and
//! cosigns it (`c2sp.org/tlog-cosignature`) only if it extends what it saw. A client that
//! trusts any one honest witness of a quorum cannot be shown a forked history.
//!
//! [`Witness`] is the protocol's decision, with no network in it: it takes an
//! `add-checkpoint` body and answers with cosignature lines or a [`Refusal`] carrying the
//! spec's status code. Its state is an annals log ([`state`]): one stream of cosigned
//! checkpoints per origin, and the proofs that a log forked ([`Evidence`]). Each cosigned
//! checkpoint is committed durably before its cosignature is returned, and the size check and
//! the commit are one step under a lock, so that two concurrent requests can never roll the
//! state back (the race the spec warns of).
//!
//! It must never store what anyone but the log could make: a refused request is kept only
//! when the log's own signatures prove a fork (`tlog::proves_fork`), stripped to those
//! signatures, once per pair of checkpoints, and within an [`EvidenceBudget`]. A checkpoint
//! equal to the latest one is cosigned again without a record.
//!
//! [`serve`] puts it behind HTTP (hyper); [`request`] is the log's side, asking witnesses to
//! cosign its checkpoints.

pub mod refusal;
pub mod request;
pub mod serve;
pub mod state;

mod http;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Mutex;

use sha2::{Digest as _, Sha256};

use crate::log::append::{AppendOutcome, ExpectedVersion};
use crate::log::read::Direction;
use crate::record::{NewEvent, StreamVersion, check_stream};
use crate::store::Store;
use crate::tlog::{
    Checkpoint, ConsistencyFile, Cosigner, Note, OpenedCheckpoint, Verifier, check_consistency,
    consistency::CONSISTENCY_BYTES_MAX, proves_fork,
};

pub use refusal::Refusal;
pub use state::{Cosigned, Evidence};

/// Why a witness could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WitnessError {
    /// A log key given as a witness's own (type 0x04) key.
    #[error("the log key {name} is a cosigner key (type 0x04), not a log's")]
    CosignerAsLog {
        /// Its name.
        name: String,
    },
    /// A log key whose name is too long to name the witness's streams.
    #[error("the log origin {name:?} is too long for the witness's state: {error}")]
    Origin {
        /// The origin.
        name: String,
        /// Why.
        error: crate::error::LimitError,
    },
    /// No log to witness.
    #[error("no log key given: a witness needs at least one log to witness")]
    NoLogs,
    /// The state log failed.
    #[error(transparent)]
    State(#[from] crate::Error),
}

/// Bytes of evidence a witness stores in all, by default.
pub const EVIDENCE_BYTES_MAX: u64 = 16 << 20;

/// Bytes of evidence a witness stores from one client (IP address) while it runs, by default.
pub const EVIDENCE_CLIENT_BYTES_MAX: u64 = 1 << 20;

const _: () = assert!(EVIDENCE_CLIENT_BYTES_MAX <= EVIDENCE_BYTES_MAX);

/// How many bytes of evidence (JSON payloads) a witness stores. Evidence past either bound
/// is not stored; the request is refused as it would be anyway.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EvidenceBudget {
    /// In all, across restarts (what the state holds). Default [`EVIDENCE_BYTES_MAX`].
    pub bytes_max: u64,
    /// From one client's IP address since the witness started. Default
    /// [`EVIDENCE_CLIENT_BYTES_MAX`].
    pub client_bytes_max: u64,
}

impl Default for EvidenceBudget {
    fn default() -> Self {
        EvidenceBudget {
            bytes_max: EVIDENCE_BYTES_MAX,
            client_bytes_max: EVIDENCE_CLIENT_BYTES_MAX,
        }
    }
}

/// The latest checkpoint cosigned for one origin, as the witness holds it in memory.
#[derive(Clone, Debug)]
struct Latest {
    /// The last version of the origin's cosigned stream.
    version: StreamVersion,
    /// What it records.
    cosigned: Cosigned,
    /// Its checkpoint: size and root are what a later one is checked against.
    checkpoint: Checkpoint,
    /// Its note with the log's signature lines only: what evidence keeps of it.
    signed: String,
}

/// What the lock guards: the latest checkpoints and the evidence bytes stored.
#[derive(Debug, Default)]
struct State {
    latest: BTreeMap<String, Latest>,
    evidence_bytes: u64,
    client_evidence_bytes: BTreeMap<IpAddr, u64>,
}

/// A witness over its state log. Shared between threads; requests for one witness are
/// decided one at a time.
pub struct Witness {
    store: Store,
    cosigner: Cosigner,
    logs: BTreeMap<String, Vec<Verifier>>,
    budget: EvidenceBudget,
    state: Mutex<State>,
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Witness")
            .field("cosigner", &self.cosigner)
            .field("logs", &self.logs.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Witness {
    /// Refuses what [`Witness::new`] refuses of `logs` before it reads its state: none given,
    /// a cosigner's key given as a log's, an origin too long for its state's streams under
    /// `limits`. A caller can tell so before it opens the state log writable.
    pub fn check_logs(
        logs: &[Verifier],
        limits: &crate::record::limits::Limits,
    ) -> Result<(), WitnessError> {
        if logs.is_empty() {
            return Err(WitnessError::NoLogs);
        }
        for key in logs {
            // An ML-DSA-44 key (type 0x06) signs a log's checkpoints and a witness's alike.
            if !key.is_log_key() {
                return Err(WitnessError::CosignerAsLog {
                    name: key.name().to_owned(),
                });
            }
            for stream in [
                state::cosigned_stream(key.name()),
                state::evidence_stream(key.name()),
            ] {
                check_stream(&stream, limits).map_err(|error| WitnessError::Origin {
                    name: key.name().to_owned(),
                    error,
                })?;
            }
        }
        Ok(())
    }

    /// A witness cosigning with `cosigner` the checkpoints of the logs whose verifier keys
    /// are `logs` (each key's name is the log's origin; several keys may share one), its
    /// state in `store`, read back now, storing evidence within the default budget.
    pub fn new(
        store: Store,
        cosigner: Cosigner,
        logs: &[Verifier],
    ) -> Result<Witness, WitnessError> {
        Witness::with_budget(store, cosigner, logs, EvidenceBudget::default())
    }

    /// [`Witness::new`] storing evidence within `budget`.
    pub fn with_budget(
        store: Store,
        cosigner: Cosigner,
        logs: &[Verifier],
        budget: EvidenceBudget,
    ) -> Result<Witness, WitnessError> {
        Witness::check_logs(logs, store.limits())?;
        let mut by_origin: BTreeMap<String, Vec<Verifier>> = BTreeMap::new();
        for key in logs {
            by_origin
                .entry(key.name().to_owned())
                .or_default()
                .push(key.clone());
        }
        let mut state = State::default();
        for origin in by_origin.keys() {
            if let Some(found) = read_latest(&store, origin)? {
                state.latest.insert(origin.clone(), found);
            }
        }
        state.evidence_bytes = evidence(&store)?
            .iter()
            .map(|kept| state::encode(kept).len() as u64)
            .sum();
        Ok(Witness {
            store,
            cosigner,
            logs: by_origin,
            budget,
            state: Mutex::new(state),
        })
    }

    /// The witness's cosigner name.
    pub fn name(&self) -> &str {
        self.cosigner.name()
    }

    /// The latest checkpoint cosigned for `origin`, if any.
    pub fn latest(&self, origin: &str) -> Option<Cosigned> {
        self.lock()
            .latest
            .get(origin)
            .map(|latest| latest.cosigned.clone())
    }

    /// The latest cosigned checkpoint of the log whose origin hashes (SHA-256, lower-case
    /// hex) to `origin_hash`: what tlog-witness's monitoring `GET <hash>/checkpoint` serves.
    pub fn latest_by_origin_hash(&self, origin_hash: &str) -> Option<Cosigned> {
        self.lock()
            .latest
            .iter()
            .find(|(origin, _)| hex(&Sha256::digest(origin.as_bytes())) == origin_hash)
            .map(|(_, latest)| latest.cosigned.clone())
    }

    /// Decides an `add-checkpoint` request (`body`, as received from `client`) at `timestamp`
    /// (POSIX seconds; 0 counts as 1): the cosignature lines to answer with, once the new state
    /// is committed, or the refusal, in the order and with the status codes tlog-witness gives.
    /// Whatever the answer, a checkpoint that proves with the latest cosigned one that the log
    /// forked is kept as [`Evidence`] (within the budget, `client`'s part of it included).
    pub fn add_checkpoint(
        &self,
        client: IpAddr,
        body: &[u8],
        timestamp: u64,
    ) -> Result<String, Refusal> {
        // tlog-witness: "the timestamp MUST NOT be zero".
        let timestamp = timestamp.max(1);
        let (request, opened) = self.open_request(body)?;
        let checkpoint = &opened.checkpoint;
        let origin = request.checkpoint().origin.clone();

        // From here the log's signature holds: the lock makes the check and the commit one.
        let mut state = self.lock();
        let current = state.latest.get(&origin).cloned();
        if let Some(current) = &current {
            // The path counts only from the cosigned size; at equal sizes none is needed.
            let path: &[[u8; 32]] = if request.old_size == current.checkpoint.size {
                &request.path
            } else {
                &[]
            };
            if proves_fork(&current.checkpoint, checkpoint, path) {
                self.keep_evidence(&mut state, client, current, &opened, path, timestamp)?;
            }
        }
        decide(&request, checkpoint, current.as_ref())?;
        let body = checkpoint
            .body()
            .map_err(|error| Refusal::Malformed(error.to_string()))?;
        let cosignature = self
            .cosigner
            .cosign(&body, timestamp)
            .map_err(|error| Refusal::Malformed(error.to_string()))?;
        if current
            .as_ref()
            .is_some_and(|current| current.checkpoint.size == checkpoint.size)
        {
            // The checkpoint cosigned already (decide held the root equal): nothing changes,
            // so nothing is stored, however often it is replayed.
            return Ok(cosignature.to_line());
        }
        // The note kept: the log signatures that verified, then the cosignature.
        let mut note = log_signed(&opened)?;
        let signed = note.to_text();
        note.push_signature(cosignature.clone());
        let cosigned = Cosigned {
            origin,
            size: checkpoint.size,
            root: crate::tlog::base64_encode(&checkpoint.root),
            timestamp,
            checkpoint: note.to_text(),
        };
        self.commit_cosigned(&mut state, current.as_ref(), cosigned, checkpoint, signed)?;
        Ok(cosignature.to_line())
    }

    /// The request `body` parsed, and its checkpoint opened with the keys of its origin: the
    /// refusal of a body too large, not UTF-8, malformed, of an origin not witnessed, or not
    /// signed by the log.
    fn open_request(&self, body: &[u8]) -> Result<(ConsistencyFile, OpenedCheckpoint), Refusal> {
        if body.len() > CONSISTENCY_BYTES_MAX {
            return Err(Refusal::Malformed(format!(
                "the body is {} bytes, more than the {CONSISTENCY_BYTES_MAX} a request can be",
                body.len()
            )));
        }
        let text = std::str::from_utf8(body)
            .map_err(|_| Refusal::Malformed("the body is not UTF-8".into()))?;
        let request =
            ConsistencyFile::parse(text).map_err(|error| Refusal::Malformed(error.to_string()))?;
        let origin = request.checkpoint().origin.clone();
        let keys = self
            .logs
            .get(&origin)
            .ok_or_else(|| Refusal::UnknownOrigin(origin.clone()))?;
        let opened = Checkpoint::open_for_origin(request.checkpoint_text(), &origin, keys, &[])
            .map_err(|error| Refusal::Forbidden(error.to_string()))?;
        Ok((request, opened))
    }

    /// Appends `cosigned` to its origin's stream, expecting the version `current` names, and
    /// makes it the latest of that origin (`signed`: the note with the log's signatures).
    fn commit_cosigned(
        &self,
        state: &mut State,
        current: Option<&Latest>,
        cosigned: Cosigned,
        checkpoint: &Checkpoint,
        signed: String,
    ) -> Result<(), Refusal> {
        // A witness's cosigned sizes only grow: `decide` refused any other.
        assert!(
            current.is_none_or(|current| current.checkpoint.size < checkpoint.size),
            "a new cosigned checkpoint of {:?} grows the tree",
            cosigned.origin
        );
        let expected = match current {
            Some(current) => ExpectedVersion::Exact(current.version),
            None => ExpectedVersion::NoStream,
        };
        let event = NewEvent::new(
            state::COSIGNED_KIND,
            cosigned.timestamp.saturating_mul(1000),
            state::encode(&cosigned),
        );
        let stream = state::cosigned_stream(&cosigned.origin);
        let outcome = self.store.append(&stream, expected, &[event])?;
        let AppendOutcome::Appended(appended) = outcome else {
            unreachable!("a cosigned record carries no idempotency key, so it is never a duplicate")
        };
        debug_assert_eq!(appended.count, 1);
        state.latest.insert(
            cosigned.origin.clone(),
            Latest {
                version: appended.first_version,
                cosigned,
                checkpoint: checkpoint.clone(),
                signed,
            },
        );
        Ok(())
    }

    /// Every piece of evidence kept, oldest first within each origin.
    pub fn evidence(&self) -> Result<Vec<Evidence>, crate::Error> {
        evidence(&self.store)
    }

    /// Stores that `conflicting` (with `path` from `current`'s size) proves a fork, once per
    /// pair and within the budget.
    fn keep_evidence(
        &self,
        state: &mut State,
        client: IpAddr,
        current: &Latest,
        conflicting: &OpenedCheckpoint,
        path: &[[u8; 32]],
        timestamp: u64,
    ) -> Result<(), Refusal> {
        let evidence = Evidence {
            origin: current.checkpoint.origin.clone(),
            cosigned: current.signed.clone(),
            conflicting: log_signed(conflicting)?.to_text(),
            proof: path
                .iter()
                .map(|hash| crate::tlog::base64_encode(hash))
                .collect(),
        };
        let payload = state::encode(&evidence);
        let bytes = payload.len() as u64;
        let client_bytes = state
            .client_evidence_bytes
            .get(&client)
            .copied()
            .unwrap_or(0);
        if state.evidence_bytes.saturating_add(bytes) > self.budget.bytes_max
            || client_bytes.saturating_add(bytes) > self.budget.client_bytes_max
        {
            return Ok(());
        }
        // One record per pair: the key is the hash of the two sizes and roots, which neither
        // signature lines, nor extension lines, nor the timestamp enter.
        let (old, new) = (&current.checkpoint, &conflicting.checkpoint);
        let pair = format!(
            "{}\n{}\n{}\n{}\n{}\n",
            old.origin,
            old.size,
            crate::tlog::base64_encode(&old.root),
            new.size,
            crate::tlog::base64_encode(&new.root)
        );
        let key = format!("fork:{}", hex(&Sha256::digest(pair.as_bytes())));
        let event = NewEvent::new(state::FORK_KIND, timestamp.saturating_mul(1000), payload)
            .with_idempotency_key(key);
        let outcome = self.store.append(
            &state::evidence_stream(&old.origin),
            ExpectedVersion::Any,
            &[event],
        )?;
        // A duplicate (the pair kept before) adds nothing and costs nothing.
        if let AppendOutcome::Appended(_) = outcome {
            state.evidence_bytes += bytes;
            *state.client_evidence_bytes.entry(client).or_default() += bytes;
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the map half-updated: it is replaced
        // whole per origin, after the commit, and the evidence bytes after theirs.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Every piece of evidence kept in a witness's state log, oldest first within each origin.
/// Records of [`state::LEGACY_REFUSAL_KIND`] (whole refused requests, kept before evidence
/// meant a proven fork) are not read: nothing in them was authenticated beyond one signature.
pub fn evidence(store: &Store) -> Result<Vec<Evidence>, crate::Error> {
    let snapshot = store.snapshot()?;
    let mut out = Vec::new();
    for record in snapshot.records(crate::Position(0), Direction::Forward)? {
        let record = record?;
        if record.kind == state::FORK_KIND {
            let evidence: Evidence = serde_json::from_slice(&record.payload).map_err(|error| {
                crate::Error::undecodable_meta(
                    crate::error::MetaItem::WitnessRecord {
                        position: record.position.0,
                    },
                    format!("not JSON of evidence: {error}"),
                )
            })?;
            out.push(evidence);
        }
    }
    Ok(out)
}

/// The checks after the signature, in the spec's order: the old size, the state, the proof.
fn decide(
    request: &ConsistencyFile,
    checkpoint: &Checkpoint,
    current: Option<&Latest>,
) -> Result<(), Refusal> {
    if request.old_size > checkpoint.size {
        return Err(Refusal::Malformed(format!(
            "the old size {} is larger than the checkpoint's size {}",
            request.old_size, checkpoint.size
        )));
    }
    let latest_size = current.map_or(0, |c| c.checkpoint.size);
    if request.old_size != latest_size {
        return Err(Refusal::Conflict {
            latest: latest_size,
        });
    }
    let old = current.map_or_else(
        || Checkpoint {
            origin: checkpoint.origin.clone(),
            size: 0,
            root: empty_root(),
            extensions: Vec::new(),
        },
        |c| c.checkpoint.clone(),
    );
    if old.size == checkpoint.size && old.root != checkpoint.root {
        return Err(Refusal::Inconsistent(format!(
            "a checkpoint of size {} was cosigned with another root",
            old.size
        )));
    }
    check_consistency(&old, checkpoint, &request.path)
        .map_err(|error| Refusal::Inconsistent(error.to_string()))
}

fn empty_root() -> [u8; 32] {
    Sha256::digest([]).into()
}

/// The note of `opened` with the log's signature lines only (those that verified against the
/// log's keys), in their order: what is kept of a checkpoint the log signed.
fn log_signed(opened: &OpenedCheckpoint) -> Result<Note, Refusal> {
    let mut note =
        Note::new(opened.note().text()).map_err(|error| Refusal::Malformed(error.to_string()))?;
    for signature in opened.note().verified() {
        note.push_signature(signature.clone());
    }
    Ok(note)
}

/// The last cosigned checkpoint of `origin` in the state log. Its note is the log's signature
/// lines then the witness's cosignature, as [`Witness::add_checkpoint`] wrote it; the log's
/// keys are not asked again, so a witness restarted with another key of the log reads it.
fn read_latest(store: &Store, origin: &str) -> Result<Option<Latest>, WitnessError> {
    let stream = state::cosigned_stream(origin);
    let snapshot = store.snapshot()?;
    let Some(version) = snapshot.stream_version(&stream)? else {
        return Ok(None);
    };
    let record = snapshot
        .stream(&stream, version, Direction::Forward)?
        .next()
        .transpose()?
        .ok_or_else(|| {
            crate::Error::corrupt_meta(
                crate::error::MetaItem::WitnessStream {
                    stream: stream.clone(),
                },
                crate::error::MetaFault::Missing,
            )
        })?;
    let damaged = |what: String| {
        WitnessError::State(crate::Error::undecodable_meta(
            crate::error::MetaItem::WitnessRecord {
                position: record.position.0,
            },
            what,
        ))
    };
    let cosigned: Cosigned = serde_json::from_slice(&record.payload)
        .map_err(|error| damaged(format!("not a cosigned checkpoint: {error}")))?;
    if cosigned.origin != origin {
        return Err(damaged(format!("it is of origin {:?}", cosigned.origin)));
    }
    let note =
        Note::parse(&cosigned.checkpoint).map_err(|error| damaged(format!("its note: {error}")))?;
    let checkpoint = Checkpoint::parse_body(note.text())
        .map_err(|error| damaged(format!("its checkpoint: {error}")))?;
    if checkpoint.origin != origin
        || checkpoint.size != cosigned.size
        || crate::tlog::base64_encode(&checkpoint.root) != cosigned.root
    {
        return Err(damaged(
            "its note is of another origin, size or root than it records".into(),
        ));
    }
    let Some((_cosignature, log_lines)) = note.signatures().split_last() else {
        return Err(damaged("its note has no signature".into()));
    };
    let mut signed =
        Note::new(note.text()).map_err(|error| damaged(format!("its note: {error}")))?;
    for signature in log_lines {
        signed.push_signature(signature.clone());
    }
    Ok(Some(Latest {
        version,
        cosigned,
        checkpoint,
        signed: signed.to_text(),
    }))
}

/// Lower-case hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{LogTreeHasher, TreeHasher, root_of_leaves};
    use crate::tlog::Signer;

    const CLIENT: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn log() -> Signer {
        Signer::from_seed("example.com/log", [1; 32]).unwrap()
    }

    fn witness(dir: &std::path::Path) -> Witness {
        let store = Store::open(dir.join("w.redb")).unwrap();
        let cosigner = Cosigner::from_seed("witness.example/w", [2; 32]).unwrap();
        Witness::new(store, cosigner, &[log().verifier()]).unwrap()
    }

    /// An `add-checkpoint` body from `old` (with no proof) to the first `size` of 20 leaves.
    fn request(old: u64, size: u64) -> Vec<u8> {
        let leaves: Vec<_> = (0..20u64)
            .map(|i| LogTreeHasher.leaf(&i.to_le_bytes()))
            .collect();
        let checkpoint = Checkpoint {
            origin: "example.com/log".into(),
            size,
            root: root_of_leaves(&LogTreeHasher, &leaves[..size as usize]).0,
            extensions: Vec::new(),
        }
        .sign(&log())
        .unwrap();
        format!("old {old}\n\n{checkpoint}").into_bytes()
    }

    #[test]
    fn of_two_requests_from_the_same_old_size_exactly_one_is_cosigned() {
        let dir = tempfile::tempdir().unwrap();
        let witness = std::sync::Arc::new(witness(dir.path()));
        let answers: Vec<_> = [5u64, 8]
            .into_iter()
            .map(|size| {
                let witness = witness.clone();
                std::thread::spawn(move || witness.add_checkpoint(CLIENT, &request(0, size), 1))
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|thread| thread.join().unwrap())
            .collect();
        let cosigned: Vec<_> = answers.iter().filter(|answer| answer.is_ok()).collect();
        assert_eq!(cosigned.len(), 1, "{answers:?}");
        let latest = witness.latest("example.com/log").unwrap().size;
        for answer in &answers {
            if let Err(refusal) = answer {
                assert!(matches!(refusal, Refusal::Conflict { latest: l } if *l == latest));
            }
        }
    }

    #[test]
    fn a_restarted_witness_reads_back_its_latest_checkpoint_and_refuses_to_roll_back() {
        let dir = tempfile::tempdir().unwrap();
        {
            let witness = witness(dir.path());
            let line = witness
                .add_checkpoint(CLIENT, &request(0, 7), 1_700_000_000)
                .unwrap();
            assert!(line.starts_with("— witness.example/w "));
        }
        let witness = witness(dir.path());
        assert_eq!(witness.latest("example.com/log").unwrap().size, 7);
        assert!(matches!(
            witness.add_checkpoint(CLIENT, &request(0, 5), 2),
            Err(Refusal::Conflict { latest: 7 })
        ));
        assert!(matches!(
            witness.add_checkpoint(CLIENT, &request(7, 5), 2),
            Err(Refusal::Malformed(_))
        ));
        // An older checkpoint the log signed is no fork of the one cosigned.
        assert_eq!(witness.evidence().unwrap().len(), 0);
    }

    /// An `add-checkpoint` body from `old` (with no proof) to a checkpoint of `size` with
    /// `root`, signed by the log.
    fn fork(old: u64, size: u64, root: [u8; 32]) -> Vec<u8> {
        let checkpoint = Checkpoint {
            origin: "example.com/log".into(),
            size,
            root,
            extensions: Vec::new(),
        }
        .sign(&log())
        .unwrap();
        format!("old {old}\n\n{checkpoint}").into_bytes()
    }

    fn budgeted(dir: &std::path::Path, budget: EvidenceBudget) -> Witness {
        let store = Store::open(dir.join("w.redb")).unwrap();
        let cosigner = Cosigner::from_seed("witness.example/w", [2; 32]).unwrap();
        Witness::with_budget(store, cosigner, &[log().verifier()], budget).unwrap()
    }

    #[test]
    fn forks_are_kept_once_per_pair_within_each_clients_budget_and_in_all() {
        let clients: Vec<IpAddr> = (1..=3u8)
            .map(|i| IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, i)))
            .collect();
        let refuse = |witness: &Witness, client: IpAddr, old: u64, root: u8| {
            // 422 from the cosigned size, 409 from another: kept either way.
            let answer = witness.add_checkpoint(client, &fork(old, 7, [root; 32]), 3);
            let status = answer.as_ref().err().map(Refusal::status);
            assert_eq!(status, Some(if old == 7 { 422 } else { 409 }), "{answer:?}");
        };
        // One fork's record, measured: every fork below is as long (a root and a signature
        // of fixed lengths).
        let measured = tempfile::tempdir().unwrap();
        let witness = budgeted(measured.path(), EvidenceBudget::default());
        witness.add_checkpoint(CLIENT, &request(0, 7), 2).unwrap();
        refuse(&witness, CLIENT, 7, 1);
        let kept = witness.evidence().unwrap();
        assert_eq!(kept.len(), 1);
        assert!(kept[0].proof.is_empty());
        let record = state::encode(&kept[0]).len() as u64;

        let dir = tempfile::tempdir().unwrap();
        let budget = EvidenceBudget {
            bytes_max: 3 * record,
            client_bytes_max: 2 * record,
        };
        let witness = budgeted(dir.path(), budget);
        witness.add_checkpoint(CLIENT, &request(0, 7), 2).unwrap();
        // The first client: two forks fit its part; a third does not, nor does a replay add.
        for root in [1, 2, 3, 1, 2] {
            refuse(&witness, clients[0], 7, root);
        }
        assert_eq!(witness.evidence().unwrap().len(), 2);
        // The second: one more fills the whole budget. The old line does not matter.
        for root in [4, 5] {
            refuse(&witness, clients[1], 0, root);
        }
        let kept = witness.evidence().unwrap();
        let roots: Vec<[u8; 32]> = kept
            .iter()
            .map(|e| {
                let note = Note::parse(&e.conflicting).unwrap();
                Checkpoint::parse_body(note.text()).unwrap().root
            })
            .collect();
        assert_eq!(roots, [[1; 32], [2; 32], [4; 32]]);
        drop(witness);
        // Restarted, it counts what it holds: a third client stores nothing more.
        let witness = budgeted(dir.path(), budget);
        refuse(&witness, clients[2], 7, 6);
        assert_eq!(witness.evidence().unwrap().len(), 3);
    }
}
