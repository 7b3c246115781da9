//! Writes `schema/vectors/events.json`, the golden event payload vectors: run by hand with
//! `cargo run --example write_event_vectors --features testing` after adding an event kind or
//! schema (see `schema/vectors/README.md`). The tests check the committed file; they never
//! write it.

use std::path::Path;

use annals::Store;
use annals::testing::event_vectors::vectors_text;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path().join("log.redb"))?;
    let text = vectors_text(&store);
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/vectors/events.json");
    std::fs::write(&path, text)?;
    println!("wrote {}", path.display());
    Ok(())
}
