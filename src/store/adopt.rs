//! Adopting: bringing a projection into a cut log whose last cut kept no snapshot of it at
//! its version (a projection added after the cut, or a new version of one). Its state at
//! the cut is only in the archives, so the open that meets it replays every projection from
//! position 0 through them (each record checked against the hash the log keeps), and in one
//! transaction keeps that replay as the snapshot, appends a cut of no records at the log's
//! start naming every projection's digest there (so the snapshot's digest is in the chain,
//! as a cut's is), and rebuilds the adopted projections from it through the head.
//!
//! A crash before that transaction commits leaves the log as it was; a later open adopts
//! again. Projections the last cut did keep must replay to the digests it names, or the
//! archives are refused ([`ArchiveError::SnapshotDiffers`]) and nothing is written.

use std::path::PathBuf;

use super::Store;
use crate::audit::replay::Replay;
use crate::error::{ArchiveError, Result};
use crate::log::cut::{Cut, CutProjection};
use crate::projection::Projections;
use crate::projection::table::ReadTables;
use crate::record::Position;

/// What a writable open left for [`Store::adopt`]: the projections the last cut kept no
/// snapshot of (`names`, left out of the store's running set), and every projection.
pub(super) struct Unsnapshotted {
    pub(super) names: Vec<String>,
    pub(super) all: Projections,
}

impl Store {
    /// Brings the projections of `unsnapshotted` in from `archives` (see the module's
    /// documentation), and runs every projection from then on. Nothing to adopt: only the
    /// latter. Archives needed and not given: [`ArchiveError::NotInCut`], nothing written.
    pub(super) fn adopt(
        &mut self,
        unsnapshotted: Unsnapshotted,
        archives: &[PathBuf],
    ) -> Result<()> {
        let Unsnapshotted { names, all } = unsnapshotted;
        let Some(first) = names.first() else {
            self.projections = all;
            return Ok(());
        };
        let snapshot = self.snapshot()?;
        let cut = snapshot
            .cut()
            .cloned()
            .expect("only a cut log leaves projections without a snapshot");
        if archives.is_empty() {
            return Err(ArchiveError::NotInCut {
                projection: first.clone(),
                before: cut.before,
            }
            .into());
        }
        let replay = self.replay_archived(&snapshot, &all, archives, cut.before)?;
        let state = replay.state()?;
        let projections = adopted_digests(&all, &cut, &state)?;
        let adopting = Cut {
            from: cut.before,
            projections,
            ..cut
        };
        let at_ms = super::archive::last_record_ms(&snapshot)?;
        drop(state);
        drop(snapshot);
        let _record = self.write_to_file(super::Durability::Immediate, |session| {
            session.adopt(&all, &names, &adopting, &replay, at_ms)
        })?;
        self.projections = all;
        Ok(())
    }

    /// Every projection of `all` replayed from position 0 up to `before`, the start of the cut
    /// log in `snapshot`, through `archives`, each record checked against the hash the log
    /// keeps for it, and the last archive's end checked.
    fn replay_archived(
        &self,
        snapshot: &crate::log::read::Snapshot,
        all: &Projections,
        archives: &[PathBuf],
        before: Position,
    ) -> Result<Replay> {
        let mut archived = self.archived_records(archives, Position(0))?;
        let mut replay = Replay::empty(&snapshot.reader)?;
        replay.apply(all, archived.by_ref(), Position(0), before, &mut |_| {})?;
        // The last archive's end is checked when its records run out.
        if let Some(extra) = archived.next() {
            extra?;
        }
        Ok(replay)
    }
}

/// The projections the adopting cut names, sorted by name: each of `all` at its digest in
/// `replayed` (the state at `cut`'s `before`), and each `cut` kept that `all` does not run at
/// the digest the cut named. A projection `cut` kept at its version must replay to the digest
/// it named, or the archives are refused.
fn adopted_digests(
    all: &Projections,
    cut: &Cut,
    replayed: &ReadTables,
) -> Result<Vec<CutProjection>> {
    let mut projections = Vec::new();
    for projection in all.iter() {
        let digest = crate::projection::digest::digest(replayed, projection.as_ref())?;
        let kept = cut
            .projections
            .iter()
            .find(|kept| kept.name == projection.name() && kept.version == projection.version());
        if let Some(kept) = kept
            && kept.digest != digest
        {
            return Err(ArchiveError::SnapshotDiffers {
                projection: kept.name.clone(),
                before: cut.before,
                named: kept.digest,
                replayed: digest,
            }
            .into());
        }
        projections.push(CutProjection {
            name: projection.name().to_owned(),
            version: projection.version(),
            digest,
        });
    }
    // A projection this store does not run keeps the snapshot the cut took of it.
    projections.extend(
        cut.projections
            .iter()
            .filter(|kept| all.get(&kept.name).is_none())
            .cloned(),
    );
    projections.sort_by(|a, b| a.name.cmp(&b.name));
    // Postcondition: the adopted cut names every projection the store runs, at its version,
    // so the snapshot it keeps is one the next open finds for each.
    assert!(
        all.iter().all(|projection| projections.iter().any(|named| {
            named.name == projection.name() && named.version == projection.version()
        })),
        "an adopting cut names every projection the store runs"
    );
    Ok(projections)
}
