//! Bringing projections up to date on open: a projection whose checkpoint was built by
//! another version (or that has none) is cleared and rebuilt from position 0; one that lags
//! the head is caught up. Replay goes in bounded batches, each its own transaction with its
//! checkpoints, so memory stays flat and an interrupted rebuild resumes where it stopped.
//!
//! Between those transactions a projection's checkpoint is behind the head, and that is what
//! keeps a half-rebuilt projection from being read as the state: reads of it are refused
//! (`ProjectionError::Behind`), a write first catches it up ([`lagging`], then [`catch_up`]),
//! and `verify` reports it as behind, not as damage. A rebuild killed in between is finished
//! by the next writable open, the next write or the next rebuild.

use std::ops::ControlFlow;
use std::sync::Arc;

use crate::storage::Database;

use crate::storage::{Readable, Writer};

use crate::error::Result;
use crate::log::Head;
use crate::log::read::{Direction, Snapshot};
use crate::projection::table::TransactionTables;
use crate::projection::{
    AT_HEAD, CHECKPOINTS, Checkpoint, Projection, ProjectionError, Projections, checkpoint,
    resolve_checkpoint, seal_checkpoint, set_checkpoint, unseal_checkpoint,
};
use crate::record::{Position, Record};

/// Records replayed per write transaction.
const REPLAY_BATCH_RECORDS: usize = 8192;

/// Rebuilds stale projections and catches up lagging ones. Returns the names of those it
/// leaves alone: in a cut log, a projection that needs records below the cut (stale, or
/// last applied before it) when the last cut kept no snapshot of it at its version. Its
/// state before the cut is only in the archives (`store/adopt.rs`).
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "info", name = "catch_up", skip_all)
)]
pub(crate) fn bring_up_to_date(db: &Database, projections: &Projections) -> Result<Vec<String>> {
    let txn = db.begin_write()?;
    let writer = Writer::redb(&txn);
    let head = Snapshot::head_in(&writer)?;
    let cut = crate::log::cut::last_cut_in(&writer)?;
    let mut unsnapshotted = Vec::new();
    for projection in projections.iter() {
        let current = checkpoint(&writer, projection.name())?;
        let stale = current.map(|c| c.version) != Some(projection.version());
        let below_cut = cut
            .as_ref()
            .is_some_and(|cut| current.is_some_and(|c| c.next < cut.before));
        if stale || below_cut {
            if let Some(cut) = &cut
                && cut
                    .require_snapshot(projection.name(), projection.version())
                    .is_err()
            {
                unsnapshotted.push(projection.name().to_owned());
                continue;
            }
            reset(&writer, projection.as_ref())?;
        } else {
            // A log of an earlier format, or an earlier build, made a table on first write.
            create_tables(&writer, projection.as_ref())?;
        }
    }
    // The projections left alone are pinned too: until they are adopted, this store's
    // appends (a journal's recovery, say) do not reach them.
    let running = projections.without(&unsnapshotted);
    pin_unregistered(&writer, head, &running)?;
    drop(writer);
    txn.commit()?;
    replay(db, &running, &mut |_| ControlFlow::Continue(()))?;
    Ok(unsnapshotted)
}

/// Brings `projection` in within `txn`, right after the cut record that keeps a snapshot of
/// it was kept (`store/adopt.rs`): its tables from that snapshot, then every record from the
/// cut up to the head the log `db` committed, then `appended` (the transaction's own), and
/// its checkpoint following the head.
pub(crate) fn adopt_in(
    txn: &Writer<'_>,
    db: &Database,
    projection: &Arc<dyn Projection>,
    appended: &[Record],
) -> Result<()> {
    reset(txn, projection.as_ref())?;
    // The reset left the projection at the log's start (the session holds the log's head).
    let (from, _) = crate::log::cut::start_in(txn)?;
    let snapshot = Snapshot::over(db.begin_read()?)?;
    let committed = snapshot.head()?.next;
    let tables = TransactionTables::new(txn);
    let scoped = tables.scoped(projection.as_ref());
    let mut expected = from;
    for record in snapshot.records(from, Direction::Forward)? {
        let record = record?;
        if record.position >= committed {
            break;
        }
        assert_eq!(record.position, expected, "adoption reads the log gapless");
        projection.apply(&scoped, &record)?;
        expected = Position(expected.0 + 1);
    }
    for record in appended {
        assert_eq!(
            record.position, expected,
            "adoption applies every record once"
        );
        projection.apply(&scoped, record)?;
        expected = Position(expected.0 + 1);
    }
    CHECKPOINTS.write(txn)?.insert(
        projection.name(),
        seal_checkpoint(projection.name(), (projection.version(), AT_HEAD)),
    )?;
    Ok(())
}

