//! Effective labels recomputed from the log alone (retroactive distrust; `docs/lineage.md`).
//!
//! The store keeps effective labels in its derived `effective` table, written when a distrust
//! record is appended. That table is an index: deleting a row would make a distrusted entry
//! look trusted again. `verify` recomputes every effective label from the signed leaves and the
//! distrust records; retrieval recomputes the effective label of each entry it returns, walking
//! the entry's ancestors back to the first entry any distrust record can affect (entries older
//! than every target are unaffected), so a deleted row can never raise trust in a prompt.
//!
//! The ancestry is hash-chained: every parent id is signed into its child and every body hashes
//! to its id, so the labels read on the walk cannot be altered without changing an id.

use super::distrusted::DistrustLog;
use super::read::decode_stored;
use crate::error::{Error, InputError, IntegrityCheck, IntegrityError};
use crate::store::BackendRead;
use memlineage_core::EntryId;
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::{TrustClass, TrustLabel, Weight};
use memlineage_core::principal::Registry;
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;
use std::collections::{BTreeMap, HashMap};

/// A parent as the effective-label rule sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ParentLabels {
    /// The parent's signed label.
    pub signed: TrustLabel,
    /// The parent's effective label (≥ `signed`).
    pub effective: TrustLabel,
    /// The edge weight.
    pub weight: Weight,
}

/// The effective label of an entry: its signed label; `EXTERNAL` when a distrust record names
/// it (or its writer); and, when some parent's effective label was raised above its signed
/// one, at least the label recomputed from the parents' effective labels with the entry's own
/// rule bounded by the store's. This is the fixpoint the append-time walk of a distrust record
/// reaches (`control::distrust_effects`).
pub(crate) fn effective_label(
    signed: TrustLabel,
    distrusted: bool,
    class: TrustClass,
    parents: &[ParentLabels],
    entry_rule: LabelRule,
    store_rule: LabelRule,
) -> TrustLabel {
    let mut label = signed;
    if distrusted {
        label = TrustLabel::External;
    }
    if parents.iter().any(|p| p.effective > p.signed) {
        let edges: Vec<ParentEdge> = parents
            .iter()
            .map(|p| ParentEdge {
                label: p.effective,
                weight: p.weight,
            })
            .collect();
        label = label.max(required_label(class, &edges, entry_rule, store_rule));
    }
    label
}

/// The most ancestors one retrieval reads to recompute effective labels. Beyond it, the entry
/// is dropped (fail closed) with a message that says to run `memlineage verify`.
pub(crate) const WALK_BUDGET: usize = 100_000;

/// Recomputes effective labels for a result set, memoised across the set.
pub(crate) struct EffectiveWalk<'a> {
    reader: &'a dyn BackendRead,
    registry: &'a Registry,
    distrust: &'a DistrustLog,
    store_rule: LabelRule,
    first_affected: Option<u64>,
    /// id → (signed, effective).
    memo: HashMap<EntryId, (TrustLabel, TrustLabel)>,
    visits: usize,
}

