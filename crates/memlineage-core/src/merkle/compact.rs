//! A compact range: the right edge of a tree, enough to extend it leaf by leaf and compute its
//! root, without the rest of the tree.
//!
//! The complete subtrees that tile the first `n` leaves are exactly the nodes of
//! [`root_nodes(n)`](super::root_nodes), one per set bit of `n`, largest first. Appending a
//! leaf adds a level-0 node and merges the two rightmost nodes while they are of equal size,
//! as a binary counter carries; the root is their fold ([`root_from_nodes`]). A monitor keeps
//! this (`popcount(n)` hashes) to check that the leaves a log serves after its last verified
//! checkpoint lead to the next checkpoint's root: the leaves are then both included and
//! consistent, whatever the log's stored nodes say (the approach of transparency-dev's
//! `compact` package, RFC 9162 §2.1.1 trees).

use super::{MerkleError, leaf_hash, node_hash, root_from_nodes};
use crate::Hash256;

/// The right edge of the tree of the first `size` leaves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactRange {
    size: u64,
    /// `(level, hash)` of each complete subtree, largest (leftmost) first.
    nodes: Vec<(u8, Hash256)>,
}

impl CompactRange {
    /// The range of the empty tree.
    pub fn new() -> CompactRange {
        CompactRange::default()
    }

    /// Rebuilds a range from its size and the hashes of `root_nodes(size)`, in that order (as
    /// saved by [`hashes`](Self::hashes)).
    pub fn from_parts(size: u64, hashes: &[Hash256]) -> Result<CompactRange, MerkleError> {
        let ids = super::root_nodes(size);
        if ids.len() != hashes.len() {
            return Err(MerkleError::FetchedCount {
                expected: ids.len(),
                actual: hashes.len(),
            });
        }
        Ok(CompactRange {
            size,
            nodes: ids
                .iter()
                .map(|id| id.level)
                .zip(hashes.iter().copied())
                .collect(),
        })
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The hashes of the complete subtrees, largest first (`root_nodes(size)`'s order).
    pub fn hashes(&self) -> Vec<Hash256> {
        self.nodes.iter().map(|(_, h)| *h).collect()
    }

    /// The RFC 9162 root of the tree of [`size`](Self::size) leaves.
    pub fn root(&self) -> Hash256 {
        root_from_nodes(&self.hashes())
    }

    /// Appends the leaf with bytes `leaf`.
    pub fn append_leaf(&mut self, leaf: &[u8]) {
        self.append_hash(leaf_hash(leaf));
    }

    /// Appends a leaf by its leaf hash (`SHA-256(0x00 || leaf)`).
    pub fn append_hash(&mut self, hash: Hash256) {
        let mut level = 0u8;
        let mut hash = hash;
        while let Some(&(l, left)) = self.nodes.last() {
            if l != level {
                break;
            }
            self.nodes.pop();
            hash = node_hash(&left, &hash);
            level += 1;
        }
        self.nodes.push((level, hash));
        self.size += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::MemoryTree;

    #[test]
    fn compact_range_matches_the_full_tree() {
        let mut tree = MemoryTree::new();
        let mut range = CompactRange::new();
        assert_eq!(range.root(), crate::merkle::empty_root());
        for i in 0u32..70 {
            let leaf = i.to_be_bytes();
            tree.append(&leaf);
            range.append_leaf(&leaf);
            assert_eq!(range.root(), tree.root(), "size {}", i + 1);
            let again = CompactRange::from_parts(range.size(), &range.hashes()).unwrap();
            assert_eq!(again, range);
        }
        assert!(CompactRange::from_parts(3, &[Hash256::default()]).is_err());
    }
}
