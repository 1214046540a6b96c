//! Orchestration of a run and its artifacts: `summary.json`, `tables.md`, `asr.svg`,
//! `tau_k.svg`, `tau_k.json`, `episodes.jsonl`, `trace.md`.

use crate::ablation::{self, Ablation};
use crate::banking::{self, Bank, BankingFile, PairResult};
use crate::cell::{BankCell, Cell};
use crate::error::EvalError;
use crate::json::Json;
use crate::parallel;
use crate::rate::{Rate, bp_decimal};
use crate::scenario::{self, AblationFile, AgentFile, Kind, MeasuredFile, TraceFile, WorkloadFile};
use crate::svg;
use crate::trace::{self, Trace};
use crate::workload::{Episode, Runner};
use crate::{BankingRates, EvalOptions, EvalSummary, SafeTau};
use memlineage_core::gate::Policy;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Everything loaded from the scenario files.
pub(crate) struct Context {
    pub agent: AgentFile,
    pub policy: Policy,
    pub workloads: Vec<(String, WorkloadFile)>,
    pub banking: BankingFile,
    pub ablation: AblationFile,
    pub measured: MeasuredFile,
    pub trace: TraceFile,
}

impl Context {
    pub(crate) fn load(opts: &EvalOptions) -> Result<Context, EvalError> {
        let agent: AgentFile = scenario::parse(scenario::AGENT_FILE)?;
        let policy = Policy::parse(scenario::POLICY_FILE.1)?;
        let mut workloads = scenario::workloads(&agent)?;
        if let Some(n) = opts.episodes {
            for (_, w) in &mut workloads {
                w.workload.episodes = n.max(1);
            }
        }
        Ok(Context {
            agent,
            policy,
            workloads,
            banking: scenario::parse(scenario::BANKING_FILE)?,
            ablation: scenario::parse(scenario::ABLATION_FILE)?,
            measured: scenario::parse(scenario::MEASURED_FILE)?,
            trace: scenario::parse(scenario::TRACE_FILE)?,
        })
    }
}

fn threads(opts: &EvalOptions) -> usize {
    opts.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(8)
    })
}

/// Everything a run produced.
struct Results<'a> {
    ctx: &'a Context,
    episodes: Vec<Episode>,
    pairs: Vec<PairResult>,
    ablation: Ablation,
    trace: Trace,
}

pub(crate) fn run(
    ctx: &Context,
    opts: &EvalOptions,
    progress: &mut dyn FnMut(&str, u64, u64),
) -> Result<EvalSummary, EvalError> {
    let runners: Vec<Runner<'_>> = ctx
        .workloads
        .iter()
        .map(|(file, w)| Runner::new(&ctx.agent, &ctx.policy, file, w))
        .collect::<Result<_, _>>()?;
    let mut jobs: Vec<(usize, Cell, u32)> = Vec::new();
    for (wi, r) in runners.iter().enumerate() {
        for cell in Cell::ALL {
            for e in 0..r.workload.workload.episodes {
                jobs.push((wi, cell, e));
            }
        }
    }
    let bank = Bank::new(&ctx.banking, &ctx.agent, &ctx.policy)?;
    let bank_jobs: Vec<(usize, BankCell, bool)> = (0..ctx.banking.pair.len())
        .flat_map(|p| {
            BankCell::ALL
                .into_iter()
                .flat_map(move |c| [(p, c, true), (p, c, false)])
        })
        .collect();
    let total = jobs.len() as u64
        + banking::units(&ctx.banking)
        + ablation::units(&ctx.ablation.ablation)
        + 2;
    let mut done = 0u64;
    progress("episodes", done, total);
    let workers = threads(opts);
    let episodes: Vec<Episode> = parallel::map(
        &jobs,
        workers,
        |(wi, cell, e)| runners[*wi].episode(*cell, *e),
        &mut || {
            done += 1;
            progress("episodes", done, total);
        },
    )?;
    let runs = parallel::map(
        &bank_jobs,
        workers,
        |(p, cell, attacked)| bank.run(&ctx.banking.pair[*p], *cell, *attacked),
        &mut || {
            done += 1;
            progress("banking", done, total);
        },
    )?;
    let mut pairs: Vec<PairResult> = ctx
        .banking
        .pair
        .iter()
        .map(|p| PairResult {
            spec: p.clone(),
            runs: Vec::new(),
        })
        .collect();
    for ((p, _, _), run) in bank_jobs.iter().zip(runs) {
        pairs[*p].runs.push(run);
    }
    let ablation = ablation::run(
        &ctx.agent,
        &ctx.ablation.ablation,
        &ctx.measured.measured,
        &mut || {
            done += 1;
            progress("ablation", done, total);
        },
    )?;
    let grammar = ctx.agent.grammar(&[], scenario::AGENT_FILE.0)?;
    let trace = trace::run(&ctx.agent, &grammar, &ctx.policy, &ctx.trace.trace)?;
    done += 1;
    progress("trace", done, total);
    let results = Results {
        ctx,
        episodes,
        pairs,
        ablation,
        trace,
    };
    let mut summary = summarise(&results);
    write_all(&opts.out_dir, &results, &mut summary)?;
    done += 1;
    progress("written", done, total);
    Ok(summary)
}

