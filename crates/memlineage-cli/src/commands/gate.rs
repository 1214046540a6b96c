//! `memlineage gate`: decide whether a tool call may be dispatched (M6).

use super::attribute::{AttributorOptions, build, parse_algorithm};
use super::{IdArg, open, parse_id, parse_name, parse_scope, resolve_id};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use memlineage::GateRequest;
use memlineage::attribution::Algorithm;
use memlineage_core::EntryId;
use memlineage_core::entry::Scope;
use memlineage_core::gate::{Decision, GateDecision, Mode, Policy, ToolCall};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Exit code of `gate` when the call is denied (in enforce mode).
pub const EXIT_DENIED: u8 = 3;

/// Exit code of `gate` when the call needs the user's confirmation (in enforce mode): not
/// dispatched until the user approves (`docs/gate.md`, "Confirm").
pub const EXIT_CONFIRM: u8 = 4;

/// `memlineage gate`.
#[derive(Args, Debug)]
pub struct GateArgs {
    /// The policy file (TOML).
    #[arg(long)]
    policy: PathBuf,
    /// The tool call as JSON (OpenAI style: `{"name": …, "arguments": {…}}`), or `-` for stdin.
    #[arg(long)]
    call: String,
    /// The entries in the prompt, including the user's request (ids or prefixes).
    #[arg(long, num_args = 1.., value_parser = parse_id, required = true)]
    context: Vec<IdArg>,
    /// Explicit citation `PARAM=ID` (repeatable).
    #[arg(long = "cite", value_name = "PARAM=ID")]
    cite: Vec<String>,
    /// `ID=DOCUMENT`: the context entry ID was read from DOCUMENT (the tool call's argument
    /// that named it), as the integration that made the call recorded it (repeatable). A call
    /// denied only by values from a document the user's request names is then a confirm, when
    /// the policy allows it.
    #[arg(long = "source", value_name = "ID=DOCUMENT")]
    source: Vec<String>,
    /// Try authority repair when the call would be denied.
    #[arg(long)]
    repair: bool,
    /// Query for repair candidates from the store (default: the user's request, i.e. the text
    /// of the context's `user_input` entries).
    #[arg(long)]
    repair_query: Option<String>,
    /// Scope for the repair retrieval.
    #[arg(long, value_parser = parse_scope)]
    scope: Option<Scope>,
    /// Weigh the context entries as parents of each argument with this attribution algorithm
    /// (coarse, lm-self-eval, attn-attr): the third tracing step, for arguments that no
    /// citation or value match justifies (the call is treated as a derived entry).
    #[arg(long, value_name = "ALGO", value_parser = parse_algorithm)]
    attribution: Option<Algorithm>,
    #[command(flatten)]
    attributor: AttributorOptions,
    /// The principal that signs the decision record (default: agent).
    #[arg(long = "as", value_name = "PRINCIPAL", value_parser = parse_name, default_value = "agent")]
    recorder: memlineage::PrincipalName,
}

