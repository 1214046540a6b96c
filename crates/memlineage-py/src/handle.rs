//! The native handle: one `memlineage::Memory` shared by every Python thread, each call run
//! with the GIL released and no panic let through (`guard.rs`).
//!
//! The handle is `Send + Sync`, so calls from many threads run side by side; the store orders
//! writes (one writer transaction at a time, group commit). `close()` takes the handle away
//! from new calls; calls in flight hold their own reference and finish normally, and the store
//! is closed when the last of them returns — so closing never cuts a transaction short.

use crate::convert;
use crate::errors::{Fail, with_key_files};
use crate::guard::{detached, distinct, guard};
use crate::location;
use crate::open::open_or_create;
use crate::parse;
use crate::policy::NativePolicy;
use crate::principals;
use crate::semantic;
use memlineage::search::SearchMode;
use memlineage::{
    AttributionName, Direction, GateRequest, Memory as Mem, StoreLocation, WriteRequest,
};
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::gate::ToolCall;
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::records::DistrustTarget;
use memlineage_core::render::lineage as fmt;
use memlineage_core::rule::LabelRule;
use memlineage_core::{EntryId, Hash256};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// An open store.
#[pyclass(frozen, module = "memlineage._native", name = "Handle")]
pub struct Handle {
    mem: RwLock<Option<Arc<Mem>>>,
    location: StoreLocation,
    created: bool,
    /// This handle's label rule for writes (stricter than the store's, or the store's).
    tau: Option<Weight>,
    fallback: Option<Fallback>,
    /// Where the vector index is saved, when a model is attached to a file store.
    vectors: Option<PathBuf>,
}

impl Handle {
    /// The handle for one call, or `ClosedError`.
    pub(crate) fn mem(&self) -> Result<Arc<Mem>, Fail> {
        self.mem
            .read()
            .map_err(|_| Fail::Store("the handle's lock was poisoned by a panic".into()))?
            .clone()
            .ok_or(Fail::Closed)
    }
}

/// A location as a person reads it (and `Memory.open` takes back): a file store as its path.
fn shown(loc: &StoreLocation) -> String {
    loc.sqlite_file()
        .map_or_else(|| loc.to_string(), |f| f.display().to_string())
}

/// Content given as `str` (UTF-8) or `bytes`.
fn content_bytes(content: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = content.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    if let Ok(b) = content.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(Fail::Input(format!(
        "content must be str or bytes, not {}",
        content.get_type().name()?
    ))
    .into())
}

/// A write as Python describes it: `parents` as `[(id, weight or None)]`.
pub(crate) struct WriteArgs {
    pub content: Vec<u8>,
    pub writer: String,
    pub kind: Option<String>,
    pub parents: Vec<(String, Option<String>)>,
    pub scope: String,
    pub source: Option<String>,
    pub context_hash: Option<String>,
    pub metadata: Vec<(String, String)>,
}

impl WriteArgs {
    /// The request, with the CLI's defaults: kind `derived` with parents, else `observation`
    /// (`tool_output` for an external writer); attribution `coarse` when no weight is given,
    /// `explicit` when some is (parents without a weight weigh 1).
    pub(crate) fn request(
        self,
        mem: &Mem,
        tau: Option<Weight>,
        fallback: Option<Fallback>,
    ) -> Result<WriteRequest, Fail> {
        if self.content.is_empty() {
            return Err(Fail::Input(
                "the content is empty: an entry must hold at least one byte; nothing was written"
                    .into(),
            ));
        }
        let writer = parse::name(&self.writer)?;
        let mut parents = Vec::with_capacity(self.parents.len());
        let mut weighed = false;
        for (id, w) in &self.parents {
            weighed |= w.is_some();
            parents.push(Parent {
                id: parse::id(id)?,
                weight: w.as_deref().map_or(Ok(Weight::ONE), parse::weight)?,
            });
        }
        let kind = match &self.kind {
            Some(k) => parse::content_kind(k)?,
            None if !parents.is_empty() => EntryKind::Derived,
            None => match mem.registry()?.get(writer.as_str()).map(|p| p.class) {
                Some(TrustClass::External) => EntryKind::ToolOutput,
                _ => EntryKind::Observation,
            },
        };
        let mut req = WriteRequest::new(&writer, kind, self.content)
            .with_scope(parse::scope(&self.scope)?)
            .with_label_rule(tau, fallback);
        if !parents.is_empty() {
            let how = if weighed {
                AttributionName::EXPLICIT
            } else {
                AttributionName::COARSE
            };
            req = req.with_parents(parents, how);
        }
        if let Some(src) = &self.source {
            req = req.with_source(Hash256::of(src.as_bytes()));
        }
        if let Some(h) = &self.context_hash {
            req = req.with_context(parse::context_hash(h)?);
        }
        for (k, v) in &self.metadata {
            parse::meta(k, v)?;
            req = req.with_meta(k, v);
        }
        Ok(req)
    }
}

