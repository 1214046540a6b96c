//! The store's `edges` table against the signed parent lists.
//!
//! Every edge a signed parent list implies — `(parent, child, weight)` for each decoded child
//! and each parent that is an entry of the log — is looked up in the store as the audit meets
//! the child, a chunk at a time ([`BackendRead::edge_weights`]), and counted. When all are found
//! with their signed weights and the store holds exactly that many edges, the table is exactly
//! the signed edges: the `(parent, child)` key is unique, so the edges found are distinct and an
//! equal count leaves room for no other. This needs memory for one chunk, not for every
//! entry's children.
//!
//! Otherwise — an edge missing or re-weighted, an extra one, a parent the audit could not find,
//! a store that cannot count — the table is compared parent by parent as before
//! ([`audit_exact`]), to name every difference: that reads the log once more and holds the
//! children of every entry, which only a damaged store (or a backend without a count) pays.

use super::{CHUNK, Problems};
use crate::error::Error;
use crate::store::BackendRead;
use memlineage_core::EntryId;
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::Weight;
use std::collections::{HashMap, HashSet};

/// The edges met so far, checked a chunk at a time.
#[derive(Debug, Default)]
pub(super) struct EdgeAudit {
    /// Edges to look up: (parent, child), signed weight.
    pending: Vec<((EntryId, EntryId), Weight)>,
    /// Edges looked up and found with their signed weight.
    found: u64,
    /// False once an edge was missing or had another weight, or a parent was not found.
    exact: bool,
}

impl EdgeAudit {
    /// A new audit: nothing met, nothing wrong.
    pub(super) fn new() -> EdgeAudit {
        EdgeAudit {
            exact: true,
            ..EdgeAudit::default()
        }
    }

    /// The edge a decoded child's signed parent list implies from a parent in the log.
    pub(super) fn expect(&mut self, parent: EntryId, child: EntryId, weight: Weight) {
        self.pending.push(((parent, child), weight));
    }

    /// A decoded child names a parent that is not an earlier entry of the log (pass 1 reports
    /// it): only the parent-by-parent comparison says what the table should hold then.
    pub(super) fn unresolved(&mut self) {
        self.exact = false;
    }

    /// Looks up the edges met since the last call.
    pub(super) fn flush(&mut self, store: &dyn BackendRead) -> Result<(), Error> {
        if self.pending.is_empty() || !self.exact {
            self.pending.clear();
            return Ok(());
        }
        let keys: Vec<(EntryId, EntryId)> = self.pending.iter().map(|(k, _)| *k).collect();
        let stored = store.edge_weights(&keys)?;
        if stored.len() != keys.len() {
            self.exact = false;
        }
        for ((_, signed), stored) in self.pending.iter().zip(stored) {
            if stored == Some(*signed) {
                self.found += 1;
            } else {
                self.exact = false;
            }
        }
        self.pending.clear();
        Ok(())
    }

    /// True when the table holds exactly the signed edges; false when it must be compared
    /// parent by parent.
    pub(super) fn finish(mut self, store: &dyn BackendRead) -> Result<bool, Error> {
        self.flush(store)?;
        Ok(self.exact && store.edge_count()? == Some(self.found))
    }
}

/// The parent-by-parent comparison: for every entry of the log, its stored edges (to children
/// whose leaf decodes to their indexed id) against the edges the signed parent lists of those
/// children imply.
pub(super) fn audit_exact(store: &dyn BackendRead, problems: &mut Problems) -> Result<(), Error> {
    let total = store.size()?;
    let mut children: HashMap<EntryId, Vec<(EntryId, Weight)>> = HashMap::new();
    let mut order: Vec<(u64, EntryId)> = Vec::new();
    // Indexed ids of entries whose leaf does not decode or hashes to another id: their true
    // parent lists are unknown, so their edges are not compared (pass 1 reports the entry).
    let mut broken: HashSet<EntryId> = HashSet::new();
    let mut start = 0;
    while start < total {
        let rows = store.entries(start, CHUNK)?;
        let Some(last) = rows.last().map(|r| r.index) else {
            break;
        };
        for row in rows {
            match SignedEntry::from_leaf(&row.leaf) {
                Ok(entry) if entry.id() == row.id => {
                    for p in &entry.body().parents {
                        children.entry(p.id).or_default().push((row.id, p.weight));
                    }
                    order.push((row.index, row.id));
                }
                _ => {
                    broken.insert(row.id);
                }
            }
        }
        start = last + 1;
    }
    for (index, id) in order {
        let mut stored = store.children(&id)?;
        stored.retain(|(child, _)| !broken.contains(child));
        let mut expected = children.remove(&id).unwrap_or_default();
        stored.sort_unstable();
        expected.sort_unstable();
        if stored != expected {
            problems.problem(Some(index), Some(id), edge_difference(&stored, &expected));
        }
    }
    Ok(())
}

/// Describes how the stored edges from one parent differ from the signed ones.
fn edge_difference(stored: &[(EntryId, Weight)], expected: &[(EntryId, Weight)]) -> String {
    let mut parts = Vec::new();
    for (child, w) in expected {
        match stored.iter().find(|(c, _)| c == child) {
            None => parts.push(format!(
                "missing edge to child {} (weight {w})",
                child.short()
            )),
            Some((_, sw)) if sw != w => parts.push(format!(
                "edge to child {} has weight {sw}, signed {w}",
                child.short()
            )),
            Some(_) => {}
        }
    }
    for (child, w) in stored {
        if !expected.iter().any(|(c, _)| c == child) {
            parts.push(format!(
                "extra edge to child {} (weight {w}) that no signed parent list names",
                child.short()
            ));
        }
    }
    let shown: Vec<String> = parts.iter().take(3).cloned().collect();
    let more = parts.len().saturating_sub(3);
    format!(
        "the edges table disagrees with the signed parent lists: {}{}",
        shown.join("; "),
        if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        }
    )
}
