//! The sensitive-action gate wired to the store (paper §M6): the pure decision of
//! `memlineage_core::gate` fed with verified context entries, their effective labels and taint
//! paths, repair candidates retrieved from the store, and every decision appended to the log as
//! a signed `gate_decision` record so a third party can re-check it.

use super::carrier_cache::GateView;
use super::gate_epochs::{Epoch, GateTicket};
use super::{Memory, WriteRequest, Written};
use crate::error::{Error, IntegrityCheck, IntegrityError};
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::gate::{
    self, Ancestry, AncestryNode, ContextEntry, GateDecision, GateInput, Policy, ToolCall,
};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, Hash256, PrincipalName};
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
    /// The scopes whose entries the caller may read, for the earliest-carrier rule (issue 19,
    /// `docs/gate.md`, "Earliest carrier"): a value's earliest carrier is looked for among
    /// them. `None`: every scope (a library caller holds the whole store); the service passes
    /// its token's scopes.
    pub readable: Option<Vec<Scope>>,
    /// The principal that signs the decision record.
    pub recorder: PrincipalName,
    /// Where context entries were read from, as the integration that made the tool calls
    /// recorded it: entry id (in `context`) → the document's name (the tool call's argument
    /// naming it). What lets a call denied only by values from a document the user's request
    /// names be a confirm (`docs/gate.md`, "Confirm"); kept in the decision record.
    pub sources: BTreeMap<EntryId, String>,
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
            readable: None,
            recorder: recorder.clone(),
            sources: BTreeMap::new(),
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

/// A decision and the signed record of it still to be appended ([`Memory::gate_unrecorded`]).
#[derive(Clone, Debug)]
pub struct UnrecordedGate {
    /// The decision, with its texts written out.
    pub decision: GateDecision<'static>,
    /// The decision as the JSON the record holds (`docs/gate.md`; compact, every object's
    /// keys sorted), made once for the record and handed back so that a caller answering in
    /// JSON need not encode it again.
    pub decision_json: Box<serde_json::value::RawValue>,
    /// The `gate_decision` entry to append before the decision is acted on.
    pub record: WriteRequest,
}

/// A decision's verdict, its JSON and the signed record of it still to be appended
/// ([`Memory::gate_record_after`]): an [`UnrecordedGate`] without the decision's texts.
#[derive(Clone, Debug)]
pub struct GateRecord {
    /// Allow, deny, repair or confirm.
    pub decision: gate::Decision,
    /// The decision as the JSON the record holds (compact, every object's keys sorted).
    pub decision_json: Box<serde_json::value::RawValue>,
    /// The `gate_decision` entry to append before the decision is acted on.
    pub record: WriteRequest,
}

/// The content of a `gate_decision` record (`docs/formats.md`, "Control records"): the call,
/// the context, the decision and, when given, the sources. Every object's keys are written in
/// sorted order (the fields below are declared so, and `arguments` and the decision are JSON
/// maps, which keep their keys sorted), the bytes the record has always had: a third party
/// re-checking a decision reads the same JSON however the record was made.
#[derive(serde::Serialize)]
struct RecordContent<'a> {
    call: RecordCall<'a>,
    context: &'a [EntryId],
    decision: &'a serde_json::value::RawValue,
    /// What the gate was told about where entries were read from, so that a third party
    /// re-checking a confirm sees the same input.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    sources: &'a BTreeMap<EntryId, String>,
}

/// The call in a record: `{"arguments": …, "name": …}`.
#[derive(serde::Serialize)]
struct RecordCall<'a> {
    arguments: &'a serde_json::Map<String, serde_json::Value>,
    name: &'a str,
}

/// Each entry's id and the ids of all its parents.
type ParentLists = Vec<(EntryId, Vec<EntryId>)>;

/// Each entry's id and its leaf index.
type Positions = Vec<(EntryId, u64)>;

/// Repair candidates drawn from the store, at most this many.
const REPAIR_POOL: usize = 16;

/// At most this many ancestors are read for value provenance; beyond it, unread ancestors count
/// as untrusted carriers (fail closed, `docs/gate.md`).
pub const MAX_ANCESTRY: usize = 4096;