/// At the start of a write transaction in multi-writer mode, makes this process's view of the
/// projections true again: other processes may have appended since this one last wrote, and
/// ones that run other projections left theirs behind. Projections this store runs without
/// are pinned at the head (this transaction's appends will not reach them); its own that lag
/// (pinned by such a process) get the records they missed, read from the log as of the
/// transaction's start (the writer lock is held, so nothing newer exists).
#[cfg_attr(
    feature = "tracing",
    tracing::instrument(level = "debug", name = "catch_up", skip_all)
)]
pub(crate) fn keep_up(txn: &Writer<'_>, db: &Database, projections: &Projections) -> Result<()> {
    let head = Snapshot::head_in(txn)?;
    pin_unregistered(txn, head, projections)?;
    let checkpoints = CHECKPOINTS.write(txn)?;
    let mut lagging = Vec::new();
    for projection in projections.iter() {
        let stored = match checkpoints.get(projection.name())? {
            Some(stored) => Some(unseal_checkpoint(projection.name(), &stored.value())?),
            None => None,
        };
        match stored.map(|stored| resolve_checkpoint(stored, head.next)) {
            Some(at) if at.version == projection.version() && at.next >= head.next => {}
            Some(at) if at.version == projection.version() => lagging.push((projection, at.next)),
            // Built by another version in another process, or never: this process cannot
            // tell which tables to trust, so it refuses to write beside it.
            _ => {
                return Err(ProjectionError::VersionElsewhere {
                    name: projection.name().to_owned(),
                    version: projection.version(),
                }
                .into());
            }
        }
    }
    let Some(from) = lagging.iter().map(|(_, next)| *next).min() else {
        return Ok(());
    };
    let snapshot = Snapshot::over(db.begin_read()?)?;
    let tables = TransactionTables::new(txn);
    let mut expected = from;
    for record in snapshot.records(from, Direction::Forward)? {
        let record = record?;
        if record.position >= head.next {
            break;
        }
        // Each lagging record once, in order, up to the head the checkpoints then follow.
        assert_eq!(record.position, expected, "catch-up reads the log gapless");
        expected = Position(expected.0 + 1);
        apply_where_due(
            &tables,
            &record,
            lagging.iter().map(|(p, next)| (*p, *next)),
        )?;
    }
    assert_eq!(
        expected, head.next,
        "catch-up applies every record up to the head"
    );
    Ok(())
}

/// Applies `record` to each projection whose next position to apply it has reached.
fn apply_where_due<'a>(
    tables: &TransactionTables<'_>,
    record: &Record,
    projections: impl Iterator<Item = (&'a Arc<dyn Projection>, Position)>,
) -> Result<()> {
    for (projection, next) in projections {
        if record.position >= next {
            projection.apply(&tables.scoped(projection.as_ref()), record)?;
        }
    }
    Ok(())
}

/// Pins the checkpoint of every projection this store runs without to the head's position:
/// a checkpoint that follows the head ([`AT_HEAD`]) holds only while every append applies
/// to its projection, and appends from here on will not.
fn pin_unregistered(txn: &Writer<'_>, head: Head, projections: &Projections) -> Result<()> {
    let mut table = CHECKPOINTS.write(txn)?;
    let mut following = Vec::new();
    for entry in table.iter()? {
        let (name, value) = entry?;
        let (version, next) = unseal_checkpoint(name.value(), &value.value())?;
        if next == AT_HEAD && projections.get(name.value()).is_none() {
            following.push((name.value().to_owned(), version));
        }
    }
    for (name, version) in following {
        table.insert(
            name.as_str(),
            seal_checkpoint(&name, (version, head.next.0)),
        )?;
    }
    Ok(())
}

/// Clears `name` (or every projection) and replays the whole log into it. `progress` hears
/// the next position to apply after each of the rebuild's transactions, and may stop it there
/// (the test support's interrupted rebuild: as a kill between two transactions leaves it).
#[cfg_attr(feature = "tracing", tracing::instrument(level = "info", name = "rebuild", skip_all, fields(projection = name.unwrap_or("all"))))]
pub(crate) fn rebuild(
    db: &Database,
    projections: &Projections,
    name: Option<&str>,
    progress: &mut dyn FnMut(u64) -> ControlFlow<()>,
) -> Result<()> {
    if let Some(name) = name
        && projections.get(name).is_none()
    {
        return Err(ProjectionError::Unknown {
            name: name.to_owned(),
        }
        .into());
    }
    // A log the replay would stop in (a hole, a damaged segment or record) is refused before
    // anything is cleared, so a refused rebuild leaves the projections as they were.
    check_replayable(db)?;
    let txn = db.begin_write()?;
    let writer = Writer::redb(&txn);
    for projection in projections
        .iter()
        .filter(|p| name.is_none_or(|n| n == p.name()))
    {
        reset(&writer, projection.as_ref())?;
    }
    drop(writer);
    txn.commit()?;
    if progress(0).is_break() {
        return Ok(());
    }
    replay(db, projections, progress)
}

