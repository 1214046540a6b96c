//! `verify`: a full audit of a store, trusting nothing it reads (`docs/store.md`, "What
//! `verify` checks").
//!
//! Pass 1, over the log in order: every leaf decodes strictly; its id is what the index says;
//! its signer was registered and not retired or revoked at that position (the registry is
//! replayed from the log itself); its signature verifies (batch verification on all cores); its
//! content matches its signed hash; its recorded label rule is not laxer than the store's (as
//! signed in the genesis record); its signed label is at least what its parents imply, with
//! its writer labelled external once a distrust record named it; and every stored Merkle node,
//! leaf hashes and inner nodes alike, equals the node recomputed from the leaves ([`tree`]).
//! Pass 1 also collects, from the signed records alone, the tombstones and distrust records.
//!
//! Pass 2 ([`derived`]) rebuilds the store's derived state from those facts — forgotten and
//! erased entries, effective labels, the copies of scope, writer, kind and label, the lineage
//! edges — and names every entry whose stored state disagrees. Then the settings table is
//! checked against the genesis record, and the latest signed checkpoint against the leaves.

mod derived;
mod signatures;
mod tree;

use super::distrusted::DistrustLog;
use super::{Memory, verify_registry_signature};
use crate::error::Error;
use crate::store::Store;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::label::{Fallback, TrustLabel, Weight};
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, RegistryChange, Tombstone};
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;
use tree::TreeAudit;

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
/// Missing leaf indices in one gap up to this many are reported one by one; a longer gap is
/// reported as one range.
const GAP_LISTED: u64 = 64;
/// Gaps up to this many leaves are bridged with the stored leaf hashes, so the tree check goes
/// on past them; beyond, the node-by-node check stops at the gap.
const GAP_BRIDGED: u64 = CHUNK;

/// What pass 1 learns from the signed records, for pass 2.
struct LogFacts {
    /// The store's label rule, as signed into the genesis record.
    store_rule: Option<LabelRule>,
    /// The registry as of the end of the log.
    registry: Registry,
    /// The distrust records.
    distrust: DistrustLog,
    /// Forgotten entry → (the latest tombstone naming it, whether any tombstone erased it).
    tombstones: HashMap<EntryId, (EntryId, bool)>,
    /// Signed labels of every decoded entry.
    signed: HashMap<EntryId, TrustLabel>,
}

/// Pass 1's running state.
struct Pass1 {
    report: AuditReport,
    facts: LogFacts,
    tree: TreeAudit,
    /// False once a gap too long to bridge stopped the node-by-node check.
    tree_ok: bool,
    /// Nodes completed in the current chunk, to compare with the stored ones.
    completed: Vec<(NodeId, Hash256)>,
    /// Indexed ids of the current chunk's leaves, to name them in leaf-hash problems.
    leaf_ids: HashMap<u64, EntryId>,
    /// The recomputed root at the latest checkpoint's size.
    root_at_checkpoint: Option<Hash256>,
    checkpoint_size: Option<u64>,
}

