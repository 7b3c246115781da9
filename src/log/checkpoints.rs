//! `annals.checkpoints`: where each projection stands (the version that built its tables and
//! the next position it has to apply). The log keeps the table, so that a snapshot reads a
//! projection's checkpoint without knowing projections; `projection` writes it.

use crate::storage::Definition;

use crate::error::Result;
use crate::record::Position;

/// `annals.checkpoints`: projection name → (version that built it, next position to apply, or
/// [`AT_HEAD`]).
pub(crate) const CHECKPOINTS: Definition<&str, [u8; CHECKPOINT_VALUE_BYTES]> =
    Definition::new(CHECKPOINTS_NAME);

/// The name of [`CHECKPOINTS`], which its values' checksums cover.
const CHECKPOINTS_NAME: &str = "annals.checkpoints";

/// The stored bytes of a [`CHECKPOINTS`] value: version `u32` LE ‖ next position `u64` LE ‖
/// checksum.
pub(crate) const CHECKPOINT_VALUE_BYTES: usize = 4 + 8 + super::checksum::CHECKSUM_BYTES;

/// The [`CHECKPOINTS`] value of projection `name` at `(version, next)`.
pub(crate) fn seal_checkpoint(
    name: &str,
    (version, next): (u32, u64),
) -> [u8; CHECKPOINT_VALUE_BYTES] {
    let mut value = [0; 12];
    value[..4].copy_from_slice(&version.to_le_bytes());
    value[4..].copy_from_slice(&next.to_le_bytes());
    let sealed = super::checksum::seal_fixed(CHECKPOINTS_NAME, name.as_bytes(), &value);
    // The fact written is the fact a read finds: the checksum covers this name.
    debug_assert_eq!(
        unseal_checkpoint(name, &sealed).ok(),
        Some((version, next)),
        "the checkpoint of {name:?} reads back as sealed"
    );
    sealed
}

/// The `(version, next)` of projection `name`'s [`CHECKPOINTS`] value, once its checksum holds.
pub(crate) fn unseal_checkpoint(
    name: &str,
    stored: &[u8; CHECKPOINT_VALUE_BYTES],
) -> Result<(u32, u64)> {
    let value = super::checksum::unseal(CHECKPOINTS_NAME, name.as_bytes(), stored)?;
    let (version, next) = value.split_at(4);
    Ok((
        u32::from_le_bytes(version.try_into().expect("4 bytes")),
        u64::from_le_bytes(next.try_into().expect("8 bytes")),
    ))
}

/// The stored next position of a projection that is applied in the transaction of every append:
/// it is always at the head, so live appends need not rewrite its checkpoint (a B-tree fewer
/// written per commit). Replay stores real positions until it has caught up.
pub(crate) const AT_HEAD: u64 = u64::MAX;

/// The checkpoint a stored `(version, next)` stands for in a log whose head is at `head`.
pub(crate) fn resolve_checkpoint((version, next): (u32, u64), head: Position) -> Checkpoint {
    Checkpoint {
        version,
        next: if next == AT_HEAD {
            head
        } else {
            Position(next)
        },
    }
}

/// Where a projection stands: the version that built its tables and the next position it
/// has to apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The projection's version (`Projection::version`) that built the tables.
    pub version: u32,
    /// Every record before this position is applied.
    pub next: Position,
}
