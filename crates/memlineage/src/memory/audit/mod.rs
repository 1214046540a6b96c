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
//! Pass 1 also collects, from the signed records alone, the tombstones and distrust records
//! ([`facts`]).
//!
//! The derived-state audit ([`derived`]) rebuilds the store's derived state from those facts —
//! forgotten and erased entries, effective labels, the copies of scope, writer, kind and label,
//! the lineage edges ([`edges`]) — and names every entry whose stored state disagrees. Then the
//! settings table is checked against the genesis record, and the latest signed checkpoint
//! against the leaves. Two indexes beside the log are checked chunk by chunk in pass 1: the
//! value index ([`values`]: every value an entry carries is indexed) and the stored embeddings
//! ([`embeddings`]: every row checks its binding to a live entry with content).
//!
//! How it runs (the checks are the same as when each was a separate pass):
//!
//! - The log is read once, in chunks of [`CHUNK`]. The derived state is audited in the same
//!   pass, against the control records' facts read ahead from the store's kind index; they are
//!   compared with pass 1's at the end, and the derived state is audited again in a second
//!   pass only when they differ ([`facts`]).
//! - A chunk's signatures are verified on all cores in the background while the next chunk is
//!   read, decoded and checked ([`signatures`]); problems are still reported in check order
//!   ([`problems`]).
//! - Memory is bounded: labels are kept by leaf index, one byte per entry, with a window of
//!   recent ids and authenticated store look-ups for older parents ([`labels`]); edges are
//!   looked up a chunk at a time and counted ([`edges`]).

mod derived;
mod edges;
mod embeddings;
mod entries;
mod facts;
mod ids;
mod labels;
mod problems;
mod signatures;
#[cfg(test)]
mod tests;
mod tree;
mod tree_checks;
mod values;

use super::Memory;
use crate::error::Error;
use crate::store::StoredEntry;
use derived::Derived;
use facts::LogFacts;
use labels::Labels;
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::{Fallback, Weight};
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::{EntryId, Hash256};
use problems::Problems;
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
        if self.problems.len() < MAX_LISTED {
            self.problems.push(AuditProblem {
                index,
                id: id.map(|i| i.to_hex()),
                reason,
            });
        }
    }
}

/// Problems listed in full in a report (all are counted).
const MAX_LISTED: usize = 1000;
/// Entries read, checked and batch-verified at a time (a few in unit tests).
const CHUNK: u64 = if cfg!(test) { 8 } else { 4096 };
// A parent evicted from the window of recent ids lies in an earlier chunk, whose stored leaf
// nodes have been compared: what authenticates the store's answer for it (`labels.rs`).
const _: () = assert!(labels::WINDOW as u64 >= 2 * CHUNK);
/// Missing leaf indices in one gap up to this many are reported one by one; a longer gap is
/// reported as one range.
const GAP_LISTED: u64 = 64;
/// Gaps up to this many leaves are bridged with the stored leaf hashes, so the tree check goes
/// on past them; beyond, the node-by-node check stops at the gap.
const GAP_BRIDGED: u64 = CHUNK;

/// Pass 1's running state.
struct Pass1 {
    report: AuditReport,
    /// Problems of the chunk being checked, reported after the previous chunk's signatures.
    out: Problems,
    facts: LogFacts,
    labels: Labels,
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

impl Memory {
    /// Audits the whole store; `progress(done, total)` is called after every chunk of pass 1.
    pub fn verify(&self, progress: &mut dyn FnMut(u64, u64)) -> Result<AuditReport, Error> {
        // The audit checks the stored tables, not what this handle's backend remembers of them.
        self.backend.forget_cached();
        let total = self.reads().size()?;
        let cp_note = self.reads().latest_checkpoint()?;
        let mut p = Pass1 {
            report: AuditReport::default(),
            out: Problems::default(),
            facts: LogFacts::default(),
            labels: Labels::new(total),
            tree: TreeAudit::default(),
            tree_ok: true,
            completed: Vec::new(),
            leaf_ids: HashMap::new(),
            root_at_checkpoint: None,
            checkpoint_size: cp_note.as_deref().and_then(checkpoint_size),
        };
        let models = self.reads().embedding_models()?;
        let ahead = LogFacts::from_kind_index(self.reads());
        let mut derived = ahead.map(|f| Derived::new(f, self.store_rule()));
        let examined = std::thread::scope(|scope| -> Result<u64, Error> {
            let mut pending: Option<signatures::Pending<'_>> = None;
            let mut start = 0;
            let mut examined = 0;
            while start < total {
                let rows = self.reads().entries(start, CHUNK)?;
                let Some(last) = rows.last().map(|r| r.index) else {
                    p.out.problem(
                        Some(start),
                        None,
                        format!(
                            "leaf indices {start}..={} are missing from the log",
                            total.saturating_sub(1)
                        ),
                    );
                    break;
                };
                let checked = self.check_chunk(&mut p, &rows)?;
                values::check_chunk(self.reads(), &mut p.out, &rows, &checked.decoded)?;
                ids::check_chunk(self.reads(), &mut p.out, &rows)?;
                embeddings::check_chunk(
                    self.reads(),
                    &mut p.out,
                    &models,
                    &rows,
                    &checked.decoded,
                )?;
                if let Some(d) = derived.as_mut() {
                    let copies = self.reads().index_rows(start, CHUNK)?;
                    let decoded: Vec<Option<&SignedEntry>> =
                        checked.decoded.iter().map(Option::as_ref).collect();
                    d.chunk(self.reads(), &mut p.labels, &rows, &decoded, copies)?;
                }
                self.compare_nodes(&mut p)?;
                if p.tree_ok {
                    p.labels.nodes_checked_to(p.tree.size());
                }
                // The previous chunk's signature problems come before this chunk's problems.
                report_signatures(&mut p.report, pending.take());
                std::mem::take(&mut p.out).report_into(&mut p.report);
                let items = checked.into_items();
                p.report.signatures += items.len() as u64;
                pending = Some(signatures::spawn(scope, items));
                examined += rows.len() as u64;
                start = last + 1;
                progress(start.min(total), total);
            }
            report_signatures(&mut p.report, pending.take());
            embeddings::check_beyond(self.reads(), &mut p.out, &models, total)?;
            std::mem::take(&mut p.out).report_into(&mut p.report);
            Ok(examined)
        })?;
        p.report.entries = examined;
        self.finish_tree(&mut p, total, cp_note.is_some())?;
        self.check_settings(&mut p)?;
        self.audit_derived(&mut p, derived)?;
        p.report.principals = p.facts.registry.principals().count();
        Ok(p.report)
    }

