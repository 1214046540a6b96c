//! Authority repair: replace a failing parameter by the one value of trusted provenance.
//!
//! For each failing parameter, candidates are the values of its type extracted from the
//! context entries whose label is at or below the parameter's `require` (in context order),
//! minus every value that some entry above `require` (in the context or the repair pool) also
//! carries. If that leaves no distinct value, the repair pool is searched the same way. Exactly
//! one distinct normal value: it is taken, sourced from the first entry that offers it. Several:
//! ambiguous, deny. None: deny. Free text is never repaired. The repaired call is then checked
//! again from scratch (citations of the replaced parameters no longer apply), and must pass.

use super::decide::{Meta, check_all, finish};
use super::error::GateError;
use super::judge::{carrier_origin, keys_for};
use super::message::{Candidate, RepairNote, Said};
use super::param_type::{Carry, NormValue, ParamType, ParamValue};
use super::policy::{Carriers, Policy, ToolPolicy};
use super::summary::Summary;
use super::trace::{Entries, carry_of};
use super::{ContextEntry, Decision, GateDecision, GateInput, Outcome, ParamReason, Repair};
use crate::label::TrustLabel;
use serde_json::Value;

/// The repair candidate for one parameter.
pub(crate) enum Pick<'a> {
    /// Exactly one distinct trusted value, and the first entry that offers it.
    Found(NormValue, &'a ContextEntry),
    /// Several distinct trusted values.
    Ambiguous(Vec<NormValue>),
    /// No trusted value.
    Nothing,
    /// The type has no extractable values (free text).
    NotRepairable,
}

/// Whether an entry above `require`, in the context or the pool, carries `v` (exactly or by
/// look: a repaired value must survive the re-check under `carriers = "all"`).
fn carried_above(
    kind: &ParamType,
    require: TrustLabel,
    v: &NormValue,
    input: &GateInput<'_>,
) -> bool {
    let value = ParamValue::one(v.clone());
    input
        .context
        .iter()
        .chain(input.repair_pool)
        .filter(|e| e.label > require)
        .any(|e| carry_of(kind, &value, e) != Carry::No)
}

/// Whether the value `v` that `e` offers is of trusted enough provenance: `e`'s value label
/// (value provenance) is at or below `require`.
fn provenance_ok<'a>(
    policy: &Policy,
    kind: &ParamType,
    require: TrustLabel,
    v: &NormValue,
    e: &'a ContextEntry,
    input: &GateInput<'a>,
) -> bool {
    let value = ParamValue::one(v.clone());
    let keys = keys_for(input, kind, &value);
    carrier_origin(policy, kind, &value, e, input, &keys).label <= require
}

/// Finds the repair candidate of a value of type `kind` that must be justified at `require`
/// (see the module documentation).
pub(crate) fn pick<'a>(
    policy: &Policy,
    kind: &ParamType,
    require: TrustLabel,
    input: &GateInput<'a>,
) -> Pick<'a> {
    if !kind.can_repair() {
        return Pick::NotRepairable;
    }
    let mut rejected: Vec<NormValue> = Vec::new();
    for (from_pool, stage) in [(false, input.context), (true, input.repair_pool)] {
        let mut found: Vec<(NormValue, &'a ContextEntry)> = Vec::new();
        for e in stage {
            if e.label > require || (from_pool && input.context.iter().any(|c| c.id == e.id)) {
                continue;
            }
            let Some(text) = e.content.as_deref() else {
                continue;
            };
            for v in kind.extract(text) {
                if found.iter().any(|(f, _)| *f == v) || rejected.contains(&v) {
                    continue;
                }
                let excluded = match policy.carriers {
                    Carriers::All => carried_above(kind, require, &v, input),
                    Carriers::Any => false,
                };
                if excluded || !provenance_ok(policy, kind, require, &v, e, input) {
                    rejected.push(v);
                } else {
                    found.push((v, e));
                }
            }
        }
        if found.len() > 1 {
            return Pick::Ambiguous(found.into_iter().map(|(v, _)| v).collect());
        }
        if let Some((v, e)) = found.pop() {
            return Pick::Found(v, e);
        }
    }
    Pick::Nothing
}

