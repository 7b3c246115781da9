//! Where the tests find the two binaries they run as processes.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// The `annals` command line, which `cli/` builds beside these tests: `cargo test` at the
/// workspace root builds it (its package has tests of its own), into the folder above the
/// test binary's `deps/`. Run by the replication tests of `replicate` and `follow`, which need
/// a real JetStream cluster (`tests/jetstream/cli.rs`, `hostile.rs`).
#[allow(dead_code)] // Only the JetStream tests run the command line.
pub fn annals() -> &'static Path {
    static BIN: LazyLock<PathBuf> = LazyLock::new(|| {
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary lives in target/<profile>/deps");
        let bin = profile.join("annals");
        assert!(
            bin.exists(),
            "{} is missing: run the tests with `cargo test` at the workspace root, which builds \
             the command line (`cli/`), or build it with `cargo build -p annals-cli`",
            bin.display()
        );
        bin
    });
    &BIN
}

/// `annals-testing`, the test support's own binary (`src/testing/bin.rs`): the crash tests'
/// children.
#[allow(dead_code)] // The replication tests start no crash child.
pub fn testing() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_annals-testing"))
}
