//! Staging an append: everything a backend writes, computed once, here, for every backend
//! (DESIGN.md, "One way in": a backend persists bytes the handle computed).
//!
//! From the records of a batch, the index of its first entry and the effects of its control
//! records, [`build`] makes the [`AppendBatch`]: each leaf with its content and the copies of
//! its signed fields; every Merkle node the batch completes (RFC 6962 §2.1 node hashes, the
//! stored form of `docs/store.md`: a complete subtree's hash, written once); the lineage edges;
//! the final forgotten rows (erasure is sticky: a later tombstone without `erase` never brings
//! the bytes back); and the raised effective labels.

use crate::error::Error;
use crate::store::TermCounts;
use crate::store::{AppendBatch, BackendRead, EdgeRow, EntryRow, ForgottenRow, NewRecord};
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::{EntryId, Hash256};
use std::cell::RefCell;
use std::collections::HashMap;

/// Derived state that a control record changes, applied in the same transaction as the append.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// A tombstone forgets `target` (and erases its content when `erase`).
    Forget {
        /// The forgotten entry.
        target: EntryId,
        /// The tombstone's id.
        tombstone: EntryId,
        /// Erase the content bytes too.
        erase: bool,
    },
    /// A distrust record raises the effective label of `id`.
    RaiseLabel {
        /// The entry.
        id: EntryId,
        /// Its new effective label.
        label: TrustLabel,
    },
}

/// The rows of a batch that do not depend on where it lands in the log — each leaf with its
/// content, the copies of its signed fields, its value keys and its leaf hash (RFC 6962 §2.1:
/// `SHA-256(0x00 ‖ leaf)`), and the lineage edges — made by [`prepare`] before the append's
/// transaction, so that the log head is held only for what depends on the position: the
/// checks against the state as of the transaction, the interior Merkle nodes, the writes and
/// the commit. Indices here are offsets in the batch; [`build`] adds the first index.
pub(crate) struct Staged<'r> {
    records: &'r [NewRecord],
    count_terms: bool,
    /// The entry rows, handed to the first [`build`] (a backend that retries its transaction
    /// builds again: then they are made again, from `records`).
    entries: RefCell<Option<Vec<EntryRow>>>,
    leaf_hashes: Vec<Hash256>,
    edges: Vec<EdgeRow>,
    /// Offset in the batch of each new entry.
    in_batch: HashMap<EntryId, u64>,
}

impl Staged<'_> {
    /// The lineage edges, each child's index its offset in the batch
    /// ([`crate::store::AppendGuard::early_edges`]).
    pub(crate) fn edges(&self) -> &[EdgeRow] {
        &self.edges
    }
}

/// Stages `records` ([`Staged`]): the work of an append that needs no lock. `count_terms`:
/// the backend indexes the texts' counted terms ([`Backend::counts_terms`]).
///
/// [`Backend::counts_terms`]: crate::store::Backend::counts_terms
pub(crate) fn prepare(records: &[NewRecord], count_terms: bool) -> Staged<'_> {
    let entries = entry_rows(records, count_terms);
    let leaf_hashes = entries.iter().map(|e| merkle::leaf_hash(&e.leaf)).collect();
    let mut edges = Vec::new();
    let mut in_batch: HashMap<EntryId, u64> = HashMap::with_capacity(records.len());
    for (e, rec) in entries.iter().zip(records) {
        in_batch.insert(e.id, e.index);
        edges.extend(rec.entry.body().parents.iter().map(|p| EdgeRow {
            parent: p.id,
            child: e.id,
            child_index: e.index,
            weight: p.weight,
        }));
    }
    Staged {
        records,
        count_terms,
        entries: RefCell::new(Some(entries)),
        leaf_hashes,
        edges,
        in_batch,
    }
}

