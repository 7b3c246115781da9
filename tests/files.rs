//! Searching a store's files for bytes that must not be there (a key, a plaintext): shared by
//! the test binaries that need it.

use std::path::{Path, PathBuf};

/// Whether `needle` is anywhere in `haystack`.
pub fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Every file under `dir`, at any depth.
pub fn files_under(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            files_under(&path, found);
        } else {
            found.push(path);
        }
    }
}
