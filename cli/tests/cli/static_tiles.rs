//! `annals tiles` (c2sp.org/tlog-tiles, issue 32 point 4) through the real binary: the
//! directory it writes read back by Cloudflare's `tlog_tiles` (its `TileHashReader` over the
//! files), which must find the checkpoint's root and prove records and trees from the tiles
//! alone; the checkpoint checked by `signed_note`.

use annals::testing::setup::ExpectDone;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use annals::tlog::Checkpoint;
use annals::{ExpectedVersion, NewEvent, Store};
use tlog_tiles::{HashReader, Tile, TileHashReader, TileReader};

use crate::{annals, exits, path as text, sha256};

const ORIGIN: &str = "example.com/tiled";

/// Appends `n` records tagged `tag`, in appends of at most 10,000.
fn append(log: &Path, n: u64, tag: &str) {
    let store = Store::open(log).unwrap();
    let mut left = n;
    while left > 0 {
        let take = left.min(10_000);
        let events: Vec<NewEvent> = (0..take)
            .map(|i| NewEvent::new("note", i, format!("{tag} {left} {i}").into_bytes()))
            .collect();
        store
            .append("notes/a", ExpectedVersion::Any, &events)
            .unwrap()
            .expect_done();
        left -= take;
    }
    store.close().unwrap();
}

/// A log's key: its file and vkey.
fn keygen(dir: &Path) -> (PathBuf, String) {
    let key = dir.join("log.key");
    let made = exits(annals(&["keygen", "--name", ORIGIN, text(&key)]), 0);
    (
        key,
        String::from_utf8(made.stdout)
            .unwrap()
            .trim_end()
            .to_owned(),
    )
}

/// The directory's tiles as a `tlog_tiles` reader sees them: its tile paths are
/// `tile/<H>/<L>/<N>`, the C2SP ones `tile/<L>/<N>`.
struct Directory(PathBuf);

impl TileReader for Directory {
    fn height(&self) -> u8 {
        8
    }

    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|tile| {
                let path = tile.path().replacen("tile/8/", "tile/", 1);
                std::fs::read(self.0.join(path)).map_err(|_| tlog_tiles::Error::InvalidTile)
            })
            .collect()
    }

    fn save_tiles(&self, _: &[Tile], _: &[Vec<u8>]) {}
}

/// The checkpoint the directory serves.
fn served(dir: &Path) -> Checkpoint {
    let text = std::fs::read_to_string(dir.join("checkpoint")).unwrap();
    let note = annals::tlog::Note::parse(&text).unwrap();
    Checkpoint::parse_body(note.text()).unwrap()
}

/// Every file under `dir`, relative path → bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                out.insert(name, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// Checks the directory with `tlog_tiles` alone: the tree hash from its tiles is the
/// checkpoint's root, and records and earlier trees are proved from them.
fn check_with_tlog_tiles(dir: &Path, log: &Path) {
    let checkpoint = served(dir);
    let size = checkpoint.size;
    let root = tlog_tiles::Hash(checkpoint.root);
    let reader = Directory(dir.to_path_buf());
    let hashes = TileHashReader::new(size, root, &reader);
    assert_eq!(tlog_tiles::tree_hash(size, &hashes).unwrap(), root);
    let store = Store::open_read_only(log).unwrap();
    for index in [0, size / 3, size / 2, size - 1] {
        let record = store
            .snapshot()
            .unwrap()
            .get(annals::Position(index))
            .unwrap()
            .unwrap();
        let leaf = tlog_tiles::record_hash(record.hash.as_bytes());
        let proof = tlog_tiles::prove_record(size, index, &hashes).unwrap();
        tlog_tiles::check_record(&proof, size, root, index, leaf).unwrap();
        // The entry bundle holds the record hash, its leaf the level-0 tile's hash.
        assert_eq!(
            hashes
                .read_hashes(&[tlog_tiles::stored_hash_index(0, index)])
                .unwrap()[0],
            leaf
        );
        let bundle = entry(dir, size, index);
        assert_eq!(bundle, record.hash.as_bytes());
    }
    for old in [1, size / 2, size].into_iter().filter(|&old| old >= 1) {
        let old_root = tlog_tiles::Hash(store.snapshot().unwrap().merkle_root(old).unwrap().0);
        let proof = tlog_tiles::prove_tree(size, old, &hashes).unwrap();
        tlog_tiles::check_tree(&proof, size, root, old, old_root).unwrap();
    }
}

/// Entry `index` of the entry bundle that holds it, in a directory serving `size` leaves.
fn entry(dir: &Path, size: u64, index: u64) -> Vec<u8> {
    let tile = index / 256;
    let full = (tile + 1) * 256 <= size;
    let id = annals::tlog::tiles::TileId {
        level: 0,
        index: tile,
        width: if full { 256 } else { (size % 256) as u16 },
    };
    let bytes = std::fs::read(dir.join(id.entries_path())).unwrap();
    let mut at = 0;
    let mut seen = 0;
    loop {
        let length = usize::from(u16::from_be_bytes([bytes[at], bytes[at + 1]]));
        if seen == index % 256 {
            return bytes[at + 2..at + 2 + length].to_vec();
        }
        at += 2 + length;
        seen += 1;
    }
}

