//! Re-validating labels inside the append transaction (paper §M4: labels are computed at write
//! time from the parents' effective labels).
//!
//! A label is computed before the transaction, from the effective labels the writer read. If a
//! distrust record commits in between — another writer, another process — the parents'
//! effective labels (or the writer's own class) may have risen, and an entry signed with the
//! older, lower label would keep it for ever. Effective labels change only through distrust
//! records, so the guard replays the distrust records committed since the labels were computed
//! (one indexed read when there are none) and, only when there are some, recomputes every label
//! of the batch against the state as of the transaction. A label that is now too low fails the
//! append with [`Error::StaleLabel`]; the write path re-labels, re-signs and retries.

use super::distrusted::DistrustLog;
use super::stage::Effect;
use crate::error::Error;
use crate::store::{BackendRead, NewRecord};
use memlineage_core::EntryId;
use memlineage_core::entry::EntryKind;
use memlineage_core::label::TrustLabel;
use memlineage_core::principal::Registry;
use memlineage_core::records::Distrust;
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;
use std::borrow::Cow;
use std::collections::HashMap;

/// The label check of one append, run by the guard record by record, in order.
pub(super) struct LabelGuard<'c> {
    distrust: Cow<'c, DistrustLog>,
    recheck: bool,
    store_rule: LabelRule,
    /// Effective labels raised by distrust records earlier in this batch.
    raised: HashMap<EntryId, TrustLabel>,
    /// Signed labels of the records earlier in this batch.
    batch: HashMap<EntryId, TrustLabel>,
}

impl<'c> LabelGuard<'c> {
    /// Catches `cached` up with the distrust records committed as of the transaction.
    /// `labels_seen` is the log size up to which distrust records had been replayed when the
    /// labels were computed (`None`: unknown, recheck every label).
    pub(super) fn new(
        reader: &dyn BackendRead,
        cached: &'c DistrustLog,
        labels_seen: Option<u64>,
        records: &[NewRecord],
        store_rule: LabelRule,
    ) -> Result<LabelGuard<'c>, Error> {
        let mut distrust = Cow::Borrowed(cached);
        let fresh = reader.control_records(EntryKind::Distrust, cached.next())?;
        if !fresh.is_empty() {
            distrust.to_mut().apply_records(&fresh)?;
        }
        let batch_distrusts = records
            .iter()
            .any(|r| r.entry.body().kind == EntryKind::Distrust);
        let recheck = batch_distrusts || labels_seen.is_none_or(|seen| distrust.any_since(seen));
        Ok(LabelGuard {
            distrust,
            recheck,
            store_rule,
            raised: HashMap::new(),
            batch: HashMap::new(),
        })
    }

    /// Checks that `rec`, to be logged at `index`, carries at least the label its writer's
    /// class and its parents' effective labels require as of the transaction.
    pub(super) fn check(
        &self,
        reader: &dyn BackendRead,
        registry: &Registry,
        index: u64,
        rec: &NewRecord,
    ) -> Result<(), Error> {
        let body = rec.entry.body();
        if !self.recheck || body.kind == EntryKind::Registry {
            return Ok(());
        }
        let mut edges = Vec::with_capacity(body.parents.len());
        for p in &body.parents {
            let label = match self.batch.get(&p.id) {
                Some(l) => *l,
                None => reader
                    .labels_by_id(&p.id)?
                    .ok_or(Error::UnknownParent(p.id))?
                    .effective_label(),
            };
            let label = self.raised.get(&p.id).map_or(label, |r| label.max(*r));
            edges.push(ParentEdge {
                label,
                weight: p.weight,
            });
        }
        let class = self.distrust.class_at(registry, &body.writer, index);
        let required = required_label(
            class,
            &edges,
            LabelRule::new(body.tau, body.fallback),
            self.store_rule,
        );
        if body.label < required {
            return Err(Error::StaleLabel {
                id: rec.entry.id(),
                signed: body.label,
                required,
            });
        }
        Ok(())
    }

    /// Notes `rec`, logged at `index`, and the effects it causes, for the records after it.
    pub(super) fn note(
        &mut self,
        index: u64,
        rec: &NewRecord,
        effects: &[Effect],
    ) -> Result<(), Error> {
        let body = rec.entry.body();
        self.batch.insert(rec.entry.id(), body.label);
        for e in effects {
            if let Effect::RaiseLabel { id, label } = e {
                let l = self.raised.entry(*id).or_insert(*label);
                *l = (*l).max(*label);
            }
        }
        if body.kind == EntryKind::Distrust {
            self.distrust
                .to_mut()
                .apply(index, &Distrust::from_content(&rec.content)?);
        }
        Ok(())
    }

    /// The distrust replay, when this append advanced it.
    pub(super) fn into_distrust(self) -> Option<DistrustLog> {
        match self.distrust {
            Cow::Owned(d) => Some(d),
            Cow::Borrowed(_) => None,
        }
    }
}