/// Reads the whole log as a replay would (every segment's place and digest, every record's
/// header), without applying anything.
fn check_replayable(db: &Database) -> Result<()> {
    let snapshot = Snapshot::over(db.begin_read()?)?;
    let mut records = snapshot.records(snapshot.start(), Direction::Forward)?;
    while let Some(record) = records.next_view() {
        record?;
    }
    Ok(())
}

/// Whether a projection this store runs is behind the head in `txn` (a rebuild stopped or
/// running in this process): a write must not apply its records to it, nor decide on it,
/// before it has caught up. A projection of another version is left to the open that
/// rebuilds it.
pub(crate) fn lagging(txn: &Writer<'_>, projections: &Projections) -> Result<bool> {
    let checkpoints = CHECKPOINTS.write(txn)?;
    let mut head = None;
    for projection in projections.iter() {
        let Some(stored) = checkpoints.get(projection.name())? else {
            continue;
        };
        let stored = unseal_checkpoint(projection.name(), &stored.value())?;
        if stored == (projection.version(), AT_HEAD) {
            continue;
        }
        let head = match head {
            Some(head) => head,
            None => *head.insert(Snapshot::head_in(txn)?.next),
        };
        let at = resolve_checkpoint(stored, head);
        if at.version == projection.version() && at.next < head {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Replays what the projections behind the head lack, in batches (see [`lagging`]).
pub(crate) fn catch_up(db: &Database, projections: &Projections) -> Result<()> {
    replay(db, projections, &mut |_| ControlFlow::Continue(()))
}

/// Clears `projection` back to where a replay of the log starts: empty tables at position 0,
/// or for a cut log its snapshot at the cut (refused with [`crate::error::ArchiveError::NotInCut`]
/// when the cut kept none of this version: its state before the cut is only in the archives).
fn reset(txn: &Writer<'_>, projection: &dyn Projection) -> Result<()> {
    let cut = crate::log::cut::last_cut_in(txn)?;
    if let Some(cut) = &cut {
        cut.require_snapshot(projection.name(), projection.version())?;
    }
    projection.clear(&TransactionTables::new(txn).scoped(projection))?;
    create_tables(txn, projection)?;
    if cut.is_some() {
        for table in projection.tables() {
            crate::projection::table::copy_rows_within(
                txn,
                &crate::projection::table::snapshot_table(table),
                table,
            )?;
        }
    }
    let fresh = Checkpoint {
        version: projection.version(),
        next: cut.map_or(Position(0), |cut| cut.before),
    };
    set_checkpoint(txn, projection.name(), fresh)
}

/// Creates every table of `projection` that does not exist: a projection's tables exist from
/// its checkpoint on, so that a read can tell a missing table (damage) from an empty one.
pub(crate) fn create_tables(txn: &Writer<'_>, projection: &dyn Projection) -> Result<()> {
    for table in projection.tables() {
        crate::projection::table::definition(table).create(txn)?;
    }
    Ok(())
}

/// Applies every record at or after each projection's checkpoint, in batches.
/// `progress` hears the next position to apply after each batch, and may stop the replay there.
fn replay(
    db: &Database,
    projections: &Projections,
    progress: &mut dyn FnMut(u64) -> ControlFlow<()>,
) -> Result<()> {
    loop {
        let txn = db.begin_write()?;
        let writer = Writer::redb(&txn);
        let mut nexts = Vec::new();
        for projection in projections.iter() {
            let next = checkpoint(&writer, projection.name())?.map_or(Position(0), |c| c.next);
            nexts.push(next);
        }
        let Some(&from) = nexts.iter().min() else {
            return Ok(());
        };
        let snapshot = Snapshot::over(db.begin_read()?)?;
        let head = snapshot.head()?;
        if from >= head.next {
            return Ok(());
        }
        let mut last = from;
        {
            let tables = TransactionTables::new(&writer);
            let records = snapshot.records(from, Direction::Forward)?;
            for record in records.take(REPLAY_BATCH_RECORDS) {
                let record = record?;
                // Each record once, in order: a checkpoint advances by one per record applied.
                assert!(
                    record.position == from || record.position.0 == last.0 + 1,
                    "replay met position {} after {last}",
                    record.position
                );
                apply_where_due(
                    &tables,
                    &record,
                    projections.iter().zip(nexts.iter().copied()),
                )?;
                last = record.position;
            }
        }
        let next = Position(last.0 + 1);
        for (projection, previous) in projections.iter().zip(&nexts) {
            let at = next.max(*previous);
            set_checkpoint(
                &writer,
                projection.name(),
                Checkpoint {
                    version: projection.version(),
                    next: at,
                },
            )?;
        }
        drop(writer);
        txn.commit()?;
        if progress(next.0).is_break() {
            return Ok(());
        }
    }
}
