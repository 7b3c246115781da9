//! Signed checkpoints of the log (`c2sp.org/tlog-checkpoint` in a `c2sp.org/signed-note`):
//! [`crate::maintenance::Checkpoints::sign`] signs the log's tree head with the caller's key, and never signs two
//! checkpoints that contradict each other, keeping the last one it signed in the log's file
//! (`log/signed.rs`) in the transaction that allows the next.

use crate::error::{AuditError, Result, SigningError, guarded};
use crate::log::read::Snapshot;
use crate::log::seal_meta;
use crate::log::signed::{COSIGNED_CHECKPOINT_KEY, SIGNED_CHECKPOINT_KEY, SignedHead};
use crate::log::tables::META;
use crate::tlog::{Checkpoint, Signer, Verifier};

use super::Store;

impl Store {
    /// The work of [`Checkpoints::sign`].
    pub(crate) fn checkpoint(&self, signer: &Signer) -> Result<String> {
        self.checkpoint_at(signer, None)
    }

    /// The work of [`Checkpoints::sign_at`].
    pub(crate) fn checkpoint_at(&self, signer: &Signer, size: Option<u64>) -> Result<String> {
        guarded(|| {
            let database = self.database()?;
            let txn = database.begin_write()?;
            // Begun while the write transaction is held, the snapshot sees the commit that the
            // transaction starts from: the same log, and no checkpoint signed in between.
            let snapshot = self.snapshot()?;
            let origin = signer.name();
            let signed = signable(&snapshot, origin, size)?;
            let checkpoint = Checkpoint {
                origin: origin.to_owned(),
                size: signed.size,
                root: signed.root.0,
                extensions: Vec::new(),
            };
            let text = checkpoint
                .sign(signer)
                .map_err(|problem| SigningError::Unsignable { problem })?;
            META.write(&txn)?.insert(
                SIGNED_CHECKPOINT_KEY,
                seal_meta(SIGNED_CHECKPOINT_KEY, &signed.encode()).as_slice(),
            )?;
            txn.commit()?;
            Ok(text)
        })
        .map_err(|error| self.failed(error))
    }

    /// The work of [`Checkpoints::signed`].
    pub(crate) fn signed_checkpoint(&self) -> Result<Option<SignedHead>> {
        self.snapshot()?.signed_checkpoint()
    }

    /// The work of [`Checkpoints::keep_cosigned`].
    pub(crate) fn keep_cosigned_checkpoint(&self, text: &str, log_key: &Verifier) -> Result<()> {
        guarded(|| {
            let opened = Checkpoint::open(text, std::slice::from_ref(log_key))
                .map_err(|problem| SigningError::CosignedUnopened { problem })?;
            let checkpoint = &opened.checkpoint;
            let database = self.database()?;
            let txn = database.begin_write()?;
            let snapshot = self.snapshot()?;
            let root = snapshot.merkle_root(checkpoint.size)?;
            if root.0 != checkpoint.root {
                return Err(SigningError::Diverged {
                    size: checkpoint.size,
                    signed: crate::hash::Digest(checkpoint.root),
                    root,
                }
                .into());
            }
            if let Some(kept) = snapshot.cosigned_checkpoint()? {
                let kept = Checkpoint::parse_body(
                    crate::tlog::Note::parse(&kept)
                        .map_err(|error| {
                            crate::Error::undecodable_meta(
                                crate::error::MetaItem::CosignedCheckpoint,
                                error,
                            )
                        })?
                        .text(),
                )
                .map_err(|error| {
                    crate::Error::undecodable_meta(
                        crate::error::MetaItem::CosignedCheckpoint,
                        error,
                    )
                })?;
                if checkpoint.size < kept.size {
                    return Err(SigningError::Behind {
                        signed: kept.size,
                        size: checkpoint.size,
                    }
                    .into());
                }
            }
            META.write(&txn)?.insert(
                COSIGNED_CHECKPOINT_KEY,
                seal_meta(COSIGNED_CHECKPOINT_KEY, text.as_bytes()).as_slice(),
            )?;
            txn.commit()?;
            Ok(())
        })
        .map_err(|error| self.failed(error))
    }

    /// The work of [`Checkpoints::cosigned`].
    pub(crate) fn cosigned_checkpoint(&self) -> Result<Option<String>> {
        self.snapshot()?.cosigned_checkpoint()
    }

    /// The work of [`Checkpoints::check`].
    pub(crate) fn check_checkpoint(&self, origin: &str, size: Option<u64>) -> Result<SignedHead> {
        signable(&self.snapshot()?, origin, size)
    }
}

