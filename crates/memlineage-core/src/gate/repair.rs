//! Authority repair: replace a failing parameter by the one value of trusted provenance.
//!
//! For each failing parameter, candidates are the values of its type extracted from the
//! context entries whose label is at or below the parameter's `require` (in context order),
//! minus every value that some entry above `require` (in the context or the repair pool) also
//! carries. If that leaves no distinct value, the repair pool is searched the same way. Exactly
//! one distinct normal value: it is taken, sourced from the first entry that offers it. Several:
//! ambiguous, deny. None: deny. Free text is never repaired. The repaired call is then checked
//! again from scratch (citations of the replaced parameters no longer apply), and must pass.

use super::decide::{
    Checked, check_all, deny_summary, entry_desc, failing_names, finish, name_list, show_json,
};
use super::error::GateError;
use super::judge::carrier_origin;
use super::param_type::{NormValue, ParamType, ParamValue};
use super::policy::{Carriers, ParamPolicy, Policy, ToolPolicy};
use super::trace::Entries;
use super::{ContextEntry, Decision, GateDecision, GateInput, Outcome, ParamReason, Repair};
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

/// Whether an entry above `require`, in the context or the pool, carries `v`.
fn carried_above(
    pp: &ParamPolicy,
    v: &NormValue,
    input: &GateInput<'_>,
    scratch: &mut String,
) -> bool {
    input
        .context
        .iter()
        .chain(input.repair_pool)
        .filter(|e| e.label > pp.require)
        .any(|e| {
            e.content
                .as_deref()
                .is_some_and(|c| pp.kind.occurs_with(v, c, scratch))
        })
}

/// Whether the value `v` that `e` offers is of trusted enough provenance: `e`'s value label
/// (value provenance) is at or below `require`.
fn provenance_ok(
    policy: &Policy,
    pp: &ParamPolicy,
    v: &NormValue,
    e: &ContextEntry,
    input: &GateInput<'_>,
    scratch: &mut String,
) -> bool {
    let value = ParamValue::one(v.clone());
    carrier_origin(policy, &pp.kind, &value, e, input, scratch).label <= pp.require
}

