//! Judging a traced parameter: the label at which it is justified, and the entry that decides.
//!
//! Content-based justifications (citation, value match) are judged per carrier at its *value
//! label* ([`super::provenance`], or the carrier's own label under `provenance = "entry"`), and
//! the policy's `carriers` setting picks the decisive carrier: under `any` the most trusted one
//! decides when it is trusted enough, under `all` the least trusted one always decides.
//! Attribution treats the call as a derived entry of the attributed entries and applies the label
//! rule of paper §M4 with the store's τ and fallback, so the strict fallback's protection against
//! weak untrusted edges holds at the gate as well.

use super::message::{Rule, Why};
use super::param_type::{ParamType, ParamValue};
use super::policy::{Carriers, ParamPolicy, Policy, Provenance};
use super::provenance::{Origin, value_origin};
use super::trace::Traced;
use super::{ContextEntry, GateInput, Via};
use crate::hash::EntryId;
use crate::label::{TrustClass, TrustLabel};
use crate::trust::{LabelCause, ParentEdge, compute_label};
use std::borrow::Cow;

/// How a justified parameter was judged.
pub(crate) struct Judgement<'a> {
    /// The entry that decides: the most trusted carrier that passes (`any`), else the least
    /// trusted carrier; for attribution, the parent that caused the call's label.
    pub(crate) decisive: &'a ContextEntry,
    /// The label at which the parameter is justified.
    pub(crate) label: TrustLabel,
    /// The decisive entry's lineage path to its untrusted root (through the value's origin when
    /// value provenance raised the label).
    pub(crate) path: Cow<'a, [EntryId]>,
    /// The ancestor where the value first appeared, when it raised the decisive entry's label.
    pub(crate) raised_by: Option<EntryId>,
    /// Carriers above `require` that did not decide because a trusted carrier did (`any`).
    pub(crate) overruled: Vec<EntryId>,
    /// For attribution: why the call, as a derived entry, has its label.
    pub(crate) rule: Option<Rule>,
}

/// Judges `t`; `None` when nothing justifies the parameter.
pub(crate) fn judge<'a>(
    policy: &Policy,
    pp: &ParamPolicy,
    value: &ParamValue,
    t: &Traced<'a>,
    input: &GateInput<'_>,
    scratch: &mut String,
) -> Option<Judgement<'a>> {
    match t.via {
        Via::None => None,
        Via::Attribution => judge_attribution(t, input),
        Via::Citation | Via::ValueMatch => {
            // One pass over the carriers: the least trusted (first of the highest label), the
            // most trusted (first of the lowest), and those above `require`.
            let mut worst: Option<(&'a ContextEntry, Origin<'a>)> = None;
            let mut best: Option<(&'a ContextEntry, Origin<'a>)> = None;
            let mut above = Vec::new();
            for &c in &t.justifying {
                let o = carrier_origin(policy, &pp.kind, value, c, input, scratch);
                if o.label > pp.require {
                    above.push(c.id);
                }
                if best.as_ref().is_none_or(|(_, b)| o.label < b.label) {
                    best = Some((c, o.clone()));
                }
                if worst.as_ref().is_none_or(|(_, w)| o.label > w.label) {
                    worst = Some((c, o));
                }
            }
            let (best, worst) = (best?, worst?);
            let ((decisive, pick), overruled) = match policy.carriers {
                Carriers::Any if best.1.label <= pp.require => (best, above),
                _ => (worst, Vec::new()),
            };
            Some(Judgement {
                decisive,
                label: pick.label,
                path: pick.path,
                raised_by: pick.raised_by,
                overruled,
                rule: None,
            })
        }
    }
}

/// The value label of one carrier (or its own label under `provenance = "entry"`).
pub(crate) fn carrier_origin<'a>(
    policy: &Policy,
    kind: &ParamType,
    value: &ParamValue,
    carrier: &'a ContextEntry,
    input: &GateInput<'_>,
    scratch: &mut String,
) -> Origin<'a> {
    match policy.provenance {
        Provenance::Entry => Origin {
            label: carrier.label,
            path: Cow::Borrowed(&carrier.taint_path),
            raised_by: None,
        },
        Provenance::Value => {
            let mut carries = |e: &ContextEntry| {
                e.content
                    .as_deref()
                    .is_some_and(|c| kind.any_occurs(value, c, scratch))
            };
            value_origin(carrier, input.ancestry, &mut carries)
        }
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
        decisive,
        label: d.label,
        path,
        raised_by: None,
        overruled: Vec::new(),
        rule: Some(Rule {
            label: d.label,
            tau: input.tau,
            why,
        }),
    })
}
