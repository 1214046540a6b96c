//! Pass 2 of the audit: the store's derived state, rebuilt from the signed log alone and
//! compared entry by entry (DESIGN.md: the log is the source of truth; `docs/store.md`).
//!
//! From pass 1's facts — the tombstones, the distrust records, the registry and the genesis
//! record's label rule, all decoded from signed leaves — this pass recomputes, for every entry:
//! whether it is forgotten and by which tombstone, whether its content must be erased, its
//! effective label (`effective::effective_label`, in log order, which is topological), the
//! copies of its scope, writer, kind and label, and the lineage edges its signed parent list
//! implies. Every disagreement with what the store holds is a problem naming the entry.

use super::{AuditReport, CHUNK, LogFacts};
use crate::error::Error;
use crate::memory::effective::{ParentLabels, effective_label};
use crate::store::{IndexRow, StoreRead};
use memlineage_core::EntryId;
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::rule::LabelRule;
use std::collections::HashMap;

/// Runs pass 2 over `store`.
pub(super) fn audit(
    store: &dyn StoreRead,
    facts: &LogFacts,
    store_rule: LabelRule,
    report: &mut AuditReport,
) -> Result<(), Error> {
    let total = store.size()?;
    let mut effective: HashMap<EntryId, TrustLabel> = HashMap::with_capacity(facts.signed.len());
    let mut children: HashMap<EntryId, Vec<(EntryId, Weight)>> = HashMap::new();
    let mut order: Vec<(u64, EntryId)> = Vec::with_capacity(facts.signed.len());
    // Indexed ids of entries whose leaf does not decode or hashes to another id: their true
    // parent lists are unknown, so their edges are not compared (pass 1 reports the entry).
    let mut broken: std::collections::HashSet<EntryId> = std::collections::HashSet::new();
    let mut start = 0;
    while start < total {
        let rows = store.entries(start, CHUNK)?;
        let Some(last) = rows.last().map(|r| r.index) else {
            break;
        };
        let copies: HashMap<u64, IndexRow> = store
            .index_rows(start, CHUNK)?
            .into_iter()
            .map(|r| (r.index, r))
            .collect();
        for row in rows {
            let Ok(entry) = SignedEntry::from_leaf(&row.leaf) else {
                broken.insert(row.id); // reported by pass 1
                continue;
            };
            let id = entry.id();
            if id != row.id {
                // Reported by pass 1; the derived tables are keyed by the indexed id.
                broken.insert(row.id);
                continue;
            }
            let body = entry.body();
            let index = row.index;
            let mut problem = |reason: String| report.problem(Some(index), Some(id), reason);

            // The copies of signed fields.
            match copies.get(&index) {
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
            if let (Some(flag), Some((_, erase))) =
                (copies.get(&index).and_then(|c| c.erased), tomb)
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

            // The effective label, from the distrust records.
            let mut parents = Vec::with_capacity(body.parents.len());
            let mut known = true;
            for p in &body.parents {
                match (facts.signed.get(&p.id), effective.get(&p.id)) {
                    (Some(s), Some(e)) => parents.push(ParentLabels {
                        signed: *s,
                        effective: *e,
                        weight: p.weight,
                    }),
                    _ => known = false, // reported by pass 1
                }
                children.entry(p.id).or_default().push((id, p.weight));
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
                    store_rule,
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
            effective.insert(id, expected);
            order.push((index, id));
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
            report.problem(Some(index), Some(id), edge_difference(&stored, &expected));
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
