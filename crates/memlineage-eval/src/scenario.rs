//! Scenario files: the data that defines the agent, the gate policy, the workloads, the banking
//! suite, the ablation and the measured weights. All of them are embedded in the binary with
//! `include_str!` (workloads through `build.rs`, which lists `scenarios/workloads/*.toml`), so
//! `memlineage eval` runs from any directory, and a new workload is a new file.

use crate::error::EvalError;
use crate::grammar::{Grammar, Template};
use memlineage_core::gate::ParamType;
use memlineage_core::gate::renderings::{self, Reading};
use memlineage_core::label::{TrustClass, Weight};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use serde::Deserialize;
use std::collections::BTreeMap;

include!(concat!(env!("OUT_DIR"), "/workloads.rs"));

/// The agent, its world and its grammar.
pub(crate) const AGENT_FILE: (&str, &str) = ("agent.toml", include_str!("../scenarios/agent.toml"));
/// The gate policy of the `memlineage*` cells.
pub(crate) const POLICY_FILE: (&str, &str) =
    ("policy.toml", include_str!("../scenarios/policy.toml"));
/// The AgentDojo-modelled banking suite and its pairs.
pub(crate) const BANKING_FILE: (&str, &str) =
    ("banking.toml", include_str!("../scenarios/banking.toml"));
/// The τ×K ablation grid.
pub(crate) const ABLATION_FILE: (&str, &str) =
    ("ablation.toml", include_str!("../scenarios/ablation.toml"));
/// Weights measured by the attribution algorithms (a placeholder until they are measured).
pub(crate) const MEASURED_FILE: (&str, &str) = (
    "measured_weights.toml",
    include_str!("../scenarios/measured_weights.toml"),
);
/// The two-session RAG-to-memory trace.
pub(crate) const TRACE_FILE: (&str, &str) = ("trace.toml", include_str!("../scenarios/trace.toml"));

/// Parses one embedded TOML file.
pub(crate) fn parse<T: for<'de> Deserialize<'de>>(file: (&str, &str)) -> Result<T, EvalError> {
    toml::from_str(file.1).map_err(|e| EvalError::scenario(file.0, e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// agent.toml

/// `agent.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentFile {
    pub agent: AgentConfig,
    pub principal: Vec<PrincipalSpec>,
    pub attacker: AttackerKeys,
    #[serde(default)]
    pub template: Vec<TemplateSpec>,
}

/// The `[agent]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AgentConfig {
    pub origin: String,
    pub tau: Weight,
    pub retrieval_limit: usize,
    pub memory_scope: String,
    pub inbox_scope: String,
    pub session_scope: String,
    pub start_ms: u64,
    pub step_ms: u64,
    pub tools: Vec<String>,
    pub fact_prefix: String,
    pub lesson_prefix: String,
    pub no_answer: String,
}

/// A registered principal.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PrincipalSpec {
    pub name: String,
    pub class: TrustClass,
    pub seed: u64,
}

/// Keys the attacker holds (never registered).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttackerKeys {
    pub unregistered_name: String,
    pub unregistered_seed: u64,
    pub forger_seed: u64,
    pub impersonates: String,
}

/// A natural-language template.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TemplateSpec {
    pub pattern: String,
    pub tool: String,
    #[serde(default)]
    pub args: BTreeMap<String, String>,
}

impl TemplateSpec {
    pub(crate) fn build(&self, file: &str) -> Result<Template, EvalError> {
        Template::new(&self.pattern, &self.tool, self.args.clone())
            .map_err(|e| EvalError::scenario(file, e))
    }
}

impl AgentFile {
    /// The agent's grammar plus `extra` templates.
    pub(crate) fn grammar(&self, extra: &[TemplateSpec], file: &str) -> Result<Grammar, EvalError> {
        let mut templates = Vec::new();
        for t in &self.template {
            templates.push(t.build(AGENT_FILE.0)?);
        }
        for t in extra {
            templates.push(t.build(file)?);
        }
        Ok(Grammar {
            tools: self.agent.tools.clone(),
            templates,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// workloads/*.toml

/// One workload file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkloadFile {
    pub workload: WorkloadMeta,
    #[serde(default)]
    pub vars: BTreeMap<String, VarSpec>,
    pub goal: Goal,
    #[serde(default)]
    pub template: Vec<TemplateSpec>,
    pub step: Vec<Step>,
}

/// Attack (counts towards ASR) or benign (counts towards utility).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Kind {
    Attack,
    Benign,
}

/// The `[workload]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WorkloadMeta {
    pub name: String,
    pub kind: Kind,
    /// Position in tables (then name).
    pub order: u32,
    pub title: String,
    #[serde(default)]
    pub paper: Option<String>,
    pub description: String,
    pub episodes: u32,
    pub seed: u64,
    pub weights: WeightsName,
}

/// The attribution weight model of a workload's derivation steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WeightsName {
    /// Every edge 1.0 (Coarse attribution).
    Coarse,
    /// Every edge τ − `margin` basis points (the `margin` variable).
    UnderTau,
    /// Edges to trusted parents 1.0, edges to untrusted parents τ − `margin`.
    UnderTauCover,
    /// No edges at all: the writer omits the lineage (issue 19's parentless note). The
    /// derived entry is a root the agent signs, `TRUSTED` by its writer.
    Omitted,
}

