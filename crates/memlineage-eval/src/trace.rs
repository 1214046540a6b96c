//! The two-session RAG-to-memory trace: one laundering attack, told step by step in Markdown,
//! with the labels at each step, the gate's decision and its lineage path, and a Mermaid graph.

use crate::agent::{Agent, Item, gate_call};
use crate::cell::Cell;
use crate::error::EvalError;
use crate::grammar::Grammar;
use crate::scenario::{AgentFile, TraceConfig, WeightsName};
use crate::world;
use memlineage::Direction;
use memlineage_core::EntryId;
use memlineage_core::entry::EntryKind;
use memlineage_core::gate::{GateDecision, Policy};
use memlineage_core::render::lineage::to_mermaid;
use memlineage_core::render::prompt::{RenderedEntry, render_text};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// What the trace found (for the summary and the tests).
#[derive(Clone, Debug)]
pub(crate) struct Trace {
    pub markdown: String,
    /// The gate's decision in deny mode, with repair, and whether sig_only dispatched.
    pub deny: String,
    pub repair: String,
    pub sig_only_dispatched: bool,
}

fn fence(lang: &str, body: &str) -> String {
    let mut ticks = "```".to_string();
    while body.contains(&ticks) {
        ticks.push('`');
    }
    format!("{ticks}{lang}\n{}\n{ticks}\n", body.trim_end_matches('\n'))
}

fn rendered(items: &[Item]) -> String {
    let r: Vec<RenderedEntry> = items
        .iter()
        .map(|i| RenderedEntry {
            id: i.id,
            label: i.label,
            writer: i.writer.clone(),
            kind: i.kind,
            created_at_ms: i.created_at_ms,
            strong_parents: i.strong_parents.clone(),
            content: i.text.clone(),
        })
        .collect();
    render_text(&r)
}

/// Runs both sessions under `cell`; returns the agent (its memory), the summary, the request
/// of session 2, its context, and the proposed call.
struct Sessions<'a> {
    agent: Agent<'a>,
    request1: Item,
    page: Item,
    summary: Item,
    request2: Item,
    context2: Vec<Item>,
}

fn sessions<'a>(
    agent_file: &'a AgentFile,
    grammar: &'a Grammar,
    policy: &'a Policy,
    cfg: &TraceConfig,
    cell: Cell,
) -> Result<Sessions<'a>, EvalError> {
    let a = &agent_file.agent;
    let agent = Agent {
        file: agent_file,
        grammar,
        policy,
        cell,
        mem: world::new_memory(agent_file, cell.fallback())?,
        memory: world::scope(&a.memory_scope)?,
        inbox: world::scope(&a.inbox_scope)?,
        sessions: world::scope(&a.session_scope)?,
    };
    agent.write_root(
        &cfg.note_writer,
        EntryKind::UserInput,
        &agent.memory,
        &cfg.note,
    )?;
    // Session 1: retrieval-augmented answer from a web page, remembered.
    let request1 = agent.write_root(
        "user",
        EntryKind::UserInput,
        &agent.sessions,
        &cfg.session1_request,
    )?;
    let page = agent.write_root(
        &cfg.web_writer,
        EntryKind::ToolOutput,
        &agent.inbox,
        &cfg.web_page,
    )?;
    let ctx1 = vec![request1.clone(), page.clone()];
    let mut vars = BTreeMap::new();
    vars.insert("carry".to_string(), agent.carry(&ctx1));
    let content = crate::grammar::substitute(&cfg.memorise, &vars);
    let summary = agent.memorise(&ctx1, &content, WeightsName::Coarse, 0)?;
    // Session 2: a later request; memory search returns the note and the summary, not the page.
    let request2 = agent.write_root(
        "user",
        EntryKind::UserInput,
        &agent.sessions,
        &cfg.session2_request,
    )?;
    let retrieved = agent.search(&cfg.session2_request)?;
    let mut context2 = vec![request2.clone()];
    context2.extend(retrieved.items);
    Ok(Sessions {
        agent,
        request1,
        page,
        summary,
        request2,
        context2,
    })
}

