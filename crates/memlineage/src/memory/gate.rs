//! The sensitive-action gate wired to the store (paper §M6): the pure decision of
//! `memlineage_core::gate` fed with verified context entries, their effective labels and taint
//! paths, repair candidates retrieved from the store, and every decision appended to the log as
//! a signed `gate_decision` record so a third party can re-check it.

use super::{Memory, WriteRequest, Written};
use crate::error::Error;
use crate::store::Store;
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::{self, ContextEntry, GateDecision, GateInput, Policy, ToolCall};
use memlineage_core::label::Weight;
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
    /// Query for repair candidates from the store (normally the user's request); `None` uses
    /// only the context.
    pub repair_query: Option<String>,
    /// Scope for the repair retrieval.
    pub scope: Scope,
    /// The principal that signs the decision record.
    pub recorder: String,
}

impl GateRequest {
    /// A request with no citations, no attribution, no repair, recorded by `recorder`.
    pub fn new(call: ToolCall, context: Vec<EntryId>, recorder: &str) -> GateRequest {
        GateRequest {
            call,
            context,
            citations: BTreeMap::new(),
            attribution: BTreeMap::new(),
            repair: false,
            repair_query: None,
            scope: Scope::default(),
            recorder: recorder.to_string(),
        }
    }
}

/// The decision and the log record that holds it.
#[derive(Clone, Debug)]
pub struct GateOutcome {
    /// The decision.
    pub decision: GateDecision,
    /// The signed `gate_decision` record appended to the log.
    pub record: Written,
}

/// Repair candidates drawn from the store, at most this many.
const REPAIR_POOL: usize = 16;

impl<S: Store> Memory<S> {
    /// Decides whether `req.call` may be dispatched under `policy`, and logs the decision.
    ///
    /// Context entries are verified like retrieval results (signature, inclusion, label); one
    /// that fails verification is an error, not silently ignored, because the caller's prompt
    /// contained it.
    pub fn gate(&self, policy: &Policy, req: &GateRequest) -> Result<GateOutcome, Error> {
        let context = self.context_entries(&req.context)?;
        let pool = match (&req.repair_query, req.repair) {
            (Some(q), true) => {
                let r = self.search(q, &req.scope, REPAIR_POOL)?;
                let ids: Vec<EntryId> = r
                    .entries
                    .iter()
                    .map(|e| e.entry.id())
                    .filter(|id| !req.context.contains(id))
                    .collect();
                self.context_entries(&ids)?
            }
            _ => Vec::new(),
        };
        let mut input = GateInput::new(&req.call, &context, self.settings.tau)
            .with_citations(&req.citations)
            .with_attribution(&req.attribution);
        if req.repair {
            input = input.with_repair(&pool);
        }
        let decision =
            gate::decide(policy, &input).map_err(|e| Error::Invalid(format!("gate: {e}")))?;
        let record = serde_json::json!({
            "call": {"name": req.call.name, "arguments": req.call.arguments},
            "context": req.context,
            "decision": decision,
        });
        let content =
            serde_json::to_vec(&record).map_err(|e| Error::Invalid(format!("gate record: {e}")))?;
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

    /// Verified context entries with effective labels and taint paths.
    fn context_entries(&self, ids: &[EntryId]) -> Result<Vec<ContextEntry>, Error> {
        let r = self.recall(ids)?;
        if let Some(d) = r.dropped.first() {
            return Err(Error::Integrity(format!(
                "context entry {} failed verification: {}",
                d.id, d.reason
            )));
        }
        r.entries
            .iter()
            .map(|v| {
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
            })
            .collect()
    }
}
