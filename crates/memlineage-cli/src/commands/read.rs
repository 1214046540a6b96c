//! `memlineage get` and `memlineage log`.

use super::{IdArg, check_signature, open, parse_id, record_json, resolve_id, summary};
use crate::Ctx;
use crate::output::{CliError, Outcome, preview, rfc3339_ms, table};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clap::Args;
use memlineage::EntryView;
use serde_json::{Value, json};
use std::fmt::Write;

/// `memlineage get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// Entry id, or a unique prefix of at least 8 hex characters.
    #[arg(value_parser = parse_id)]
    id: IdArg,
}

/// `memlineage log`.
#[derive(Args, Debug)]
pub struct LogArgs {
    /// First leaf index to show.
    #[arg(long, default_value_t = 0)]
    from: u64,
    /// How many entries to show at most.
    #[arg(long, default_value_t = 100)]
    limit: u64,
}

/// The content as JSON: text, base64 when not UTF-8 (or a control record), null once erased.
fn content_json(view: &EntryView) -> (Value, Value) {
    match &view.content {
        None => (Value::Null, Value::Null),
        Some(c) if view.entry.body().kind.is_control() => {
            (json!(STANDARD.encode(c)), json!("base64"))
        }
        Some(c) => match std::str::from_utf8(c) {
            Ok(s) => (json!(s), json!("utf8")),
            Err(_) => (json!(STANDARD.encode(c)), json!("base64")),
        },
    }
}

/// The whole entry as JSON (without proof).
pub fn entry_json(view: &EntryView) -> Value {
    let b = view.entry.body();
    let (content, encoding) = content_json(view);
    let parents: Vec<Value> = b
        .parents
        .iter()
        .map(|p| json!({ "id": p.id.to_hex(), "weight": p.weight.to_string() }))
        .collect();
    let mut v = json!({
        "id": view.entry.id().to_hex(),
        "index": view.index,
        "kind": b.kind.as_str(),
        "scope": b.scope.as_str(),
        "writer": b.writer,
        "key_id": b.key_id.to_hex(),
        "created_at_ms": b.created_at_ms,
        "created_at": rfc3339_ms(b.created_at_ms),
        "content": content,
        "content_encoding": encoding,
        "content_hash": b.content_hash.to_hex(),
        "content_len": b.content_len,
        "source_hash": b.source_hash.map(|h| h.to_hex()),
        "context_hash": b.context_hash.map(|h| h.to_hex()),
        "parents": parents,
        "attribution": b.attribution,
        "tau": b.tau.to_string(),
        "fallback": b.fallback.as_str(),
        "label": view.label.as_str(),
        "effective_label": view.effective_label.as_str(),
        "forgotten_by": view.forgotten_by.map(|t| t.to_hex()),
        "metadata": b.metadata,
        "signature": hex::encode(view.entry.signature().to_bytes()),
    });
    if let Some(rec) = view.content.as_deref().and_then(|c| record_json(b.kind, c)) {
        v["record"] = rec;
    }
    v
}

/// Runs `get`.
pub fn get(a: GetArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let id = resolve_id(&mem, &a.id)?;
    let view = mem.get(&id)?;
    let mut problems = Vec::new();
    if let Err(e) = check_signature(&mem, &view) {
        problems.push(format!("signature: {e}"));
    }
    let proof = match mem.prove_inclusion(&id, None) {
        Ok(p) => Some(p),
        Err(e) => {
            problems.push(format!("inclusion proof: {e}"));
            None
        }
    };
    if let Some(c) = &view.content
        && memlineage_core::Hash256::of(c) != view.entry.body().content_hash
    {
        problems.push("content does not match the signed content hash".to_string());
    }
    let mut json = entry_json(&view);
    json["inclusion_proof"] = serde_json::to_value(&proof).unwrap_or(Value::Null);
    json["verified"] = json!(problems.is_empty());
    json["problems"] = json!(problems);
    let text = get_text(&view, &json, &problems);
    if problems.is_empty() {
        Ok(Outcome::ok(json, text))
    } else {
        let failure = format!(
            "entry {} at index {} fails verification ({}): do not trust it; run `memlineage verify`",
            id.to_hex(),
            view.index,
            problems.join("; ")
        );
        Ok(Outcome::failed(json, text, failure))
    }
}

