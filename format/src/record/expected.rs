//! What a stream must hold for an append to go ahead: optimistic concurrency on one stream.

use std::fmt;

use super::StreamVersion;

/// The stream state an append requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpectedVersion {
    /// Append whatever the stream holds.
    Any,
    /// The stream must hold no record yet.
    NoStream,
    /// The stream must hold at least one record.
    StreamExists,
    /// The stream's last record must have exactly this version (so it holds `v + 1` records).
    Exact(StreamVersion),
}

impl fmt::Display for ExpectedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExpectedVersion::Any => f.write_str("any"),
            ExpectedVersion::NoStream => f.write_str("no stream"),
            ExpectedVersion::StreamExists => f.write_str("an existing stream"),
            ExpectedVersion::Exact(v) => write!(f, "last version {v}"),
        }
    }
}

/// The command line's spelling of an expected version: `any`, `none` (no record yet),
/// `exists`, or the stream's last version N.
impl std::str::FromStr for ExpectedVersion {
    type Err = UnknownExpectedVersion;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "any" => Ok(ExpectedVersion::Any),
            "none" => Ok(ExpectedVersion::NoStream),
            "exists" => Ok(ExpectedVersion::StreamExists),
            _ => text
                .parse()
                .map(|version| ExpectedVersion::Exact(StreamVersion(version)))
                .map_err(|_| UnknownExpectedVersion(text.to_owned())),
        }
    }
}

/// Text that does not spell an expected version.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not `any`, `none`, `exists` or a version number")]
pub struct UnknownExpectedVersion(pub String);
