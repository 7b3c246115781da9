//! A store's reads held still: `store.snapshot()` (the log and every projection as of one
//! commit, however many commits come after) and `store.stateAt(position)` (every projection
//! replayed to its first `position` records). Each is a `Store` object whose reads go to the
//! view, so it has every query of the store; its commands throw `READ_ONLY`.

use std::sync::{Arc, Mutex, PoisonError};

use annals::projection::{ReadTables, TableSource};
use annals::{
    Direction, Position, Record, Snapshot,
    audit::Replay,
    log::{Head, StreamVersion},
};
use napi::bindgen_prelude::BigInt;
use napi_derive::napi;

use crate::convert;
use crate::crossing::Made;
use crate::erasure::Opener;
use crate::error::{coded, to_js};
use crate::packed::{PackedRecords, pack};
use crate::{ReadOptions, Store};

/// What a view reads.
pub(crate) struct View {
    /// The log as of the view's commit.
    log: Snapshot,
    /// The projections: the commit's tables, or a replay's.
    state: ReadTables,
    /// For `stateAt`, the position replayed to: the log shows the records before it only.
    end: Option<Position>,
    /// For `stateAt`, the replay's temporary file, removed when the view is closed or
    /// collected.
    _replay: Option<Replay>,
}

impl View {
    /// Runs `read` on the view's projections.
    pub(crate) fn query<T>(
        &self,
        read: impl FnOnce(&dyn TableSource) -> annals::Result<T>,
    ) -> napi::Result<T> {
        read(&self.state).map_err(to_js)
    }
}

/// The view a `Store` object reads through, if it is one; `None` once closed.
#[derive(Default)]
pub(crate) struct Pinned(Mutex<Option<Arc<View>>>);

impl Pinned {
    fn of(view: View) -> Pinned {
        Pinned(Mutex::new(Some(Arc::new(view))))
    }

    pub(crate) fn get(&self) -> Option<Arc<View>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn close(&self) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

/// `records` read in `direction`, those at or past `end` left out: a forward read stops at
/// `end`, a backward one skips to below it. An error is kept, to be returned.
pub(crate) fn before<'r>(
    records: impl Iterator<Item = annals::Result<Record>> + 'r,
    direction: Direction,
    end: Option<Position>,
) -> Box<dyn Iterator<Item = annals::Result<Record>> + 'r> {
    let Some(end) = end else {
        return Box::new(records);
    };
    let past = move |record: &annals::Result<Record>| {
        record.as_ref().is_ok_and(|record| record.position >= end)
    };
    match direction {
        Direction::Forward => Box::new(records.take_while(move |record| !past(record))),
        Direction::Backward => Box::new(records.skip_while(past)),
    }
}

impl Store {
    /// A `Store` object reading through `view`, beside this one's file.
    fn viewing(&self, view: View) -> napi::Result<Store> {
        Ok(Store {
            inner: Mutex::new(Some(self.shared()?)),
            durability: self.durability,
            transaction: crate::transaction::Open::default(),
            view: Pinned::of(view),
        })
    }

    /// Whether this object is a view (`snapshot()`, `stateAt()`).
    pub(crate) fn is_view(&self) -> bool {
        self.view.get().is_some()
    }

    /// Refuses `method` on a view, which reads only.
    pub(crate) fn not_a_view(&self, method: &str) -> napi::Result<()> {
        match self.is_view() {
            true => Err(coded(
                annals::ErrorKind::ReadOnly.code(),
                &format!("{method}(): a snapshot or stateAt view reads only; call it on the store"),
            )),
            false => Ok(()),
        }
    }

    /// `records` packed, their payloads opened (`erasure.rs`).
    fn packed(&self, records: Vec<Record>) -> napi::Result<PackedRecords> {
        self.with(|store| {
            let opened = Opener::new(store).open_all(records).map_err(to_js)?;
            Ok(pack(&opened))
        })
    }

    /// Runs `read` on the log: the view's, or as of now, with the view's end if it has one.
    pub(crate) fn read_log<T>(
        &self,
        read: impl FnOnce(&Snapshot, Option<Position>) -> annals::Result<T>,
    ) -> napi::Result<T> {
        if let Some(view) = self.view.get() {
            return read(&view.log, view.end).map_err(to_js);
        }
        self.with(|store| {
            let snapshot = store.snapshot().map_err(to_js)?;
            read(&snapshot, None).map_err(to_js)
        })
    }
}

