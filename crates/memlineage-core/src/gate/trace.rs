//! Tracing one parameter to the entries that justify it.
//!
//! Order: explicit citations (under `citations = "verify"` only the cited entries that carry
//! the value count; under `carriers = "all"` the entries that carry the value are weighed too,
//! so a citation never narrows `all`); else every entry whose reading carries the value; else
//! the attribution weights (the call treated as a derived entry: strong edges justify, and under
//! the strict fallback weak untrusted ones taint — a zero weight on an untrusted entry
//! included); else nothing justifies it. Entries that carry the value only *by look*
//! ([`Carry::Look`]) are found on demand ([`look_carriers`]): they can only make it fail.

use super::param_type::{Carry, ParamType, ParamValue};
use super::prepared::AmountKeys;
use super::{ContextEntry, PreparedContext, Via};
use crate::hash::EntryId;
use crate::label::Weight;

/// The entries a trace may use: the context, plus (when re-checking a repair) the pool entries
/// that supplied new values.
#[derive(Clone, Copy)]
pub(crate) struct Entries<'s, 'a> {
    pub(crate) main: &'a [ContextEntry],
    pub(crate) extra: &'s [&'a ContextEntry],
}

impl<'s, 'a> Entries<'s, 'a> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a ContextEntry> + use<'s, 'a> {
        self.main.iter().chain(self.extra.iter().copied())
    }

    pub(crate) fn find(&self, id: &EntryId) -> Option<&'a ContextEntry> {
        self.iter().find(|e| e.id == *id)
    }

    /// Every entry with its position in `main` (`None` for the extra entries).
    fn positioned(&self) -> impl Iterator<Item = (Option<usize>, &'a ContextEntry)> + use<'s, 'a> {
        self.main
            .iter()
            .enumerate()
            .map(|(i, e)| (Some(i), e))
            .chain(self.extra.iter().map(|e| (None, *e)))
    }

    fn find_positioned(&self, id: &EntryId) -> Option<(Option<usize>, &'a ContextEntry)> {
        self.positioned().find(|(_, e)| e.id == *id)
    }
}

/// The result of a trace.
pub(crate) struct Traced<'a> {
    pub(crate) via: Via,
    /// The justifying entries, without duplicates, in citation or context order.
    pub(crate) justifying: Vec<&'a ContextEntry>,
    /// Cited entries ignored because they do not carry the value (verify mode).
    pub(crate) ignored_citations: Vec<EntryId>,
    /// For [`Via::Attribution`]: every attributed entry with a non-zero weight, in the order
    /// given (weak ones matter under the strict fallback).
    pub(crate) weights: Vec<(&'a ContextEntry, Weight)>,
}

/// What one trace needs.
pub(crate) struct TraceArgs<'x, 's, 'a> {
    pub(crate) kind: &'x ParamType,
    pub(crate) value: &'x ParamValue,
    pub(crate) citations: Option<&'x [EntryId]>,
    pub(crate) verify_citations: bool,
    /// `carriers = "all"`: every entry that carries the value is weighed, cited or not.
    pub(crate) all_carriers: bool,
    pub(crate) attribution: Option<&'x [(EntryId, Weight)]>,
    pub(crate) tau: Weight,
    pub(crate) entries: Entries<'s, 'a>,
    /// The values of `entries.main`, extracted once (checked to match it by the caller).
    pub(crate) prepared: Option<&'x PreparedContext>,
}

fn push_unique<'a>(v: &mut Vec<&'a ContextEntry>, e: &'a ContextEntry) {
    if !v.iter().any(|x| x.id == e.id) {
        v.push(e);
    }
}

