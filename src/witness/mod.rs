//! A witness (`c2sp.org/tlog-witness`): it keeps the latest checkpoint it cosigned of each
//! log it is configured for, checks every new one against it with a consistency proof, and
//! cosigns it (`c2sp.org/tlog-cosignature`) only if it extends what it saw. A client that
//! trusts any one honest witness of a quorum cannot be shown a forked history.
//!
//! [`Witness`] is the protocol's decision, with no network in it: it takes an
//! `add-checkpoint` body and answers with cosignature lines or a [`Refusal`] carrying the
//! spec's status code. Its state is an annals log ([`state`]): one stream of cosigned
//! checkpoints per origin, and the refused requests that carried a valid log signature kept
//! as evidence. Each cosigned checkpoint is committed durably before its cosignature is
//! returned, and the size check and the commit are one step under a lock, so that two
//! concurrent requests can never roll the state back (the race the spec warns of).
//!
//! [`serve`] puts it behind HTTP (hyper); [`request`] is the log's side, asking witnesses to
//! cosign its checkpoints.

pub mod refusal;
pub mod request;
pub mod serve;
pub mod state;

mod http;

use std::collections::BTreeMap;
use std::sync::Mutex;

use sha2::{Digest as _, Sha256};

use crate::log::append::ExpectedVersion;
use crate::log::read::Direction;
use crate::record::{NewEvent, StreamVersion, check_stream};
use crate::store::Store;
use crate::tlog::{
    Checkpoint, ConsistencyFile, Cosigner, Note, Verifier, check_consistency,
    consistency::CONSISTENCY_BYTES_MAX,
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
        error: crate::LimitError,
    },
    /// No log to witness.
    #[error("no log key given: a witness needs at least one log to witness")]
    NoLogs,
    /// The state log failed.
    #[error(transparent)]
    State(#[from] crate::Error),
}

/// The latest checkpoint cosigned for one origin, as the witness holds it in memory.
#[derive(Clone, Debug)]
struct Latest {
    /// The last version of the origin's cosigned stream.
    version: StreamVersion,
    /// What it records.
    cosigned: Cosigned,
    /// Its root.
    root: [u8; 32],
}

