//! Where tables are opened: a [`Reader`] (a redb read transaction and the overlay's
//! generation published with it) or a [`Writer`] (a redb write transaction, or a command's
//! scratch layer over a reader).

use std::any::Any;
use std::cell::RefCell;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};

use redb::{ReadTransaction, WriteTransaction};

use super::names::ByName;
use super::overlay::{Generation, Scratch};

/// A redb read transaction (one commit of the file) and the tables opened in it so far: a
/// commit never changes, so a table opened once in it is the same table every time, and
/// opening one in redb (a lookup in its table of tables, and the definition's check) was a
/// tenth of a command's work when every command opened a dozen.
pub(crate) struct Commit {
    txn: ReadTransaction,
    /// By name: the table redb opened (a `redb::ReadOnlyTable` of the definition's types),
    /// or `None` when the commit has no such table.
    tables: Mutex<ByName<Option<Arc<dyn Any + Send + Sync>>>>,
}

impl Commit {
    /// `txn`, shared by every read of its commit.
    pub(crate) fn shared(txn: ReadTransaction) -> Arc<Commit> {
        Arc::new(Commit {
            txn,
            tables: Mutex::default(),
        })
    }

    /// The table `name` as `open` opens it in this commit, opened once.
    pub(super) fn table<T: Any + Send + Sync>(
        &self,
        name: &str,
        open: impl FnOnce(&ReadTransaction) -> crate::error::Result<Option<T>>,
    ) -> crate::error::Result<Option<Arc<T>>> {
        let mut tables = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = tables.get(name) {
            match found {
                None => return Ok(None),
                // A name is always opened with one definition's types; another's opens anew.
                Some(table) => {
                    if let Ok(table) = Arc::clone(table).downcast::<T>() {
                        return Ok(Some(table));
                    }
                }
            }
        }
        let opened = open(&self.txn)?.map(Arc::new);
        tables.insert(
            name.to_owned(),
            opened
                .as_ref()
                .map(|table| Arc::clone(table) as Arc<dyn Any + Send + Sync>),
        );
        Ok(opened)
    }
}

impl Deref for Commit {
    type Target = ReadTransaction;

    fn deref(&self) -> &ReadTransaction {
        &self.txn
    }
}

/// One consistent read of the tables: a redb commit and the changes published after it that
/// no drain has written into redb yet. Neither moves while it is held.
#[derive(Clone)]
pub(crate) struct Reader {
    txn: Arc<Commit>,
    overlay: Generation,
}

impl Reader {
    /// A read of redb alone.
    pub(crate) fn new(txn: Arc<Commit>) -> Self {
        Reader::over(txn, Generation::default())
    }

    /// A read of redb's commit `txn` under `overlay`, the generation published with it.
    pub(crate) fn over(txn: Arc<Commit>, overlay: Generation) -> Self {
        Reader { txn, overlay }
    }

    /// redb's read transaction.
    pub(crate) fn transaction(&self) -> &Arc<Commit> {
        &self.txn
    }

    /// The overlay's generation.
    pub(crate) fn overlay(&self) -> &Generation {
        &self.overlay
    }
}

impl From<Arc<Commit>> for Reader {
    fn from(txn: Arc<Commit>) -> Self {
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
