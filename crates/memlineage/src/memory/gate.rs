//! The sensitive-action gate wired to the store (paper §M6): the pure decision of
//! `memlineage_core::gate` fed with verified context entries, their effective labels and taint
//! paths, repair candidates retrieved from the store, and every decision appended to the log as
//! a signed `gate_decision` record so a third party can re-check it.

use super::{Memory, WriteRequest, Written};
use crate::error::{Error, IntegrityCheck, IntegrityError};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::{
    self, Ancestry, AncestryNode, ContextEntry, GateDecision, GateInput, Policy, ToolCall,
};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, PrincipalName};
use std::collections::BTreeMap;

/// A tool call to check, with its active context.
#[derive(Clone, Debug)]
pub struct GateRequest {
    /// The proposed call.
    pub call: ToolCall,
    /// Ids of the entries in the prompt, including the user's request, in prompt order.
    pub context: Vec<EntryId>,
    /// Explicit citations: parameter → entry ids (which must be in `context`).
    pub citations: BTreeMap<String, Vec<EntryId>>,
    /// Per-parameter attribution weights, when the caller computed them.
    pub attribution: BTreeMap<String, Vec<(EntryId, Weight)>>,
    /// Try authority repair when the call would be denied.
    pub repair: bool,
    /// Query for repair candidates from the store; `None` uses the user's request (the text of
    /// the context's `user_input` entries), and only the context when there is none.
    pub repair_query: Option<String>,
    /// Scope for the repair retrieval.
    pub scope: Scope,
    /// The principal that signs the decision record.
    pub recorder: PrincipalName,
}

impl GateRequest {
    /// A request with no citations, no attribution, no repair, recorded by `recorder`.
    pub fn new(call: ToolCall, context: Vec<EntryId>, recorder: &PrincipalName) -> GateRequest {
        GateRequest {
            call,
            context,
            citations: BTreeMap::new(),
            attribution: BTreeMap::new(),
            repair: false,
            repair_query: None,
            scope: Scope::default(),
            recorder: recorder.clone(),
        }
    }
}

/// The decision and the log record that holds it.
#[derive(Clone, Debug)]
pub struct GateOutcome {
    /// The decision, with its texts written out (it outlives the context it was decided on).
    pub decision: GateDecision<'static>,
    /// The signed `gate_decision` record appended to the log.
    pub record: Written,
}

/// Each entry's id and the ids of all its parents.
type ParentLists = Vec<(EntryId, Vec<EntryId>)>;

/// Repair candidates drawn from the store, at most this many.
const REPAIR_POOL: usize = 16;

/// At most this many ancestors are read for value provenance; beyond it, unread ancestors count
/// as untrusted carriers (fail closed, `docs/gate.md`).
pub const MAX_ANCESTRY: usize = 4096;

impl Memory {
    /// Decides whether `req.call` may be dispatched under `policy`, and logs the decision.
    ///
    /// Context entries are verified like retrieval results (signature, inclusion, label); one
    /// that fails verification is an error, not silently ignored, because the caller's prompt
    /// contained it. Their ancestors (through every edge, whatever its weight) are read and
    /// verified the same way for value provenance. With repair on and no `repair_query`, the
    /// user's request — the text of the context's `user_input` entries — is the query.
    pub fn gate(&self, policy: &Policy, req: &GateRequest) -> Result<GateOutcome, Error> {
        let (context, mut parents) = self.context_entries(&req.context)?;
        let query = match (&req.repair_query, req.repair) {
            (Some(q), true) => Some(q.clone()),
            (None, true) => user_request(&context),
            (_, false) => None,
        };
        let pool = match query {
            Some(q) => {
                let r = self.search(&q, &req.scope, REPAIR_POOL)?;
                let ids: Vec<EntryId> = r
                    .entries
                    .iter()
                    .map(|e| e.entry.id())
                    .filter(|id| !req.context.contains(id))
                    .collect();
                let (pool, pool_parents) = self.context_entries(&ids)?;
                parents.extend(pool_parents);
                pool
            }
            None => Vec::new(),
        };
        // Value provenance needs the ancestry only for a sensitive tool under
        // `provenance = "value"`; otherwise it is never read.
        let ancestry = if policy.is_sensitive(&req.call.name)
            && policy.provenance == gate::Provenance::Value
        {
            self.ancestry(context.iter().chain(&pool), parents)?
        } else {
            Ancestry::new()
        };
        let mut input = GateInput::new(&req.call, &context, self.settings.tau)
            .with_citations(&req.citations)
            .with_attribution(&req.attribution)
            .with_fallback(self.settings.fallback)
            .with_ancestry(&ancestry);
        if req.repair {
            input = input.with_repair(&pool);
        }
        let decision = gate::decide(policy, &input)
            .map_err(Error::Gate)?
            .into_owned();
        let record = serde_json::json!({
            "call": {"name": req.call.name, "arguments": req.call.arguments},
            "context": req.context,
            "decision": decision,
        });
        let content = serde_json::to_vec(&record)
            .map_err(|e| Error::internal(format!("gate record: {e}")))?;
        let written = self.write(
            WriteRequest::new(&req.recorder, EntryKind::GateDecision, content)
                .with_scope(req.scope.clone())
                .with_meta("tool", &req.call.name)
                .with_meta("decision", decision.decision.as_str()),
        )?;
        Ok(GateOutcome {
            decision,
            record: written,
        })
    }

