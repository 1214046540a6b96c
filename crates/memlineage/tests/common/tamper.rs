//! Edits of a SQLite store file behind the handle's back: the tampering the read-path tests
//! expect retrieval (or `verify`) to catch.

use memlineage_core::merkle::{MemoryTree, NodeId};
use std::path::Path;

/// Overwrites one stored Merkle node.
pub fn set_node(path: &Path, node: NodeId, hash: &[u8]) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let n = conn
        .execute(
            "UPDATE merkle_nodes SET hash = ?3 WHERE level = ?1 AND idx = ?2",
            rusqlite::params![node.level, node.index as i64, hash],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// Rewrites every stored Merkle node from the stored leaves (after a leaf was edited), so that
/// a fresh checkpoint covers the edited leaf and only its signature is wrong.
pub fn rebuild_nodes(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    let leaves: Vec<Vec<u8>> = conn
        .prepare("SELECT leaf FROM entries ORDER BY idx")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut tree = MemoryTree::new();
    for leaf in &leaves {
        tree.append(leaf);
    }
    let nodes: Vec<(u8, i64)> = conn
        .prepare("SELECT level, idx FROM merkle_nodes")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (level, idx) in nodes {
        let hash = tree.node(NodeId::new(level, idx as u64)).unwrap();
        set_node(path, NodeId::new(level, idx as u64), hash.as_bytes());
    }
}
