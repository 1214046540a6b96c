//! The scripted agent (no LLM). Per session it writes the user's request to the conversation
//! log, fills its context from memory (raw rows in `no_defense`, `Memory::search`/`recall`
//! otherwise), reads tool outputs, and then:
//!
//! - **derives** (the "LLM" step): writes one summary whose content carries every fact line and
//!   every instruction of its context (instructions rewritten in call syntax as lessons), and
//!   whose parents are all context entries, weighted by the run's weight model;
//! - **acts** (intentionally vulnerable): proposes every call that an instruction anywhere in its
//!   context asks for, or replies with the facts of its context. The cell decides whether a
//!   proposed call is dispatched.

use crate::cell::Cell;
use crate::error::EvalError;
use crate::grammar::{Arg, Call, Grammar};
use crate::json::Json;
use crate::scenario::{AgentFile, WeightsName};
use crate::world::{Mem, attribution, principal, under};
use memlineage::store::StoredEntry;
use memlineage::{GateRequest, WriteRequest};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Parent, Scope, SignedEntry};
use memlineage_core::gate::{GateDecision, Policy};
use memlineage_core::label::{TrustLabel, Weight};
use memlineage_core::render::prompt::{RenderedEntry, context_hash, render_text};

/// One entry of the agent's context, as the agent saw it.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub id: EntryId,
    pub index: u64,
    /// The effective label (verified retrieval) or the label the row claims (raw reads).
    pub label: TrustLabel,
    pub writer: String,
    pub kind: EntryKind,
    pub created_at_ms: u64,
    pub strong_parents: Vec<EntryId>,
    pub text: String,
}

impl Item {
    fn from_entry(entry: &SignedEntry, index: u64, label: TrustLabel, text: String) -> Item {
        let body = entry.body();
        Item {
            id: entry.id(),
            index,
            label,
            writer: body.writer.clone(),
            kind: body.kind,
            created_at_ms: body.created_at_ms,
            strong_parents: body
                .parents
                .iter()
                .filter(|p| p.weight > body.tau)
                .map(|p| p.id)
                .collect(),
            text,
        }
    }

    /// From a raw store row, trusting whatever it claims; `None` when the row does not even
    /// decode, its content was erased, or it is a control record.
    fn from_raw(stored: StoredEntry) -> Option<Item> {
        let entry = SignedEntry::from_leaf(&stored.leaf).ok()?;
        if entry.body().kind.is_control() {
            return None;
        }
        let text = String::from_utf8_lossy(stored.content.as_deref()?).into_owned();
        let label = stored
            .effective_label
            .map_or(entry.body().label, |l| l.max(entry.body().label));
        Some(Item::from_entry(&entry, stored.index, label, text))
    }

    /// `"SHORT_ID LABEL writer/kind"`: compact, so the episode log stays small.
    pub(crate) fn json(&self) -> Json {
        Json::str(format!(
            "{} {} {}/{}",
            self.id.short(),
            self.label.as_str(),
            self.writer,
            self.kind.as_str()
        ))
    }

    fn rendered(&self) -> RenderedEntry {
        RenderedEntry {
            id: self.id,
            label: self.label,
            writer: self.writer.clone(),
            kind: self.kind,
            created_at_ms: self.created_at_ms,
            strong_parents: self.strong_parents.clone(),
            content: self.text.clone(),
        }
    }
}

/// An entry retrieval dropped, and why.
#[derive(Clone, Debug)]
pub(crate) struct DroppedItem {
    pub index: u64,
    pub reason: String,
}

/// What a retrieval returned.
#[derive(Clone, Debug, Default)]
pub(crate) struct Retrieved {
    pub items: Vec<Item>,
    pub dropped: Vec<DroppedItem>,
}

/// What became of one proposed call.
#[derive(Clone, Debug)]
pub(crate) struct Dispatch {
    /// The call as proposed.
    pub proposed: Call,
    /// The gate's decision (`None` in cells without a gate).
    pub decision: Option<GateDecision<'static>>,
    /// A gate error (the call is then not dispatched).
    pub error: Option<String>,
    /// The call as dispatched (repaired arguments), `None` when not dispatched.
    pub dispatched: Option<Call>,
}

