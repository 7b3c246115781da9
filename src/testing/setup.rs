//! Setup steps that check their outcome. A test that prepares a log by appending, leasing or
//! enqueueing needs each step to have done what it asked: a `Duplicate` append, a refused
//! lease or an enqueue that found its row already there leaves the log unlike the one the
//! test means to check, and a discarded outcome (`let _ = store.execute(..)`) would pass
//! silently. [`ExpectDone::expect_done`] panics naming the outcome instead. Never used outside
//! the tests.

use std::fmt::Debug;

use crate::audit::VerifyReport;
use crate::consumers::ConsumerOutcome;
use crate::export::ExportSummary;
use crate::ingest::IngestOutcome;
use crate::leases::{LaneOutcome, LeaseOutcome};
use crate::outbox::{OutboxOutcome, PullOutcome, SweepOutcome};
use crate::registry::{FuelOutcome, InstanceOutcome, SettingOutcome};
use crate::runs::{RunCommandOutcome, SpanCommandOutcome};
use crate::{AppendOutcome, ExpectedVersion, NewEvent, Store, log::append::Appended};

/// An outcome that says whether the step did what it asked: appended, granted, enqueued,
/// started; not refused, not a duplicate, not a sweep that found nothing.
pub trait ExpectDone: Debug + Sized {
    /// Whether the step changed the log as asked.
    fn is_done(&self) -> bool;

    /// Panics, naming the outcome, unless the step did what it asked.
    #[track_caller]
    fn expect_done(self) {
        assert!(
            self.is_done(),
            "a setup step did not do what it asked: {self:?}"
        );
    }
}

/// The fresh append in `outcome`; panics naming the outcome when it was a duplicate.
#[track_caller]
pub fn appended(outcome: AppendOutcome) -> Appended {
    match outcome {
        AppendOutcome::Appended(appended) => appended,
        other => panic!("expected a fresh append, got {other:?}"),
    }
}

/// Appends to `store` until its head reaches `records`: streams `s-0` to `s-4` in turn, every
/// tenth append of three events, every third event with an idempotency key (`key-<n>-<i>`),
/// each event of kind `test.event` at the append's number in ms, its payload `<n>/<i>`. Every
/// append is checked to be fresh.
pub fn fill_interleaved(store: &Store, records: u64) {
    let mut written = store.head().expect("the head").next.0;
    let mut n = written;
    while written < records {
        let stream = format!("s-{}", n % 5);
        let count = if n % 10 == 9 { 3 } else { 1 };
        let events: Vec<NewEvent> = (0..count)
            .map(|i| {
                let event = NewEvent::new("test.event", n, format!("{n}/{i}").into_bytes());
                if (n + i).is_multiple_of(3) {
                    event.with_idempotency_key(format!("key-{n}-{i}"))
                } else {
                    event
                }
            })
            .collect();
        store
            .append(&stream, ExpectedVersion::Any, &events)
            .expect("append")
            .expect_done();
        written += count;
        n += 1;
    }
}

impl ExpectDone for AppendOutcome {
    fn is_done(&self) -> bool {
        matches!(self, AppendOutcome::Appended(_))
    }
}

impl ExpectDone for LeaseOutcome {
    fn is_done(&self) -> bool {
        !matches!(self, LeaseOutcome::Refused { .. })
    }
}

impl ExpectDone for LaneOutcome {
    fn is_done(&self) -> bool {
        matches!(self, LaneOutcome::Done { .. })
    }
}

impl ExpectDone for OutboxOutcome {
    /// An `AlreadyEnqueued` row was there before: the step added nothing.
    fn is_done(&self) -> bool {
        matches!(
            self,
            OutboxOutcome::Enqueued { .. } | OutboxOutcome::Updated { .. }
        )
    }
}

impl ExpectDone for PullOutcome {
    /// A claim that found no row, or an ack with a refused row, is not what a setup asks for.
    fn is_done(&self) -> bool {
        match self {
            PullOutcome::Claimed { rows, .. } => !rows.is_empty(),
            PullOutcome::Acked { acked, refused } => !acked.is_empty() && refused.is_empty(),
            PullOutcome::Refused { .. } => false,
        }
    }
}

impl ExpectDone for SweepOutcome {
    /// A sweep a test runs to expire or prune rows must have found some.
    fn is_done(&self) -> bool {
        match self {
            SweepOutcome::Expired { rows, .. } => !rows.is_empty(),
            SweepOutcome::Pruned { keys, .. } => !keys.is_empty(),
        }
    }
}

impl ExpectDone for SpanCommandOutcome {
    fn is_done(&self) -> bool {
        !matches!(self, SpanCommandOutcome::Refused { .. })
    }
}

impl ExpectDone for RunCommandOutcome {
    /// A close or prune that found no run did nothing.
    fn is_done(&self) -> bool {
        match self {
            RunCommandOutcome::Closed { runs } => !runs.is_empty(),
            RunCommandOutcome::Pruned { runs, .. } => !runs.is_empty(),
            RunCommandOutcome::Refused { .. } => false,
            _ => true,
        }
    }
}

