//! Where tables are opened: a [`Reader`] (a redb read transaction and the overlay's
//! generation published with it) or a [`Writer`] (a redb write transaction, or a command's
//! scratch layer over a reader).

use std::cell::RefCell;
use std::sync::Arc;

use redb::{ReadTransaction, WriteTransaction};

use super::overlay::{Generation, Scratch};

/// One consistent read of the tables: a redb commit and the changes published after it that
/// no drain has written into redb yet. Neither moves while it is held.
#[derive(Clone)]
pub(crate) struct Reader {
    txn: Arc<ReadTransaction>,
    overlay: Generation,
}

impl Reader {
    /// A read of redb alone.
    pub(crate) fn new(txn: Arc<ReadTransaction>) -> Self {
        Reader::over(txn, Generation::default())
    }

    /// A read of redb's commit `txn` under `overlay`, the generation published with it.
    pub(crate) fn over(txn: Arc<ReadTransaction>, overlay: Generation) -> Self {
        Reader { txn, overlay }
    }

    /// redb's read transaction.
    pub(crate) fn transaction(&self) -> &Arc<ReadTransaction> {
        &self.txn
    }

    /// The overlay's generation.
    pub(crate) fn overlay(&self) -> &Generation {
        &self.overlay
    }
}

impl From<Arc<ReadTransaction>> for Reader {
    fn from(txn: Arc<ReadTransaction>) -> Self {
        Reader::new(txn)
    }
}

/// One write to the tables: a redb write transaction, or a command's scratch layer over a
/// [`Reader`] (the overlay), which its commit publishes and a refusal drops.
pub(crate) struct Writer<'t>(pub(super) Kind<'t>);

pub(super) enum Kind<'t> {
    Redb(&'t WriteTransaction),
    Overlay {
        base: Reader,
        scratch: RefCell<Scratch>,
    },
}

impl<'t> Writer<'t> {
    /// Writes in redb's transaction `txn`.
    pub(crate) fn redb(txn: &'t WriteTransaction) -> Self {
        Writer(Kind::Redb(txn))
    }

    /// Writes into a scratch layer over `base`: nothing reaches redb until a drain.
    pub(crate) fn overlay(base: Reader) -> Writer<'static> {
        let scratch = RefCell::new(Scratch::over(base.overlay().clone()));
        Writer(Kind::Overlay { base, scratch })
    }

    /// redb's write transaction, when it writes in one.
    pub(crate) fn transaction(&self) -> Option<&'t WriteTransaction> {
        match self.0 {
            Kind::Redb(txn) => Some(txn),
            Kind::Overlay { .. } => None,
        }
    }

    /// The read it writes over, when it writes into the overlay: what was committed before it.
    pub(crate) fn base(&self) -> Option<&Reader> {
        match &self.0 {
            Kind::Redb(_) => None,
            Kind::Overlay { base, .. } => Some(base),
        }
    }

    /// The changes it made, when it writes into the overlay: what its commit publishes.
    pub(crate) fn into_scratch(self) -> Option<Scratch> {
        match self.0 {
            Kind::Redb(_) => None,
            Kind::Overlay { scratch, .. } => Some(scratch.into_inner()),
        }
    }
}