impl Memory {
    /// Decides whether `req.call` may be dispatched under `policy`, and logs the decision.
    ///
    /// Context entries are verified like retrieval results (signature, inclusion, label); one
    /// that fails verification is an error naming it, not silently ignored, because the
    /// caller's prompt contained it. An entry named in the context that retrieval would not
    /// return — forgotten (its content erased or not), or a control record — is never dropped
    /// either: it counts as `EXTERNAL` for everything it carries, and, when its content is
    /// gone, as carrying every value (`docs/gate.md`, "Context integrity"). A distrusted entry
    /// counts at its effective label, `EXTERNAL`. Their ancestors (through every edge, whatever
    /// its weight) are read and verified the same way for value provenance. With repair on and
    /// no `repair_query`, the user's request — the text of the context's `user_input` entries
    /// whose label is trusted (an external `user_input` steers nothing) — is the query.
    pub fn gate(&self, policy: &Policy, req: &GateRequest) -> Result<GateOutcome, Error> {
        let UnrecordedGate {
            decision, record, ..
        } = self.gate_unrecorded(policy, req)?;
        let written = self.write(record)?;
        Ok(GateOutcome {
            decision,
            record: written,
        })
    }

    /// [`Memory::gate`] without the append: the decision, and the `gate_decision` record that
    /// must be written (with [`Memory::write`] or in a [`Memory::write_batch`]) before the
    /// decision is acted on. For callers that group-commit the records of many concurrent
    /// decisions into one transaction (the HTTP service); the decision and the record are
    /// exactly those [`Memory::gate`] appends.
    pub fn gate_unrecorded(
        &self,
        policy: &Policy,
        req: &GateRequest,
    ) -> Result<UnrecordedGate, Error> {
        // The log size the decision's remembered answers are checked against and new ones are
        // stamped with, read before anything else the decision reads (`carrier_cache.rs`).
        let stamped = self.gate_epoch()?;
        self.gate_unrecorded_at(policy, req, stamped)
    }

    /// [`Memory::gate_unrecorded`] for a request stamped with [`Memory::gate_ticket`] when it
    /// arrived: the decision may use a look at the log that another decision took, if that look
    /// began after this request arrived (`gate_epochs.rs`) — the same decision, as fresh as
    /// its own request, for a service that decides a burst of requests at once.
    pub fn gate_unrecorded_after(
        &self,
        policy: &Policy,
        req: &GateRequest,
        ticket: GateTicket,
    ) -> Result<UnrecordedGate, Error> {
        let stamped = self.gate_epoch_after(ticket)?;
        self.gate_unrecorded_at(policy, req, stamped)
    }

    /// [`Memory::gate_unrecorded_after`] for a caller that answers in JSON (the HTTP service):
    /// the same decision and record, with the decision as its verdict and its JSON only —
    /// its texts are not copied out of the context they borrow from.
    pub fn gate_record_after(
        &self,
        policy: &Policy,
        req: &GateRequest,
        ticket: GateTicket,
    ) -> Result<GateRecord, Error> {
        let stamped = self.gate_epoch_after(ticket)?;
        self.gate_decided_at(policy, req, stamped, |decision, decision_json, record| {
            GateRecord {
                decision: decision.decision,
                decision_json,
                record,
            }
        })
    }

    /// The decision on the log as `stamped` saw it ([`Memory::gate_epoch`]).
    fn gate_unrecorded_at(
        &self,
        policy: &Policy,
        req: &GateRequest,
        stamped: Epoch,
    ) -> Result<UnrecordedGate, Error> {
        self.gate_decided_at(policy, req, stamped, |decision, decision_json, record| {
            UnrecordedGate {
                decision: decision.into_owned(),
                decision_json,
                record,
            }
        })
    }