/// Traces one parameter value; `scratch` is reused for folding free text, and `justifying` (its
/// contents dropped) holds the justifying entries, so that one allocation serves every parameter
/// of a decision.
pub(crate) fn trace<'a>(
    a: &TraceArgs<'_, '_, 'a>,
    scratch: &mut String,
    mut justifying: Vec<&'a ContextEntry>,
) -> Traced<'a> {
    let keys = match a.prepared {
        Some(_) => AmountKeys::of(a.value),
        None => AmountKeys::default(),
    };
    let carries = |pos: Option<usize>, e: &ContextEntry, scratch: &mut String| {
        let Some(c) = e.content.as_deref() else {
            return false;
        };
        if let (Some(i), Some(p)) = (pos, a.prepared)
            && let Some(hit) = p.carries(i, a.kind, a.value, &keys, c, scratch)
        {
            return hit;
        }
        a.kind.any_occurs(a.value, c, scratch)
    };
    justifying.clear();
    let mut ignored = Vec::new();
    if let Some(cited) = a.citations {
        for id in cited {
            let Some((pos, e)) = a.entries.find_positioned(id) else {
                continue;
            };
            if !a.verify_citations || carries(pos, e, scratch) {
                push_unique(&mut justifying, e);
            } else if !ignored.contains(&e.id) {
                ignored.push(e.id);
            }
        }
        if !justifying.is_empty() {
            if a.all_carriers {
                for (pos, e) in a.entries.positioned() {
                    if !justifying.iter().any(|x| x.id == e.id) && carries(pos, e, scratch) {
                        justifying.push(e);
                    }
                }
            }
            return Traced {
                via: Via::Citation,
                justifying,
                ignored_citations: ignored,
                weights: Vec::new(),
            };
        }
    }
    for (pos, e) in a.entries.positioned() {
        if carries(pos, e, scratch) {
            push_unique(&mut justifying, e);
        }
    }
    if !justifying.is_empty() {
        return Traced {
            via: Via::ValueMatch,
            justifying,
            ignored_citations: ignored,
            weights: Vec::new(),
        };
    }
    let mut weights: Vec<(&'a ContextEntry, Weight)> = Vec::new();
    for (id, w) in a.attribution.unwrap_or(&[]) {
        // A zero weight on an untrusted entry is kept: the label rule's strict fallback counts
        // it as the smallest weight (a judge's 0 cannot erase taint).
        if let Some(e) = a.entries.find(id)
            && (*w > Weight::ZERO || e.label.is_untrusted())
        {
            match weights.iter_mut().find(|(x, _)| x.id == e.id) {
                Some((_, old)) => *old = (*old).max(*w),
                None => weights.push((e, *w)),
            }
            if *w > a.tau {
                push_unique(&mut justifying, e);
            }
        }
    }
    let via = if weights.is_empty() {
        Via::None
    } else {
        Via::Attribution
    };
    Traced {
        via,
        justifying,
        ignored_citations: ignored,
        weights,
    }
}

/// The entries of `a` that carry the value by look only (not exactly, so not in `exact`), in
/// context order. An erased entry whose label is untrusted counts as one for every value: what
/// it carried is unknown, so it counts as carrying everything (`docs/gate.md`, "Context
/// integrity").
pub(crate) fn look_carriers<'a>(
    a: &TraceArgs<'_, '_, 'a>,
    exact: &[&'a ContextEntry],
) -> Vec<&'a ContextEntry> {
    let mut out = Vec::new();
    for (pos, e) in a.entries.positioned() {
        if exact.iter().any(|x| x.id == e.id) || out.iter().any(|x: &&ContextEntry| x.id == e.id) {
            continue;
        }
        let looks = match e.content.as_deref() {
            None => e.label.is_untrusted(),
            Some(c) => match (pos, a.prepared) {
                (Some(i), Some(p)) => p
                    .looks(i, a.kind, a.value, c)
                    .unwrap_or_else(|| a.kind.any_looks(a.value, c)),
                _ => a.kind.any_looks(a.value, c),
            },
        };
        if looks {
            out.push(e);
        }
    }
    out
}

/// How `e` carries the value of `a` (for value provenance, which walks entries outside the
/// context too): an erased entry carries it by look when untrusted, not at all when trusted.
pub(crate) fn carry_of(kind: &ParamType, value: &ParamValue, e: &ContextEntry) -> Carry {
    match e.content.as_deref() {
        None if e.label.is_untrusted() => Carry::Look,
        None => Carry::No,
        Some(c) => kind.carry(value, c),
    }
}
