//! Addresses of complete subtrees, the unit of Merkle storage.
//!
//! A log of `n` leaves is stored as the hashes of its *complete* subtrees only: node
//! `(level, index)` covers leaves `[index·2^level, (index+1)·2^level)` and exists once all of
//! them have been appended. A node never changes after it is written, so storage is append-only
//! like the log itself. Any RFC 9162 subtree hash `MTH(D[a:b])` that a proof needs and that is
//! not complete (the "ragged right edge" of a tree whose size is not a power of two) is the fold
//! of a few complete nodes, see [`root_from_nodes`](super::root_from_nodes).

use std::fmt;

/// A complete subtree: leaves `[index·2^level, (index+1)·2^level)`.
///
/// Level 0 is a leaf hash; level `l ≥ 1` is `node_hash((l-1, 2i), (l-1, 2i+1))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId {
    /// Height above the leaves: 0 for a leaf, `l` for a subtree of `2^l` leaves.
    pub level: u8,
    /// Position among the nodes of the same level, counted from the left from 0.
    pub index: u64,
}

impl NodeId {
    /// The node at `level` and `index`.
    pub const fn new(level: u8, index: u64) -> Self {
        NodeId { level, index }
    }

    /// The leaf node at `index`.
    pub const fn leaf(index: u64) -> Self {
        NodeId { level: 0, index }
    }

    /// The first leaf this node covers (`index·2^level`), or `None` beyond `u64`.
    pub fn first_leaf(self) -> Option<u64> {
        if self.level >= 64 {
            return (self.index == 0).then_some(0);
        }
        self.index.checked_mul(1u64 << self.level)
    }

    /// One past the last leaf this node covers: the tree size at which it becomes complete.
    pub fn end_leaf(self) -> Option<u64> {
        let width = 1u64.checked_shl(u32::from(self.level))?;
        self.index.checked_add(1)?.checked_mul(width)
    }

    /// The two children of a node of level ≥ 1; `None` for a leaf.
    pub fn children(self) -> Option<(NodeId, NodeId)> {
        let level = self.level.checked_sub(1)?;
        let left = self.index.checked_mul(2)?;
        Some((NodeId::new(level, left), NodeId::new(level, left + 1)))
    }

    /// The parent node.
    pub fn parent(self) -> NodeId {
        NodeId::new(self.level.saturating_add(1), self.index >> 1)
    }

    /// The node's position in append order: how many nodes, leaves included, are complete
    /// before it. Leaf `m` completes its own node and then, lowest first, one per trailing one
    /// bit of `m` ([`completed_by_append`]), so the leaves before it completed
    /// `Σ_{j<m} (1 + trailing_ones(j)) = 2m − popcount(m)` nodes, and the node of level `l`
    /// whose last leaf is `m` is at `2m − popcount(m) + l`. Storage keyed by it writes a group
    /// commit's nodes at the end of one sequence. `None` beyond `u64`.
    pub fn append_position(self) -> Option<u64> {
        let last = self.end_leaf()?.checked_sub(1)?;
        // 2m − popcount(m), written so that only a result beyond u64 overflows.
        let before = last.checked_add(last - u64::from(last.count_ones()))?;
        before.checked_add(u64::from(self.level))
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(level {}, index {})", self.level, self.index)
    }
}

/// The nodes of level ≥ 1 that become complete when leaf `leaf_index` is appended, lowest
/// level first.
///
/// Appending leaf `i` completes one node per trailing one bit of `i`: the node at level `l`
/// whose last leaf is `i`. Storage writes exactly these (plus the leaf hash itself, level 0),
/// in this order, each as `node_hash` of its two children, which are already stored.
pub fn completed_by_append(leaf_index: u64) -> Vec<NodeId> {
    let ones = leaf_index.trailing_ones() as u8;
    (1..=ones)
        .map(|level| NodeId::new(level, leaf_index.checked_shr(level.into()).unwrap_or(0)))
        .collect()
}

/// The complete subtrees whose fold is the root of a tree of `size` leaves, left to right.
///
/// One node per set bit of `size`, largest first (RFC 9162 §2.1.1 splits at the largest power
/// of two below the size, so the root is `node_hash(first, MTH(rest))`). Empty for `size == 0`.
pub fn root_nodes(size: u64) -> Vec<NodeId> {
    range_nodes(0, size)
}

