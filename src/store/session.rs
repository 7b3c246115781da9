//! The write session: one redb write transaction in which appends go to the log and every
//! new record is applied to every projection before the commit.

use std::cell::OnceCell;
use std::ops::Bound;

use crate::storage::Database;

use crate::command::{Command, Precondition};
use crate::error::Result;
use crate::error::guarded;
use crate::log::Head;
use crate::log::append::{AppendOutcome, ExpectedVersion, LogEnd, LogWriter};
use crate::log::cut::{ArchivedRecord, CUT_KIND, CUT_STREAM, Cut};
use crate::log::read::{Direction, Snapshot, missing};
use crate::projection::Projections;
use crate::projection::table::{RawRow, TableSource, TransactionTables};
use crate::record::limits::Limits;
use crate::record::{NewEvent, Position, Record};
use crate::storage::Writer;
use crate::store::{PartialStep, StoreError};

/// Appends and commands inside one write transaction. Later commands see the effects of
/// earlier ones.
///
/// It is the [`TableSource`] its commands decide on: the projection tables as of this point
/// of the transaction, and the log's records, committed or appended in it.
pub struct WriteSession<'txn> {
    txn: &'txn Writer<'txn>,
    log: LogWriter<'txn>,
    tables: TransactionTables<'txn>,
    projections: &'txn Projections,
    limits: &'txn Limits,
    appended: bool,
    /// The database, for a read of the records committed before this transaction when it
    /// writes in redb (through the overlay, that is the writer's base); `None` for a reader
    /// applying a journal's frames into an overlay of its own.
    database: Option<&'txn Database>,
    /// Those records, opened on the first read of one: the commit this transaction follows
    /// (the write lock is held, so no other commit comes between).
    committed: OnceCell<Snapshot>,
    /// The head when the transaction began: the position of `written`'s first record.
    first_written: Position,
    /// The records this transaction appended, in order: the log writer keeps them in a
    /// segment not yet stored, so rows pointing at them are read back from here.
    written: Vec<Record>,
    /// The first failure that left part of a change in the transaction: once set, the
    /// transaction cannot commit, whatever the work does with the error.
    partial: Option<(PartialStep, String)>,
    /// Whether a cut was made in this transaction (its tables are no record's).
    cut_made: bool,
    /// Whether every projection's checkpoint is known to follow the head already (the caller
    /// saw so with no commit to the file since): the finish need not read them.
    following: bool,
    /// The log whose key store seals the commands' personal fields (`Command::sealed`);
    /// `None` for a store with no file, which refuses them.
    key_store: Option<&'txn std::path::Path>,
}

impl<'txn> WriteSession<'txn> {
    pub(crate) fn open(
        txn: &'txn Writer<'txn>,
        database: Option<&'txn Database>,
        projections: &'txn Projections,
        limits: &'txn Limits,
        known_end: Option<LogEnd>,
    ) -> Result<Self> {
        let log = LogWriter::open_after(txn, known_end)?;
        Ok(WriteSession {
            txn,
            first_written: log.head().next,
            log,
            tables: TransactionTables::new(txn),
            projections,
            limits,
            appended: false,
            database,
            committed: OnceCell::new(),
            written: Vec::new(),
            partial: None,
            cut_made: false,
            following: false,
            key_store: None,
        })
    }

    /// The records committed before this transaction, opened on the first call.
    fn committed(&self) -> Result<&Snapshot> {
        if let Some(snapshot) = self.committed.get() {
            return Ok(snapshot);
        }
        // Through the overlay, what was committed is the writer's base; in redb, the last
        // commit (the write lock is held: no other comes between).
        let opened = guarded(|| match (self.txn.base(), self.database) {
            (Some(base), _) => Snapshot::over(base.clone()),
            (None, Some(database)) => Snapshot::over(database.begin_read()?),
            (None, None) => Err(crate::error::Error::ReadOnly),
        })?;
        Ok(self.committed.get_or_init(|| opened))
    }

    /// `field` sealed for its subject ([`Command::sealed`]): refused for a store with no key
    /// store, a subject that is not one or one erased; the subject's key made if it has none.
    fn seal_field(&self, field: crate::command::PersonalField<'_>) -> Result<Vec<u8>> {
        let log = self
            .key_store
            .ok_or(crate::error::ErasureError::NoKeyStore)?;
        super::erasure::seal_field(log, self.committed()?, field)
    }

