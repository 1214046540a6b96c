//! The decision: check every parameter the policy names, then allow, deny or repair.

use super::error::GateError;
use super::judge::{Judgement, judge};
use super::message::{Facts, Finding, Judged, Said};
use super::policy::{Citations, Mode, ParamPolicy, Policy, ToolPolicy, Unjustified};
use super::summary::Summary;
use super::trace::{Entries, TraceArgs, Traced, trace};
use super::{ContextEntry, Decision, GateDecision, GateInput, Outcome, ParamReason, Repair, Via};
use crate::hash::EntryId;
use serde_json::Value;
use std::borrow::Cow;

/// Decides on `input.call` under `policy`.
///
/// Errors (never a panic) for malformed input: a citation or attribution naming an entry that
/// is not in the context, or a checked parameter whose value is not of its type. The rules are
/// in `docs/gate.md`:
///
/// - a tool the policy does not name is not sensitive: allow;
/// - each parameter the policy names is traced (citation, else value match, else attribution,
///   the call judged as a derived entry under τ and the fallback); each carrier counts at its
///   value label (value provenance), and the most trusted carrier (`carriers = "any"`) or the
///   least trusted one (`"all"`) decides; it passes when that label is at or below `require`,
///   or when nothing justifies it and the policy allows unjustified values; a parameter absent
///   from the call (or `null`) is not checked;
/// - all pass: allow; else, without repair: deny; with repair: every failing parameter must
///   get exactly one distinct trusted candidate value, and the repaired call must pass.
///
/// The decision borrows from what `input` borrows (the call, the entries); its texts are
/// written when asked for ([`GateDecision::summary`], [`ParamReason::message`]).
pub fn decide<'a>(policy: &Policy, input: &GateInput<'a>) -> Result<GateDecision<'a>, GateError> {
    validate(input)?;
    let Some(tool) = policy.tools.get(&input.call.name) else {
        return Ok(finish(
            policy,
            input,
            Decision::Allow,
            Summary::NotSensitive,
            Vec::new(),
            Vec::new(),
        ));
    };
    let mut scratch = String::new();
    let entries = Entries {
        main: input.context,
        extra: &[],
    };
    let checked = check_all(policy, tool, input, entries, &[], &mut scratch)?;
    let (decision, says) = if !checked.iter().any(|r| r.outcome.fails()) {
        (Decision::Allow, Summary::Allowed)
    } else if !input.repair {
        (Decision::Deny, Summary::Denied)
    } else {
        return super::repair::attempt(policy, tool, input, checked, &mut scratch);
    };
    Ok(finish(policy, input, decision, says, checked, Vec::new()))
}

/// Every citation and attribution must name an entry of the context.
fn validate(input: &GateInput<'_>) -> Result<(), GateError> {
    let known = |id: &EntryId| input.context.iter().any(|e| e.id == *id);
    for (param, ids) in input.citations {
        if let Some(id) = ids.iter().find(|id| !known(id)) {
            return Err(GateError::UnknownCitation {
                param: param.clone(),
                id: *id,
            });
        }
    }
    for (param, weights) in input.attribution {
        if let Some((id, _)) = weights.iter().find(|(id, _)| !known(id)) {
            return Err(GateError::UnknownAttribution {
                param: param.clone(),
                id: *id,
            });
        }
    }
    Ok(())
}

