//! The log's side of c2sp.org/tlog-witness: sign a checkpoint of the head, send it to each
//! witness with the consistency proof from the size that witness last cosigned (learnt from a
//! 409 when the log does not know it), collect the cosignatures into the checkpoint's note,
//! and keep the cosigned checkpoint in the log's file (`crate::maintenance::Checkpoints::keep_cosigned`).

use std::time::Duration;

use super::http::{Answer, Prefix, post};
pub use super::http::{ExchangeProblem, UrlProblem};
use super::serve::TLOG_SIZE_CONTENT_TYPE;
use crate::store::Store;
use crate::tlog::cosignature::cosigned_by;
use crate::tlog::note::{KeyError, NoteError};
use crate::tlog::{Checkpoint, ConsistencyFile, Note, NoteSignature, Signer, Verifier};

/// A witness to ask: its submission prefix (`http://host:port[/path]`) and its cosigner key.
#[derive(Clone, Debug)]
pub struct WitnessEndpoint {
    /// The submission prefix; `/add-checkpoint` is posted under it.
    pub url: String,
    /// The witness's verifier key (type 0x04).
    pub key: Verifier,
}

impl WitnessEndpoint {
    /// Parses `URL=VKEY`, the form the command line takes.
    pub fn parse(text: &str) -> Result<WitnessEndpoint, RequestError> {
        let bad = |problem: EndpointProblem| RequestError::Endpoint {
            given: text.to_owned(),
            problem,
        };
        let (url, vkey) = text
            .split_once('=')
            .ok_or_else(|| bad(EndpointProblem::NoEquals))?;
        Prefix::parse(url).map_err(|problem| bad(EndpointProblem::Url(problem)))?;
        let key = Verifier::parse(vkey).map_err(|error| bad(EndpointProblem::Key(error)))?;
        if !key.is_cosigner() {
            return Err(bad(EndpointProblem::LogKey {
                name: key.name().to_owned(),
            }));
        }
        Ok(WitnessEndpoint {
            url: url.to_owned(),
            key,
        })
    }
}

/// Why one witness gave no cosignature.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RequestError {
    /// A `URL=VKEY` that does not parse.
    #[error("witness {given:?}: {problem}")]
    Endpoint {
        /// What was given.
        given: String,
        /// Why it does not parse.
        problem: EndpointProblem,
    },
    /// No answer (connection, timeout, a body that is not text).
    #[error("witness {url}: {problem}")]
    Unreachable {
        /// The witness's URL.
        url: String,
        /// What happened.
        problem: ExchangeProblem,
    },
    /// The witness refused the checkpoint with a status other than 200.
    #[error("witness {url} refused the checkpoint: {status} {}", body.trim_end())]
    Refused {
        /// The witness's URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// Its body.
        body: String,
    },
    /// The witness has cosigned a larger tree of this log than the one sent: the log is behind
    /// what it showed before (restored from a backup, or another copy).
    #[error(
        "witness {url} last cosigned a tree of size {witnessed}, larger than this log's \
         checkpoint of size {size}: this log is behind a history it showed before"
    )]
    Ahead {
        /// The witness's URL.
        url: String,
        /// The size it last cosigned.
        witnessed: u64,
        /// The size sent.
        size: u64,
    },
    /// The witness answered 200 without a valid cosignature of its key on the checkpoint.
    #[error("witness {url} answered without a valid cosignature by {name}: {problem}")]
    NoCosignature {
        /// The witness's URL.
        url: String,
        /// Its key's name.
        name: String,
        /// Why.
        problem: CosignatureProblem,
    },
}

/// Why a `URL=VKEY` does not parse ([`RequestError::Endpoint`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointProblem {
    /// No `=` between the URL and the key.
    #[error("expected URL=VKEY")]
    NoEquals,
    /// The URL is not a submission prefix this client speaks to.
    #[error("{0}")]
    Url(UrlProblem),
    /// The key is not a verifier key.
    #[error("{0}")]
    Key(KeyError),
    /// A log's key (type 0x01) where a witness's cosigner key belongs.
    #[error("the key {name} is a log's (type 0x01); a witness cosigns with a type 0x04 key")]
    LogKey {
        /// The key's name.
        name: String,
    },
}

/// Why a witness's 200 answer holds no valid cosignature ([`RequestError::NoCosignature`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CosignatureProblem {
    /// The checkpoint with the answer appended is not a signed note, or a signature of the
    /// witness's key in it fails to verify.
    #[error("{0}")]
    Note(NoteError),
    /// No signature line of the witness's key in the answer.
    #[error("no line of its key in the answer")]
    NoLine,
}

/// The bounds of one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestOptions {
    /// How long one exchange with one witness may take. Default 10 s. A witness that refuses
    /// the connection (starting or restarting) is tried again within it.
    pub timeout: Duration,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions {
            timeout: Duration::from_secs(10),
        }
    }
}

