//! Judging a traced parameter: the label at which it is justified, and the entry that decides.
//!
//! Content-based justifications (citation, value match) are judged per carrier at its *value
//! label* ([`super::provenance`], or the carrier's own label under `provenance = "entry"`), and
//! the policy's `carriers` setting picks the decisive carrier: under `any` the most trusted one
//! decides when it is trusted enough, under `all` the least trusted one always decides.
//! Attribution treats the call as a derived entry of the attributed entries and applies the label
//! rule of paper §M4 with the store's τ and fallback, so the strict fallback's protection against
//! weak untrusted edges holds at the gate as well.

use super::earliest::{Earlier, FirstCarriers, raising};
use super::message::{Rule, Why};
use super::param_type::{ParamType, ParamValue};
use super::policy::{Carriers, Policy, Provenance};
use super::provenance::{Origin, value_origin};
use super::trace::{Traced, carry_of};
use super::value_key::ValueKey;
use super::{ContextEntry, GateInput, Via};
use crate::hash::EntryId;
use crate::label::{TrustClass, TrustLabel};
use crate::trust::{LabelCause, ParentEdge, compute_label};
use std::borrow::Cow;

/// How a justified parameter was judged.
pub(crate) struct Judgement<'a> {
    /// How the decisive entry was found (a value carried only by look is a value match).
    pub(crate) via: Via,
    /// The entry that decides: the most trusted carrier that passes (`any`), else the least
    /// trusted carrier; for attribution, the parent that caused the call's label.
    pub(crate) decisive: &'a ContextEntry,
    /// Whether the decisive entry carries the value only by look (a look-alike, separators).
    pub(crate) by_look: bool,
    /// The label at which the parameter is justified.
    pub(crate) label: TrustLabel,
    /// The decisive entry's lineage path to its untrusted root (through the value's origin when
    /// value provenance raised the label).
    pub(crate) path: Cow<'a, [EntryId]>,
    /// The ancestor where the value first appeared, when it raised the decisive entry's label.
    pub(crate) raised_by: Option<EntryId>,
    /// The value's earliest carrier in the log, when it raised the label.
    pub(crate) earlier: Option<Earlier<'a>>,
    /// Carriers above `require` that did not decide because a trusted carrier did (`any`).
    pub(crate) overruled: Vec<EntryId>,
    /// For attribution: why the call, as a derived entry, has its label.
    pub(crate) rule: Option<Rule>,
    /// How many entries carry the value.
    pub(crate) carriers: usize,
}

/// The least and most trusted carriers seen so far, and those above `require`.
struct Tally<'a> {
    worst: Option<(&'a ContextEntry, Origin<'a>, bool)>,
    best: Option<(&'a ContextEntry, Origin<'a>)>,
    above: Vec<EntryId>,
    count: usize,
}

impl<'a> Tally<'a> {
    fn new() -> Self {
        Tally {
            worst: None,
            best: None,
            above: Vec::new(),
            count: 0,
        }
    }

    /// Adds a carrier; one that carries the value only by look can be the worst, never the best.
    #[inline]
    fn add(&mut self, c: &'a ContextEntry, o: Origin<'a>, require: TrustLabel, exact: bool) {
        self.count += 1;
        if o.label > require {
            self.above.push(c.id);
        }
        if exact && self.best.as_ref().is_none_or(|(_, b)| o.label < b.label) {
            self.best = Some((c, o.clone()));
        }
        if self
            .worst
            .as_ref()
            .is_none_or(|(_, w, _)| o.label > w.label)
        {
            self.worst = Some((c, o, !exact));
        }
    }

    #[inline]
    fn judgement(self, via: Via, any: bool, require: TrustLabel) -> Option<Judgement<'a>> {
        let count = self.count;
        let (decisive, pick, by_look, overruled) = match (self.best, any) {
            (Some((c, o)), true) if o.label <= require => (c, o, false, self.above),
            _ => {
                let (c, o, look) = self.worst?;
                (c, o, look, Vec::new())
            }
        };
        Some(Judgement {
            via,
            decisive,
            by_look,
            label: pick.label,
            path: pick.path,
            raised_by: pick.raised_by,
            earlier: pick.earlier,
            overruled,
            rule: None,
            carriers: count,
        })
    }
}

