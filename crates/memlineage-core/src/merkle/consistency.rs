//! Consistency proofs: RFC 9162 §2.1.4.
//!
//! `PROOF(m, D[n]) = SUBPROOF(m, D[n], true)` (§2.1.4.1) shows that the tree of the first `m`
//! leaves is a prefix of the tree of `n` leaves. Descending from the root of the new tree, each
//! step keeps the side that holds the old tree's right edge and emits the hash of the other
//! side; at the bottom it emits the old subtree itself, unless that subtree is the whole old
//! tree (the `true` flag), whose root the verifier already has.

use super::{MerkleError, ProofPlan, empty_root, node::split_point, node_hash};
use crate::Hash256;

/// The subtree ranges of `PROOF(old, D[0:new])` in proof order; requires `0 < old < new`.
fn proof_ranges(old: u64, new: u64) -> Vec<(u64, u64)> {
    debug_assert!(0 < old && old < new);
    let mut descent = Vec::with_capacity(64);
    let mut base = None;
    let (mut lo, mut hi) = (0u64, new);
    let mut m = old; // the old size relative to lo
    let mut whole_old_tree = true; // SUBPROOF's boolean b
    loop {
        let len = hi - lo;
        if m == len {
            // SUBPROOF(m, D[m], true) = {};  SUBPROOF(m, D[m], false) = {MTH(D[m])}
            if !whole_old_tree {
                base = Some((lo, hi));
            }
            break;
        }
        let k = split_point(len);
        if m <= k {
            // SUBPROOF(m, D[n], b) = SUBPROOF(m, D[0:k], b) : MTH(D[k:n])
            descent.push((lo + k, hi));
            hi = lo + k;
        } else {
            // SUBPROOF(m, D[n], b) = SUBPROOF(m - k, D[k:n], false) : MTH(D[0:k])
            descent.push((lo, lo + k));
            lo += k;
            m -= k;
            whole_old_tree = false;
        }
    }
    // The recursion emits the deepest part first, then each level's sibling on the way back up.
    base.into_iter().chain(descent.into_iter().rev()).collect()
}

/// The plan for the consistency proof between the trees of the first `old_size` and
/// `new_size` leaves (RFC 9162 §2.1.4.1 `PROOF(old_size, D[new_size])`).
///
/// The proof is empty when `old_size` is 0 or equals `new_size`: every tree extends the empty
/// tree, and a tree is consistent with itself exactly when the roots are equal.
/// Fails with [`MerkleError::OldSizeGreater`] if `old_size > new_size`.
pub fn consistency_plan(old_size: u64, new_size: u64) -> Result<ProofPlan, MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::OldSizeGreater { old_size, new_size });
    }
    if old_size == 0 || old_size == new_size {
        return Ok(ProofPlan::default());
    }
    Ok(ProofPlan::from_ranges(proof_ranges(old_size, new_size)))
}

/// The number of hashes in the consistency proof from `old_size` to `new_size`;
/// requires `old_size <= new_size`.
pub fn consistency_proof_len(old_size: u64, new_size: u64) -> usize {
    debug_assert!(old_size <= new_size);
    if old_size == 0 || old_size == new_size {
        return 0;
    }
    // One hash per level where the old tree's right edge is not a left-aligned power of two,
    // found by walking the same descent as `proof_ranges` without storing it.
    let (mut lo, mut hi, mut m, mut whole) = (0u64, new_size, old_size, true);
    let mut n = 0;
    loop {
        let len = hi - lo;
        if m == len {
            return n + usize::from(!whole);
        }
        let k = split_point(len);
        if m <= k {
            hi = lo + k;
        } else {
            lo += k;
            m -= k;
            whole = false;
        }
        n += 1;
    }
}