    /// Attribution weights for every argument of `call`, each argument treated as a derived
    /// entry of the context (the third tracing step of the gate, `docs/gate.md`). The child text
    /// of an argument is `tool(param: value)`.
    pub fn attribute_call(
        &self,
        attributor: &dyn crate::attribution::Attributor,
        call: &ToolCall,
        context: &[EntryId],
    ) -> Result<BTreeMap<String, Vec<(EntryId, Weight)>>, Error> {
        let mut out = BTreeMap::new();
        for (param, value) in &call.arguments {
            let shown = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let child = format!("{}({param}: {shown})", call.name);
            let weighed = self.attribute_parents(attributor, &child, context)?;
            out.insert(
                param.clone(),
                weighed.into_iter().map(|p| (p.id, p.weight)).collect(),
            );
        }
        Ok(out)
    }

    /// Verified context entries with effective labels and taint paths, and the parent ids of
    /// each (every edge).
    fn context_entries(&self, ids: &[EntryId]) -> Result<(Vec<ContextEntry>, ParentLists), Error> {
        let r = self.recall(ids)?;
        if let Some(d) = r.dropped.first() {
            return Err(IntegrityError::new(
                IntegrityCheck::Verification,
                format!("context entry {} failed verification: {}", d.id, d.reason),
            )
            .at(d.index)
            .entry(d.id)
            .into());
        }
        let mut entries = Vec::with_capacity(r.entries.len());
        let mut parents = Vec::with_capacity(r.entries.len());
        for v in &r.entries {
            entries.push(self.context_entry(v)?);
            parents.push((
                v.entry.id(),
                v.entry.body().parents.iter().map(|p| p.id).collect(),
            ));
        }
        Ok((entries, parents))
    }

    fn context_entry(&self, v: &super::EntryView) -> Result<ContextEntry, Error> {
        let id = v.entry.id();
        let taint_path = if v.effective_label.is_untrusted() {
            self.taint_path(&id)?
        } else {
            Vec::new()
        };
        Ok(ContextEntry {
            id,
            label: v.effective_label,
            writer: v.entry.body().writer.clone(),
            kind: v.entry.body().kind,
            content: v.text(),
            taint_path,
        })
    }

    /// The lineage behind `entries` for value provenance: every entry with parents, and every
    /// ancestor reachable through any edge, breadth first, at most [`MAX_ANCESTRY`] of them,
    /// verified like retrieval results (forgotten ancestors included, without their content
    /// when it was erased). Ancestors that fail verification, are missing from the log, or lie
    /// beyond the bound are left out, so the gate counts them as untrusted carriers.
    fn ancestry<'e>(
        &self,
        entries: impl Iterator<Item = &'e ContextEntry>,
        parents: ParentLists,
    ) -> Result<Ancestry, Error> {
        let by_id: BTreeMap<EntryId, &ContextEntry> = entries.map(|e| (e.id, e)).collect();
        let mut anc = Ancestry::new();
        let mut frontier: Vec<EntryId> = Vec::new();
        for (id, ps) in parents {
            if ps.is_empty() || anc.contains_key(&id) {
                continue;
            }
            let Some(entry) = by_id.get(&id) else {
                continue;
            };
            frontier.extend(ps.iter().copied());
            anc.insert(
                id,
                AncestryNode {
                    entry: (*entry).clone(),
                    parents: ps,
                },
            );
        }
        let mut seen: std::collections::BTreeSet<EntryId> = anc.keys().copied().collect();
        while !frontier.is_empty() && anc.len() < MAX_ANCESTRY {
            let mut wanted: Vec<EntryId> =
                frontier.drain(..).filter(|id| seen.insert(*id)).collect();
            wanted.truncate(MAX_ANCESTRY.saturating_sub(anc.len()));
            if wanted.is_empty() {
                break;
            }
            let r = self.recall_lineage(&wanted)?;
            for v in &r.entries {
                let entry = self.context_entry(v)?;
                let ps: Vec<EntryId> = v.entry.body().parents.iter().map(|p| p.id).collect();
                frontier.extend(ps.iter().copied());
                anc.insert(entry.id, AncestryNode { entry, parents: ps });
            }
        }
        Ok(anc)
    }
}

/// The user's request in a context: the text of its `user_input` entries, in prompt order.
fn user_request(context: &[ContextEntry]) -> Option<String> {
    let texts: Vec<&str> = context
        .iter()
        .filter(|e| e.kind == EntryKind::UserInput)
        .filter_map(|e| e.content.as_deref())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