    /// Reports the derived-state audit: the one run beside pass 1 when its facts are pass 1's,
    /// else a second pass with pass 1's facts; then the edges, parent by parent if needed.
    fn audit_derived(&self, p: &mut Pass1, derived: Option<Derived>) -> Result<(), Error> {
        let mut derived = match derived {
            Some(d) if d.facts.same_as(&p.facts) => d,
            _ => {
                let facts = std::mem::take(&mut p.facts);
                let mut again = Derived::new(facts, self.store_rule());
                derived::audit_again(self.reads(), &mut p.labels, &mut again)?;
                again
            }
        };
        let exact = std::mem::take(&mut derived.edges).finish(self.reads())?;
        if !exact {
            edges::audit_exact(self.reads(), &mut derived.problems)?;
        }
        p.facts = std::mem::take(&mut derived.facts);
        derived.problems.report_into(&mut p.report);
        Ok(())
    }

    /// The pass-1 checks of one chunk of rows: the tree, the leaves, the entries. Returns the
    /// decoded entries and the signatures to verify.
    fn check_chunk(&self, p: &mut Pass1, rows: &[StoredEntry]) -> Result<Checked, Error> {
        let mut decoded: Vec<Option<SignedEntry>> = Vec::with_capacity(rows.len());
        let mut to_verify = Vec::new();
        p.leaf_ids = rows.iter().map(|r| (r.index, r.id)).collect();
        for row in rows {
            if row.index > p.tree.size() {
                self.gap(p, row.index)?;
            }
            let lh = merkle::leaf_hash(&row.leaf);
            self.push_leaf(p, Some(lh));
            let entry = match SignedEntry::from_leaf(&row.leaf) {
                Ok(e) => e,
                Err(e) => {
                    p.out
                        .problem(Some(row.index), Some(row.id), format!("leaf: {e}"));
                    decoded.push(None);
                    continue;
                }
            };
            if entry.id() != row.id {
                p.out.problem(
                    Some(row.index),
                    Some(row.id),
                    format!("indexed id differs from the body's hash {}", entry.id()),
                );
            }
            let content_ok = match &row.content {
                Some(c) if Hash256::of(c) != entry.body().content_hash => {
                    p.out.problem(
                        Some(row.index),
                        Some(entry.id()),
                        "content does not match the signed content hash".into(),
                    );
                    false
                }
                Some(_) => true,
                None => false,
            };
            if let Some(key) =
                self.check_entry(p, row.index, &entry, row.content.as_deref(), content_ok)?
            {
                to_verify.push((decoded.len(), row.index, key));
            }
            p.labels
                .note_signed(row.index, entry.id(), row.id, entry.body().label);
            decoded.push(Some(entry));
        }
        Ok(Checked { decoded, to_verify })
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
        if !self.value_index_complete(self.reads())? {
            p.report.problem(
                None,
                None,
                "the value index is not marked complete for this version's keys (a store made before the index or its current keys existed and never opened for writing since, or an edited settings table): the gate refuses to decide on it until it is filled; opening the store for writing fills it".into(),
            );
        }
        let tau = self.reads().setting("tau")?;
        let fallback = self.reads().setting("fallback")?;
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

/// What pass 1 hands on from a chunk.
struct Checked {
    /// The decoded leaf of each row (`None`: it does not decode).
    decoded: Vec<Option<SignedEntry>>,
    /// The signatures to verify: position in `decoded`, leaf index, the signer's key.
    to_verify: Vec<(usize, u64, ed25519_dalek::VerifyingKey)>,
}

impl Checked {
    /// The signatures to verify, the entries moved out of `decoded`.
    fn into_items(mut self) -> Vec<signatures::Item> {
        self.to_verify
            .iter()
            .filter_map(|(pos, index, key)| {
                let entry = self.decoded.get_mut(*pos)?.take()?;
                Some((*index, entry.id(), entry, *key))
            })
            .collect()
    }
}

/// Waits for a chunk's signature checks and reports the entries that fail.
fn report_signatures(report: &mut AuditReport, pending: Option<signatures::Pending<'_>>) {
    for (index, id) in pending.map(signatures::Pending::join).unwrap_or_default() {
        report.problem(Some(index), Some(id), "signature does not verify".into());
    }
}

fn checkpoint_size(note: &str) -> Option<u64> {
    note.lines().nth(1)?.parse().ok()
}
