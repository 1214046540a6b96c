//! `memlineage-attribution-eval`: runs the attribution algorithms over the labelled set and the
//! τ×K ablation chain, and writes the quality table.
//!
//! ```text
//! cargo run --release -p memlineage-attribution-eval [--features models] -- [options]
//!   --algos coarse,lm-self-eval,attn-attr   which algorithms (default: all that can run)
//!   --judge replay|record|fill              LmSelfEval judge replies (default: replay)
//!   --data PATH                             the labelled set
//!   --replay PATH                           the judge's replay file
//!   --scenario-algo NAME                    whose chain weights go to the eval harness
//!                                           (default lm-self-eval)
//!   --no-write                              print the table, write nothing
//!   --cases ID,ID                           only these cases (implies --no-write)
//!   --no-chain                              skip the ablation chain (implies --no-write)
//!   --verbose                               print every case's weights
//! ```
//!
//! Without `--features models`, Coarse runs and LmSelfEval is replayed from the committed replay
//! file (`data/attribution/judge-replay.jsonl`); AttnAttr and recording need the model.

use memlineage::attribution::judge::replay::{ReplayJudge, ReplayMode};
use memlineage::attribution::{Attribution, Attributor, Coarse, LmSelfEval, ParentText};
use memlineage_attribution_eval::{
    AlgoRun, CaseResult, CostSource, Dataset, EvalError, render_markdown, render_measured_weights,
    render_scenario_weights, replace_section, report, scenario_file_is_ours,
};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, Hash256};
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Args {
    algos: Vec<String>,
    judge: ReplayMode,
    data: PathBuf,
    replay: PathBuf,
    scenario_algo: String,
    write: bool,
    verbose: bool,
    cases: Vec<String>,
    no_chain: bool,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn parse_args() -> Result<Args, String> {
    let root = root();
    let mut a = Args {
        algos: Vec::new(),
        judge: ReplayMode::Replay,
        data: root.join("data/attribution/derivations.toml"),
        replay: root.join("data/attribution/judge-replay.jsonl"),
        scenario_algo: "lm-self-eval".into(),
        write: true,
        verbose: false,
        cases: Vec::new(),
        no_chain: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--algos" => {
                a.algos = val("--algos")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect()
            }
            "--judge" => a.judge = val("--judge")?.parse()?,
            "--data" => a.data = val("--data")?.into(),
            "--replay" => a.replay = val("--replay")?.into(),
            "--scenario-algo" => a.scenario_algo = val("--scenario-algo")?,
            "--no-write" => a.write = false,
            "--verbose" => a.verbose = true,
            "--cases" => {
                a.cases = val("--cases")?
                    .split(',')
                    .map(|s| s.trim().to_string())
                    .collect();
                a.write = false;
            }
            "--no-chain" => {
                a.no_chain = true;
                a.write = false;
            }
            "-h" | "--help" => {
                println!(
                    "usage: memlineage-attribution-eval [--algos coarse,lm-self-eval,attn-attr] \
                     [--judge replay|record|fill] [--data PATH] [--replay PATH] \
                     [--scenario-algo NAME] [--no-write] [--verbose]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    if a.algos.is_empty() {
        a.algos = vec!["coarse".into(), "lm-self-eval".into()];
        if cfg!(feature = "models") {
            a.algos.push("attn-attr".into());
        }
    }
    Ok(a)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EvalError + '_ {
    move |source| EvalError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The τ×K chain of the evaluation harness's ablation: (parent text, child text) per edge.
fn ablation_chain() -> Result<Vec<(String, String)>, EvalError> {
    let path = root().join("crates/memlineage-eval/scenarios/ablation.toml");
    let text = std::fs::read_to_string(&path).map_err(io(&path))?;
    let v: toml::Value = toml::from_str(&text).map_err(|e| EvalError::Data(e.to_string()))?;
    let ab = &v["ablation"];
    let get = |k: &str| {
        ab.get(k)
            .and_then(|x| x.as_str())
            .map(str::to_string)
            .ok_or_else(|| EvalError::Data(format!("ablation.toml: [ablation].{k} is missing")))
    };
    let root_content = get("root_content")?;
    let hop = get("hop_content")?;
    let max_k = ab
        .get("max_k")
        .and_then(|x| x.as_integer())
        .ok_or_else(|| EvalError::Data("ablation.toml: [ablation].max_k is missing".into()))?;
    let mut prev = root_content;
    let mut out = Vec::new();
    for k in 1..=max_k {
        let child = hop.replace("{k}", &k.to_string());
        out.push((prev, child.clone()));
        prev = child;
    }
    Ok(out)
}

fn fake_id(i: usize) -> EntryId {
    EntryId(Hash256::of(&(i as u64).to_be_bytes()))
}

/// Runs one attributor over the set and the chain; `cost` overrides the timing of a call.
fn run_algo(
    short: &str,
    algo: &dyn Attributor,
    ds: &Dataset,
    chain: &[(String, String)],
    cost: &dyn Fn(&str, &[&str], u64) -> u64,
    cost_source: CostSource,
    verbose: bool,
) -> Result<AlgoRun, EvalError> {
    let call = |child: &str, texts: &[&str]| -> Result<(Attribution, u64), EvalError> {
        let parents: Vec<ParentText<'_>> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| ParentText {
                id: fake_id(i),
                text: t,
            })
            .collect();
        let start = Instant::now();
        let a = algo
            .attribute_detailed(child, &parents)
            .map_err(|e| EvalError::Run(format!("{short}: {e}")))?;
        let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        Ok((a, cost(child, texts, us)))
    };
    let mut results = Vec::new();
    for c in &ds.case {
        let texts: Vec<&str> = c.parents.iter().map(|p| p.text.as_str()).collect();
        let (a, micros) = call(&c.child, &texts)?;
        if verbose {
            let ws: Vec<String> = a
                .weights
                .iter()
                .zip(&c.parents)
                .map(|(w, p)| format!("{w}{}", if p.shaped { "*" } else { "" }))
                .collect();
            eprintln!(
                "{short:>13} {:<26} [{}] {}{}",
                c.id,
                ws.join(", "),
                memlineage_attribution_eval::human_micros(micros),
                a.fell_back
                    .as_ref()
                    .map(|f| format!("  FELL BACK: {}", f.reason))
                    .unwrap_or_default()
            );
        }
        results.push(CaseResult {
            case: c.id.clone(),
            weights: a.weights,
            fell_back: a.fell_back.map(|f| f.reason),
            micros,
        });
    }
    let mut chain_weights = Vec::new();
    for (k, (parent, child)) in chain.iter().enumerate() {
        let (a, _) = call(child, &[parent.as_str()])?;
        if verbose {
            eprintln!(
                "{short:>13} chain edge {} weight {}{}",
                k + 1,
                a.weights.first().copied().unwrap_or(Weight::ZERO),
                a.fell_back
                    .as_ref()
                    .map(|f| format!("  FELL BACK: {}", f.reason))
                    .unwrap_or_default()
            );
        }
        chain_weights.push(a.weights.first().copied().unwrap_or(Weight::ONE));
    }
    Ok(AlgoRun {
        algorithm: short.to_string(),
        name: algo.name(),
        cost_source,
        results,
        chain: chain_weights,
    })
}

#[cfg(feature = "models")]
fn model()
-> Result<std::sync::Arc<memlineage::attribution::local::memlineage_models::LocalModel>, EvalError>
{
    memlineage::attribution::local::load_local_model().map_err(|e| EvalError::Run(e.to_string()))
}

fn judge_backend(args: &Args) -> Result<ReplayJudge, EvalError> {
    let err = |e: memlineage::attribution::AttributionError| EvalError::Run(e.to_string());
    match args.judge {
        ReplayMode::Replay => ReplayJudge::replay_file(&args.replay).map_err(err),
        #[cfg(feature = "models")]
        mode => {
            let judge = memlineage::attribution::LocalJudge::new(model()?);
            ReplayJudge::new(judge, &args.replay, mode).map_err(err)
        }
        #[cfg(not(feature = "models"))]
        _ => Err(EvalError::Run(
            "recording judge replies needs the model: build with --features models".into(),
        )),
    }
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
    format!("{cpu}, {n} CPUs available, release build, one call at a time")
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), EvalError> {
    let args = parse_args().map_err(EvalError::Run)?;
    let text = std::fs::read_to_string(&args.data).map_err(io(&args.data))?;
    let mut ds = Dataset::parse(&text)?;
    if !args.cases.is_empty() {
        ds.case.retain(|c| args.cases.contains(&c.id));
    }
    let chain = if args.no_chain {
        Vec::new()
    } else {
        ablation_chain()?
    };
    let mut runs = Vec::new();
    let timed = |_: &str, _: &[&str], us: u64| us;
    for algo in &args.algos {
        eprintln!("running {algo} …");
        match algo.as_str() {
            "coarse" => runs.push(run_algo(
                "coarse",
                &Coarse,
                &ds,
                &chain,
                &timed,
                CostSource::Measured,
                args.verbose,
            )?),
            "lm-self-eval" => {
                let lm = LmSelfEval::new(judge_backend(&args)?);
                let recorded = |child: &str, texts: &[&str], us: u64| {
                    let req = lm.request(child, texts);
                    lm.backend()
                        .recorded(&req.system, &req.user)
                        .and_then(|r| r.micros)
                        .unwrap_or(us)
                };
                let source = if args.judge == ReplayMode::Replay {
                    CostSource::Recorded
                } else {
                    CostSource::Measured
                };
                let run = run_algo(
                    "lm-self-eval",
                    &lm,
                    &ds,
                    &chain,
                    &recorded,
                    source,
                    args.verbose,
                )?;
                if args.judge != ReplayMode::Replay && args.write {
                    // Keep exactly the replies of this set and chain, sorted: the committed form.
                    let mut keys = std::collections::BTreeSet::new();
                    let id = memlineage::attribution::judge::JudgeBackend::model_id(lm.backend());
                    let mut add = |child: &str, texts: &[&str]| {
                        let req = lm.request(child, texts);
                        keys.insert(memlineage::attribution::judge::replay::replay_key(
                            &id,
                            &req.system,
                            &req.user,
                        ));
                    };
                    for c in &ds.case {
                        let texts: Vec<&str> = c.parents.iter().map(|p| p.text.as_str()).collect();
                        add(&c.child, &texts);
                    }
                    for (p, c) in &chain {
                        add(c, &[p.as_str()]);
                    }
                    lm.backend().retain_keys(&keys);
                    lm.backend()
                        .compact()
                        .map_err(|e| EvalError::Run(e.to_string()))?;
                }
                runs.push(run);
            }
            #[cfg(feature = "models")]
            "attn-attr" => {
                let attn = memlineage::attribution::AttnAttr::new(model()?);
                // Warm-up (first-call allocations), not timed.
                let _ = attn.attribute(
                    "warm up",
                    &[ParentText {
                        id: fake_id(0),
                        text: "warm up",
                    }],
                );
                runs.push(run_algo(
                    "attn-attr",
                    &attn,
                    &ds,
                    &chain,
                    &timed,
                    CostSource::Measured,
                    args.verbose,
                )?);
            }
            other => {
                return Err(EvalError::Run(format!(
                    "algorithm `{other}` is unknown or needs a feature this build lacks \
                     (attn-attr needs --features models)"
                )));
            }
        }
    }
    let reports = runs
        .iter()
        .map(|r| report(&ds, r))
        .collect::<Result<Vec<_>, _>>()?;
    let machine = machine();
    let md = render_markdown(&ds, &reports, &machine);
    println!("{md}");
    if !args.write {
        return Ok(());
    }
    let root = root();
    let doc_path = root.join("docs/attribution.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_else(|_| "# Attribution\n".into());
    std::fs::write(&doc_path, replace_section(&doc, &md)).map_err(io(&doc_path))?;
    let (all, real) = ds.edge_counts();
    let json = serde_json::json!({
        "dataset": {"cases": ds.case.len(), "edges": all, "real_edges": real},
        "machine": machine,
        "strong_edge": "weight > tau",
        "reports": reports,
    });
    let json_path = root.join("data/attribution/quality.json");
    let mut json_text = serde_json::to_string_pretty(&json).unwrap_or_default();
    json_text.push('\n');
    std::fs::write(&json_path, json_text).map_err(io(&json_path))?;
    let mw_path = root.join("data/attribution/measured_weights.toml");
    std::fs::write(&mw_path, render_measured_weights(&ds, &runs)).map_err(io(&mw_path))?;
    eprintln!(
        "wrote {}, {}, {}",
        doc_path.display(),
        json_path.display(),
        mw_path.display()
    );
    let scen = root.join("crates/memlineage-eval/scenarios/measured_weights.toml");
    if let Some(run) = runs.iter().find(|r| r.algorithm == args.scenario_algo) {
        match std::fs::read_to_string(&scen) {
            Ok(old) if scenario_file_is_ours(&old) => {
                let model = run
                    .name
                    .split_once(':')
                    .map_or(run.name.as_str(), |(_, m)| m);
                let source = format!(
                    "cargo run --release -p memlineage-attribution-eval --features models \
                     -- --scenario-algo {}",
                    run.algorithm
                );
                let new = render_scenario_weights(run, model, &source);
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
    }
    Ok(())
}