/// Verifies that the tree of `new_size` leaves with root `new_root` extends the tree of
/// `old_size` leaves with root `old_root` (RFC 9162 §2.1.4.2).
///
/// Edge cases, handled before the RFC algorithm (which assumes `0 < old_size < new_size`):
/// equal sizes need an empty proof and equal roots; `old_size == 0` needs an empty proof and
/// `old_root == SHA-256("")` (we check the empty root rather than accept any value, so a
/// malformed size-0 checkpoint cannot slip through).
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    old_root: &Hash256,
    new_root: &Hash256,
    proof: &[Hash256],
) -> Result<(), MerkleError> {
    if old_size > new_size {
        return Err(MerkleError::OldSizeGreater { old_size, new_size });
    }
    let expected = consistency_proof_len(old_size, new_size);
    if proof.len() != expected {
        return Err(MerkleError::ProofLength {
            expected,
            actual: proof.len(),
        });
    }
    if old_size == new_size {
        if old_root != new_root {
            return Err(MerkleError::EqualSizeRootsDiffer {
                size: old_size,
                old_root: *old_root,
                new_root: *new_root,
            });
        }
        if old_size == 0 && *old_root != empty_root() {
            return Err(MerkleError::EmptyRootMismatch {
                got: *old_root,
                want: empty_root(),
            });
        }
        return Ok(());
    }
    if old_size == 0 {
        if *old_root != empty_root() {
            return Err(MerkleError::EmptyRootMismatch {
                got: *old_root,
                want: empty_root(),
            });
        }
        return Ok(());
    }

    // Step 2: when the old tree is a complete subtree, its root is the first path element.
    let seed = old_size.is_power_of_two().then_some(old_root);
    let mut path = seed.into_iter().chain(proof.iter());
    let Some(first) = path.next() else {
        // Unreachable after the length check (0 < old < new needs at least one hash).
        return Err(MerkleError::ProofLength {
            expected,
            actual: proof.len(),
        });
    };
    // Step 3–4: fn/sn index the old tree's and new tree's last node at the current level;
    // skip the levels where the old tree's last node is a right child.
    let (mut fn_, mut sn) = (old_size - 1, new_size - 1);
    while fn_ & 1 == 1 {
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 5–6.
    let (mut fr, mut sr) = (*first, *first);
    for c in path {
        if sn == 0 {
            return Err(MerkleError::ProofLength {
                expected,
                actual: proof.len(),
            });
        }
        if fn_ & 1 == 1 || fn_ == sn {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fn_ & 1 == 0 && fn_ != 0 {
                fn_ >>= 1;
                sn >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fn_ >>= 1;
        sn >>= 1;
    }
    // Step 7.
    if fr != *old_root {
        return Err(MerkleError::OldRootMismatch {
            expected: *old_root,
            computed: fr,
        });
    }
    if sr != *new_root || sn != 0 {
        return Err(MerkleError::NewRootMismatch {
            expected: *new_root,
            computed: sr,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::NodeId;

    fn ids(v: &[(u8, u64)]) -> Vec<NodeId> {
        v.iter().map(|&(l, i)| NodeId::new(l, i)).collect()
    }

    #[test]
    fn merkle_consistency_plan_nodes() {
        // Tree of 7 (see inclusion tests); between 5 and 7 the proof is e f j k.
        assert_eq!(
            consistency_plan(5, 7).unwrap().nodes(),
            ids(&[(0, 4), (0, 5), (0, 6), (2, 0)])
        );
        // 6 -> 7: i j k.
        assert_eq!(
            consistency_plan(6, 7).unwrap().nodes(),
            ids(&[(1, 2), (0, 6), (2, 0)])
        );
        // 4 -> 7: a single element l = node_hash(i, j), read as two nodes.
        let p = consistency_plan(4, 7).unwrap();
        assert_eq!(p.nodes(), ids(&[(1, 2), (0, 6)]));
        assert_eq!(p.proof_len(), 1);
        assert!(consistency_plan(0, 7).unwrap().is_empty());
        assert!(consistency_plan(7, 7).unwrap().is_empty());
        assert_eq!(
            consistency_plan(8, 7),
            Err(MerkleError::OldSizeGreater {
                old_size: 8,
                new_size: 7
            })
        );
    }

    #[test]
    fn merkle_consistency_len_matches_plan() {
        for new in 0..130u64 {
            for old in 0..=new {
                let plan = consistency_plan(old, new).unwrap();
                assert_eq!(plan.proof_len(), consistency_proof_len(old, new));
            }
        }
        // Large sizes must not overflow.
        assert!(consistency_proof_len(u64::MAX - 1, u64::MAX) <= 65);
        assert!(consistency_plan(3, u64::MAX).is_ok());
    }
}
