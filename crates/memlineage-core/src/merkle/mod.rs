//! The RFC 6962 / RFC 9162 Merkle tree of the append-only log (M3).
//!
//! Every log entry is a leaf of a binary Merkle tree built as RFC 9162 §2.1.1 specifies
//! (the same tree as RFC 6962 §2.1): leaves hash as `SHA-256(0x00 || entry)`, interior nodes as
//! `SHA-256(0x01 || left || right)`, and a tree of `n` leaves splits at the largest power of two
//! below `n`. Its root, signed into a [checkpoint](crate::checkpoint), commits to the whole log;
//! inclusion proofs (§2.1.3) show an entry is in it; consistency proofs (§2.1.4) show a later
//! tree extends an earlier one, so history cannot be rewritten unnoticed.
//!
//! # Storage model: complete subtrees addressed by `(level, index)`
//!
//! Storage keeps the hash of every *complete* subtree, [`NodeId`] `(level, index)`, covering
//! leaves `[index·2^level, (index+1)·2^level)`. Appending leaf `i` writes its leaf hash and the
//! nodes listed by [`completed_by_append`]; nothing is ever rewritten. The root of any past tree
//! size is the fold ([`root_from_nodes`]) of the nodes listed by [`root_nodes`].
//!
//! # Proofs: plan, fetch, assemble
//!
//! In the manner of the `ct-merkle` crate, proof construction is split so that it never
//! rehashes leaves and never does I/O here: [`inclusion_plan`] / [`consistency_plan`] say which
//! `O(log n)` stored nodes a proof needs ([`ProofPlan::nodes`]); the caller reads them from its
//! own storage; [`ProofPlan::assemble`] folds them into the RFC 9162 proof. [`MemoryTree`] is
//! the in-memory storage that does all three. Verification ([`verify_inclusion`],
//! [`verify_consistency`]) follows RFC 9162 §2.1.3.2 and §2.1.4.2 step by step.
//!
//! `docs/merkle-and-checkpoints.md` explains the layout with pictures and worked examples.

mod compact;
mod consistency;
mod error;
mod hashing;
mod inclusion;
mod memory;
mod node;
mod plan;

pub use compact::CompactRange;
pub use consistency::{consistency_plan, consistency_proof_len, verify_consistency};
pub use error::MerkleError;
pub use hashing::{LEAF_PREFIX, NODE_PREFIX, empty_root, leaf_hash, node_hash, root_from_nodes};
pub use inclusion::{
    inclusion_plan, inclusion_proof_len, root_from_inclusion_proof, verify_inclusion,
};
pub use memory::MemoryTree;
pub use node::{NodeId, completed_by_append, root_nodes};
pub use plan::ProofPlan;
