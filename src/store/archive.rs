//! Cutting the log: [`Store::archive_before`] writes a prefix of the log to an archive file,
//! makes it durable, and then, in one transaction, removes those records from the live log,
//! keeping what later work needs (`log/cut.rs`), with a record of the cut appended.
//!
//! The order is what makes it safe against a crash at any point: the archive is whole and
//! synced under its name before the transaction that removes anything begins, and that
//! transaction commits whole or not at all. A crash before the commit leaves the log as it
//! was (and an archive beside it that nothing names yet); after it, the log is cut.

use std::path::{Path, PathBuf};

use super::Store;
use crate::error::{ArchiveError, Result};
pub use crate::log::cut::{Cut, CutProjection};
use crate::log::read::Direction;
use crate::record::Position;

/// What a cut did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct ArchiveReport {
    /// The cut as its record says it.
    pub cut: Cut,
    /// The position of the cut record.
    pub record: Position,
    /// The archive file written.
    pub archive: PathBuf,
    /// How many records went to the archive.
    pub archived: u64,
}

impl Store {
    /// Archives the records before `before` (from the last cut's, or from 0) to the export
    /// file at `path` and removes them from the live log: see [`Store::archive_before_with`].
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// use annals::{ExpectedVersion, NewEvent, Position, Store};
    /// let store = Store::open(dir.path().join("log.redb"))?;
    /// for n in 0..10u64 {
    ///     store.append("s", ExpectedVersion::Any, &[NewEvent::new("k", n, "x")])?;
    /// }
    /// let report = store.archive_before(Position(6), dir.path().join("log-0.archive"))?;
    /// assert_eq!((report.archived, report.record), (6, Position(10)));
    /// let snapshot = store.snapshot()?;
    /// assert_eq!(snapshot.start(), Position(6));
    /// assert_eq!(
    ///     snapshot.get(Position(2)).unwrap_err().to_string(),
    ///     "position 2 is archived before 6 in log-0.archive"
    /// );
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn archive_before(
        &self,
        before: Position,
        path: impl AsRef<Path>,
    ) -> Result<ArchiveReport> {
        self.archive_before_with(before, path.as_ref(), &mut |_| {})
    }

    /// Cuts the log before `before`, calling `progress` with the records done so far (the
    /// archive's, then the replay's up to the cut):
    ///
    /// 1. writes records `[start, before)` (`start` the log's [start](crate::Snapshot::start))
    ///    as an export file at `path`, synced with its folder before anything is removed;
    /// 2. replays the projections up to `before` (from the last cut's snapshot) and takes
    ///    each one's digest;
    /// 3. in one transaction: keeps that replay as the snapshot, the archived records'
    ///    hashes (the Merkle tree over them), removes the segments wholly below the cut, and
    ///    appends the cut record (stream `annals.cuts`, kind `annals.cut`) naming the range,
    ///    the anchor, the archive's name and blake3, and every projection's digest.
    ///
    /// The stream index, stream versions and every idempotency key stay. Refused (with
    /// nothing written but, at worst, the archive file) when `before` is past the head, does
    /// not move the log's start forward, or passes a record a projection still reads
    /// ([`ArchiveError::Pinned`]: a run's span events until the run is pruned). The space
    /// of the removed segments is redb's free pages, reused by later appends; `compact`
    /// gives it back to the file system.
    pub fn archive_before_with(
        &self,
        before: Position,
        path: &Path,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ArchiveReport> {
        self.require_writable()?;
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .ok_or_else(|| ArchiveError::ArchiveName {
                path: path.to_owned(),
            })?
            .to_owned();
        let snapshot = self.snapshot()?;
        let head = snapshot.head()?;
        let from = snapshot.start();
        if before > head.next {
            return Err(ArchiveError::PastHead {
                position: before,
                head: head.next,
            }
            .into());
        }
        if before < from || (before == from && snapshot.cut().is_some()) {
            return Err(ArchiveError::NotForward {
                position: before,
                before: from,
            }
            .into());
        }
        let state = snapshot.state();
        for projection in self.projections.iter() {
            match snapshot.checkpoint(projection.name())? {
                Some(checkpoint) if checkpoint.next >= head.next => {}
                _ => {
                    return Err(ArchiveError::Behind {
                        projection: projection.name().to_owned(),
                    }
                    .into());
                }
            }
            if let Some(pinned) = projection.oldest_record_read(&state)?
                && pinned < before
            {
                return Err(ArchiveError::Pinned {
                    position: before,
                    projection: projection.name().to_owned(),
                    pinned,
                }
                .into());
            }
        }
        let (_, archive_digest) =
            crate::export::export_hashed(&snapshot, from, before, path, progress)?;
        let archived = before.0 - from.0;
        let replay = crate::audit::replay::replay_with(
            &snapshot,
            &self.projections,
            Some(before),
            &mut |applied| progress(archived + applied),
        )?;
        let replayed = replay.state()?;
        let mut projections = Vec::new();
        for projection in self.projections.iter() {
            projections.push(CutProjection {
                name: projection.name().to_owned(),
                version: projection.version(),
                digest: crate::projection::digest::digest(&replayed, projection.as_ref())?,
            });
        }
        projections.sort_by(|a, b| a.name.cmp(&b.name));
        let cut = Cut {
            from,
            before,
            anchor: match before.0.checked_sub(1) {
                Some(last) => snapshot.record_hash(Position(last))?,
                None => crate::hash::Digest::ZERO,
            },
            keyed: 0,
            archive: name,
            archive_digest,
            projections,
        };
        let at_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_millis() as u64);
        let mut records = if from < before {
            Some(snapshot.records(from, Direction::Forward)?)
        } else {
            None
        };
        let mut hashes = std::iter::from_fn(|| {
            records
                .as_mut()?
                .next_view()
                .map(|record| record.map(|record| (record.hash, record.idempotency_key.is_some())))
        });
        let (cut, record) = self.write(|session| session.cut(cut, &replay, &mut hashes, at_ms))?;
        Ok(ArchiveReport {
            cut,
            record,
            archive: path.to_owned(),
            archived,
        })
    }
}
