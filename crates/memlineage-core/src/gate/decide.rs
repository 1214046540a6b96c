//! The decision: check every parameter the policy names, then allow, deny or repair.

use super::error::GateError;
use super::judge::{Judgement, judge};
use super::message::{Facts, Finding, Judged, Said};
use super::param_type::{ParamType, ParamValue};
use super::path;
use super::policy::{Carriers, Citations, Mode, Policy, ToolPolicy, Unjustified, Unlisted};
use super::summary::Summary;
use super::trace::{Entries, TraceArgs, Traced, look_carriers, trace};
use super::{ContextEntry, Decision, GateDecision, GateInput, Outcome, ParamReason, Repair, Via};
use crate::hash::EntryId;
use crate::label::TrustLabel;
use serde_json::Value;
use std::borrow::Cow;

/// Decides on `input.call` under `policy`.
///
/// Errors (never a panic) for malformed input: a citation or attribution naming an entry that
/// is not in the context, a checked value that is not of its type, or arguments whose shape a
/// parameter path cannot follow. The rules are in `docs/gate.md`:
///
/// - a tool the policy does not name is not sensitive: allow (under `default = "deny"`: deny);
/// - every value each parameter path reaches is traced (citation, else value match, else
///   attribution, the call judged as a derived entry under τ and the fallback); each carrier
///   counts at its value label (value provenance), and the most trusted carrier (`carriers =
///   "any"`) or the least trusted one (`"all"`) decides; it passes when that label is at or
///   below `require`, or when nothing justifies it and the policy allows unjustified values; a
///   value absent from the call (or `null`) is not checked; an untrusted entry that carries the
///   value only by look fails it when no entry justifies it (under `all`: always);
/// - under `default = "deny"`, an argument no path covers fails;
/// - all pass: allow; else, without repair: deny; with repair: every failing value must get
///   exactly one distinct trusted candidate value, and the repaired call must pass.
///
/// The decision borrows from what `input` borrows (the call, the entries); its texts are
/// written when asked for ([`GateDecision::summary`], [`ParamReason::message`]).
pub fn decide<'a>(policy: &Policy, input: &GateInput<'a>) -> Result<GateDecision<'a>, GateError> {
    validate(input)?;
    let Some(tool) = policy.tools.get(&input.call.name) else {
        let (decision, says) = match policy.default {
            Unlisted::Allow => (Decision::Allow, Summary::NotSensitive),
            Unlisted::Deny => (Decision::Deny, Summary::NotNamedDenied),
        };
        return Ok(finish(
            policy,
            input,
            decision,
            says,
            Vec::new(),
            Vec::new(),
        ));
    };
    let mut scratch = String::new();
    let entries = Entries {
        main: input.context,
        extra: &[],
    };
    let (reasons, meta) = check_all(policy, tool, input, entries, &[], &mut scratch)?;
    let (decision, says) = if !reasons.iter().any(|r| r.outcome.fails()) {
        (Decision::Allow, Summary::Allowed)
    } else if let Some(confirmations) = super::confirm::collect(&reasons) {
        // Before repair: the user's request named the document these values come from, so
        // replacing them with other values would not do what the user asked.
        let mut d = finish(
            policy,
            input,
            Decision::Confirm,
            Summary::Confirm,
            reasons,
            Vec::new(),
        );
        d.confirmations = confirmations;
        return Ok(d);
    } else if !input.repair {
        (Decision::Deny, Summary::Denied)
    } else {
        return super::repair::attempt(policy, tool, input, reasons, &meta, &mut scratch);
    };
    Ok(finish(policy, input, decision, says, reasons, Vec::new()))
}

/// Every citation, attribution and source must name an entry of the context.
fn validate(input: &GateInput<'_>) -> Result<(), GateError> {
    let known = |id: &EntryId| input.context.iter().any(|e| e.id == *id);
    if let Some((id, document)) = input.sources.iter().find(|(id, _)| !known(id)) {
        return Err(GateError::UnknownSource {
            id: *id,
            document: document.clone(),
        });
    }
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

/// What repair needs to know about one checked value (beside its reason).
#[derive(Clone, Copy)]
pub(crate) struct Meta<'p> {
    /// Its type; `None` for an argument no path covers.
    pub(crate) kind: Option<&'p ParamType>,
    /// The least trusted label that may justify it.
    pub(crate) require: TrustLabel,
    /// Whether repair may replace it: a parameter's own value (not a typed value found inside
    /// free text, not an unlisted argument).
    pub(crate) repairable: bool,
}

/// What one value is checked against.
struct Rule<'p> {
    kind: &'p ParamType,
    require: TrustLabel,
    unjustified: Unjustified,
    /// Whether a failing value may be confirmed (the parameter's `confirm`).
    confirm: bool,
}

/// The reasons of the checked values, and beside each what repair needs to know about it.
pub(crate) type Checked<'a, 'p> = (Vec<ParamReason<'a>>, Vec<Meta<'p>>);

