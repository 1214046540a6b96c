//! `memlineage-attribution-eval`: runs the attribution algorithms over the labelled set and the
//! τ×K ablation chain, and writes the quality table (`docs/attribution.md`, "Quality,
//! measured").
//!
//! ```text
//! cargo run --release -p memlineage-attribution-eval [--features models,openai] -- [options]
//!   --algos coarse,lm-self-eval-constrained,…,attn-attr
//!                                   which algorithms (default: all that this build can run)
//!   --judge replay|record|fill      the judges' replies (default: replay); recording the HTTP
//!                                   judge needs MEMLINEAGE_JUDGE_BASE_URL (else it replays)
//!   --data PATH                     the labelled set
//!   --replay-dir DIR                the judges' replay files (default data/attribution)
//!   --scenario-algo NAME            whose chain goes to the eval harness (default attn-attr)
//!   --check                         compare with data/attribution/measured_weights.toml,
//!                                   write nothing (the default without --features models)
//!   --no-write                      print the table, write nothing
//!   --cases ID,ID                   only these cases (implies --no-write)
//!   --no-chain                      skip the ablation chain (implies --no-write)
//!   --verbose                       print every call's weights
//! ```
//!
//! With `--features models` (and every algorithm) it writes `docs/attribution.md`'s table,
//! `data/attribution/quality.json`, `data/attribution/measured_weights.toml` and the
//! harness's `crates/memlineage-eval/scenarios/measured_weights.toml`. Without the model,
//! Coarse runs and every judge ([`memlineage_attribution_eval::judges::JUDGES`]) is replayed
//! from its committed replay file; the weights are checked against the committed measurement
//! (exit 1 on any difference).