/// Runs `gate`.
pub fn gate(a: GateArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let policy_text = std::fs::read_to_string(&a.policy).map_err(|e| {
        CliError::usage(format!(
            "cannot read the policy {}: {e}",
            a.policy.display()
        ))
    })?;
    let policy = Policy::parse(&policy_text)
        .map_err(|e| CliError::usage(format!("{}: {e}", a.policy.display())))?;
    let call_text = if a.call == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        a.call.clone()
    };
    let call = ToolCall::from_openai_json(&call_text)
        .map_err(|e| CliError::usage(format!("--call: {e}")))?;
    let mem = open(&ctx.paths)?;
    let mut context = Vec::with_capacity(a.context.len());
    for c in &a.context {
        let id = resolve_id(&mem, c).map_err(as_bad_input)?;
        if let Err(memlineage::Error::NotFound(_)) = mem.get(&id) {
            return Err(CliError::usage(format!(
                "--context {c}: no entry with this id in the store"
            )));
        }
        context.push(id);
    }
    let mut citations: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for c in &a.cite {
        let (param, id) = c
            .split_once('=')
            .ok_or_else(|| CliError::usage(format!("--cite `{c}`: expected PARAM=ID")))?;
        let id = resolve_id(&mem, &parse_id(id).map_err(CliError::usage)?).map_err(as_bad_input)?;
        citations.entry(param.to_string()).or_default().push(id);
    }
    let mut sources = BTreeMap::new();
    for c in &a.source {
        let (id, document) = c
            .split_once('=')
            .ok_or_else(|| CliError::usage(format!("--source `{c}`: expected ID=DOCUMENT")))?;
        let id = resolve_id(&mem, &parse_id(id).map_err(CliError::usage)?).map_err(as_bad_input)?;
        sources.insert(id, document.to_string());
    }
    if a.attribution.is_none() && a.attributor.any() {
        return Err(CliError::usage(
            "--judge and --model choose how `--attribution ALGO` weighs the context: give \
             --attribution too",
        ));
    }
    let attribution = match a.attribution {
        Some(algo) => {
            let attributor = build(algo, &a.attributor)?;
            mem.attribute_call(attributor.as_ref(), &call, &context)?
        }
        None => BTreeMap::new(),
    };
    let mut req = GateRequest::new(call, context, &a.recorder);
    req.citations = citations;
    req.attribution = attribution;
    req.repair = a.repair;
    req.repair_query = a.repair_query.clone();
    req.scope = a.scope.unwrap_or_default();
    req.sources = sources;
    let out = mem.gate(&policy, &req).map_err(|e| match e {
        // The call, a citation or a parameter value could not be judged: bad input.
        memlineage::Error::Gate(g) => CliError::usage(format!("cannot judge the call: {g}")),
        other => CliError::from(other),
    })?;
    let d = &out.decision;
    let mut json = serde_json::to_value(d).map_err(|e| CliError::failed(e.to_string()))?;
    json["record"] = serde_json::json!(out.record.id.to_hex());
    let text = decision_text(d, &out.record.id);
    let (code, failure) = match (d.decision, policy.mode) {
        (Decision::Deny, Mode::Enforce) => (EXIT_DENIED, Some("the call is denied")),
        (Decision::Confirm, Mode::Enforce) => (
            EXIT_CONFIRM,
            Some("the call needs the user's confirmation: it is not dispatched until they approve"),
        ),
        _ => (0, None),
    };
    Ok(Outcome {
        json,
        text,
        code,
        failure: failure.map(str::to_string),
    })
}

/// An id that names no entry, or names several, is bad input to `gate` (exit 2), so that exit
/// 1 always means the store could not be used.
fn as_bad_input(e: CliError) -> CliError {
    CliError::usage(e.message)
}

/// The text form of a decision: the verdict, one line per checked parameter, the repairs, the
/// arguments to dispatch (for a repair) and the id of the signed decision record. `demo` prints
/// decisions the same way.
pub fn decision_text(d: &GateDecision, record: &EntryId) -> String {
    let mut text = format!("decision: {}\n", d.decision.as_str());
    for r in &d.reasons {
        text.push_str(&format!("  {}: {}\n", r.param, r.message()));
    }
    for r in &d.repairs {
        text.push_str(&format!(
            "  repaired {}: {} -> {} (from entry {}, {})\n",
            r.param,
            r.old,
            r.new,
            r.source.short(),
            r.source_label
        ));
    }
    for c in &d.confirmations {
        let path: Vec<String> = c.path.iter().map(EntryId::short).collect();
        text.push_str(&format!(
            "  confirm {}: from the document {:?} (entry {}), named by the user's request {}; lineage: {}\n",
            c.param,
            c.document,
            c.source.short(),
            c.named_by.short(),
            path.join(" → ")
        ));
    }
    if d.decision == Decision::Repair {
        text.push_str(&format!(
            "  arguments to dispatch: {}\n",
            serde_json::Value::Object(d.arguments.clone().into_owned())
        ));
    }
    text.push_str(&format!("  logged as {record}\n"));
    text
}