/// Tries to repair every failing value of `checked` (in order), then re-checks the repaired
/// call. Only a parameter's own value is repaired: a typed value found inside free text, or an
/// argument no path covers, refuses the repair.
pub(crate) fn attempt<'a>(
    policy: &Policy,
    tool: &ToolPolicy,
    input: &GateInput<'a>,
    mut checked: Vec<ParamReason<'a>>,
    meta: &[Meta<'_>],
    scratch: &mut String,
) -> Result<GateDecision<'a>, GateError> {
    let mut repairs: Vec<Repair> = Vec::new();
    let mut extra: Vec<&'a ContextEntry> = Vec::new();
    let mut notes: Vec<(usize, RepairNote<'a>)> = Vec::new();
    let mut refused = false;
    for (i, (reason, c)) in checked.iter().zip(meta).enumerate() {
        if !reason.outcome.fails() {
            continue;
        }
        let pick = match c.kind {
            Some(kind) if c.repairable => pick(policy, kind, c.require, input),
            Some(_) => Pick::NotRepairable,
            None => {
                refused = true;
                continue;
            }
        };
        let note = match pick {
            Pick::Found(v, src) => {
                let old = reason.said.value().cloned().unwrap_or(Value::Null);
                let new = v.to_json(&old);
                if !input.context.iter().any(|e| e.id == src.id)
                    && !extra.iter().any(|e| e.id == src.id)
                {
                    extra.push(src);
                }
                repairs.push(Repair {
                    param: reason.param.to_string(),
                    old,
                    new: new.clone(),
                    source: src.id,
                    source_label: src.label,
                });
                RepairNote::Repaired(Candidate {
                    new,
                    source: src,
                    kind: c.kind.map_or("", ParamType::name),
                })
            }
            Pick::Ambiguous(values) => {
                refused = true;
                RepairNote::Ambiguous(values)
            }
            Pick::Nothing => {
                refused = true;
                RepairNote::Nothing(c.kind.map_or("", ParamType::name))
            }
            Pick::NotRepairable => {
                refused = true;
                if c.repairable {
                    RepairNote::FreeText
                } else {
                    RepairNote::Inner
                }
            }
        };
        notes.push((i, note));
    }
    if refused {
        for (i, note) in notes {
            let note = match note {
                RepairNote::Repaired(c) => RepairNote::Unused(c),
                other => other,
            };
            if let Some(reason) = checked.get_mut(i) {
                add_note(reason, note);
            }
        }
        return Ok(finish(
            policy,
            input,
            Decision::Deny,
            Summary::Denied,
            checked,
            Vec::new(),
        ));
    }
    let entries = Entries {
        main: input.context,
        extra: &extra,
    };
    let (rechecked, _) = check_all(policy, tool, input, entries, &repairs, scratch)?;
    if rechecked.iter().any(|r| r.outcome.fails()) {
        return Ok(finish(
            policy,
            input,
            Decision::Deny,
            Summary::StillFails,
            rechecked,
            Vec::new(),
        ));
    }
    let mut notes = notes.into_iter().peekable();
    let mut reasons: Vec<ParamReason<'a>> = Vec::with_capacity(checked.len());
    for (i, (mut orig, re)) in checked.into_iter().zip(rechecked).enumerate() {
        let Some((_, note)) = notes.next_if(|(j, _)| *j == i) else {
            reasons.push(re);
            continue;
        };
        add_note(&mut orig, note);
        reasons.push(ParamReason {
            param: orig.param,
            outcome: Outcome::Repaired,
            via: re.via,
            justifying: re.justifying,
            label: re.label,
            offending: orig.offending,
            taint_path: orig.taint_path,
            said: orig.said,
        });
    }
    Ok(finish(
        policy,
        input,
        Decision::Repair,
        Summary::Repaired,
        reasons,
        repairs,
    ))
}

/// Appends what repair made of a failing parameter to its message (a failing parameter was
/// always checked, so its message holds facts).
fn add_note<'a>(reason: &mut ParamReason<'a>, note: RepairNote<'a>) {
    if let Said::Checked(facts) = &mut reason.said {
        facts.repair = Some(note);
    }
}
