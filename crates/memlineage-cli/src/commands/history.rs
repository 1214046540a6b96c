//! What `verify` reports about the store's history beside the audit: whether the store
//! extends the reader's trusted checkpoint (`--trusted-checkpoint`, `--client-state`), and the
//! rollback window — the revocations, rotations, distrust records and tombstones that no
//! witnessed or held checkpoint covers yet.

use super::Mem;
use super::checkpoint::POLICY_FILE;
use super::trust::load_policy;
use crate::Ctx;
use crate::output::CliError;
use serde_json::{Value, json};
use std::fmt::Write;

/// The history part of `verify`'s report.
pub struct History {
    /// False when the store contradicts the trusted checkpoint.
    pub ok: bool,
    /// The JSON object (`"history"`).
    pub json: Value,
    /// The text lines.
    pub text: String,
}

/// Checks the store against the reader's trust, then reports the rollback window (with the
/// log's witness policy beside the store, else the reader's).
pub fn audit(mem: Mem, ctx: &Ctx) -> Result<History, CliError> {
    let mut text = String::new();
    let mut ok = true;
    let trust = ctx.paths.trust.clone();
    let mut json = json!({});
    let mem = if trust.is_empty() {
        mem
    } else {
        match mem.with_reader(trust) {
            Ok(m) => {
                if let Some(h) = m.held_checkpoint() {
                    let _ = writeln!(
                        text,
                        "trusted     size {}, root {}: the store extends it",
                        h.size, h.root
                    );
                    json["trusted"] =
                        json!({ "ok": true, "size": h.size, "root": h.root.to_hex() });
                }
                m
            }
            Err(e) => {
                ok = false;
                let _ = writeln!(text, "trusted     CONTRADICTED: {e}");
                json["trusted"] = json!({ "ok": false, "error": e.to_string() });
                json["rollback_window"] = Value::Null;
                return Ok(History { ok, json, text });
            }
        }
    };
    let policy_path = ctx.paths.config_dir().join(POLICY_FILE);
    let policy = if policy_path.is_file() {
        Some(load_policy(&policy_path, "witness policy")?)
    } else {
        None
    };
    let window = match mem.rollback_window(policy.as_ref()) {
        Ok(w) => w,
        Err(e) => {
            // A damaged control record: the audit above names it; the window is unknown.
            let _ = writeln!(text, "rollback    unknown: {e}");
            json["rollback_window"] = Value::Null;
            return Ok(History { ok, json, text });
        }
    };
    let covered = window.covered_size();
    if window.at_risk.is_empty() {
        let _ = writeln!(
            text,
            "rollback    no revocation, rotation, distrust or tombstone beyond the witnessed/held checkpoint ({covered} entries covered)"
        );
    } else {
        let _ = writeln!(
            text,
            "rollback    AT RISK: {} control record(s) after the witnessed/held checkpoint ({covered} entries covered) could be undone by restoring an older copy; witness a checkpoint (`memlineage checkpoint --witness`):",
            window.at_risk.len()
        );
        for r in window.at_risk.iter().take(8) {
            let _ = writeln!(text, "  index {:<6} {}", r.index, r.what);
        }
    }
    json["rollback_window"] = serde_json::to_value(&window)
        .map_err(|e| CliError::failed(format!("encoding the rollback window: {e}")))?;
    Ok(History { ok, json, text })
}

/// The rollback note for a control record just written at `index`: always at risk until a
/// checkpoint covering it is witnessed or held (`docs/merkle-and-checkpoints.md`).
pub fn at_risk_note(index: u64) -> (Value, String) {
    (
        json!({ "at_risk": true, "index": index, "until": "a checkpoint covering this index is witnessed (memlineage checkpoint --witness) or held by the clients" }),
        format!(
            "At risk of rollback until a checkpoint covering index {index} is witnessed (`memlineage checkpoint --witness`) or held by your clients."
        ),
    )
}