impl ExpectDone for ConsumerOutcome {
    fn is_done(&self) -> bool {
        matches!(self, ConsumerOutcome::Checkpointed { .. })
    }
}

impl ExpectDone for IngestOutcome {
    fn is_done(&self) -> bool {
        matches!(self, IngestOutcome::Accepted { .. })
    }
}

impl ExpectDone for InstanceOutcome {
    /// `Unchanged` and `Missing` left the registry as it was.
    fn is_done(&self) -> bool {
        matches!(
            self,
            InstanceOutcome::Added { .. }
                | InstanceOutcome::Updated { .. }
                | InstanceOutcome::Removed { .. }
        )
    }
}

impl ExpectDone for SettingOutcome {
    fn is_done(&self) -> bool {
        matches!(self, SettingOutcome::Set { .. })
    }
}

impl ExpectDone for FuelOutcome {
    /// A charge is never refused: it is recorded or the command fails with an error.
    fn is_done(&self) -> bool {
        true
    }
}

impl ExpectDone for ExportSummary {
    /// An export is never refused: it is written or fails with an error, and an empty range
    /// (a log's whole history already held elsewhere) is a valid export.
    fn is_done(&self) -> bool {
        true
    }
}

impl ExpectDone for VerifyReport {
    fn is_done(&self) -> bool {
        self.is_sound()
    }
}

/// The next position of the log at `path` (its record count), read from a read-only open
/// beside whatever else has it open.
pub fn head_of(path: &std::path::Path) -> u64 {
    Store::open_read_only(path)
        .unwrap()
        .snapshot()
        .unwrap()
        .head()
        .unwrap()
        .next
        .0
}

/// A demo log of about `records` records (every domain writes) made at `path`, and its records
/// in order: the source the import and export tests damage or copy.
pub fn demo_log_at(path: &std::path::Path, records: u64) -> crate::Result<Vec<crate::Record>> {
    let store = Store::open(path)?;
    crate::demo::run(&store, records, |_| {})?;
    store.read_all(crate::Position(0), crate::Direction::Forward, usize::MAX)
}

/// Writes a log at `path` of `commits` commits of `records_per_commit` records each, to the
/// streams `even` and `odd` in turn (each record of kind `test.event`, its payload the
/// commit's and the record's number), so that segments start at every multiple of
/// `records_per_commit`; returns its records.
pub fn log_of_commits(
    path: &std::path::Path,
    commits: u64,
    records_per_commit: u64,
) -> Vec<crate::Record> {
    let store = Store::open(path).unwrap();
    for commit in 0..commits {
        let events: Vec<_> = (0..records_per_commit)
            .map(|i| NewEvent::new("test.event", 1, vec![commit as u8, i as u8]))
            .collect();
        let stream = if commit % 2 == 0 { "even" } else { "odd" };
        store
            .append(stream, ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
    }
    store
        .read_all(crate::Position(0), crate::Direction::Forward, usize::MAX)
        .unwrap()
}

/// Leases over more resources than one page of a table walk holds, so that verify's
/// comparison with the replay walks several pages on each side.
pub const PAGED_RESOURCES: u32 = 700;

/// Writes a log at `path` holding [`PAGED_RESOURCES`] leases (`resource-0000` onwards, held
/// by `a`), verified sound.
pub fn paged_lease_log(path: &std::path::Path) {
    let store = Store::open(path).unwrap();
    store
        .write(|session| {
            for i in 0..PAGED_RESOURCES {
                let acquire = crate::leases::LeaseCommand::Acquire {
                    resource: format!("resource-{i:04}"),
                    holder: "a".into(),
                    ttl_ms: 100,
                    now_ms: 0,
                };
                session.execute(&acquire)?.expect_done();
            }
            Ok(())
        })
        .unwrap();
    assert!(store.verify().unwrap().is_sound());
}

/// A store at `path` (created) whose commits stay in its journal, never drained into the file
/// while it is open, holding 40 appends over the streams `s0` to `s2` (payloads `payload
/// <i>`): a log whose file alone lacks every commit, for the tests of what a backup or reader
/// takes from the journal.
pub fn journal_only_log(path: &std::path::Path) -> Store {
    let options = crate::StoreOptions {
        create: true,
        journal: Some(crate::journal::JournalOptions {
            checkpoint_ms: u64::MAX,
            checkpoint_bytes: u64::MAX,
        }),
        ..crate::StoreOptions::default()
    };
    let store = Store::open_with(path, options).expect("open a journaled store");
    assert!(store.journaled(), "the default mode journals");
    for i in 0..40 {
        let event = NewEvent::new("test.event", 1, format!("payload {i}").into_bytes());
        store
            .append(&format!("s{}", i % 3), ExpectedVersion::Any, &[event])
            .expect("append")
            .expect_done();
    }
    store
}