/// The tree head a checkpoint of `origin` at `size` (`None`: the head) would sign, once it
/// contradicts nothing the log signed before (`snapshot`'s last signed checkpoint): the one
/// place the rules of [`crate::maintenance::Checkpoints::sign_at`] are decided.
fn signable(snapshot: &Snapshot, origin: &str, size: Option<u64>) -> Result<SignedHead> {
    let head = snapshot.head()?.next.0;
    let size = size.unwrap_or(head);
    if size > head {
        return Err(AuditError::SizeBeyondHead { size, head }.into());
    }
    if let Some(last) = snapshot.signed_checkpoint()? {
        if last.origin != origin {
            return Err(SigningError::Origin {
                signed: last.origin,
                origin: origin.to_owned(),
            }
            .into());
        }
        if size < last.size {
            return Err(SigningError::Behind {
                signed: last.size,
                size,
            }
            .into());
        }
        let then = snapshot.merkle_root(last.size)?;
        if then != last.root {
            return Err(SigningError::Diverged {
                size: last.size,
                signed: last.root,
                root: then,
            }
            .into());
        }
    }
    Ok(SignedHead {
        origin: origin.to_owned(),
        size,
        root: snapshot.merkle_root(size)?,
    })
}

/// The signed checkpoints of a store's log: signing the tree head with the log's key (never
/// two that contradict each other), keeping a cosigned one, and checking one against the log.
///
/// ```
/// use annals::maintenance::Checkpoints;
/// use annals::tlog::{Checkpoint, Signer};
/// # let dir = tempfile::tempdir()?;
/// let store = annals::Store::open(dir.path().join("log.redb"))?;
/// let signer = Signer::generate("example.com/log")?;
/// let text = Checkpoints::of(&store).sign(&signer)?;
/// assert_eq!(Checkpoint::open(&text, &[signer.verifier()])?.checkpoint.size, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Checkpoints<'s> {
    store: &'s Store,
}

impl<'s> Checkpoints<'s> {
    /// The checkpoints of `store`'s log.
    pub fn of(store: &'s Store) -> Checkpoints<'s> {
        Checkpoints { store }
    }
}

impl Checkpoints<'_> {
    /// Signs a checkpoint of the whole log with `signer`, whose key name is the checkpoint's
    /// origin: the signed note's text (`c2sp.org/tlog-checkpoint`), which anyone holding the
    /// verifier key opens with [`Checkpoint::open`].
    ///
    /// ```
    /// use annals::tlog::{Checkpoint, Signer};
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// let signer = Signer::generate("example.com/log")?;
    /// let text = annals::maintenance::Checkpoints::of(&store).sign(&signer)?;
    /// let opened = Checkpoint::open(&text, &[signer.verifier()])?;
    /// assert_eq!(opened.checkpoint.size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sign(&self, signer: &Signer) -> Result<String> {
        self.store.checkpoint(signer)
    }

    /// [`crate::maintenance::Checkpoints::sign`] of the tree of the first `size` records (`None`: all of them).
    ///
    /// Refused, with nothing signed, when it would contradict the last checkpoint the log
    /// signed: a smaller size ([`SigningError::Behind`]), another origin
    /// ([`SigningError::Origin`]), or a tree whose root at the last signed size is not the
    /// one signed then ([`SigningError::Diverged`]). The checkpoint is recorded as the last
    /// signed one in the same transaction, committed before its text is returned: a signature
    /// the log has not recorded never leaves it.
    pub fn sign_at(&self, signer: &Signer, size: Option<u64>) -> Result<String> {
        self.store.checkpoint_at(signer, size)
    }

    /// The last checkpoint the log signed, if any.
    pub fn signed(&self) -> Result<Option<SignedHead>> {
        self.store.signed_checkpoint()
    }

    /// Keeps `text`, a checkpoint of this log signed by `log_key` and cosigned by witnesses,
    /// as the latest cosigned checkpoint (what `annals prove --checkpoint` uses when given no
    /// file), once it opens against `log_key`, its root is this log's at its size, and it is
    /// no smaller than the one kept before; otherwise nothing is kept and the refusal says why.
    pub fn keep_cosigned(&self, text: &str, log_key: &Verifier) -> Result<()> {
        self.store.keep_cosigned_checkpoint(text, log_key)
    }

    /// The latest cosigned checkpoint kept ([`crate::maintenance::Checkpoints::keep_cosigned`]), if any.
    pub fn cosigned(&self) -> Result<Option<String>> {
        self.store.cosigned_checkpoint()
    }

    /// Whether [`crate::maintenance::Checkpoints::sign_at`] would sign a checkpoint of `origin` at `size` now:
    /// `Ok` with the tree head it would sign, or its refusal. Works on a read-only store, so
    /// that a refusal can be told without opening the log writable.
    pub fn check(&self, origin: &str, size: Option<u64>) -> Result<SignedHead> {
        self.store.check_checkpoint(origin, size)
    }
}
