//! `verify`: a full audit of a store, trusting nothing it reads.
//!
//! Checks, for every entry in log order: the leaf decodes strictly; its id is what the index
//! says; its signer was registered and not retired or revoked at that position (the registry is
//! replayed from the log itself); its signature verifies (batch verification on all cores);
//! its content matches its hash unless a tombstone erased it; its signed label is at least what
//! its parents imply; its stored leaf hash is right. Then: the tree recomputed from the leaves
//! equals the tree from the stored nodes, and the latest signed checkpoint matches it.

use super::{Memory, verify_registry_signature};
use crate::error::Error;
use crate::store::Store;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::keys::{self, BatchItem, Domain};
use memlineage_core::label::{TrustClass, TrustLabel};
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::principal::Registry;
use memlineage_core::records::RegistryChange;
use memlineage_core::trust::{ParentEdge, compute_label};
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;

/// One problem found by the audit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AuditProblem {
    /// Leaf index, when the problem is about one entry.
    pub index: Option<u64>,
    /// Entry id, when known.
    pub id: Option<String>,
    /// What is wrong, in words.
    pub reason: String,
}

/// The outcome of an audit.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AuditReport {
    /// Entries examined.
    pub entries: u64,
    /// Signatures verified.
    pub signatures: u64,
    /// Principals in the registry at the end.
    pub principals: usize,
    /// The recomputed root (hex).
    pub root: String,
    /// The size covered by the latest signed checkpoint, if any.
    pub checkpoint_size: Option<u64>,
    /// Problems found (the first 1000).
    pub problems: Vec<AuditProblem>,
    /// Total number of problems.
    pub problem_count: u64,
}

impl AuditReport {
    /// True when nothing is wrong.
    pub fn ok(&self) -> bool {
        self.problem_count == 0
    }

    fn problem(&mut self, index: Option<u64>, id: Option<EntryId>, reason: String) {
        self.problem_count += 1;
        if self.problems.len() < 1000 {
            self.problems.push(AuditProblem {
                index,
                id: id.map(|i| i.to_hex()),
                reason,
            });
        }
    }
}

const CHUNK: u64 = 4096;