    /// The decision on the log as `stamped` saw it, its JSON and its record, given to `keep`
    /// while the decision still borrows from the context it was made on.
    fn gate_decided_at<T>(
        &self,
        policy: &Policy,
        req: &GateRequest,
        stamped: Epoch,
        keep: impl FnOnce(GateDecision<'_>, Box<serde_json::value::RawValue>, WriteRequest) -> T,
    ) -> Result<T, Error> {
        let epoch = stamped.as_ref().map(|(size, _)| *size);
        let views = self.gate_views(stamped);
        let (context, mut parents, mut positions) =
            self.context_entries(&req.context, epoch, views)?;
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
                let (pool, pool_parents, pool_positions) =
                    self.context_entries(&ids, epoch, views)?;
                parents.extend(pool_parents);
                positions.extend(pool_positions);
                pool
            }
            None => Vec::new(),
        };
        // Value provenance needs the ancestry only for a sensitive tool under
        // `provenance = "value"`; otherwise it is never read.
        let by_value =
            policy.is_sensitive(&req.call.name) && policy.provenance == gate::Provenance::Value;
        let ancestry = if by_value {
            self.ancestry(context.iter().chain(&pool), parents, epoch, views)?
        } else {
            Ancestry::new()
        };
        // Where the call's values (and, for repair, the trusted candidates) first appeared in
        // the log: looked up before the pure decision (issue 19).
        let firsts = if by_value {
            let mut keys = gate::value_keys_of_arguments(&req.call.arguments);
            if req.repair {
                for e in context.iter().chain(&pool) {
                    if let (false, Some(text)) = (e.label.is_untrusted(), &e.content) {
                        keys.extend(gate::value_keys_of_text(text));
                    }
                }
                keys.sort_unstable();
                keys.dedup();
            }
            Some(self.first_carriers_at(epoch, &keys, req.readable.as_deref(), positions)?)
        } else {
            None
        };
        let mut input = GateInput::new(&req.call, &context, self.settings.tau)
            .with_citations(&req.citations)
            .with_attribution(&req.attribution)
            .with_fallback(self.settings.fallback)
            .with_ancestry(&ancestry)
            .with_sources(&req.sources);
        if let Some(f) = &firsts {
            input = input.with_first_carriers(f);
        }
        if req.repair {
            input = input.with_repair(&pool);
        }
        let decision = gate::decide(policy, &input).map_err(Error::Gate)?;
        let decision_json = decision
            .to_sorted_json()
            .map_err(|e| Error::internal(format!("gate record: {e}")))?;
        // The record's bytes are those of the decision's JSON value (sorted keys), as they
        // have always been; every gate test checks it in debug builds.
        debug_assert_eq!(
            decision_json.get(),
            serde_json::to_value(&decision)
                .map(|v| v.to_string())
                .unwrap_or_default()
        );
        let content = serde_json::to_vec(&RecordContent {
            call: RecordCall {
                arguments: &req.call.arguments,
                name: &req.call.name,
            },
            context: &req.context,
            decision: &decision_json,
            sources: &req.sources,
        })
        .map_err(|e| Error::internal(format!("gate record: {e}")))?;
        let record = WriteRequest::new(&req.recorder, EntryKind::GateDecision, content)
            .with_scope(req.scope.clone())
            .with_meta("tool", &req.call.name)
            .with_meta("decision", decision.decision.as_str());
        Ok(keep(decision, decision_json, record))
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

    /// When the gate may use and keep verified views of entries (`carrier_cache.rs`): the
    /// stamp of this decision and the SHA-256 of the latest checkpoint note, both as
    /// [`Memory::gate_epoch`] read them in one snapshot, before any entry is verified. `None`
    /// for a handle that remembers nothing, and for a reader handle, whose every retrieval also
    /// checks the store's history against what it holds.
    fn gate_views(&self, stamped: Option<(u64, Option<String>)>) -> Option<(u64, Hash256)> {
        let (stamp, note) = stamped?;
        if self.reader.is_some() {
            return None;
        }
        let mut bytes = b"memlineage gate views: checkpoint note\0".to_vec();
        match note {
            Some(n) => {
                bytes.push(1);
                bytes.extend_from_slice(n.as_bytes());
            }
            None => bytes.push(0),
        }
        Some((stamp, Hash256::of(&bytes)))
    }

    /// The remembered view of `id`, when `views` allows one ([`Memory::gate_views`]).
    fn remembered_view(
        &self,
        id: &EntryId,
        views: Option<(u64, Hash256)>,
    ) -> Option<std::sync::Arc<GateView>> {
        let (_, anchor) = views?;
        self.carriers.view(id, &anchor)
    }

    /// Remembers the view of a verified entry, when `views` allows it.
    fn remember_view(
        &self,
        views: Option<(u64, Hash256)>,
        v: &super::EntryView,
        entry: &ContextEntry,
        parents: &[EntryId],
    ) {
        if let Some((stamp, anchor)) = views {
            self.carriers.remember_view(
                stamp,
                anchor,
                GateView {
                    entry: entry.clone(),
                    parents: parents.to_vec(),
                    index: v.index,
                    forgotten: v.forgotten_by.is_some(),
                },
            );
        }
    }

