//! Judging a traced parameter: the label at which it is justified, and the entry that decides.
//!
//! Content-based justifications (citation, value match) are judged per carrier at its *value
//! label* ([`super::provenance`], or the carrier's own label under `provenance = "entry"`), and
//! the policy's `carriers` setting picks the decisive carrier: under `any` the most trusted one
//! decides when it is trusted enough, under `all` the least trusted one always decides.
//! Attribution treats the call as a derived entry of the attributed entries and applies the label
//! rule of paper §M4 with the store's τ and fallback, so the strict fallback's protection against
//! weak untrusted edges holds at the gate as well.

use super::param_type::{ParamType, ParamValue};
use super::policy::{Carriers, ParamPolicy, Policy, Provenance};
use super::provenance::{Origin, value_origin};
use super::trace::Traced;
use super::{ContextEntry, GateInput, Via};
use crate::hash::EntryId;
use crate::label::{TrustClass, TrustLabel};
use crate::trust::{LabelCause, ParentEdge, compute_label};

/// How a justified parameter was judged.
pub(crate) struct Judgement<'a> {
    /// The entry that decides: the most trusted carrier that passes (`any`), else the least
    /// trusted carrier; for attribution, the parent that caused the call's label.
    pub(crate) decisive: &'a ContextEntry,
    /// The label at which the parameter is justified.
    pub(crate) label: TrustLabel,
    /// The decisive entry's lineage path to its untrusted root (through the value's origin when
    /// value provenance raised the label).
    pub(crate) path: Vec<EntryId>,
    /// The ancestor where the value first appeared, when it raised the decisive entry's label.
    pub(crate) raised_by: Option<EntryId>,
    /// Carriers above `require` that did not decide because a trusted carrier did (`any`).
    pub(crate) overruled: Vec<EntryId>,
    /// For attribution: why the call, as a derived entry, has its label.
    pub(crate) rule: Option<String>,
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
            let judged: Vec<(&'a ContextEntry, Origin)> = t
                .justifying
                .iter()
                .map(|c| {
                    (
                        *c,
                        carrier_origin(policy, &pp.kind, value, c, input, scratch),
                    )
                })
                .collect();
            let worst = judged
                .iter()
                .reduce(|a, b| if b.1.label > a.1.label { b } else { a })?;
            let best = judged
                .iter()
                .reduce(|a, b| if b.1.label < a.1.label { b } else { a })?;
            let (pick, overruled) = match policy.carriers {
                Carriers::Any if best.1.label <= pp.require => {
                    let over = judged
                        .iter()
                        .filter(|(_, o)| o.label > pp.require)
                        .map(|(c, _)| c.id)
                        .collect();
                    (best, over)
                }
                _ => (worst, Vec::new()),
            };
            Some(Judgement {
                decisive: pick.0,
                label: pick.1.label,
                path: pick.1.path.clone(),
                raised_by: pick.1.raised_by,
                overruled,
                rule: None,
            })
        }
    }
}

/// The value label of one carrier (or its own label under `provenance = "entry"`).
pub(crate) fn carrier_origin(
    policy: &Policy,
    kind: &ParamType,
    value: &ParamValue,
    carrier: &ContextEntry,
    input: &GateInput<'_>,
    scratch: &mut String,
) -> Origin {
    match policy.provenance {
        Provenance::Entry => Origin {
            label: carrier.label,
            path: carrier.taint_path.clone(),
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
    let (decisive, rule) = match d.cause {
        LabelCause::StrongParent(i) => {
            let e = t.weights.get(i)?.0;
            let rule = if e.label.is_untrusted() {
                format!(
                    "its attribution edge to {} weighs more than τ = {}",
                    e.id.short(),
                    input.tau
                )
            } else {
                format!(
                    "its strong attribution edges (above τ = {}) are trusted",
                    input.tau
                )
            };
            (e, rule)
        }
        LabelCause::TrustedStrongParents => (
            strong()?,
            format!(
                "its strong attribution edges (above τ = {}) are trusted",
                input.tau
            ),
        ),
        LabelCause::StrictWeakUntrusted(i) => {
            let e = t.weights.get(i)?.0;
            (
                e,
                format!(
                    "no edge weighs more than τ = {}, and under the strict fallback the weak edge to untrusted {} keeps its taint",
                    input.tau,
                    e.id.short()
                ),
            )
        }
        LabelCause::StrictUntrustedSum { sum_bp } => {
            let e = t
                .weights
                .iter()
                .filter(|(e, _)| e.label.is_untrusted())
                .max_by_key(|(_, w)| *w)?
                .0;
            (
                e,
                format!(
                    "under the strict fallback its untrusted edges together weigh {}.{:04} > τ = {}",
                    sum_bp / 10_000,
                    sum_bp % 10_000,
                    input.tau
                ),
            )
        }
        LabelCause::PermissiveFallback | LabelCause::Root(_) | LabelCause::ExternalWriter => {
            return None;
        }
    };
    let path = if d.label.is_untrusted() {
        decisive.taint_path.clone()
    } else {
        Vec::new()
    };
    Some(Judgement {
        decisive,
        label: d.label,
        path,
        raised_by: None,
        overruled: Vec::new(),
        rule: Some(format!(
            "the call, as an entry derived from the context, is {} because {rule}",
            d.label
        )),
    })
}
