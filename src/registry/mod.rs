//! The registry projection (in progress).
use crate::error::Result;
use crate::projection::Projection;
use crate::projection::table::WriteTables;
use crate::record::Record;

/// The registry projection.
pub struct Registry;

impl Projection for Registry {
    fn name(&self) -> &'static str {
        "registry"
    }
    fn version(&self) -> u32 {
        1
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    fn owned_kinds(&self) -> Option<&'static str> {
        Some("registry.")
    }
    fn apply(&self, _tables: &WriteTables<'_>, _record: &Record) -> Result<()> {
        Ok(())
    }
}
