//! `memlineage eval`: the deterministic evaluation (docs/evaluation.md).

use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// `memlineage eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Directory the artifacts are written to.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Worker threads (never changes an artifact).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// Runs the evaluation into `out`, with a progress bar on a terminal; returns the summary.
pub fn run_eval(
    out: &Path,
    threads: Option<usize>,
    json: bool,
) -> Result<memlineage_eval::EvalSummary, CliError> {
    let mut opts = memlineage_eval::EvalOptions::new(out);
    opts.threads = threads;
    let bar = if json || !std::io::stderr().is_terminal() {
        ProgressBar::hidden()
    } else {
        let b = ProgressBar::new(0);
        if let Ok(style) = ProgressStyle::with_template("{msg:24} [{bar:40}] {pos}/{len} ({eta})") {
            b.set_style(style.progress_chars("=> "));
        }
        b
    };
    let result = memlineage_eval::run(&opts, &mut |stage, done, total| {
        bar.set_length(total);
        bar.set_position(done);
        bar.set_message(stage.to_string());
    });
    bar.finish_and_clear();
    result.map_err(|e| CliError::failed(format!("evaluation failed: {e}")))
}

/// Runs `eval`.
pub fn run(a: EvalArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let summary = run_eval(&a.out, a.threads, ctx.json)?;
    let json = serde_json::json!({
        "out": a.out.display().to_string(),
        "episodes": summary.episodes,
        "files": summary.files,
    });
    let text = format!(
        "{}\n{} episodes; artifacts in {}/ (summary.json, tables, SVG plots, episodes.jsonl)\n",
        summary.headline(),
        summary.episodes,
        a.out.display()
    );
    Ok(Outcome::ok(json, text))
}