    /// Lets the session seal commands' personal fields with the key store of the log at
    /// `log`.
    pub(crate) fn seal_with(&mut self, log: &'txn std::path::Path) {
        self.key_store = Some(log);
    }

    /// Tells the session that every projection's checkpoint follows the head as it begins
    /// (see [`Finished::following`]): its finish does not read them again.
    pub(crate) fn checkpoints_follow(&mut self) {
        self.following = true;
    }

    /// The head as of this point of the transaction.
    pub fn head(&self) -> Head {
        self.log.head()
    }

    /// The projection tables as of this point of the transaction, for reading only: rows
    /// are written by the projections' `apply`, from the records appended. The records rows
    /// point at are read from the log as of this point too.
    pub fn state(&self) -> &dyn TableSource {
        self
    }

    /// A raw append (see [`crate::Store::append`]): kinds owned by a projection are refused.
    pub fn append(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        self.projections.check_raw_kinds(stream, events)?;
        self.append_applied(stream, expected, events)
    }

    /// Appends and applies, with no check of who owns the kinds.
    fn append_applied(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        let mut records = Vec::with_capacity(events.len());
        let before = self.head().next;
        let outcome = self
            .log
            .append(stream, expected, events, self.limits, &mut records)
            .inspect_err(|error| self.left_partial_unless_refused(PartialStep::Append, error))?;
        // The records appended are the events given, in order, at the head: none, for a
        // duplicate's retry or a version refused.
        assert!(
            records.is_empty() || records.len() == events.len(),
            "an append takes all of its events or none"
        );
        assert_eq!(
            self.head().next.0,
            before.0 + records.len() as u64,
            "the head moves past exactly the records appended"
        );
        debug_assert!(
            records
                .iter()
                .enumerate()
                .all(|(index, record)| record.position.0 == before.0 + index as u64),
            "the records appended take the positions from the head on"
        );
        for record in &records {
            // The record is in the log, and a projection may have written part of its rows.
            self.projections
                .apply(&self.tables, record)
                .inspect_err(|error| self.left_partial(PartialStep::Apply, error))?;
        }
        self.appended |= !records.is_empty();
        self.written.extend(records);
        Ok(outcome)
    }

    /// The record appended with idempotency `key`, as of this point of the transaction
    /// (a personal append's retry reuses its envelope).
    pub(crate) fn record_of_idempotency_key(&self, key: &str) -> Result<Option<Record>> {
        match self.log.idempotency_position(key)? {
            Some(position) => Ok(Some(self.log_record(position)?)),
            None => Ok(None),
        }
    }

    /// Refuses unless `guard` holds as of this point of the transaction (a
    /// [`crate::leases::LeaseGuard`]: unless its token is its resource's live token).
    pub fn guard(&self, guard: &(impl Precondition + ?Sized)) -> Result<()> {
        guard.check(&self.tables)
    }

    /// Appends the events of a projection's own kinds without a command: for replaying
    /// records of an older schema and for tests of upcasting. Not for everyday use: it skips
    /// the decisions that keep the projection's rules.
    #[doc(hidden)]
    pub fn append_unchecked(
        &mut self,
        stream: &str,
        expected: ExpectedVersion,
        events: &[NewEvent],
    ) -> Result<AppendOutcome> {
        self.append_applied(stream, expected, events)
    }

    /// Appends records sealed elsewhere verbatim (each must continue the log exactly: its position, `prev` and hashes) and applies
    /// them to every projection: how an import writes. On `Err`, the transaction is dropped.
    pub fn append_sealed(&mut self, records: &[Record]) -> Result<()> {
        let mut written = Vec::with_capacity(records.len());
        self.log
            .append_sealed(records, &mut written)
            .inspect_err(|error| {
                self.left_partial_unless_refused(PartialStep::AppendSealed, error)
            })?;
        for record in &written {
            // A sealed record comes from a file, not from a `decide`: a payload its domain
            // cannot decode is that record's fault, named at its position.
            self.projections
                .apply(&self.tables, record)
                .inspect_err(|error| self.left_partial(PartialStep::Apply, error))
                .map_err(|error| match error {
                    crate::error::Error::UndecodableEvent {
                        kind,
                        schema,
                        problem,
                    } => crate::log::append::AppendError::NotSealable {
                        position: record.position,
                        problem: crate::log::append::SealProblem::Undecodable {
                            kind,
                            schema,
                            cause: problem.to_string(),
                        },
                    }
                    .into(),
                    other => other,
                })?;
        }
        self.appended |= !written.is_empty();
        self.written.extend(written);
        Ok(())
    }