use memlineage::attribution::judge::JudgeBackend;
use memlineage::attribution::judge::replay::{ReplayJudge, ReplayMode, replay_key};
use memlineage::attribution::{Coarse, LmSelfEval};
use memlineage_attribution_eval::chain::{self, Hop};
use memlineage_attribution_eval::committed::{Committed, differences};
use memlineage_attribution_eval::judges::{self, JudgeKind, JudgeSpec};
use memlineage_attribution_eval::run::{RunOptions, run_algo, timed};
use memlineage_attribution_eval::{
    AlgoRun, CostSource, Dataset, EvalError, render_chain_markdown, render_markdown,
    render_measured_weights, render_scenario_weights, replace_section, report,
    scenario_file_is_ours,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

struct Args {
    algos: Vec<String>,
    judge: ReplayMode,
    data: PathBuf,
    replay_dir: PathBuf,
    scenario_algo: String,
    write: bool,
    check: bool,
    verbose: bool,
    cases: Vec<String>,
    no_chain: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const USAGE: &str = "usage: memlineage-attribution-eval [--algos NAME,NAME] \
    [--judge replay|record|fill] [--data PATH] [--replay-dir DIR] [--scenario-algo NAME] \
    [--check] [--no-write] [--cases ID,ID] [--no-chain] [--verbose]";

fn parse_args() -> Result<Args, String> {
    let root = root();
    let mut a = Args {
        algos: Vec::new(),
        judge: ReplayMode::Replay,
        data: root.join("data/attribution/derivations.toml"),
        replay_dir: root.join("data/attribution"),
        scenario_algo: "attn-attr".into(),
        write: cfg!(feature = "models"),
        check: !cfg!(feature = "models"),
        verbose: false,
        cases: Vec::new(),
        no_chain: false,
    };
    let list = |v: String| v.split(',').map(|s| s.trim().to_string()).collect();
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--algos" => a.algos = list(val("--algos")?),
            "--judge" => a.judge = val("--judge")?.parse()?,
            "--data" => a.data = val("--data")?.into(),
            "--replay-dir" => a.replay_dir = val("--replay-dir")?.into(),
            "--scenario-algo" => a.scenario_algo = val("--scenario-algo")?,
            "--check" => {
                a.check = true;
                a.write = false;
            }
            "--no-write" => a.write = false,
            "--verbose" => a.verbose = true,
            "--cases" => {
                a.cases = list(val("--cases")?);
                a.write = false;
                a.check = false;
            }
            "--no-chain" => {
                a.no_chain = true;
                a.write = false;
                a.check = false;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    let all = judges::all_algorithms();
    if a.algos.is_empty() {
        a.algos = all
            .iter()
            .filter(|n| cfg!(feature = "models") || **n != "attn-attr")
            .map(|n| n.to_string())
            .collect();
    }
    if let Some(bad) = a.algos.iter().find(|n| !all.contains(&n.as_str())) {
        return Err(format!(
            "unknown algorithm `{bad}`: expected some of {}",
            all.join(", ")
        ));
    }
    if a.write && all.iter().any(|n| !a.algos.iter().any(|x| x == n)) {
        eprintln!(
            "note: not writing the outputs: they hold every algorithm, and this run has only {}",
            a.algos.join(", ")
        );
        a.write = false;
    }
    Ok(a)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EvalError + '_ {
    move |source| EvalError::Io {
        path: path.display().to_string(),
        source,
    }
}

fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(io(path))
}

/// The τ×K chain, each hop among its distractors.
fn ablation_chain() -> Result<Vec<Hop>, EvalError> {
    let root = root();
    chain::build(
        &read(&root.join("crates/memlineage-eval/scenarios/ablation.toml"))?,
        &read(&root.join("data/attribution/ablation-chain.toml"))?,
    )
}

#[cfg(feature = "models")]
mod local {
    use memlineage::attribution::local::memlineage_models::LocalModel;
    use memlineage_attribution_eval::EvalError;
    use std::sync::{Arc, OnceLock};

    /// The model, loaded once for every algorithm that needs it.
    pub fn model() -> Result<Arc<LocalModel>, EvalError> {
        static MODEL: OnceLock<Result<Arc<LocalModel>, String>> = OnceLock::new();
        MODEL
            .get_or_init(|| {
                memlineage::attribution::local::load_local_model().map_err(|e| e.to_string())
            })
            .clone()
            .map_err(EvalError::Run)
    }
}

/// The replay judge of `spec` over its committed file, and whether it calls the live judge
/// (record or fill) or only replays.
fn judge_backend(args: &Args, spec: &JudgeSpec) -> Result<(ReplayJudge, bool), EvalError> {
    let path = args.replay_dir.join(spec.file);
    let replay =
        |path: &Path| {
            ReplayJudge::replay_file(path).map(|j| (j, false)).map_err(|e| {
            EvalError::Run(format!(
                "{e} (record the replies: cargo run --release -p memlineage-attribution-eval \
                 --features models,openai -- --judge record; docs/attribution.md)"
            ))
        })
        };
    if args.judge == ReplayMode::Replay {
        return replay(&path);
    }
    if spec.kind == JudgeKind::Http {
        if std::env::var_os(ENV_BASE_URL).is_none() {
            eprintln!(
                "note: {ENV_BASE_URL} is not set, so {} replays {} (docs/attribution.md: \
                 start llama.cpp's server to record it)",
                spec.short,
                path.display()
            );
            return replay(&path);
        }
        return http_backend(&path, args.judge).map(|j| (j, true));
    }
    local_backend(spec.kind, &path, args.judge).map(|j| (j, true))
}

/// The variable that points the HTTP judge at a server.
const ENV_BASE_URL: &str = "MEMLINEAGE_JUDGE_BASE_URL";

#[cfg(feature = "openai")]
fn http_backend(path: &Path, mode: ReplayMode) -> Result<ReplayJudge, EvalError> {
    use memlineage::attribution::judge::openai::{OpenAiConfig, OpenAiJudge};
    let err = |e: memlineage::attribution::AttributionError| EvalError::Run(e.to_string());
    let mut cfg = OpenAiConfig::from_env().map_err(err)?;
    // A small server on a busy 2-core machine: give each call time.
    cfg.timeout_s = cfg.timeout_s.max(300);
    ReplayJudge::new(OpenAiJudge::new(cfg).map_err(err)?, path, mode).map_err(err)
}

#[cfg(not(feature = "openai"))]
fn http_backend(_: &Path, _: ReplayMode) -> Result<ReplayJudge, EvalError> {
    Err(EvalError::Run(format!(
        "{ENV_BASE_URL} is set, but recording the HTTP judge needs the OpenAI-compatible client: \
         build with --features openai"
    )))
}

#[cfg(feature = "models")]
fn local_backend(kind: JudgeKind, path: &Path, mode: ReplayMode) -> Result<ReplayJudge, EvalError> {
    use memlineage::attribution::{JudgeDecoding, LocalJudge};
    let decoding = match kind {
        JudgeKind::Constrained => JudgeDecoding::Constrained,
        JudgeKind::ConstrainedExpected => JudgeDecoding::ConstrainedExpected,
        JudgeKind::Scored => JudgeDecoding::Scored,
        JudgeKind::Free => JudgeDecoding::Generate,
        JudgeKind::Http => {
            return Err(EvalError::Run("the HTTP judge is not local".into()));
        }
    };
    let judge = LocalJudge::with_decoding(local::model()?, decoding);
    ReplayJudge::new(judge, path, mode).map_err(|e| EvalError::Run(e.to_string()))
}

#[cfg(not(feature = "models"))]
fn local_backend(_: JudgeKind, _: &Path, _: ReplayMode) -> Result<ReplayJudge, EvalError> {
    Err(EvalError::Run(
        "recording the local judges' replies needs the model: build with --features models".into(),
    ))
}

/// Runs one LmSelfEval judge; when recording, keeps exactly the replies of this set and chain
/// in its file, sorted (the committed form).
fn run_judge(
    args: &Args,
    spec: &JudgeSpec,
    ds: &Dataset,
    chain: &[Hop],
) -> Result<AlgoRun, EvalError> {
    let (backend, live) = judge_backend(args, spec)?;
    let lm = LmSelfEval::new(backend);
    let recorded = |child: &str, texts: &[&str], us: u64| {
        let req = lm.request(child, texts);
        lm.backend()
            .recorded(&req.system, &req.user)
            .and_then(|r| r.micros)
            .unwrap_or(us)
    };
    let cost_source = if live {
        CostSource::Measured
    } else {
        CostSource::Recorded
    };
    let opts = RunOptions {
        cost: &recorded,
        cost_source,
        verbose: args.verbose,
    };
    let run = run_algo(spec.short, &lm, ds, chain, opts)?;
    if live && args.write {
        let id = lm.backend().model_id();
        let mut keys = BTreeSet::new();
        let mut add = |child: &str, texts: &[&str]| {
            let req = lm.request(child, texts);
            keys.insert(replay_key(&id, &req.system, &req.user));
        };
        for c in &ds.case {
            let texts: Vec<&str> = c.parents.iter().map(|p| p.text.as_str()).collect();
            add(&c.child, &texts);
        }
        for h in chain {
            let texts: Vec<&str> = h.parents.iter().map(String::as_str).collect();
            add(&h.child, &texts);
        }
        lm.backend().retain_keys(&keys);
        lm.backend()
            .compact()
            .map_err(|e| EvalError::Run(e.to_string()))?;
    }
    Ok(run)
}

#[cfg(feature = "models")]
fn run_attn(ds: &Dataset, chain: &[Hop], verbose: bool) -> Result<AlgoRun, EvalError> {
    use memlineage::attribution::{Attributor, ParentText};
    let attn = memlineage::attribution::AttnAttr::new(local::model()?);
    // Warm-up (first-call allocations), not timed.
    let warm = [ParentText {
        id: memlineage_attribution_eval::run::fake_id(0),
        text: "warm up",
    }];
    attn.attribute("warm up", &warm)
        .map_err(|e| EvalError::Run(format!("attn-attr: {e}")))?;
    let opts = RunOptions {
        cost: &timed,
        cost_source: CostSource::Measured,
        verbose,
    };
    run_algo("attn-attr", &attn, ds, chain, opts)
}

#[cfg(not(feature = "models"))]
fn run_attn(_: &Dataset, _: &[Hop], _: bool) -> Result<AlgoRun, EvalError> {
    Err(EvalError::Run(
        "attn-attr needs the local model: run with --features models".into(),
    ))
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let n = std::thread::available_parallelism().map_or(0, |n| n.get());
    // Other work on the machine slows the calls down; say how busy it was.
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .map(|l| format!(", load average {l} at the start"))
        .unwrap_or_default();
    format!("{cpu}, {n} vCPUs{load}, release build, one call at a time")
}

fn main() {
    match real_main() {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// Runs; `Ok(false)` when `--check` found differences.
fn real_main() -> Result<bool, EvalError> {
    let args = parse_args().map_err(EvalError::Run)?;
    let mut ds = Dataset::parse(&read(&args.data)?)?;
    if !args.cases.is_empty() {
        ds.case.retain(|c| args.cases.contains(&c.id));
    }
    let chain = if args.no_chain {
        Vec::new()
    } else {
        ablation_chain()?
    };
    let mut runs = Vec::new();
    for algo in &args.algos {
        eprintln!("running {algo} …");
        runs.push(match algo.as_str() {
            "coarse" => {
                let opts = RunOptions {
                    cost: &timed,
                    cost_source: CostSource::Measured,
                    verbose: args.verbose,
                };
                run_algo("coarse", &Coarse, &ds, &chain, opts)?
            }
            "attn-attr" => run_attn(&ds, &chain, args.verbose)?,
            other => match judges::judge(other) {
                Some(spec) => run_judge(&args, spec, &ds, &chain)?,
                None => return Err(EvalError::Run(format!("unknown algorithm `{other}`"))),
            },
        });
    }
    let reports = runs
        .iter()
        .map(|r| report(&ds, r))
        .collect::<Result<Vec<_>, _>>()?;
    let machine = machine();
    let md = format!(
        "{}{}",
        render_markdown(&ds, &reports, &machine),
        render_chain_markdown(&runs)
    );
    println!("{md}");
    let mut ok = true;
    if args.check {
        ok = check(&runs)?;
    }
    if args.write {
        write_outputs(&args, &ds, &runs, &reports, &md, &machine)?;
    }
    Ok(ok)
}

/// Compares the runs that replay exactly (all but AttnAttr) with the committed measurement.
fn check(runs: &[AlgoRun]) -> Result<bool, EvalError> {
    let path = root().join("data/attribution/measured_weights.toml");
    let committed = Committed::parse(&read(&path)?)?;
    let mut problems = Vec::new();
    let mut checked = Vec::new();
    for run in runs.iter().filter(|r| r.algorithm != "attn-attr") {
        match committed.get(&run.algorithm) {
            Some(c) => problems.extend(differences(c, run)),
            None => problems.push(format!("{}: not in {}", run.algorithm, path.display())),
        }
        checked.push(run.algorithm.as_str());
    }
    if problems.is_empty() {
        eprintln!(
            "check: {} reproduce {} exactly",
            checked.join(", "),
            path.display()
        );
        Ok(true)
    } else {
        for p in &problems {
            eprintln!("check: {p}");
        }
        eprintln!(
            "check: {} differences from {} (re-record with --features models -- --judge record)",
            problems.len(),
            path.display()
        );
        Ok(false)
    }
}

fn write_outputs(
    args: &Args,
    ds: &Dataset,
    runs: &[AlgoRun],
    reports: &[memlineage_attribution_eval::Report],
    md: &str,
    machine: &str,
) -> Result<(), EvalError> {
    let root = root();
    let doc_path = root.join("docs/attribution.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_else(|_| "# Attribution\n".into());
    std::fs::write(&doc_path, replace_section(&doc, md)).map_err(io(&doc_path))?;
    let (all, real) = ds.edge_counts();
    let json = serde_json::json!({
        "dataset": {"cases": ds.case.len(), "edges": all, "real_edges": real},
        "machine": machine,
        "strong_edge": "weight > tau",
        "reports": reports,
        "chain": runs.iter().map(|r| serde_json::json!({
            "algorithm": r.algorithm, "true_edge": r.chain(), "hops": r.hops,
        })).collect::<Vec<_>>(),
    });
    let json_path = root.join("data/attribution/quality.json");
    let mut json_text = serde_json::to_string_pretty(&json)
        .map_err(|e| EvalError::Run(format!("quality.json: {e}")))?;
    json_text.push('\n');
    std::fs::write(&json_path, json_text).map_err(io(&json_path))?;
    let mw_path = root.join("data/attribution/measured_weights.toml");
    std::fs::write(&mw_path, render_measured_weights(ds, runs)).map_err(io(&mw_path))?;
    eprintln!(
        "wrote {}, {}, {}",
        doc_path.display(),
        json_path.display(),
        mw_path.display()
    );
    let scen = root.join("crates/memlineage-eval/scenarios/measured_weights.toml");
    let Some(run) = runs.iter().find(|r| r.algorithm == args.scenario_algo) else {
        return Err(EvalError::Run(format!(
            "--scenario-algo {}: no such algorithm in this run",
            args.scenario_algo
        )));
    };
    match std::fs::read_to_string(&scen) {
        Ok(old) if scenario_file_is_ours(&old) => {
            let model = run
                .name
                .split_once(':')
                .map_or(run.name.as_str(), |(_, m)| m);
            let source = format!(
                "cargo run --release -p memlineage-attribution-eval --features models -- \
                 --scenario-algo {}",
                run.algorithm
            );
            let others: Vec<&AlgoRun> = runs
                .iter()
                .filter(|r| r.algorithm != run.algorithm)
                .collect();
            let new = render_scenario_weights(run, &others, model, &source);
            if new != old {
                std::fs::write(&scen, new).map_err(io(&scen))?;
                eprintln!("wrote {}", scen.display());
            }
        }
        Ok(_) => eprintln!(
            "left {} alone: it holds neither the placeholder nor our output",
            scen.display()
        ),
        Err(_) => eprintln!("{} does not exist; not created", scen.display()),
    }
    Ok(())
}
