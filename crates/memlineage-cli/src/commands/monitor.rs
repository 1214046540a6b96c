//! `memlineage monitor`: follow the log from its checkpoints and proofs, from the store opened
//! read-only, with no key (`docs/merkle-and-checkpoints.md`, "The monitor").

use super::checkpoint::read_input;
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use memlineage::OpenMode;
use memlineage::transparency::MonitorDir;
use memlineage_core::checkpoint::NoteVerifier;
use serde_json::json;
use std::fmt::Write;
use std::path::PathBuf;

/// `memlineage monitor`.
#[derive(Args, Debug)]
pub struct MonitorArgs {
    /// The monitor's state directory (apart from the store): what it verified so far.
    #[arg(long, value_name = "DIR", env = "MEMLINEAGE_MONITOR_STATE")]
    state: PathBuf,
    /// The log's published verifier key (`memlineage checkpoint --vkey`) to trust on the first
    /// run; without it the genesis record's operator key is trusted on first use.
    #[arg(long, value_name = "VKEY")]
    vkey: Option<String>,
    /// A checkpoint seen elsewhere (a client's, a witness's) to check against the verified
    /// history; repeatable.
    #[arg(long, value_name = "FILE")]
    checkpoint: Vec<PathBuf>,
}

/// Runs `monitor`.
pub fn run(a: MonitorArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let pinned = a
        .vkey
        .as_deref()
        .map(NoteVerifier::parse)
        .transpose()
        .map_err(|e| CliError::usage(format!("--vkey: {e}")))?;
    let others = a
        .checkpoint
        .iter()
        .map(|p| read_input(p))
        .collect::<Result<Vec<_>, _>>()?;
    // Read-only: the monitor needs, and gets, no means to change the log.
    let store = ctx
        .paths
        .location
        .open(OpenMode::ReadOnly)
        .map_err(|e| super::cannot_open(&ctx.paths, e, false))?;
    let snapshot = store.snapshot()?;
    let report = MonitorDir::new(&a.state)?.run(&*snapshot, pinned, &others)?;
    let mut json = serde_json::to_value(&report)
        .map_err(|e| CliError::failed(format!("encoding the report: {e}")))?;
    json["ok"] = json!(report.ok());
    let mut text = String::new();
    let _ = writeln!(text, "log         {}", report.origin);
    let _ = writeln!(
        text,
        "verified    {} → {} entries ({} new checked)",
        report.from_size, report.to_size, report.entries_checked
    );
    let _ = writeln!(text, "root        {}", report.root);
    if report.ok() {
        text.push_str(
            "OK: consistent with every checkpoint verified before; every new entry checks out\n",
        );
        return Ok(Outcome::ok(json, text));
    }
    let _ = writeln!(text, "FINDINGS ({}):", report.findings.len());
    for f in &report.findings {
        let _ = writeln!(text, "  {f}");
    }
    let failure = format!(
        "the monitor found {} problem(s) in the log {}",
        report.findings.len(),
        report.origin
    );
    Ok(Outcome::failed(json, text, failure))
}
