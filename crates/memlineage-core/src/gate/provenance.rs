//! Value provenance: where a parameter's value entered the lineage DAG.
//!
//! An entry's label says how trusted the entry is as a whole, from its attribution edges
//! (paper §M4). A value it carries may still have been copied from a parent whose edge the
//! attribution weighed low: the paper admits an attacker who keeps every edge under τ, and even
//! our strict fallback lets a strong *trusted* parent cover weak untrusted ones (the
//! "trusted cover" attack of the evaluation). Content does not lie the way weights can: if a
//! derived entry carries the attacker's IBAN, some ancestor carried it first. So the gate
//! follows the value itself through the carrier's ancestors, whatever the edge weights:
//!
//! ```text
//! vl(e) = label(e)                                        if no parent of e carries the value
//! vl(e) = max(label(e), derived(min over carrying parents p of vl(p)))   otherwise
//! ```
//!
//! The minimum says that one trusted origin suffices: if the user typed the value, a phishing
//! e-mail that echoes it does not make it the attacker's choice. Only a parent that carries the
//! value *exactly* (in its reading) can be that trusted origin; a parent that carries it only
//! *by look* ([`Carry::Look`]: a look-alike, separators inserted) joins the minimum only when its
//! own value label is untrusted — it may be where the value was read, it cannot vouch for it.
//! Fail closed: a parent that is listed but could not be examined (absent from the
//! [`Ancestry`], or on a cycle, which a valid log cannot contain) counts as an `EXTERNAL`
//! carrier; an erased parent counts as a carrier (by look) only when it is untrusted (its
//! content cannot clear it, and cannot help).

use super::earliest::Earlier;
use super::param_type::Carry;
use super::{Ancestry, ContextEntry};
use crate::hash::EntryId;
use crate::label::TrustLabel;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

/// The value label of one carrier.
#[derive(Clone)]
pub(crate) struct Origin<'a> {
    /// The carrier's value label: at least its own label.
    pub(crate) label: TrustLabel,
    /// The lineage path of the taint, the carrier first: through the ancestors that carried the
    /// value to the one where it first appeared, then that entry's own path to its untrusted
    /// root. The carrier's own taint path (borrowed) when no ancestor raised the label.
    pub(crate) path: Cow<'a, [EntryId]>,
    /// The ancestor where the value first appeared, when it raised the label above the
    /// carrier's own.
    pub(crate) raised_by: Option<EntryId>,
    /// The earliest carrier of the value in the log, when it raised the label further
    /// ([`super::earliest`]).
    pub(crate) earlier: Option<Earlier<'a>>,
}

/// A carrying parent: examined (by id; `true` when it carries the value exactly, `false` when
/// only by look), or one that could not be examined.
#[derive(Clone, Copy)]
enum Hop {
    Known(EntryId, bool),
    Unknown(EntryId),
}

/// The memoised result for one entry: its value label and the parent the minimum came from.
#[derive(Clone, Copy)]
struct Memo {
    label: TrustLabel,
    next: Option<Hop>,
}

