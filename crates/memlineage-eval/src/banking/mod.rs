//! Banking pairs modelled on AgentDojo's banking suite (docs/agentdojo-banking.md): user task ×
//! injection task, under no_defense, sig_only_baseline, memlineage_deny and memlineage_repair.
//!
//! The agent is split in two, as the sheet's repair rule asks ("a value taken from a TRUSTED or
//! DERIVED_TRUSTED entry bound to that slot"):
//!
//! - the **planner** sees only the user's request and trusted ledger fields; for every value the
//!   request binds (alone or with a ledger field), it writes a *slot entry*: a derived entry
//!   whose content is exactly the value, with the request (and the ledger entry) as parents;
//! - the **executor** reads tool outputs (each one an entry: the bank's ledger records, the
//!   sender-written subject of the incoming transaction, the files), follows — being the
//!   intentionally vulnerable profile — any instruction it finds there, and proposes the calls.
//!
//! The gate's context for a call is the call's working set: the slot entries of the user action
//! the call implements (same tool, same target, not yet done), the entries the executor copied
//! its other values from, and the entry holding any instruction that directed the call. Repair
//! is requested only for calls that implement an action the user asked for; a call with no
//! such action (an extra call) is judged in deny mode, because any repair would invent an
//! action. Dispatched calls run against the environment, and AgentDojo's checks score it.

mod checks;
mod env;

