//! The one list of the built-in projections, one a domain: what a store registers before a
//! program's own, and what history's entity kinds are asked of. Adding a domain adds its
//! folder and a line here.

use std::sync::Arc;

use crate::projection::Projection;

/// The built-in projections, in the order they are applied.
pub fn builtin_projections() -> Vec<Arc<dyn Projection>> {
    vec![
        Arc::new(crate::registry::Registry),
        Arc::new(crate::leases::Leases),
        Arc::new(crate::outbox::Outbox),
        Arc::new(crate::runs::Runs),
        Arc::new(crate::consumers::Consumers),
        Arc::new(crate::ingest::Ingest),
    ]
}
