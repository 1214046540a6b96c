//! The memory handle as the MCP servers use it: every call into `memlineage` goes through this
//! file, so a change of the handle's API is adapted here once.
//!
//! The handle is synchronous (an embedded store, no async runtime in the library); the servers
//! are asynchronous, so each operation runs on tokio's blocking pool ([`blocking`]) and never
//! stalls the tasks that move protocol messages.

use memlineage::search::SearchMode;
use memlineage::{AttributionName, Direction, GateRequest, PrincipalName, WriteRequest, Written};
use memlineage_core::EntryId;
use memlineage_core::entry::{EntryKind, Parent, Scope};
use memlineage_core::gate::{Policy, ToolCall};
use memlineage_core::label::TrustClass;
use std::sync::Arc;

/// The memory handle the MCP servers hold.
pub type Mem = memlineage::Memory;

/// The handle shared by every session of a server.
pub type SharedMem = Arc<Mem>;

/// An error of the memory handle, as text a person can act on.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct MemError(pub String);

impl From<memlineage::Error> for MemError {
    fn from(e: memlineage::Error) -> Self {
        MemError(e.to_string())
    }
}

/// A principal name from the configuration (checked when it was read).
pub fn principal(name: &str) -> Result<PrincipalName, MemError> {
    name.parse::<PrincipalName>()
        .map_err(|e| MemError(format!("principal `{name}`: {e}")))
}

/// Runs `f` on the blocking pool with the handle.
pub async fn blocking<T, F>(mem: &SharedMem, f: F) -> Result<T, MemError>
where
    T: Send + 'static,
    F: FnOnce(&Mem) -> Result<T, MemError> + Send + 'static,
{
    let mem = Arc::clone(mem);
    tokio::task::spawn_blocking(move || f(&mem))
        .await
        .map_err(|e| MemError(format!("the memory operation did not finish: {e}")))?
}

/// Checks that `name` can sign entries here: registered, not revoked, its key loaded. Returns
/// its trust class.
pub fn signer(mem: &Mem, name: &str) -> Result<TrustClass, MemError> {
    let registry = mem.registry()?;
    let Some(p) = registry.get(name) else {
        return Err(MemError(format!(
            "principal `{name}` is not registered in this store (add it with `memlineage principal add {name} --class trusted|external`)"
        )));
    };
    if p.revoked_at.is_some() {
        return Err(MemError(format!(
            "principal `{name}` is revoked: it can no longer sign entries"
        )));
    }
    if !mem.can_sign(&principal(name)?) {
        return Err(MemError(format!(
            "no secret key for principal `{name}` in the store's keys directory or the external signer: this process cannot sign as it"
        )));
    }
    Ok(p.class)
}

/// A content entry to write: who, what kind, the text, where from.
#[derive(Clone, Debug)]
pub struct NewEntry {
    /// The principal that authored it.
    pub writer: String,
    /// user_input, tool_output, observation or derived.
    pub kind: EntryKind,
    /// The text.
    pub text: String,
    /// Parents with weights, and the attribution algorithm that weighed them.
    pub parents: Vec<Parent>,
    /// The attribution algorithm's name (with parents).
    pub attribution: AttributionName,
    /// Free metadata (signed with the entry).
    pub metadata: Vec<(String, String)>,
}

impl NewEntry {
    /// An entry with no parents.
    pub fn new(writer: &str, kind: EntryKind, text: impl Into<String>) -> NewEntry {
        NewEntry {
            writer: writer.to_string(),
            kind,
            text: text.into(),
            parents: Vec::new(),
            attribution: AttributionName::NONE,
            metadata: Vec::new(),
        }
    }

    /// Adds a metadata pair.
    pub fn meta(mut self, key: &str, value: &str) -> NewEntry {
        self.metadata.push((key.to_string(), value.to_string()));
        self
    }
}

/// Writes `entries` in one batch (all or nothing), in `scope`.
pub fn write_all(
    mem: &Mem,
    scope: &Scope,
    entries: Vec<NewEntry>,
) -> Result<Vec<Written>, MemError> {
    if entries.is_empty() {
        return Ok(Vec::new());
    }
    let mut reqs = Vec::with_capacity(entries.len());
    for e in entries {
        let mut req = WriteRequest::new(&principal(&e.writer)?, e.kind, e.text.into_bytes())
            .with_scope(scope.clone());
        if !e.parents.is_empty() {
            req = req.with_parents(e.parents, e.attribution);
        }
        for (k, v) in &e.metadata {
            req = req.with_meta(k, v);
        }
        reqs.push(req);
    }
    Ok(mem.write_batch(reqs)?)
}

/// What retrieval showed: the rendered blocks and the ids of the entries in them.
#[derive(Clone, Debug)]
pub struct Shown {
    /// The verified, labelled prompt blocks.
    pub rendered: String,
    /// The entries rendered, in order.
    pub ids: Vec<EntryId>,
    /// How many candidates failed verification and were left out.
    pub dropped: usize,
}

/// Search in `mode` (lexical, semantic or hybrid), every hit verified and labelled before
/// anything is returned (paper §M5), whatever index found it.
pub fn search(
    mem: &Mem,
    query: &str,
    scope: &Scope,
    limit: usize,
    mode: SearchMode,
) -> Result<Shown, MemError> {
    if mode != SearchMode::Lexical {
        fresh_vectors(mem)?;
    }
    let r = mem.search_with(query, scope, limit, mode)?;
    Ok(Shown {
        ids: r.entries.iter().map(|e| e.entry.id()).collect(),
        dropped: r.dropped.len(),
        rendered: r.rendered,
    })
}

