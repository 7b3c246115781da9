//! The generators of the golden vectors in `schema/vectors/` (record and segment layouts, the
//! tree, the commit journal, a cut): each writes its file's text from fixed inputs and today's
//! code. The tests compare the committed files with what these write; only the
//! `write_vectors` example, run by hand after a deliberate format change, writes the files
//! (`schema/vectors/README.md`). Never used outside the tests and that example.

pub mod cut;
pub mod journal;
pub mod records;
pub mod tree;

use std::path::{Path, PathBuf};

/// The committed vector file `name` in `schema/vectors/`.
pub fn path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema/vectors")
        .join(name)
}

/// `value` as the files hold JSON: pretty, with a final newline.
fn pretty(value: &impl serde::Serialize) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("the vectors serialize");
    text.push('\n');
    text
}
