//! `memlineage attribute`: weighs stored parents of a child text with an attribution
//! algorithm, without writing anything (`docs/attribution.md`, "Command line"). The same
//! options serve `memlineage write --attribution`.

use super::{IdArg, Mem, open, parse_id, resolve_id};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use memlineage::attribution::{
    Algorithm, AttributedParents, AttributionError, Attributor, JudgeChoice, Selection,
};
use memlineage_core::EntryId;
use serde_json::json;
use std::path::PathBuf;

/// Parses an algorithm name (clap value parser).
pub fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

/// Parses a judge name (clap value parser).
pub fn parse_judge(s: &str) -> Result<JudgeChoice, String> {
    s.parse()
}

/// How to build the attributor, shared by `attribute` and `write --attribution`.
#[derive(Args, Debug, Clone)]
pub struct AttributorOptions {
    /// The judge of lm-self-eval: local (SmolLM2 decoding under the reply's grammar, feature
    /// `models`; the default), local-scored, openai (feature `openai`;
    /// MEMLINEAGE_JUDGE_BASE_URL, MEMLINEAGE_JUDGE_MODEL, MEMLINEAGE_JUDGE_API_KEY_ENV,
    /// MEMLINEAGE_JUDGE_REPLY_FORMAT) or replay:PATH (recorded replies only, no model).
    #[arg(long, value_name = "JUDGE", value_parser = parse_judge)]
    pub judge: Option<JudgeChoice>,
    /// The local model file (default: $MEMLINEAGE_MODEL, else
    /// $MEMLINEAGE_MODEL_DIR or ~/.cache/memlineage/models; get it with scripts/fetch-model.sh).
    #[arg(long = "model", value_name = "PATH")]
    pub model: Option<PathBuf>,
}

/// `memlineage attribute`.
#[derive(Args, Debug)]
pub struct AttributeArgs {
    /// coarse, lm-self-eval or attn-attr (attn-attr and the local judge need the CLI built
    /// with `--features models`).
    #[arg(long, value_name = "ALGO", value_parser = parse_algorithm)]
    algo: Algorithm,
    /// The child text: what was (or will be) written from the parents.
    #[arg(long, value_name = "TEXT")]
    child: String,
    /// A parent entry (id or unique prefix of ≥ 8 hex). Repeatable; at least one.
    #[arg(long = "parent", value_name = "ID", value_parser = parse_id, required = true)]
    parents: Vec<IdArg>,
    #[command(flatten)]
    options: AttributorOptions,
}

/// The cargo commands that build the CLI with `feature`.
fn build_hint(feature: &str) -> String {
    format!(
        "install the CLI with it (`cargo install --path crates/memlineage-cli --features \
         {feature}`) or run it from the workspace (`cargo run --release -p memlineage-cli \
         --features {feature} -- …`)"
    )
}

impl AttributorOptions {
    /// Whether any option was given (they only apply with an algorithm).
    pub fn any(&self) -> bool {
        self.judge.is_some() || self.model.is_some()
    }
}

/// Builds the attributor the options name, with errors a user can act on.
pub fn build(algo: Algorithm, o: &AttributorOptions) -> Result<Box<dyn Attributor>, CliError> {
    let sel = Selection {
        algorithm: algo,
        judge: o.judge.clone().unwrap_or(JudgeChoice::Local),
        model: o.model.clone(),
    };
    memlineage::attribution::attributor(&sel).map_err(|e| match e {
        AttributionError::Unavailable { what, feature } => CliError::failed(format!(
            "{what} is not in this build of memlineage: {}",
            build_hint(feature)
        )),
        AttributionError::Model(m) => CliError::failed(format!(
            "cannot load the local model for {}: {m}",
            algo.as_str()
        )),
        e => CliError::failed(format!("cannot set up {}: {e}", algo.as_str())),
    })
}

/// Resolves `ids`, fetches the parents through verified retrieval and weighs them.
pub fn weigh(
    mem: &Mem,
    attributor: &dyn Attributor,
    child: &str,
    ids: &[IdArg],
) -> Result<AttributedParents, CliError> {
    let resolved = ids
        .iter()
        .map(|id| resolve_id(mem, id))
        .collect::<Result<Vec<EntryId>, CliError>>()?;
    Ok(mem.attribute_parents_detailed(attributor, child, &resolved)?)
}

/// The JSON fields that say how parents were weighed (also in `write --attribution --json`).
pub fn attribution_json(a: &AttributedParents) -> serde_json::Value {
    json!({
        "algorithm": a.attribution,
        "fell_back": a.fell_back.is_some(),
        "fallback_reason": a.fell_back.as_ref().map(|f| f.reason.clone()),
        "parents": a.parents.iter().map(|p| json!({
            "id": p.id.to_hex(),
            "weight": p.weight.to_string(),
            "read": !a.unread.contains(&p.id),
        })).collect::<Vec<_>>(),
    })
}

/// Runs `attribute`.
pub fn run(a: AttributeArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let attributor = build(a.algo, &a.options)?;
    let weighed = weigh(&mem, attributor.as_ref(), &a.child, &a.parents)?;
    let mut text = format!("algorithm: {}\n", weighed.attribution);
    match &weighed.fell_back {
        None => text.push_str("fell back: no\n"),
        Some(f) => text.push_str(&format!("fell back: yes, coarse weights ({})\n", f.reason)),
    }
    for p in &weighed.parents {
        let note = if weighed.unread.contains(&p.id) {
            "  (forgotten or erased: not read, weight 1)"
        } else {
            ""
        };
        text.push_str(&format!("{}  {}{note}\n", p.id.to_hex(), p.weight));
    }
    Ok(Outcome::ok(attribution_json(&weighed), text))
}