/// What [`request_cosignatures`] got.
#[derive(Clone, Debug)]
pub struct Witnessed {
    /// The checkpoint's note: the log's signature, then each cosignature received.
    pub checkpoint: String,
    /// Its tree size.
    pub size: u64,
    /// The witnesses that cosigned it (their key names), in the order asked.
    pub cosigned_by: Vec<String>,
    /// The witnesses that did not, and why.
    pub failed: Vec<RequestError>,
}

/// Signs a checkpoint of `store`'s head with `signer` (as [`crate::maintenance::Checkpoints::sign`]), asks every
/// witness of `witnesses` to cosign it, all at once, and keeps the note with the cosignatures
/// received in the log's file when there is at least one. An error is the store's (the
/// checkpoint not signed, or not kept); a witness that gives no cosignature is listed in
/// [`Witnessed::failed`]. Runs on a tokio runtime (each exchange is a task).
pub async fn request_cosignatures(
    store: &Store,
    signer: &Signer,
    witnesses: &[WitnessEndpoint],
    options: RequestOptions,
) -> crate::Result<Witnessed> {
    let text = store.checkpoint(signer)?;
    let log_key = signer.verifier();
    let size = opened_size(&text, &log_key);
    let kept = store.cosigned_checkpoint()?;
    let mut results: Vec<Outcome> = vec![None; witnesses.len()];
    // The first round from the size each witness cosigned in the checkpoint kept (or 0); the
    // second, for those that answered 409, from the size they named.
    let mut pending: Vec<(usize, u64)> = witnesses
        .iter()
        .enumerate()
        .map(|(at, witness)| {
            let old = kept
                .as_deref()
                .and_then(|kept| size_cosigned_by(kept, &log_key, &witness.key))
                .filter(|&old| old <= size)
                .unwrap_or(0);
            (at, old)
        })
        .collect();
    let asking = Asking {
        store,
        text: &text,
        size,
        witnesses,
        timeout: options.timeout,
    };
    for round in 0..2 {
        pending = asking.round(round, pending, &mut results).await;
    }
    let witnessed = asking.collect(results)?;
    if !witnessed.cosigned_by.is_empty() {
        store.keep_cosigned_checkpoint(&witnessed.checkpoint, &log_key)?;
    }
    Ok(witnessed)
}

/// One witness's outcome: its cosignature, or why it gave none; `None` while it has not
/// answered.
type Outcome = Option<Result<NoteSignature, RequestError>>;

/// A checkpoint being witnessed: its note, its size and the witnesses asked.
struct Asking<'a> {
    store: &'a Store,
    text: &'a str,
    size: u64,
    witnesses: &'a [WitnessEndpoint],
    timeout: Duration,
}

impl Asking<'_> {
    /// Asks every witness of `pending` (its index, and the size it cosigned) at once, each
    /// exchange a task, and records each outcome in `results`; the witnesses to ask again
    /// from the size they named, after a 409 in the first round (`round` 0).
    async fn round(
        &self,
        round: u32,
        pending: Vec<(usize, u64)>,
        results: &mut [Outcome],
    ) -> Vec<(usize, u64)> {
        let mut exchanges = tokio::task::JoinSet::new();
        for (at, old) in pending {
            let (prefix, body) = match self.request(at, old) {
                Ok(request) => request,
                Err(error) => {
                    results[at] = Some(Err(error));
                    continue;
                }
            };
            let timeout = self.timeout;
            exchanges
                .spawn(async move { (at, post(&prefix, "/add-checkpoint", body, timeout).await) });
        }
        let mut again = Vec::new();
        while let Some(joined) = exchanges.join_next().await {
            let Ok((at, answer)) = joined else {
                // A task that panicked or was cancelled: its witness stays without an answer.
                continue;
            };
            results[at] = self.judge(round, at, answer, &mut again);
        }
        again
    }

    /// Where to post to witness `at`, and the body, with the proof from size `old`.
    fn request(&self, at: usize, old: u64) -> Result<(Prefix, String), RequestError> {
        let witness = &self.witnesses[at];
        let prefix = Prefix::parse(&witness.url).map_err(|problem| RequestError::Endpoint {
            given: witness.url.clone(),
            problem: EndpointProblem::Url(problem),
        })?;
        let body = request_body(self.store, self.text, old, self.size).map_err(|problem| {
            RequestError::Unreachable {
                url: witness.url.clone(),
                problem,
            }
        })?;
        Ok((prefix, body))
    }

    /// What witness `at`'s `answer` gives: its cosignature, a refusal, or (after a 409 in
    /// the first round naming a size not past ours) nothing yet, the witness pushed onto
    /// `again` to be asked from that size.
    fn judge(
        &self,
        round: u32,
        at: usize,
        answer: Result<Answer, ExchangeProblem>,
        again: &mut Vec<(usize, u64)>,
    ) -> Outcome {
        let witness = &self.witnesses[at];
        let answer = match answer {
            Ok(answer) => answer,
            Err(problem) => {
                return Some(Err(RequestError::Unreachable {
                    url: witness.url.clone(),
                    problem,
                }));
            }
        };
        match answer.status {
            200 => Some(cosignature(&answer, self.text, witness)),
            409 if round == 0 => match conflict_size(&answer) {
                Some(witnessed) if witnessed > self.size => Some(Err(RequestError::Ahead {
                    url: witness.url.clone(),
                    witnessed,
                    size: self.size,
                })),
                Some(witnessed) => {
                    again.push((at, witnessed));
                    None
                }
                None => Some(Err(refused(witness, &answer))),
            },
            _ => Some(Err(refused(witness, &answer))),
        }
    }

    /// The checkpoint's note with every cosignature received, in the order the witnesses
    /// were given, and the witnesses that gave none.
    fn collect(&self, results: Vec<Outcome>) -> crate::Result<Witnessed> {
        let mut note = Note::parse(self.text).map_err(|error| {
            crate::Error::undecodable_meta(crate::error::MetaItem::CosignedCheckpoint, error)
        })?;
        let mut witnessed = Witnessed {
            checkpoint: String::new(),
            size: self.size,
            cosigned_by: Vec::new(),
            failed: Vec::new(),
        };
        for (witness, result) in self.witnesses.iter().zip(results) {
            match result {
                Some(Ok(cosignature)) => {
                    note.push_signature(cosignature);
                    witnessed.cosigned_by.push(witness.key.name().to_owned());
                }
                Some(Err(error)) => witnessed.failed.push(error),
                None => witnessed.failed.push(RequestError::Unreachable {
                    url: witness.url.clone(),
                    problem: ExchangeProblem::NoAnswer,
                }),
            }
        }
        witnessed.checkpoint = note.to_text();
        Ok(witnessed)
    }
}