fn decision_md(out: &mut String, d: &GateDecision<'_>, names: &BTreeMap<EntryId, String>) {
    let _ = writeln!(
        out,
        "**Decision: {}** — {}\n",
        d.decision.as_str(),
        d.summary()
    );
    let _ = writeln!(
        out,
        "| parameter | outcome | traced via | justified by | lineage path to the untrusted root |"
    );
    let _ = writeln!(out, "|---|---|---|---|---|");
    for r in &d.reasons {
        let just: Vec<String> = r
            .justifying
            .iter()
            .map(|id| names.get(id).cloned().unwrap_or_else(|| id.short()))
            .collect();
        let path: Vec<String> = r
            .taint_path
            .iter()
            .map(|id| names.get(id).cloned().unwrap_or_else(|| id.short()))
            .collect();
        let _ = writeln!(
            out,
            "| `{}` | {:?} | {:?} | {} | {} |",
            r.param,
            r.outcome,
            r.via,
            if just.is_empty() {
                "—".to_string()
            } else {
                just.join(", ")
            },
            if path.is_empty() {
                "—".to_string()
            } else {
                path.join(" → ")
            },
        );
    }
    out.push('\n');
    for r in &d.reasons {
        let _ = writeln!(out, "- `{}`: {}", r.param, r.message());
    }
    for rep in &d.repairs {
        let _ = writeln!(
            out,
            "- repaired `{}`: {} → {} (from {}, {})",
            rep.param,
            rep.old,
            rep.new,
            names
                .get(&rep.source)
                .cloned()
                .unwrap_or_else(|| rep.source.short()),
            rep.source_label
        );
    }
    out.push('\n');
}