/// Checks every value the paths of `tool` reach in the call's arguments, with the values of
/// `replaced` instead of the call's for the concrete paths they name (whose citations no longer
/// apply), then (under `default = "deny"`) the arguments no path covers.
pub(crate) fn check_all<'a, 'p>(
    policy: &Policy,
    tool: &'p ToolPolicy,
    input: &GateInput<'a>,
    entries: Entries<'_, 'a>,
    replaced: &[Repair],
    scratch: &mut String,
) -> Result<Checked<'a, 'p>, GateError> {
    let prepared = input.prepared.filter(|p| p.matches(entries.main));
    let mut cx = Cx {
        policy,
        input,
        entries,
        prepared,
        scratch,
        spare: Vec::new(),
        designated: None,
    };
    let args = &input.call.arguments;
    let mut out = Vec::with_capacity(tool.params.len());
    // What repair needs, kept only when a repair may be tried.
    let keep = input.repair;
    let mut meta = Vec::with_capacity(if keep { tool.params.len() } else { 0 });
    for (name, pp) in &tool.params {
        let value_error = |problem: String| GateError::Value {
            tool: input.call.name.clone(),
            param: name.clone(),
            problem,
        };
        let simple = path::Pattern::is_simple(name);
        let found = if simple {
            args.get_key_value(name.as_str())
        } else {
            None
        };
        let (one, many) = match found {
            // The common case: one named argument, its name borrowed from the call.
            Some((k, v)) if !v.is_array() => (
                Some(path::Reached {
                    path: Cow::Borrowed(k.as_str()),
                    value: Some(v),
                }),
                Vec::new(),
            ),
            None if simple => (
                Some(path::Reached {
                    path: Cow::Owned(name.clone()),
                    value: None,
                }),
                Vec::new(),
            ),
            _ => (None, path::resolve(name, args, true).map_err(value_error)?),
        };
        let rule = Rule {
            kind: &pp.kind,
            require: pp.require,
            unjustified: pp.unjustified,
            confirm: policy.confirm_for(pp),
        };
        for r in one.into_iter().chain(many) {
            let new = replaced.iter().find(|x| x.param == *r.path);
            let raw = match new {
                Some(x) => Some(Cow::Owned(x.new.clone())),
                None => r.value.map(Cow::Borrowed),
            };
            let Some(raw) = raw.filter(|v| !v.is_null()) else {
                out.push(absent(r.path));
                if keep {
                    meta.push(Meta {
                        kind: Some(&pp.kind),
                        require: pp.require,
                        repairable: true,
                    });
                }
                continue;
            };
            let value = pp.kind.normalise(&raw).map_err(|e| GateError::Value {
                tool: input.call.name.clone(),
                param: r.path.to_string(),
                problem: e.problem,
            })?;
            let keyed = |m: &'a std::collections::BTreeMap<String, Vec<_>>| {
                m.get(&*r.path).or_else(|| m.get(name))
            };
            let citations = if new.is_some() {
                None
            } else {
                keyed(input.citations)
                    .map(Vec::as_slice)
                    .filter(|c| !c.is_empty())
            };
            let attribution = input
                .attribution
                .get(&*r.path)
                .or_else(|| input.attribution.get(name))
                .map(Vec::as_slice);
            let inner = match (&*raw, pp.typed_values.is_empty()) {
                (Value::String(s), false) => Some((s.clone(), r.path.clone().into_owned())),
                _ => None,
            };
            cx.check(&mut out, r.path, &rule, raw, &value, citations, attribution);
            if keep {
                meta.push(Meta {
                    kind: Some(&pp.kind),
                    require: pp.require,
                    repairable: true,
                });
            }
            if let Some((text, path_text)) = inner {
                for t in &pp.typed_values {
                    let rule = Rule {
                        kind: t,
                        require: pp.require,
                        unjustified: pp.typed_unjustified,
                        confirm: policy.confirm_for(pp),
                    };
                    let mut seen: Vec<super::NormValue> = Vec::new();
                    for v in t.extract(&text) {
                        if seen.contains(&v) {
                            continue;
                        }
                        let shown = Value::String(v.to_string());
                        let sub = format!("{path_text}.{}[{}]", t.name(), seen.len());
                        let pv = ParamValue::one(v.clone());
                        seen.push(v);
                        cx.check(
                            &mut out,
                            Cow::Owned(sub),
                            &rule,
                            Cow::Owned(shown),
                            &pv,
                            None,
                            None,
                        );
                        if keep {
                            meta.push(Meta {
                                kind: Some(t),
                                require: pp.require,
                                repairable: false,
                            });
                        }
                    }
                }
            }
        }
    }
    if policy.default_for(tool) == Unlisted::Deny {
        for p in path::uncovered(args, tool.params.keys().map(String::as_str)) {
            out.push(ParamReason {
                param: Cow::Owned(p),
                outcome: Outcome::Unlisted,
                via: Via::None,
                justifying: Vec::new(),
                label: None,
                offending: None,
                taint_path: Vec::new(),
                said: Said::Unlisted,
            });
            if keep {
                meta.push(Meta {
                    kind: None,
                    require: TrustLabel::Trusted,
                    repairable: false,
                });
            }
        }
    }
    Ok((out, meta))
}

