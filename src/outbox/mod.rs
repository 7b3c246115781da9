//! The outbox projection (in progress).
use crate::error::Result;
use crate::projection::Projection;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// The outbox projection.
pub struct Outbox;

impl Projection for Outbox {
    fn name(&self) -> &'static str {
        "outbox"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    fn owned_kinds(&self) -> Option<&'static str> {
        Some("outbox.")
    }
    fn apply(&self, _tables: &WriteTables<'_>, _record: &Record) -> Result<()> {
        Ok(())
    }
}