    /// Cuts the log before `cut.before` (`crate::archive::Archives::archive_before`, which wrote the archive
    /// first): keeps `replay`'s tables as the snapshot, the archived records' hashes
    /// (`archived`, of `cut.from .. cut.before`), the archived records a projection still
    /// reads (`read`: those before `cut.from` stay, the others come with `archived`) and the
    /// cut (its `keyed` counted here: the keys still indexed for records before the cut, none
    /// when `drop_keys` drops them), and appends the cut record at `at_ms`; the segments
    /// wholly below the cut go afterwards, in steps of their own (`Store::finish_cut`). Runs before
    /// anything else is appended in the transaction. Returns the cut as recorded and its
    /// record's position.
    pub(crate) fn cut(
        &mut self,
        mut cut: Cut,
        replay: &crate::audit::replay::Replay,
        read: &std::collections::BTreeSet<u64>,
        archived: &mut dyn Iterator<Item = Result<ArchivedRecord>>,
        drop_keys: bool,
        at_ms: u64,
    ) -> Result<(Cut, Position)> {
        debug_assert!(
            self.txn.transaction().is_some(),
            "a cut is written in redb's own transaction (Store::write_to_file)"
        );
        self.cut_made = true;
        let position = self.head().next;
        let (start, keyed) = crate::log::cut::start_in(self.txn)?;
        if start != cut.from || (cut.before == start && start > Position(0)) {
            return Err(crate::error::ArchiveError::NotForward {
                position: cut.before,
                before: start,
            }
            .into());
        }
        let kept = (|| {
            replay.copy_into(
                self.projections,
                self.txn,
                crate::projection::table::snapshot_table,
            )?;
            crate::log::cut::prune_kept(self.txn, read)?;
            let counted = crate::log::cut::keep_archived(self.txn, cut.from, cut.before, archived)?;
            cut.keyed = if drop_keys {
                self.log.drop_keys_before(cut.before)?;
                0
            } else {
                keyed + counted
            };
            crate::log::cut::keep_cut(self.txn, position, &cut)?;
            self.log.cut_before(cut.before);
            Ok(())
        })();
        self.append_cut(kept, &cut, at_ms)?;
        Ok((cut, position))
    }

    /// Brings in the projections named in `adopted` (of `all`, the rest being this session's)
    /// at a cut log's start (`store/adopt.rs`): keeps `replay`'s tables (every projection of
    /// `all` replayed up to the start through the archives) as the snapshot, keeps `cut` (a
    /// cut of no records at the last cut's `before`, naming every projection's digest there),
    /// appends its record at `at_ms`, and rebuilds each adopted projection from the snapshot
    /// through the head. Runs before anything else is appended in the transaction. Returns
    /// the cut record's position.
    pub(crate) fn adopt(
        &mut self,
        all: &crate::projection::Projections,
        adopted: &[String],
        cut: &Cut,
        replay: &crate::audit::replay::Replay,
        at_ms: u64,
    ) -> Result<Position> {
        debug_assert!(
            self.txn.transaction().is_some(),
            "a cut is written in redb's own transaction (Store::write_to_file)"
        );
        self.cut_made = true;
        let position = self.head().next;
        let (start, _) = crate::log::cut::start_in(self.txn)?;
        if start != cut.before || cut.from != cut.before {
            return Err(crate::error::ArchiveError::NotForward {
                position: cut.before,
                before: start,
            }
            .into());
        }
        let kept = (|| {
            replay.copy_into(all, self.txn, crate::projection::table::snapshot_table)?;
            crate::log::cut::keep_cut(self.txn, position, cut)
        })();
        self.append_cut(kept, cut, at_ms)?;
        for name in adopted {
            let projection = all
                .get(name)
                .expect("an adopted projection is one of the store's");
            let database = self.database.ok_or(crate::error::Error::ReadOnly)?;
            super::catch_up::adopt_in(self.txn, database, projection, &self.written)
                .inspect_err(|error| self.left_partial(PartialStep::Apply, error))?;
        }
        Ok(position)
    }

    /// Appends the record of `cut` at `at_ms` once what it keeps is `kept`; a failure of
    /// either leaves the transaction partial.
    fn append_cut(&mut self, kept: Result<()>, cut: &Cut, at_ms: u64) -> Result<()> {
        if let Err(error) = kept {
            self.left_partial(PartialStep::Append, &error);
            return Err(error);
        }
        let event = NewEvent::new(CUT_KIND, at_ms, cut.encode());
        let _appended = self
            .append_applied(CUT_STREAM, ExpectedVersion::Any, &[event])
            .inspect_err(|error| self.left_partial(PartialStep::Append, error))?;
        Ok(())
    }

