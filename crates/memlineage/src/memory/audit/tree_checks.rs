//! Pass 1's tree checks: gaps in the leaf indices, every stored Merkle node against the one
//! recomputed from the leaves ([`super::tree`]), the stored root and the latest signed
//! checkpoint.

use super::{GAP_BRIDGED, GAP_LISTED, Pass1, tree};
use crate::error::Error;
use crate::memory::Memory;

use memlineage_core::Hash256;
use memlineage_core::merkle::NodeId;

impl Memory {
    /// Reports the leaf indices missing before `next` and bridges the tree over them.
    pub(super) fn gap(&self, p: &mut Pass1, next: u64) -> Result<(), Error> {
        let from = p.tree.size();
        let len = next - from;
        if len <= GAP_LISTED {
            for i in from..next {
                p.out.problem(
                    Some(i),
                    None,
                    format!("leaf index {i} is missing from the log (the next present is {next})"),
                );
            }
        } else {
            p.out.problem(
                Some(from),
                None,
                format!(
                    "leaf indices {from}..={} ({len} entries) are missing from the log",
                    next - 1
                ),
            );
        }
        if len > GAP_BRIDGED {
            if p.tree_ok {
                p.out.problem(
                    None,
                    None,
                    format!(
                        "the node-by-node tree check stopped at the gap after leaf index {from}"
                    ),
                );
            }
            p.tree_ok = false;
            return Ok(());
        }
        for i in from..next {
            // The stored leaf hash keeps the tree aligned; without it the leaf is unknown.
            let stored = self
                .reads()
                .nodes(&[NodeId::leaf(i)])
                .ok()
                .and_then(|h| h.first().copied());
            self.push_leaf(p, stored);
        }
        Ok(())
    }

    pub(super) fn push_leaf(&self, p: &mut Pass1, leaf_hash: Option<Hash256>) {
        if !p.tree_ok {
            return;
        }
        p.completed.extend(p.tree.push(leaf_hash));
        if Some(p.tree.size()) == p.checkpoint_size {
            p.root_at_checkpoint = p.tree.root();
        }
    }

    /// Compares the nodes completed in this chunk with the stored ones.
    pub(super) fn compare_nodes(&self, p: &mut Pass1) -> Result<(), Error> {
        let completed = std::mem::take(&mut p.completed);
        if completed.is_empty() {
            return Ok(());
        }
        let ids: Vec<NodeId> = completed.iter().map(|(n, _)| *n).collect();
        let stored: Vec<Option<Hash256>> = match super::super::read::nodes_exact(self.reads(), &ids)
        {
            Ok(hashes) => hashes.into_iter().map(Some).collect(),
            // Some node is missing or malformed (or the store answered with the wrong number
            // of nodes): fetch one by one to name it.
            Err(_) => ids
                .iter()
                .map(|n| {
                    self.reads()
                        .nodes(&[*n])
                        .ok()
                        .and_then(|h| h.first().copied())
                })
                .collect(),
        };
        for ((node, computed), stored) in completed.iter().zip(stored) {
            let problem = match stored {
                Some(h) if h == *computed => continue,
                Some(_) if node.level == 0 => {
                    "stored leaf hash does not match the leaf bytes".to_string()
                }
                Some(_) => format!(
                    "stored Merkle node {node} covering leaves {} differs from the hash recomputed from the leaves",
                    tree::covered(*node)
                ),
                None => format!(
                    "stored Merkle node {node} covering leaves {} is missing or malformed",
                    tree::covered(*node)
                ),
            };
            let index = (node.level == 0).then_some(node.index);
            if let Some(i) = index {
                p.labels.bad_node(i);
            }
            let id = index.and_then(|i| p.leaf_ids.get(&i).copied());
            p.out.problem(index, id, problem);
        }
        Ok(())
    }

    /// The root, the stored root and the latest signed checkpoint.
    pub(super) fn finish_tree(
        &self,
        p: &mut Pass1,
        total: u64,
        has_checkpoint: bool,
    ) -> Result<(), Error> {
        self.compare_nodes(p)?;
        let recomputed = if p.tree_ok { p.tree.root() } else { None };
        p.report.root = recomputed.map_or_else(String::new, |r| r.to_hex());
        if let Some(recomputed) = recomputed {
            match self.root_at(total) {
                Ok(stored) if stored != recomputed => p.out.problem(
                    None,
                    None,
                    format!("the stored tree's root {stored} differs from the root recomputed from the leaves {recomputed}"),
                ),
                Ok(_) => {}
                Err(e) => p.out.problem(None, None, format!("stored tree: {e}")),
            }
        }
        if has_checkpoint {
            match self.latest_checkpoint() {
                Ok(Some(cp)) => {
                    p.report.checkpoint_size = Some(cp.size);
                    let expected = if cp.size == total {
                        recomputed
                    } else {
                        p.root_at_checkpoint
                    };
                    if cp.size > 0 && expected != Some(cp.root) {
                        p.out.problem(
                            None,
                            None,
                            format!(
                                "the signed checkpoint at size {} does not match the leaves",
                                cp.size
                            ),
                        );
                    }
                }
                Ok(None) => {}
                Err(e) => p.out.problem(None, None, format!("checkpoint: {e}")),
            }
        }
        std::mem::take(&mut p.out).report_into(&mut p.report);
        Ok(())
    }
}
