//! The derived-state audit: the store's derived state, rebuilt from the signed log alone and
//! compared entry by entry (DESIGN.md: the log is the source of truth; `docs/store.md`).
//!
//! From the facts of the signed control records ([`LogFacts`]: the tombstones, the distrust
//! records, the registry and the genesis record's label rule) this recomputes, for every entry:
//! whether it is forgotten and by which tombstone, whether its content must be erased, its
//! effective label (`effective::effective_label`, in log order, which is topological), the
//! copies of its scope, writer, kind and label, and the lineage edges its signed parent list
//! implies ([`EdgeAudit`]). Every disagreement with what the store holds is a problem naming
//! the entry.
//!
//! It runs beside pass 1, chunk by chunk, with the facts read ahead from the store's kind index
//! ([`LogFacts::from_kind_index`]); when pass 1's facts turn out to differ, [`audit_again`]
//! runs it once more over the whole log with pass 1's facts.

use super::edges::EdgeAudit;
use super::facts::LogFacts;
use super::labels::Labels;
use super::{CHUNK, Problems};
use crate::error::Error;
use crate::memory::effective::{ParentLabels, effective_label};
use crate::store::{BackendRead, IndexRow, StoredEntry};
use memlineage_core::entry::SignedEntry;
use memlineage_core::rule::LabelRule;
use std::collections::HashMap;

/// The derived-state audit in progress.
pub(super) struct Derived {
    /// The facts it audits against.
    pub(super) facts: LogFacts,
    /// The store's label rule (from the facts, else the settings).
    store_rule: LabelRule,
    /// Problems found, reported after pass 1's.
    pub(super) problems: Problems,
    /// The edges met.
    pub(super) edges: EdgeAudit,
}

impl Derived {
    /// An audit against `facts`; `settings_rule` stands in when they hold no genesis record.
    pub(super) fn new(facts: LogFacts, settings_rule: LabelRule) -> Derived {
        let store_rule = facts.store_rule.unwrap_or(settings_rule);
        Derived {
            facts,
            store_rule,
            problems: Problems::default(),
            edges: EdgeAudit::new(),
        }
    }

    /// Audits one chunk: `rows` as read, `decoded[i]` the decoded leaf of `rows[i]` (`None`
    /// when it does not decode), `copies` the store's index rows of the same range. Labels of
    /// the chunk's entries must already be noted by pass 1; effective labels are noted here.
    pub(super) fn chunk(
        &mut self,
        store: &dyn BackendRead,
        labels: &mut Labels,
        rows: &[StoredEntry],
        decoded: &[Option<&SignedEntry>],
        copies: Vec<IndexRow>,
    ) -> Result<(), Error> {
        let copies: HashMap<u64, IndexRow> = copies.into_iter().map(|r| (r.index, r)).collect();
        for (row, entry) in rows.iter().zip(decoded) {
            // A leaf that does not decode, or hashes to another id than the indexed one, is
            // reported by pass 1; the derived tables are keyed by the indexed id.
            if let Some(entry) = entry.filter(|e| e.id() == row.id) {
                self.entry(store, labels, row, entry, copies.get(&row.index))?;
            }
        }
        self.edges.flush(store)
    }

