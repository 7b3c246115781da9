//! Whether a log extends a head saved earlier: the check that catches a log whose records
//! were deleted, swapped, truncated or restored from an older copy, even when that log is
//! sound on its own. Reads only.

use crate::audit::verify::{Finding, verify_log};
use crate::error::Result;
use crate::hash::Digest;
use crate::log::Head;
use crate::log::read::Snapshot;
use crate::record::Position;

/// How a log relates to a head saved from it earlier.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub enum Extension {
    /// The log holds the saved head's records unchanged, and possibly more after them.
    Extends {
        /// The log's head now.
        head: Head,
    },
    /// The log ends before the saved head: truncated, or restored from an older copy.
    Shorter {
        /// The log's head now.
        head: Head,
    },
    /// The log is long enough, but the record at the saved head's last position is not the
    /// one saved: history was rewritten (records swapped, deleted and re-appended, or a
    /// different log).
    Diverged {
        /// The position of the saved head's last record.
        position: Position,
        /// The hash saved for it.
        saved: Digest,
        /// The hash the log has there.
        found: Digest,
    },
    /// The log fails verification at or before the saved head.
    Broken(Finding),
}

impl Extension {
    /// Whether the log extends the saved head.
    pub fn extends(&self) -> bool {
        matches!(self, Extension::Extends { .. })
    }
}

/// Checks that the log in `snapshot` extends `saved`: its chain verifies from position 0 (a
/// problem after the saved head is not this check's business) and the record at
/// `saved.next - 1` has the saved hash. Because every record's hash covers the one before,
/// that one comparison vouches for every record up to the saved head.
pub(crate) fn check_extends(snapshot: &Snapshot, saved: Head) -> Result<Extension> {
    let report = verify_log(snapshot)?;
    if let Some(finding) = report.problem
        && finding.position < saved.next
    {
        return Ok(Extension::Broken(finding));
    }
    let head = snapshot.head()?;
    if head.next < saved.next {
        return Ok(Extension::Shorter { head });
    }
    let Some(last) = saved.next.0.checked_sub(1) else {
        return Ok(if saved.hash == Digest::ZERO {
            Extension::Extends { head }
        } else {
            Extension::Diverged {
                position: Position(0),
                saved: saved.hash,
                found: Digest::ZERO,
            }
        });
    };
    let found = match snapshot.get(Position(last))? {
        Some(record) => record.hash,
        None => {
            return Ok(Extension::Shorter { head });
        }
    };
    if found != saved.hash {
        return Ok(Extension::Diverged {
            position: Position(last),
            saved: saved.hash,
            found,
        });
    }
    Ok(Extension::Extends { head })
}