/// The reason of a value that is not in the call.
fn absent(param: Cow<'_, str>) -> ParamReason<'_> {
    ParamReason {
        param,
        outcome: Outcome::Absent,
        via: Via::None,
        justifying: Vec::new(),
        label: None,
        offending: None,
        taint_path: Vec::new(),
        said: Said::Absent,
    }
}

/// What every check of one decision shares.
struct Cx<'x, 's, 'a> {
    policy: &'x Policy,
    input: &'x GateInput<'a>,
    entries: Entries<'s, 'a>,
    prepared: Option<&'x super::PreparedContext>,
    scratch: &'x mut String,
    /// The justifying list of the last trace, reused.
    spare: Vec<&'a ContextEntry>,
    /// The context entries read from a document the user's request names, found when a value
    /// first may be confirmed.
    designated: Option<Vec<super::confirm::Designated>>,
}

impl<'a> Cx<'_, '_, 'a> {
    /// Traces and judges one value, and appends its reason to `out`.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn check(
        &mut self,
        out: &mut Vec<ParamReason<'a>>,
        param: Cow<'a, str>,
        rule: &Rule<'_>,
        raw: Cow<'a, Value>,
        value: &ParamValue,
        citations: Option<&[EntryId]>,
        attribution: Option<&[(EntryId, crate::label::Weight)]>,
    ) {
        let args = TraceArgs {
            kind: rule.kind,
            value,
            citations,
            verify_citations: self.policy.citations == Citations::Verify,
            all_carriers: self.policy.carriers == Carriers::All,
            attribution,
            tau: self.input.tau,
            entries: self.entries,
            prepared: self.prepared,
        };
        let traced = trace(&args, self.scratch, std::mem::take(&mut self.spare));
        let mut looks = |exact: &[&'a ContextEntry]| look_carriers(&args, exact);
        let judged = judge(
            self.policy,
            rule.kind,
            rule.require,
            value,
            &traced,
            self.input,
            &mut looks,
            rule.unjustified == Unjustified::Allow,
        );
        let confirm = match &judged {
            Some(j) if rule.confirm && j.label > rule.require && !self.input.sources.is_empty() => {
                let input = self.input;
                let designated = self
                    .designated
                    .get_or_insert_with(|| super::confirm::designated(input));
                let failing = super::confirm::Failing {
                    param: &param,
                    kind: rule.kind,
                    value,
                    require: rule.require,
                    carriers: &traced.justifying,
                    judged: j,
                };
                super::confirm::find(self.policy, input, designated, &failing, &mut looks)
            }
            _ => None,
        };
        self.spare = reason_for(out, param, rule, raw, traced, judged, confirm);
    }
}

/// Appends the reason for a traced value to `out`, and returns the trace's list of entries for
/// the next one.
fn reason_for<'a>(
    out: &mut Vec<ParamReason<'a>>,
    param: Cow<'a, str>,
    rule: &Rule<'_>,
    value: Cow<'a, Value>,
    t: Traced<'a>,
    judged: Option<Judgement<'a>>,
    confirm: Option<super::Confirmation>,
) -> Vec<&'a ContextEntry> {
    let (outcome, offending, taint_path, finding, via, justifying) = match judged {
        None => {
            let allowed = rule.unjustified == Unjustified::Allow;
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
                Via::None,
                t.justifying.iter().map(|e| e.id).collect(),
            )
        }
        Some(j) => {
            let trusted = j.label <= rule.require;
            let (outcome, offending, path) = if trusted {
                (Outcome::Justified, None, Vec::new())
            } else {
                (Outcome::Untrusted, Some(j.decisive.id), j.path.into_owned())
            };
            let mut justifying: Vec<EntryId> = t.justifying.iter().map(|e| e.id).collect();
            if j.by_look && !justifying.contains(&j.decisive.id) {
                justifying.push(j.decisive.id);
            }
            let finding = Finding::Judged(Judged {
                how: j.via,
                carriers: j.carriers.max(1),
                decisive: j.decisive,
                by_look: j.by_look,
                label: j.label,
                require: rule.require,
                rule: j.rule,
                raised_by: j.raised_by,
                earlier: j.earlier,
                overruled: j.overruled,
            });
            (outcome, offending, path, finding, j.via, justifying)
        }
    };
    let label = match &finding {
        Finding::Judged(j) => Some(j.label),
        Finding::Unjustified { .. } => None,
    };
    out.push(ParamReason {
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
            confirm,
        }),
    });
    t.justifying
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
        Mode::Enforce => decision.dispatches(),
        Mode::Record => true,
    };
    // Only a repair in enforce mode dispatches other arguments than the call's.
    let arguments = if policy.mode == Mode::Enforce && !repairs.is_empty() {
        let mut args = call.arguments.clone();
        for r in &repairs {
            path::set(&mut args, &r.param, r.new.clone());
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
        confirmations: Vec::new(),
        says,
    }
}
