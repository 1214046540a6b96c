//! Pass 1's checks of one decoded entry: its signer against the registry replayed from the log,
//! its label rule against the store's, its signed label against its parents' signed labels,
//! and the facts of the control records.

use super::Pass1;
use crate::error::Error;
use crate::memory::Memory;

use ed25519_dalek::VerifyingKey;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::rule::{LabelRule, required_label};
use memlineage_core::trust::ParentEdge;

impl Memory {
    /// Signer, registry, label rule and label of one decoded entry; control-record facts.
    /// Returns the key to verify its signature with, when it is not a registry record.
    pub(super) fn check_entry(
        &self,
        p: &mut Pass1,
        index: u64,
        entry: &SignedEntry,
        content: Option<&[u8]>,
        content_ok: bool,
    ) -> Result<Option<VerifyingKey>, Error> {
        let body = entry.body();
        let id = entry.id();
        p.facts.note_genesis(index, entry);
        if body.kind == EntryKind::Registry {
            let applied = p.facts.apply_registry(index, entry, content);
            p.report.signatures += 1;
            if let Err(e) = applied {
                p.out
                    .problem(Some(index), Some(id), format!("registry: {e}"));
            }
            return Ok(None);
        }
        let key = match p
            .facts
            .registry
            .signer_at(&body.writer, &body.key_id, index)
        {
            Ok((_, key)) => *key,
            Err(e) => {
                p.out.problem(Some(index), Some(id), format!("signer: {e}"));
                return Ok(None);
            }
        };
        // Without a genesis record (reported once, by `check_settings`) the settings table's
        // rule is the best there is.
        let store = p.facts.store_rule.unwrap_or_else(|| self.store_rule());
        if let Some(laxer) = LabelRule::new(body.tau, body.fallback).laxer_than(store) {
            p.out.problem(
                Some(index),
                Some(id),
                format!("signed with a {laxer}: a per-entry override may only be stricter"),
            );
        }
        self.check_label(p, index, entry, store)?;
        if content_ok && let Some(c) = content {
            if let Err(e) = p.facts.apply_control(index, entry, c) {
                p.out.problem(Some(index), Some(id), e);
            }
        } else if body.kind.is_control() && !content_ok {
            p.out.problem(
                Some(index),
                Some(id),
                format!(
                    "the content of this {} record is missing (control records are never erased)",
                    body.kind
                ),
            );
        }
        Ok(Some(key))
    }

    /// The signed label against what the writer's class at `index` and the parents' signed
    /// labels require, with the entry's rule bounded by the store's.
    fn check_label(
        &self,
        p: &mut Pass1,
        index: u64,
        entry: &SignedEntry,
        store: LabelRule,
    ) -> Result<(), Error> {
        let body = entry.body();
        let mut edges = Vec::with_capacity(body.parents.len());
        for parent in &body.parents {
            match p.labels.find(self.reads(), &parent.id, index)? {
                Some(found) => edges.push(ParentEdge {
                    label: found.signed,
                    weight: parent.weight,
                }),
                None => {
                    p.out.problem(
                        Some(index),
                        Some(entry.id()),
                        format!("parent {} is not earlier in the log", parent.id),
                    );
                    return Ok(());
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
            p.out.problem(
                Some(index),
                Some(entry.id()),
                format!(
                    "signed label {} is lower than its parents imply ({required}){why}: laundering attempt",
                    body.label
                ),
            );
        }
        Ok(())
    }
}