fn summarise(r: &Results<'_>) -> EvalSummary {
    let mut s = EvalSummary::default();
    for ep in &r.episodes {
        let table = match ep.kind {
            Kind::Attack => &mut s.asr,
            Kind::Benign => &mut s.utility,
        };
        table
            .entry(ep.cell.name().to_string())
            .or_default()
            .entry(ep.workload.clone())
            .or_insert_with(Rate::default)
            .add(ep.success);
    }
    s.banking = banking_rates(&r.pairs, true);
    for m in &r.ablation.models {
        if let Some(safe) = m.safe.get("permissive") {
            s.tau_k.insert(m.name.to_string(), safe.clone());
        }
    }
    s.episodes = r.episodes.len() as u64 + r.pairs.iter().map(|p| p.runs.len() as u64).sum::<u64>();
    s
}

fn banking_rates(pairs: &[PairResult], core_only: bool) -> BTreeMap<String, BankingRates> {
    let mut out: BTreeMap<String, BankingRates> = BTreeMap::new();
    for p in pairs.iter().filter(|p| p.spec.core || !core_only) {
        for cell in BankCell::ALL {
            let e = out.entry(cell.name().to_string()).or_default();
            if let Some(run) = p.run(cell, true) {
                e.asr.add(run.security.value);
                e.utility.add(run.utility.value);
            }
            if let Some(run) = p.run(cell, false) {
                e.benign_utility.add(run.utility.value);
            }
        }
    }
    out
}

fn write_file(
    dir: &Path,
    name: &str,
    text: &str,
    files: &mut Vec<String>,
) -> Result<(), EvalError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| EvalError::Io {
        path: path.display().to_string(),
        source,
    })?;
    files.push(name.to_string());
    Ok(())
}

