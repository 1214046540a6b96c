//! `memlineage search` (verifier-aware retrieval, M5) and `memlineage lineage` (M4).

use super::{IdArg, open, parse_id, parse_scope, resolve_id};
use crate::Ctx;
use crate::output::{CliError, Outcome, preview, table};
use clap::{Args, ValueEnum};
use memlineage::Direction;
use memlineage::search::SearchMode;
use memlineage_core::entry::Scope;
use memlineage_core::render::{lineage as fmt, prompt};
use serde_json::json;

/// `memlineage search`.
#[derive(Args, Debug)]
pub struct SearchArgs {
    /// Free text; every word is a search term (BM25 ranking).
    query: String,
    /// Only this scope and the scopes below it.
    #[arg(long, value_parser = parse_scope)]
    scope: Option<Scope>,
    /// At most this many entries.
    #[arg(long, default_value_t = 8)]
    limit: usize,
    /// Print the prompt rendering (structural blocks with escaped content) instead of a table.
    #[arg(long)]
    render: bool,
    /// Ranking: `lexical` (BM25), `semantic` (all-MiniLM-L6-v2 embeddings; needs the cargo
    /// feature `models` and scripts/fetch-embedding-model.sh) or `hybrid` (both, fused by
    /// reciprocal rank fusion). Every result is verified the same way whatever the mode.
    #[arg(long, default_value = "lexical")]
    mode: SearchMode,
}

/// The handle, with the embedding model attached when the mode needs it.
fn open_for(ctx: &Ctx, mode: SearchMode) -> Result<memlineage::Memory, CliError> {
    let mem = open(&ctx.paths)?;
    if mode == SearchMode::Lexical {
        return Ok(mem);
    }
    #[cfg(feature = "models")]
    {
        // The vector index is saved beside the store (`Paths::vectors_dir`) and loaded by the
        // next search when it still checks (`Memory::with_embedder_saved`), instead of being
        // rebuilt.
        Ok(mem.with_embedder_saved(
            memlineage::search::embedder::load_default_embedder()?,
            ctx.paths.vectors_dir(),
        )?)
    }
    #[cfg(not(feature = "models"))]
    {
        drop(mem);
        Err(CliError::usage(format!(
            "--mode {mode} needs the embedding model: this build lacks the cargo feature `models` (cargo install with --features models, then run scripts/fetch-embedding-model.sh)"
        )))
    }
}

/// Runs `search`.
pub fn search(a: SearchArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    if a.limit == 0 || a.limit > 1000 {
        return Err(CliError::usage("--limit must be between 1 and 1000"));
    }
    let mem = open_for(ctx, a.mode)?;
    let scope = a.scope.unwrap_or_default();
    let r = mem.search_with(&a.query, &scope, a.limit, a.mode)?;
    let rendered = r.rendered_entries();
    let json = json!({
        "query": a.query,
        "mode": a.mode.as_str(),
        "scope": scope.as_str(),
        "entries": prompt::render_json(&rendered),
        "dropped": r.dropped,
        "rendered": r.rendered,
        "context_hash": r.context_hash.to_hex(),
        "checkpoint_size": r.checkpoint.as_ref().map(|c| c.size),
    });
    let mut text = if a.render {
        r.rendered.clone()
    } else {
        let rows: Vec<Vec<String>> = r
            .entries
            .iter()
            .map(|v| {
                vec![
                    v.index.to_string(),
                    v.entry.id().short(),
                    v.effective_label.to_string(),
                    v.entry.body().writer.clone(),
                    preview(&v.text().unwrap_or_default(), 60),
                ]
            })
            .collect();
        table(&["index", "id", "trust", "writer", "content"], &rows)
    };
    if r.entries.is_empty() {
        text.push_str("no verified entry matches\n");
    }
    for d in &r.dropped {
        text.push_str(&format!(
            "dropped {} (index {}): {}\n",
            d.id.short(),
            d.index,
            d.reason
        ));
    }
    text.push_str(&format!("context hash (h_ctx): {}\n", r.context_hash));
    Ok(Outcome::ok(json, text))
}

/// Output format of `lineage`.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LineageFormat {
    /// An indented tree for the terminal.
    Text,
    /// The graph as JSON.
    Json,
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
}

/// `memlineage lineage`.
#[derive(Args, Debug)]
pub struct LineageArgs {
    /// The entry (id or unique prefix of ≥ 8 hex).
    #[arg(value_parser = parse_id)]
    id: IdArg,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    format: LineageFormat,
    /// Show descendants (what this entry shaped) instead of ancestors.
    #[arg(long)]
    descendants: bool,
    /// How many edges away to go.
    #[arg(long, default_value_t = 16)]
    depth: usize,
}

/// Runs `lineage`.
pub fn lineage(a: LineageArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let id = resolve_id(&mem, &a.id)?;
    let dir = if a.descendants {
        Direction::Descendants
    } else {
        Direction::Ancestors
    };
    let g = mem.lineage(&id, dir, a.depth)?;
    let json = fmt::to_json(&g);
    let text = match a.format {
        LineageFormat::Text => fmt::to_text(&g),
        LineageFormat::Json => {
            serde_json::to_string_pretty(&json).map_err(|e| CliError::failed(e.to_string()))?
        }
        LineageFormat::Dot => fmt::to_dot(&g),
        LineageFormat::Mermaid => fmt::to_mermaid(&g),
    };
    Ok(Outcome::ok(json, text))
}
