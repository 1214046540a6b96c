//! Property tests: proofs read from stored nodes through plans equal the proofs of a naive,
//! leaf-rehashing RFC 9162 implementation, verify, and stop verifying when anything is altered.

use memlineage_core::Hash256;
use memlineage_core::merkle::{
    MemoryTree, NodeId, completed_by_append, consistency_plan, consistency_proof_len,
    inclusion_plan, inclusion_proof_len, leaf_hash, node_hash, root_from_nodes, root_nodes,
    verify_consistency, verify_inclusion,
};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

// ---------------------------------------------------------------------------------------------
// A naive RFC 9162 §2.1 implementation over leaf hashes, written straight from the definitions.

/// Largest power of two strictly smaller than `n` (n ≥ 2).
fn k_of(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// MTH(D[n]) (§2.1.1), from leaf hashes.
fn mth(d: &[Hash256]) -> Hash256 {
    match d.len() {
        0 => Hash256::of(b""),
        1 => d[0],
        n => {
            let k = k_of(n);
            node_hash(&mth(&d[..k]), &mth(&d[k..]))
        }
    }
}

/// PATH(m, D[n]) (§2.1.3.1).
fn path(m: usize, d: &[Hash256]) -> Vec<Hash256> {
    let n = d.len();
    if n == 1 {
        return vec![];
    }
    let k = k_of(n);
    if m < k {
        let mut p = path(m, &d[..k]);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = path(m - k, &d[k..]);
        p.push(mth(&d[..k]));
        p
    }
}

/// SUBPROOF(m, D[n], b) (§2.1.4.1).
fn subproof(m: usize, d: &[Hash256], b: bool) -> Vec<Hash256> {
    let n = d.len();
    if m == n {
        return if b { vec![] } else { vec![mth(d)] };
    }
    let k = k_of(n);
    if m <= k {
        let mut p = subproof(m, &d[..k], b);
        p.push(mth(&d[k..]));
        p
    } else {
        let mut p = subproof(m - k, &d[k..], false);
        p.push(mth(&d[..k]));
        p
    }
}

/// PROOF(m, D[n]) for 0 < m ≤ n.
fn proof(m: usize, d: &[Hash256]) -> Vec<Hash256> {
    subproof(m, d, true)
}

// ---------------------------------------------------------------------------------------------

fn leaves(n: u64, seed: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut v = seed.to_be_bytes().to_vec();
            v.extend_from_slice(&i.to_be_bytes());
            v
        })
        .collect()
}

fn ceil_log2(n: u64) -> u32 {
    if n <= 1 {
        0
    } else {
        64 - (n - 1).leading_zeros()
    }
}

/// The node-read bound we assert: a proof has at most `ceil(log2 n) + 1` elements, and only
/// one of them (the one touching the ragged right edge) folds several nodes, fewer than
/// `ceil(log2 n)` of them.
fn node_bound(n: u64) -> usize {
    2 * ceil_log2(n) as usize + 2
}

fn flip(x: &Hash256, bit: usize) -> Hash256 {
    let mut y = *x;
    y.0[(bit / 8) % 32] ^= 1 << (bit % 8);
    y
}

fn check_plan_shape(nodes: &[NodeId], size: u64) {
    assert!(
        nodes.len() <= node_bound(size),
        "{} nodes for size {size}",
        nodes.len()
    );
    let distinct: HashSet<_> = nodes.iter().collect();
    assert_eq!(distinct.len(), nodes.len(), "plan lists a node twice");
    for id in nodes {
        let end = id.end_leaf().expect("node end fits u64");
        assert!(end <= size, "node {id} is not complete at size {size}");
    }
}

