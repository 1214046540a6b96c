//! `memlineage prove`: inclusion and consistency proofs.

use super::{IdArg, open, parse_id, resolve_id};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{ArgGroup, Args};
use serde_json::json;
use std::fmt::Write;

/// `memlineage prove`.
#[derive(Args, Debug)]
#[command(group(ArgGroup::new("what").required(true).args(["id", "consistency"])))]
pub struct ProveArgs {
    /// The entry to prove included (id or unique prefix of ≥ 8 hex).
    #[arg(value_parser = parse_id)]
    id: Option<IdArg>,
    /// Tree size to prove inclusion in (default: the current size).
    #[arg(long, requires = "id")]
    size: Option<u64>,
    /// Prove that the tree of OLD leaves is a prefix of the tree of NEW leaves.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"], conflicts_with = "id")]
    consistency: Option<Vec<u64>>,
}

/// Runs `prove`.
pub fn prove(a: ProveArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open(&ctx.paths)?;
    if let Some(c) = a.consistency {
        let (old, new) = match c.as_slice() {
            [o, n] => (*o, *n),
            _ => {
                return Err(CliError::usage(
                    "--consistency takes two tree sizes: OLD NEW",
                ));
            }
        };
        if old > new {
            return Err(CliError::usage(format!(
                "--consistency {old} {new}: OLD must not be larger than NEW"
            )));
        }
        let (old_root, new_root, path) = mem.prove_consistency(old, new)?;
        let path_hex: Vec<String> = path.iter().map(|h| h.to_hex()).collect();
        let json = json!({
            "old_size": old,
            "new_size": new,
            "old_root": old_root.to_hex(),
            "new_root": new_root.to_hex(),
            "path": path_hex,
        });
        let mut text = format!(
            "consistency proof (RFC 9162 §2.1.4), verified\nold size  {old}\nold root  {old_root}\nnew size  {new}\nnew root  {new_root}\npath      {} hashes\n",
            path.len()
        );
        for h in &path_hex {
            let _ = writeln!(text, "  {h}");
        }
        return Ok(Outcome::ok(json, text));
    }
    let arg =
        a.id.ok_or_else(|| CliError::usage("give an entry id, or --consistency OLD NEW"))?;
    let id = resolve_id(&mem, &arg)?;
    let current = mem.size()?;
    if let Some(s) = a.size
        && s > current
    {
        return Err(CliError::failed(format!(
            "--size {s} is larger than the log ({current} entries)"
        )));
    }
    let proof = mem.prove_inclusion(&id, a.size)?;
    let mut json = serde_json::to_value(&proof)
        .map_err(|e| CliError::failed(format!("encoding the proof: {e}")))?;
    json["id"] = json!(id.to_hex());
    let mut text = format!(
        "inclusion proof (RFC 9162 §2.1.3), verified\nid        {id}\nindex     {}\nsize      {}\nleaf hash {}\nroot      {}\npath      {} hashes\n",
        proof.index,
        proof.size,
        proof.leaf_hash.0,
        proof.root.0,
        proof.path.len()
    );
    for h in &proof.path {
        let _ = writeln!(text, "  {}", h.0);
    }
    Ok(Outcome::ok(json, text))
}
