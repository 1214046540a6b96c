//! `memlineage verify`: the full audit, with a progress bar on stderr.

use super::open_for_audit;
use crate::Ctx;
use crate::output::{CliError, Outcome};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fmt::Write;
use std::io::IsTerminal;

/// Runs `verify`.
pub fn run(ctx: &Ctx) -> Result<Outcome, CliError> {
    let mem = open_for_audit(&ctx.paths)?;
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if ctx.json || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(
            "verifying {bar:40} {pos}/{len} entries ({per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |done: u64, total: u64| {
        bar.set_length(total);
        bar.set_position(done);
    };
    let report = mem.verify(&mut progress);
    bar.finish_and_clear();
    let report = report?;
    let mut json = serde_json::to_value(&report)
        .map_err(|e| CliError::failed(format!("encoding the report: {e}")))?;
    json["ok"] = serde_json::json!(report.ok());
    json["store"] = serde_json::json!(ctx.paths.shown());
    let mut text = String::new();
    let _ = writeln!(text, "store       {}", ctx.paths.shown());
    let _ = writeln!(text, "entries     {}", report.entries);
    let _ = writeln!(text, "signatures  {}", report.signatures);
    let _ = writeln!(text, "principals  {}", report.principals);
    let _ = writeln!(text, "root        {}", report.root);
    let _ = writeln!(
        text,
        "checkpoint  {}",
        report.checkpoint_size.map_or_else(
            || "none yet (run `memlineage checkpoint`)".to_string(),
            |s| { format!("size {s}, matches the log") }
        )
    );
    if report.ok() {
        text.push_str("OK: every signature, signer, label, leaf and tree node checks out\n");
        return Ok(Outcome::ok(json, text));
    }
    let _ = writeln!(text, "PROBLEMS ({}):", report.problem_count);
    for p in &report.problems {
        let index = p.index.map_or_else(|| "-".to_string(), |i| i.to_string());
        let id = p.id.as_deref().map_or("-", |s| &s[..s.len().min(12)]);
        let _ = writeln!(text, "  index {index:<6} id {id:<12}  {}", p.reason);
    }
    if report.problem_count > report.problems.len() as u64 {
        let _ = writeln!(
            text,
            "  … and {} more",
            report.problem_count - report.problems.len() as u64
        );
    }
    let failure = format!(
        "verification failed: {} problem(s) found in {}",
        report.problem_count,
        ctx.paths.shown()
    );
    Ok(Outcome::failed(json, text, failure))
}
