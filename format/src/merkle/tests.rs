use std::collections::BTreeMap;

use super::*;

/// Leaf hashes of `n` made-up records.
fn leaves(n: u64) -> Vec<Digest> {
    (0..n)
        .map(|i| leaf_hash(&Digest(*blake3::hash(&i.to_le_bytes()).as_bytes())))
        .collect()
}

/// Every perfect subtree of the tree over `leaves`, as the frontier reports them.
fn nodes(leaves: &[Digest]) -> BTreeMap<(u8, u64), Digest> {
    let mut frontier = Frontier::new();
    let mut nodes = BTreeMap::new();
    for leaf in leaves {
        frontier.push(&LogTreeHasher, *leaf, |level, index, node| {
            nodes.insert((level, index), *node);
        });
    }
    nodes
}

fn getter(nodes: &BTreeMap<(u8, u64), Digest>) -> impl FnMut(u8, u64) -> Result<Digest, ()> + '_ {
    |level, index| nodes.get(&(level, index)).copied().ok_or(())
}

#[test]
fn frontier_root_equals_the_recursive_definition_at_every_size() {
    let leaves = leaves(130);
    let mut frontier = Frontier::new();
    for n in 0..=leaves.len() {
        assert_eq!(
            frontier.root(&LogTreeHasher),
            root_of_leaves(&LogTreeHasher, &leaves[..n])
        );
        assert_eq!(frontier.nodes().len(), (n as u64).count_ones() as usize);
        if n < leaves.len() {
            frontier.push(&LogTreeHasher, leaves[n], |_, _, _| {});
        }
    }
}

#[test]
fn perfect_subtree_roots_give_the_root_of_every_prefix() {
    let leaves = leaves(100);
    let nodes = nodes(&leaves);
    for n in 0..=100u64 {
        let computed = root(&LogTreeHasher, n, &mut getter(&nodes)).unwrap();
        assert_eq!(
            computed,
            root_of_leaves(&LogTreeHasher, &leaves[..n as usize])
        );
    }
}

#[test]
fn every_inclusion_proof_of_small_trees_verifies() {
    let leaves = leaves(40);
    let nodes = nodes(&leaves);
    for size in 1..=40u64 {
        let root = root_of_leaves(&LogTreeHasher, &leaves[..size as usize]);
        for index in 0..size {
            let path = inclusion_path(&LogTreeHasher, index, size, &mut getter(&nodes)).unwrap();
            let leaf = &leaves[index as usize];
            assert_eq!(
                verify_inclusion(&LogTreeHasher, index, size, leaf, &path, &root),
                Ok(())
            );
        }
    }
}

#[test]
fn every_consistency_proof_of_small_trees_verifies() {
    let leaves = leaves(40);
    let nodes = nodes(&leaves);
    for size in 1..=40u64 {
        let root = root_of_leaves(&LogTreeHasher, &leaves[..size as usize]);
        for from in 1..=size {
            let from_root = root_of_leaves(&LogTreeHasher, &leaves[..from as usize]);
            let path = consistency_path(&LogTreeHasher, from, size, &mut getter(&nodes)).unwrap();
            assert_eq!(
                verify_consistency(&LogTreeHasher, from, size, &path, &from_root, &root),
                Ok(()),
                "{from} -> {size}"
            );
        }
    }
}

#[test]
fn split_is_the_largest_power_of_two_below() {
    for (n, k) in [
        (2, 1),
        (3, 2),
        (4, 2),
        (5, 4),
        (8, 4),
        (9, 8),
        (1 << 40, 1 << 39),
    ] {
        assert_eq!(split(n), k, "{n}");
    }
    assert_eq!(split(u64::MAX), 1 << 63);
}

#[test]
fn the_later_sizes_a_consistency_path_leaves_open_are_those_sharing_its_high_bits() {
    let check = |from_size: u64, size: u64, expected: std::ops::RangeInclusive<u64>| {
        assert_eq!(
            consistency_sizes_sharing_path(from_size, size),
            expected,
            "{from_size}..{size}"
        );
    };
    check(17, 1000, 513..=1024);
    check(999, 1000, 1000..=1000);
    check(3, 7, 5..=8);
    check(100, 150, 129..=256);
    // Degenerate sizes leave only the size itself; the largest sizes do not overflow.
    check(5, 5, 5..=5);
    check(0, 9, 9..=9);
    check(1, u64::MAX, (1 << 63) + 1..=u64::MAX);
    check(u64::MAX - 1, u64::MAX, u64::MAX..=u64::MAX);
}
