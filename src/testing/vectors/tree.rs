//! `schema/vectors/tree_v4.json`: the RFC 6962 tree of format v4 over fixed record hashes,
//! its roots, tree heads and proofs at several sizes, by the crate's tree code.

use crate::hash::Digest;
use crate::merkle::{LogTreeHasher, TreeHasher, consistency_path, inclusion_path};

/// Every perfect subtree root of a tree of SHA-256 leaves, level by level.
pub struct Levels(Vec<Vec<Digest>>);

impl Levels {
    /// The levels above `leaves`, up to the largest perfect subtree.
    pub fn new(leaves: Vec<Digest>) -> Levels {
        let mut levels = vec![leaves];
        while levels.last().unwrap().len() > 1 {
            let below = levels.last().unwrap();
            let up = below
                .chunks_exact(2)
                .map(|pair| LogTreeHasher.node(&pair[0], &pair[1]))
                .collect();
            levels.push(up);
        }
        Levels(levels)
    }

    /// A reader of the stored subtree roots, as the tree code asks for them.
    pub fn get(&self) -> impl FnMut(u8, u64) -> Result<Digest, ()> + '_ {
        |level, index| Ok(self.0[level as usize][index as usize])
    }
}

/// The record hash the vectors give leaf `i`: `blake3(u64(i))`, little-endian.
pub fn record_hash(i: u64) -> Digest {
    Digest(*blake3::hash(&i.to_le_bytes()).as_bytes())
}

/// The sizes `schema/vectors/tree_v4.json` gives roots, tree heads and proofs at.
pub const SIZES: [u64; 13] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 31, 100];

/// What `schema/vectors/tree_v4.json` holds: over the record hashes `blake3(u64(i))`, at each
/// size its root and tree head hash, the inclusion proof of leaf `size / 3` and the
/// consistency proof from size `(size + 1) / 2`, all by the crate's tree code.
pub fn text() -> String {
    let hex = |digest: &Digest| digest.to_hex();
    let largest = *SIZES.last().unwrap();
    let leaves: Vec<Digest> = (0..largest)
        .map(|i| LogTreeHasher.leaf(record_hash(i).as_bytes()))
        .collect();
    let mut cases = Vec::new();
    for size in SIZES {
        let levels = Levels::new(leaves[..size as usize].to_vec());
        let root = crate::merkle::root(&LogTreeHasher, size, &mut levels.get()).unwrap();
        let tree_head = crate::merkle::TreeHead { size, root }.hash();
        let mut case = serde_json::json!({
            "size": size,
            "root": hex(&root),
            "tree_head": hex(&tree_head),
        });
        if size > 0 {
            let index = size / 3;
            let path = inclusion_path(&LogTreeHasher, index, size, &mut levels.get()).unwrap();
            case["inclusion"] = serde_json::json!({
                "index": index,
                "record_hash": hex(&record_hash(index)),
                "path": path.iter().map(hex).collect::<Vec<_>>(),
            });
            let from = size.div_ceil(2);
            let from_root = crate::merkle::root(&LogTreeHasher, from, &mut levels.get()).unwrap();
            let path = consistency_path(&LogTreeHasher, from, size, &mut levels.get()).unwrap();
            case["consistency"] = serde_json::json!({
                "from_size": from,
                "from_root": hex(&from_root),
                "path": path.iter().map(hex).collect::<Vec<_>>(),
            });
        }
        cases.push(case);
    }
    super::pretty(&cases)
}