/// Builds the trace.
pub(crate) fn run(
    agent_file: &AgentFile,
    grammar: &Grammar,
    policy: &Policy,
    cfg: &TraceConfig,
) -> Result<Trace, EvalError> {
    let s = sessions(agent_file, grammar, policy, cfg, Cell::MemLineage)?;
    let agent = &s.agent;
    let mem = &agent.mem;
    let calls = agent.instructions(&s.context2);
    let call = calls
        .first()
        .ok_or_else(|| EvalError::Harness("the trace's agent proposed no call".into()))?
        .clone();
    let ids: Vec<EntryId> = s.context2.iter().map(|i| i.id).collect();
    let deny = gate_call(mem, policy, &agent.memory, &call, &ids, false)?;
    let repair = gate_call(mem, policy, &agent.memory, &call, &ids, true)?;
    let graph = mem.lineage(&s.summary.id, Direction::Ancestors, 8)?;
    let explanation = mem.explain(&s.summary.id)?;

    // The same two sessions with signatures only: the summary is validly signed, so it is
    // trusted, and the call is dispatched.
    let sig = sessions(agent_file, grammar, policy, cfg, Cell::SigOnly)?;
    let sig_calls = sig.agent.instructions(&sig.context2);
    let sig_ids: Vec<EntryId> = sig.context2.iter().map(|i| i.id).collect();
    let sig_dispatched = match sig_calls.first() {
        Some(c) => sig.agent.dispatch(c, &sig_ids, false)?.dispatched.is_some(),
        None => false,
    };

    let mut names: BTreeMap<EntryId, String> = BTreeMap::new();
    names.insert(
        s.request1.id,
        format!("request 1 `{}`", s.request1.id.short()),
    );
    names.insert(s.page.id, format!("web page `{}`", s.page.id.short()));
    names.insert(s.summary.id, format!("summary `{}`", s.summary.id.short()));
    names.insert(
        s.request2.id,
        format!("request 2 `{}`", s.request2.id.short()),
    );
    for i in &s.context2 {
        names
            .entry(i.id)
            .or_insert_with(|| format!("{} `{}`", i.kind, i.id.short()));
    }

    let mut md = String::new();
    let _ = writeln!(md, "# {}\n", cfg.title);
    let _ = writeln!(
        md,
        "Generated by `memlineage eval` from `crates/memlineage-eval/scenarios/trace.toml`; do not edit. \
         Cell: `memlineage` (verified retrieval, lineage labels, permissive fallback, τ = {}), \
         one fresh in-memory store, deterministic keys and clock.\n",
        mem.settings().tau
    );
    let _ = writeln!(md, "## Before: what memory holds\n");
    let _ = writeln!(
        md,
        "The user once told the agent a fact, written by `{}` into memory: a root entry, **TRUSTED**.\n",
        cfg.note_writer
    );
    md.push_str(&fence("text", &cfg.note));
    let _ = writeln!(
        md,
        "\n## Session 1: retrieval-augmented answer, remembered\n"
    );
    let _ = writeln!(
        md,
        "1. The user asks (entry `{}`, **{}**):\n",
        s.request1.id.short(),
        s.request1.label
    );
    md.push_str(&fence("text", &cfg.session1_request));
    let _ = writeln!(
        md,
        "\n2. The agent fetches the supplier's page. The tool output is a root entry written by the \
         external principal `{}` (entry `{}`, **{}**). The attacker controls this page; its last line is the payload.\n",
        cfg.web_writer,
        s.page.id.short(),
        s.page.label
    );
    let _ = writeln!(
        md,
        "3. The prompt of session 1, as the agent renders it (structural blocks with the trust label in the header; content escaped):\n"
    );
    md.push_str(&fence(
        "xml",
        &rendered(&[s.request1.clone(), s.page.clone()]),
    ));
    let _ = writeln!(
        md,
        "\n4. The laundering step. The agent summarises what it read and remembers it: a new entry \
         in memory, **validly signed by the agent itself** (entry `{}`). Its parents are the request \
         and the page, each with attribution weight 1 (coarse); the page's edge is strong (1 > τ), so \
         the label rule gives **{}**, and the label is signed into the entry:\n",
        s.summary.id.short(),
        s.summary.label
    );
    md.push_str(&fence("text", &s.summary.text));
    let _ = writeln!(
        md,
        "\nWhy this label ({}):\n\n> {}\n",
        explanation.label,
        explanation.text.replace('\n', "\n> ")
    );
    let _ = writeln!(
        md,
        "## Session 2: a later request recalls only the memory\n"
    );
    let _ = writeln!(
        md,
        "1. The user asks (entry `{}`, **{}**):\n",
        s.request2.id.short(),
        s.request2.label
    );
    md.push_str(&fence("text", &cfg.session2_request));
    let _ = writeln!(
        md,
        "\n2. The agent searches its memory (`Memory::search`: signature, registry, Merkle inclusion and \
         label verified before anything enters the prompt). The page itself is not in memory (it stays in \
         the inbox); what comes back is the user's fact and the agent's own summary:\n"
    );
    md.push_str(&fence("xml", &rendered(&s.context2)));
    let _ = writeln!(md, "\n| entry | writer | kind | label |\n|---|---|---|---|");
    for i in &s.context2 {
        let _ = writeln!(
            md,
            "| `{}` | `{}` | {} | **{}** |",
            i.id.short(),
            i.writer,
            i.kind,
            i.label
        );
    }
    let _ = writeln!(
        md,
        "\n3. The (intentionally vulnerable) agent follows the lesson in its context and proposes:\n"
    );
    md.push_str(&fence("text", &call.render()));
    let _ = writeln!(md, "\n## The gate\n");
    let _ = writeln!(md, "### Deny mode (the `memlineage` cells)\n");
    match &deny.decision {
        Some(d) => decision_md(&mut md, d, &names),
        None => {
            let _ = writeln!(
                md,
                "Gate error: {}\n",
                deny.error.clone().unwrap_or_default()
            );
        }
    }
    let _ = writeln!(
        md,
        "The decision itself is appended to the log as a signed `gate_decision` record, so anyone can re-check it.\n"
    );
    let _ = writeln!(md, "### Authority repair\n");
    match &repair.decision {
        Some(d) => decision_md(&mut md, d, &names),
        None => {
            let _ = writeln!(
                md,
                "Gate error: {}\n",
                repair.error.clone().unwrap_or_default()
            );
        }
    }
    if let Some(c) = &repair.dispatched {
        let _ = writeln!(md, "Dispatched: `{}`\n", c.render());
    }
    let _ = writeln!(md, "### Without lineage (`sig_only_baseline`)\n");
    let _ = writeln!(
        md,
        "The same two sessions with signatures and Merkle proofs verified but no lineage: the summary \
         is validly signed by the agent, so it is trusted, and the call is {}.\n",
        if sig_dispatched {
            "**dispatched** — the attack succeeds"
        } else {
            "not dispatched"
        }
    );
    let _ = writeln!(md, "## The lineage of the summary\n");
    let _ = writeln!(
        md,
        "Roots at the bottom; red is EXTERNAL, orange DERIVED_UNTRUSTED, green TRUSTED; the taint path is drawn thick.\n"
    );
    md.push_str(&fence("mermaid", &to_mermaid(&graph)));
    let summary_of = |d: &crate::agent::Dispatch| {
        d.decision
            .as_ref()
            .map_or_else(|| "error".to_string(), |x| x.decision.as_str().to_string())
    };
    Ok(Trace {
        markdown: md,
        deny: summary_of(&deny),
        repair: summary_of(&repair),
        sig_only_dispatched: sig_dispatched,
    })
}