/// The entry rows of `records`, indexed by their offsets in the batch.
fn entry_rows(records: &[NewRecord], count_terms: bool) -> Vec<EntryRow> {
    records
        .iter()
        .enumerate()
        .map(|(offset, rec)| {
            let body = rec.entry.body();
            EntryRow {
                index: offset as u64,
                id: rec.entry.id(),
                leaf: rec.entry.to_leaf(),
                scope: body.scope.as_str().to_string(),
                writer: body.writer.clone(),
                kind: body.kind,
                label: body.label,
                content: rec.content.clone(),
                search_text: rec.search_text.clone(),
                terms: rec
                    .search_text
                    .as_deref()
                    .filter(|_| count_terms)
                    .map(TermCounts::of),
                // The value index (issue 19): every typed value the text carries, as the
                // gate's extraction finds it; kept even if the content is later erased.
                values: rec
                    .search_text
                    .as_deref()
                    .map(memlineage_core::gate::value_keys_of_text)
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// The rows of appending the `staged` records at `first`, with `effects`, on the state `txn`
/// reads.
pub(crate) fn build(
    txn: &dyn BackendRead,
    first: u64,
    staged: &Staged<'_>,
    effects: &[Effect],
    settings: Vec<(String, String)>,
) -> Result<AppendBatch, Error> {
    let mut entries = staged
        .entries
        .take()
        .unwrap_or_else(|| entry_rows(staged.records, staged.count_terms));
    for e in &mut entries {
        e.index += first;
    }
    let edges: Vec<EdgeRow> = staged
        .edges
        .iter()
        .map(|e| EdgeRow {
            child_index: first + e.child_index,
            ..*e
        })
        .collect();
    let in_batch = &staged.in_batch;
    let nodes = completed_nodes(txn, first, &staged.leaf_hashes)?;
    let mut forgotten: Vec<ForgottenRow> = Vec::new();
    let mut raised = Vec::new();
    for effect in effects {
        match effect {
            Effect::Forget {
                target,
                tombstone,
                erase,
            } => {
                if let Some(row) = forgotten.iter_mut().find(|r| r.target == *target) {
                    row.tombstone = *tombstone;
                    row.erased |= *erase;
                    continue;
                }
                let (target_index, was_erased) = match in_batch.get(target) {
                    Some(offset) => (first + offset, false),
                    None => {
                        let stored = txn.labels_by_id(target)?.ok_or(Error::NotFound(*target))?;
                        let erased = txn
                            .index_rows(stored.index, 1)?
                            .first()
                            .and_then(|r| r.erased)
                            .unwrap_or(false);
                        (stored.index, erased)
                    }
                };
                forgotten.push(ForgottenRow {
                    target: *target,
                    target_index,
                    tombstone: *tombstone,
                    erased: *erase || was_erased,
                });
            }
            Effect::RaiseLabel { id, label } => raised.push((*id, *label)),
        }
    }
    Ok(AppendBatch {
        first,
        entries,
        nodes,
        edges,
        forgotten,
        raised,
        settings,
    })
}

/// The leaf hashes `leaf_hashes` of the leaves appended at `first, first + 1, …` and the
/// hashes of every node they complete, in the order completed. The stored nodes needed are
/// exactly the complete subtrees of the tree of size `first` (its root nodes, one read): a node
/// the batch completes has a right child completed by the batch and a left child that is either
/// completed by the batch or a complete subtree of the old tree whose parent was not complete,
/// i.e. one of its root nodes.
pub(crate) fn completed_nodes(
    txn: &dyn BackendRead,
    first: u64,
    leaf_hashes: &[Hash256],
) -> Result<Vec<(NodeId, Hash256)>, Error> {
    if leaf_hashes.is_empty() {
        return Ok(Vec::new());
    }
    let frontier = merkle::root_nodes(first);
    let hashes = if frontier.is_empty() {
        Vec::new()
    } else {
        txn.nodes(&frontier)?
    };
    if hashes.len() != frontier.len() {
        return Err(Error::internal(format!(
            "the store returned {} Merkle nodes for {} requested",
            hashes.len(),
            frontier.len()
        )));
    }
    // The complete subtrees of the growing tree, left to right, levels strictly descending.
    let mut stack: Vec<(NodeId, Hash256)> = frontier.into_iter().zip(hashes).collect();
    let mut out = Vec::with_capacity(leaf_hashes.len() * 2);
    for (offset, leaf) in leaf_hashes.iter().enumerate() {
        let node = (NodeId::leaf(first + offset as u64), *leaf);
        out.push(node);
        stack.push(node);
        while let [.., (l, lh), (r, rh)] = stack.as_slice()
            && l.level == r.level
        {
            let parent = (l.parent(), merkle::node_hash(lh, rh));
            stack.truncate(stack.len() - 2);
            stack.push(parent);
            out.push(parent);
        }
    }
    Ok(out)
}

/// Appends `records` with `effects` and no check at all: the guard only stages the rows. For
/// the `unchecked-store-access` feature (forged rows, bulk generation) and this crate's tests.
#[cfg_attr(not(any(test, feature = "unchecked-store-access")), allow(dead_code))]
pub(crate) fn append_unchecked(
    backend: &dyn crate::store::Backend,
    records: &[NewRecord],
    effects: &[Effect],
) -> Result<u64, Error> {
    let staged = prepare(records, backend.counts_terms());
    let mut check =
        |txn: &dyn BackendRead, first: u64| build(txn, first, &staged, effects, Vec::new());
    backend.append(&mut crate::store::AppendGuard::new(&mut check))
}