    /// The root of the Merkle tree of every record, including this transaction's.
    pub fn merkle_root(&self) -> crate::hash::Digest {
        self.log.merkle_root()
    }

    /// Decides `command` against the tables as they stand and appends what it decides.
    pub fn execute<C: Command>(&mut self, command: &C) -> Result<C::Outcome> {
        let sealed = command.sealed(&mut |field| self.seal_field(field))?;
        let decision = sealed.as_ref().unwrap_or(command).decide(&*self)?;
        let before = self.head();
        for emit in &decision.emits {
            if let Err(error) = self.append_applied(&emit.stream, emit.expected, &emit.events) {
                // An append refused after the command's first ones went in: half a command.
                if self.head() != before {
                    self.left_partial(PartialStep::Command, &error);
                }
                return Err(error);
            }
        }
        Ok(decision.outcome)
    }

    /// Notes that `error` left part of a change in the transaction, unless one already did.
    fn left_partial(&mut self, step: PartialStep, error: &crate::error::Error) {
        self.partial
            .get_or_insert_with(|| (step, error.to_string()));
    }

    /// [`Self::left_partial`], unless `error` is an append refused before it wrote a byte.
    fn left_partial_unless_refused(&mut self, step: PartialStep, error: &crate::error::Error) {
        if !matches!(error, crate::error::Error::Append(_)) {
            self.left_partial(step, error);
        }
    }

    /// The refusal to commit this transaction, if a failure left part of a change in it.
    pub(crate) fn partial(&self) -> Option<crate::error::Error> {
        self.partial.as_ref().map(|(step, cause)| {
            StoreError::PartialWrite {
                step: *step,
                cause: cause.clone(),
            }
            .into()
        })
    }

    /// Writes what the log keeps pending and advances every checkpoint to the head. Must run
    /// before the commit (`Store::write_with` does).
    pub(crate) fn finish(self) -> Result<Finished> {
        if let Some(partial) = self.partial() {
            return Err(partial);
        }
        let head = self.head();
        let end = self.log.finish()?;
        // A session told that the checkpoints follow trusts it; debug builds check it (a read
        // that fails here is left to the commit's own reads to report).
        debug_assert!(
            !self.following || self.projections.all_follow(self.txn).unwrap_or(true),
            "a session told that every checkpoint follows the head finds them so"
        );
        let following = match (self.appended, self.following) {
            (_, true) => true,
            (true, false) => self.projections.advance_checkpoints(self.txn)?,
            (false, false) => false,
        };
        Ok(Finished {
            appended: self.appended,
            head,
            end,
            journalable: !self.cut_made,
            written: self.written,
            following,
        })
    }
}

/// What a finished session leaves its commit.
pub(crate) struct Finished {
    /// Whether anything was appended.
    pub(crate) appended: bool,
    /// The head after the transaction's appends.
    pub(crate) head: Head,
    /// The log's end as the commit will leave it, when known.
    pub(crate) end: Option<LogEnd>,
    /// Whether the transaction is its records alone (so a journal frame of them is the whole
    /// of it): false for a cut, which also writes tables no record gives.
    pub(crate) journalable: bool,
    /// The records appended, in order.
    pub(crate) written: Vec<Record>,
    /// Whether every projection's checkpoint followed the head before this transaction
    /// (nothing to advance), so that, with no commit to the file since, the next need not
    /// read them.
    pub(crate) following: bool,
}

impl TableSource for WriteSession<'_> {
    fn get_raw(&self, table: &str, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.tables.get_raw(table, key)
    }

    fn range_raw(
        &self,
        table: &str,
        lower: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        direction: Direction,
        limit: usize,
    ) -> Result<Vec<RawRow>> {
        self.tables.range_raw(table, lower, upper, direction, limit)
    }

    fn log_record(&self, position: Position) -> Result<Record> {
        let Some(index) = position.0.checked_sub(self.first_written.0) else {
            let committed = self.committed()?;
            return guarded(|| committed.get(position))?.ok_or_else(|| missing(position));
        };
        usize::try_from(index)
            .ok()
            .and_then(|index| self.written.get(index))
            .cloned()
            .ok_or_else(|| missing(position))
    }

    fn row_count(&self, table: &str) -> Result<u64> {
        self.tables.row_count(table)
    }
}