/// A per-episode variable: a list (one value drawn per episode), `{cycle = [...]}` (value by
/// episode index), `{range = [lo, hi]}` (an integer drawn from the inclusive range) or
/// `{render = "VAR", type = "TYPE"}` (an attacker's rendering of variable `VAR` as a value of
/// the gate type `TYPE`: separators, invisible characters, compatibility forms, look-alikes,
/// `memlineage_core::gate::renderings`, drawn after every other variable).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum VarSpec {
    List(Vec<String>),
    Cycle {
        cycle: Vec<String>,
    },
    Range {
        range: [u32; 2],
    },
    Render {
        render: String,
        #[serde(rename = "type")]
        kind: String,
    },
}

/// What counts as success: a dispatched call of `tool` whose arguments equal (`equals`, compared
/// in the policy's normal form where the policy types the parameter) or contain (`contains`) the
/// given values.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Goal {
    pub tool: String,
    #[serde(default)]
    pub equals: BTreeMap<String, String>,
    #[serde(default)]
    pub contains: BTreeMap<String, String>,
}

/// Where an entry is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ScopeName {
    Memory,
    Inbox,
}

/// How a session fills its context from memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Retrieve {
    /// Full-text search of the memory scope with the query (default: the request).
    #[default]
    Search,
    /// Only the latest memorised entry (the chain tip).
    Tip,
    /// The tip when there is one, else search.
    TipOrSearch,
    /// Nothing from memory.
    None,
}

/// What the agent does at the end of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Act {
    /// Nothing.
    #[default]
    None,
    /// Propose every call an instruction in the context asks for.
    Calls,
    /// Answer with `reply(text=…)` from the facts in the context.
    Reply,
}

/// When a session's ingest happens, for repeated sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum IngestOn {
    #[default]
    Every,
    First,
}

/// A tool output the agent reads in a session.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Ingest {
    pub writer: String,
    pub content: String,
}

/// One step of an episode.
#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Step {
    /// A root entry written through the API.
    Note {
        writer: String,
        kind: String,
        #[serde(default = "memory_scope")]
        scope: ScopeName,
        content: String,
    },
    /// An entry appended straight into the store, bypassing the API.
    PlantRaw {
        forgery: String,
        #[serde(default = "memory_scope")]
        scope: ScopeName,
        content: String,
    },
    /// One agent session (or `repeat` of them).
    Session {
        user: String,
        request: String,
        #[serde(default)]
        query: Option<String>,
        #[serde(default)]
        retrieve: Retrieve,
        #[serde(default)]
        ingest: Vec<Ingest>,
        #[serde(default)]
        ingest_on: IngestOn,
        #[serde(default)]
        memorise: Option<String>,
        #[serde(default)]
        act: Act,
        #[serde(default)]
        repeat: Option<String>,
    },
    /// Forget every entry ingested so far (signed tombstones by the operator).
    ForgetIngested {
        #[serde(default)]
        erase: bool,
    },
}

fn memory_scope() -> ScopeName {
    ScopeName::Memory
}

impl WorkloadFile {
    /// The variables of episode `index`: drawn with ChaCha20 seeded from `seed + index`.
    pub(crate) fn vars(&self, index: u32) -> (u64, BTreeMap<String, String>) {
        let seed = self.workload.seed.wrapping_add(u64::from(index));
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut out = BTreeMap::new();
        // BTreeMap order: the draws happen in variable-name order, so adding a variable does not
        // change the draws of the ones before it alphabetically… but does after; documented.
        for (name, spec) in &self.vars {
            let v = match spec {
                VarSpec::List(l) => pick(&mut rng, l),
                VarSpec::Cycle { cycle } => cycle[(index as usize) % cycle.len().max(1)].clone(),
                VarSpec::Range { range: [lo, hi] } => {
                    let span = u64::from(hi.saturating_sub(*lo)) + 1;
                    (u64::from(*lo) + rng.next_u64() % span).to_string()
                }
                VarSpec::Render { .. } => continue,
            };
            out.insert(name.clone(), v);
        }
        for (name, spec) in &self.vars {
            if let VarSpec::Render { render, kind } = spec {
                let source = out.get(render).cloned().unwrap_or_default();
                let rendered = ParamType::from_name(kind).map_or(source.clone(), |t| {
                    renderings::render(&t, &source, rng.next_u64(), Reading::LooksLike)
                });
                out.insert(name.clone(), rendered);
            }
        }
        (seed, out)
    }

