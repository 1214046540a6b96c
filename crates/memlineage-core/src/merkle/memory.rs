//! An in-memory Merkle tree that keeps every complete node.
//!
//! It is the reference storage for the proof plans (a proof is read from stored nodes exactly
//! as the SQLite store does) and the fast path for building a tree in memory.

use super::{
    MerkleError, NodeId, ProofPlan, consistency_plan, empty_root, inclusion_plan, leaf_hash,
    node_hash,
};
use crate::Hash256;

/// All complete nodes of a log, one `Vec` per level (`levels[l][i]` is node `(l, i)`).
///
/// Appending leaf `i` writes its leaf hash and the `trailing_ones(i)` nodes it completes
/// (amortised fewer than one hash per append, never more than `log2(n)`), with no allocation
/// beyond amortised `Vec` growth. The storage is about `2n` hashes for `n` leaves.
#[derive(Debug, Clone, Default)]
pub struct MemoryTree {
    levels: Vec<Vec<Hash256>>,
}

impl MemoryTree {
    /// An empty tree.
    pub fn new() -> Self {
        MemoryTree { levels: Vec::new() }
    }

    /// An empty tree with room for `leaves` leaves before the level vectors reallocate.
    pub fn with_capacity(leaves: usize) -> Self {
        let mut levels = Vec::new();
        let mut n = leaves;
        while n > 0 {
            levels.push(Vec::with_capacity(n));
            n >>= 1;
        }
        MemoryTree { levels }
    }

    /// The number of leaves.
    pub fn len(&self) -> u64 {
        self.levels.first().map_or(0, |l| l.len() as u64)
    }

    /// True when no leaf has been appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends a leaf given its leaf hash ([`leaf_hash`] of the entry bytes).
    pub fn append_leaf_hash(&mut self, h: Hash256) {
        let mut level = 0usize;
        let mut hash = h;
        loop {
            if self.levels.len() == level {
                self.levels.push(Vec::new());
            }
            let row = &mut self.levels[level];
            row.push(hash);
            let idx = row.len() - 1;
            if idx & 1 == 0 {
                return;
            }
            // The new node is a right child: its parent just became complete.
            hash = node_hash(&row[idx - 1], &row[idx]);
            level += 1;
        }
    }

    /// Appends leaf bytes (hashing them with [`leaf_hash`]) and returns the new leaf's index.
    pub fn append(&mut self, leaf: &[u8]) -> u64 {
        let index = self.len();
        self.append_leaf_hash(leaf_hash(leaf));
        index
    }

    /// The hash of a complete node, or `None` if it is not complete yet.
    pub fn node(&self, id: NodeId) -> Option<Hash256> {
        let index = usize::try_from(id.index).ok()?;
        self.levels.get(usize::from(id.level))?.get(index).copied()
    }

    /// The root of the whole tree (`SHA-256("")` when empty).
    pub fn root(&self) -> Hash256 {
        self.fold_root(self.len())
    }

    /// The root of the tree of the first `size` leaves, as it was when `size` leaves had been
    /// appended (RFC 9162 §2.1.1 `MTH(D[0:size])`).
    pub fn root_at(&self, size: u64) -> Result<Hash256, MerkleError> {
        self.check_size(size)?;
        Ok(self.fold_root(size))
    }

    /// The inclusion proof of leaf `index` in the tree of the first `size` leaves
    /// (RFC 9162 §2.1.3.1), read from stored nodes through [`inclusion_plan`].
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash256>, MerkleError> {
        self.check_size(size)?;
        self.read(&inclusion_plan(index, size)?)
    }

    /// The consistency proof between the trees of the first `old` and `new` leaves
    /// (RFC 9162 §2.1.4.1), read from stored nodes through [`consistency_plan`].
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash256>, MerkleError> {
        self.check_size(new)?;
        self.read(&consistency_plan(old, new)?)
    }

    fn read(&self, plan: &ProofPlan) -> Result<Vec<Hash256>, MerkleError> {
        plan.assemble_with(|id| self.node(id))
    }

    fn check_size(&self, size: u64) -> Result<(), MerkleError> {
        let len = self.len();
        if size > len {
            return Err(MerkleError::SizeBeyondTree { size, len });
        }
        Ok(())
    }

    /// Folds the complete subtrees of `size` (one per set bit), smallest (rightmost) first,
    /// without allocating; `size <= len`.
    fn fold_root(&self, size: u64) -> Hash256 {
        let mut acc: Option<Hash256> = None;
        for level in 0..self.levels.len() {
            if (size >> level) & 1 == 1 {
                // The subtree at this level starts after the larger subtrees to its left.
                let index = ((size >> level) - 1) as usize;
                let node = self.levels[level][index];
                acc = Some(match acc {
                    None => node,
                    Some(right) => node_hash(&node, &right),
                });
            }
        }
        acc.unwrap_or_else(empty_root)
    }
}

impl Extend<Hash256> for MemoryTree {
    /// Appends leaf hashes.
    fn extend<I: IntoIterator<Item = Hash256>>(&mut self, iter: I) {
        for h in iter {
            self.append_leaf_hash(h);
        }
    }
}

impl FromIterator<Hash256> for MemoryTree {
    /// Builds a tree from leaf hashes.
    fn from_iter<I: IntoIterator<Item = Hash256>>(iter: I) -> Self {
        let mut t = MemoryTree::new();
        t.extend(iter);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{completed_by_append, root_from_nodes, root_nodes};

    #[test]
    fn merkle_memory_tree_stores_completed_nodes() {
        let mut t = MemoryTree::new();
        assert!(t.is_empty());
        assert_eq!(t.root(), empty_root());
        for i in 0..37u64 {
            assert_eq!(t.append(&i.to_be_bytes()), i);
            for id in completed_by_append(i) {
                let (l, r) = id.children().unwrap();
                let want = node_hash(&t.node(l).unwrap(), &t.node(r).unwrap());
                assert_eq!(t.node(id), Some(want));
            }
            let size = t.len();
            let nodes: Vec<_> = root_nodes(size)
                .into_iter()
                .map(|id| t.node(id).unwrap())
                .collect();
            assert_eq!(t.root(), root_from_nodes(&nodes));
        }
        assert_eq!(t.node(NodeId::new(1, 18)), None);
        assert_eq!(t.node(NodeId::new(60, 0)), None);
        assert_eq!(
            t.root_at(38),
            Err(MerkleError::SizeBeyondTree { size: 38, len: 37 })
        );
        assert_eq!(t.root_at(0), Ok(empty_root()));
        assert!(t.inclusion_proof(0, 38).is_err());
        assert!(t.consistency_proof(1, 38).is_err());
        let u: MemoryTree = (0..37u64).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        assert_eq!(u.root(), t.root());
        let mut w = MemoryTree::with_capacity(100);
        w.extend((0..37u64).map(|i| leaf_hash(&i.to_be_bytes())));
        assert_eq!(w.root(), t.root());
    }
}
