//! A context prepared once for many decisions.
//!
//! An agent checks several tool calls against the same prompt, and most of a decision's time is
//! spent finding values in the context's text. [`PreparedContext::new`] extracts the typed
//! values of every context entry once (the cost of reading the context, like decoding it);
//! [`decide`](super::decide) given the prepared context then only looks values up. The decision
//! is the same with or without it (a property test checks it).

use super::ContextEntry;
use super::param_type::{ParamType, ParamValue, ValueIndex};
use crate::hash::EntryId;

/// The typed values of every entry of one context, in context order.
#[derive(Clone, Debug, Default)]
pub struct PreparedContext {
    /// Each entry's id and content length (`None` when erased): a context whose entry was
    /// erased or changed since is not this one.
    ids: Vec<(EntryId, Option<usize>)>,
    index: Vec<Option<ValueIndex>>,
}

impl PreparedContext {
    /// Extracts the values of every entry of `context` (an erased entry has none).
    pub fn new(context: &[ContextEntry]) -> PreparedContext {
        PreparedContext {
            ids: context.iter().map(fingerprint).collect(),
            index: context
                .iter()
                .map(|e| e.content.as_deref().map(ValueIndex::new))
                .collect(),
        }
    }

    /// Whether this was prepared from exactly `context` (same entries, same order, same
    /// content presence and length).
    pub(crate) fn matches(&self, context: &[ContextEntry]) -> bool {
        self.ids.len() == context.len()
            && self
                .ids
                .iter()
                .zip(context)
                .all(|(a, e)| *a == fingerprint(e))
    }

    /// Whether the entry at position `i`, whose content is `content`, carries some reading of
    /// `pv` exactly; `None` when `i` is not indexed.
    pub(crate) fn carries(
        &self,
        i: usize,
        kind: &ParamType,
        pv: &ParamValue,
        keys: &AmountKeys,
        content: &str,
        scratch: &mut String,
    ) -> Option<bool> {
        let ix = self.index.get(i)?.as_ref()?;
        Some(match ix.any_occurs(kind, pv, keys.as_slice()) {
            Some(hit) => hit,
            None => {
                let r = ix.reading(content);
                pv.iter().any(|v| kind.occurs_in_reading(v, r, scratch))
            }
        })
    }

    /// Whether the entry at position `i`, whose content is `content`, carries some reading of
    /// `pv` by look (its skeleton is computed once and kept); `None` when `i` is not indexed.
    pub(crate) fn looks(
        &self,
        i: usize,
        kind: &ParamType,
        pv: &ParamValue,
        content: &str,
    ) -> Option<bool> {
        let ix = self.index.get(i)?.as_ref()?;
        Some(ix.any_looks(kind, pv, content))
    }
}

/// The canonical forms of the amounts of a value (at most two readings), computed once per
/// value rather than once per entry.
#[derive(Clone, Copy, Default)]
pub(crate) struct AmountKeys {
    keys: [(bool, u128, u32); 2],
    n: usize,
}

impl AmountKeys {
    pub(crate) fn of(pv: &ParamValue) -> AmountKeys {
        let mut k = AmountKeys::default();
        for v in pv.iter() {
            if let super::NormValue::Amount(a) = v
                && k.n < 2
            {
                k.keys[k.n] = a.canonical();
                k.n += 1;
            }
        }
        k
    }

    pub(crate) fn as_slice(&self) -> &[(bool, u128, u32)] {
        &self.keys[..self.n]
    }
}

fn fingerprint(e: &ContextEntry) -> (EntryId, Option<usize>) {
    (e.id, e.content.as_ref().map(String::len))
}
