//! Where the library's tests find the binary they run as processes: the test support's own.

use std::path::Path;

/// `annals-testing`, the test support's own binary (`src/testing/bin.rs`): the crash tests'
/// children.
pub fn testing() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_annals-testing"))
}
