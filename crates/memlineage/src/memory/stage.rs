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
use memlineage_core::gate::ValueKey;
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::{self, NodeId};
use memlineage_core::{EntryId, Hash256};
use std::borrow::Cow;
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
    /// What each record yields on its own, computed here or ahead ([`Derived`]).
    derived: Cow<'r, [Derived]>,
    /// The entry rows, handed to the first [`build`] (a backend that retries its transaction
    /// builds again: then they are made again, from `records` and `derived`).
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

/// What one record yields on its own, whatever its position in the log: its leaf (the signed
/// entry's bytes), the leaf's hash (RFC 6962 §2.1), the value keys of its text (the gate's
/// typed values, issue 19) and, for a backend that counts them, its text's terms.
/// [`Memory::sign_writes`](super::Memory::sign_writes) computes them on the signing thread
/// ([`Derivations`]), so that the thread that appends — in the service, the one committer
/// every request waits for — does not: staging was 14 % of the committer's time under a load
/// of single-entry writes, the value keys 12 % (`docs/performance.md`, "Derived rows off the
/// committer").
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Derived {
    leaf: Vec<u8>,
    leaf_hash: Hash256,
    values: Vec<ValueKey>,
    terms: Option<TermCounts>,
}

/// [`Derived`] of `rec`; `count_terms`: the backend indexes counted terms
/// ([`Backend::counts_terms`]).
///
/// [`Backend::counts_terms`]: crate::store::Backend::counts_terms
pub(crate) fn derive(rec: &NewRecord, count_terms: bool) -> Derived {
    let leaf = rec.entry.to_leaf();
    Derived {
        leaf_hash: merkle::leaf_hash(&leaf),
        leaf,
        terms: rec
            .search_text
            .as_deref()
            .filter(|_| count_terms)
            .map(TermCounts::of),
        // The value index (issue 19): every typed value the text carries, as the gate's
        // extraction finds it; kept even if the content is later erased.
        values: rec
            .search_text
            .as_deref()
            .map(memlineage_core::gate::value_keys_of_text)
            .unwrap_or_default(),
    }
}

/// The [`Derived`] rows of a set of records, computed ahead of their append, and for which
/// kind of backend (with or without counted terms).
#[derive(Debug)]
pub(crate) struct Derivations {
    count_terms: bool,
    /// `None` once rows derived for different backends were joined: derived again at the
    /// append.
    rows: Option<Vec<Derived>>,
}

impl Derivations {
    /// Derives every record of `records` now.
    pub(crate) fn of(records: &[NewRecord], count_terms: bool) -> Derivations {
        Derivations {
            count_terms,
            rows: Some(records.iter().map(|r| derive(r, count_terms)).collect()),
        }
    }

    /// Moves `other`'s rows after these, as the records they derive from are moved.
    pub(crate) fn extend(&mut self, other: Derivations) {
        match (&mut self.rows, other.rows) {
            (Some(rows), Some(more)) if self.count_terms == other.count_terms => rows.extend(more),
            // Never for the sets of one handle (one backend).
            _ => self.rows = None,
        }
    }

    /// Splits off the rows from `at` on (as [`Vec::split_off`]).
    pub(crate) fn split_off(&mut self, at: usize) -> Derivations {
        Derivations {
            count_terms: self.count_terms,
            rows: self
                .rows
                .as_mut()
                .map(|rows| rows.split_off(at.min(rows.len()))),
        }
    }

    /// The rows, if they derive `records` for a backend with `count_terms`; `None` (derive
    /// again) otherwise.
    pub(crate) fn rows_for(&self, records: &[NewRecord], count_terms: bool) -> Option<&[Derived]> {
        self.rows
            .as_deref()
            .filter(|rows| self.count_terms == count_terms && rows.len() == records.len())
    }
}

/// Stages `records` ([`Staged`]): the work of an append that needs no lock. `count_terms`:
/// the backend indexes the texts' counted terms ([`Backend::counts_terms`]). `ahead`: their
/// [`Derived`] rows, when already computed for such a backend (else they are computed here).
///
/// [`Backend::counts_terms`]: crate::store::Backend::counts_terms
pub(crate) fn prepare<'r>(
    records: &'r [NewRecord],
    count_terms: bool,
    ahead: Option<&'r [Derived]>,
) -> Staged<'r> {
    let derived: Cow<'r, [Derived]> = match ahead {
        Some(rows) if rows.len() == records.len() => Cow::Borrowed(rows),
        _ => Cow::Owned(records.iter().map(|r| derive(r, count_terms)).collect()),
    };
    let entries = entry_rows(records, &derived);
    let leaf_hashes = derived.iter().map(|d| d.leaf_hash).collect();
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
        derived,
        entries: RefCell::new(Some(entries)),
        leaf_hashes,
        edges,
        in_batch,
    }
}

