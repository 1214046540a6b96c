//! Orchestration and artifacts.

use crate::cell::Cell;
use crate::error::EvalError;
use crate::json::Json;
use crate::parallel;
use crate::rate::Rate;
use crate::scenario::{self, AgentFile, Kind, WorkloadFile};
use crate::workload::{Episode, Runner};
use crate::{EvalOptions, EvalSummary};
use memlineage_core::gate::Policy;
use std::collections::BTreeMap;
use std::path::Path;

/// Everything loaded from the scenario files.
pub(crate) struct Context {
    pub agent: AgentFile,
    pub policy: Policy,
    pub workloads: Vec<(String, WorkloadFile)>,
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
    let total = jobs.len() as u64;
    let mut done = 0u64;
    progress("episodes", 0, total);
    let episodes: Vec<Episode> = parallel::map(
        &jobs,
        threads(opts),
        |(wi, cell, e)| runners[*wi].episode(*cell, *e),
        &mut || {
            done += 1;
            progress("episodes", done, total);
        },
    )?;
    let mut summary = EvalSummary::default();
    for ep in &episodes {
        let table = match ep.kind {
            Kind::Attack => &mut summary.asr,
            Kind::Benign => &mut summary.utility,
        };
        table
            .entry(ep.cell.name().to_string())
            .or_default()
            .entry(ep.workload.clone())
            .or_insert_with(Rate::default)
            .add(ep.success);
    }
    summary.episodes = episodes.len() as u64;
    write_all(&opts.out_dir, &summary, &episodes, &mut Vec::new())?;
    Ok(summary)
}

fn write_file(dir: &Path, name: &str, text: &str, files: &mut Vec<String>) -> Result<(), EvalError> {
    let path = dir.join(name);
    std::fs::write(&path, text).map_err(|source| EvalError::Io {
        path: path.display().to_string(),
        source,
    })?;
    files.push(name.to_string());
    Ok(())
}

fn write_all(
    dir: &Path,
    summary: &EvalSummary,
    episodes: &[Episode],
    files: &mut Vec<String>,
) -> Result<(), EvalError> {
    std::fs::create_dir_all(dir).map_err(|source| EvalError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    let mut lines = String::new();
    for ep in episodes {
        lines.push_str(&ep.json().compact());
        lines.push('\n');
    }
    write_file(dir, "episodes.jsonl", &lines, files)?;
    write_file(dir, "summary.json", &summary_json(summary).pretty(), files)?;
    Ok(())
}

fn rates_json(t: &BTreeMap<String, BTreeMap<String, Rate>>) -> Json {
    Json::Obj(
        t.iter()
            .map(|(cell, m)| {
                (
                    cell.clone(),
                    Json::Obj(m.iter().map(|(w, r)| (w.clone(), r.json())).collect()),
                )
            })
            .collect(),
    )
}

fn summary_json(s: &EvalSummary) -> Json {
    Json::obj()
        .with("asr", rates_json(&s.asr))
        .with("utility", rates_json(&s.utility))
}

pub(crate) fn headline(s: &EvalSummary) -> String {
    let mut out = String::new();
    for (cell, m) in &s.asr {
        let parts: Vec<String> = m.iter().map(|(w, r)| format!("{w} {r}")).collect();
        out.push_str(&format!("ASR {cell}: {}\n", parts.join(", ")));
    }
    for (cell, m) in &s.utility {
        let parts: Vec<String> = m.iter().map(|(w, r)| format!("{w} {r}")).collect();
        out.push_str(&format!("utility {cell}: {}\n", parts.join(", ")));
    }
    out
}
