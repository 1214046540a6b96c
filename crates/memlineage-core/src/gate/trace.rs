//! Tracing one parameter to the entries that justify it.
//!
//! Order: explicit citations (under `citations = "verify"` only the cited entries that carry
//! the value count); else every entry whose content carries the value; else the attribution
//! weights (the call treated as a derived entry: strong edges justify, and under the strict
//! fallback weak untrusted ones taint); else nothing justifies it.

use super::param_type::{ParamType, ParamValue};
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
    let carries = |pos: Option<usize>, e: &ContextEntry, scratch: &mut String| {
        if let (Some(i), Some(p)) = (pos, a.prepared)
            && let Some(hit) = p.carries(i, a.kind, a.value)
        {
            return hit;
        }
        e.content
            .as_deref()
            .is_some_and(|c| a.kind.any_occurs(a.value, c, scratch))
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
        if *w > Weight::ZERO
            && let Some(e) = a.entries.find(id)
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
