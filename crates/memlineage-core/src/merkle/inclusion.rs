//! Inclusion proofs: RFC 9162 §2.1.3.
//!
//! `PATH(m, D[n])` (§2.1.3.1) lists, from the leaf up, the hash of the sibling subtree at each
//! level where the path to leaf `m` has one. Siblings to the left of the path are always
//! complete; a sibling to the right is complete except for the first one met while the path
//! still runs along the right edge of the tree, whose hash is then folded from at most
//! `log2(n)` stored nodes.

use super::{MerkleError, ProofPlan, node::split_point, node_hash};
use crate::Hash256;

/// The subtree ranges of `PATH(index, D[0:size])`, top-down (the reverse of proof order).
fn path_ranges_top_down(index: u64, size: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(64);
    let (mut lo, mut hi) = (0u64, size);
    while hi - lo > 1 {
        let k = split_point(hi - lo);
        if index < lo + k {
            // PATH(m, D[n]) = PATH(m, D[0:k]) : MTH(D[k:n])
            out.push((lo + k, hi));
            hi = lo + k;
        } else {
            // PATH(m, D[n]) = PATH(m - k, D[k:n]) : MTH(D[0:k])
            out.push((lo, lo + k));
            lo += k;
        }
    }
    out
}

/// The plan for the inclusion proof of leaf `index` in the tree of the first `size` leaves
/// (RFC 9162 §2.1.3.1 `PATH(index, D[size])`).
///
/// Fails with [`MerkleError::IndexOutOfRange`] unless `index < size`.
pub fn inclusion_plan(index: u64, size: u64) -> Result<ProofPlan, MerkleError> {
    if index >= size {
        return Err(MerkleError::IndexOutOfRange { index, size });
    }
    let ranges = path_ranges_top_down(index, size);
    Ok(ProofPlan::from_ranges(ranges.into_iter().rev()))
}

/// The number of hashes in the inclusion proof of leaf `index` in a tree of `size` leaves;
/// requires `index < size`.
///
/// Below the highest bit where `index` and `size - 1` differ, every level has a sibling. Above
/// it the path runs along the right edge of the tree, where a level has a sibling (to the left)
/// only if the path turns right there, i.e. where `index` has a one bit.
pub fn inclusion_proof_len(index: u64, size: u64) -> usize {
    debug_assert!(index < size);
    let inner = 64 - (index ^ (size - 1)).leading_zeros();
    let border = index.checked_shr(inner).unwrap_or(0).count_ones();
    (inner + border) as usize
}

/// The root that `proof` leads to from `leaf_hash` at `index` in a tree of `size` leaves,
/// following RFC 9162 §2.1.3.2 steps 1–4.
///
/// Fails if `index >= size` or the proof has the wrong length for `(index, size)`.
pub fn root_from_inclusion_proof(
    leaf_hash: &Hash256,
    index: u64,
    size: u64,
    proof: &[Hash256],
) -> Result<Hash256, MerkleError> {
    if index >= size {
        return Err(MerkleError::IndexOutOfRange { index, size });
    }
    let expected = inclusion_proof_len(index, size);
    if proof.len() != expected {
        return Err(MerkleError::ProofLength {
            expected,
            actual: proof.len(),
        });
    }
    // fn: the node's index at the current level; sn: the index of the last node at that level.
    let (mut fn_, mut sn) = (index, size - 1);
    let mut r = *leaf_hash;
    for p in proof {
        if sn == 0 {
            // Unreachable after the length check; kept as the RFC states it.
            return Err(MerkleError::ProofLength {
                expected,
                actual: proof.len(),
            });
        }
        if fn_ & 1 == 1 || fn_ == sn {
            r = node_hash(p, &r);
            // A left child that is the last node of its level has no sibling: climb until it
            // becomes a right child or reaches the top.
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    debug_assert_eq!(sn, 0);
    Ok(r)
}

/// Verifies that `leaf_hash` is leaf `index` of the tree of `size` leaves with root `root`
/// (RFC 9162 §2.1.3.2).
///
/// `leaf_hash` is [`leaf_hash`](super::leaf_hash) of the entry, not the entry itself.
pub fn verify_inclusion(
    leaf_hash: &Hash256,
    index: u64,
    size: u64,
    proof: &[Hash256],
    root: &Hash256,
) -> Result<(), MerkleError> {
    let computed = root_from_inclusion_proof(leaf_hash, index, size, proof)?;
    if computed == *root {
        Ok(())
    } else {
        Err(MerkleError::RootMismatch {
            expected: *root,
            computed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::NodeId;

    fn ids(v: &[(u8, u64)]) -> Vec<NodeId> {
        v.iter().map(|&(l, i)| NodeId::new(l, i)).collect()
    }

    #[test]
    fn merkle_inclusion_plan_nodes_for_seven_leaves() {
        // Tree of 7: g=(1,0) h=(1,1) i=(1,2) k=(2,0); l = MTH(D[4:7]) = node_hash(i, j).
        let p = inclusion_plan(0, 7).unwrap();
        assert_eq!(p.nodes(), ids(&[(0, 1), (1, 1), (1, 2), (0, 6)]));
        assert_eq!(p.proof_len(), 3);
        let p = inclusion_plan(6, 7).unwrap();
        assert_eq!(p.nodes(), ids(&[(1, 2), (2, 0)]));
        let p = inclusion_plan(4, 7).unwrap();
        assert_eq!(p.nodes(), ids(&[(0, 5), (0, 6), (2, 0)]));
        assert!(inclusion_plan(0, 1).unwrap().is_empty());
        assert_eq!(
            inclusion_plan(7, 7),
            Err(MerkleError::IndexOutOfRange { index: 7, size: 7 })
        );
        assert!(inclusion_plan(0, 0).is_err());
    }

    #[test]
    fn merkle_inclusion_len_matches_plan() {
        for size in 1..200u64 {
            for index in 0..size {
                let plan = inclusion_plan(index, size).unwrap();
                assert_eq!(plan.proof_len(), inclusion_proof_len(index, size));
            }
        }
        assert_eq!(inclusion_proof_len(0, u64::MAX), 64);
        assert_eq!(inclusion_proof_len(u64::MAX - 1, u64::MAX), 63);
    }
}