impl<S: Store> Memory<S> {
    /// Audits the whole store; `progress(done, total)` is called after every chunk.
    pub fn verify(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<AuditReport, Error> {
        let total = self.store.size()?;
        let cp_note = self.store.latest_checkpoint()?;
        let mut report = AuditReport::default();
        let mut registry = Registry::new();
        let mut labels: HashMap<EntryId, TrustLabel> = HashMap::new();
        let mut frontier: Vec<(u8, Hash256)> = Vec::new();
        let mut roots_at: HashMap<u64, Hash256> = HashMap::new();
        let cp_size = cp_note.as_deref().and_then(checkpoint_size);
        let mut start = 0;
        while start < total {
            let rows = self.store.entries(start, CHUNK)?;
            if rows.is_empty() {
                report.problem(Some(start), None, "entries missing from the log".into());
                break;
            }
            let node_ids: Vec<NodeId> = rows
                .iter()
                .map(|r| NodeId {
                    level: 0,
                    index: r.index,
                })
                .collect();
            let stored_leaf_hashes = self.store.nodes(&node_ids).ok();
            let mut decoded: Vec<(u64, SignedEntry)> = Vec::with_capacity(rows.len());
            let mut to_check: Vec<(usize, ed25519_dalek::VerifyingKey)> = Vec::new();
            for (pos, row) in rows.iter().enumerate() {
                let expected = start + pos as u64;
                if row.index != expected {
                    report.problem(
                        Some(expected),
                        None,
                        format!("leaf index {expected} is missing (next is {})", row.index),
                    );
                }
                let lh = merkle::leaf_hash(&row.leaf);
                push_leaf(&mut frontier, lh);
                let size_now = row.index + 1;
                if Some(size_now) == cp_size {
                    roots_at.insert(size_now, fold(&frontier));
                }
                if let Some(stored) = stored_leaf_hashes.as_ref().and_then(|h| h.get(pos))
                    && *stored != lh
                {
                    report.problem(
                        Some(row.index),
                        Some(row.id),
                        "stored leaf hash does not match the leaf bytes".into(),
                    );
                }
                let entry = match SignedEntry::from_leaf(&row.leaf) {
                    Ok(e) => e,
                    Err(e) => {
                        report.problem(Some(row.index), Some(row.id), format!("leaf: {e}"));
                        continue;
                    }
                };
                if entry.id() != row.id {
                    report.problem(
                        Some(row.index),
                        Some(row.id),
                        format!("indexed id differs from the body's hash {}", entry.id()),
                    );
                }
                let body = entry.body();
                match &row.content {
                    Some(c) if Hash256::of(c) != body.content_hash => report.problem(
                        Some(row.index),
                        Some(entry.id()),
                        "content does not match the signed content hash".into(),
                    ),
                    None if row.forgotten_by.is_none() => report.problem(
                        Some(row.index),
                        Some(entry.id()),
                        "content is missing but no tombstone erased it".into(),
                    ),
                    _ => {}
                }
                // Signer and registry.
                if body.kind == EntryKind::Registry {
                    let applied = row
                        .content
                        .as_deref()
                        .ok_or_else(|| Error::Integrity("registry record without content".into()))
                        .and_then(|c| Ok(RegistryChange::from_content(c)?))
                        .and_then(|change| {
                            verify_registry_signature(&registry, row.index, &entry, &change)?;
                            registry.apply(row.index, &entry, &change)?;
                            Ok(())
                        });
                    report.signatures += 1;
                    if let Err(e) = applied {
                        report.problem(Some(row.index), Some(entry.id()), format!("registry: {e}"));
                    }
                } else {
                    match registry.signer_at(&body.writer, &body.key_id, row.index) {
                        Ok((principal, key)) => {
                            to_check.push((decoded.len(), *key));
                            check_label(&mut report, row.index, &entry, principal.class, &labels);
                        }
                        Err(e) => report.problem(
                            Some(row.index),
                            Some(entry.id()),
                            format!("signer: {e}"),
                        ),
                    }
                }
                labels.insert(entry.id(), body.label);
                decoded.push((row.index, entry));
            }
            // Signatures, in parallel batches.
            report.signatures += to_check.len() as u64;
            for bad in verify_signatures(&decoded, &to_check) {
                let (index, entry) = &decoded[bad];
                report.problem(
                    Some(*index),
                    Some(entry.id()),
                    "signature does not verify".into(),
                );
            }
            start += rows.len() as u64;
            report.entries = start;
            progress(start, total);
        }
        let recomputed = fold(&frontier);
        report.root = recomputed.to_hex();
        match self.root_at(total) {
            Ok(stored) if stored != recomputed => report.problem(
                None,
                None,
                format!("the stored tree's root {stored} differs from the root recomputed from the leaves {recomputed}"),
            ),
            Ok(_) => {}
            Err(e) => report.problem(None, None, format!("stored tree: {e}")),
        }
        if cp_note.is_some() {
            match self.latest_checkpoint() {
                Ok(Some(cp)) => {
                    report.checkpoint_size = Some(cp.size);
                    let expected = if cp.size == total {
                        Some(recomputed)
                    } else {
                        roots_at.get(&cp.size).copied()
                    };
                    if cp.size > 0 && expected != Some(cp.root) {
                        report.problem(
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
                Err(e) => report.problem(None, None, format!("checkpoint: {e}")),
            }
        }
        report.principals = registry.principals().count();
        Ok(report)
    }
}

fn checkpoint_size(note: &str) -> Option<u64> {
    note.lines().nth(1)?.parse().ok()
}

fn check_label(
    report: &mut AuditReport,
    index: u64,
    entry: &SignedEntry,
    class: TrustClass,
    labels: &HashMap<EntryId, TrustLabel>,
) {
    let body = entry.body();
    let mut edges = Vec::with_capacity(body.parents.len());
    for p in &body.parents {
        match labels.get(&p.id) {
            Some(l) => edges.push(ParentEdge {
                label: *l,
                weight: p.weight,
            }),
            None => {
                report.problem(
                    Some(index),
                    Some(entry.id()),
                    format!("parent {} is not earlier in the log", p.id),
                );
                return;
            }
        }
    }
    let required = compute_label(class, &edges, body.tau, body.fallback).label;
    if body.label < required {
        report.problem(
            Some(index),
            Some(entry.id()),
            format!(
                "signed label {} is lower than its parents imply ({required}): laundering attempt",
                body.label
            ),
        );
    }
}

/// Verifies the signatures of `to_check` on all cores; returns positions into `decoded` that fail.
fn verify_signatures(
    decoded: &[(u64, SignedEntry)],
    to_check: &[(usize, ed25519_dalek::VerifyingKey)],
) -> Vec<usize> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(8);
    let per = to_check.len().div_ceil(threads.max(1)).max(1);
    let mut bad = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = to_check
            .chunks(per)
            .map(|part| {
                s.spawn(move || {
                    let items: Vec<BatchItem<'_>> = part
                        .iter()
                        .map(|(pos, key)| BatchItem {
                            key,
                            bytes: decoded[*pos].1.body_bytes(),
                            signature: decoded[*pos].1.signature(),
                        })
                        .collect();
                    match keys::verify_batch(Domain::EntryV1, &items) {
                        Ok(()) => Vec::new(),
                        Err(keys::KeyError::BatchFailed(v)) => {
                            v.into_iter().map(|i| part[i].0).collect()
                        }
                        Err(_) => part.iter().map(|(p, _)| *p).collect(),
                    }
                })
            })
            .collect();
        for h in handles {
            match h.join() {
                Ok(v) => bad.extend(v),
                Err(_) => bad.extend(to_check.iter().map(|(p, _)| *p)),
            }
        }
    });
    bad.sort_unstable();
    bad.dedup();
    bad
}

/// Appends a leaf hash to the right frontier of complete subtrees (a compact range).
fn push_leaf(frontier: &mut Vec<(u8, Hash256)>, h: Hash256) {
    let mut node = (0u8, h);
    while let Some(&(level, left)) = frontier.last() {
        if level != node.0 {
            break;
        }
        frontier.pop();
        node = (level + 1, merkle::node_hash(&left, &node.1));
    }
    frontier.push(node);
}

/// The root of the tree whose complete subtrees are `frontier` (left to right).
fn fold(frontier: &[(u8, Hash256)]) -> Hash256 {
    let hashes: Vec<Hash256> = frontier.iter().map(|(_, h)| *h).collect();
    merkle::root_from_nodes(&hashes)
}