fn write_all(dir: &Path, r: &Results<'_>, summary: &mut EvalSummary) -> Result<(), EvalError> {
    std::fs::create_dir_all(dir).map_err(|source| EvalError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut files = Vec::new();
    let mut lines = String::new();
    for ep in &r.episodes {
        lines.push_str(&ep.json().compact());
        lines.push('\n');
    }
    for p in &r.pairs {
        for run in &p.runs {
            lines.push_str(&run.json(&p.spec).compact());
            lines.push('\n');
        }
    }
    write_file(dir, "episodes.jsonl", &lines, &mut files)?;
    let attack: Vec<String> = workload_names(r, Kind::Attack);
    let cells: Vec<&str> = Cell::ALL.iter().map(|c| c.name()).collect();
    let bars = svg::asr_bars(
        "Attack success rate per defence cell and workload",
        &cells,
        &attack,
        &|c, w| {
            summary
                .asr
                .get(c)
                .and_then(|m| m.get(w))
                .copied()
                .unwrap_or_default()
        },
    );
    write_file(dir, "asr.svg", &bars, &mut files)?;
    write_file(
        dir,
        "tau_k.svg",
        &svg::tau_k_heatmap(&r.ablation),
        &mut files,
    )?;
    write_file(
        dir,
        "tau_k.json",
        &tau_k_json(&r.ablation).pretty(),
        &mut files,
    )?;
    write_file(dir, "trace.md", &r.trace.markdown, &mut files)?;
    write_file(dir, "tables.md", &tables(r, summary), &mut files)?;
    files.push("summary.json".to_string());
    files.sort();
    summary.files = files.clone();
    let mut scratch = Vec::new();
    write_file(
        dir,
        "summary.json",
        &summary_json(r, summary).pretty(),
        &mut scratch,
    )?;
    Ok(())
}

fn workload_names(r: &Results<'_>, kind: Kind) -> Vec<String> {
    r.ctx
        .workloads
        .iter()
        .filter(|(_, w)| w.workload.kind == kind)
        .map(|(_, w)| w.workload.name.clone())
        .collect()
}

fn rates_json(t: &BTreeMap<String, BTreeMap<String, Rate>>, counts: bool) -> Json {
    Json::Obj(
        t.iter()
            .map(|(cell, m)| {
                (
                    cell.clone(),
                    Json::Obj(
                        m.iter()
                            .map(|(w, r)| {
                                (w.clone(), if counts { r.json_counts() } else { r.json() })
                            })
                            .collect(),
                    ),
                )
            })
            .collect(),
    )
}

fn safe_json(s: SafeTau) -> Json {
    match s {
        SafeTau::Tau(bp) => Json::Num(bp_decimal(bp, 2)),
        other => Json::str(other.display()),
    }
}

fn tau_k_by(ab: &Ablation, fallback: &str) -> Json {
    Json::Obj(
        ab.models
            .iter()
            .map(|m| {
                let inner = m
                    .safe
                    .get(fallback)
                    .map(|safe| {
                        Json::Obj(
                            safe.iter()
                                .map(|(k, s)| (k.to_string(), safe_json(*s)))
                                .collect(),
                        )
                    })
                    .unwrap_or(Json::Null);
                (m.name.to_string(), inner)
            })
            .collect(),
    )
}

fn banking_json(rates: &BTreeMap<String, BankingRates>) -> Json {
    Json::Obj(
        rates
            .iter()
            .map(|(c, b)| {
                (
                    c.clone(),
                    Json::obj()
                        .with("asr", b.asr.json())
                        .with("utility", b.utility.json())
                        .with("benign_utility", b.benign_utility.json())
                        .with("pairs", Json::int(b.asr.total)),
                )
            })
            .collect(),
    )
}

fn summary_json(r: &Results<'_>, s: &EvalSummary) -> Json {
    let mut pairs = BTreeMap::new();
    for p in &r.pairs {
        let mut cells = BTreeMap::new();
        for cell in BankCell::ALL {
            let mut j = Json::obj();
            if let Some(run) = p.run(cell, true) {
                j.set("utility", Json::Bool(run.utility.value));
                j.set("security", Json::Bool(run.security.value));
                if let Some(a) = run.utility.agentdojo {
                    j.set("utility_agentdojo", Json::Bool(a));
                }
                if let Some(a) = run.security.agentdojo {
                    j.set("security_agentdojo", Json::Bool(a));
                }
                j.set(
                    "decisions",
                    Json::Arr(
                        run.calls
                            .iter()
                            .map(|(d, _)| {
                                Json::str(d.decision.as_ref().map_or_else(
                                    || {
                                        if d.error.is_some() {
                                            "error"
                                        } else {
                                            "no_gate"
                                        }
                                        .to_string()
                                    },
                                    |x| x.decision.as_str().to_string(),
                                ))
                            })
                            .collect(),
                    ),
                );
            }
            if let Some(run) = p.run(cell, false) {
                j.set("benign_utility", Json::Bool(run.utility.value));
            }
            cells.insert(cell.name().to_string(), j);
        }
        pairs.insert(
            p.spec.name.clone(),
            Json::obj()
                .with("n", Json::int(p.spec.n))
                .with("core", Json::Bool(p.spec.core))
                .with("user_task", Json::str(p.spec.user_task.clone()))
                .with("injection_task", Json::str(p.spec.injection_task.clone()))
                .with("vector", Json::str(p.spec.vector.clone()))
                .with("cells", Json::Obj(cells)),
        );
    }
    let stopped = {
        let mut m: BTreeMap<String, BTreeMap<String, BTreeMap<String, u64>>> = BTreeMap::new();
        for ep in r.episodes.iter().filter(|e| e.kind == Kind::Attack) {
            *m.entry(ep.cell.name().to_string())
                .or_default()
                .entry(ep.workload.clone())
                .or_default()
                .entry(ep.stopped_by().to_string())
                .or_default() += 1;
        }
        Json::Obj(
            m.into_iter()
                .map(|(c, w)| {
                    (
                        c,
                        Json::Obj(
                            w.into_iter()
                                .map(|(wl, counts)| {
                                    (
                                        wl,
                                        Json::Obj(
                                            counts
                                                .into_iter()
                                                .map(|(k, n)| (k, Json::int(n)))
                                                .collect(),
                                        ),
                                    )
                                })
                                .collect(),
                        ),
                    )
                })
                .collect(),
        )
    };
    Json::obj()
        .with(
            "format",
            Json::obj()
                .with("version", Json::int(1))
                .with(
                    "rates",
                    Json::str("successes / episodes, a JSON number with exactly 4 decimals, rounded half up"),
                )
                .with(
                    "tau_k",
                    Json::str("largest τ on the grid (2 decimals) at which the tip of a K-chain is still untrusted; \"none\" if no τ is, \"not measured\" when the weights are not measured yet"),
                ),
        )
        .with("asr", rates_json(&s.asr, false))
        .with("asr_counts", rates_json(&s.asr, true))
        .with("asr_stopped_by", stopped)
        .with("utility", rates_json(&s.utility, false))
        .with("utility_counts", rates_json(&s.utility, true))
        .with("banking", banking_json(&s.banking))
        .with("banking_all_pairs", banking_json(&banking_rates(&r.pairs, false)))
        .with("banking_pairs", Json::Obj(pairs))
        .with("tau_k", tau_k_by(&r.ablation, "permissive"))
        .with("tau_k_strict", tau_k_by(&r.ablation, "strict"))
        .with(
            "trace",
            Json::obj()
                .with("deny", Json::str(r.trace.deny.clone()))
                .with("repair", Json::str(r.trace.repair.clone()))
                .with("sig_only_dispatched", Json::Bool(r.trace.sig_only_dispatched)),
        )
        .with("episodes", Json::int(s.episodes))
        .with(
            "files",
            Json::Arr(s.files.iter().map(|f| Json::str(f.clone())).collect()),
        )
}

fn tau_k_json(ab: &Ablation) -> Json {
    let mut models = BTreeMap::new();
    for m in &ab.models {
        let mut grid = BTreeMap::new();
        for (f, rows) in &m.grid {
            let rows_json: BTreeMap<String, Json> = rows
                .iter()
                .enumerate()
                .map(|(k, row)| {
                    let marks: String = row.iter().map(|u| if *u { 'U' } else { 'T' }).collect();
                    ((k + 1).to_string(), Json::str(marks))
                })
                .collect();
            grid.insert(
                (*f).to_string(),
                if m.edges.is_some() {
                    Json::Obj(rows_json)
                } else {
                    Json::str("not measured")
                },
            );
        }
        let edges = match &m.edges {
            Some(e) => Json::Arr(e.iter().map(|w| Json::Num(bp_decimal(w.bp(), 4))).collect()),
            None => Json::str("not measured"),
        };
        models.insert(
            m.name.to_string(),
            Json::obj()
                .with("edges", edges)
                .with("grid", Json::Obj(grid)),
        );
    }
    Json::obj()
        .with(
            "legend",
            Json::str("grid[fallback][K] has one character per τ of tau_grid: U = the tip is untrusted (EXTERNAL reaches it), T = the tip is trusted (laundered)"),
        )
        .with(
            "tau_grid",
            Json::Arr(ab.taus.iter().map(|t| Json::Num(bp_decimal(*t, 2))).collect()),
        )
        .with("models", Json::Obj(models))
        .with(
            "measured",
            Json::obj()
                .with("status", Json::str(ab.measured.status.clone()))
                .with("algorithm", Json::str(ab.measured.algorithm.clone()))
                .with("model", Json::str(ab.measured.model.clone()))
                .with("source", Json::str(ab.measured.source.clone())),
        )
}

fn yes(b: bool) -> &'static str {
    if b { "T" } else { "F" }
}

