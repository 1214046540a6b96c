//! Proof plans: which stored nodes a proof reads, and how to fold them into the proof.
//!
//! Every hash in an RFC 9162 inclusion or consistency proof is `MTH(D[a:b])` for some subtree
//! range. When `[a, b)` is a complete subtree the proof element *is* a stored node. When it is
//! not (only the one range that touches the ragged right edge of the tree, `b = size`), it is
//! the fold of the complete nodes that tile it, at most one per level. A plan lists those
//! nodes so that a caller can read them from its own storage in one batch, then
//! [`ProofPlan::assemble`] folds them into the proof without touching any leaf.

use super::{MerkleError, NodeId, root_from_nodes};
use crate::Hash256;

/// The complete nodes a proof needs and how to fold them into the proof.
///
/// **Order of [`nodes`](Self::nodes).** Proof order: the nodes of proof element 0 first, then
/// those of element 1, and so on; within one element, left to right (largest subtree first).
/// The elements of an RFC 9162 proof cover pairwise disjoint leaf ranges, so no node is listed
/// twice and the list is already deduplicated. Its length is at most about `2·log2(size)`:
/// one node per proof element, plus the tiling of the single element that may be incomplete.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProofPlan {
    /// Nodes to fetch, in proof order.
    nodes: Vec<NodeId>,
    /// For each proof element, how many consecutive entries of `nodes` fold into it (≥ 1).
    spans: Vec<u8>,
}

impl ProofPlan {
    /// Builds a plan from the subtree ranges `[a, b)` of the proof elements, in proof order.
    pub(crate) fn from_ranges(ranges: impl IntoIterator<Item = (u64, u64)>) -> Self {
        let mut plan = ProofPlan::default();
        for (start, end) in ranges {
            let before = plan.nodes.len();
            super::node::push_range_nodes(start, end, &mut plan.nodes);
            // At most one node per level, so at most 64 per element.
            plan.spans.push((plan.nodes.len() - before) as u8);
        }
        plan
    }

    /// The complete nodes to read from storage, in the order described on [`ProofPlan`].
    pub fn nodes(&self) -> &[NodeId] {
        &self.nodes
    }

    /// The number of hashes in the assembled proof.
    pub fn proof_len(&self) -> usize {
        self.spans.len()
    }

    /// True when the proof is empty (e.g. a one-leaf tree, or equal tree sizes).
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The nodes that fold into each proof element, element by element.
    pub fn elements(&self) -> impl Iterator<Item = &[NodeId]> + '_ {
        let mut rest = self.nodes.as_slice();
        self.spans.iter().map(move |&n| {
            let (head, tail) = rest.split_at(usize::from(n));
            rest = tail;
            head
        })
    }

    /// Folds fetched node hashes into the RFC 9162 proof; `fetched[i]` is the hash of
    /// `nodes()[i]`.
    ///
    /// An element made of several nodes is their [`root_from_nodes`] fold. The result is only
    /// as good as the hashes supplied: a wrong hash gives a proof that fails to verify.
    pub fn assemble(&self, fetched: &[Hash256]) -> Result<Vec<Hash256>, MerkleError> {
        if fetched.len() != self.nodes.len() {
            return Err(MerkleError::FetchedCount {
                expected: self.nodes.len(),
                actual: fetched.len(),
            });
        }
        let mut rest = fetched;
        let mut proof = Vec::with_capacity(self.spans.len());
        for &n in &self.spans {
            let (head, tail) = rest.split_at(usize::from(n));
            rest = tail;
            proof.push(root_from_nodes(head));
        }
        Ok(proof)
    }

    /// Reads each node through `fetch` and assembles the proof; a `None` from `fetch` becomes
    /// [`MerkleError::MissingNode`].
    pub fn assemble_with(
        &self,
        mut fetch: impl FnMut(NodeId) -> Option<Hash256>,
    ) -> Result<Vec<Hash256>, MerkleError> {
        let fetched = self
            .nodes
            .iter()
            .map(|&node| fetch(node).ok_or(MerkleError::MissingNode { node }))
            .collect::<Result<Vec<_>, _>>()?;
        self.assemble(&fetched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merkle::{leaf_hash, node_hash};

    #[test]
    fn merkle_plan_assembles_multi_node_elements() {
        // MTH(D[0:4]) is one stored node; MTH(D[4:7]) folds node (1,2) with leaf 6.
        let plan = ProofPlan::from_ranges([(0, 4), (4, 7)]);
        assert_eq!(
            plan.nodes(),
            &[NodeId::new(2, 0), NodeId::new(1, 2), NodeId::leaf(6)]
        );
        assert_eq!(plan.proof_len(), 2);
        let elems: Vec<_> = plan.elements().collect();
        assert_eq!(elems[0].len(), 1);
        assert_eq!(elems[1].len(), 2);
        let h: Vec<_> = (0u8..3).map(|i| leaf_hash(&[i])).collect();
        let proof = plan.assemble(&h).unwrap();
        assert_eq!(proof, vec![h[0], node_hash(&h[1], &h[2])]);
        assert_eq!(
            plan.assemble(&h[..2]),
            Err(MerkleError::FetchedCount {
                expected: 3,
                actual: 2
            })
        );
        assert_eq!(
            plan.assemble_with(|id| (id.level != 1).then(|| h[0])),
            Err(MerkleError::MissingNode {
                node: NodeId::new(1, 2)
            })
        );
    }
}
