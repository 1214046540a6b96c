//! STUB — to be replaced by the RFC 6962 / RFC 9162 Merkle tree implementation.
#![allow(missing_docs)]
use crate::Hash256;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId {
    pub level: u8,
    pub index: u64,
}

pub fn leaf_hash(_leaf: &[u8]) -> Hash256 {
    todo!()
}