/// Judges `t` (a value of type `kind` that must be justified at `require` or better); `looks`
/// finds the entries that carry the value only by look, asked for only when they can change the
/// outcome; `unjustified_allowed`: the policy lets a value nothing justifies pass (then its untrusted
/// earliest carrier in the log fails it). `None` when nothing justifies the value.
#[allow(clippy::too_many_arguments)]
pub(crate) fn judge<'a>(
    policy: &Policy,
    kind: &ParamType,
    require: TrustLabel,
    value: &ParamValue,
    t: &Traced<'a>,
    input: &GateInput<'a>,
    looks: &mut dyn FnMut(&[&'a ContextEntry]) -> Vec<&'a ContextEntry>,
    unjustified_allowed: bool,
) -> Option<Judgement<'a>> {
    let any = policy.carriers == Carriers::Any;
    let keys = match policy.provenance {
        Provenance::Value => keys_for(input, kind, value),
        Provenance::Entry => Vec::new(),
    };
    match t.via {
        Via::Citation | Via::ValueMatch => {
            let mut tally = Tally::new();
            for &c in &t.justifying {
                let o = carrier_origin(policy, kind, value, c, input, &keys);
                tally.add(c, o, require, true);
            }
            if !any {
                // Under `all` every carrier is weighed, those that carry the value by look
                // included (they fail it when above `require`).
                for c in looks(&t.justifying) {
                    let o = carrier_origin(policy, kind, value, c, input, &keys);
                    if o.label > require {
                        tally.add(c, o, require, false);
                    }
                }
            }
            tally.judgement(t.via, any, require)
        }
        Via::Attribution | Via::None => {
            // No entry carries the value exactly: an untrusted one that carries it by look is
            // where it may have been read, and fails it.
            let mut tally = Tally::new();
            for c in looks(&[]) {
                let o = carrier_origin(policy, kind, value, c, input, &keys);
                if o.label > require {
                    tally.add(c, o, require, false);
                }
            }
            if tally.count > 0 {
                return tally.judgement(Via::ValueMatch, any, require);
            }
            let judged = if t.via == Via::Attribution {
                judge_attribution(t, input)
            } else {
                None
            };
            match input.first_carriers {
                // Nothing justifies it and the policy denies that anyway: it stays unjustified.
                _ if judged.is_none() && !unjustified_allowed => judged,
                Some(firsts) if !keys.is_empty() => from_the_log(judged, firsts, &keys, require),
                _ => judged,
            }
        }
    }
}

/// A value no context entry carries (justified by attribution, or by nothing) whose earliest
/// carrier in the log is untrusted: that entry fails it (when above `require`), as the carrier
/// the value was read from even though the context omits it (issue 19). Otherwise `judged`.
fn from_the_log<'a>(
    judged: Option<Judgement<'a>>,
    firsts: &'a FirstCarriers,
    keys: &[ValueKey],
    require: TrustLabel,
) -> Option<Judgement<'a>> {
    let Some(e) = raising(firsts, keys, None) else {
        return judged;
    };
    if e.label() <= require || judged.as_ref().is_some_and(|j| j.label >= e.label()) {
        return judged;
    }
    let Earlier::Entry(first) = e else {
        // Not looked up: fail closed on the judgement there is, at `EXTERNAL`.
        return judged.map(|j| Judgement {
            label: e.label(),
            earlier: Some(e),
            ..j
        });
    };
    Some(Judgement {
        via: Via::ValueMatch,
        decisive: first,
        by_look: false,
        label: e.label(),
        path: Cow::Borrowed(first.taint_path.as_slice()),
        raised_by: None,
        earlier: Some(e),
        overruled: Vec::new(),
        rule: None,
        carriers: 1,
    })
}

/// The value label of one carrier (or its own label under `provenance = "entry"`): through its
/// declared ancestors ([`super::provenance`]), then raised by the value's earliest carrier in
/// the log when that one is untrusted and earlier ([`super::earliest`]; `keys` are the keys of
/// the value's readings, empty when the decision has no answers from the store).
#[inline]
pub(crate) fn carrier_origin<'a>(
    policy: &Policy,
    kind: &ParamType,
    value: &ParamValue,
    carrier: &'a ContextEntry,
    input: &GateInput<'a>,
    keys: &[ValueKey],
) -> Origin<'a> {
    match policy.provenance {
        Provenance::Entry => Origin {
            label: carrier.label,
            path: Cow::Borrowed(&carrier.taint_path),
            raised_by: None,
            earlier: None,
        },
        Provenance::Value => {
            let mut carries = |e: &ContextEntry| carry_of(kind, value, e);
            let o = value_origin(carrier, input.ancestry, &mut carries);
            let Some(firsts) = input.first_carriers.filter(|_| !keys.is_empty()) else {
                return o;
            };
            // The ancestry is walked for the user's own words only when the earliest carrier
            // would raise the label at all.
            let raised = raise(o.clone(), carrier, firsts, keys);
            if raised.earlier.is_some() && !from_the_user(carrier, input.ancestry, &mut carries) {
                raised
            } else {
                o
            }
        }
    }
}