/// A witness over its state log. Shared between threads; requests for one witness are
/// decided one at a time.
pub struct Witness {
    store: Store,
    cosigner: Cosigner,
    logs: BTreeMap<String, Vec<Verifier>>,
    latest: Mutex<BTreeMap<String, Latest>>,
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
    pub fn check_logs(logs: &[Verifier], limits: &crate::Limits) -> Result<(), WitnessError> {
        if logs.is_empty() {
            return Err(WitnessError::NoLogs);
        }
        for key in logs {
            if key.is_cosigner() {
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
    /// state in `store`, read back now.
    pub fn new(
        store: Store,
        cosigner: Cosigner,
        logs: &[Verifier],
    ) -> Result<Witness, WitnessError> {
        Witness::check_logs(logs, store.limits())?;
        let mut by_origin: BTreeMap<String, Vec<Verifier>> = BTreeMap::new();
        for key in logs {
            by_origin
                .entry(key.name().to_owned())
                .or_default()
                .push(key.clone());
        }
        let mut latest = BTreeMap::new();
        for origin in by_origin.keys() {
            if let Some(found) = read_latest(&store, origin)? {
                latest.insert(origin.clone(), found);
            }
        }
        Ok(Witness {
            store,
            cosigner,
            logs: by_origin,
            latest: Mutex::new(latest),
        })
    }

    /// The witness's cosigner name.
    pub fn name(&self) -> &str {
        self.cosigner.name()
    }

    /// The latest checkpoint cosigned for `origin`, if any.
    pub fn latest(&self, origin: &str) -> Option<Cosigned> {
        self.lock()
            .get(origin)
            .map(|latest| latest.cosigned.clone())
    }

    /// The latest cosigned checkpoint of the log whose origin hashes (SHA-256, lower-case
    /// hex) to `origin_hash`: what tlog-witness's monitoring `GET <hash>/checkpoint` serves.
    pub fn latest_by_origin_hash(&self, origin_hash: &str) -> Option<Cosigned> {
        self.lock()
            .iter()
            .find(|(origin, _)| hex(&Sha256::digest(origin.as_bytes())) == origin_hash)
            .map(|(_, latest)| latest.cosigned.clone())
    }

    /// Decides an `add-checkpoint` request (`body`, as received) at `timestamp` (POSIX
    /// seconds; 0 counts as 1): the cosignature lines to answer with, once the new state is
    /// committed, or the refusal, in the order and with the status codes tlog-witness gives.
    /// A refusal after the log's signature verified (other than a 409) is kept as evidence.
    pub fn add_checkpoint(&self, body: &[u8], timestamp: u64) -> Result<String, Refusal> {
        // tlog-witness: "the timestamp MUST NOT be zero".
        let timestamp = timestamp.max(1);
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
        let checkpoint = &opened.checkpoint;

        // From here the log's signature holds: the lock makes the check and the commit one.
        let mut latest = self.lock();
        let current = latest.get(&origin).cloned();
        let verdict = decide(&request, checkpoint, current.as_ref());
        if let Err(refusal) = verdict {
            if refusal.is_evidence() {
                self.keep_evidence(&origin, text, &refusal, current.as_ref(), timestamp)?;
            }
            return Err(refusal);
        }
        let body = checkpoint
            .body()
            .map_err(|error| Refusal::Malformed(error.to_string()))?;
        let cosignature = self
            .cosigner
            .cosign(&body, timestamp)
            .map_err(|error| Refusal::Malformed(error.to_string()))?;
        // The note kept: the log signatures that verified, then the cosignature.
        let mut note = Note::new(&body).map_err(|error| Refusal::Malformed(error.to_string()))?;
        for signature in opened.note().verified() {
            note.push_signature(signature.clone());
        }
        note.push_signature(cosignature.clone());
        let cosigned = Cosigned {
            origin: origin.clone(),
            size: checkpoint.size,
            root: crate::tlog::base64_encode(&checkpoint.root),
            timestamp,
            checkpoint: note.to_text(),
        };
        let expected = match &current {
            Some(current) => ExpectedVersion::Exact(current.version),
            None => ExpectedVersion::NoStream,
        };
        let event = NewEvent::new(
            state::COSIGNED_KIND,
            timestamp.saturating_mul(1000),
            state::encode(&cosigned),
        );
        let outcome = self
            .store
            .append(&state::cosigned_stream(&origin), expected, &[event])?;
        let crate::log::append::AppendOutcome::Appended(appended) = outcome else {
            unreachable!("a cosigned record carries no idempotency key, so it is never a duplicate")
        };
        debug_assert_eq!(appended.count, 1);
        let version = appended.first_version;
        latest.insert(
            origin,
            Latest {
                version,
                cosigned,
                root: checkpoint.root,
            },
        );
        Ok(cosignature.to_line())
    }

    /// Every piece of evidence kept, oldest first within each origin.
    pub fn evidence(&self) -> Result<Vec<Evidence>, crate::Error> {
        evidence(&self.store)
    }

    fn keep_evidence(
        &self,
        origin: &str,
        request: &str,
        refusal: &Refusal,
        current: Option<&Latest>,
        timestamp: u64,
    ) -> Result<(), Refusal> {
        let evidence = Evidence {
            origin: origin.to_owned(),
            status: refusal.status(),
            reason: refusal.to_string(),
            request: request.to_owned(),
            latest_size: current.map_or(0, |c| c.cosigned.size),
            latest_root: current.map_or_else(
                || crate::tlog::base64_encode(&empty_root()),
                |c| c.cosigned.root.clone(),
            ),
        };
        // The same request refused in the same state is kept once: the key is the
        // payload's hash, which no timestamp enters.
        let payload = state::encode(&evidence);
        let key = format!("evidence:{}", hex(&Sha256::digest(&payload)));
        let event = NewEvent::new(
            state::EVIDENCE_KIND,
            timestamp.saturating_mul(1000),
            payload,
        )
        .with_idempotency_key(key);
        // A duplicate (the same evidence kept before) is as good as an append.
        let _kept = self.store.append(
            &state::evidence_stream(origin),
            ExpectedVersion::Any,
            &[event],
        )?;
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Latest>> {
        // A panic while holding the lock cannot leave the map half-updated: it is replaced
        // whole per origin, after the commit.
        self.latest
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Every piece of evidence kept in a witness's state log, oldest first within each origin.
pub fn evidence(store: &Store) -> Result<Vec<Evidence>, crate::Error> {
    let snapshot = store.snapshot()?;
    let mut out = Vec::new();
    for record in snapshot.records(crate::Position(0), Direction::Forward)? {
        let record = record?;
        if record.kind == state::EVIDENCE_KIND {
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
    let latest_size = current.map_or(0, |c| c.cosigned.size);
    if request.old_size != latest_size {
        return Err(Refusal::Conflict {
            latest: latest_size,
        });
    }
    let old = Checkpoint {
        origin: checkpoint.origin.clone(),
        size: latest_size,
        root: current.map_or_else(empty_root, |c| c.root),
        extensions: Vec::new(),
    };
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

/// The last cosigned checkpoint of `origin` in the state log.
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
    let root = crate::tlog::base64_hash(&cosigned.root)
        .map_err(|_| damaged("its root is not base64 of 32 bytes".into()))?;
    if cosigned.origin != origin {
        return Err(damaged(format!("it is of origin {:?}", cosigned.origin)));
    }
    Ok(Some(Latest {
        version,
        cosigned,
        root,
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
                std::thread::spawn(move || witness.add_checkpoint(&request(0, size), 1))
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
                .add_checkpoint(&request(0, 7), 1_700_000_000)
                .unwrap();
            assert!(line.starts_with("— witness.example/w "));
        }
        let witness = witness(dir.path());
        assert_eq!(witness.latest("example.com/log").unwrap().size, 7);
        assert!(matches!(
            witness.add_checkpoint(&request(0, 5), 2),
            Err(Refusal::Conflict { latest: 7 })
        ));
        assert!(matches!(
            witness.add_checkpoint(&request(7, 5), 2),
            Err(Refusal::Malformed(_))
        ));
        assert_eq!(witness.evidence().unwrap().len(), 1);
    }
}