/// Computes the value label of `start`, a context entry that carries the value (or that is
/// cited for it); `carries` says how an entry carries the value (erased entries included).
pub(crate) fn value_origin<'a>(
    start: &'a ContextEntry,
    ancestry: &Ancestry,
    carries: &mut dyn FnMut(&ContextEntry) -> Carry,
) -> Origin<'a> {
    if ancestry.get(&start.id).is_none_or(|n| n.parents.is_empty()) {
        // No parents: the carrier is where the value first appears.
        return Origin {
            label: start.label,
            path: Cow::Borrowed(&start.taint_path),
            raised_by: None,
            earlier: None,
        };
    }
    let lookup = |id: &EntryId| -> Option<&ContextEntry> {
        if *id == start.id {
            Some(start)
        } else {
            ancestry.get(id).map(|n| &n.entry)
        }
    };
    let mut memo: HashMap<EntryId, Memo> = HashMap::new();
    let mut hops: HashMap<EntryId, Vec<Hop>> = HashMap::new();
    let mut on_stack: HashSet<EntryId> = HashSet::new();
    let mut stack: Vec<EntryId> = vec![start.id];
    while let Some(&id) = stack.last() {
        if memo.contains_key(&id) {
            stack.pop();
            continue;
        }
        let Some(entry) = lookup(&id) else {
            // Only known ids are pushed; unreachable in practice, and fail closed if not.
            memo.insert(
                id,
                Memo {
                    label: TrustLabel::External,
                    next: None,
                },
            );
            stack.pop();
            continue;
        };
        if let std::collections::hash_map::Entry::Vacant(slot) = hops.entry(id) {
            on_stack.insert(id);
            let parents = ancestry.get(&id).map_or(&[][..], |n| n.parents.as_slice());
            let mut carrying = Vec::new();
            for pid in parents {
                match ancestry.get(pid) {
                    None => carrying.push(Hop::Unknown(*pid)),
                    Some(_) if on_stack.contains(pid) => carrying.push(Hop::Unknown(*pid)),
                    Some(node) => match carries(&node.entry) {
                        Carry::Exact => carrying.push(Hop::Known(*pid, true)),
                        Carry::Look => carrying.push(Hop::Known(*pid, false)),
                        Carry::No => {}
                    },
                }
            }
            slot.insert(carrying);
        }
        let carrying = hops.get(&id).map_or(&[][..], Vec::as_slice);
        let pending: Vec<EntryId> = carrying
            .iter()
            .filter_map(|h| match h {
                Hop::Known(p, _) if !memo.contains_key(p) => Some(*p),
                _ => None,
            })
            .collect();
        if !pending.is_empty() {
            stack.extend(pending);
            continue;
        }
        let mut best: Option<(TrustLabel, Hop)> = None;
        for h in carrying {
            let l = match h {
                Hop::Known(p, exact) => {
                    let l = memo.get(p).map_or(TrustLabel::External, |m| m.label);
                    // A look-alike can taint the value, never vouch for it.
                    if !exact && !l.is_untrusted() {
                        continue;
                    }
                    l
                }
                Hop::Unknown(_) => TrustLabel::External,
            };
            if best.is_none_or(|(b, _)| l < b) {
                best = Some((l, *h));
            }
        }
        let result = match best {
            None => Memo {
                label: entry.label,
                next: None,
            },
            Some((l, h)) => Memo {
                label: entry.label.max(l.derived()),
                next: Some(h),
            },
        };
        memo.insert(id, result);
        on_stack.remove(&id);
        stack.pop();
    }
    let top = memo.get(&start.id).copied().unwrap_or(Memo {
        label: TrustLabel::External,
        next: None,
    });
    if top.label <= start.label {
        return Origin {
            label: start.label,
            path: Cow::Borrowed(&start.taint_path),
            raised_by: None,
            earlier: None,
        };
    }
    // Follow the minimum down to the entry whose own label is the value label: the ancestor
    // where the untrusted value entered (or one that could not be examined).
    let mut path = vec![start.id];
    let mut at = top;
    let mut origin = start.id;
    let mut tail: &[EntryId] = &[];
    while let Some(h) = at.next {
        let p = match h {
            Hop::Unknown(p) => {
                path.push(p);
                origin = p;
                tail = &[];
                break;
            }
            Hop::Known(p, _) => p,
        };
        if path.contains(&p) {
            break;
        }
        path.push(p);
        origin = p;
        let Some(entry) = lookup(&p) else { break };
        tail = entry.taint_path.as_slice();
        match memo.get(&p) {
            Some(m) if m.label > entry.label => at = *m,
            _ => break,
        }
    }
    if tail.first() == Some(&origin) {
        path.extend(tail.iter().skip(1).copied());
    }
    Origin {
        label: top.label,
        path: Cow::Owned(path),
        raised_by: Some(origin),
        earlier: None,
    }
}
