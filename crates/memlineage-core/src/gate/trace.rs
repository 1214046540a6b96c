//! Tracing one parameter to the entries that justify it.
//!
//! Order: explicit citations (under `citations = "verify"` only the cited entries that carry
//! the value count); else every entry whose content carries the value; else every entry whose
//! attribution weight is strictly above τ; else nothing justifies it.

use super::param_type::{ParamType, ParamValue};
use super::{ContextEntry, Via};
use crate::hash::EntryId;
use crate::label::Weight;

/// The entries a trace may use: the context, plus (when re-checking a repair) the pool entries
/// that supplied new values.
#[derive(Clone, Copy)]
pub(crate) struct Entries<'a> {
    pub(crate) main: &'a [ContextEntry],
    pub(crate) extra: &'a [&'a ContextEntry],
}

impl<'a> Entries<'a> {
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a ContextEntry> + use<'a> {
        self.main.iter().chain(self.extra.iter().copied())
    }

    pub(crate) fn find(&self, id: &EntryId) -> Option<&'a ContextEntry> {
        self.iter().find(|e| e.id == *id)
    }
}

/// The result of a trace.
pub(crate) struct Traced<'a> {
    pub(crate) via: Via,
    /// The justifying entries, without duplicates, in citation or context order.
    pub(crate) justifying: Vec<&'a ContextEntry>,
    /// Cited entries ignored because they do not carry the value (verify mode).
    pub(crate) ignored_citations: Vec<EntryId>,
}

impl<'a> Traced<'a> {
    /// The least trusted justifying entry (the first of them in order, on a tie).
    pub(crate) fn worst(&self) -> Option<&'a ContextEntry> {
        self.justifying
            .iter()
            .copied()
            .reduce(|a, b| if b.label > a.label { b } else { a })
    }
}

/// What one trace needs.
pub(crate) struct TraceArgs<'x, 'a> {
    pub(crate) kind: &'x ParamType,
    pub(crate) value: &'x ParamValue,
    pub(crate) citations: Option<&'x [EntryId]>,
    pub(crate) verify_citations: bool,
    pub(crate) attribution: Option<&'x [(EntryId, Weight)]>,
    pub(crate) tau: Weight,
    pub(crate) entries: Entries<'a>,
}

fn push_unique<'a>(v: &mut Vec<&'a ContextEntry>, e: &'a ContextEntry) {
    if !v.iter().any(|x| x.id == e.id) {
        v.push(e);
    }
}

/// Traces one parameter value; `scratch` is reused for folding free text.
pub(crate) fn trace<'a>(a: &TraceArgs<'_, 'a>, scratch: &mut String) -> Traced<'a> {
    let carries = |e: &ContextEntry, scratch: &mut String| {
        e.content
            .as_deref()
            .is_some_and(|c| a.kind.any_occurs(a.value, c, scratch))
    };
    let mut ignored = Vec::new();
    let mut justifying = Vec::new();
    if let Some(cited) = a.citations {
        for id in cited {
            let Some(e) = a.entries.find(id) else {
                continue;
            };
            if !a.verify_citations || carries(e, scratch) {
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
            };
        }
    }
    for e in a.entries.iter() {
        if carries(e, scratch) {
            push_unique(&mut justifying, e);
        }
    }
    if !justifying.is_empty() {
        return Traced {
            via: Via::ValueMatch,
            justifying,
            ignored_citations: ignored,
        };
    }
    for (id, w) in a.attribution.unwrap_or(&[]) {
        if *w > a.tau
            && let Some(e) = a.entries.find(id)
        {
            push_unique(&mut justifying, e);
        }
    }
    let via = if justifying.is_empty() {
        Via::None
    } else {
        Via::Attribution
    };
    Traced {
        via,
        justifying,
        ignored_citations: ignored,
    }
}