/// The entry rows of `records` with their [`Derived`] rows, indexed by their offsets in the
/// batch.
fn entry_rows(records: &[NewRecord], derived: &[Derived]) -> Vec<EntryRow> {
    records
        .iter()
        .zip(derived)
        .enumerate()
        .map(|(offset, (rec, d))| {
            let body = rec.entry.body();
            EntryRow {
                index: offset as u64,
                id: rec.entry.id(),
                leaf: d.leaf.clone(),
                scope: body.scope.as_str().to_string(),
                writer: body.writer.clone(),
                kind: body.kind,
                label: body.label,
                content: rec.content.clone(),
                search_text: rec.search_text.clone(),
                terms: d.terms.clone(),
                values: d.values.clone(),
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
        .unwrap_or_else(|| entry_rows(staged.records, &staged.derived));
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
    let staged = prepare(records, backend.counts_terms(), None);
    let mut check =
        |txn: &dyn BackendRead, first: u64| build(txn, first, &staged, effects, Vec::new());
    backend.append(&mut crate::store::AppendGuard::new(&mut check))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::signing::Draft;

    /// A signed record whose text carries typed values of its own (an IBAN, an amount).
    fn record(n: u64) -> NewRecord {
        let text = format!("pay {n}.{n:02} EUR to GB{n:02}NWBK6016133192681{}", n % 10);
        Draft::for_tests(n, text.clone(), Some(text))
            .sign()
            .unwrap()
            .record
    }

    fn records(range: std::ops::Range<u64>) -> Vec<NewRecord> {
        range.map(record).collect()
    }

    #[test]
    fn rows_derived_ahead_stage_exactly_what_the_append_would_derive() {
        let recs = records(0..6);
        for count_terms in [false, true] {
            let ahead = Derivations::of(&recs, count_terms);
            let rows = ahead.rows_for(&recs, count_terms).unwrap();
            let here = prepare(&recs, count_terms, None);
            let early = prepare(&recs, count_terms, Some(rows));
            assert!(matches!(early.derived, Cow::Borrowed(_)));
            assert_eq!(early.leaf_hashes, here.leaf_hashes);
            assert_eq!(early.entries.take(), here.entries.take());
            // Every record carries values, so a misplaced row would show.
            assert!(rows.iter().all(|d| !d.values.is_empty()));
            // Rows for the other kind of backend are not taken.
            assert!(ahead.rows_for(&recs, !count_terms).is_none());
        }
    }

    #[test]
    fn rows_follow_their_records_through_joins_and_splits() {
        let (a, b) = (records(0..3), records(3..7));
        let mut rows = Derivations::of(&a, false);
        rows.extend(Derivations::of(&b, false));
        let mut all = a.clone();
        all.extend(b.clone());
        let want: Vec<Derived> = all.iter().map(|r| derive(r, false)).collect();
        assert_eq!(rows.rows_for(&all, false), Some(want.as_slice()));
        for at in [0, 1, 3, 5, 7, 9] {
            let mut head = Derivations::of(&all, false);
            let tail = head.split_off(at);
            let cut = at.min(all.len());
            assert_eq!(
                head.rows_for(&all[..cut], false),
                Some(&want[..cut]),
                "at {at}"
            );
            assert_eq!(
                tail.rows_for(&all[cut..], false),
                Some(&want[cut..]),
                "at {at}"
            );
        }
        // Joined with rows for another kind of backend: derived again at the append.
        let mut mixed = Derivations::of(&a, false);
        mixed.extend(Derivations::of(&b, true));
        assert!(mixed.rows_for(&all, false).is_none());
        // Rows for other records (a different count) are not taken either.
        assert!(Derivations::of(&a, false).rows_for(&all, false).is_none());
        let of_a = Derivations::of(&a, false);
        let staged = prepare(&all, false, of_a.rows_for(&a, false));
        assert!(matches!(staged.derived, Cow::Owned(_)));
        assert_eq!(staged.leaf_hashes.len(), all.len());
    }
}
