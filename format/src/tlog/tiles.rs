//! `c2sp.org/tlog-tiles`: the log's tree as static files. A tile is up to 256 consecutive
//! hashes of one level of the tree (tile level `L` holds the tree's level `8·L`: leaf hashes
//! at level 0, then roots of full tiles of the level below); an entry bundle holds the
//! entries of a level-0 tile. Paths are `tile/<L>/<N>[.p/<W>]` and `tile/entries/<N>[.p/<W>]`,
//! `N` in 3-digit groups (`x001/x234/067`), `.p/<W>` for a partial tile of `W` hashes.
//!
//! This module says which tiles a tree has and how their bytes and paths are made. It does
//! no I/O: writing a directory is `crate::Tiles::write`'s.

/// The height of a tile: each holds up to 2^8 hashes.
pub const TILE_HEIGHT: u8 = 8;

/// The hashes in a full tile.
pub const TILE_WIDTH: u64 = 1 << TILE_HEIGHT;

/// One tile (or, for level 0, its entry bundle too) of a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TileId {
    /// The tile level: its hashes are the tree's level `8 · level`.
    pub level: u8,
    /// Its index within the level.
    pub index: u64,
    /// How many hashes it holds, 1 to 256 (256: a full tile).
    pub width: u16,
}

impl TileId {
    /// Whether it holds all 256 hashes.
    pub fn is_full(&self) -> bool {
        u64::from(self.width) == TILE_WIDTH
    }

    /// The first hash index (at the tile's tree level) it holds.
    pub fn first(&self) -> u64 {
        self.index * TILE_WIDTH
    }

    /// Its path under the log's prefix: `tile/<L>/<N>[.p/<W>]`.
    pub fn path(&self) -> String {
        format!("tile/{}/{}", self.level, self.suffix())
    }

    /// The path of the entry bundle of a level-0 tile: `tile/entries/<N>[.p/<W>]`.
    pub fn entries_path(&self) -> String {
        format!("tile/entries/{}", self.suffix())
    }

    fn suffix(&self) -> String {
        let index = encode_index(self.index);
        if self.is_full() {
            index
        } else {
            format!("{index}.p/{}", self.width)
        }
    }
}

/// `N` as the spec writes it in a path: zero-padded 3-digit elements, all but the last
/// prefixed with `x` (1234067 → `x001/x234/067`).
pub fn encode_index(mut index: u64) -> String {
    let mut out = format!("{:03}", index % 1000);
    while index >= 1000 {
        index /= 1000;
        out = format!("x{:03}/{out}", index % 1000);
    }
    out
}

/// The tiles of a tree of `size` leaves, level by level: at level `l` the full tiles, then
/// the partial one of `⌊size / 256^l⌋ mod 256` hashes if that is not zero.
pub fn tiles_of(size: u64) -> Vec<TileId> {
    tiles_between(0, size)
}

/// The tiles a tree of `size` leaves has that a tree of `old` leaves (`old ≤ size`) does not
/// have with the same bytes: the full tiles completed since, and the partial ones of `size`.
/// A directory holding `old`'s tiles holds `size`'s once these are added.
pub fn tiles_between(old: u64, size: u64) -> Vec<TileId> {
    debug_assert!(old <= size);
    let mut tiles = Vec::new();
    let mut level = 0u8;
    while level < 8 && size >> (u32::from(TILE_HEIGHT) * u32::from(level)) > 0 {
        let shift = u32::from(TILE_HEIGHT) * u32::from(level);
        let (old_hashes, hashes) = (old >> shift, size >> shift);
        if old_hashes != hashes {
            for index in (old_hashes / TILE_WIDTH)..(hashes / TILE_WIDTH) {
                tiles.push(TileId {
                    level,
                    index,
                    width: TILE_WIDTH as u16,
                });
            }
            let width = hashes % TILE_WIDTH;
            if width > 0 {
                tiles.push(TileId {
                    level,
                    index: hashes / TILE_WIDTH,
                    width: width as u16,
                });
            }
        }
        level += 1;
    }
    tiles
}