/// Finds the repair candidate of a parameter (see the module documentation).
pub(crate) fn pick<'a>(
    policy: &Policy,
    pp: &ParamPolicy,
    input: &GateInput<'a>,
    scratch: &mut String,
) -> Pick<'a> {
    if !pp.kind.can_repair() {
        return Pick::NotRepairable;
    }
    let mut rejected: Vec<NormValue> = Vec::new();
    for (from_pool, stage) in [(false, input.context), (true, input.repair_pool)] {
        let mut found: Vec<(NormValue, &'a ContextEntry)> = Vec::new();
        for e in stage {
            if e.label > pp.require || (from_pool && input.context.iter().any(|c| c.id == e.id)) {
                continue;
            }
            let Some(text) = e.content.as_deref() else {
                continue;
            };
            for v in pp.kind.extract(text) {
                if found.iter().any(|(f, _)| *f == v) || rejected.contains(&v) {
                    continue;
                }
                let excluded = match policy.carriers {
                    Carriers::All => carried_above(pp, &v, input, scratch),
                    Carriers::Any => false,
                };
                if excluded || !provenance_ok(policy, pp, &v, e, input, scratch) {
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

fn type_phrase(kind: &ParamType) -> String {
    match kind {
        ParamType::Regex(_) => "matching the pattern".to_string(),
        other => format!("of type {}", other.name()),
    }
}

/// Tries to repair every failing parameter of `checked`, then re-checks the repaired call.
pub(crate) fn attempt(
    policy: &Policy,
    tool: &ToolPolicy,
    input: &GateInput<'_>,
    mut checked: Vec<Checked<'_>>,
    scratch: &mut String,
) -> Result<GateDecision, GateError> {
    let call = input.call;
    let mut args = call.arguments.clone();
    let mut repairs: Vec<Repair> = Vec::new();
    let mut extra: Vec<&ContextEntry> = Vec::new();
    let mut notes: Vec<(usize, String)> = Vec::new();
    let mut refused = false;
    for (i, c) in checked.iter().enumerate() {
        if !c.reason.outcome.fails() {
            continue;
        }
        match pick(policy, c.policy, input, scratch) {
            Pick::Found(v, src) => {
                let old = call.arguments.get(c.name).cloned().unwrap_or(Value::Null);
                let new = v.to_json(&old);
                args.insert(c.name.to_string(), new.clone());
                if !input.context.iter().any(|e| e.id == src.id)
                    && !extra.iter().any(|e| e.id == src.id)
                {
                    extra.push(src);
                }
                notes.push((
                    i,
                    format!(
                        "Repaired to {} from {}, the only trusted candidate {}.",
                        show_json(&new),
                        entry_desc(src),
                        type_phrase(&c.policy.kind)
                    ),
                ));
                repairs.push(Repair {
                    param: c.name.to_string(),
                    old,
                    new,
                    source: src.id,
                    source_label: src.label,
                });
            }
            Pick::Ambiguous(values) => {
                refused = true;
                let shown: Vec<String> = values.iter().take(5).map(|v| format!("{v}")).collect();
                notes.push((
                    i,
                    format!(
                        "No repair: ambiguous: {} trusted candidates ({}{}).",
                        values.len(),
                        shown.join(", "),
                        if values.len() > 5 { ", …" } else { "" }
                    ),
                ));
            }
            Pick::Nothing => {
                refused = true;
                notes.push((
                    i,
                    format!(
                        "No repair: no trusted candidate {} in the context or the repair pool.",
                        type_phrase(&c.policy.kind)
                    ),
                ));
            }
            Pick::NotRepairable => {
                refused = true;
                notes.push((i, "No repair: free text cannot be repaired.".to_string()));
            }
        }
    }
    if refused {
        let failing = failing_names(&checked);
        for (i, note) in notes {
            let msg = &mut checked[i].reason.message;
            msg.push(' ');
            if let Some(found) = note.strip_prefix("Repaired to ") {
                msg.push_str("A repair was found (");
                msg.push_str(found.trim_end_matches('.'));
                msg.push_str(
                    "), but the call is denied because other parameters cannot be repaired.",
                );
            } else {
                msg.push_str(&note);
            }
        }
        let summary = deny_summary(&failing, &call.name);
        let reasons = checked.into_iter().map(|c| c.reason).collect();
        return Ok(finish(
            policy,
            input,
            Decision::Deny,
            summary,
            reasons,
            None,
            Vec::new(),
        ));
    }
    let replaced: Vec<&str> = repairs.iter().map(|r| r.param.as_str()).collect();
    let entries = Entries {
        main: input.context,
        extra: &extra,
    };
    let rechecked = check_all(policy, tool, &args, input, entries, &replaced, scratch)?;
    let still = failing_names(&rechecked);
    if !still.is_empty() {
        let summary = format!(
            "Denied: the repaired call still fails on {}.",
            name_list(&still)
        );
        let reasons = rechecked.into_iter().map(|c| c.reason).collect();
        return Ok(finish(
            policy,
            input,
            Decision::Deny,
            summary,
            reasons,
            None,
            Vec::new(),
        ));
    }
    let mut reasons: Vec<ParamReason> = Vec::with_capacity(checked.len());
    for (i, (orig, re)) in checked.into_iter().zip(rechecked).enumerate() {
        let Some((_, note)) = notes.iter().find(|(j, _)| *j == i) else {
            reasons.push(re.reason);
            continue;
        };
        reasons.push(ParamReason {
            param: orig.reason.param,
            outcome: Outcome::Repaired,
            via: re.reason.via,
            justifying: re.reason.justifying,
            label: re.reason.label,
            offending: orig.reason.offending,
            taint_path: orig.reason.taint_path,
            message: format!("{} {note}", orig.reason.message),
        });
    }
    let summary = format!(
        "Repaired: {} of `{}` replaced by {} of trusted provenance.",
        name_list(&replaced),
        call.name,
        if replaced.len() == 1 {
            "a value"
        } else {
            "values"
        }
    );
    Ok(finish(
        policy,
        input,
        Decision::Repair,
        summary,
        reasons,
        Some(args),
        repairs,
    ))
}
