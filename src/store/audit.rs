//! The work of auditors and operators on a store's projections and history, on types of
//! their own so that [`Store`] stays the door that opens, writes and reads: [`Audit`]
//! (verify, check a saved head, history, state as of a position) and [`Rebuild`].

use super::Store;
use crate::audit::extends::Extension;
use crate::audit::verify::VerifyReport;
use crate::error::Result;
use crate::log::Head;
use crate::record::{Position, Record};

/// What an auditor asks of a store: whether its log and projections are sound, whether it
/// extends a head kept elsewhere, an entity's history, and the state as of a position.
///
/// ```
/// # let dir = tempfile::tempdir()?;
/// let store = annals::Store::open(dir.path().join("log.redb"))?;
/// let report = annals::Audit::of(&store).verify()?;
/// assert!(report.is_sound());
/// # Ok::<(), annals::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Audit<'s> {
    store: &'s Store,
}

impl<'s> Audit<'s> {
    /// The audit of `store`.
    pub fn of(store: &'s Store) -> Audit<'s> {
        Audit { store }
    }
}

/// Rebuilding a store's projections from its log.
#[derive(Clone, Copy, Debug)]
pub struct Rebuild<'s> {
    store: &'s Store,
}

impl<'s> Rebuild<'s> {
    /// The rebuild of `store`'s projections.
    pub fn of(store: &'s Store) -> Rebuild<'s> {
        Rebuild { store }
    }
}

impl Audit<'_> {
    /// Walks the whole log (header and payload hashes, `prev` links, gapless positions and
    /// stream versions, the head, the indexes and the Merkle tree), then checks every
    /// projection's tables against a fresh replay of the same snapshot.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.store.verify()
    }

    /// [`crate::Audit::verify`], calling `progress` with the records done so far: it counts to twice
    /// the head (the walk, then the replay).
    pub fn verify_with(&self, progress: &mut dyn FnMut(u64)) -> Result<VerifyReport> {
        self.store.verify_with(progress)
    }

    /// Whether this log extends `saved`, a head read from it earlier (and kept elsewhere):
    /// a log whose records were deleted, swapped, truncated or restored from an older copy
    /// does not.
    pub fn check_extends(&self, saved: Head) -> Result<Extension> {
        self.store.check_extends(saved)
    }

    /// Every record that touched `entity`, in log order.
    pub fn history(&self, entity: &crate::audit::history::Entity) -> Result<Vec<Record>> {
        self.store.history(entity)
    }

    /// Every projection as of the first `at` records, replayed from the log into a temporary
    /// file (removed when the [`Replay`] is dropped), calling `progress` with the records
    /// replayed so far. Refused with [`AuditError::SizeBeyondHead`] past the head.
    ///
    /// ```
    /// # fn main() -> annals::Result<()> {
    /// # let dir = tempfile::tempdir()?;
    /// let store = annals::Store::open(dir.path().join("log.redb"))?;
    /// let grant = |now_ms| annals::leases::LeaseCommand::Acquire {
    ///     resource: "deploy".into(), holder: format!("agent-{now_ms}"), ttl_ms: 10, now_ms,
    /// };
    /// let _ = store.execute(&grant(1))?;
    /// let _ = store.execute(&grant(100))?; // the first lease expired: taken over
    /// let then = annals::Audit::of(&store).state_at(annals::Position(1), &mut |_| {})?;
    /// let lease = annals::leases::lease(&then.state()?, "deploy")?.unwrap();
    /// assert_eq!(lease.holder, "agent-1");
    /// # Ok(()) }
    /// ```
    ///
    /// [`Replay`]: crate::audit::Replay
    /// [`AuditError::SizeBeyondHead`]: crate::error::AuditError::SizeBeyondHead
    pub fn state_at(
        &self,
        at: Position,
        progress: &mut dyn FnMut(u64),
    ) -> Result<crate::audit::replay::Replay> {
        self.store.state_at(at, progress)
    }

    /// Every row of projection `name` as JSON (see [`crate::projection::Projection::state_json`]): as it stands,
    /// or with `at = Some(n)` as of the first `n` records, by replaying them into memory. A
    /// read, which never writes: a projection behind the log as it stands is refused with
    /// [`crate::error::ProjectionError::Behind`] ([`crate::maintenance::Rebuild::catch_up`] brings it up).
    pub fn state_json(&self, name: &str, at: Option<Position>) -> Result<serde_json::Value> {
        self.store.state_json(name, at)
    }

    /// [`crate::Audit::state_json`], calling `progress` with the records replayed so far.
    pub fn state_json_with(
        &self,
        name: &str,
        at: Option<Position>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<serde_json::Value> {
        self.store.state_json_with(name, at, progress)
    }
}

impl Rebuild<'_> {
    /// Catches up every projection of this store that is behind the log: one a rebuild left
    /// half-built (stopped, or running in another thread between its batches), or one this
    /// process keeps that another writer process, which does not keep it, wrote past. Reads
    /// never write, so a read of a projection behind the log is refused
    /// ([`crate::error::ProjectionError::Behind`]) until a write or this catches it up.
    pub fn catch_up(&self) -> Result<()> {
        self.store.state().map(drop)
    }

    /// Clears `name` (or every projection when `None`) and replays the whole log into it.
    ///
    /// The replay runs in batches, each its own transaction, so that memory stays flat; until
    /// the last one commits the projection's checkpoint is behind the head, so reads of it
    /// are refused ([`crate::error::ProjectionError::Behind`]) rather than shown half-built, and a rebuild
    /// stopped in between (killed, or out of disk space) is finished by the next writable
    /// open, write or rebuild.
    pub fn run(&self, name: Option<&str>) -> Result<()> {
        self.store.rebuild(name)
    }

    /// [`crate::maintenance::Rebuild::run`], calling `progress` with the records replayed so far: 0 once the
    /// projections are cleared, then after each batch.
    pub fn run_with(&self, name: Option<&str>, progress: &mut dyn FnMut(u64)) -> Result<()> {
        self.store.rebuild_with(name, progress)
    }
}
