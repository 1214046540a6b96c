//! The stored Merkle tree against the leaves, node by node, in one streaming pass (RFC 9162
//! §2.1.1; `docs/store.md`, table `nodes`).
//!
//! The leaves are pushed in log order onto a stack of the complete subtrees on the tree's
//! right edge (at most one per level, so O(log n) hashes). Each push completes the leaf's own
//! node and one node per level it merges into; every completed node's hash, recomputed from the
//! leaves, is compared with the node the store holds. So an edit to *any* stored node — a leaf
//! hash, an inner node that is not on the root's path, the root itself — is found, without
//! holding the tree in memory. A leaf missing from the log is pushed as unknown (its stored
//! leaf hash when there is one), and nodes above an unknown leaf are not compared.

use memlineage_core::Hash256;
use memlineage_core::merkle::{self, NodeId};

/// The right edge of the tree recomputed so far.
#[derive(Debug, Default)]
pub(super) struct TreeAudit {
    /// Complete subtrees on the right edge, left to right: (node, hash, or `None` when a
    /// leaf below it is unknown).
    frontier: Vec<(NodeId, Option<Hash256>)>,
    size: u64,
}

impl TreeAudit {
    /// Leaves pushed so far.
    pub(super) fn size(&self) -> u64 {
        self.size
    }

    /// Pushes the hash of the next leaf (`None`: unknown) and returns every node this push
    /// completes whose hash is known, lowest level first, starting with the leaf node itself.
    pub(super) fn push(&mut self, leaf_hash: Option<Hash256>) -> Vec<(NodeId, Hash256)> {
        let mut node = (NodeId::leaf(self.size), leaf_hash);
        self.size += 1;
        let mut completed = Vec::new();
        if let Some(h) = node.1 {
            completed.push((node.0, h));
        }
        while let Some(&(left, left_hash)) = self.frontier.last() {
            if left.level != node.0.level {
                break;
            }
            self.frontier.pop();
            let hash = match (left_hash, node.1) {
                (Some(l), Some(r)) => Some(merkle::node_hash(&l, &r)),
                _ => None,
            };
            node = (left.parent(), hash);
            if let Some(h) = hash {
                completed.push((node.0, h));
            }
        }
        self.frontier.push(node);
        completed
    }

    /// The root of the leaves pushed so far, or `None` when a leaf is unknown.
    pub(super) fn root(&self) -> Option<Hash256> {
        let hashes: Option<Vec<Hash256>> = self.frontier.iter().map(|(_, h)| *h).collect();
        hashes.map(|h| merkle::root_from_nodes(&h))
    }
}

/// The leaves a node covers, for messages: `4..=5`.
pub(super) fn covered(node: NodeId) -> String {
    match (node.first_leaf(), node.end_leaf()) {
        (Some(a), Some(b)) if b > a => format!("{a}..={}", b - 1),
        _ => "?".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::merkle::{MemoryTree, completed_by_append};

    #[test]
    fn completes_exactly_the_stored_nodes_with_the_reference_hashes() {
        let mut audit = TreeAudit::default();
        let mut tree = MemoryTree::new();
        for i in 0..67u64 {
            let leaf = i.to_be_bytes();
            tree.append(&leaf);
            let done = audit.push(Some(merkle::leaf_hash(&leaf)));
            let mut expected = vec![NodeId::leaf(i)];
            expected.extend(completed_by_append(i));
            assert_eq!(done.iter().map(|(n, _)| *n).collect::<Vec<_>>(), expected);
            for (n, h) in done {
                assert_eq!(tree.node(n), Some(h), "{n}");
            }
            assert_eq!(audit.root(), Some(tree.root()));
        }
        assert_eq!(audit.size(), 67);
    }

    #[test]
    fn nodes_above_an_unknown_leaf_are_not_compared() {
        let mut audit = TreeAudit::default();
        audit.push(Some(Hash256::of(b"a")));
        assert!(audit.push(None).is_empty());
        audit.push(Some(Hash256::of(b"c")));
        // Leaf 3 completes (1, 1) but not (2, 0), which covers the unknown leaf 1.
        let done = audit.push(Some(Hash256::of(b"d")));
        let ids: Vec<NodeId> = done.iter().map(|(n, _)| *n).collect();
        assert_eq!(ids, [NodeId::leaf(3), NodeId::new(1, 1)]);
        assert_eq!(audit.root(), None);
        assert_eq!(covered(NodeId::new(1, 2)), "4..=5");
    }
}