#[napi]
impl Store {
    /// A view of the log and every projection as of the last commit: its reads and queries
    /// agree with each other however many commits come after (the commit's pages are kept
    /// until it is closed or collected). Its commands throw `READ_ONLY`.
    #[napi]
    pub fn snapshot(&self) -> napi::Result<Store> {
        self.not_a_view("snapshot")?;
        self.outside_transaction("snapshot")?;
        let log = self.with(|store| store.snapshot().map_err(to_js))?;
        let state = ReadTables::of(&log);
        self.viewing(View {
            log,
            state,
            end: None,
            _replay: None,
        })
    }

    /// A view of every projection as of the log's first `position` records, replayed from
    /// the log into a temporary file (removed when the view is closed or collected): its
    /// queries answer as the store did then, and its log reads show the records before
    /// `position` only. Past the head it throws `INVALID_ARGUMENT`.
    #[napi]
    pub fn state_at(&self, position: BigInt) -> napi::Result<Store> {
        self.not_a_view("stateAt")?;
        self.outside_transaction("stateAt")?;
        let at = Position(convert::position(&position, "position")?);
        let (log, replay) = self.with(|store| {
            let log = store.snapshot().map_err(to_js)?;
            let replay = annals::Audit::of(store)
                .state_at(at, &mut |_| {})
                .map_err(to_js)?;
            Ok((log, replay))
        })?;
        let state = replay.state().map_err(to_js)?;
        self.viewing(View {
            log,
            state,
            end: Some(at),
            _replay: Some(replay),
        })
    }

    /// Records of the whole log, from `options.from`.
    #[napi(ts_return_type = "Array<LogRecord>")]
    pub fn read_all(&self, options: Option<ReadOptions>) -> napi::Result<PackedRecords> {
        let (from, direction, limit) = convert::read_options(options)?;
        self.read_log(|log, end| {
            let from = from.unwrap_or(match direction {
                Direction::Forward => 0,
                Direction::Backward => u64::MAX,
            });
            before(log.records(Position(from), direction)?, direction, end)
                .take(limit)
                .collect::<annals::Result<Vec<_>>>()
        })
        .and_then(|records| self.packed(records))
    }

    /// Records of one stream, from version `options.from`.
    #[napi(ts_return_type = "Array<LogRecord>")]
    pub fn read_stream(
        &self,
        stream: String,
        options: Option<ReadOptions>,
    ) -> napi::Result<PackedRecords> {
        let (from, direction, limit) = convert::read_options(options)?;
        self.read_log(|log, end| {
            let from = from.unwrap_or(match direction {
                Direction::Forward => 0,
                Direction::Backward => u64::MAX,
            });
            before(
                log.stream(&stream, StreamVersion(from), direction)?,
                direction,
                end,
            )
            .take(limit)
            .collect::<annals::Result<Vec<_>>>()
        })
        .and_then(|records| self.packed(records))
    }

    /// The record at `position`, or `null` past the head.
    // One record crosses as an object, not packed: two buffers and a string cost more than
    // the one object's fields.
    #[napi(ts_return_type = "LogRecord | null")]
    pub fn get(
        &self,
        env: napi::Env,
        position: BigInt,
    ) -> napi::Result<Option<napi::bindgen_prelude::Object<'static>>> {
        let at = Position(convert::position(&position, "position")?);
        let record = self.read_log(|log, end| match end.is_some_and(|end| at >= end) {
            true => Ok(None),
            false => log.get(at),
        })?;
        let Some(record) = record else {
            return Ok(None);
        };
        self.with(|store| {
            crate::erasure::opened(store, record)
                .map_err(to_js)
                .and_then(|opened| convert::record_js(&env, opened).map(Some))
        })
    }

    /// The head: the next position and the last record's hash (inside `transaction(fn)`, with
    /// the transaction's appends; in a view, the view's).
    #[napi(ts_return_type = "Head")]
    pub fn head(&self, env: napi::Env) -> napi::Result<Made> {
        let head = match self.in_open_transaction(|session| session.head()) {
            Some(head) => head?,
            None => self.read_log(|log, end| match end {
                None => log.head(),
                Some(Position(0)) => Ok(Head::default()),
                Some(end) => Ok(Head {
                    next: end,
                    hash: log.record_hash(Position(end.0 - 1))?,
                }),
            })?,
        };
        crate::crossing::to_js(&env, &head)
    }

    /// The first position the log holds a record of: 0, or where its last cut left it.
    #[napi]
    pub fn start(&self) -> napi::Result<BigInt> {
        self.read_log(|log, _| Ok(BigInt::from(log.start().0)))
    }
}
