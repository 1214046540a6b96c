//! The decision: check every parameter the policy names, then allow, deny or repair.

use super::error::GateError;
use super::judge::{Judgement, judge};
use super::param_type::shown;
use super::policy::{Citations, Mode, ParamPolicy, Policy, ToolPolicy, Unjustified};
use super::trace::{Entries, TraceArgs, Traced, trace};
use super::{ContextEntry, Decision, GateDecision, GateInput, Outcome, ParamReason, Repair, Via};
use crate::hash::EntryId;
use serde_json::{Map, Value};

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
pub fn decide(policy: &Policy, input: &GateInput<'_>) -> Result<GateDecision, GateError> {
    validate(input)?;
    let call = input.call;
    let Some(tool) = policy.tools.get(&call.name) else {
        return Ok(finish(
            policy,
            input,
            Decision::Allow,
            format!(
                "Tool `{}` is not named in the policy, so it is not sensitive: allowed.",
                call.name
            ),
            Vec::new(),
            None,
            Vec::new(),
        ));
    };
    let mut scratch = String::new();
    let entries = Entries {
        main: input.context,
        extra: &[],
    };
    let checked = check_all(
        policy,
        tool,
        &call.arguments,
        input,
        entries,
        &[],
        &mut scratch,
    )?;
    let failing = failing_names(&checked);
    if failing.is_empty() {
        let checked_n = checked
            .iter()
            .filter(|c| c.reason.outcome != Outcome::Absent)
            .count();
        let lax = checked
            .iter()
            .filter(|c| c.reason.outcome == Outcome::UnjustifiedAllowed)
            .count();
        let mut summary = format!(
            "Allowed: {checked_n} checked parameter{} of `{}`, none fails",
            plural(checked_n),
            call.name
        );
        if lax > 0 {
            summary.push_str(&format!(" ({lax} unjustified, which the policy allows)"));
        }
        summary.push('.');
        let reasons = checked.into_iter().map(|c| c.reason).collect();
        return Ok(finish(
            policy,
            input,
            Decision::Allow,
            summary,
            reasons,
            None,
            Vec::new(),
        ));
    }
    if !input.repair {
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
    super::repair::attempt(policy, tool, input, checked, &mut scratch)
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

/// One checked parameter.
pub(crate) struct Checked<'p> {
    pub(crate) name: &'p str,
    pub(crate) policy: &'p ParamPolicy,
    pub(crate) reason: ParamReason,
}

pub(crate) fn failing_names<'p>(checked: &[Checked<'p>]) -> Vec<&'p str> {
    checked
        .iter()
        .filter(|c| c.reason.outcome.fails())
        .map(|c| c.name)
        .collect()
}

/// Checks every parameter `tool` names against `args`; citations of the parameters in
/// `uncited` are ignored (their values were replaced by a repair).
pub(crate) fn check_all<'p>(
    policy: &Policy,
    tool: &'p ToolPolicy,
    args: &Map<String, Value>,
    input: &GateInput<'_>,
    entries: Entries<'_>,
    uncited: &[&str],
    scratch: &mut String,
) -> Result<Vec<Checked<'p>>, GateError> {
    let prepared = input.prepared.filter(|p| p.matches(entries.main));
    let mut out = Vec::with_capacity(tool.params.len());
    for (name, pp) in &tool.params {
        let reason = match args.get(name).filter(|v| !v.is_null()) {
            None => ParamReason {
                param: name.clone(),
                outcome: Outcome::Absent,
                via: Via::None,
                justifying: Vec::new(),
                label: None,
                offending: None,
                taint_path: Vec::new(),
                message: format!("`{name}` is not in the call: nothing to check."),
            },
            Some(raw) => {
                let value = pp.kind.normalise(raw).map_err(|e| GateError::Value {
                    tool: input.call.name.clone(),
                    param: name.clone(),
                    problem: e.problem,
                })?;
                let citations = if uncited.contains(&name.as_str()) {
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
                );
                let judged = judge(policy, pp, &value, &traced, input, scratch);
                reason_for(name, pp, raw, &traced, judged.as_ref())
            }
        };
        out.push(Checked {
            name,
            policy: pp,
            reason,
        });
    }
    Ok(out)
}

/// A JSON value in a message.
pub(crate) fn show_json(v: &Value) -> String {
    match v {
        Value::String(s) => shown(s),
        other => {
            let s = other.to_string();
            if s.chars().count() > 80 {
                format!("{}…", s.chars().take(80).collect::<String>())
            } else {
                s
            }
        }
    }
}

/// `entry 1a2b3c4d5e6f (EXTERNAL, tool_output by `mail`)`.
pub(crate) fn entry_desc(e: &ContextEntry) -> String {
    format!(
        "entry {} ({}, {} by `{}`)",
        e.id.short(),
        e.label,
        e.kind,
        e.writer
    )
}