#[pymethods]
impl Handle {
    /// Opens (or, with `create`, creates) the store at `location`; with `lexical_index`, the
    /// handle keeps its own lexical index (`Memory::with_lexical_index`); with `embedder`, the
    /// embedding model is attached (the default one, or the one in `embedding_model`, a
    /// directory) for semantic and hybrid search, its index saved beside a file store.
    #[staticmethod]
    #[pyo3(signature = (location=None, tau=None, fallback=None, create=true, lexical_index=false, embedder=false, embedding_model=None))]
    #[allow(clippy::too_many_arguments)]
    fn open(
        py: Python<'_>,
        location: Option<String>,
        tau: Option<String>,
        fallback: Option<String>,
        create: bool,
        lexical_index: bool,
        embedder: bool,
        embedding_model: Option<String>,
    ) -> PyResult<Handle> {
        guard(|| {
            let loc = location::resolve(location.as_deref())?;
            let tau = tau.as_deref().map(parse::weight).transpose()?;
            let fallback = fallback.as_deref().map(parse::fallback).transpose()?;
            let (mem, created) = detached(py, || open_or_create(&loc, create, (tau, fallback)))?;
            let store = mem.store_rule();
            let rule = LabelRule::new(tau.unwrap_or(store.tau), fallback.unwrap_or(store.fallback));
            if let Some(laxer) = rule.laxer_than(store) {
                return Err(Fail::Refused(format!(
                    "refused: the requested {laxer}; a handle's label rule may only be stricter \
                     (τ at most the store's, and strict when the store is strict), so that no \
                     writer can choose a lower label"
                ))
                .into());
            }
            let mem = if lexical_index {
                mem.with_lexical_index()
            } else {
                mem
            };
            // Absolute, so that a later `chdir` of the process does not move where it is saved.
            let vectors = embedder
                .then(|| semantic::vectors_dir(&loc))
                .flatten()
                .map(|v| std::path::absolute(&v).unwrap_or(v));
            let mem = if embedder {
                detached(py, || {
                    semantic::attach(mem, embedding_model.as_deref(), vectors.as_ref())
                })?
            } else {
                mem
            };
            Ok(Handle {
                mem: RwLock::new(Some(Arc::new(mem))),
                location: loc,
                created,
                tau,
                fallback,
                vectors,
            })
        })
    }

    /// Closes the handle: later calls raise `ClosedError`; calls in flight finish first.
    fn close(&self) -> PyResult<()> {
        guard(|| {
            if let Ok(mut m) = self.mem.write() {
                m.take();
            }
            Ok(())
        })
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.mem.read().map_or(true, |m| m.is_none())
    }

    /// The store's location (`memory:` for a store in RAM).
    #[getter]
    fn location(&self) -> String {
        shown(&self.location)
    }

    /// Whether this open created the store.
    #[getter]
    fn created(&self) -> bool {
        self.created
    }

    /// `(origin, tau_bp, fallback, operator)`: the store's settings.
    fn settings(&self, py: Python<'_>) -> PyResult<(String, u16, &'static str, String)> {
        guard(|| {
            let mem = self.mem()?;
            let operator = detached(py, || Ok(mem.operator()?))?;
            let s = mem.settings();
            Ok((
                s.origin.clone(),
                s.tau.bp(),
                s.fallback.as_str(),
                operator.to_string(),
            ))
        })
    }

    /// Number of entries in the log.
    fn size(&self, py: Python<'_>) -> PyResult<u64> {
        guard(|| {
            let mem = self.mem()?;
            detached(py, || Ok(mem.size()?))
        })
    }