impl<'a> EffectiveWalk<'a> {
    /// A walk over `reader` with the given registry and distrust replay.
    pub(crate) fn new(
        reader: &'a dyn BackendRead,
        registry: &'a Registry,
        distrust: &'a DistrustLog,
        store_rule: LabelRule,
    ) -> Result<EffectiveWalk<'a>, Error> {
        let first_affected = if distrust.is_empty() {
            None
        } else {
            distrust.first_affected(reader, registry)?
        };
        Ok(EffectiveWalk {
            reader,
            registry,
            distrust,
            store_rule,
            first_affected,
            memo: HashMap::new(),
            visits: 0,
        })
    }

    /// The effective label of `entry`, logged at `index`, recomputed from the log.
    pub(crate) fn label_of(
        &mut self,
        index: u64,
        entry: &SignedEntry,
    ) -> Result<TrustLabel, Error> {
        let signed = entry.body().label;
        let Some(first) = self.first_affected.filter(|f| index >= *f) else {
            return Ok(signed);
        };
        if let Some((_, e)) = self.memo.get(&entry.id()) {
            return Ok(*e);
        }
        // Collect the ancestors that distrust can affect, then compute in log order (parents
        // always precede their children, so ascending index is a topological order).
        let mut pending: BTreeMap<u64, SignedEntry> = BTreeMap::new();
        pending.insert(index, entry.clone());
        let mut stack: Vec<EntryId> = entry.body().parents.iter().map(|p| p.id).collect();
        let mut seen: std::collections::HashSet<EntryId> = std::collections::HashSet::new();
        while let Some(id) = stack.pop() {
            if self.memo.contains_key(&id) || !seen.insert(id) {
                continue;
            }
            self.visits += 1;
            if self.visits > WALK_BUDGET {
                return Err(InputError::TooManyAncestors(WALK_BUDGET).into());
            }
            let stored = self
                .reader
                .entry_by_id(&id)?
                .ok_or(Error::UnknownParent(id))?;
            let parent = decode_stored(&stored)?;
            if parent.id() != id {
                return Err(IntegrityError::new(
                    IntegrityCheck::EntryId,
                    format!(
                        "ancestor {id} at index {} has a body that hashes to {}",
                        stored.index,
                        parent.id()
                    ),
                )
                .at(stored.index)
                .entry(id)
                .into());
            }
            if stored.index < first {
                let l = parent.body().label;
                self.memo.insert(id, (l, l));
                continue;
            }
            stack.extend(parent.body().parents.iter().map(|p| p.id));
            pending.insert(stored.index, parent);
        }
        for (at, e) in pending {
            let body = e.body();
            let mut parents = Vec::with_capacity(body.parents.len());
            for p in &body.parents {
                let (signed, effective) = *self.memo.get(&p.id).ok_or_else(|| {
                    Error::from(
                        IntegrityError::new(
                            IntegrityCheck::Lineage,
                            format!(
                                "parent {} of the entry at index {at} is not earlier in the log",
                                p.id
                            ),
                        )
                        .at(at),
                    )
                })?;
                parents.push(ParentLabels {
                    signed,
                    effective,
                    weight: p.weight,
                });
            }
            let class = self.distrust.class_at(self.registry, &body.writer, at);
            let label = effective_label(
                body.label,
                self.distrust.targets(&e.id(), &body.writer),
                class,
                &parents,
                LabelRule::new(body.tau, body.fallback),
                self.store_rule,
            );
            self.memo.insert(e.id(), (body.label, label));
        }
        self.memo
            .get(&entry.id())
            .map(|(_, e)| *e)
            .ok_or_else(|| Error::internal("effective label was not computed"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::label::Fallback;

    fn p(signed: TrustLabel, effective: TrustLabel, bp: u16) -> ParentLabels {
        ParentLabels {
            signed,
            effective,
            weight: Weight::from_bp(bp).unwrap(),
        }
    }

    #[test]
    fn the_rule() {
        let rule = LabelRule::new(Weight::from_bp(5000).unwrap(), Fallback::Strict);
        use TrustLabel::*;
        // Nothing raised: the signed label stands.
        let plain = [p(Trusted, Trusted, 10000)];
        assert_eq!(
            effective_label(
                DerivedTrusted,
                false,
                TrustClass::Trusted,
                &plain,
                rule,
                rule
            ),
            DerivedTrusted
        );
        // A directly distrusted entry is EXTERNAL.
        assert_eq!(
            effective_label(Trusted, true, TrustClass::Trusted, &[], rule, rule),
            External
        );
        // A raised strong parent raises the child.
        let raised = [p(Trusted, External, 10000)];
        assert_eq!(
            effective_label(
                DerivedTrusted,
                false,
                TrustClass::Trusted,
                &raised,
                rule,
                rule
            ),
            DerivedUntrusted
        );
        // Never below the signed label.
        assert_eq!(
            effective_label(External, false, TrustClass::Trusted, &raised, rule, rule),
            External
        );
    }
}
