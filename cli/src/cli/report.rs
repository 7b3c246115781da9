//! The JSON objects the writing and evidence commands print with `--json` (`append`,
//! `import`, `export`, `rebuild`, `demo`, `check-proof`): one object on standard output
//! carrying what their text says. Field names are part of the command line's interface.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use annals::AppendOutcome;
use annals::export::ExportHeader;
use annals::merkle::TreeHead;

/// What `append --json` prints.
#[derive(Serialize)]
pub(crate) struct AppendJson {
    /// The position the event is at, written now or earlier.
    pub(crate) position: u64,
    /// Whether the event repeated an idempotency key with the same content (nothing written).
    pub(crate) duplicate: bool,
    /// The stream version written; absent for a duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) version: Option<u64>,
    /// The head hash after a write; absent for a duplicate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) head_hash: Option<String>,
}

impl AppendJson {
    pub(crate) fn new(outcome: &AppendOutcome) -> AppendJson {
        match outcome {
            AppendOutcome::Appended(appended) => AppendJson {
                position: appended.first_position.0,
                duplicate: false,
                version: Some(appended.first_version.0),
                head_hash: Some(appended.head.hash.to_hex()),
            },
            AppendOutcome::Duplicate { .. } => AppendJson {
                position: outcome.first_position().0,
                duplicate: true,
                version: None,
                head_hash: None,
            },
        }
    }
}

/// What `export --json` and `import --json` print: the range and what it ends at.
#[derive(Serialize)]
pub(crate) struct RangeJson {
    /// The export file (export) or the log (import).
    pub(crate) path: String,
    /// The first position.
    pub(crate) from: u64,
    /// One past the last position.
    pub(crate) to: u64,
    /// Records in the range.
    pub(crate) records: u64,
    /// The record hash at `to - 1`.
    pub(crate) head_hash: String,
    /// The Merkle root of the first `to` records.
    pub(crate) root: String,
    /// The tree head of that root, as `annals root` prints it.
    pub(crate) tree_head: String,
}

impl RangeJson {
    pub(crate) fn new(header: &ExportHeader, path: &Path) -> RangeJson {
        RangeJson {
            path: path.display().to_string(),
            from: header.from.0,
            to: header.to.0,
            records: header.to.0 - header.from.0,
            head_hash: header.head.to_hex(),
            root: header.root.to_hex(),
            tree_head: header.tree_head().hash().to_hex(),
        }
    }
}

/// What `rebuild --json` prints.
#[derive(Serialize)]
pub(crate) struct RebuildJson<'a> {
    /// The projections rebuilt.
    pub(crate) projections: Vec<&'a str>,
    /// They are rebuilt through this position (the head's next).
    pub(crate) through: u64,
}

/// What `demo --json` prints.
#[derive(Serialize)]
pub(crate) struct DemoJson {
    /// The log written.
    pub(crate) path: String,
    /// Records appended.
    pub(crate) records: u64,
    /// Records appended per projection owning their kind (`raw` for the rest).
    pub(crate) per_projection: BTreeMap<String, u64>,
    /// The head's next position after the demo.
    pub(crate) head: u64,
    /// The head hash after the demo.
    pub(crate) head_hash: String,
    /// Whether `verify` found the log sound (a log that is not also exits 1).
    pub(crate) sound: bool,
    /// Records and streams `verify` walked.
    pub(crate) verified_records: u64,
    /// Streams `verify` counted.
    pub(crate) verified_streams: u64,
}

/// A tree head in `check-proof --json`.
#[derive(Serialize)]
pub(crate) struct HeadJson {
    pub(crate) size: u64,
    pub(crate) root: String,
    pub(crate) tree_head: String,
}

impl From<TreeHead> for HeadJson {
    fn from(head: TreeHead) -> HeadJson {
        HeadJson {
            size: head.size,
            root: head.root.to_hex(),
            tree_head: head.hash().to_hex(),
        }
    }
}

/// What `check-proof --json` prints for a valid proof (an invalid one is an error).
#[derive(Serialize)]
pub(crate) struct CheckProofJson {
    pub(crate) valid: bool,
    /// Whether it was checked against a head the caller trusts: false when it holds only
    /// against the heads it carries (self-consistent only, exit 3), which a forger can make.
    pub(crate) established: bool,
    /// `inclusion` or `consistency`.
    pub(crate) proof: &'static str,
    /// The position proved included (inclusion proofs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) position: Option<u64>,
    /// The earlier tree head (consistency proofs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) from: Option<HeadJson>,
    /// The tree head the proof proves against (the later one of a consistency proof).
    pub(crate) to: HeadJson,
    /// The trusted head it was checked against; absent when none was given, when the proof
    /// was checked only against the heads it carries (which proves nothing about a log).
    pub(crate) trusted: Option<HeadJson>,
}