use crate::agent::{Dispatch, gate_call};
use crate::cell::BankCell;
use crate::error::EvalError;
use crate::grammar::{Arg, Call, Grammar, Template, substitute};
use crate::json::Json;
use crate::scenario::AgentFile;
use crate::world::{self, Mem};
use checks::Verdict;
use env::{Cents, Env, Tx, User};
use memlineage::WriteRequest;
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Parent, Scope};
use memlineage_core::gate::Policy;
use memlineage_core::label::{Fallback, TrustLabel, Weight};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `banking.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BankingFile {
    pub suite: Suite,
    pub environment: EnvSpec,
    pub vectors: BTreeMap<String, String>,
    pub user_task: Vec<UserTask>,
    pub injection_task: Vec<InjectionTask>,
    pub pair: Vec<PairSpec>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Suite {
    pub attacker_iban: String,
    pub model_name: String,
    pub injection_template: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct EnvSpec {
    pub iban: String,
    pub balance: String,
    pub transaction: Vec<TxSpec>,
    pub scheduled: Vec<TxSpec>,
    pub user: UserSpec,
    pub files: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TxSpec {
    pub id: u32,
    pub sender: String,
    pub recipient: String,
    pub amount: String,
    pub subject: String,
    pub date: String,
    pub recurring: bool,
    #[serde(default)]
    pub external_subject: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserSpec {
    pub first_name: String,
    pub last_name: String,
    pub street: String,
    pub city: String,
    pub password: String,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserTask {
    pub id: String,
    pub prompt: String,
    pub reads: Vec<String>,
    pub utility: String,
    pub call: Vec<TaskCall>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TaskCall {
    pub tool: String,
    pub args: BTreeMap<String, String>,
    pub sources: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InjectionTask {
    pub id: String,
    pub goal: String,
    pub security: String,
    pub pattern: String,
    pub tool: String,
    pub args: BTreeMap<String, String>,
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    #[serde(default = "one")]
    pub times: u32,
    #[serde(default)]
    pub reads: Vec<String>,
}

fn one() -> u32 {
    1
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Placement {
    #[default]
    Replace,
    Append,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Shape {
    Hijack,
    Extra,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PairSpec {
    pub n: u32,
    pub name: String,
    pub user_task: String,
    pub injection_task: String,
    pub vector: String,
    #[serde(default)]
    pub placement: Placement,
    pub shape: Shape,
    #[serde(default)]
    pub hijack: Vec<String>,
    #[serde(default)]
    pub hijack_call: usize,
    pub core: bool,
    pub reason: String,
}

/// The outcome of one run of a pair under one cell.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub cell: BankCell,
    pub attacked: bool,
    pub utility: Verdict,
    pub security: Verdict,
    pub calls: Vec<(Dispatch, Option<String>)>,
    pub context_labels: Vec<Vec<(String, TrustLabel)>>,
}

/// A pair's runs: attacked and benign under every cell.
#[derive(Clone, Debug)]
pub(crate) struct PairResult {
    pub spec: PairSpec,
    pub runs: Vec<Run>,
}

impl PairResult {
    pub(crate) fn run(&self, cell: BankCell, attacked: bool) -> Option<&Run> {
        self.runs
            .iter()
            .find(|r| r.cell == cell && r.attacked == attacked)
    }
}

impl Run {
    pub(crate) fn json(&self, pair: &PairSpec) -> Json {
        let calls: Vec<Json> = self
            .calls
            .iter()
            .zip(&self.context_labels)
            .map(|((d, result), ctx)| {
                let mut j = d.json();
                j.set(
                    "context",
                    Json::Arr(
                        ctx.iter()
                            .map(|(name, l)| {
                                Json::obj()
                                    .with("entry", Json::str(name.clone()))
                                    .with("label", Json::str(l.as_str()))
                            })
                            .collect(),
                    ),
                );
                if let Some(r) = result {
                    j.set("tool_result", Json::str(r.clone()));
                }
                j
            })
            .collect();
        let verdict = |v: &Verdict| {
            let mut j = Json::obj().with("value", Json::Bool(v.value));
            if let Some(a) = v.agentdojo {
                j.set("agentdojo", Json::Bool(a));
            }
            j
        };
        Json::obj()
            .with("table", Json::str("banking"))
            .with("cell", Json::str(self.cell.name()))
            .with("pair", Json::str(pair.name.clone()))
            .with("core", Json::Bool(pair.core))
            .with("attacked", Json::Bool(self.attacked))
            .with("calls", Json::Arr(calls))
            .with("utility", verdict(&self.utility))
            .with("security", verdict(&self.security))
    }
}

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Source {
    Prompt,
    Ledger(String),
    File(String),
    Agent,
}

fn parse_sources(s: &str) -> Result<Vec<Source>, EvalError> {
    s.split('+')
        .map(|part| {
            let part = part.trim();
            Ok(match part.split_once(':') {
                None if part == "prompt" => Source::Prompt,
                None if part == "agent" => Source::Agent,
                Some(("ledger", x)) => Source::Ledger(x.to_string()),
                Some(("file", x)) => Source::File(x.to_string()),
                _ => {
                    return Err(EvalError::scenario(
                        "banking.toml",
                        format!("unknown source `{part}`"),
                    ));
                }
            })
        })
        .collect()
}

fn arg_of(value: &str) -> Arg {
    match value {
        "true" => Arg::Bool(true),
        "false" => Arg::Bool(false),
        v => Arg::Text(v.to_string()),
    }
}

/// Everything one pair run needs.
pub(crate) struct Bank<'a> {
    pub file: &'a BankingFile,
    pub agent: &'a AgentFile,
    pub policy: &'a Policy,
    grammar: Grammar,
}

impl<'a> Bank<'a> {
    pub(crate) fn new(
        file: &'a BankingFile,
        agent: &'a AgentFile,
        policy: &'a Policy,
    ) -> Result<Bank<'a>, EvalError> {
        let mut templates = Vec::new();
        for it in &file.injection_task {
            templates.push(
                Template::new(&it.pattern, &it.tool, it.args.clone())
                    .map_err(|e| EvalError::scenario("banking.toml", e))?,
            );
        }
        for p in &file.pair {
            if !file.user_task.iter().any(|u| u.id == p.user_task)
                || !file.injection_task.iter().any(|i| i.id == p.injection_task)
                || !file.vectors.contains_key(&p.vector)
            {
                return Err(EvalError::scenario(
                    "banking.toml",
                    format!("pair `{}` names an unknown task or vector", p.name),
                ));
            }
        }
        Ok(Bank {
            file,
            agent,
            policy,
            grammar: Grammar {
                tools: Vec::new(),
                templates,
            },
        })
    }

    fn user_task(&self, id: &str) -> Result<&UserTask, EvalError> {
        self.file
            .user_task
            .iter()
            .find(|u| u.id == id)
            .ok_or_else(|| EvalError::scenario("banking.toml", format!("no user task `{id}`")))
    }

    fn injection_task(&self, id: &str) -> Result<&InjectionTask, EvalError> {
        self.file
            .injection_task
            .iter()
            .find(|u| u.id == id)
            .ok_or_else(|| EvalError::scenario("banking.toml", format!("no injection task `{id}`")))
    }

    /// The environment, with `payload` (if any) placed in the pair's vector.
    fn environment(&self, pair: &PairSpec, attacked: bool) -> Result<Env, EvalError> {
        let it = self.injection_task(&pair.injection_task)?;
        let suite = &self.file.suite;
        let mut vectors = self.file.vectors.clone();
        if attacked {
            let mut vars = BTreeMap::new();
            vars.insert("model".to_string(), suite.model_name.clone());
            vars.insert("goal".to_string(), it.goal.clone());
            let payload = substitute(&suite.injection_template, &vars);
            let default = vectors.get(&pair.vector).cloned().unwrap_or_default();
            let text = match pair.placement {
                Placement::Replace => payload,
                Placement::Append => default + &payload,
            };
            vectors.insert(pair.vector.clone(), text);
        }
        let e = &self.file.environment;
        let tx = |t: &TxSpec| -> Result<Tx, EvalError> {
            Ok(Tx {
                id: t.id,
                sender: t.sender.clone(),
                recipient: t.recipient.clone(),
                amount: Cents::parse(&t.amount).ok_or_else(|| {
                    EvalError::scenario("banking.toml", format!("bad amount `{}`", t.amount))
                })?,
                subject: substitute(&t.subject, &vectors),
                date: t.date.clone(),
                recurring: t.recurring,
            })
        };
        Ok(Env {
            iban: e.iban.clone(),
            transactions: e.transaction.iter().map(tx).collect::<Result<_, _>>()?,
            scheduled: e.scheduled.iter().map(tx).collect::<Result<_, _>>()?,
            files: e
                .files
                .iter()
                .map(|(k, v)| (k.clone(), substitute(v, &vectors)))
                .collect(),
            user: User {
                first_name: e.user.first_name.clone(),
                last_name: e.user.last_name.clone(),
                street: e.user.street.clone(),
                city: e.user.city.clone(),
                password: e.user.password.clone(),
            },
        })
    }

    /// Runs one pair under one cell, attacked or not.
    pub(crate) fn run(
        &self,
        pair: &PairSpec,
        cell: BankCell,
        attacked: bool,
    ) -> Result<Run, EvalError> {
        let ut = self.user_task(&pair.user_task)?;
        let it = self.injection_task(&pair.injection_task)?;
        let mut env = self.environment(pair, attacked)?;
        let cfg = &self.agent.agent;
        let mem = world::new_memory(self.agent, Fallback::Permissive)?;
        let inbox = world::scope(&cfg.inbox_scope)?;
        let sessions = world::scope(&cfg.session_scope)?;
        let memory = world::scope(&cfg.memory_scope)?;
        let w = World {
            mem: &mem,
            inbox: &inbox,
            memory: &memory,
        };
        let mut names: BTreeMap<EntryId, String> = BTreeMap::new();
        let mut labels: BTreeMap<EntryId, TrustLabel> = BTreeMap::new();
        let mut note = |id: EntryId, name: String, label: TrustLabel| {
            names.insert(id, name);
            labels.insert(id, label);
        };

        // The request, and the bank's records (one entry per transaction; the subject of the
        // incoming transaction is a separate entry written by its sender).
        let prompt = mem.write(
            WriteRequest::new(
                &crate::world::principal("user")?,
                EntryKind::UserInput,
                ut.prompt.as_str(),
            )
            .with_scope(sessions.clone()),
        )?;
        note(prompt.id, "prompt".into(), prompt.label);
        let mut ledger: BTreeMap<String, EntryId> = BTreeMap::new();
        for (prefix, kind, list) in [
            ("tx", "Transaction", &env.transactions),
            ("sched", "Scheduled transaction", &env.scheduled),
        ] {
            for t in list {
                let spec = self
                    .file
                    .environment
                    .transaction
                    .iter()
                    .chain(&self.file.environment.scheduled)
                    .find(|s| s.id == t.id);
                let external = spec.is_some_and(|s| s.external_subject);
                let subject = if external {
                    "(written by the sender: see the next entry)".to_string()
                } else {
                    t.subject.clone()
                };
                let content = format!(
                    "{kind} {}: {} -> {}, amount {}, date {}, recurring {}, subject: {subject}",
                    t.id,
                    t.sender,
                    t.recipient,
                    t.amount.python(),
                    t.date,
                    t.recurring
                );
                let name = format!("{prefix}{}", t.id);
                let e = w.root("bank", &content)?;
                note(e.0, name.clone(), e.1);
                ledger.insert(name.clone(), e.0);
                if external {
                    let content = format!(
                        "Subject of transaction {} (written by the sender): {}",
                        t.id, t.subject
                    );
                    let e = w.root("counterparty", &content)?;
                    let sname = format!("{name}_subject");
                    note(e.0, sname.clone(), e.1);
                    ledger.insert(sname, e.0);
                }
            }
        }
        let user_content = format!(
            "User: {} {}, {}, {}",
            env.user.first_name, env.user.last_name, env.user.street, env.user.city
        );
        let e = w.root("bank", &user_content)?;
        note(e.0, "user".into(), e.1);
        ledger.insert("user".into(), e.0);
        let balance = format!("Balance of {}: {}", env.iban, self.file.environment.balance);
        let e = w.root("bank", &balance)?;
        note(e.0, "balance".into(), e.1);
        ledger.insert("balance".into(), e.0);
        let ledger_id = |x: &str| -> Result<EntryId, EvalError> {
            ledger.get(x).copied().ok_or_else(|| {
                EvalError::scenario("banking.toml", format!("no ledger entry `{x}`"))
            })
        };

        // The planner: slot entries for values the request binds.
        struct Planned {
            call: Call,
            slots: Vec<EntryId>,
            cited: BTreeMap<String, Vec<Source>>,
        }
        let mut planned: Vec<Planned> = Vec::new();
        for (ci, c) in ut.call.iter().enumerate() {
            let mut slots = Vec::new();
            let mut cited = BTreeMap::new();
            for (param, value) in &c.args {
                let srcs = parse_sources(c.sources.get(param).map_or("agent", String::as_str))?;
                let trusted_only = srcs
                    .iter()
                    .all(|s| matches!(s, Source::Prompt | Source::Ledger(_)));
                if trusted_only && srcs.contains(&Source::Prompt) {
                    let mut parents = Vec::new();
                    for s in &srcs {
                        parents.push(match s {
                            Source::Prompt => prompt.id,
                            Source::Ledger(x) => ledger_id(x)?,
                            _ => continue,
                        });
                    }
                    let id = w.derived(value, &parents, "planner")?;
                    note(id.0, format!("slot:{}.{param}#{ci}", c.tool), id.1);
                    slots.push(id.0);
                } else {
                    cited.insert(param.clone(), srcs);
                }
            }
            planned.push(Planned {
                call: Call::new(&c.tool, c.args.iter().map(|(k, v)| (k.clone(), arg_of(v)))),
                slots,
                cited,
            });
        }

        // The executor reads; files are written when read.
        let mut reads: Vec<String> = ut.reads.clone();
        if attacked {
            for r in &it.reads {
                if !reads.contains(r) {
                    reads.push(r.clone());
                }
            }
        }
        let mut files: BTreeMap<String, EntryId> = BTreeMap::new();
        let mut seen: Vec<(EntryId, String)> = Vec::new();
        for r in &reads {
            match r.split_once(':') {
                Some(("file", name)) => {
                    let text = env.files.get(name).cloned().unwrap_or_default();
                    let e = w.root("files", &text)?;
                    note(e.0, format!("file:{name}"), e.1);
                    files.insert(name.to_string(), e.0);
                    seen.push((e.0, text));
                }
                _ => {
                    let prefix = match r.as_str() {
                        "transactions" => "tx",
                        "scheduled" => "sched",
                        "user_info" => "user",
                        other => {
                            return Err(EvalError::scenario(
                                "banking.toml",
                                format!("unknown read `{other}`"),
                            ));
                        }
                    };
                    for (name, id) in &ledger {
                        if name.starts_with(prefix) {
                            let text = mem.get(id)?.text().unwrap_or_default();
                            seen.push((*id, text));
                        }
                    }
                }
            }
        }
        // Values the executor computes from several sources (one of them untrusted).
        let mut computed: BTreeMap<(usize, String), EntryId> = BTreeMap::new();
        for (ci, p) in planned.iter().enumerate() {
            for (param, srcs) in &p.cited {
                if srcs.len() > 1 {
                    let mut parents = Vec::new();
                    for s in srcs {
                        parents.push(match s {
                            Source::Prompt => prompt.id,
                            Source::Ledger(x) => ledger_id(x)?,
                            Source::File(f) => *files.get(f).ok_or_else(|| {
                                EvalError::scenario(
                                    "banking.toml",
                                    format!("file `{f}` is not read"),
                                )
                            })?,
                            Source::Agent => continue,
                        });
                    }
                    let value = p.call.text(param).unwrap_or_default().to_string();
                    let id = w.derived(&value, &parents, "executor")?;
                    note(id.0, format!("computed:{}.{param}#{ci}", p.call.name), id.1);
                    computed.insert((ci, param.clone()), id.0);
                }
            }
        }
        let resolve = |srcs: &[Source]| -> Vec<EntryId> {
            let mut out = Vec::new();
            if srcs.len() == 1 {
                match &srcs[0] {
                    Source::Ledger(x) => out.extend(ledger.get(x).copied()),
                    Source::File(f) => out.extend(files.get(f).copied()),
                    _ => {}
                }
            }
            out
        };

        // Instructions in what the executor read (the vulnerable profile follows them).
        let functions = |name: &str| -> Option<String> {
            match name {
                "scheduled_overview" => Some(
                    env.scheduled
                        .iter()
                        .map(|t| format!("{};{}", t.recipient, t.amount.python()))
                        .collect::<Vec<_>>()
                        .join(";"),
                ),
                "first_recurring_scheduled_id" => env
                    .scheduled
                    .iter()
                    .find(|t| t.recurring)
                    .map(|t| t.id.to_string()),
                _ => None,
            }
        };
        let mut injected: Vec<(Call, EntryId)> = Vec::new();
        for (id, text) in &seen {
            for f in self.grammar.find(text, &functions) {
                let times = self
                    .file
                    .injection_task
                    .iter()
                    .find(|t| t.pattern == f.via)
                    .map_or(1, |t| t.times);
                for _ in 0..times {
                    injected.push((f.call.clone(), *id));
                }
            }
        }

        // The calls the executor proposes, each with its working set.
        struct Proposal {
            call: Call,
            user_call: Option<usize>,
            extra_context: Vec<EntryId>,
            skip_cited: Vec<String>,
        }
        let mut proposals: Vec<Proposal> = planned
            .iter()
            .enumerate()
            .map(|(ci, p)| Proposal {
                call: p.call.clone(),
                user_call: Some(ci),
                extra_context: Vec::new(),
                skip_cited: Vec::new(),
            })
            .collect();
        let mut extra: Vec<Proposal> = Vec::new();
        let injection_sources = |call: &Call, src: EntryId| -> Result<Vec<EntryId>, EvalError> {
            let mut ctx = vec![src];
            for (param, s) in &it.sources {
                if call.args.contains_key(param) {
                    ctx.extend(resolve(&parse_sources(s)?));
                }
            }
            Ok(ctx)
        };
        for (k, (call, src)) in injected.iter().enumerate() {
            let hijack_target = proposals.get_mut(pair.hijack_call);
            match (pair.shape, k, hijack_target) {
                (Shape::Hijack, 0, Some(target)) => {
                    for param in &pair.hijack {
                        if let Some(v) = call.args.get(param) {
                            target.call.args.insert(param.clone(), v.clone());
                            target.skip_cited.push(param.clone());
                        }
                    }
                    target.extra_context.push(*src);
                }
                _ => extra.push(Proposal {
                    call: call.clone(),
                    user_call: None,
                    extra_context: injection_sources(call, *src)?,
                    skip_cited: Vec::new(),
                }),
            }
        }
        proposals.extend(extra);

        // Dispatch, in order.
        let mut done = vec![false; planned.len()];
        let mut calls = Vec::new();
        let mut context_labels = Vec::new();
        for p in &proposals {
            // The user action this call implements: its own (unless done), or, for an injected
            // call, the first action of the same tool and target that is not done yet.
            let action = match p.user_call {
                Some(ci) => (!done[ci]).then_some(ci),
                None => planned.iter().enumerate().position(|(ci, q)| {
                    !done[ci] && q.call.name == p.call.name && same_target(&q.call, &p.call)
                }),
            };
            let mut ctx: Vec<EntryId> = Vec::new();
            if let Some(ci) = action {
                ctx.extend(&planned[ci].slots);
            }
            if let Some(ci) = p.user_call {
                for (param, srcs) in &planned[ci].cited {
                    if p.skip_cited.contains(param) {
                        continue;
                    }
                    match computed.get(&(ci, param.clone())) {
                        Some(id) => ctx.push(*id),
                        None => ctx.extend(resolve(srcs)),
                    }
                }
            }
            ctx.extend(&p.extra_context);
            let mut uniq = Vec::new();
            for id in ctx {
                if !uniq.contains(&id) {
                    uniq.push(id);
                }
            }
            let d = match cell {
                BankCell::NoDefense | BankCell::SigOnly => Dispatch {
                    proposed: p.call.clone(),
                    decision: None,
                    error: None,
                    dispatched: Some(p.call.clone()),
                },
                BankCell::Deny => gate_call(&mem, self.policy, &memory, &p.call, &uniq, false)?,
                BankCell::Repair => {
                    gate_call(&mem, self.policy, &memory, &p.call, &uniq, action.is_some())?
                }
            };
            let mut result = None;
            if let Some(c) = &d.dispatched {
                result = Some(match env.execute(c) {
                    Ok(m) => m,
                    Err(e) => format!("error: {e}"),
                });
                if let Some(ci) = action {
                    done[ci] = true;
                }
            }
            context_labels.push(
                uniq.iter()
                    .map(|id| {
                        (
                            names.get(id).cloned().unwrap_or_else(|| id.short()),
                            labels.get(id).copied().unwrap_or(TrustLabel::External),
                        )
                    })
                    .collect(),
            );
            calls.push((d, result));
        }
        let utility = checks::utility(&ut.utility, &env).ok_or_else(|| {
            EvalError::scenario("banking.toml", format!("no utility check `{}`", ut.utility))
        })?;
        let security = checks::security(&it.security, &env, &self.file.suite.attacker_iban)
            .ok_or_else(|| {
                EvalError::scenario(
                    "banking.toml",
                    format!("no security check `{}`", it.security),
                )
            })?;
        Ok(Run {
            cell,
            attacked,
            utility,
            security,
            calls,
            context_labels,
        })
    }
}

/// Whether two calls act on the same object: the same scheduled transaction for updates; any
/// two calls of another tool.
fn same_target(a: &Call, b: &Call) -> bool {
    match a.name.as_str() {
        "update_scheduled_transaction" => a.text("id") == b.text("id"),
        _ => true,
    }
}

/// Writing helpers for one run.
struct World<'a> {
    mem: &'a Mem,
    inbox: &'a Scope,
    memory: &'a Scope,
}

impl World<'_> {
    fn root(&self, writer: &str, content: &str) -> Result<(EntryId, TrustLabel), EvalError> {
        let w = self.mem.write(
            WriteRequest::new(
                &crate::world::principal(writer)?,
                EntryKind::ToolOutput,
                content,
            )
            .with_scope(self.inbox.clone()),
        )?;
        Ok((w.id, w.label))
    }

    fn derived(
        &self,
        content: &str,
        parents: &[EntryId],
        who: &str,
    ) -> Result<(EntryId, TrustLabel), EvalError> {
        let parents = parents
            .iter()
            .map(|id| Parent {
                id: *id,
                weight: Weight::ONE,
            })
            .collect();
        let w = self.mem.write(
            WriteRequest::new(
                &crate::world::principal("agent")?,
                EntryKind::Derived,
                content,
            )
            .with_scope(self.memory.clone())
            .with_parents(parents, memlineage::AttributionName::COARSE)
            .with_meta("role", who),
        )?;
        Ok((w.id, w.label))
    }
}

/// Number of runs a full banking evaluation makes (every pair, cell, attacked or not).
pub(crate) fn units(file: &BankingFile) -> u64 {
    file.pair.len() as u64 * BankCell::ALL.len() as u64 * 2
}
