//! The one error type of the Merkle module.

use super::NodeId;
use crate::Hash256;

/// Why a Merkle operation or proof verification failed.
///
/// Every message names the values involved and what to check, so a caller can act on it
/// without reading this crate's source.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MerkleError {
    /// A leaf index is not below the tree size (an inclusion proof needs `index < size`).
    #[error(
        "leaf index {index} is out of range for a tree of {size} leaves (valid indices are 0..{size})"
    )]
    IndexOutOfRange {
        /// The requested leaf index.
        index: u64,
        /// The tree size the proof is for.
        size: u64,
    },

    /// A consistency proof was asked from a larger tree to a smaller one.
    #[error(
        "old tree size {old_size} is larger than new tree size {new_size}: an append-only log only grows, so check the order of the arguments or the checkpoints"
    )]
    OldSizeGreater {
        /// The claimed older size.
        old_size: u64,
        /// The claimed newer size.
        new_size: u64,
    },

    /// A tree size beyond the number of leaves a tree holds.
    #[error("tree size {size} is beyond the {len} leaves this tree holds")]
    SizeBeyondTree {
        /// The requested size.
        size: u64,
        /// The number of leaves appended so far.
        len: u64,
    },

    /// A proof does not have the number of hashes that RFC 9162 fixes for these sizes.
    #[error(
        "the proof has {actual} hashes, but a proof for these tree sizes has exactly {expected} (RFC 9162 §2.1.3/§2.1.4): it was made for other sizes, or truncated, or padded"
    )]
    ProofLength {
        /// The length RFC 9162 prescribes for the given index and sizes.
        expected: usize,
        /// The length received.
        actual: usize,
    },

    /// An inclusion proof leads to a root other than the expected one.
    #[error(
        "the inclusion proof leads to root {computed}, not the expected root {expected}: the leaf hash, index, tree size or proof does not belong to this tree"
    )]
    RootMismatch {
        /// The root the caller trusts (e.g. from a verified checkpoint).
        expected: Hash256,
        /// The root the proof leads to.
        computed: Hash256,
    },

    /// A consistency proof does not reproduce the old root.
    #[error(
        "the consistency proof rebuilds old root {computed}, not the expected old root {expected}: the old checkpoint is not a prefix of the new tree, or the proof is for other sizes"
    )]
    OldRootMismatch {
        /// The old root the caller holds.
        expected: Hash256,
        /// The old root the proof rebuilds.
        computed: Hash256,
    },

    /// A consistency proof does not reproduce the new root.
    #[error(
        "the consistency proof rebuilds new root {computed}, not the expected new root {expected}: the new tree does not extend the old one, or the proof is for other sizes"
    )]
    NewRootMismatch {
        /// The new root the caller holds.
        expected: Hash256,
        /// The new root the proof rebuilds.
        computed: Hash256,
    },

    /// Two roots claimed for the same tree size differ: the log has forked.
    #[error(
        "two roots for the same tree size {size} differ ({old_root} vs {new_root}): the log presented two different trees of the same size"
    )]
    EqualSizeRootsDiffer {
        /// The common tree size.
        size: u64,
        /// The first root.
        old_root: Hash256,
        /// The second root.
        new_root: Hash256,
    },

    /// The root claimed for the empty tree is not `SHA-256("")`.
    #[error("a tree of size 0 has root {got}, but the empty tree's root is SHA-256(\"\") = {want}")]
    EmptyRootMismatch {
        /// The root supplied.
        got: Hash256,
        /// `SHA-256("")`.
        want: Hash256,
    },

    /// A node a proof plan needs is not in storage.
    #[error(
        "node {node} is missing: every complete subtree must be stored when its last leaf is appended (see merkle::completed_by_append)"
    )]
    MissingNode {
        /// The node that could not be read.
        node: NodeId,
    },

    /// `ProofPlan::assemble` was given a different number of hashes than the plan has nodes.
    #[error(
        "the proof plan reads {expected} nodes but {actual} hashes were supplied: pass exactly one hash per entry of ProofPlan::nodes(), in that order"
    )]
    FetchedCount {
        /// `plan.nodes().len()`.
        expected: usize,
        /// The number of hashes received.
        actual: usize,
    },
}