/// A tile's bytes: its hashes, concatenated.
pub fn tile_bytes(hashes: &[[u8; 32]]) -> Vec<u8> {
    hashes.concat()
}

/// An entry bundle's bytes: each entry as a big-endian `u16` length and its bytes.
pub fn entry_bundle(entries: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entries.iter().map(|e| 2 + e.len()).sum());
    for entry in entries {
        let length = u16::try_from(entry.len()).expect("an entry is at most 65535 bytes");
        out.extend_from_slice(&length.to_be_bytes());
        out.extend_from_slice(entry);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_written_as_the_spec_writes_them() {
        assert_eq!(encode_index(1_234_067), "x001/x234/067");
        assert_eq!(encode_index(0), "000");
        assert_eq!(encode_index(999), "999");
        assert_eq!(encode_index(1000), "x001/000");
        let partial = TileId {
            level: 4,
            index: 1_234_067,
            width: 1,
        };
        assert_eq!(partial.path(), "tile/4/x001/x234/067.p/1");
        let full = TileId {
            width: 256,
            ..partial
        };
        assert_eq!(full.path(), "tile/4/x001/x234/067");
        assert_eq!(full.entries_path(), "tile/entries/x001/x234/067");
    }

    #[test]
    fn a_tree_of_70000_has_the_tiles_the_spec_lists() {
        // "273 full level 0 tiles, one partial level 0 tile of width 112, one full level 1
        // tile, one partial level 1 tile of width 17, and one partial level 2 tile of width 1."
        let tiles = tiles_of(70_000);
        let at = |level: u8| tiles.iter().filter(move |t| t.level == level);
        assert_eq!(at(0).filter(|t| t.is_full()).count(), 273);
        assert_eq!(at(0).find(|t| !t.is_full()).unwrap().width, 112);
        assert_eq!(at(1).filter(|t| t.is_full()).count(), 1);
        assert_eq!(at(1).find(|t| !t.is_full()).unwrap().width, 17);
        assert_eq!(at(2).map(|t| t.width).collect::<Vec<_>>(), [1]);
        assert_eq!(tiles.len(), 273 + 1 + 1 + 1 + 1);
        // "a tree of size 256 will be represented by a full level 0 tile and a partial level
        // 1 tile of width 1."
        assert_eq!(
            tiles_of(256),
            [
                TileId {
                    level: 0,
                    index: 0,
                    width: 256
                },
                TileId {
                    level: 1,
                    index: 0,
                    width: 1
                }
            ]
        );
        assert!(tiles_of(0).is_empty());
    }

    #[test]
    fn the_tiles_between_two_sizes_complete_the_older_set() {
        for (old, size) in [
            (0, 1),
            (1, 300),
            (255, 256),
            (300, 70_000),
            (65_536, 65_537),
        ] {
            // What a directory of `old`'s tiles holds once the new ones are added: a tile
            // unchanged between the sizes (a full one, or a partial one no leaf reached) is
            // the same file.
            let mut grown: Vec<TileId> = tiles_of(old)
                .into_iter()
                .chain(tiles_between(old, size))
                .collect();
            grown.sort();
            grown.dedup();
            let mut fresh = tiles_of(size);
            fresh.sort();
            let served: Vec<TileId> = grown
                .iter()
                .copied()
                .filter(|t| fresh.contains(t))
                .collect();
            assert!(
                served == fresh,
                "{old} → {size}: {} of {} tiles",
                served.len(),
                fresh.len()
            );
            // Nothing is written twice: the new tiles are none of the old ones.
            let old_tiles = tiles_of(old);
            assert!(
                tiles_between(old, size)
                    .iter()
                    .all(|t| !old_tiles.contains(t))
            );
        }
    }

    #[test]
    fn an_entry_bundle_is_length_prefixed() {
        assert_eq!(entry_bundle(&[b"ab", b""]), [0, 2, b'a', b'b', 0, 0]);
    }
}