/// Whether the value `carrier` carries is the user's own: the carrier, or an ancestor it
/// reaches through declared parents that carry the value exactly, is a `user_input` root of a
/// trusted principal (`TRUSTED`) that carries it. The user's own words are an origin of their
/// own — the user may repeat a value a bill gave first; that is the user's choice, and the gate
/// exists to stop the *agent* from being steered — so the earliest-carrier rule does not raise
/// such a carrier (`docs/gate.md`, "Earliest carrier"). A note that names no parent, or whose
/// parents do not carry the value, has no such origin.
fn from_the_user(
    carrier: &ContextEntry,
    ancestry: &super::Ancestry,
    carries: &mut dyn FnMut(&ContextEntry) -> super::param_type::Carry,
) -> bool {
    use super::param_type::Carry;
    use crate::entry::EntryKind;
    let is_user =
        |e: &ContextEntry| e.kind == EntryKind::UserInput && e.label == TrustLabel::Trusted;
    if is_user(carrier) {
        return true;
    }
    let mut seen: std::collections::BTreeSet<EntryId> = std::collections::BTreeSet::new();
    let mut stack = vec![carrier.id];
    while let Some(id) = stack.pop() {
        let Some(node) = ancestry.get(&id) else {
            continue;
        };
        for p in &node.parents {
            if !seen.insert(*p) {
                continue;
            }
            let Some(parent) = ancestry.get(p) else {
                continue;
            };
            if carries(&parent.entry) != Carry::Exact {
                continue;
            }
            if is_user(&parent.entry) {
                return true;
            }
            stack.push(*p);
        }
    }
    false
}

/// `o` (the value label of `carrier`) raised by the value's earliest carrier, when that one
/// raises it: the path then runs from the carrier to the earliest carrier and on along that
/// one's own taint path.
fn raise<'a>(
    o: Origin<'a>,
    carrier: &'a ContextEntry,
    firsts: &'a FirstCarriers,
    keys: &[ValueKey],
) -> Origin<'a> {
    let Some(e) = raising(firsts, keys, Some(&carrier.id)) else {
        return o;
    };
    if e.label() <= o.label {
        return o;
    }
    let mut path = vec![carrier.id];
    if let Earlier::Entry(first) = e {
        path.push(first.id);
        if first.taint_path.first() == Some(&first.id) {
            path.extend(first.taint_path.iter().skip(1).copied());
        }
    }
    Origin {
        label: e.label(),
        path: Cow::Owned(path),
        raised_by: None,
        earlier: Some(e),
    }
}

/// The keys of the readings of `value` when the decision has answers from the store's value
/// index (else none: the earliest-carrier rule is off).
pub(crate) fn keys_for(
    input: &GateInput<'_>,
    kind: &ParamType,
    value: &ParamValue,
) -> Vec<ValueKey> {
    match input.first_carriers {
        Some(_) => ValueKey::of_readings(kind, value),
        None => Vec::new(),
    }
}

/// The call as a derived entry of the attributed entries (paper §M4's rule, store τ and
/// fallback). No strong edge and no taint under the fallback: nothing justifies the value.
fn judge_attribution<'a>(t: &Traced<'a>, input: &GateInput<'_>) -> Option<Judgement<'a>> {
    let edges: Vec<ParentEdge> = t
        .weights
        .iter()
        .map(|(e, w)| ParentEdge {
            label: e.label,
            weight: *w,
        })
        .collect();
    let d = compute_label(TrustClass::Trusted, &edges, input.tau, input.fallback);
    let strong = || {
        t.weights
            .iter()
            .find(|(_, w)| *w > input.tau)
            .map(|(e, _)| *e)
    };
    let (decisive, why) = match d.cause {
        LabelCause::StrongParent(i) => {
            let e = t.weights.get(i)?.0;
            let why = if e.label.is_untrusted() {
                Why::StrongEdgeTo(e.id)
            } else {
                Why::TrustedStrongEdges
            };
            (e, why)
        }
        LabelCause::TrustedStrongParents => (strong()?, Why::TrustedStrongEdges),
        LabelCause::StrictWeakUntrusted(i) => {
            let e = t.weights.get(i)?.0;
            (e, Why::WeakEdgeTo(e.id))
        }
        LabelCause::StrictUntrustedSum { sum_bp } => {
            let e = t
                .weights
                .iter()
                .filter(|(e, _)| e.label.is_untrusted())
                .max_by_key(|(_, w)| *w)?
                .0;
            (e, Why::UntrustedSum(sum_bp))
        }
        LabelCause::PermissiveFallback | LabelCause::Root(_) | LabelCause::ExternalWriter => {
            return None;
        }
    };
    let path = if d.label.is_untrusted() {
        Cow::Borrowed(decisive.taint_path.as_slice())
    } else {
        Cow::Borrowed(&[][..])
    };
    Some(Judgement {
        via: Via::Attribution,
        decisive,
        by_look: false,
        label: d.label,
        path,
        raised_by: None,
        earlier: None,
        overruled: Vec::new(),
        carriers: t.justifying.len(),
        rule: Some(Rule {
            label: d.label,
            tau: input.tau,
            why,
        }),
    })
}