fn get_text(view: &EntryView, json: &Value, problems: &[String]) -> String {
    let b = view.entry.body();
    let mut t = String::new();
    let _ = writeln!(t, "id         {}", view.entry.id());
    let _ = writeln!(t, "index      {}", view.index);
    let _ = writeln!(t, "kind       {}", b.kind);
    let _ = writeln!(t, "writer     {}", b.writer);
    let _ = writeln!(t, "scope      {}", b.scope);
    let _ = writeln!(t, "created    {}", rfc3339_ms(b.created_at_ms));
    let label = if view.effective_label != view.label {
        format!(
            "{} (signed {}, raised by a distrust record)",
            view.effective_label, view.label
        )
    } else {
        view.label.to_string()
    };
    let _ = writeln!(t, "label      {label}");
    let _ = writeln!(t, "rule       tau {}, fallback {}", b.tau, b.fallback);
    if !b.parents.is_empty() {
        let _ = writeln!(t, "parents    ({})", b.attribution);
        for p in &b.parents {
            let _ = writeln!(t, "  {} weight {}", p.id, p.weight);
        }
    }
    if let Some(h) = b.source_hash {
        let _ = writeln!(t, "source     sha256 {h}");
    }
    if let Some(h) = b.context_hash {
        let _ = writeln!(t, "context    sha256 {h}");
    }
    for (k, v) in &b.metadata {
        let _ = writeln!(t, "meta       {k}={v}");
    }
    if let Some(tomb) = view.forgotten_by {
        let _ = writeln!(t, "forgotten  by tombstone {tomb}");
    }
    if let Some(p) = json.get("inclusion_proof").filter(|p| !p.is_null()) {
        let _ = writeln!(
            t,
            "proof      leaf {} of {} leaves, root {} ({} hashes)",
            view.index,
            p["size"],
            p["root"].as_str().unwrap_or(""),
            p["path"].as_array().map_or(0, Vec::len)
        );
    }
    let _ = writeln!(
        t,
        "verified   {}",
        if problems.is_empty() {
            "signature and inclusion ok".to_string()
        } else {
            format!("NO: {}", problems.join("; "))
        }
    );
    t.push('\n');
    match (&view.content, json.get("record")) {
        (None, _) => t.push_str("(content erased)\n"),
        (Some(_), Some(rec)) => {
            let _ = writeln!(t, "{rec}");
        }
        (Some(c), None) => match std::str::from_utf8(c) {
            Ok(s) => {
                t.push_str(s);
                if !s.ends_with('\n') {
                    t.push('\n');
                }
            }
            Err(_) => {
                let _ = writeln!(
                    t,
                    "({} bytes of binary content; use --json for base64)",
                    c.len()
                );
            }
        },
    }
    t
}

/// Runs `log`.
pub fn log(a: LogArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    let size = mem.size()?;
    let views = mem.log(a.from, a.limit)?;
    let mut rows = Vec::with_capacity(views.len());
    let mut items = Vec::with_capacity(views.len());
    for v in &views {
        let b = v.entry.body();
        let label = if v.effective_label != v.label {
            format!("{}*", v.effective_label)
        } else {
            v.label.to_string()
        };
        let text = summary(v);
        let mut shown = preview(&text, 40);
        if v.forgotten_by.is_some() && v.content.is_some() {
            shown = format!("(forgotten) {shown}");
        }
        rows.push(vec![
            v.index.to_string(),
            v.entry.id().short(),
            b.kind.to_string(),
            b.writer.clone(),
            label,
            b.scope.to_string(),
            shown,
        ]);
        items.push(json!({
            "index": v.index,
            "id": v.entry.id().to_hex(),
            "kind": b.kind.as_str(),
            "writer": b.writer,
            "label": v.label.as_str(),
            "effective_label": v.effective_label.as_str(),
            "scope": b.scope.as_str(),
            "created_at_ms": b.created_at_ms,
            "forgotten": v.forgotten_by.is_some(),
            "erased": v.content.is_none(),
            "preview": preview(&text, 40),
        }));
    }
    let json = json!({ "size": size, "from": a.from, "entries": items });
    let mut text = table(
        &["INDEX", "ID", "KIND", "WRITER", "LABEL", "SCOPE", "CONTENT"],
        &rows,
    );
    let shown_to = a.from + views.len() as u64;
    if views.is_empty() {
        text = format!("no entries from index {} (the log has {size})\n", a.from);
    } else if a.from > 0 || shown_to < size {
        let _ = writeln!(
            text,
            "entries {}..{} of {size}; use --from and --limit for more",
            a.from,
            shown_to.saturating_sub(1)
        );
    }
    if views.iter().any(|v| v.effective_label != v.label) {
        text.push_str("* effective label raised by a distrust record\n");
    }
    Ok(Outcome::ok(json, text))
}
