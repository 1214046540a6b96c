//! `memlineage migrate --from LOCATION --to LOCATION`: copy a log into a new store, any
//! location to any location (an SQLite file to PostgreSQL and back), and verify the copy end
//! to end (`Memory::copy_to`; docs/cli.md, docs/store.md "Moving a log between stores").

use super::open_for_audit;
use crate::Ctx;
use crate::output::{CliError, Outcome};
use crate::paths::StorePaths;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memlineage::StoreLocation;
use std::fmt::Write;
use std::io::IsTerminal;
use std::time::Instant;

/// `memlineage migrate`.
#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// The store to copy (default: the global --store, $MEMLINEAGE_STORE, or
    /// ./.memlineage/store.db).
    #[arg(long, value_name = "LOCATION")]
    pub from: Option<StoreLocation>,
    /// The new store: a path or sqlite:PATH (the file must not exist), or postgres://… (an
    /// existing database that holds no store yet).
    #[arg(long, value_name = "LOCATION")]
    pub to: StoreLocation,
}

/// Runs `migrate`.
pub fn run(a: MigrateArgs, ctx: &Ctx) -> Result<Outcome, CliError> {
    let from = match a.from {
        Some(l) => StorePaths::resolve(Some(l), Some(&ctx.paths.keys))?,
        None => ctx.paths.clone(),
    };
    if let Some(db) = a.to.sqlite_file()
        && let Some(parent) = db.parent().filter(|p| !p.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::failed(format!("cannot create {}: {e}", parent.display())))?;
    }
    let source = open_for_audit(&from)?;
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if ctx.json || !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg:20} {bar:40} {pos}/{len} entries ({per_sec})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut progress = |step: &str, done: u64, total: u64| {
        bar.set_message(step.to_string());
        bar.set_length(total);
        bar.set_position(done);
    };
    let started = Instant::now();
    let copied = source.copy_to(&a.to, &mut progress);
    bar.finish_and_clear();
    let (_copy, report) = copied
        .map_err(|e| CliError::failed(format!("migrate {} → {}: {e}", from.shown(), a.to)))?;
    let seconds = started.elapsed().as_secs_f64();
    let mut json = serde_json::to_value(&report)
        .map_err(|e| CliError::failed(format!("encoding the report: {e}")))?;
    json["seconds"] = serde_json::json!(seconds);
    let mut text = String::new();
    let _ = writeln!(text, "from        {}", report.from);
    let _ = writeln!(text, "to          {}", report.to);
    let _ = writeln!(text, "entries     {} in {seconds:.1} s", report.entries);
    let _ = writeln!(text, "root        {}", report.root);
    let _ = writeln!(
        text,
        "checkpoint  size {}, verified in the copy",
        report.checkpoint_size
    );
    let _ = writeln!(
        text,
        "OK: both stores audited ({} signatures), every leaf, content, label and index row equal, the copy's root and signed checkpoint match",
        report.signatures_verified
    );
    if let (Some(src_keys), None) = (from.location.key_dir(), a.to.key_dir()) {
        let _ = writeln!(
            text,
            "the secret keys stay in {}: point --keys or MEMLINEAGE_KEYS at them to use the new store",
            src_keys.display()
        );
    }
    Ok(Outcome::ok(json, text))
}
