//! Known-answer tests for the RFC 6962 / RFC 9162 Merkle tree.
//!
//! Sources (facts and test vectors only; no code was copied):
//! - transparency-dev/merkle, `proof/verify_test.go`: the eight reference leaves, the roots of
//!   the trees of 1..=8 of them, and the inclusion and consistency proofs for that tree (these
//!   are the RFC 6962 reference vectors that google/certificate-transparency and trillian use).
//! - transparency-dev/merkle, `rfc6962/rfc6962_test.go`: leaf-hash and empty-root answers.
//! - transparency-dev/merkle, `proof/proof_test.go`: which stored nodes each proof reads.
//!
//! In transparency-dev's inclusion table the leaf number is 1-based; here every index is the
//! 0-based leaf index that `inclusion_plan` and `verify_inclusion` take.

use memlineage_core::Hash256;
use memlineage_core::merkle::{
    MemoryTree, MerkleError, NodeId, consistency_plan, empty_root, inclusion_plan, leaf_hash,
    node_hash, verify_consistency, verify_inclusion,
};

fn h(s: &str) -> Hash256 {
    s.parse().expect("64 hex digits")
}

/// The reference leaves, as hex.
const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

/// `ROOTS[n - 1]` is the root of the tree of the first `n` reference leaves.
const ROOTS: [&str; 8] = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// (0-based leaf index, tree size, proof).
const INCLUSION: [(u64, u64, &[&str]); 4] = [
    (
        0,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        5,
        8,
        &[
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        3,
        &["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"],
    ),
    (
        1,
        5,
        &[
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
];

/// (old size, new size, proof).
const CONSISTENCY: [(u64, u64, &[&str]); 5] = [
    (1, 1, &[]),
    (
        1,
        8,
        &[
            "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
        ],
    ),
    (
        6,
        8,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
    (
        2,
        5,
        &[
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
        ],
    ),
    (
        6,
        7,
        &[
            "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "b08693ec2e721597130641e8211e7eedccb4c26413963eee6c1e2ed16ffb1a5f",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
        ],
    ),
];

fn reference_tree() -> MemoryTree {
    let mut t = MemoryTree::new();
    for leaf in LEAVES {
        t.append(&hex::decode(leaf).expect("hex leaf"));
    }
    t
}

fn hashes(v: &[&str]) -> Vec<Hash256> {
    v.iter().map(|s| h(s)).collect()
}

fn flip(x: &Hash256, byte: usize, bit: u8) -> Hash256 {
    let mut y = *x;
    y.0[byte] ^= 1 << bit;
    y
}

#[test]
fn hashing_known_answers() {
    assert_eq!(
        empty_root(),
        h("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    );
    assert_eq!(
        leaf_hash(b""),
        h("6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d")
    );
    assert_eq!(
        leaf_hash(b"L123456"),
        h("395aa064aa4c29f7010acfe3f25db9485bbd4b91897b6ad7ad547639252b4d56")
    );
    // A node over the first two reference leaves is the size-2 root.
    let a = leaf_hash(&[]);
    let b = leaf_hash(&[0x00]);
    assert_eq!(node_hash(&a, &b), h(ROOTS[1]));
    assert_ne!(node_hash(&b, &a), h(ROOTS[1]));
}

#[test]
fn roots_of_reference_tree() {
    let t = reference_tree();
    assert_eq!(t.len(), 8);
    for (n, want) in ROOTS.iter().enumerate() {
        let size = n as u64 + 1;
        assert_eq!(t.root_at(size).unwrap(), h(want), "root of size {size}");
        // Building a tree of exactly `size` leaves gives the same root.
        let mut u = MemoryTree::new();
        for leaf in &LEAVES[..=n] {
            u.append(&hex::decode(leaf).unwrap());
        }
        assert_eq!(u.root(), h(want));
    }
    assert_eq!(t.root(), h(ROOTS[7]));
    assert_eq!(t.root_at(0).unwrap(), empty_root());
}

#[test]
fn inclusion_proofs_match_reference() {
    let t = reference_tree();
    for (index, size, proof) in INCLUSION {
        let want = hashes(proof);
        assert_eq!(
            t.inclusion_proof(index, size).unwrap(),
            want,
            "PATH({index}, D[{size}])"
        );
        let leaf = leaf_hash(&hex::decode(LEAVES[index as usize]).unwrap());
        let root = h(ROOTS[size as usize - 1]);
        verify_inclusion(&leaf, index, size, &want, &root).unwrap();
    }
    // One-leaf tree: empty proof, root = leaf hash.
    assert!(t.inclusion_proof(0, 1).unwrap().is_empty());
    verify_inclusion(&h(ROOTS[0]), 0, 1, &[], &h(ROOTS[0])).unwrap();
}

#[test]
fn consistency_proofs_match_reference() {
    let t = reference_tree();
    for (old, new, proof) in CONSISTENCY {
        let want = hashes(proof);
        assert_eq!(
            t.consistency_proof(old, new).unwrap(),
            want,
            "PROOF({old}, D[{new}])"
        );
        let (r1, r2) = (h(ROOTS[old as usize - 1]), h(ROOTS[new as usize - 1]));
        verify_consistency(old, new, &r1, &r2, &want).unwrap();
    }
}

/// The corruptions transparency-dev applies to each known-good inclusion proof.
#[test]
fn corrupted_inclusion_proofs_are_rejected() {
    let some = h("abacaba000000000000000000000000000000000000000000060061e00123456");
    for (index, size, proof) in INCLUSION {
        let proof = hashes(proof);
        let leaf = leaf_hash(&hex::decode(LEAVES[index as usize]).unwrap());
        let root = h(ROOTS[size as usize - 1]);
        let rejects = |i: u64, s: u64, l: &Hash256, p: &[Hash256], r: &Hash256, what: &str| {
            assert!(
                verify_inclusion(l, i, s, p, r).is_err(),
                "accepted {what} for ({index}, {size})"
            );
        };
        rejects(index.wrapping_sub(1), size, &leaf, &proof, &root, "index-1");
        rejects(index + 1, size, &leaf, &proof, &root, "index+1");
        rejects(index ^ 2, size, &leaf, &proof, &root, "index^2");
        rejects(index, size * 2, &leaf, &proof, &root, "size*2");
        rejects(index, size / 2, &leaf, &proof, &root, "size/2");
        rejects(
            index,
            size,
            &leaf_hash(b"WrongLeaf"),
            &proof,
            &root,
            "wrong leaf",
        );
        rejects(index, size, &leaf, &proof, &empty_root(), "empty root");
        rejects(index, size, &leaf, &proof, &some, "random root");
        let mut longer = proof.clone();
        longer.push(root);
        rejects(index, size, &leaf, &longer, &root, "trailing root");
        let mut front = vec![root];
        front.extend_from_slice(&proof);
        rejects(index, size, &leaf, &front, &root, "preceding root");
        for i in 0..proof.len() {
            let mut p = proof.clone();
            p[i] = flip(&p[i], 0, 3);
            rejects(index, size, &leaf, &p, &root, "flipped bit");
        }
        rejects(
            index,
            size,
            &leaf,
            &proof[..proof.len() - 1],
            &root,
            "removed",
        );
        if proof.len() > 1 {
            let mut p = vec![proof[0], some];
            p.extend_from_slice(&proof[1..]);
            rejects(index, size, &leaf, &p, &root, "inserted");
        }
    }
}

/// The corruptions transparency-dev applies to each non-trivial consistency proof.
#[test]
fn corrupted_consistency_proofs_are_rejected() {
    for (old, new, proof) in CONSISTENCY {
        let proof = hashes(proof);
        if proof.is_empty() {
            continue;
        }
        let (r1, r2) = (h(ROOTS[old as usize - 1]), h(ROOTS[new as usize - 1]));
        let wrong = leaf_hash(b"WrongRoot");
        let rejects = |o: u64, n: u64, a: &Hash256, b: &Hash256, p: &[Hash256], what: &str| {
            assert!(
                verify_consistency(o, n, a, b, p).is_err(),
                "accepted {what} for ({old}, {new})"
            );
        };
        rejects(old - 1, new, &r1, &r2, &proof, "old-1");
        rejects(old + 1, new, &r1, &r2, &proof, "old+1");
        rejects(old ^ 2, new, &r1, &r2, &proof, "old^2");
        rejects(old, new * 2, &r1, &r2, &proof, "new*2");
        rejects(old, new / 2, &r1, &r2, &proof, "new/2");
        rejects(old, new, &wrong, &r2, &proof, "wrong old root");
        rejects(old, new, &r1, &wrong, &proof, "wrong new root");
        rejects(old, new, &r2, &r1, &proof, "swapped roots");
        rejects(old, new, &r1, &r2, &[], "empty proof");
        for extra in [r1, r2] {
            let mut p = proof.clone();
            p.push(extra);
            rejects(old, new, &r1, &r2, &p, "trailing root");
            let mut p = vec![extra];
            p.extend_from_slice(&proof);
            rejects(old, new, &r1, &r2, &p, "preceding root");
        }
        let mut p = vec![proof[0]];
        p.extend_from_slice(&proof);
        rejects(old, new, &r1, &r2, &p, "preceding proof[0]");
        rejects(old, new, &r1, &r2, &proof[..proof.len() - 1], "truncated");
        for i in 0..proof.len() {
            let mut p = proof.clone();
            p[i] = flip(&p[i], 0, 4);
            rejects(old, new, &r1, &r2, &p, "flipped bit");
        }
    }
}

#[test]
fn trivial_consistency_cases() {
    let (r1, r2) = (h(ROOTS[0]), h(ROOTS[1]));
    // Equal sizes: empty proof, equal roots.
    verify_consistency(1, 1, &r1, &r1, &[]).unwrap();
    assert!(matches!(
        verify_consistency(1, 1, &r1, &r2, &[]),
        Err(MerkleError::EqualSizeRootsDiffer { size: 1, .. })
    ));
    assert!(matches!(
        verify_consistency(1, 1, &r1, &r1, &[empty_root()]),
        Err(MerkleError::ProofLength {
            expected: 0,
            actual: 1
        })
    ));
    // From the empty tree: empty proof and the empty root.
    verify_consistency(0, 0, &empty_root(), &empty_root(), &[]).unwrap();
    verify_consistency(0, 5, &empty_root(), &r2, &[]).unwrap();
    assert!(verify_consistency(0, 5, &r1, &r2, &[]).is_err());
    assert!(verify_consistency(0, 1, &empty_root(), &r1, &[empty_root()]).is_err());
    // Time travel.
    assert_eq!(
        verify_consistency(2, 1, &r2, &r1, &[]),
        Err(MerkleError::OldSizeGreater {
            old_size: 2,
            new_size: 1
        })
    );
    assert!(verify_consistency(1, 2, &r1, &r2, &[]).is_err());
}

#[test]
fn inclusion_probes_without_a_tree_fail() {
    let some = h("abacaba000000000000000000000000000000000000000000060061e00123456");
    for (index, size) in [(0, 0), (1, 0), (2, 1)] {
        assert_eq!(
            verify_inclusion(&some, index, size, &[], &empty_root()),
            Err(MerkleError::IndexOutOfRange { index, size })
        );
    }
    // A one-leaf tree whose root is not the leaf hash.
    assert!(verify_inclusion(&some, 0, 1, &[], &empty_root()).is_err());
}

/// (index or old size, tree size, the (level, index) of every node the plan reads).
type PlanCase = (u64, u64, &'static [(u8, u64)]);

fn ids(v: &[(u8, u64)]) -> Vec<NodeId> {
    v.iter().map(|&(l, i)| NodeId::new(l, i)).collect()
}

fn sorted(mut v: Vec<NodeId>) -> Vec<NodeId> {
    v.sort();
    v
}

/// Which stored nodes each proof reads, from transparency-dev's `proof/proof_test.go` tables.
/// Where our order differs from theirs (they list a folded element's nodes right to left),
/// the node *sets* are compared.
#[test]
fn plans_read_the_reference_nodes() {
    let inclusion: &[PlanCase] = &[
        (0, 1, &[]),
        (0, 2, &[(0, 1)]),
        (1, 2, &[(0, 0)]),
        (1, 3, &[(0, 0), (0, 2)]),
        (0, 7, &[(0, 1), (1, 1), (0, 6), (1, 2)]),
        (1, 7, &[(0, 0), (1, 1), (0, 6), (1, 2)]),
        (2, 7, &[(0, 3), (1, 0), (0, 6), (1, 2)]),
        (3, 7, &[(0, 2), (1, 0), (0, 6), (1, 2)]),
        (4, 7, &[(0, 5), (0, 6), (2, 0)]),
        (5, 7, &[(0, 4), (0, 6), (2, 0)]),
        (6, 7, &[(1, 2), (2, 0)]),
        (2, 4, &[(0, 3), (1, 0)]),
        (3, 5, &[(0, 2), (1, 0), (0, 4)]),
        (3, 6, &[(0, 2), (1, 0), (1, 2)]),
        (4, 6, &[(0, 5), (2, 0)]),
        (10, 15, &[(0, 11), (1, 4), (0, 14), (1, 6), (3, 0)]),
        (
            24,
            31,
            &[(0, 25), (1, 13), (0, 30), (1, 14), (3, 2), (4, 0)],
        ),
        (
            81,
            95,
            &[
                (0, 80),
                (1, 41),
                (2, 21),
                (0, 94),
                (1, 46),
                (2, 22),
                (4, 4),
                (6, 0),
            ],
        ),
    ];
    for &(index, size, want) in inclusion {
        let plan = inclusion_plan(index, size).unwrap();
        assert_eq!(
            sorted(plan.nodes().to_vec()),
            sorted(ids(want)),
            "inclusion ({index}, {size})"
        );
    }
    // Exact order where no element is folded: proof order, lowest sibling first.
    assert_eq!(
        inclusion_plan(3, 5).unwrap().nodes(),
        ids(&[(0, 2), (1, 0), (0, 4)])
    );
    // A folded element lists its nodes left to right.
    assert_eq!(
        inclusion_plan(0, 7).unwrap().nodes(),
        ids(&[(0, 1), (1, 1), (1, 2), (0, 6)])
    );

    let consistency: &[PlanCase] = &[
        (1, 2, &[(0, 1)]),
        (1, 4, &[(0, 1), (1, 1)]),
        (1, 6, &[(0, 1), (1, 1), (1, 2)]),
        (2, 3, &[(0, 2)]),
        (2, 8, &[(1, 1), (2, 1)]),
        (3, 7, &[(0, 2), (0, 3), (1, 0), (0, 6), (1, 2)]),
        (4, 7, &[(0, 6), (1, 2)]),
        (5, 7, &[(0, 4), (0, 5), (0, 6), (2, 0)]),
        (6, 7, &[(1, 2), (0, 6), (2, 0)]),
        (7, 8, &[(0, 6), (0, 7), (1, 2), (2, 0)]),
        (1, 1, &[]),
        (8, 8, &[]),
        (2, 4, &[(1, 1)]),
        (3, 5, &[(0, 2), (0, 3), (1, 0), (0, 4)]),
        (3, 6, &[(0, 2), (0, 3), (1, 0), (1, 2)]),
        (4, 6, &[(1, 2)]),
        (1, 7, &[(0, 1), (1, 1), (0, 6), (1, 2)]),
        (10, 15, &[(1, 4), (1, 5), (0, 14), (1, 6), (3, 0)]),
        (24, 31, &[(3, 2), (0, 30), (1, 14), (2, 6), (4, 0)]),
        (
            81,
            95,
            &[
                (0, 80),
                (0, 81),
                (1, 41),
                (2, 21),
                (0, 94),
                (1, 46),
                (2, 22),
                (4, 4),
                (6, 0),
            ],
        ),
    ];
    for &(old, new, want) in consistency {
        let plan = consistency_plan(old, new).unwrap();
        assert_eq!(
            sorted(plan.nodes().to_vec()),
            sorted(ids(want)),
            "consistency ({old}, {new})"
        );
    }
    assert_eq!(
        consistency_plan(5, 7).unwrap().nodes(),
        ids(&[(0, 4), (0, 5), (0, 6), (2, 0)])
    );

    for (index, size) in [(0, 0), (1, 0), (2, 1), (3, 0), (8, 7)] {
        assert!(inclusion_plan(index, size).is_err());
    }
    for (old, new) in [(5, 0), (9, 8)] {
        assert!(consistency_plan(old, new).is_err());
    }
}
