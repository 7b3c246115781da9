//! The runs projection (in progress).
use crate::error::Result;
use crate::projection::Projection;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// The runs projection.
pub struct Runs;

impl Projection for Runs {
    fn name(&self) -> &'static str {
        "runs"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    fn owned_kinds(&self) -> Option<&'static str> {
        Some("run.")
    }
    fn apply(&self, _tables: &WriteTables<'_>, _record: &Record) -> Result<()> {
        Ok(())
    }
}