    /// Writes one entry, signed by `writer`, and returns it as stored.
    #[pyo3(signature = (content, writer, kind, parents, scope, source, context_hash, metadata))]
    #[allow(clippy::too_many_arguments)]
    fn write<'py>(
        &self,
        py: Python<'py>,
        content: &Bound<'py, PyAny>,
        writer: String,
        kind: Option<String>,
        parents: Vec<(String, Option<String>)>,
        scope: String,
        source: Option<String>,
        context_hash: Option<String>,
        metadata: Vec<(String, String)>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let args = WriteArgs {
                content: content_bytes(content)?,
                writer,
                kind,
                parents,
                scope,
                source,
                context_hash,
                metadata,
            };
            let mem = self.mem()?;
            let (tau, fallback) = (self.tau, self.fallback);
            let keys = self.location.key_dir();
            let view = detached(py, || {
                let req = args.request(&mem, tau, fallback)?;
                let w = distinct(|| {
                    mem.write(req.clone())
                        .map_err(|e| with_key_files(e, keys.as_deref()))
                })?;
                Ok(mem.get(&w.id)?)
            })?;
            convert::entry(py, &view)
        })
    }

    /// Writes several entries in one transaction with one fsync (group commit), all or
    /// nothing; each item is the arguments of [`Handle::write`] as a tuple.
    #[allow(clippy::type_complexity)]
    fn write_many<'py>(
        &self,
        py: Python<'py>,
        items: Vec<(
            Bound<'py, PyAny>,
            String,
            Option<String>,
            Vec<(String, Option<String>)>,
            String,
            Option<String>,
            Option<String>,
            Vec<(String, String)>,
        )>,
    ) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let mut args = Vec::with_capacity(items.len());
            for (content, writer, kind, parents, scope, source, context_hash, metadata) in items {
                args.push(WriteArgs {
                    content: content_bytes(&content)?,
                    writer,
                    kind,
                    parents,
                    scope,
                    source,
                    context_hash,
                    metadata,
                });
            }
            let mem = self.mem()?;
            let (tau, fallback) = (self.tau, self.fallback);
            let keys = self.location.key_dir();
            let views = detached(py, || {
                let reqs = args
                    .into_iter()
                    .map(|a| a.request(&mem, tau, fallback))
                    .collect::<Result<Vec<_>, Fail>>()?;
                let written = distinct(|| {
                    mem.write_batch(reqs.clone())
                        .map_err(|e| with_key_files(e, keys.as_deref()))
                })?;
                written
                    .iter()
                    .map(|w| Ok(mem.get(&w.id)?))
                    .collect::<Result<Vec<_>, Fail>>()
            })?;
            let out = PyList::empty(py);
            for v in &views {
                out.append(convert::entry(py, v)?)?;
            }
            Ok(out)
        })
    }

    /// An entry by id, with the problems its verification found: `(entry, problems)`. The
    /// signer is checked against the registry replayed from the log, the signature and an
    /// inclusion proof against the current tree are verified, the content against its hash.
    fn get<'py>(&self, py: Python<'py>, id: &str) -> PyResult<(Bound<'py, PyTuple>, Vec<String>)> {
        guard(|| {
            let id = parse::id(id)?;
            let mem = self.mem()?;
            let (view, problems) = detached(py, || {
                let view = mem.get(&id)?;
                let mut problems = Vec::new();
                let body = view.entry.body();
                let registry = mem.registry()?;
                let signed = registry
                    .signer_at(&body.writer, &body.key_id, view.index)
                    .map_err(|e| e.to_string())
                    .and_then(|(_, key)| {
                        view.entry.verify_signature(key).map_err(|e| e.to_string())
                    });
                if let Err(e) = signed {
                    problems.push(format!("signature: {e}"));
                }
                if let Err(e) = mem.prove_inclusion(&id, None) {
                    problems.push(format!("inclusion proof: {e}"));
                }
                if let Some(c) = &view.content
                    && Hash256::of(c) != body.content_hash
                {
                    problems.push("content does not match the signed content hash".to_string());
                }
                Ok((view, problems))
            })?;
            Ok((convert::entry(py, &view)?, problems))
        })
    }

    /// Entries with index in `[start, start + limit)`, in log order (not verified: `get` and
    /// `verify` verify).
    fn log<'py>(&self, py: Python<'py>, start: u64, limit: u64) -> PyResult<Bound<'py, PyList>> {
        guard(|| {
            let mem = self.mem()?;
            let views = detached(py, || Ok(mem.log(start, limit)?))?;
            let out = PyList::empty(py);
            for v in &views {
                out.append(convert::entry(py, v)?)?;
            }
            Ok(out)
        })
    }

    /// Verifier-aware search within `scope` and below (`convert::retrieval`), ranked by
    /// `mode`: `lexical` (BM25), `semantic` or `hybrid` (these two need the embedding model
    /// attached at open). Every result is verified the same way whatever the mode.
    #[pyo3(signature = (query, scope, limit, mode="lexical"))]
    fn search<'py>(
        &self,
        py: Python<'py>,
        query: String,
        scope: String,
        limit: usize,
        mode: &str,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let mode = semantic::mode(mode)?;
            if limit == 0 || limit > 1000 {
                return Err(Fail::Input("limit must be between 1 and 1000".into()).into());
            }
            let scope = parse::scope(&scope)?;
            let mem = self.mem()?;
            if mode != SearchMode::Lexical && mem.embedding_model().is_none() {
                return Err(semantic::no_embedder(mode).into());
            }
            let r = detached(py, || Ok(mem.search_with(&query, &scope, limit, mode)?))?;
            convert::retrieval(py, &r)
        })
    }

    /// The attached embedding model's id (`all-MiniLM-L6-v2@…`), or `None`.
    #[getter]
    fn embedding_model(&self) -> PyResult<Option<String>> {
        guard(|| Ok(self.mem()?.embedding_model().map(str::to_string)))
    }

    /// The vector index's status (`semantic::status`), or `None` without a model.
    fn vector_index_status<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        guard(|| {
            let mem = self.mem()?;
            let read = semantic::read_status(py, &mem)?;
            semantic::status(py, read, self.vectors.as_ref())
        })
    }

    /// Saves the vector index into the directory beside the store (`<store file>.vectors/`),
    /// for the next open to load instead of rebuilding it. Returns the directory.
    fn save_vector_index(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let mem = self.mem()?;
            if mem.embedding_model().is_none() {
                return Err(Fail::Input(
                    "there is no vector index to save: this Memory was opened without the \
                     embedding model (open it with Memory.open(..., embedder=\"default\"))"
                        .into(),
                )
                .into());
            }
            let Some(dir) = self.vectors.clone() else {
                return Err(Fail::Input(format!(
                    "the store {} is not a file: its vector index lives in memory only, and \
                     there is nowhere beside it to save it",
                    shown(&self.location)
                ))
                .into());
            };
            detached(py, || Ok(mem.save_vector_index(&dir)?))?;
            Ok(dir.display().to_string())
        })
    }

    /// The given entries, verified and rendered in the order given (a prompt's context).
    fn recall<'py>(&self, py: Python<'py>, ids: Vec<String>) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let ids = parse::ids(&ids)?;
            let mem = self.mem()?;
            let r = detached(py, || Ok(mem.recall(&ids)?))?;
            convert::retrieval(py, &r)
        })
    }

    /// The lineage around `id`: `(graph as JSON, text, dot, mermaid)`.
    fn lineage<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        descendants: bool,
        depth: usize,
    ) -> PyResult<(Bound<'py, PyAny>, String, String, String)> {
        guard(|| {
            let id = parse::id(id)?;
            let mem = self.mem()?;
            let dir = if descendants {
                Direction::Descendants
            } else {
                Direction::Ancestors
            };
            let g = detached(py, || Ok(mem.lineage(&id, dir, depth)?))?;
            Ok((
                convert::json(py, &fmt::to_json(&g))?,
                fmt::to_text(&g),
                fmt::to_dot(&g),
                fmt::to_mermaid(&g),
            ))
        })
    }

    /// Forgets an entry with a tombstone signed by `writer` (default: the operator).
    #[pyo3(signature = (id, erase, reason, writer=None))]
    fn forget<'py>(
        &self,
        py: Python<'py>,
        id: &str,
        erase: bool,
        reason: String,
        writer: Option<String>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let target = parse::id(id)?;
            let writer = writer.as_deref().map(parse::name).transpose()?;
            let mem = self.mem()?;
            let keys = self.location.key_dir();
            let view = detached(py, || {
                let writer = match writer {
                    Some(w) => w,
                    None => mem.operator()?,
                };
                let w = distinct(|| {
                    mem.forget(&writer, &target, erase, &reason)
                        .map_err(|e| with_key_files(e, keys.as_deref()))
                })?;
                Ok(mem.get(&w.id)?)
            })?;
            convert::entry(py, &view)
        })
    }

    /// Distrusts an entry or every entry of a principal, with a record signed by `writer`
    /// (default: the operator). Returns the record.
    #[pyo3(signature = (id, principal, reason, writer=None))]
    fn distrust<'py>(
        &self,
        py: Python<'py>,
        id: Option<String>,
        principal: Option<String>,
        reason: String,
        writer: Option<String>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        guard(|| {
            let target = match (id, principal) {
                (Some(id), None) => DistrustTarget::Entry(parse::id(&id)?),
                (None, Some(p)) => DistrustTarget::Principal(parse::name(&p)?.to_string()),
                _ => {
                    return Err(Fail::Input(
                        "give an entry id or principal=NAME to distrust (not both)".into(),
                    )
                    .into());
                }
            };
            let writer = writer.as_deref().map(parse::name).transpose()?;
            let mem = self.mem()?;
            let keys = self.location.key_dir();
            let view = detached(py, || {
                if let DistrustTarget::Principal(p) = &target
                    && mem.registry()?.get(p).is_none()
                {
                    return Err(Fail::Refused(format!(
                        "principal `{p}` is not registered (see `memlineage principal list`)"
                    )));
                }
                let writer = match writer {
                    Some(w) => w,
                    None => mem.operator()?,
                };
                let w = distinct(|| {
                    mem.distrust(&writer, target.clone(), &reason)
                        .map_err(|e| with_key_files(e, keys.as_deref()))
                })?;
                Ok(mem.get(&w.id)?)
            })?;
            convert::entry(py, &view)
        })
    }

    /// The full audit. `progress(done, total)` is called as entries are checked (with the GIL
    /// taken for the call); an exception it raises is raised when the audit ends.
    #[pyo3(signature = (progress=None))]
    fn verify<'py>(
        &self,
        py: Python<'py>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        guard(|| {
            let mem = self.mem()?;
            let mut raised: Option<PyErr> = None;
            let report = py.detach(|| {
                let mut tick = |done: u64, total: u64| {
                    if let Some(cb) = &progress
                        && raised.is_none()
                    {
                        Python::attach(|py| {
                            if let Err(e) = cb.call1(py, (done, total)) {
                                raised = Some(e);
                            }
                        });
                    }
                };
                mem.verify(&mut tick)
            });
            if let Some(e) = raised {
                return Err(e);
            }
            let report = report.map_err(Fail::from)?;
            let d = PyDict::new(py);
            d.set_item("ok", report.ok())?;
            d.set_item("location", shown(&self.location))?;
            d.set_item("entries", report.entries)?;
            d.set_item("signatures", report.signatures)?;
            d.set_item("principals", report.principals)?;
            d.set_item("root", &report.root)?;
            d.set_item("checkpoint_size", report.checkpoint_size)?;
            d.set_item("problem_count", report.problem_count)?;
            let problems = PyList::empty(py);
            for p in &report.problems {
                problems.append((p.index, p.id.as_deref(), p.reason.as_str()))?;
            }
            d.set_item("problems", problems)?;
            Ok(d)
        })
    }

    /// Signs and stores a checkpoint of the current tree; returns the signed note.
    fn checkpoint(&self, py: Python<'_>) -> PyResult<String> {
        guard(|| {
            let mem = self.mem()?;
            detached(py, || Ok(mem.checkpoint()?))
        })
    }

    /// Every principal as replayed from the log: `[(name, class, operator, revoked_at,
    /// revoke_reason, [(key_id, added_at, retired_at, current)], secret_key_here)]`.
    #[allow(clippy::type_complexity)]
    fn principals(
        &self,
        py: Python<'_>,
    ) -> PyResult<
        Vec<(
            String,
            &'static str,
            bool,
            Option<u64>,
            Option<String>,
            Vec<(String, u64, Option<u64>, bool)>,
            bool,
        )>,
    > {
        guard(|| {
            let mem = self.mem()?;
            let registry = detached(py, || Ok(mem.registry()?))?;
            let operator = registry.operator().map(str::to_string);
            Ok(registry
                .principals()
                .map(|p| {
                    let current = p.current_key().map(|k| k.key_id);
                    let local = parse::name(&p.name)
                        .ok()
                        .and_then(|n| mem.keys().get_with_id(&n).ok())
                        .map(|(_, id)| id);
                    (
                        p.name.clone(),
                        p.class.as_str(),
                        operator.as_deref() == Some(p.name.as_str()),
                        p.revoked_at,
                        p.revoke_reason.clone(),
                        p.keys
                            .iter()
                            .map(|k| {
                                (
                                    k.key_id.to_hex(),
                                    k.added_at,
                                    k.retired_at,
                                    Some(k.key_id) == current,
                                )
                            })
                            .collect(),
                        local.is_some() && local == current,
                    )
                })
                .collect())
        })
    }

    /// Registers a principal with a fresh key: `(key_id, key_file, record id, index)`.
    fn add_principal(
        &self,
        py: Python<'_>,
        name: &str,
        class: &str,
    ) -> PyResult<(String, Option<String>, String, u64)> {
        guard(|| {
            let name = parse::name(name)?;
            let class = parse::class(class)?;
            let mem = self.mem()?;
            let keys = self.location.key_dir();
            let r = detached(py, || principals::add(&mem, keys.as_deref(), &name, class))?;
            Ok((r.key_id, r.key_file, r.written.id.to_hex(), r.written.index))
        })
    }

    /// Gives a principal a new key: `(key_id, key_file, record id, index)`.
    fn rotate_principal(
        &self,
        py: Python<'_>,
        name: &str,
    ) -> PyResult<(String, Option<String>, String, u64)> {
        guard(|| {
            let name = parse::name(name)?;
            let mem = self.mem()?;
            let keys = self.location.key_dir();
            let r = detached(py, || principals::rotate(&mem, keys.as_deref(), &name))?;
            Ok((r.key_id, r.key_file, r.written.id.to_hex(), r.written.index))
        })
    }

    /// Revokes a principal: `(record id, index)`.
    fn revoke_principal(
        &self,
        py: Python<'_>,
        name: &str,
        reason: String,
    ) -> PyResult<(String, u64)> {
        guard(|| {
            let name = parse::name(name)?;
            let mem = self.mem()?;
            let w = detached(py, || principals::revoke(&mem, &name, &reason))?;
            Ok((w.id.to_hex(), w.index))
        })
    }

    /// Decides a tool call under `policy` against `context` and logs the decision:
    /// `(decision as JSON, record id)` (the JSON of `docs/gate.md`, "Reasons"). `sources`:
    /// `(entry id, document name)` for the entries the integration read from a document.
    #[pyo3(signature = (policy, call, context, citations, repair, repair_query, scope, recorder, sources = Vec::new()))]
    #[allow(clippy::too_many_arguments)]
    fn gate<'py>(
        &self,
        py: Python<'py>,
        policy: &NativePolicy,
        call: &str,
        context: Vec<String>,
        citations: Vec<(String, Vec<String>)>,
        repair: bool,
        repair_query: Option<String>,
        scope: String,
        recorder: String,
        sources: Vec<(String, String)>,
    ) -> PyResult<(Bound<'py, PyAny>, String)> {
        guard(|| {
            let call = ToolCall::from_openai_json(call)
                .map_err(|e| Fail::Mem(memlineage::Error::Gate(e)))?;
            let mut cites: BTreeMap<String, Vec<EntryId>> = BTreeMap::new();
            for (param, ids) in &citations {
                cites
                    .entry(param.clone())
                    .or_default()
                    .extend(parse::ids(ids)?);
            }
            let mut req = GateRequest::new(call, parse::ids(&context)?, &parse::name(&recorder)?);
            req.citations = cites;
            req.repair = repair;
            req.repair_query = repair_query;
            req.scope = parse::scope(&scope)?;
            for (id, document) in sources {
                let id = parse::ids(std::slice::from_ref(&id))?;
                req.sources
                    .extend(id.into_iter().map(|i| (i, document.clone())));
            }
            let policy = Arc::clone(&policy.policy);
            let mem = self.mem()?;
            let out = detached(py, || distinct(|| Ok(mem.gate(&policy, &req)?)))?;
            let value = serde_json::to_value(&out.decision)
                .map_err(|e| Fail::Store(format!("encoding the decision: {e}")))?;
            Ok((convert::json(py, &value)?, out.record.id.to_hex()))
        })
    }
}
