//! Leaf and interior-node hashing with RFC 6962 domain separation.
//!
//! RFC 9162 §2.1.1 (unchanged from RFC 6962 §2.1) defines the Merkle Tree Hash with two
//! one-byte prefixes: `0x00` before leaf data and `0x01` before a pair of child hashes. The
//! prefixes make a leaf hash and an interior hash different functions, so an attacker cannot
//! present an interior node as a leaf (a second-preimage attack on the tree) or vice versa.

use crate::Hash256;
use sha2::{Digest, Sha256};

/// The byte prepended to leaf data before hashing (RFC 9162 §2.1.1).
pub const LEAF_PREFIX: u8 = 0x00;

/// The byte prepended to two child hashes before hashing (RFC 9162 §2.1.1).
pub const NODE_PREFIX: u8 = 0x01;

/// `SHA-256(0x00 || leaf)`: the hash of one log entry, `MTH({d(0)})` in RFC 9162 §2.1.1.
pub fn leaf_hash(leaf: &[u8]) -> Hash256 {
    let mut h = Sha256::new();
    h.update([LEAF_PREFIX]);
    h.update(leaf);
    Hash256(h.finalize().into())
}

/// `SHA-256(0x01 || left || right)`: the hash of an interior node (RFC 9162 §2.1.1).
pub fn node_hash(left: &Hash256, right: &Hash256) -> Hash256 {
    let mut h = Sha256::new();
    h.update([NODE_PREFIX]);
    h.update(left.0);
    h.update(right.0);
    Hash256(h.finalize().into())
}

/// `SHA-256("")`: the root of the empty tree, `MTH({})` in RFC 9162 §2.1.1.
pub fn empty_root() -> Hash256 {
    // e3b0c442…b855, the SHA-256 of zero bytes.
    Hash256(Sha256::digest([]).into())
}

/// Folds the hashes of adjacent complete subtrees, left to right and strictly decreasing in
/// size, into the hash of their union: `node_hash(h0, node_hash(h1, … node_hash(hk-1, hk)))`.
///
/// This is RFC 9162 §2.1.1's recursion read bottom-up: the tree splits at the largest power of
/// two, so the left part is the first (largest) node and the right part is the fold of the rest.
/// With [`root_nodes`](super::root_nodes) it gives the root of any tree size from stored nodes;
/// an empty slice gives [`empty_root`].
pub fn root_from_nodes(nodes: &[Hash256]) -> Hash256 {
    match nodes.split_last() {
        None => empty_root(),
        Some((last, rest)) => rest
            .iter()
            .rev()
            .fold(*last, |acc, left| node_hash(left, &acc)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merkle_prefixes_separate_leaves_from_nodes() {
        let a = leaf_hash(b"a");
        let b = leaf_hash(b"b");
        let mut concat = Vec::new();
        concat.extend_from_slice(&a.0);
        concat.extend_from_slice(&b.0);
        // The same 64 bytes hashed as a leaf and as a node must differ.
        assert_ne!(leaf_hash(&concat), node_hash(&a, &b));
        assert_ne!(leaf_hash(b""), empty_root());
        assert_eq!(root_from_nodes(&[]), empty_root());
        assert_eq!(root_from_nodes(&[a]), a);
        let c = leaf_hash(b"c");
        assert_eq!(
            root_from_nodes(&[a, b, c]),
            node_hash(&a, &node_hash(&b, &c))
        );
        assert_eq!(
            empty_root().to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