    /// Verified context entries with effective labels and taint paths, in the order of `ids`,
    /// the parent ids of each (every edge), and the leaf index of each. An entry that fails verification is an error
    /// naming it; one that retrieval does not return (forgotten, or a control record) is kept
    /// at `EXTERNAL` (without content when it is erased or unreadable). Taint paths are those
    /// the handle remembers when `epoch` is given ([`Memory::gate_epoch`]); an entry whose
    /// verified view the handle remembers ([`Memory::gate_views`]) is not verified again (only
    /// live entries: a forgotten one is read as below every time).
    fn context_entries(
        &self,
        ids: &[EntryId],
        epoch: Option<u64>,
        views: Option<(u64, Hash256)>,
    ) -> Result<(Vec<ContextEntry>, ParentLists, Positions), Error> {
        let mut found: BTreeMap<EntryId, (ContextEntry, Vec<EntryId>, u64)> = BTreeMap::new();
        let mut unverified: Vec<EntryId> = Vec::with_capacity(ids.len());
        for id in ids {
            match self.remembered_view(id, views) {
                Some(v) if !v.forgotten => {
                    found.insert(*id, (v.entry.clone(), v.parents.clone(), v.index));
                }
                _ => unverified.push(*id),
            }
        }
        if !unverified.is_empty() {
            // Verified as for a prompt; the gate renders nothing.
            let r = self.recall_rendered(&unverified, false)?;
            if let Some(d) = r.dropped.first() {
                return Err(failed_verification(d));
            }
            for v in &r.entries {
                let parents: Vec<EntryId> = v.entry.body().parents.iter().map(|p| p.id).collect();
                let entry = self.context_entry(v, epoch)?;
                self.remember_view(views, v, &entry, &parents);
                found.insert(v.entry.id(), (entry, parents, v.index));
            }
        }
        let missing: Vec<EntryId> = ids
            .iter()
            .filter(|id| !found.contains_key(id))
            .copied()
            .collect();
        if !missing.is_empty() {
            let hidden = self.recall_lineage(&missing)?;
            if let Some(d) = hidden.dropped.first() {
                return Err(failed_verification(d));
            }
            for v in &hidden.entries {
                let parents = v.entry.body().parents.iter().map(|p| p.id).collect();
                let mut e = self.context_entry(v, epoch)?;
                untrusted_as_forgotten(&mut e);
                found.insert(e.id, (e, parents, v.index));
            }
            for id in missing {
                if found.contains_key(&id) {
                    continue;
                }
                // A control record (or an entry retrieval does not return at all): its
                // content is not something the gate can read as data.
                let (writer, kind, index) = match self.reads().entry_by_id(&id)? {
                    Some(stored) => {
                        match memlineage_core::entry::SignedEntry::from_leaf(&stored.leaf) {
                            Ok(e) => (e.body().writer.clone(), e.body().kind, stored.index),
                            Err(_) => (String::new(), EntryKind::Observation, stored.index),
                        }
                    }
                    None => return Err(Error::NotFound(id)),
                };
                let mut e = ContextEntry {
                    id,
                    label: memlineage_core::label::TrustLabel::External,
                    writer,
                    kind,
                    content: None,
                    taint_path: Vec::new(),
                };
                untrusted_as_forgotten(&mut e);
                found.insert(id, (e, Vec::new(), index));
            }
        }
        let mut entries = Vec::with_capacity(ids.len());
        let mut parents = Vec::with_capacity(ids.len());
        let mut positions = Vec::with_capacity(ids.len());
        let mut seen = std::collections::BTreeSet::new();
        for id in ids {
            if !seen.insert(*id) {
                continue;
            }
            if let Some((e, ps, index)) = found.remove(id) {
                parents.push((e.id, ps));
                positions.push((e.id, index));
                entries.push(e);
            }
        }
        Ok((entries, parents, positions))
    }

    /// The gate's view of a verified entry: its effective label, and its taint path when it is
    /// untrusted (remembered by the handle when `epoch` is given: [`Memory::gate_epoch`]).
    pub(super) fn context_entry(
        &self,
        v: &super::EntryView,
        epoch: Option<u64>,
    ) -> Result<ContextEntry, Error> {
        let id = v.entry.id();
        let taint_path = if v.effective_label.is_untrusted() {
            self.gate_taint_path(&id, epoch)?
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
        epoch: Option<u64>,
        views: Option<(u64, Hash256)>,
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
            // Ancestors whose verified views the handle remembers are not verified again; the
            // others are, in one retrieval. Either way they are taken in the order wanted, as
            // one retrieval of them all would return them (the bound cuts the same ones).
            let remembered: Vec<Option<std::sync::Arc<GateView>>> = wanted
                .iter()
                .map(|id| self.remembered_view(id, views))
                .collect();
            let unverified: Vec<EntryId> = wanted
                .iter()
                .zip(&remembered)
                .filter(|(_, v)| v.is_none())
                .map(|(id, _)| *id)
                .collect();
            let mut verified: BTreeMap<EntryId, (ContextEntry, Vec<EntryId>)> = BTreeMap::new();
            if !unverified.is_empty() {
                let r = self.recall_lineage(&unverified)?;
                for v in &r.entries {
                    let entry = self.context_entry(v, epoch)?;
                    let ps: Vec<EntryId> = v.entry.body().parents.iter().map(|p| p.id).collect();
                    self.remember_view(views, v, &entry, &ps);
                    verified.insert(entry.id, (entry, ps));
                }
            }
            for (id, view) in wanted.iter().zip(remembered) {
                let (entry, ps) = match view {
                    Some(v) => (v.entry.clone(), v.parents.clone()),
                    None => match verified.remove(id) {
                        Some(x) => x,
                        // Failed verification or missing from the log: left out.
                        None => continue,
                    },
                };
                frontier.extend(ps.iter().copied());
                anc.insert(entry.id, AncestryNode { entry, parents: ps });
            }
        }
        Ok(anc)
    }
}