#[test]
fn tiles_of_logs_of_every_shape_are_read_back_by_tlog_tiles() {
    for size in [1, 255, 256, 257, 65_793] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.redb");
        append(&log, size, "main");
        let (key, vkey) = keygen(dir.path());
        let tiles = dir.path().join("tiles");
        exits(
            annals(&["tiles", text(&log), text(&tiles), "--key", text(&key)]),
            0,
        );
        assert_eq!(served(&tiles).size, size);
        check_with_tlog_tiles(&tiles, &log);
        // The checkpoint is a signed note signed_note verifies with the log's vkey.
        let note = std::fs::read(tiles.join("checkpoint")).unwrap();
        let verifier = signed_note::StandardVerifier::new(&vkey).unwrap();
        signed_note::Note::from_bytes(&note)
            .unwrap()
            .verify(&signed_note::VerifierList::new(vec![Box::new(verifier)]))
            .unwrap();
        // No temporary file is left behind.
        assert!(files(&tiles).keys().all(|name| !name.ends_with(".tmp")));
    }
}

#[test]
fn a_directory_written_before_is_updated_incrementally_and_matches_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    let (key, _) = keygen(dir.path());
    let tiles = dir.path().join("tiles");
    append(&log, 600, "main");
    exits(
        annals(&["tiles", text(&log), text(&tiles), "--key", text(&key)]),
        0,
    );
    let full_tile = tiles.join("tile/0/000");
    let before = std::fs::metadata(&full_tile).unwrap().ino();
    append(&log, 70_000, "main");
    let json = exits(
        annals(&[
            "tiles",
            text(&log),
            text(&tiles),
            "--key",
            text(&key),
            "--json",
        ]),
        0,
    );
    let summary: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(summary["from_size"], 600);
    assert_eq!(summary["size"], 70_600);
    // A full tile of the first run is kept as it was, not rewritten.
    assert_eq!(std::fs::metadata(&full_tile).unwrap().ino(), before);
    check_with_tlog_tiles(&tiles, &log);

    // Every file a fresh directory of the same tree has, the updated one has byte for byte
    // (it also keeps the partial tiles of the size it served before, as the spec allows).
    let fresh = dir.path().join("fresh");
    let copy = dir.path().join("copy.redb");
    std::fs::copy(&log, &copy).unwrap();
    exits(
        annals(&["tiles", text(&copy), text(&fresh), "--key", text(&key)]),
        0,
    );
    let (updated, fresh) = (files(&tiles), files(&fresh));
    for (name, bytes) in &fresh {
        if name == "checkpoint" {
            continue;
        }
        assert_eq!(updated.get(name), Some(bytes), "{name}");
    }
    // Run again at the same size: nothing new to write.
    let again = exits(
        annals(&[
            "tiles",
            text(&log),
            text(&tiles),
            "--key",
            text(&key),
            "--json",
        ]),
        0,
    );
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["tiles"], 0);
}

#[test]
fn a_directory_of_another_history_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.redb");
    let (key, _) = keygen(dir.path());
    append(&log, 300, "main");
    let fork = dir.path().join("fork.redb");
    std::fs::copy(&log, &fork).unwrap();
    append(&log, 50, "main");
    append(&fork, 80, "fork");
    let tiles = dir.path().join("tiles");
    exits(
        annals(&["tiles", text(&log), text(&tiles), "--key", text(&key)]),
        0,
    );
    let before = files(&tiles);
    let fork_bytes = sha256(&fork);
    // The fork under the same key: a finding, exit 1, nothing written or signed.
    let refused = exits(
        annals(&["tiles", text(&fork), text(&tiles), "--key", text(&key)]),
        1,
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("another history"));
    assert!(
        files(&tiles) == before,
        "a refused run leaves the directory as it was"
    );
    assert!(
        sha256(&fork) == fork_bytes,
        "a refused run leaves the log's bytes as they were"
    );
    // A log behind the directory (a finding), another log's key, and tiles with no
    // checkpoint (usage): refused.
    let behind = dir.path().join("behind.redb");
    append(&behind, 10, "behind");
    let refused = exits(
        annals(&["tiles", text(&behind), text(&tiles), "--key", text(&key)]),
        1,
    );
    assert!(String::from_utf8_lossy(&refused.stderr).contains("behind what was published"));
    let other_key = dir.path().join("other.key");
    exits(
        annals(&["keygen", "--name", "other.example/log", text(&other_key)]),
        0,
    );
    exits(
        annals(&[
            "tiles",
            text(&behind),
            text(&tiles),
            "--key",
            text(&other_key),
        ]),
        2,
    );
    std::fs::remove_file(tiles.join("checkpoint")).unwrap();
    exits(
        annals(&["tiles", text(&log), text(&tiles), "--key", text(&key)]),
        2,
    );
    // A key file anyone may read is refused before anything is opened.
    let open_key = dir.path().join("open.key");
    std::fs::copy(&key, &open_key).unwrap();
    std::fs::set_permissions(
        &open_key,
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    exits(
        annals(&[
            "tiles",
            text(&log),
            text(&dir.path().join("t2")),
            "--key",
            text(&open_key),
        ]),
        2,
    );
    assert!(!dir.path().join("t2").exists());
}