    fn entry(
        &mut self,
        store: &dyn BackendRead,
        labels: &mut Labels,
        row: &StoredEntry,
        entry: &SignedEntry,
        copy: Option<&IndexRow>,
    ) -> Result<(), Error> {
        let body = entry.body();
        let (index, id) = (row.index, entry.id());
        let facts = &self.facts;
        let problems = &mut self.problems;
        let mut problem = |reason: String| problems.problem(Some(index), Some(id), reason);

        // The copies of signed fields.
        match copy {
            Some(c) => {
                let checks = [
                    ("scope", c.scope.as_str(), body.scope.as_str()),
                    ("writer", c.writer.as_str(), body.writer.as_str()),
                    ("kind", c.kind.as_str(), body.kind.as_str()),
                    ("label", c.label.as_str(), body.label.as_str()),
                ];
                for (what, copy, signed) in checks {
                    if copy != signed {
                        problem(format!(
                            "the store's index lists its {what} as `{copy}`, but its signed {what} is `{signed}`"
                        ));
                    }
                }
            }
            None => problem("the store keeps no index row for this entry".into()),
        }

        // Forgotten, erased, content.
        let tomb = facts.tombstones.get(&id).copied();
        match (row.forgotten_by, tomb) {
            (None, None) => {}
            (Some(t), None) => problem(format!(
                "the forgotten table says tombstone {} forgot it, but no signed tombstone targets it",
                t.short()
            )),
            (None, Some((t, _))) => problem(format!(
                "signed tombstone {} forgot it, but the forgotten table has no row for it (retrieval would return it)",
                t.short()
            )),
            (Some(stored), Some((t, _))) if stored != t => problem(format!(
                "the forgotten table names tombstone {}, but the latest signed tombstone naming it is {}",
                stored.short(),
                t.short()
            )),
            (Some(_), Some(_)) => {}
        }
        let must_erase = tomb.is_some_and(|(_, erase)| erase);
        if let (Some(flag), Some((_, erase))) = (copy.and_then(|c| c.erased), tomb)
            && flag != erase
        {
            problem(format!(
                "the forgotten table's erased flag is {flag}, but the signed tombstones say {erase}"
            ));
        }
        if !body.kind.is_control() {
            match (&row.content, must_erase) {
                (None, false) => {
                    problem("content is missing but no signed tombstone erased it".into())
                }
                (Some(_), true) => problem(format!(
                    "signed tombstone {} erased its content, but the bytes are still stored",
                    tomb.map_or_else(String::new, |(t, _)| t.short())
                )),
                _ => {}
            }
        }

        // The effective label, from the distrust records; the edges from the parents.
        let mut parents = Vec::with_capacity(body.parents.len());
        let mut known = true;
        for p in &body.parents {
            match labels.find(store, &p.id, index)? {
                Some(found) => match found.effective {
                    Some(effective) => {
                        parents.push(ParentLabels {
                            signed: found.signed,
                            effective,
                            weight: p.weight,
                        });
                        self.edges.expect(p.id, id, p.weight);
                    }
                    None => {
                        known = false;
                        self.edges.unresolved();
                    }
                },
                None => {
                    known = false; // reported by pass 1
                    self.edges.unresolved();
                }
            }
        }
        let expected = if known {
            effective_label(
                body.label,
                facts.distrust.targets(&id, &body.writer),
                facts
                    .distrust
                    .class_at(&facts.registry, &body.writer, index),
                &parents,
                LabelRule::new(body.tau, body.fallback),
                self.store_rule,
            )
        } else {
            body.label
        };
        let stored = row
            .effective_label
            .map_or(body.label, |l| l.max(body.label));
        if stored != expected {
            problem(format!(
                "effective label is {stored} in the index but the log implies {expected}{}",
                if stored < expected {
                    " (a distrust effect was removed: retrieval drops the entry)"
                } else {
                    ""
                }
            ));
        }
        labels.note_effective(index, expected);
        Ok(())
    }
}

/// The derived-state audit over the whole log, read again from the start, against `facts`
/// (pass 1's, when the facts read ahead from the kind index differed from them). `labels`
/// holds pass 1's signed labels; the effective labels are recomputed.
pub(super) fn audit_again(
    store: &dyn BackendRead,
    labels: &mut Labels,
    derived: &mut Derived,
) -> Result<(), Error> {
    labels.clear_effective();
    labels.reset_window();
    let total = store.size()?;
    let mut start = 0;
    while start < total {
        let rows = store.entries(start, CHUNK)?;
        let Some(last) = rows.last().map(|r| r.index) else {
            break;
        };
        let copies = store.index_rows(start, CHUNK)?;
        let entries: Vec<Option<SignedEntry>> = rows
            .iter()
            .map(|r| SignedEntry::from_leaf(&r.leaf).ok())
            .collect();
        for (row, entry) in rows.iter().zip(&entries) {
            if let Some(e) = entry {
                labels.note_signed(row.index, e.id(), row.id, e.body().label);
            }
        }
        let decoded: Vec<Option<&SignedEntry>> = entries.iter().map(Option::as_ref).collect();
        derived.chunk(store, labels, &rows, &decoded, copies)?;
        start = last + 1;
    }
    Ok(())
}