impl Memory {
    /// The taint path of `id` ([`Memory::taint_path`]), remembered by the handle when `epoch`
    /// is given: it runs over `id`'s ancestors, which never change, and their effective labels
    /// and writers' classes, which only distrust and registry records change
    /// (`carrier_cache.rs`).
    fn gate_taint_path(&self, id: &EntryId, epoch: Option<u64>) -> Result<Vec<EntryId>, Error> {
        let Some(stamp) = epoch else {
            return self.taint_path(id);
        };
        if let Some(path) = self.carriers.taint_path(id) {
            return Ok(path);
        }
        let path = self.taint_path(id)?;
        self.carriers.remember_taint_path(*id, stamp, path.clone());
        Ok(path)
    }
}

/// The user's request in a context: the text of its `user_input` entries whose label is trusted
/// (an external principal's `user_input` — another person talking to the agent — steers no
/// repair), in prompt order.
fn user_request(context: &[ContextEntry]) -> Option<String> {
    let texts: Vec<&str> = context
        .iter()
        .filter(|e| e.kind == EntryKind::UserInput && !e.label.is_untrusted())
        .filter_map(|e| e.content.as_deref())
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// A context entry that retrieval would not return (forgotten, or a control record): it counts
/// as `EXTERNAL` for everything it carries, as the root of its own taint path.
fn untrusted_as_forgotten(e: &mut ContextEntry) {
    e.label = memlineage_core::label::TrustLabel::External;
    if e.taint_path.first() != Some(&e.id) {
        e.taint_path = vec![e.id];
    }
}

/// The error for a context entry that fails verification: the gate refuses the call and
/// names the entry (issue 11, context integrity), never drops it silently.
fn failed_verification(d: &super::retrieve::Dropped) -> Error {
    IntegrityError::new(
        IntegrityCheck::Verification,
        format!("context entry {} failed verification: {}", d.id, d.reason),
    )
    .at(d.index)
    .entry(d.id)
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    /// The record's bytes are those of the JSON object built key by key (sorted keys at every
    /// level), with and without sources.
    #[test]
    fn record_content_has_sorted_keys_at_every_level() {
        let id = |i: u8| EntryId(Hash256::of(&[i]));
        let arguments: serde_json::Map<String, serde_json::Value> = serde_json::from_str(
            r#"{"zeta": [1, {"b": 2, "a": "\u202e"}], "amount": 1100.0, "recipient": "GB29 NWBK"}"#,
        )
        .unwrap();
        let decision = serde_json::json!({"tool": "send_money", "decision": "deny", "reasons": [{"z": 1, "a": 2}]});
        let raw = serde_json::value::RawValue::from_string(decision.to_string()).unwrap();
        for sources in [
            BTreeMap::new(),
            BTreeMap::from([(id(9), "bill.txt".to_string()), (id(1), "a".into())]),
        ] {
            let context = vec![id(3), id(1)];
            let made = serde_json::to_vec(&RecordContent {
                call: RecordCall {
                    arguments: &arguments,
                    name: "send_money",
                },
                context: &context,
                decision: &raw,
                sources: &sources,
            })
            .unwrap();
            let mut expected = serde_json::json!({
                "call": {"name": "send_money", "arguments": arguments},
                "context": context,
                "decision": decision,
            });
            if !sources.is_empty() {
                expected["sources"] = serde_json::json!(sources);
            }
            assert_eq!(
                String::from_utf8(made).unwrap(),
                serde_json::to_string(&expected).unwrap()
            );
        }
    }
}