impl Dispatch {
    pub(crate) fn json(&self) -> Json {
        let mut j = Json::obj()
            .with("call", Json::str(self.proposed.render()))
            .with("dispatched", Json::Bool(self.dispatched.is_some()));
        match (&self.decision, &self.error) {
            (Some(d), _) => {
                j.set("decision", Json::str(d.decision.as_str()));
                j.set("summary", Json::str(d.summary()));
                if !d.repairs.is_empty()
                    && let Some(c) = &self.dispatched
                {
                    j.set("repaired_to", Json::str(c.render()));
                }
            }
            (None, Some(e)) => {
                j.set("decision", Json::str("error"));
                j.set("summary", Json::str(e.clone()));
            }
            (None, None) => {
                j.set("decision", Json::str("no_gate"));
            }
        }
        j
    }
}

/// The agent of one episode.
pub(crate) struct Agent<'a> {
    pub file: &'a AgentFile,
    pub grammar: &'a Grammar,
    pub policy: &'a Policy,
    pub cell: Cell,
    pub mem: Mem,
    pub memory: Scope,
    pub inbox: Scope,
    pub sessions: Scope,
}

impl Agent<'_> {
    /// Writes a root entry through the API.
    pub(crate) fn write_root(
        &self,
        writer: &str,
        kind: EntryKind,
        scope: &Scope,
        content: &str,
    ) -> Result<Item, EvalError> {
        let w = self.mem.write(
            WriteRequest::new(&principal(writer)?, kind, content).with_scope(scope.clone()),
        )?;
        let view = self.mem.get(&w.id)?;
        Ok(Item::from_entry(
            &view.entry,
            w.index,
            view.effective_label,
            content.to_string(),
        ))
    }

    /// Fills context from memory with a search of the memory scope.
    pub(crate) fn search(&self, query: &str) -> Result<Retrieved, EvalError> {
        let limit = self.file.agent.retrieval_limit;
        let mut out = Retrieved::default();
        if self.cell.verifies() {
            let r = self.mem.search(query, &self.memory, limit)?;
            for v in &r.entries {
                out.items.push(Item::from_entry(
                    &v.entry,
                    v.index,
                    v.effective_label,
                    v.text().unwrap_or_default(),
                ));
            }
            out.dropped = r
                .dropped
                .iter()
                .map(|d| DroppedItem {
                    index: d.index,
                    reason: d.reason.clone(),
                })
                .collect();
        } else {
            // The undefended baselines read memory straight from the store, unverified.
            let store = self.mem.unchecked().backend();
            let terms = memlineage::store::SearchTerms::parse(query);
            for index in store.text_index().search(&terms, &self.memory, limit)? {
                if let Some(item) = store.entry_by_index(index)?.and_then(Item::from_raw) {
                    out.items.push(item);
                }
            }
        }
        // The prompt lists memories oldest first: the order never depends on the ranking.
        out.items.sort_by_key(|i| i.index);
        out.dropped.sort_by_key(|d| d.index);
        Ok(out)
    }

    /// Fills context with the given entries only (the chain tip).
    pub(crate) fn recall(&self, ids: &[EntryId]) -> Result<Retrieved, EvalError> {
        let mut out = Retrieved::default();
        if self.cell.verifies() {
            let r = self.mem.recall(ids)?;
            for v in &r.entries {
                out.items.push(Item::from_entry(
                    &v.entry,
                    v.index,
                    v.effective_label,
                    v.text().unwrap_or_default(),
                ));
            }
            out.dropped = r
                .dropped
                .iter()
                .map(|d| DroppedItem {
                    index: d.index,
                    reason: d.reason.clone(),
                })
                .collect();
        } else {
            for id in ids {
                let store = self.mem.unchecked().backend();
                if let Some(item) = store.entry_by_id(id)?.and_then(Item::from_raw) {
                    out.items.push(item);
                }
            }
        }
        Ok(out)
    }

    /// The instructions of the context, as calls (deduplicated, in context order).
    pub(crate) fn instructions(&self, context: &[Item]) -> Vec<Call> {
        let mut calls: Vec<Call> = Vec::new();
        for item in context {
            for f in self.grammar.find(&item.text, &|_| None) {
                if !calls.contains(&f.call) {
                    calls.push(f.call);
                }
            }
        }
        calls
    }

    /// The fact lines of the context (deduplicated, in context order).
    pub(crate) fn facts(&self, context: &[Item]) -> Vec<String> {
        let prefix = &self.file.agent.fact_prefix;
        let mut facts: Vec<String> = Vec::new();
        for item in context {
            for line in item.text.lines() {
                let line = line.trim();
                if line.starts_with(prefix.as_str()) && !facts.iter().any(|f| f == line) {
                    facts.push(line.to_string());
                }
            }
        }
        facts
    }

    /// What the summariser carries forward: the facts, then every instruction as a lesson.
    pub(crate) fn carry(&self, context: &[Item]) -> String {
        let mut lines = self.facts(context);
        for c in self.instructions(context) {
            lines.push(format!("{} {}", self.file.agent.lesson_prefix, c.render()));
        }
        if lines.is_empty() {
            "(nothing to remember)".to_string()
        } else {
            lines.join("\n")
        }
    }

    /// The derivation step: a summary of `context`, parents weighted by `weights`.
    pub(crate) fn memorise(
        &self,
        context: &[Item],
        content: &str,
        weights: WeightsName,
        margin_bp: u16,
    ) -> Result<Item, EvalError> {
        let tau = self.mem.settings().tau;
        let parents: Vec<Parent> = if weights == WeightsName::Omitted {
            Vec::new()
        } else {
            context
                .iter()
                .map(|i| Parent {
                    id: i.id,
                    weight: weight(weights, i.label, tau, margin_bp),
                })
                .collect()
        };
        let rendered: Vec<RenderedEntry> = context.iter().map(Item::rendered).collect();
        let h_ctx = context_hash(&render_text(&rendered));
        let w = self.mem.write(
            WriteRequest::new(&principal("agent")?, EntryKind::Derived, content)
                .with_scope(self.memory.clone())
                .with_parents(parents, attribution(weights_name(weights))?)
                .with_context(h_ctx),
        )?;
        let view = self.mem.get(&w.id)?;
        Ok(Item::from_entry(
            &view.entry,
            w.index,
            view.effective_label,
            content.to_string(),
        ))
    }

    /// Decides on one proposed call: dispatched as is without a gate, else through
    /// `Memory::gate` (deny mode unless `repair`) with `context` as the prompt.
    pub(crate) fn dispatch(
        &self,
        call: &Call,
        context: &[EntryId],
        repair: bool,
    ) -> Result<Dispatch, EvalError> {
        if !self.cell.gates() {
            return Ok(Dispatch {
                proposed: call.clone(),
                decision: None,
                error: None,
                dispatched: Some(call.clone()),
            });
        }
        gate_call(&self.mem, self.policy, &self.memory, call, context, repair)
    }

    /// `reply(text=…)` from the facts of the context.
    pub(crate) fn reply(&self, context: &[Item]) -> Call {
        let facts = self.facts(context);
        let text = if facts.is_empty() {
            self.file.agent.no_answer.clone()
        } else {
            facts.join(" ")
        };
        Call::new("reply", [("text".to_string(), Arg::Text(text))])
    }
}

