//! What the signed control records say — the registry, the genesis record's label rule, the
//! tombstones and the distrust records — as pass 1 collects them from every leaf, and the same
//! facts read ahead from the store's index of records by kind.
//!
//! The derived-state audit needs these facts for every entry (a tombstone or a distrust record
//! late in the log changes what an early entry's derived state must be). Rather than read and
//! decode the whole log a second time, `verify` builds them first from the store's kind index
//! ([`LogFacts::from_kind_index`], a few records), audits the derived state with them in the
//! same pass as everything else, and at the end compares them with what pass 1 collected from
//! *every* leaf ([`LogFacts::same_as`]): the sequence of control records applied, each named
//! by index, id and content hash. Equal sequences give equal facts (the same records applied in
//! the same order from the same start); when they differ — the kind index hides or invents a
//! record, a control record is damaged — the derived state is audited again, in a second pass,
//! with pass 1's facts. Nothing read from the index is trusted.

use crate::error::Error;
use crate::memory::distrusted::DistrustLog;
use crate::memory::registry::verify_registry_signature;
use crate::store::{BackendRead, ControlRecord};
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, RegistryChange, Tombstone};
use memlineage_core::rule::LabelRule;
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;

/// The facts of the signed control records, up to some point of the log.
#[derive(Debug, Default)]
pub(super) struct LogFacts {
    /// The store's label rule, as signed into the genesis record.
    pub(super) store_rule: Option<LabelRule>,
    /// The registry as of the log so far.
    pub(super) registry: Registry,
    /// The distrust records.
    pub(super) distrust: DistrustLog,
    /// Forgotten entry → (the latest tombstone naming it, whether any tombstone erased it).
    pub(super) tombstones: HashMap<EntryId, (EntryId, bool)>,
    /// Every control record applied, in order: index, id, SHA-256 of the content applied.
    applied: Vec<(u64, EntryId, Hash256)>,
}

impl LogFacts {
    /// Notes the genesis record's rule when `entry`, at `index`, is it.
    pub(super) fn note_genesis(&mut self, index: u64, entry: &SignedEntry) {
        let body = entry.body();
        if index == 0 && body.kind == EntryKind::Registry {
            self.store_rule = Some(LabelRule::new(body.tau, body.fallback));
        }
    }

    /// Applies a registry record: its signature (by the key it registers for genesis, else
    /// by the operator's key at `index`) and its change.
    pub(super) fn apply_registry(
        &mut self,
        index: u64,
        entry: &SignedEntry,
        content: Option<&[u8]>,
    ) -> Result<(), Error> {
        let content = content.ok_or_else(|| {
            crate::error::Error::integrity(
                crate::error::IntegrityCheck::ControlRecord,
                "registry record without content",
            )
        })?;
        let change = RegistryChange::from_content(content)?;
        verify_registry_signature(&self.registry, index, entry, &change)?;
        self.registry.apply(index, entry, &change)?;
        self.applied.push((index, entry.id(), Hash256::of(content)));
        Ok(())
    }

    /// Applies a tombstone or distrust record whose signer was valid at `index` and whose
    /// content matches its signed hash; other kinds carry no fact. The error is the problem
    /// to report, in words.
    pub(super) fn apply_control(
        &mut self,
        index: u64,
        entry: &SignedEntry,
        content: &[u8],
    ) -> Result<(), String> {
        let id = entry.id();
        match entry.body().kind {
            EntryKind::Tombstone => {
                let t = Tombstone::from_content(content).map_err(|e| format!("tombstone: {e}"))?;
                let slot = self.tombstones.entry(t.target).or_insert((id, false));
                *slot = (id, slot.1 || t.erase);
            }
            EntryKind::Distrust => {
                let d = Distrust::from_content(content).map_err(|e| format!("distrust: {e}"))?;
                self.distrust.apply(index, &d);
            }
            _ => return Ok(()),
        }
        self.applied.push((index, id, Hash256::of(content)));
        Ok(())
    }

    /// True when `other` applied exactly the same control records (so holds the same facts).
    pub(super) fn same_as(&self, other: &LogFacts) -> bool {
        self.store_rule == other.store_rule && self.applied == other.applied
    }

    /// The facts of the control records the store's kind index lists, applied under the
    /// conditions pass 1 applies them (decoded; registry records checked and applied in
    /// order; tombstones and distrust records with a signer valid at their index and content
    /// matching their hash). `None` when the store cannot list them (a listed record without
    /// content is an error there): the derived state is then audited in a second pass.
    pub(super) fn from_kind_index(store: &dyn BackendRead) -> Option<LogFacts> {
        let mut records: Vec<ControlRecord> = store.control_records(EntryKind::Registry, 0).ok()?;
        records.extend(store.control_records(EntryKind::Tombstone, 0).ok()?);
        records.extend(store.control_records(EntryKind::Distrust, 0).ok()?);
        records.sort_by_key(|r| r.index);
        let mut facts = LogFacts::default();
        for rec in &records {
            let Ok(entry) = SignedEntry::from_leaf(&rec.leaf) else {
                continue;
            };
            facts.note_genesis(rec.index, &entry);
            let body = entry.body();
            if body.kind == EntryKind::Registry {
                // A failure is pass 1's problem to report; the fact is simply not applied.
                let _ = facts.apply_registry(rec.index, &entry, Some(&rec.content));
                continue;
            }
            let signer_ok = facts
                .registry
                .signer_at(&body.writer, &body.key_id, rec.index)
                .is_ok();
            if signer_ok && Hash256::of(&rec.content) == body.content_hash {
                let _ = facts.apply_control(rec.index, &entry, &rec.content);
            }
        }
        Some(facts)
    }
}