    /// Checks what serde cannot: non-empty lists, known principals and kinds.
    pub(crate) fn validate(&self, file: &str, agent: &AgentFile) -> Result<(), EvalError> {
        let err = |m: String| EvalError::scenario(file, m);
        for (name, spec) in &self.vars {
            let empty = match spec {
                VarSpec::List(l) => l.is_empty(),
                VarSpec::Cycle { cycle } => cycle.is_empty(),
                VarSpec::Range { range } => range[0] > range[1],
                VarSpec::Render { render, kind } => {
                    if ParamType::from_name(kind).is_none() {
                        return Err(err(format!(
                            "variable `{name}` renders as unknown type `{kind}`"
                        )));
                    }
                    !self.vars.contains_key(render)
                }
            };
            if empty {
                return Err(err(format!("variable `{name}` has no values")));
            }
        }
        if self.workload.episodes == 0 {
            return Err(err("`episodes` must be at least 1".into()));
        }
        let known = |w: &str| agent.principal.iter().any(|p| p.name == w);
        for step in &self.step {
            match step {
                Step::Note { writer, kind, .. } => {
                    if !known(writer) {
                        return Err(err(format!("unknown writer `{writer}`")));
                    }
                    kind.parse::<memlineage_core::entry::EntryKind>()
                        .map_err(|e| err(e.to_string()))?;
                }
                Step::PlantRaw { forgery, .. } => {
                    if !forgery.starts_with('{')
                        && !["unsigned", "forged", "unregistered"].contains(&forgery.as_str())
                    {
                        return Err(err(format!(
                            "unknown forgery `{forgery}` (expected unsigned, forged or unregistered)"
                        )));
                    }
                }
                Step::Session { user, ingest, .. } => {
                    if !known(user) {
                        return Err(err(format!("unknown user `{user}`")));
                    }
                    for i in ingest {
                        if !known(&i.writer) {
                            return Err(err(format!("unknown ingest writer `{}`", i.writer)));
                        }
                    }
                }
                Step::ForgetIngested { .. } => {}
            }
        }
        if matches!(
            self.workload.weights,
            WeightsName::UnderTau | WeightsName::UnderTauCover
        ) && !self.vars.contains_key("margin")
        {
            return Err(err(
                "weights under_tau need a `margin` variable (basis points)".into(),
            ));
        }
        Ok(())
    }
}

fn pick(rng: &mut ChaCha20Rng, list: &[String]) -> String {
    let n = list.len().max(1) as u64;
    list.get((rng.next_u64() % n) as usize)
        .cloned()
        .unwrap_or_default()
}

/// Every workload, sorted by (`order`, name), validated.
pub(crate) fn workloads(agent: &AgentFile) -> Result<Vec<(String, WorkloadFile)>, EvalError> {
    let mut out = Vec::new();
    for (file, text) in WORKLOAD_FILES {
        let w: WorkloadFile = parse((file, text))?;
        w.validate(file, agent)?;
        out.push((file.to_string(), w));
    }
    out.sort_by(|a, b| {
        (a.1.workload.order, &a.1.workload.name).cmp(&(b.1.workload.order, &b.1.workload.name))
    });
    for pair in out.windows(2) {
        if pair[0].1.workload.name == pair[1].1.workload.name {
            return Err(EvalError::scenario(
                &pair[1].0,
                format!("duplicate workload name `{}`", pair[1].1.workload.name),
            ));
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// ablation.toml and measured_weights.toml

/// `ablation.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AblationFile {
    pub ablation: AblationConfig,
}

/// The `[ablation]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AblationConfig {
    pub max_k: u32,
    pub tau_step: Weight,
    pub geometric_w0: Weight,
    pub geometric_d: Weight,
    pub root_writer: String,
    pub root_content: String,
    pub hop_content: String,
}

/// `measured_weights.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MeasuredFile {
    pub measured: Measured,
}

/// The `[measured]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Measured {
    /// `placeholder` until the attribution work measures the weights, then `measured`.
    pub status: String,
    #[serde(default)]
    pub algorithm: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub source: String,
    /// Edge weights by hop (edge 1 first).
    #[serde(default)]
    pub edges: Vec<Weight>,
}

impl Measured {
    /// The measured edge weights, when the file holds real measurements for every hop.
    pub(crate) fn weights(&self, max_k: u32) -> Option<&[Weight]> {
        (self.status == "measured" && self.edges.len() >= max_k as usize)
            .then(|| &self.edges[..max_k as usize])
    }
}

// ---------------------------------------------------------------------------------------------
// trace.toml

/// `trace.toml`: the two-session RAG-to-memory laundering trace.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TraceFile {
    pub trace: TraceConfig,
}

/// The `[trace]` table.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TraceConfig {
    pub title: String,
    pub note_writer: String,
    pub note: String,
    pub session1_request: String,
    pub web_writer: String,
    pub web_page: String,
    pub memorise: String,
    pub session2_request: String,
}