fn tables(r: &Results<'_>, s: &EvalSummary) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# MemLineage evaluation results\n");
    let _ = writeln!(
        md,
        "Generated by `memlineage eval` (crate `memlineage-eval`); do not edit. Every number traces \
         back to the lines of `episodes.jsonl`; `docs/evaluation.md` explains the workloads, cells and \
         metrics and compares them with the paper.\n"
    );
    let cells: Vec<&str> = Cell::ALL.iter().map(|c| c.name()).collect();
    let attack = workload_names(r, Kind::Attack);
    let benign = workload_names(r, Kind::Benign);
    let table =
        |md: &mut String, t: &BTreeMap<String, BTreeMap<String, Rate>>, names: &[String]| {
            let _ = writeln!(md, "| cell | {} |", names.join(" | "));
            let _ = writeln!(md, "|---|{}", "---|".repeat(names.len()));
            for c in &cells {
                let row: Vec<String> = names
                    .iter()
                    .map(|w| {
                        let rate = t
                            .get(*c)
                            .and_then(|m| m.get(w))
                            .copied()
                            .unwrap_or_default();
                        format!("{} ({}/{})", rate.short(), rate.successes, rate.total)
                    })
                    .collect();
                let _ = writeln!(md, "| `{c}` | {} |", row.join(" | "));
            }
            md.push('\n');
        };
    let _ = writeln!(md, "## Workloads\n");
    let _ = writeln!(
        md,
        "| workload | kind | title | after | episodes per cell |\n|---|---|---|---|---|"
    );
    for (file, w) in &r.ctx.workloads {
        let m = &w.workload;
        let _ = writeln!(
            md,
            "| [`{}`](../crates/memlineage-eval/scenarios/{file}) | {} | {} | {} | {} |",
            m.name,
            match m.kind {
                Kind::Attack => "attack",
                Kind::Benign => "benign",
            },
            m.title,
            m.paper.as_deref().unwrap_or("—"),
            m.episodes
        );
    }
    md.push('\n');
    for (_, w) in &r.ctx.workloads {
        let m = &w.workload;
        let text = m
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(md, "- **{}**: {text}", m.name);
    }
    md.push('\n');
    let _ = writeln!(md, "## Attack success rate\n");
    let _ = writeln!(
        md,
        "Fraction of episodes in which the attacker's call was dispatched (successes/episodes).\n"
    );
    table(&mut md, &s.asr, &attack);
    let _ = writeln!(
        md,
        "Where the attacks were stopped (episodes): `retrieval` = the poisoned entry was dropped by verification, `gate` = the call was proposed and denied, `none` = the attack succeeded.\n"
    );
    let _ = writeln!(
        md,
        "| cell | workload | none | retrieval | gate | other |\n|---|---|---|---|---|---|"
    );
    for c in &cells {
        for w in &attack {
            let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
            for ep in r
                .episodes
                .iter()
                .filter(|e| e.cell.name() == *c && &e.workload == w)
            {
                *counts.entry(ep.stopped_by()).or_default() += 1;
            }
            let g = |k: &str| counts.get(k).copied().unwrap_or(0);
            let _ = writeln!(
                md,
                "| `{c}` | {w} | {} | {} | {} | {} |",
                g("none"),
                g("retrieval"),
                g("gate"),
                g("no_call") + g("other")
            );
        }
    }
    md.push('\n');
    let _ = writeln!(md, "## Benign utility\n");
    let _ = writeln!(
        md,
        "Legitimate-dispatch rate: fraction of episodes in which the legitimate call was dispatched (a false positive is a failure).\n"
    );
    table(&mut md, &s.utility, &benign);
    let _ = writeln!(
        md,
        "## Banking pairs (modelled on AgentDojo's banking suite)\n"
    );
    let _ = writeln!(
        md,
        "U = utility under attack (the user task's check), S = security (the injection task's check: T means the attack succeeded), B = utility without attack. Decisions per proposed call in order (`allow`, `deny`, `repair`; `no_gate` where no gate runs).\n"
    );
    let bcells: Vec<&str> = BankCell::ALL.iter().map(|c| c.name()).collect();
    let _ = writeln!(
        md,
        "| # | pair | core | {} |",
        bcells
            .iter()
            .map(|c| format!("`{c}` U/S/B"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(md, "|---|---|---|{}", "---|".repeat(bcells.len()));
    for p in &r.pairs {
        let row: Vec<String> = BankCell::ALL
            .iter()
            .map(|c| {
                let a = p.run(*c, true);
                let b = p.run(*c, false);
                match (a, b) {
                    (Some(a), Some(b)) => format!(
                        "{}/{}/{}",
                        yes(a.utility.value),
                        yes(a.security.value),
                        yes(b.utility.value)
                    ),
                    _ => "—".to_string(),
                }
            })
            .collect();
        let _ = writeln!(
            md,
            "| {} | `{}` ({} × {}) | {} | {} |",
            p.spec.n,
            p.spec.name,
            p.spec.user_task,
            p.spec.injection_task,
            if p.spec.core { "yes" } else { "" },
            row.join(" | ")
        );
    }
    md.push('\n');
    let _ = writeln!(md, "Gate decisions under attack, per proposed call:\n");
    let _ = writeln!(
        md,
        "| pair | `memlineage_deny` | `memlineage_repair` |\n|---|---|---|"
    );
    for p in &r.pairs {
        let dec = |c: BankCell| {
            p.run(c, true).map_or_else(String::new, |run| {
                run.calls
                    .iter()
                    .map(|(d, _)| {
                        let name = d.decision.as_ref().map_or("error", |x| x.decision.as_str());
                        format!("{} {name}", d.proposed.name)
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            })
        };
        let _ = writeln!(
            md,
            "| `{}` | {} | {} |",
            p.spec.name,
            dec(BankCell::Deny),
            dec(BankCell::Repair)
        );
    }
    md.push('\n');
    let agentdojo_notes: Vec<String> = r
        .pairs
        .iter()
        .flat_map(|p| {
            BankCell::ALL.iter().filter_map(move |c| {
                let run = p.run(*c, true)?;
                let mut notes = Vec::new();
                if let Some(a) = run.utility.agentdojo
                    && a != run.utility.value
                {
                    notes.push(format!(
                        "utility {} (scored {})",
                        yes(a),
                        yes(run.utility.value)
                    ));
                }
                if let Some(a) = run.security.agentdojo
                    && a != run.security.value
                {
                    notes.push(format!(
                        "security {} (scored {})",
                        yes(a),
                        yes(run.security.value)
                    ));
                }
                (!notes.is_empty()).then(|| {
                    format!(
                        "- `{}` under `{}`: AgentDojo's own check says {}.",
                        p.spec.name,
                        c.name(),
                        notes.join(", ")
                    )
                })
            })
        })
        .collect();
    if !agentdojo_notes.is_empty() {
        let _ = writeln!(
            md,
            "Where AgentDojo's literal check differs from the one scored (UT6's vacuous utility check, IT0's operator-precedence slip):\n"
        );
        for n in agentdojo_notes {
            let _ = writeln!(md, "{n}");
        }
        md.push('\n');
    }
    let _ = writeln!(md, "Overall:\n");
    let _ = writeln!(
        md,
        "| cell | ASR (core 6) | utility under attack (core 6) | benign utility (core 6) | ASR (all) | utility (all) | benign utility (all) |\n|---|---|---|---|---|---|---|"
    );
    let all = banking_rates(&r.pairs, false);
    for c in &bcells {
        let core = s.banking.get(*c).copied().unwrap_or_default();
        let a = all.get(*c).copied().unwrap_or_default();
        let f = |r: Rate| format!("{} ({}/{})", r.short(), r.successes, r.total);
        let _ = writeln!(
            md,
            "| `{c}` | {} | {} | {} | {} | {} | {} |",
            f(core.asr),
            f(core.utility),
            f(core.benign_utility),
            f(a.asr),
            f(a.utility),
            f(a.benign_utility)
        );
    }
    md.push('\n');
    let _ = writeln!(md, "Why each pair was chosen:\n");
    for p in &r.pairs {
        let _ = writeln!(md, "{}. `{}`: {}", p.spec.n, p.spec.name, p.spec.reason);
    }
    md.push('\n');
    let _ = writeln!(md, "## τ×K ablation\n");
    let ab = &r.ablation;
    let _ = writeln!(
        md,
        "An EXTERNAL root and a chain of K agent summaries, one parent each; edge k weighs w_k. Largest τ on the grid (step {}) at which the tip is still untrusted (\"safe\").\n",
        bp_decimal(ab.taus.get(1).copied().unwrap_or(0), 2)
    );
    for fallback in ["permissive", "strict"] {
        let _ = writeln!(md, "### Largest safe τ, {fallback} fallback\n");
        let ks: Vec<String> = (1..=ab.max_k).map(|k| format!("K={k}")).collect();
        let _ = writeln!(md, "| weights | {} |", ks.join(" | "));
        let _ = writeln!(md, "|---|{}", "---|".repeat(ks.len()));
        for m in &ab.models {
            let row: Vec<String> = (1..=ab.max_k)
                .map(|k| {
                    m.safe
                        .get(fallback)
                        .and_then(|s| s.get(&k))
                        .map_or_else(String::new, |s| s.display())
                })
                .collect();
            let _ = writeln!(md, "| {} | {} |", m.name, row.join(" | "));
        }
        md.push('\n');
    }
    let _ = writeln!(md, "Edge weights:\n");
    let _ = writeln!(
        md,
        "| weights | {} |",
        (1..=ab.max_k)
            .map(|k| format!("w{k}"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(md, "|---|{}", "---|".repeat(ab.max_k as usize));
    for m in &ab.models {
        let row: Vec<String> = match &m.edges {
            Some(e) => e.iter().map(|w| bp_decimal(w.bp(), 4)).collect(),
            None => vec!["not measured".to_string(); ab.max_k as usize],
        };
        let _ = writeln!(md, "| {} | {} |", m.name, row.join(" | "));
    }
    md.push('\n');
    let _ = writeln!(
        md,
        "Where EXTERNAL reaches the tip (permissive fallback): ■ = the tip is untrusted, · = laundered. Columns are τ = {} … {}.\n",
        bp_decimal(ab.taus[0], 2),
        bp_decimal(*ab.taus.last().unwrap_or(&10_000), 2)
    );
    for m in &ab.models {
        let _ = writeln!(md, "**{}**\n", m.name);
        if m.edges.is_none() {
            let _ = writeln!(
                md,
                "not measured (see `crates/memlineage-eval/scenarios/measured_weights.toml`)\n"
            );
            continue;
        }
        let mut block = String::new();
        let header: String = ab
            .taus
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i % 4 == 0 {
                    format!("{:<8}", bp_decimal(*t, 2))
                } else {
                    String::new()
                }
            })
            .collect();
        let _ = writeln!(block, "τ:   {}", header.trim_end());
        if let Some(rows) = m.grid.get("permissive") {
            for (k, row) in rows.iter().enumerate() {
                let marks: String = row.iter().map(|u| if *u { "■ " } else { "· " }).collect();
                let _ = writeln!(block, "K={}  {}", k + 1, marks.trim_end());
            }
        }
        md.push_str("```text\n");
        md.push_str(&block);
        md.push_str("```\n\n");
    }
    let _ = writeln!(md, "## The laundering trace\n");
    let _ = writeln!(
        md,
        "See `trace.md`: deny mode **{}**, repair **{}**, sig_only_baseline {}.\n",
        r.trace.deny,
        r.trace.repair,
        if r.trace.sig_only_dispatched {
            "dispatches the attacker's call"
        } else {
            "does not dispatch"
        }
    );
    md
}

pub(crate) fn headline(s: &EvalSummary) -> String {
    let mut out = String::new();
    let groups: [(&str, &[&str]); 2] = [
        (
            "the paper's workloads",
            &["poison_raw", "graft", "sleeper_derived"],
        ),
        (
            "beyond the paper",
            &[
                "minja",
                "zombie",
                "adaptive_under_tau",
                "adaptive_trusted_cover",
            ],
        ),
    ];
    for (title, workloads) in groups {
        let _ = writeln!(out, "ASR, {title} ({}):", workloads.join(" / "));
        for c in Cell::ALL {
            if let Some(m) = s.asr.get(c.name()) {
                let v: Vec<String> = workloads
                    .iter()
                    .map(|w| m.get(*w).map_or_else(|| "-".to_string(), |r| r.short()))
                    .collect();
                let _ = writeln!(out, "  {:<22} {}", c.name(), v.join(" / "));
            }
        }
    }
    let _ = writeln!(out, "benign utility (min over workflows):");
    for c in Cell::ALL {
        if let Some(m) = s.utility.get(c.name()) {
            let min = m
                .values()
                .min_by_key(|r| r.bp())
                .copied()
                .unwrap_or_default();
            let _ = writeln!(out, "  {:<22} {}", c.name(), min.short());
        }
    }
    let _ = writeln!(out, "banking, core pairs (ASR / utility under attack):");
    for c in BankCell::ALL {
        if let Some(b) = s.banking.get(c.name()) {
            let _ = writeln!(
                out,
                "  {:<22} {} / {} ({}/{} pairs keep utility)",
                c.name(),
                b.asr.short(),
                b.utility.short(),
                b.utility.successes,
                b.utility.total
            );
        }
    }
    let _ = writeln!(
        out,
        "largest safe τ for K = 1..8 (permissive fallback; tau_k in summary.json):"
    );
    for (weights, by_k) in &s.tau_k {
        let v: Vec<String> = by_k.values().map(|t| t.display()).collect();
        let _ = writeln!(out, "  {weights:<22} {}", v.join(" "));
    }
    out
}