fn path_desc(path: &[EntryId]) -> String {
    if path.is_empty() {
        return "no lineage path to an untrusted root was supplied".to_string();
    }
    let hops: Vec<String> = path.iter().map(EntryId::short).collect();
    format!("lineage to the untrusted root: {}", hops.join(" → "))
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn reason_for(
    name: &str,
    pp: &ParamPolicy,
    raw: &Value,
    t: &Traced<'_>,
    judged: Option<&Judgement<'_>>,
) -> ParamReason {
    let val = show_json(raw);
    let justifying: Vec<EntryId> = t.justifying.iter().map(|e| e.id).collect();
    let mut note = String::new();
    if !t.ignored_citations.is_empty() {
        let ids: Vec<String> = t.ignored_citations.iter().map(EntryId::short).collect();
        note = format!(
            " Cited {} {} not carry the value and {} ignored.",
            if ids.len() == 1 { "entry" } else { "entries" },
            ids.join(", ") + if ids.len() == 1 { " does" } else { " do" },
            if ids.len() == 1 { "was" } else { "were" },
        );
    }
    let how = match t.via {
        Via::Citation => "citation of",
        Via::ValueMatch => "its value in",
        Via::Attribution => "attribution to",
        Via::None => "",
    };
    let (outcome, offending, taint_path, message) = match judged {
        None => {
            let (outcome, verb) = match pp.unjustified {
                Unjustified::Allow => (Outcome::UnjustifiedAllowed, "allows"),
                Unjustified::Deny => (Outcome::UnjustifiedDenied, "denies"),
            };
            let weak = if t.via == Via::Attribution {
                " (attribution gives no edge above τ and no taint)"
            } else {
                ""
            };
            (
                outcome,
                None,
                Vec::new(),
                format!(
                    "No entry of the context justifies `{name}` = {val} (no citation, no entry carrying the value, no attribution above τ){weak}; the policy {verb} unjustified values.{note}"
                ),
            )
        }
        Some(j) => {
            let mut about = String::new();
            if let Some(rule) = &j.rule {
                about.push_str(&format!(" ({rule})"));
            }
            if let Some(origin) = j.raised_by {
                about.push_str(&format!(
                    ", whose value first appears in its ancestor {} (value provenance: {})",
                    origin.short(),
                    j.label
                ));
            }
            if j.label <= pp.require {
                let n = t.justifying.len();
                let mut m = format!(
                    "`{name}` = {val} is justified by {how} {n} entr{}, the decisive one being {}{about}, within the required {}.",
                    if n == 1 { "y" } else { "ies" },
                    entry_desc(j.decisive),
                    pp.require
                );
                if !j.overruled.is_empty() {
                    let ids: Vec<String> = j.overruled.iter().map(EntryId::short).collect();
                    m.push_str(&format!(
                        " Less trusted {} {} carr{} the value too; a trusted carrier suffices (carriers = \"any\").",
                        if ids.len() == 1 { "entry" } else { "entries" },
                        ids.join(", "),
                        if ids.len() == 1 { "ies" } else { "y" }
                    ));
                }
                m.push_str(&note);
                (Outcome::Justified, None, Vec::new(), m)
            } else {
                (
                    Outcome::Untrusted,
                    Some(j.decisive.id),
                    j.path.clone(),
                    format!(
                        "`{name}` = {val} is justified by {how} {}{about}, less trusted than the required {}; {}.{note}",
                        entry_desc(j.decisive),
                        pp.require,
                        path_desc(&j.path)
                    ),
                )
            }
        }
    };
    ParamReason {
        param: name.to_string(),
        outcome,
        via: if judged.is_none() && t.via == Via::Attribution {
            Via::None
        } else {
            t.via
        },
        justifying,
        label: judged.map(|j| j.label),
        offending,
        taint_path,
        message,
    }
}

/// `` `a` ``, `` `a` and `b` ``, `` `a`, `b` and `c` ``.
pub(crate) fn name_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

pub(crate) fn deny_summary(failing: &[&str], tool: &str) -> String {
    format!(
        "Denied: {} of `{tool}` {} not justified within the required label.",
        name_list(failing),
        if failing.len() == 1 { "is" } else { "are" }
    )
}

/// Assembles the decision; `repaired` holds the repaired arguments of a repair.
pub(crate) fn finish(
    policy: &Policy,
    input: &GateInput<'_>,
    decision: Decision,
    mut summary: String,
    reasons: Vec<ParamReason>,
    repaired: Option<Map<String, Value>>,
    repairs: Vec<Repair>,
) -> GateDecision {
    let dispatched = match policy.mode {
        Mode::Enforce => decision != Decision::Deny,
        Mode::Record => true,
    };
    let arguments = match (policy.mode, repaired) {
        (Mode::Enforce, Some(args)) => args,
        _ => input.call.arguments.clone(),
    };
    if policy.mode == Mode::Record {
        summary.push_str(" Record mode: the call is dispatched as made.");
    }
    GateDecision {
        decision,
        tool: input.call.name.clone(),
        mode: policy.mode,
        dispatched,
        summary,
        reasons,
        arguments,
        repairs,
    }
}