/// Runs `Memory::gate` on a call; a gate error (a value the policy cannot read) is a refusal.
pub(crate) fn gate_call(
    mem: &Mem,
    policy: &Policy,
    scope: &Scope,
    call: &Call,
    context: &[EntryId],
    repair: bool,
) -> Result<Dispatch, EvalError> {
    let mut req = GateRequest::new(call.to_tool_call(), context.to_vec(), &principal("agent")?);
    req.scope = scope.clone();
    req.repair = repair;
    match mem.gate(policy, &req) {
        Ok(out) => {
            let dispatched = out
                .decision
                .dispatched
                .then(|| Call::from_arguments(&call.name, &out.decision.arguments));
            Ok(Dispatch {
                proposed: call.clone(),
                decision: Some(out.decision),
                error: None,
                dispatched,
            })
        }
        Err(e @ memlineage::Error::Gate(_)) => Ok(Dispatch {
            proposed: call.clone(),
            decision: None,
            error: Some(e.to_string()),
            dispatched: None,
        }),
        Err(e) => Err(e.into()),
    }
}

/// The weight of an edge to a parent with `label` under a weight model.
pub(crate) fn weight(model: WeightsName, label: TrustLabel, tau: Weight, margin_bp: u16) -> Weight {
    match model {
        WeightsName::Coarse => Weight::ONE,
        WeightsName::UnderTau => under(tau, margin_bp),
        WeightsName::UnderTauCover if label.is_untrusted() => under(tau, margin_bp),
        WeightsName::UnderTauCover | WeightsName::Omitted => Weight::ONE,
    }
}

/// The attribution name signed into derived entries.
pub(crate) fn weights_name(model: WeightsName) -> &'static str {
    match model {
        WeightsName::Coarse => "coarse",
        WeightsName::UnderTau => "adaptive_under_tau",
        WeightsName::UnderTauCover => "adaptive_under_tau_cover",
        WeightsName::Omitted => "none",
    }
}