impl<S: Store> Memory<S> {
    /// Audits the whole store; `progress(done, total)` is called after every chunk of pass 1.
    pub fn verify(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<AuditReport, Error> {
        let total = self.store.size()?;
        let cp_note = self.store.latest_checkpoint()?;
        let mut p = Pass1 {
            report: AuditReport::default(),
            facts: LogFacts {
                store_rule: None,
                registry: Registry::new(),
                distrust: DistrustLog::default(),
                tombstones: HashMap::new(),
                signed: HashMap::new(),
            },
            tree: TreeAudit::default(),
            tree_ok: true,
            completed: Vec::new(),
            leaf_ids: HashMap::new(),
            root_at_checkpoint: None,
            checkpoint_size: cp_note.as_deref().and_then(checkpoint_size),
        };
        let mut start = 0;
        let mut examined = 0;
        while start < total {
            let rows = self.store.entries(start, CHUNK)?;
            let Some(last) = rows.last().map(|r| r.index) else {
                p.report.problem(
                    Some(start),
                    None,
                    format!(
                        "leaf indices {start}..={} are missing from the log",
                        total.saturating_sub(1)
                    ),
                );
                break;
            };
            let mut decoded: Vec<(u64, SignedEntry)> = Vec::with_capacity(rows.len());
            let mut to_check: Vec<(usize, ed25519_dalek::VerifyingKey)> = Vec::new();
            p.leaf_ids = rows.iter().map(|r| (r.index, r.id)).collect();
            for row in &rows {
                if row.index > p.tree.size() {
                    self.gap(&mut p, row.index)?;
                }
                let lh = merkle::leaf_hash(&row.leaf);
                self.push_leaf(&mut p, Some(lh));
                let entry = match SignedEntry::from_leaf(&row.leaf) {
                    Ok(e) => e,
                    Err(e) => {
                        p.report
                            .problem(Some(row.index), Some(row.id), format!("leaf: {e}"));
                        continue;
                    }
                };
                if entry.id() != row.id {
                    p.report.problem(
                        Some(row.index),
                        Some(row.id),
                        format!("indexed id differs from the body's hash {}", entry.id()),
                    );
                }
                let content_ok = match &row.content {
                    Some(c) if Hash256::of(c) != entry.body().content_hash => {
                        p.report.problem(
                            Some(row.index),
                            Some(entry.id()),
                            "content does not match the signed content hash".into(),
                        );
                        false
                    }
                    Some(_) => true,
                    None => false,
                };
                if let Some(key) = self.check_entry(
                    &mut p,
                    row.index,
                    &entry,
                    row.content.as_deref(),
                    content_ok,
                ) {
                    to_check.push((decoded.len(), key));
                }
                p.facts.signed.insert(entry.id(), entry.body().label);
                decoded.push((row.index, entry));
            }
            self.compare_nodes(&mut p)?;
            p.report.signatures += to_check.len() as u64;
            for bad in signatures::verify_signatures(&decoded, &to_check) {
                if let Some((index, entry)) = decoded.get(bad) {
                    p.report.problem(
                        Some(*index),
                        Some(entry.id()),
                        "signature does not verify".into(),
                    );
                }
            }
            examined += rows.len() as u64;
            start = last + 1;
            progress(start.min(total), total);
        }
        p.report.entries = examined;
        self.finish_tree(&mut p, total, cp_note.is_some())?;
        self.check_settings(&mut p)?;
        let store_rule = p.facts.store_rule.unwrap_or_else(|| self.store_rule());
        derived::audit(&self.store, &p.facts, store_rule, &mut p.report)?;
        p.report.principals = p.facts.registry.principals().count();
        Ok(p.report)
    }

    /// Reports the leaf indices missing before `next` and bridges the tree over them.
    fn gap(&self, p: &mut Pass1, next: u64) -> Result<(), Error> {
        let from = p.tree.size();
        let len = next - from;
        if len <= GAP_LISTED {
            for i in from..next {
                p.report.problem(
                    Some(i),
                    None,
                    format!("leaf index {i} is missing from the log (the next present is {next})"),
                );
            }
        } else {
            p.report.problem(
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
                p.report.problem(
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
                .store
                .nodes(&[NodeId::leaf(i)])
                .ok()
                .and_then(|h| h.first().copied());
            self.push_leaf(p, stored);
        }
        Ok(())
    }

    fn push_leaf(&self, p: &mut Pass1, leaf_hash: Option<Hash256>) {
        if !p.tree_ok {
            return;
        }
        p.completed.extend(p.tree.push(leaf_hash));
        if Some(p.tree.size()) == p.checkpoint_size {
            p.root_at_checkpoint = p.tree.root();
        }
    }

    /// Compares the nodes completed in this chunk with the stored ones.
    fn compare_nodes(&self, p: &mut Pass1) -> Result<(), Error> {
        let completed = std::mem::take(&mut p.completed);
        if completed.is_empty() {
            return Ok(());
        }
        let ids: Vec<NodeId> = completed.iter().map(|(n, _)| *n).collect();
        let stored: Vec<Option<Hash256>> = match self.store.nodes(&ids) {
            Ok(hashes) => hashes.into_iter().map(Some).collect(),
            // Some node is missing or malformed: fetch one by one to name it.
            Err(_) => ids
                .iter()
                .map(|n| {
                    self.store
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
            let id = index.and_then(|i| p.leaf_ids.get(&i).copied());
            p.report.problem(index, id, problem);
        }
        Ok(())
    }

    /// Signer, registry, label rule and label of one decoded entry; control-record facts.
    /// Returns the key to verify its signature with, when it is not a registry record.
    fn check_entry(
        &self,
        p: &mut Pass1,
        index: u64,
        entry: &SignedEntry,
        content: Option<&[u8]>,
        content_ok: bool,
    ) -> Option<ed25519_dalek::VerifyingKey> {
        let body = entry.body();
        let id = entry.id();
        if index == 0 && body.kind == EntryKind::Registry {
            p.facts.store_rule = Some(LabelRule::new(body.tau, body.fallback));
        }
        if body.kind == EntryKind::Registry {
            let applied = content
                .ok_or_else(|| Error::Integrity("registry record without content".into()))
                .and_then(|c| Ok(RegistryChange::from_content(c)?))
                .and_then(|change| {
                    verify_registry_signature(&p.facts.registry, index, entry, &change)?;
                    p.facts.registry.apply(index, entry, &change)?;
                    Ok(())
                });
            p.report.signatures += 1;
            if let Err(e) = applied {
                p.report
                    .problem(Some(index), Some(id), format!("registry: {e}"));
            }
            return None;
        }
        let key = match p
            .facts
            .registry
            .signer_at(&body.writer, &body.key_id, index)
        {
            Ok((_, key)) => *key,
            Err(e) => {
                p.report
                    .problem(Some(index), Some(id), format!("signer: {e}"));
                return None;
            }
        };
        // Without a genesis record (reported once, by `check_settings`) the settings table's
        // rule is the best there is.
        let store = p.facts.store_rule.unwrap_or_else(|| self.store_rule());
        if let Some(laxer) = LabelRule::new(body.tau, body.fallback).laxer_than(store) {
            p.report.problem(
                Some(index),
                Some(id),
                format!("signed with a {laxer}: a per-entry override may only be stricter"),
            );
        }
        check_label(p, index, entry, store);
        if content_ok && let Some(c) = content {
            match body.kind {
                EntryKind::Tombstone => match Tombstone::from_content(c) {
                    Ok(t) => {
                        let slot = p.facts.tombstones.entry(t.target).or_insert((id, false));
                        *slot = (id, slot.1 || t.erase);
                    }
                    Err(e) => p
                        .report
                        .problem(Some(index), Some(id), format!("tombstone: {e}")),
                },
                EntryKind::Distrust => match Distrust::from_content(c) {
                    Ok(d) => p.facts.distrust.apply(index, &d),
                    Err(e) => p
                        .report
                        .problem(Some(index), Some(id), format!("distrust: {e}")),
                },
                _ => {}
            }
        } else if body.kind.is_control() && !content_ok {
            p.report.problem(
                Some(index),
                Some(id),
                format!(
                    "the content of this {} record is missing (control records are never erased)",
                    body.kind
                ),
            );
        }
        Some(key)
    }

    /// The root, the stored root and the latest signed checkpoint.
    fn finish_tree(&self, p: &mut Pass1, total: u64, has_checkpoint: bool) -> Result<(), Error> {
        self.compare_nodes(p)?;
        let recomputed = if p.tree_ok { p.tree.root() } else { None };
        p.report.root = recomputed.map_or_else(String::new, |r| r.to_hex());
        if let Some(recomputed) = recomputed {
            match self.root_at(total) {
                Ok(stored) if stored != recomputed => p.report.problem(
                    None,
                    None,
                    format!("the stored tree's root {stored} differs from the root recomputed from the leaves {recomputed}"),
                ),
                Ok(_) => {}
                Err(e) => p.report.problem(None, None, format!("stored tree: {e}")),
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
                        p.report.problem(
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
                Err(e) => p.report.problem(None, None, format!("checkpoint: {e}")),
            }
        }
        Ok(())
    }

    /// The unsigned settings table against the label rule signed into the genesis record.
    fn check_settings(&self, p: &mut Pass1) -> Result<(), Error> {
        let Some(signed) = p.facts.store_rule else {
            p.report.problem(
                Some(0),
                None,
                "the log has no genesis registry record at index 0".into(),
            );
            return Ok(());
        };
        let tau = self.store.setting("tau")?;
        let fallback = self.store.setting("fallback")?;
        let parsed = (
            tau.as_deref().and_then(|t| t.parse::<Weight>().ok()),
            fallback.as_deref().and_then(|f| f.parse::<Fallback>().ok()),
        );
        if parsed != (Some(signed.tau), Some(signed.fallback)) {
            p.report.problem(
                None,
                None,
                format!(
                    "the settings table says τ {}, fallback {}, but the genesis record signs τ {}, fallback {}: the settings were edited",
                    tau.as_deref().unwrap_or("(none)"),
                    fallback.as_deref().unwrap_or("(none)"),
                    signed.tau,
                    signed.fallback
                ),
            );
        }
        Ok(())
    }
}

fn checkpoint_size(note: &str) -> Option<u64> {
    note.lines().nth(1)?.parse().ok()
}

/// The signed label against what the writer's class at `index` and the parents' signed
/// labels require, with the entry's rule bounded by the store's.
fn check_label(p: &mut Pass1, index: u64, entry: &SignedEntry, store: LabelRule) {
    let body = entry.body();
    let mut edges = Vec::with_capacity(body.parents.len());
    for parent in &body.parents {
        match p.facts.signed.get(&parent.id) {
            Some(l) => edges.push(ParentEdge {
                label: *l,
                weight: parent.weight,
            }),
            None => {
                p.report.problem(
                    Some(index),
                    Some(entry.id()),
                    format!("parent {} is not earlier in the log", parent.id),
                );
                return;
            }
        }
    }
    let class = p
        .facts
        .distrust
        .class_at(&p.facts.registry, &body.writer, index);
    let required = required_label(
        class,
        &edges,
        LabelRule::new(body.tau, body.fallback),
        store,
    );
    if body.label < required {
        let why = match p.facts.distrust.principal_before(&body.writer, index) {
            Some(at) => format!(
                " (its writer `{}` was distrusted at log index {at})",
                body.writer
            ),
            None => String::new(),
        };
        p.report.problem(
            Some(index),
            Some(entry.id()),
            format!(
                "signed label {} is lower than its parents imply ({required}){why}: laundering attempt",
                body.label
            ),
        );
    }
}
