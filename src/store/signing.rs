//! Signed checkpoints of the log (`c2sp.org/tlog-checkpoint` in a `c2sp.org/signed-note`):
//! [`Store::checkpoint`] signs the log's tree head with the caller's key, and never signs two
//! checkpoints that contradict each other, keeping the last one it signed in the log's file
//! (`log/signed.rs`) in the transaction that allows the next.

use crate::error::{AuditError, Result, SigningError, guarded};
use crate::log::signed::{SIGNED_CHECKPOINT_KEY, SignedHead};
use crate::log::tables::META;
use crate::log::{seal_meta, unseal_meta};
use crate::tlog::{Checkpoint, Signer};
use redb::ReadableTable;

use super::Store;

impl Store {
    /// Signs a checkpoint of the whole log with `signer`, whose key name is the checkpoint's
    /// origin: the signed note's text (`c2sp.org/tlog-checkpoint`), which anyone holding the
    /// verifier key opens with [`Checkpoint::open`].
    ///
    /// ```
    /// use annals::tlog::{Checkpoint, Signer};
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// let signer = Signer::generate("example.com/log")?;
    /// let text = store.checkpoint(&signer)?;
    /// let opened = Checkpoint::open(&text, &[signer.verifier()])?;
    /// assert_eq!(opened.checkpoint.size, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, signer: &Signer) -> Result<String> {
        self.checkpoint_at(signer, None)
    }

    /// [`Store::checkpoint`] of the tree of the first `size` records (`None`: all of them).
    ///
    /// Refused, with nothing signed, when it would contradict the last checkpoint the log
    /// signed: a smaller size ([`SigningError::Behind`]), another origin
    /// ([`SigningError::Origin`]), or a tree whose root at the last signed size is not the
    /// one signed then ([`SigningError::Diverged`]). The checkpoint is recorded as the last
    /// signed one in the same transaction, committed before its text is returned: a signature
    /// the log has not recorded never leaves it.
    pub fn checkpoint_at(&self, signer: &Signer, size: Option<u64>) -> Result<String> {
        guarded(|| {
            let database = self.database()?;
            let txn = database.begin_write()?;
            // Begun while the write transaction is held, the snapshot sees the commit that the
            // transaction starts from: the same log, and no checkpoint signed in between.
            let snapshot = self.snapshot()?;
            let head = snapshot.head()?.next.0;
            let size = size.unwrap_or(head);
            if size > head {
                return Err(AuditError::SizeBeyondHead { size, head }.into());
            }
            let root = snapshot.merkle_root(size)?;
            let origin = signer.name();
            if let Some(last) = signed_in(&txn)? {
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
            let checkpoint = Checkpoint {
                origin: origin.to_owned(),
                size,
                root: root.0,
                extensions: Vec::new(),
            };
            let text = checkpoint
                .sign(signer)
                .map_err(|error| SigningError::Unsignable {
                    reason: error.to_string(),
                })?;
            let signed = SignedHead {
                origin: origin.to_owned(),
                size,
                root,
            };
            txn.open_table(META)?.insert(
                SIGNED_CHECKPOINT_KEY,
                seal_meta(SIGNED_CHECKPOINT_KEY, &signed.encode()).as_slice(),
            )?;
            txn.commit()?;
            Ok(text)
        })
        .map_err(|error| self.failed(error))
    }

    /// The last checkpoint the log signed, if any.
    pub fn signed_checkpoint(&self) -> Result<Option<SignedHead>> {
        self.snapshot()?.signed_checkpoint()
    }
}

/// The last signed checkpoint as the write transaction `txn` sees it.
fn signed_in(txn: &redb::WriteTransaction) -> Result<Option<SignedHead>> {
    let meta = txn.open_table(META)?;
    let Some(stored) = meta.get(SIGNED_CHECKPOINT_KEY)? else {
        return Ok(None);
    };
    SignedHead::decode(unseal_meta(SIGNED_CHECKPOINT_KEY, stored.value())?).map(Some)
}