/// Everything about one tree of `n` leaves: all inclusion proofs, all consistency proofs into
/// it, all past roots.
fn check_tree(n: u64, seed: u64, tamper_bit: usize) {
    let data = leaves(n, seed);
    let mut tree = MemoryTree::new();
    for (i, leaf) in data.iter().enumerate() {
        assert_eq!(tree.append(leaf), i as u64);
    }
    let lh: Vec<Hash256> = data.iter().map(|l| leaf_hash(l)).collect();
    let root = tree.root();
    assert_eq!(root, mth(&lh));

    for index in 0..n {
        let i = index as usize;
        let got = tree.inclusion_proof(index, n).expect("inclusion proof");
        assert_eq!(got, path(i, &lh), "PATH({index}, D[{n}])");
        assert_eq!(got.len(), inclusion_proof_len(index, n));
        assert!(got.len() <= ceil_log2(n) as usize);
        check_plan_shape(inclusion_plan(index, n).expect("inclusion plan").nodes(), n);
        verify_inclusion(&lh[i], index, n, &got, &root).expect("valid inclusion proof");

        // Tampering: a flipped bit in any element, a wrong index, a wrong leaf, a wrong root,
        // a wrong size.
        for j in 0..got.len() {
            let mut bad = got.clone();
            bad[j] = flip(&bad[j], tamper_bit);
            assert!(verify_inclusion(&lh[i], index, n, &bad, &root).is_err());
        }
        for other in [index.wrapping_sub(1), index + 1, index ^ 1, index ^ 2] {
            if other != index {
                assert!(verify_inclusion(&lh[i], other, n, &got, &root).is_err());
            }
        }
        assert!(verify_inclusion(&flip(&lh[i], tamper_bit), index, n, &got, &root).is_err());
        assert!(verify_inclusion(&lh[i], index, n, &got, &flip(&root, tamper_bit)).is_err());
        // The size is not hashed into the root, so a proof can also fit a slightly larger
        // size with the same path shape; doubling the size always adds a level.
        assert!(verify_inclusion(&lh[i], index, n * 2, &got, &root).is_err());
        if n > 1 {
            let shorter = &got[..got.len().saturating_sub(1)];
            assert!(verify_inclusion(&lh[i], index, n, shorter, &root).is_err());
        }
    }

    for old in 0..=n {
        let o = old as usize;
        let old_root = tree.root_at(old).expect("past root");
        assert_eq!(old_root, mth(&lh[..o]), "root_at({old})");
        let got = tree.consistency_proof(old, n).expect("consistency proof");
        let want = if old == 0 { vec![] } else { proof(o, &lh) };
        assert_eq!(got, want, "PROOF({old}, D[{n}])");
        assert_eq!(got.len(), consistency_proof_len(old, n));
        assert!(got.len() <= ceil_log2(n) as usize + 1);
        check_plan_shape(
            consistency_plan(old, n).expect("consistency plan").nodes(),
            n,
        );
        verify_consistency(old, n, &old_root, &root, &got).expect("valid consistency proof");

        if old == n || old == 0 {
            continue;
        }
        for j in 0..got.len() {
            let mut bad = got.clone();
            bad[j] = flip(&bad[j], tamper_bit);
            assert!(verify_consistency(old, n, &old_root, &root, &bad).is_err());
        }
        let bad_old = flip(&old_root, tamper_bit);
        assert!(verify_consistency(old, n, &bad_old, &root, &got).is_err());
        let bad_new = flip(&root, tamper_bit);
        assert!(verify_consistency(old, n, &old_root, &bad_new, &got).is_err());
        assert!(verify_consistency(old, n, &root, &old_root, &got).is_err());
        assert!(verify_consistency(old + 1, n, &old_root, &root, &got).is_err());
        assert!(verify_consistency(old - 1, n, &old_root, &root, &got).is_err());
        assert!(verify_consistency(old, n * 2, &old_root, &root, &got).is_err());
        assert!(verify_consistency(old, n, &old_root, &root, &got[1..]).is_err());
    }
}

#[test]
fn every_proof_of_every_small_tree() {
    for n in 1..=70 {
        check_tree(n, 0x5eed, (n as usize * 7) % 256);
    }
}

/// The storage contract: a store that writes, per append, the leaf hash and exactly the nodes
/// of `completed_by_append` (each from its two stored children) serves every root and proof.
#[test]
fn append_only_node_store_serves_all_proofs() {
    let n = 100u64;
    let data = leaves(n, 9);
    let mut store: HashMap<NodeId, Hash256> = HashMap::new();
    let mut tree = MemoryTree::new();
    for (i, leaf) in data.iter().enumerate() {
        let i = i as u64;
        tree.append(leaf);
        assert!(store.insert(NodeId::leaf(i), leaf_hash(leaf)).is_none());
        for id in completed_by_append(i) {
            let (l, r) = id.children().unwrap();
            let h = node_hash(&store[&l], &store[&r]);
            assert!(store.insert(id, h).is_none(), "node {id} written twice");
        }
        let size = i + 1;
        let nodes: Vec<Hash256> = root_nodes(size).iter().map(|id| store[id]).collect();
        assert_eq!(root_from_nodes(&nodes), tree.root());
    }
    assert_eq!(store.len() as u64, 2 * n - u64::from(n.count_ones()));
    for size in 1..=n {
        for index in 0..size {
            let plan = inclusion_plan(index, size).unwrap();
            let fetched: Vec<Hash256> = plan.nodes().iter().map(|id| store[id]).collect();
            assert_eq!(
                plan.assemble(&fetched).unwrap(),
                tree.inclusion_proof(index, size).unwrap()
            );
        }
        let plan = consistency_plan(size / 3 + 1, size).unwrap();
        let fetched: Vec<Hash256> = plan.nodes().iter().map(|id| store[id]).collect();
        assert_eq!(
            plan.assemble(&fetched).unwrap(),
            tree.consistency_proof(size / 3 + 1, size).unwrap()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn random_trees_match_naive(n in 1u64..=300, seed in any::<u64>(), bit in 0usize..256) {
        check_tree(n, seed, bit);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Plans for huge trees (no tree needed) read O(log n) complete, distinct nodes, and the
    /// proof length agrees with the length the verifier expects.
    #[test]
    fn plans_are_logarithmic(
        size in prop_oneof![1u64..=u64::MAX, Just(u64::MAX), (1u32..64).prop_map(|e| 1u64 << e)],
        a in any::<u64>(),
        b in any::<u64>(),
    ) {
        let index = a % size;
        let plan = inclusion_plan(index, size).unwrap();
        check_plan_shape(plan.nodes(), size);
        prop_assert_eq!(plan.proof_len(), inclusion_proof_len(index, size));
        prop_assert!(plan.proof_len() <= ceil_log2(size) as usize);

        let old = match size.checked_add(1) {
            Some(bound) => b % bound,
            None => b,
        };
        let plan = consistency_plan(old, size).unwrap();
        check_plan_shape(plan.nodes(), size);
        prop_assert_eq!(plan.proof_len(), consistency_proof_len(old, size));
        prop_assert!(plan.proof_len() <= ceil_log2(size) as usize + 1);
        // The fold of each element is MTH of a range: consecutive nodes of strictly
        // decreasing level that tile it without gaps.
        for element in plan.elements() {
            for w in element.windows(2) {
                prop_assert!(w[0].level > w[1].level);
                prop_assert_eq!(w[0].end_leaf(), w[1].first_leaf());
            }
        }
    }
}
