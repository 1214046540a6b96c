//! `memlineage bench`: every operation measured in this process beside the raw primitives of
//! the same run (`docs/performance.md`), the scale run (`--scale`), and the store generator
//! (`--generate N --out FILE`). None of them opens the store named by `--store`.

use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use memlineage_bench::{
    BenchOptions, ROW_NAMES, ScaleOptions, generate_store, render_scale_table, render_table, scale,
    scale_svg, sys,
};
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `memlineage bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Smaller stores (10^5 entries instead of 10^6) and shorter sampling: about a minute.
    #[arg(long)]
    pub quick: bool,
    /// The scale run instead: stores of 10^3 … 10^6 entries (quick: … 10^5), the cost of each
    /// operation as n grows, and the growth checks.
    #[arg(long, conflicts_with_all = ["generate", "only"])]
    pub scale: bool,
    /// With --scale: also measure semantic and hybrid retrieval of 8 and the vector index,
    /// at the sizes up to N (every entry is embedded once per run with all-MiniLM-L6-v2:
    /// minutes at 10^5; needs the cargo feature `models`).
    #[arg(long, value_name = "N", requires = "scale")]
    pub semantic_up_to: Option<u64>,
    /// With --scale: also draw the plot into FILE (SVG).
    #[arg(long, value_name = "FILE", requires = "scale")]
    pub svg: Option<PathBuf>,
    /// Write a valid store of N entries (signed, labelled, with a checkpoint) instead.
    #[arg(long, value_name = "N", requires = "out", conflicts_with = "only")]
    pub generate: Option<u64>,
    /// With --generate: the new store file (it must not exist).
    #[arg(long, value_name = "FILE", requires = "generate")]
    pub out: Option<PathBuf>,
    /// Seed of the keys, content and workload.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run only this row (repeatable; the names are in docs/performance.md). A ratio needs its
    /// baseline row in the same run.
    #[arg(long, value_name = "ROW", value_parser = parse_row)]
    pub only: Vec<String>,
    /// The service benchmark instead: writes and gate decisions per second over HTTP from a
    /// loopback load generator, beside the same operations in process (docs/performance.md).
    #[cfg(feature = "server")]
    #[arg(long, conflicts_with_all = ["scale", "generate", "only"])]
    pub service: bool,
    /// With `--service`: the keep-alive connections the load generator keeps open (its
    /// concurrent clients; 1 to 1024), a comma-separated list of levels measured in turn.
    /// Each operation's row is its fastest level with p99 within 25 ms, beside every level:
    /// every request waits for a group commit, so with too few connections the rate is bound
    /// by that cycle's latency with the cores idle, and with too many requests queue
    /// (docs/performance.md, "Service").
    #[cfg(feature = "server")]
    #[arg(long, requires = "service", value_delimiter = ',', default_values_t = [128u16, 160, 192],
        value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub connections: Vec<u16>,
    /// Where generated stores are cached (default: $MEMLINEAGE_BENCH_STORES, else
    /// target/bench-stores of the enclosing Cargo workspace).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

/// A row name from `ROW_NAMES` (clap value parser).
fn parse_row(s: &str) -> Result<String, String> {
    if ROW_NAMES.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown row `{}` (rows: {})",
            s.chars().take(80).collect::<String>(),
            ROW_NAMES.join(", ")
        ))
    }
}

/// Progress on stderr: a spinner with the current step on a terminal, else one timestamped
/// line per step. stdout carries only the result.
struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl Progress {
    fn new() -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new_spinner();
            if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed:>4}] {msg}") {
                b.set_style(style);
            }
            b.enable_steady_tick(Duration::from_millis(120));
            b
        });
        Progress {
            bar,
            started: Instant::now(),
        }
    }

    fn line(&self, msg: &str) {
        match &self.bar {
            Some(b) => {
                // Finished steps stay on screen; generation progress only updates the spinner.
                if !msg.starts_with("generating ") {
                    b.println(format!(
                        "[{:>6.1} s] {msg}",
                        self.started.elapsed().as_secs_f64()
                    ));
                }
                b.set_message(msg.to_string());
            }
            None => eprintln!("[{:>6.1} s] {msg}", self.started.elapsed().as_secs_f64()),
        }
    }

    fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

fn failed(e: memlineage_bench::BenchError) -> CliError {
    CliError::failed(format!("bench: {e}"))
}

/// Runs `bench`.
pub fn run(a: BenchArgs, _ctx: &Ctx) -> Result<Outcome, CliError> {
    let progress = Progress::new();
    let mut report = |line: &str| progress.line(line);
    #[cfg(feature = "server")]
    if a.service {
        let mut levels: Vec<usize> = a.connections.iter().map(|&c| usize::from(c)).collect();
        levels.sort_unstable();
        levels.dedup();
        let result = super::service_bench::run(a.quick, &levels, &mut report);
        progress.finish();
        return result;
    }
    let result = if let Some(n) = a.generate {
        generate(&a, n, &mut report)
    } else if a.scale {
        scale_run(&a, &mut report)
    } else {
        rows(&a, &mut report)
    };
    progress.finish();
    result
}

fn generate(a: &BenchArgs, n: u64, progress: &mut dyn FnMut(&str)) -> Result<Outcome, CliError> {
    let out = a
        .out
        .as_ref()
        .ok_or_else(|| CliError::usage("--generate needs --out FILE"))?;
    let g = generate_store(out, n, a.seed, progress).map_err(failed)?;
    let json = serde_json::to_value(&g)
        .map_err(|e| CliError::failed(format!("encoding the result: {e}")))?;
    let text = format!(
        "{} entries in {:.1} s ({:.0} MB) at {}\nkeys are derived from seed {} (memlineage-bench fixtures); `memlineage --store {} verify` audits it\n",
        g.entries,
        g.seconds,
        g.bytes as f64 / 1e6,
        g.path.display(),
        a.seed,
        g.path.display()
    );
    Ok(Outcome::ok(json, text))
}

/// The embedding model of the scale run's semantic rows.
#[cfg(feature = "models")]
fn semantic_embedder() -> Result<memlineage_bench::SharedEmbedder, CliError> {
    Ok(memlineage_bench::SharedEmbedder(
        memlineage::search::embedder::load_default_embedder()?,
    ))
}

#[cfg(not(feature = "models"))]
fn semantic_embedder() -> Result<memlineage_bench::SharedEmbedder, CliError> {
    Err(CliError::usage(
        "--semantic-up-to needs the embedding model: this build lacks the cargo feature `models`",
    ))
}

/// The variable that sets mimalloc's purge delay (milliseconds before freed pages go back to
/// the operating system), read by mimalloc when the process starts.
const PURGE_DELAY_VAR: &str = "MIMALLOC_PURGE_DELAY";

/// mimalloc, this binary's allocator, keeps freed pages for a while before it gives them back,
/// so the peak RSS of one step of the scale run would include the heap the previous step freed
/// (a 10^5 lexical index, a verify's tables), and the memory checks would judge the allocator,
/// not the store (measured: +97 MiB for the operations and +102 MiB for verify at 10^6 with
/// the default delay, +17 and +49 MiB with none). So the scale run runs in a copy of this
/// process started with no purge delay, unless the variable is already set: returns the copy's
/// exit status, or `None` (go on here, and say why) when it cannot start.
fn rerun_with_prompt_purge(progress: &mut dyn FnMut(&str)) -> Option<i32> {
    if std::env::var_os(PURGE_DELAY_VAR).is_some() {
        return None;
    }
    let status = std::env::current_exe().and_then(|exe| {
        std::process::Command::new(exe)
            .args(std::env::args_os().skip(1))
            .env(PURGE_DELAY_VAR, "0")
            .status()
    });
    match status {
        Ok(s) => Some(s.code().unwrap_or(1)),
        Err(e) => {
            progress(&format!(
                "scale: cannot restart with {PURGE_DELAY_VAR}=0 ({e}); peak RSS may include \
                 memory the allocator keeps"
            ));
            None
        }
    }
}

fn scale_run(a: &BenchArgs, progress: &mut dyn FnMut(&str)) -> Result<Outcome, CliError> {
    if let Some(code) = rerun_with_prompt_purge(progress) {
        // The copy printed the report; this process only passes on its status.
        std::process::exit(code);
    }
    let mut opts = ScaleOptions::new(a.quick);
    opts.seed = a.seed;
    opts.cache_dir = a.cache.clone();
    if let Some(n) = a.semantic_up_to {
        opts.semantic_max_n = n;
        opts.embedder = Some(semantic_embedder()?);
    }
    let report = scale(&opts, progress).map_err(failed)?;
    let mut text = format!("{}\n{}", report.machine, render_scale_table(&report));
    if let Some(path) = &a.svg {
        std::fs::write(path, scale_svg(&report)).map_err(|e| {
            CliError::failed(format!("cannot write the plot to {}: {e}", path.display()))
        })?;
        let _ = writeln!(text, "plot written to {}", path.display());
    }
    let json = serde_json::to_value(&report)
        .map_err(|e| CliError::failed(format!("encoding the report: {e}")))?;
    Ok(Outcome::ok(json, text))
}

fn rows(a: &BenchArgs, progress: &mut dyn FnMut(&str)) -> Result<Outcome, CliError> {
    let mut opts = BenchOptions::new(a.quick);
    opts.seed = a.seed;
    opts.cache_dir = a.cache.clone();
    opts.only = a.only.clone();
    let rows = memlineage_bench::run(&opts, progress).map_err(failed)?;
    let json = serde_json::to_value(&rows)
        .map_err(|e| CliError::failed(format!("encoding the rows: {e}")))?;
    let mut text = format!(
        "{}{}\n{}",
        sys::machine(),
        if a.quick { " (quick run)" } else { "" },
        render_table(&rows)
    );
    for r in &rows {
        if let Some(note) = &r.note {
            let n = r.n.map(|n| format!(" [n = {n}]")).unwrap_or_default();
            let _ = writeln!(text, "{}{n}: {note}", r.name);
        }
    }
    Ok(Outcome::ok(json, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_names_are_checked() {
        assert_eq!(parse_row("raw_sign").unwrap(), "raw_sign");
        let err = parse_row("raw_sing").unwrap_err();
        assert!(err.contains("unknown row `raw_sing`") && err.contains("verify_store"));
    }
}
