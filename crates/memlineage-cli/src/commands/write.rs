//! `memlineage write`: one signed entry, labelled from its parents at write time.

use super::attribute::{AttributorOptions, attribution_json, parse_algorithm};
use super::{
    IdArg, Mem, ParentArg, attribute, open, parse_content_kind, parse_fallback, parse_meta,
    parse_name, parse_parent, parse_scope, parse_weight, refused, resolve_id,
};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use memlineage::attribution::{Algorithm, AttributedParents};
use memlineage::{AttributionName, PrincipalName, WriteRequest, Written};
use memlineage_core::Hash256;
use memlineage_core::entry::{EntryKind, Parent, Scope};
use memlineage_core::label::{Fallback, TrustClass, Weight};
use serde_json::json;
use std::io::{IsTerminal, Read};

/// `memlineage write`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// The content. Read from stdin when absent or `-`.
    content: Option<String>,
    /// The writer principal (its secret key must be in the store's key directory).
    #[arg(long = "as", value_name = "PRINCIPAL", default_value = "agent", value_parser = parse_name)]
    writer: PrincipalName,
    /// user_input, tool_output, observation or derived. Default: derived with parents, else
    /// observation (tool_output for an external writer).
    #[arg(long, value_parser = parse_content_kind)]
    kind: Option<EntryKind>,
    /// A parent entry (id or unique prefix of ≥ 8 hex) with an optional weight in [0, 1].
    /// Repeatable. Without weights: weight 1, attribution `coarse`; with: `explicit`.
    #[arg(long = "parent", value_name = "ID[:WEIGHT]", value_parser = parse_parent)]
    parents: Vec<ParentArg>,
    /// Scope, a namespace path such as tenant/agent/user/session.
    #[arg(long, value_parser = parse_scope)]
    scope: Option<Scope>,
    /// τ for this entry (default: the store's).
    #[arg(long, value_parser = parse_weight)]
    tau: Option<Weight>,
    /// Fallback for this entry: strict or permissive (default: the store's).
    #[arg(long, value_parser = parse_fallback)]
    fallback: Option<Fallback>,
    /// Where the content came from (a URL, a file name…); its SHA-256 is signed as h_src.
    #[arg(long)]
    source: Option<String>,
    /// h_ctx: the SHA-256 (64 hex characters) of exactly the rendered context the writer saw,
    /// e.g. the `context_hash` printed by `memlineage search`. Signed into the entry.
    #[arg(long = "context-hash", value_name = "HEX", value_parser = parse_context_hash)]
    context_hash: Option<Hash256>,
    /// Metadata KEY=VALUE, repeatable.
    #[arg(long = "meta", value_name = "KEY=VALUE", value_parser = parse_meta)]
    meta: Vec<(String, String)>,
    /// Weigh the --parent entries with this attribution algorithm (coarse, lm-self-eval or
    /// attn-attr), the content being the child text, and record its name. The parents are then
    /// given without weights.
    #[arg(long, value_name = "ALGO", value_parser = parse_algorithm)]
    attribution: Option<Algorithm>,
    #[command(flatten)]
    attributor: AttributorOptions,
}

/// The class of `name` in the registry, when it is registered (for the default kind; a write
/// by a principal that is not registered, revoked or without its current key here is refused
/// by the library, and `refused` says why).
fn writer_class(mem: &Mem, name: &PrincipalName) -> Result<Option<TrustClass>, CliError> {
    Ok(mem.registry()?.get(name.as_str()).map(|p| p.class))
}

