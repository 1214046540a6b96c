//! The monitor's checks of each new leaf: the same checks as `memlineage verify`'s first
//! pass (`docs/store.md`), from the leaves and proofs alone.

use super::{Finding, Follow, ParentLeaf};
use crate::entry::{EntryKind, SignedEntry};
use crate::keys::{self, BatchItem, Domain};
use crate::label::TrustClass;
use crate::merkle::{leaf_hash, verify_inclusion};
use crate::records::Tombstone;
use crate::rule::{LabelRule, required_label};
use crate::trust::ParentEdge;
use crate::{EntryId, Hash256};

/// Signatures are verified in batches of this many (about twice as fast per signature).
const SIGNATURE_BATCH: usize = 256;

impl Follow<'_> {
    fn entry_finding(&mut self, index: u64, id: Option<EntryId>, problem: String) {
        self.findings.push(Finding::Entry { index, id, problem });
    }

    /// Checks the next leaf (at [`next_index`](Self::next_index)) and adds it to the tree.
    /// `content` is the entry's content as the log serves it (needed for registry, distrust
    /// and tombstone records, which are never erased); `parent` reads an earlier entry by id
    /// with its inclusion proof in the verified tree ([`Follow::verified_tree`]).
    pub fn push(
        &mut self,
        leaf: &[u8],
        content: Option<&[u8]>,
        parent: &mut dyn FnMut(&EntryId) -> Option<ParentLeaf>,
    ) {
        let index = self.next.state.size();
        self.next.state.range.append_hash(leaf_hash(leaf));
        let entry = match SignedEntry::from_leaf(leaf) {
            Ok(e) => e,
            Err(e) => {
                self.entry_finding(index, None, format!("the leaf does not decode: {e}"));
                return;
            }
        };
        let id = entry.id();
        let body = entry.body();
        self.batch.insert(id, (index, body.label));
        if index == 0 {
            if body.kind != EntryKind::Registry {
                self.entry_finding(
                    index,
                    Some(id),
                    format!(
                        "index 0 is a {} record, not the genesis registry record",
                        body.kind
                    ),
                );
                return;
            }
            self.next.state.rule = Some(LabelRule::new(body.tau, body.fallback));
        }
        let control_content = if body.kind.is_control() && body.kind != EntryKind::GateDecision {
            match content {
                Some(c) if Hash256::of(c) == body.content_hash => Some(c),
                Some(_) => {
                    self.entry_finding(
                        index,
                        Some(id),
                        format!(
                            "the content of this {} record does not match its signed hash",
                            body.kind
                        ),
                    );
                    return;
                }
                None => {
                    self.entry_finding(
                        index,
                        Some(id),
                        format!("the content of this {} record is missing (control records are never erased)", body.kind),
                    );
                    return;
                }
            }
        } else {
            None
        };
        if body.kind == EntryKind::Registry {
            if let Some(c) = control_content
                && let Err(e) = self.next.keep(index, &entry, c)
            {
                self.entry_finding(index, Some(id), format!("registry: {e}"));
            }
            return;
        }
        let key = match self
            .next
            .registry
            .signer_at(&body.writer, &body.key_id, index)
        {
            Ok((_, key)) => *key,
            Err(e) => {
                self.entry_finding(index, Some(id), format!("signer: {e}"));
                return;
            }
        };
        self.check_label(index, &entry, parent);
        if let Some(c) = control_content {
            match body.kind {
                EntryKind::Distrust => {
                    if let Err(e) = self.next.keep(index, &entry, c) {
                        self.entry_finding(index, Some(id), format!("distrust: {e}"));
                    }
                }
                EntryKind::Tombstone => {
                    if let Err(e) = Tombstone::from_content(c) {
                        self.entry_finding(index, Some(id), format!("tombstone: {e}"));
                    }
                }
                _ => {}
            }
        }
        self.pending.push((index, key, entry));
        if self.pending.len() >= SIGNATURE_BATCH {
            self.flush_signatures();
        }
    }

    /// The label rule against the genesis record's, and the signed label against what the
    /// writer's class at `index` (external once distrusted) and the parents' signed labels
    /// require.
    fn check_label(
        &mut self,
        index: u64,
        entry: &SignedEntry,
        parent: &mut dyn FnMut(&EntryId) -> Option<ParentLeaf>,
    ) {
        let body = entry.body();
        let id = entry.id();
        let Some(store_rule) = self.next.state.rule else {
            self.entry_finding(index, Some(id), "no genesis record precedes it".into());
            return;
        };
        let own = LabelRule::new(body.tau, body.fallback);
        if let Some(laxer) = own.laxer_than(store_rule) {
            self.entry_finding(
                index,
                Some(id),
                format!("signed with a {laxer}: a per-entry override may only be stricter"),
            );
        }
        let mut edges = Vec::with_capacity(body.parents.len());
        for p in &body.parents {
            let label = match self.batch.get(&p.id) {
                Some((i, label)) if *i < index => Some(*label),
                Some(_) => None,
                None => self.proved_parent(&p.id, parent),
            };
            match label {
                Some(label) => edges.push(ParentEdge {
                    label,
                    weight: p.weight,
                }),
                None => {
                    self.entry_finding(
                        index,
                        Some(id),
                        format!("parent {} is not earlier in the log", p.id),
                    );
                    return;
                }
            }
        }
        let distrusted_at = self
            .next
            .distrusted
            .get(&body.writer)
            .copied()
            .filter(|at| *at < index);
        let class = match self.next.registry.get(&body.writer) {
            Some(p) if distrusted_at.is_none() => p.class,
            _ => TrustClass::External,
        };
        let required = required_label(class, &edges, own, store_rule);
        if body.label < required {
            let why = distrusted_at.map_or_else(String::new, |at| {
                format!(
                    " (its writer `{}` was distrusted at log index {at})",
                    body.writer
                )
            });
            self.entry_finding(
                index,
                Some(id),
                format!(
                    "signed label {} is lower than its parents imply ({required}){why}: laundering attempt",
                    body.label
                ),
            );
        }
    }

    /// The signed label of a parent logged before the verified size, read from the log and
    /// believed only with an inclusion proof against the verified root.
    fn proved_parent(
        &self,
        id: &EntryId,
        parent: &mut dyn FnMut(&EntryId) -> Option<ParentLeaf>,
    ) -> Option<crate::label::TrustLabel> {
        let (size, root) = self.verified_tree();
        let p = parent(id)?;
        if p.index >= size {
            return None;
        }
        let entry = SignedEntry::from_leaf(&p.leaf).ok()?;
        if entry.id() != *id {
            return None;
        }
        verify_inclusion(&leaf_hash(&p.leaf), p.index, size, &p.proof, &root).ok()?;
        Some(entry.body().label)
    }

    /// Verifies the queued signatures in one batch; failures become findings.
    pub(super) fn flush_signatures(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let items: Vec<BatchItem<'_>> = pending
            .iter()
            .map(|(_, key, e)| BatchItem {
                key,
                bytes: e.body_bytes(),
                signature: e.signature(),
            })
            .collect();
        let bad = match keys::verify_batch(Domain::EntryV1, &items) {
            Ok(()) => Vec::new(),
            Err(keys::KeyError::BatchFailed(v)) => v,
            Err(_) => (0..items.len()).collect(),
        };
        for i in bad {
            if let Some((index, _, e)) = pending.get(i) {
                self.findings.push(Finding::Entry {
                    index: *index,
                    id: Some(e.id()),
                    problem: "signature does not verify".into(),
                });
            }
        }
    }
}
