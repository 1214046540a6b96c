//! `memlineage forget` and `memlineage distrust`: signed control records.

use super::{IdArg, open, parse_id, parse_name, refused, resolve_id, target_json};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{ArgGroup, Args};
use memlineage::PrincipalName;
use memlineage_core::records::DistrustTarget;
use serde_json::json;

/// `memlineage forget`.
#[derive(Args, Debug)]
pub struct ForgetArgs {
    /// The entry to forget (id or unique prefix of ≥ 8 hex).
    #[arg(value_parser = parse_id)]
    id: IdArg,
    /// Also erase the content bytes (the leaf and every proof still verify).
    #[arg(long)]
    erase: bool,
    /// Why (recorded in the signed tombstone).
    #[arg(long, default_value = "")]
    reason: String,
    /// The trusted principal that signs the tombstone (default: the operator).
    #[arg(long = "as", value_name = "PRINCIPAL", value_parser = parse_name)]
    writer: Option<PrincipalName>,
}

/// `memlineage distrust`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("target").required(true).args(["id", "principal"])))]
pub struct DistrustArgs {
    /// The entry to distrust (id or unique prefix of ≥ 8 hex).
    #[arg(value_parser = parse_id)]
    id: Option<IdArg>,
    /// Distrust every entry this principal ever wrote.
    #[arg(long, value_parser = parse_name, conflicts_with = "id")]
    principal: Option<PrincipalName>,
    /// Why (recorded in the signed distrust record).
    #[arg(long, default_value = "")]
    reason: String,
    /// The trusted principal that signs the record (default: the operator).
    #[arg(long = "as", value_name = "PRINCIPAL", value_parser = parse_name)]
    writer: Option<PrincipalName>,
}

/// Runs `forget`.
pub fn forget(a: ForgetArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let target = resolve_id(&mem, &a.id)?;
    let writer = match a.writer {
        Some(w) => w,
        None => mem.operator()?,
    };
    let w = mem
        .forget(&writer, &target, a.erase, &a.reason)
        .map_err(|e| refused(e, &ctx.paths))?;
    let json = json!({
        "id": w.id.to_hex(),
        "index": w.index,
        "target": target.to_hex(),
        "erased": a.erase,
        "reason": a.reason,
        "writer": writer,
    });
    let text = format!(
        "Forgot {target} with tombstone {} (index {}){}",
        w.id,
        w.index,
        if a.erase {
            "; its content is erased, its leaf and proofs still verify"
        } else {
            ""
        }
    );
    Ok(Outcome::ok(json, text))
}

/// Runs `distrust`.
pub fn distrust(a: DistrustArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let target = match (&a.id, &a.principal) {
        (Some(id), _) => DistrustTarget::Entry(resolve_id(&mem, id)?),
        (None, Some(p)) => DistrustTarget::Principal(p.to_string()),
        (None, None) => {
            return Err(CliError::usage(
                "give an entry id or --principal NAME to distrust",
            ));
        }
    };
    let writer = match a.writer {
        Some(w) => w,
        None => mem.operator()?,
    };
    let w = mem
        .distrust(&writer, target.clone(), &a.reason)
        .map_err(|e| match e {
            memlineage::Error::Input(memlineage::error::InputError::UnknownPrincipal(p)) => {
                CliError::failed(format!(
                    "principal `{p}` is not registered (see `memlineage principal list`)"
                ))
            }
            e => refused(e, &ctx.paths),
        })?;
    let mut json = json!({
        "id": w.id.to_hex(),
        "index": w.index,
        "target": target_json(&target),
        "reason": a.reason,
        "writer": writer,
    });
    let what = match &target {
        DistrustTarget::Entry(id) => {
            let label = mem.get(id)?.effective_label;
            json["target_effective_label"] = json!(label.as_str());
            format!("entry {id} (effective label now {label})")
        }
        DistrustTarget::Principal(p) => format!("every entry written by `{p}`"),
    };
    let text = format!(
        "Distrusted {what} with record {} (index {}).\nDescendants through strong edges have their effective labels raised; see `memlineage log`.",
        w.id, w.index
    );
    Ok(Outcome::ok(json, text))
}