/// The complete nodes whose right-to-left fold is `MTH(D[start:end])`, left to right.
///
/// Valid for the ranges RFC 9162 proofs use: `start` is a multiple of the smallest power of two
/// that is at least `end - start`, so the RFC split points fall on node boundaries.
pub(crate) fn range_nodes(start: u64, end: u64) -> Vec<NodeId> {
    let mut out = Vec::with_capacity((end - start).count_ones() as usize);
    push_range_nodes(start, end, &mut out);
    out
}

/// Appends the nodes of [`range_nodes`] to `out`.
pub(crate) fn push_range_nodes(start: u64, end: u64, out: &mut Vec<NodeId>) {
    debug_assert!(start <= end);
    // One node per set bit of the width, highest first: only the set bits are visited.
    let mut width = end - start;
    let mut at = start;
    while width != 0 {
        let level = 63 - width.leading_zeros() as u8;
        let size = 1u64 << level;
        debug_assert_eq!(
            at % size,
            0,
            "range [{start}, {end}) is not a subtree range"
        );
        out.push(NodeId::new(level, at >> level));
        at = at.wrapping_add(size);
        width &= !size;
    }
}

/// The largest power of two strictly below `n` (RFC 9162 §2.1.1's split point `k`); `n ≥ 2`.
pub(crate) fn split_point(n: u64) -> u64 {
    debug_assert!(n >= 2);
    1u64 << (63 - (n - 1).leading_zeros())
}

#[cfg(test)]
mod tests {
    #[test]
    fn append_positions_number_the_nodes_in_the_order_appends_complete_them() {
        let mut next = 0u64;
        for leaf in 0u64..5000 {
            let completed = std::iter::once(NodeId::leaf(leaf)).chain(completed_by_append(leaf));
            for node in completed {
                assert_eq!(node.append_position(), Some(next), "{node}");
                next += 1;
            }
        }
        assert_eq!(next, 2 * 5000 - u64::from(5000u64.count_ones()));
        assert_eq!(NodeId::new(3, 0).append_position(), Some(14));
        assert_eq!(NodeId::leaf(1 << 63).append_position(), Some(u64::MAX));
        for far in [
            NodeId::leaf((1 << 63) + 1),
            NodeId::new(63, 2),
            NodeId::new(64, 0),
        ] {
            assert_eq!(far.append_position(), None, "{far}");
        }
    }

    use super::*;

    #[test]
    fn merkle_completed_by_append_follows_trailing_ones() {
        assert!(completed_by_append(0).is_empty());
        assert_eq!(completed_by_append(1), vec![NodeId::new(1, 0)]);
        assert!(completed_by_append(2).is_empty());
        assert_eq!(
            completed_by_append(7),
            vec![NodeId::new(1, 3), NodeId::new(2, 1), NodeId::new(3, 0)]
        );
        assert_eq!(completed_by_append(u64::MAX).len(), 64);
    }

    #[test]
    fn merkle_root_nodes_one_per_set_bit() {
        assert!(root_nodes(0).is_empty());
        assert_eq!(root_nodes(1), vec![NodeId::leaf(0)]);
        assert_eq!(
            root_nodes(7),
            vec![NodeId::new(2, 0), NodeId::new(1, 2), NodeId::leaf(6)]
        );
        assert_eq!(root_nodes(8), vec![NodeId::new(3, 0)]);
        assert_eq!(root_nodes(u64::MAX).len(), 64);
        assert_eq!(root_nodes(1 << 63), vec![NodeId::new(63, 0)]);
    }

    #[test]
    fn merkle_node_geometry() {
        let n = NodeId::new(2, 3);
        assert_eq!(n.first_leaf(), Some(12));
        assert_eq!(n.end_leaf(), Some(16));
        assert_eq!(n.children(), Some((NodeId::new(1, 6), NodeId::new(1, 7))));
        assert_eq!(NodeId::new(1, 7).parent(), n);
        assert_eq!(NodeId::leaf(5).children(), None);
        assert_eq!(NodeId::new(63, 1).end_leaf(), None);
        assert_eq!(n.to_string(), "(level 2, index 3)");
    }

    #[test]
    fn merkle_split_point_is_largest_power_below() {
        assert_eq!(split_point(2), 1);
        assert_eq!(split_point(3), 2);
        assert_eq!(split_point(4), 2);
        assert_eq!(split_point(5), 4);
        assert_eq!(split_point(u64::MAX), 1 << 63);
    }
}