/// The `add-checkpoint` body for the checkpoint `text` of `size`, from `old`.
fn request_body(store: &Store, text: &str, old: u64, size: u64) -> Result<String, ExchangeProblem> {
    let path = if old == 0 || old == size {
        Vec::new()
    } else {
        store
            .snapshot()
            .and_then(|snapshot| snapshot.consistency_proof(old, size))
            .map_err(|error| ExchangeProblem::NoProof {
                old_size: old,
                cause: error.to_string(),
            })?
            .path
            .iter()
            .map(|digest| digest.0)
            .collect()
    };
    ConsistencyFile::new(old, path, text)
        .map(|file| file.to_text())
        .map_err(ExchangeProblem::Body)
}

fn refused(witness: &WitnessEndpoint, answer: &Answer) -> RequestError {
    RequestError::Refused {
        url: witness.url.clone(),
        status: answer.status,
        body: answer.body.clone(),
    }
}

/// The size in a 409's `text/x.tlog.size` body.
fn conflict_size(answer: &Answer) -> Option<u64> {
    let media = answer.content_type.as_deref()?.split(';').next()?.trim();
    if media != TLOG_SIZE_CONTENT_TYPE {
        return None;
    }
    let digits = answer.body.strip_suffix('\n')?;
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    digits.parse().ok()
}

/// The witness's cosignature in a 200's body, verified on the checkpoint: the body appended to
/// the note opens with the log's and the witness's keys (lines of other keys are ignored).
fn cosignature(
    answer: &Answer,
    text: &str,
    witness: &WitnessEndpoint,
) -> Result<NoteSignature, RequestError> {
    let fail = |problem: CosignatureProblem| RequestError::NoCosignature {
        url: witness.url.clone(),
        name: witness.key.name().to_owned(),
        problem,
    };
    let combined = format!("{text}{}", answer.body);
    let note = Note::parse(&combined).map_err(|error| fail(CosignatureProblem::Note(error)))?;
    let opened = note
        .open(std::slice::from_ref(&witness.key))
        .map_err(|error| fail(CosignatureProblem::Note(error)))?;
    if !cosigned_by(&opened)
        .iter()
        .any(|(name, _)| name == witness.key.name())
    {
        return Err(fail(CosignatureProblem::NoLine));
    }
    opened
        .verified()
        .find(|s| opened.verified_by_cosigner(s) && s.key_id == witness.key.key_id())
        .cloned()
        .ok_or_else(|| fail(CosignatureProblem::NoLine))
}

/// The size of a checkpoint the log just signed.
fn opened_size(text: &str, log_key: &Verifier) -> u64 {
    Checkpoint::open(text, std::slice::from_ref(log_key))
        .map(|opened| opened.checkpoint.size)
        .expect("the log's own checkpoint opens with its key")
}

/// The size of `kept` when `witness` cosigned it.
fn size_cosigned_by(kept: &str, log_key: &Verifier, witness: &Verifier) -> Option<u64> {
    let opened = Checkpoint::open(kept, &[log_key.clone(), witness.clone()]).ok()?;
    cosigned_by(opened.note())
        .iter()
        .any(|(name, _)| name == witness.name())
        .then_some(opened.checkpoint.size)
}