/// Checks every parameter `tool` names against the call's arguments, with the values of
/// `replaced` instead of the call's for the parameters they name (whose citations no longer
/// apply).
pub(crate) fn check_all<'a>(
    policy: &Policy,
    tool: &ToolPolicy,
    input: &GateInput<'a>,
    entries: Entries<'_, 'a>,
    replaced: &[Repair],
    scratch: &mut String,
) -> Result<Vec<ParamReason<'a>>, GateError> {
    let prepared = input.prepared.filter(|p| p.matches(entries.main));
    let mut out = Vec::with_capacity(tool.params.len());
    let mut spare = Vec::new();
    for (name, pp) in &tool.params {
        // The name is borrowed from the call where the call has the parameter.
        let (param, given) = match input.call.arguments.get_key_value(name) {
            Some((k, v)) => (Cow::Borrowed(k.as_str()), Some(v)),
            None => (Cow::Owned(name.clone()), None),
        };
        let new = replaced.iter().find(|r| r.param == *name);
        let raw = match new {
            Some(r) => Some(Cow::Owned(r.new.clone())),
            None => given.map(Cow::Borrowed),
        };
        let Some(raw) = raw.filter(|v| !v.is_null()) else {
            out.push(ParamReason {
                param,
                outcome: Outcome::Absent,
                via: Via::None,
                justifying: Vec::new(),
                label: None,
                offending: None,
                taint_path: Vec::new(),
                said: Said::Absent,
            });
            continue;
        };
        let value = pp.kind.normalise(&raw).map_err(|e| GateError::Value {
            tool: input.call.name.clone(),
            param: name.clone(),
            problem: e.problem,
        })?;
        let citations = if new.is_some() {
            None
        } else {
            input
                .citations
                .get(name)
                .map(Vec::as_slice)
                .filter(|c| !c.is_empty())
        };
        let traced = trace(
            &TraceArgs {
                kind: &pp.kind,
                value: &value,
                citations,
                verify_citations: policy.citations == Citations::Verify,
                attribution: input.attribution.get(name).map(Vec::as_slice),
                tau: input.tau,
                entries,
                prepared,
            },
            scratch,
            std::mem::take(&mut spare),
        );
        let judged = judge(policy, pp, &value, &traced, input, scratch);
        let (reason, list) = reason_for(param, pp, raw, traced, judged);
        spare = list;
        out.push(reason);
    }
    Ok(out)
}

/// The reason for a traced parameter, and the trace's list of entries for the next one.
fn reason_for<'a>(
    param: Cow<'a, str>,
    pp: &ParamPolicy,
    value: Cow<'a, Value>,
    t: Traced<'a>,
    judged: Option<Judgement<'a>>,
) -> (ParamReason<'a>, Vec<&'a ContextEntry>) {
    let justifying: Vec<EntryId> = t.justifying.iter().map(|e| e.id).collect();
    let label = judged.as_ref().map(|j| j.label);
    let via = if judged.is_none() && t.via == Via::Attribution {
        Via::None
    } else {
        t.via
    };
    let (outcome, offending, taint_path, finding) = match judged {
        None => {
            let allowed = pp.unjustified == Unjustified::Allow;
            let outcome = if allowed {
                Outcome::UnjustifiedAllowed
            } else {
                Outcome::UnjustifiedDenied
            };
            let weak = t.via == Via::Attribution;
            (
                outcome,
                None,
                Vec::new(),
                Finding::Unjustified { allowed, weak },
            )
        }
        Some(j) => {
            let trusted = j.label <= pp.require;
            let (outcome, offending, path) = if trusted {
                (Outcome::Justified, None, Vec::new())
            } else {
                (Outcome::Untrusted, Some(j.decisive.id), j.path.into_owned())
            };
            let finding = Finding::Judged(Judged {
                how: t.via,
                carriers: t.justifying.len(),
                decisive: j.decisive,
                label: j.label,
                require: pp.require,
                rule: j.rule,
                raised_by: j.raised_by,
                overruled: j.overruled,
            });
            (outcome, offending, path, finding)
        }
    };
    let reason = ParamReason {
        param,
        outcome,
        via,
        justifying,
        label,
        offending,
        taint_path,
        said: Said::Checked(Facts {
            value,
            finding,
            ignored: t.ignored_citations,
            repair: None,
        }),
    };
    (reason, t.justifying)
}

/// Assembles the decision; `repairs` are the replaced parameters of a repair.
pub(crate) fn finish<'a>(
    policy: &Policy,
    input: &GateInput<'a>,
    decision: Decision,
    says: Summary,
    reasons: Vec<ParamReason<'a>>,
    repairs: Vec<Repair>,
) -> GateDecision<'a> {
    let call = input.call;
    let dispatched = match policy.mode {
        Mode::Enforce => decision != Decision::Deny,
        Mode::Record => true,
    };
    // Only a repair in enforce mode dispatches other arguments than the call's.
    let arguments = if policy.mode == Mode::Enforce && !repairs.is_empty() {
        let mut args = call.arguments.clone();
        for r in &repairs {
            args.insert(r.param.clone(), r.new.clone());
        }
        Cow::Owned(args)
    } else {
        Cow::Borrowed(&call.arguments)
    };
    GateDecision {
        decision,
        tool: Cow::Borrowed(&call.name),
        mode: policy.mode,
        dispatched,
        reasons,
        arguments,
        repairs,
        says,
    }
}