/// Checks the combination of `--attribution`, its options and `--parent` (usage errors).
fn check_attribution_usage(a: &WriteArgs) -> Result<(), CliError> {
    match a.attribution {
        None if a.attributor.any() => Err(CliError::usage(
            "--judge and --model choose how `--attribution ALGO` weighs the parents: give \
             --attribution too",
        )),
        Some(algo) if a.parents.is_empty() => Err(CliError::usage(format!(
            "--attribution {} weighs the --parent entries: give at least one --parent ID",
            algo.as_str()
        ))),
        Some(algo) => match a.parents.iter().find(|p| p.weight.is_some()) {
            Some(p) => Err(CliError::usage(format!(
                "--parent {}:WEIGHT gives an explicit weight, but --attribution {} computes \
                 the weights: give the parents without weights, or drop --attribution",
                p.id,
                algo.as_str()
            ))),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// Weighs the parents with the `--attribution` algorithm, the content being the child text.
fn attribute_parents(
    mem: &Mem,
    a: &WriteArgs,
    content: &[u8],
) -> Result<Option<AttributedParents>, CliError> {
    let Some(algo) = a.attribution else {
        return Ok(None);
    };
    let child = std::str::from_utf8(content).map_err(|e| {
        CliError::usage(format!(
            "--attribution needs text content (the child text the parents are weighed \
             against), but the content is not UTF-8: {e}"
        ))
    })?;
    let attributor = attribute::build(algo, &a.attributor)?;
    let ids: Vec<IdArg> = a.parents.iter().map(|p| p.id.clone()).collect();
    attribute::weigh(mem, attributor.as_ref(), child, &ids).map(Some)
}

/// Builds the write request from the arguments (parents resolved against the log, or
/// weighed by `--attribution`).
fn request(
    mem: &Mem,
    a: WriteArgs,
    class: Option<TrustClass>,
    content: Vec<u8>,
    attributed: Option<&AttributedParents>,
) -> Result<WriteRequest, CliError> {
    let mut parents = Vec::with_capacity(a.parents.len());
    match attributed {
        Some(w) => parents.clone_from(&w.parents),
        None => {
            for p in &a.parents {
                parents.push(Parent {
                    id: resolve_id(mem, &p.id)?,
                    weight: p.weight.unwrap_or(Weight::ONE),
                });
            }
        }
    }
    let kind = a.kind.unwrap_or(if !parents.is_empty() {
        EntryKind::Derived
    } else if class == Some(TrustClass::External) {
        EntryKind::ToolOutput
    } else {
        EntryKind::Observation
    });
    let mut req = WriteRequest::new(&a.writer, kind, content);
    if !parents.is_empty() {
        let attribution = match attributed {
            Some(w) => w.attribution.clone(),
            None if a.parents.iter().any(|p| p.weight.is_some()) => AttributionName::EXPLICIT,
            None => AttributionName::COARSE,
        };
        req = req.with_parents(parents, attribution);
    }
    if let Some(s) = a.scope {
        req = req.with_scope(s);
    }
    if let Some(src) = &a.source {
        req = req.with_source(Hash256::of(src.as_bytes()));
    }
    if let Some(ctx) = a.context_hash {
        req = req.with_context(ctx);
    }
    req = req.with_label_rule(a.tau, a.fallback);
    for (k, v) in &a.meta {
        req = req.with_meta(k, v);
    }
    Ok(req)
}

/// Runs `write`.
pub fn run(a: WriteArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    check_attribution_usage(&a)?;
    let content = match a.content.as_deref() {
        None | Some("-") => {
            if std::io::stdin().is_terminal() {
                eprintln!("reading the content from stdin (end it with Ctrl-D)…");
            }
            let mut buf = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut buf)
                .map_err(|e| CliError::failed(format!("reading the content from stdin: {e}")))?;
            buf
        }
        Some(s) => s.as_bytes().to_vec(),
    };
    if content.is_empty() {
        return Err(CliError::usage(match a.content.as_deref() {
            None | Some("-") => {
                "the content is empty (nothing was read from stdin): give the content as an argument or pipe at least one byte; nothing was written"
            }
            Some(_) => {
                "the content is empty: an entry must hold at least one byte; nothing was written"
            }
        }));
    }
    let mem = open(&ctx.paths)?;
    let class = writer_class(&mem, &a.writer)?;
    let attributed = attribute_parents(&mem, &a, &content)?;
    let req = request(&mem, a, class, content, attributed.as_ref())?;
    let w = mem.write(req).map_err(|e| refused(e, &ctx.paths))?;
    let mut outcome = written_outcome(&w);
    if let Some(weighed) = &attributed {
        if let Some(f) = &weighed.fell_back {
            eprintln!(
                "note: {} fell back to coarse weights (1 for every parent): {}",
                weighed.attribution, f.reason
            );
        }
        outcome.json["attribution"] = attribution_json(weighed);
    }
    Ok(outcome)
}

/// Parses `--context-hash`: 64 hexadecimal characters (clap value parser).
fn parse_context_hash(s: &str) -> Result<Hash256, String> {
    let t = s.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!(
            "`{}` is not a context hash: expected the 64 hexadecimal characters of a SHA-256 (the `context_hash` that `memlineage search` prints)",
            s.chars().take(80).collect::<String>()
        ));
    }
    t.to_ascii_lowercase()
        .parse::<Hash256>()
        .map_err(|e| e.to_string())
}

/// The outcome of a write: the id (text) or `{"id", "index", "label"}`.
pub fn written_outcome(w: &Written) -> Outcome {
    let json = json!({ "id": w.id.to_hex(), "index": w.index, "label": w.label.as_str() });
    Outcome::ok(json, w.id.to_hex())
}