/// At most this many entries are indexed before a recall by meaning, when that is all the
/// background indexer has left.
const FRESH: u64 = 64;

/// An agent recalls what it has just remembered: when the vector index is at most [`FRESH`]
/// entries behind the log (a few seconds of the model), they are indexed before the search;
/// further behind, the search ranks what the indexer has reached (the lexical part of a
/// hybrid recall finds the rest) instead of waiting minutes.
fn fresh_vectors(mem: &Mem) -> Result<(), MemError> {
    let Some(status) = mem.vector_index_status() else {
        return Ok(());
    };
    if mem.size()?.saturating_sub(status.considered) > FRESH {
        return Ok(());
    }
    for _ in 0..4 {
        if mem.index_vectors(FRESH)?.caught_up() {
            break;
        }
    }
    Ok(())
}

/// The lineage of `id` as text (or Mermaid), and the ids of the entries it shows.
pub fn lineage(
    mem: &Mem,
    id: &EntryId,
    descendants: bool,
    depth: usize,
    mermaid: bool,
) -> Result<(String, Vec<EntryId>), MemError> {
    use memlineage_core::render::lineage as fmt;
    let dir = if descendants {
        Direction::Descendants
    } else {
        Direction::Ancestors
    };
    let g = mem.lineage(id, dir, depth)?;
    let text = if mermaid {
        fmt::to_mermaid(&g)
    } else {
        fmt::to_text(&g)
    };
    let ids = g.nodes.iter().map(|n| n.id).collect();
    Ok((text, ids))
}

/// Forgets `id` with a tombstone signed by `writer`.
pub fn forget(
    mem: &Mem,
    writer: &str,
    id: &EntryId,
    erase: bool,
    reason: &str,
) -> Result<Written, MemError> {
    Ok(mem.forget(&principal(writer)?, id, erase, reason)?)
}

/// The entries of the log from `start`, at most `limit`, each with its index, kind, writer,
/// metadata and content (for replaying session records).
pub fn log_chunk(mem: &Mem, start: u64, limit: u64) -> Result<Vec<LogRow>, MemError> {
    Ok(mem
        .log(start, limit)?
        .into_iter()
        .map(|v| {
            let body = v.entry.body();
            LogRow {
                index: v.index,
                kind: body.kind,
                writer: body.writer.clone(),
                metadata: body
                    .metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                content: v.content.clone(),
            }
        })
        .collect())
}

/// The log's size.
pub fn log_size(mem: &Mem) -> Result<u64, MemError> {
    Ok(mem.size()?)
}

/// One entry of the log as [`log_chunk`] reads it.
#[derive(Clone, Debug)]
pub struct LogRow {
    /// Its index.
    pub index: u64,
    /// Its kind.
    pub kind: EntryKind,
    /// Its writer.
    pub writer: String,
    /// Its metadata.
    pub metadata: Vec<(String, String)>,
    /// Its content (None once erased).
    pub content: Option<Vec<u8>>,
}

impl LogRow {
    /// The value of a metadata key.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A gate decision, as the servers act on it.
#[derive(Clone, Debug)]
pub struct Judged {
    /// `allow`, `deny`, `repair` or `confirm`.
    pub decision: String,
    /// Whether the call goes out (enforce mode: allow and repair; record mode: always).
    pub dispatched: bool,
    /// The arguments to send (the repaired ones for a repair in enforce mode).
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// The summary sentence and one line per parameter (with its lineage path).
    pub text: String,
    /// The decision as JSON (as it is logged).
    pub json: serde_json::Value,
    /// The signed `gate_decision` record.
    pub record: EntryId,
}

/// What the agent was shown in its session: the context of its next call.
#[derive(Clone, Debug, Default)]
pub struct SeenContext {
    /// The entries shown, in order.
    pub ids: Vec<EntryId>,
    /// The document each was read from, where the tool call named one.
    pub sources: std::collections::BTreeMap<EntryId, String>,
}

/// Gates `call` against `context` under `policy` and logs the decision, signed by `recorder`
/// (paper §M6). With `repair`, an unjustified parameter may be replaced by a value of trusted
/// provenance. The context's `sources` name the documents its entries were read from (a call
/// whose failing values all come from a document the user's request names may be a confirm).
/// An error means the call cannot be judged: it must not be dispatched.
pub fn gate(
    mem: &Mem,
    policy: &Policy,
    call: ToolCall,
    context: SeenContext,
    recorder: &str,
    scope: &Scope,
    repair: bool,
) -> Result<Judged, MemError> {
    let mut req = GateRequest::new(call, context.ids, &principal(recorder)?);
    req.repair = repair;
    req.scope = scope.clone();
    req.sources = context.sources;
    let out = mem.gate(policy, &req)?;
    let d = &out.decision;
    let mut text = format!("decision: {}\n{}", d.decision.as_str(), d.summary());
    for r in &d.reasons {
        text.push_str("\n  ");
        text.push_str(&r.message());
    }
    let json = serde_json::to_value(d)
        .map_err(|e| MemError(format!("the gate decision does not serialise: {e}")))?;
    Ok(Judged {
        decision: d.decision.as_str().to_string(),
        dispatched: d.dispatched,
        arguments: d.arguments.clone().into_owned(),
        text,
        json,
        record: out.record.id,
    })
}

/// The store's operator (the principal `init` registered).
pub fn operator(mem: &Mem) -> Result<String, MemError> {
    Ok(mem.operator()?.to_string())
}
