//! Writes the golden vectors of `schema/vectors/` that the format's code produces: the v1
//! records (`records.json`), their v2 segments (`segments_v2.json`), the tree
//! (`tree_v4.json`), the commit journal (`journal_v3.json`) and a cut (`cut_v4.json`). Run
//! by hand with `cargo run --example write_vectors --features testing`, only for a
//! deliberate format change (see `schema/vectors/README.md`): the tests check the committed
//! files against the same generators (`annals::testing::vectors`) and never write them. A
//! journal draws its marker at random: `journal_v3.json` comes out with a new one each run
//! (the test compares with the committed marker put in place), so keep the old file unless its
//! layout changed.

use annals::testing::vectors::{self, cut, journal, records, tree};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let journal_dir = dir.path().join("journal");
    let cut_dir = dir.path().join("cut");
    std::fs::create_dir(&journal_dir)?;
    std::fs::create_dir(&cut_dir)?;
    let files = [
        ("records.json", records::text()),
        ("segments_v2.json", records::segments_text()),
        ("tree_v4.json", tree::text()),
        ("journal_v3.json", journal::text(&journal_dir)),
        ("cut_v4.json", cut::text(&cut_dir)),
    ];
    for (name, text) in files {
        let path = vectors::path(name);
        std::fs::write(&path, text)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
