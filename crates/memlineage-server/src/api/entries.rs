//! Writing and reading entries: `POST /v1/entries` (one), `POST /v1/entries/batch` (many, all
//! or nothing), `GET /v1/entries/{id}` (the entry, verified, with its inclusion proof) and
//! `GET /v1/log` (log order).
//!
//! The writer is always the token's principal; a request cannot name another.

use super::wire::{EntryOut, InclusionOut, WeightIn, WrittenOut, parse_id};
use crate::auth::Caller;
use crate::entry_scopes::EntryScopes;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use memlineage::{AttributionName, WriteRequest};
use memlineage_core::entry::{EntryKind, Parent};
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::{EntryId, Hash256};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::{IntoParams, ToSchema};

/// One entry to write.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteBody {
    /// The content as text. Give exactly one of `content` and `content_base64`.
    pub content: Option<String>,
    /// The content as base64 (any bytes).
    pub content_base64: Option<String>,
    /// `user_input`, `tool_output`, `observation` or `derived`. Default: `derived` with
    /// parents, else `observation` (`tool_output` for an external principal).
    pub kind: Option<String>,
    /// The scope (default: the token's first scope); must lie within the token's scopes.
    pub scope: Option<String>,
    /// Parents, already in the log and within the token's scopes.
    #[serde(default)]
    pub parents: Vec<ParentIn>,
    /// The attribution algorithm that weighed the parents. Default: `coarse` when no weight
    /// is given (every edge weighs 1), `explicit` when one is.
    pub attribution: Option<String>,
    /// Where the content came from (a URL…); its SHA-256 is signed as h_src.
    pub source: Option<String>,
    /// h_ctx: SHA-256 (64 hex) of the exact context the writer saw (a search's `context_hash`).
    pub context_hash: Option<String>,
    /// τ for this entry: only stricter (lower) than the store's.
    pub tau: Option<WeightIn>,
    /// `strict` or `permissive`: only as strict as the store's.
    pub fallback: Option<String>,
    /// Free metadata (keys 1–64 bytes, values at most 4096 bytes), signed.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// A parent edge of a write.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ParentIn {
    /// The parent's id (64 hex).
    pub id: String,
    /// Its attribution weight in [0, 1] (default 1).
    pub weight: Option<WeightIn>,
}

/// Many entries, written in one transaction: all or nothing.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchBody {
    /// The entries, in log order.
    pub entries: Vec<WriteBody>,
}

/// The result of a batch write.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct BatchOut {
    /// One result per entry, in order.
    pub entries: Vec<WrittenOut>,
}

/// A verified entry.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct GetOut {
    /// The entry.
    #[serde(flatten)]
    pub entry: EntryOut,
    /// Its inclusion proof in the current tree (null when it could not be built).
    pub inclusion_proof: Option<InclusionOut>,
    /// True when signer, signature, content hash and inclusion proof all check out.
    pub verified: bool,
    /// What failed, when `verified` is false: never trust such an entry.
    pub problems: Vec<String>,
}

/// `GET /v1/log` parameters.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    /// First leaf index (default 0).
    pub from: Option<u64>,
    /// How many leaves to look at (default 100, at most 1000).
    pub limit: Option<u64>,
}

/// One line of the log.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct LogItem {
    /// Leaf index.
    pub index: u64,
    /// Id.
    pub id: String,
    /// Kind.
    pub kind: String,
    /// Writer.
    pub writer: String,
    /// Signed label.
    pub label: String,
    /// Effective label.
    pub effective_label: String,
    /// Scope.
    pub scope: String,
    /// Creation time (ms).
    pub created_at_ms: u64,
    /// Forgotten by a tombstone.
    pub forgotten: bool,
    /// Content erased.
    pub erased: bool,
}

/// A page of the log.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct LogOut {
    /// Entries in the log.
    pub size: u64,
    /// The first index looked at.
    pub from: u64,
    /// The entries of the page this token may read (others are left out).
    pub entries: Vec<LogItem>,
}

/// Most leaves one log page looks at.
const MAX_LOG_PAGE: u64 = 1000;

/// Write one signed entry as the token's principal.
#[utoipa::path(post, path = "/v1/entries", tag = "entries", request_body = WriteBody,
    security(("bearer" = [])),
    responses((status = 201, body = WrittenOut), (status = 400, body = crate::error::ErrorBody),
        (status = 401, body = crate::error::ErrorBody), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 413, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn write(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<WriteBody>,
) -> ApiResult<(StatusCode, axum::Json<WrittenOut>)> {
    let req = request(&state, &caller, body, "").await?;
    let written = state.write(vec![req]).await?;
    let w = written
        .first()
        .ok_or_else(|| ApiError::internal("the write returned nothing"))?;
    Ok((StatusCode::CREATED, axum::Json(WrittenOut::from(w))))
}

/// Write many entries in one transaction (all or nothing).
#[utoipa::path(post, path = "/v1/entries/batch", tag = "entries", request_body = BatchBody,
    security(("bearer" = [])),
    responses((status = 201, body = BatchOut), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 413, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody)))]
pub async fn write_batch(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<BatchBody>,
) -> ApiResult<(StatusCode, axum::Json<BatchOut>)> {
    if body.entries.is_empty() {
        return Err(ApiError::invalid("`entries` is empty: nothing to write"));
    }
    if body.entries.len() > state.limits.max_batch {
        return Err(ApiError::limit(format!(
            "{} entries in one batch: this service takes at most {}; nothing was written",
            body.entries.len(),
            state.limits.max_batch
        )));
    }
    let mut reqs = Vec::with_capacity(body.entries.len());
    for (i, e) in body.entries.into_iter().enumerate() {
        reqs.push(request(&state, &caller, e, &format!("entries[{i}].")).await?);
    }
    let written = state.write(reqs).await?;
    Ok((
        StatusCode::CREATED,
        axum::Json(BatchOut {
            entries: written.iter().map(WrittenOut::from).collect(),
        }),
    ))
}

/// Builds a write request from a body: every field checked, the writer the token's principal,
/// the scope within the token's, parents in the log and within the token's scopes.
async fn request(
    state: &AppState,
    caller: &Caller,
    b: WriteBody,
    at: &str,
) -> ApiResult<WriteRequest> {
    let field = |f: &str| format!("{at}{f}");
    let content = match (b.content, b.content_base64) {
        (Some(t), None) => t.into_bytes(),
        (None, Some(b64)) => STANDARD.decode(b64.as_bytes()).map_err(|e| {
            ApiError::invalid(format!("`{}` is not base64: {e}", field("content_base64")))
        })?,
        _ => {
            return Err(ApiError::invalid(format!(
                "give exactly one of `{}` and `{}`",
                field("content"),
                field("content_base64")
            )));
        }
    };
    if content.is_empty() {
        return Err(ApiError::invalid(format!(
            "`{}` is empty: an entry holds at least one byte; nothing was written",
            field("content")
        )));
    }
    let scope = caller.scope_for_write(b.scope.as_deref())?;
    let mut parents = Vec::with_capacity(b.parents.len());
    let mut weighed = false;
    for (i, p) in b.parents.iter().enumerate() {
        let id = parse_id(&p.id, &field(&format!("parents[{i}].id")))?;
        let weight = match &p.weight {
            Some(w) => {
                weighed = true;
                w.parse(&field(&format!("parents[{i}].weight")))?
            }
            None => Weight::ONE,
        };
        parents.push(Parent { id, weight });
    }
    if parents.len() > state.limits.max_ids {
        return Err(ApiError::limit(format!(
            "{} parents: this service takes at most {}",
            parents.len(),
            state.limits.max_ids
        )));
    }
    check_readable(state, caller, parents.iter().map(|p| p.id).collect()).await?;
    let class = state.class_of(caller.principal()).await?;
    let kind = match &b.kind {
        Some(k) => match k.parse::<EntryKind>() {
            Ok(k) if !k.is_control() && k != EntryKind::GateDecision => k,
            _ => {
                return Err(ApiError::invalid(format!(
                    "`{}`: `{}` is not a kind a client writes (user_input, tool_output, observation or derived)",
                    field("kind"),
                    k.chars().take(40).collect::<String>()
                )));
            }
        },
        None if !parents.is_empty() => EntryKind::Derived,
        None if class == TrustClass::External => EntryKind::ToolOutput,
        None => EntryKind::Observation,
    };
    let mut req = WriteRequest::new(caller.principal(), kind, content).with_scope(scope);
    if !parents.is_empty() {
        let attribution = match &b.attribution {
            Some(a) => a
                .parse::<AttributionName>()
                .map_err(|e| ApiError::invalid(format!("`{}`: {e}", field("attribution"))))?,
            None if weighed => AttributionName::EXPLICIT,
            None => AttributionName::COARSE,
        };
        req = req.with_parents(parents, attribution);
    }
    if let Some(src) = &b.source {
        req = req.with_source(Hash256::of(src.as_bytes()));
    }
    if let Some(h) = &b.context_hash {
        req = req.with_context(parse_hash(h, &field("context_hash"))?);
    }
    let tau = b.tau.as_ref().map(|t| t.parse(&field("tau"))).transpose()?;
    let fallback = b
        .fallback
        .as_deref()
        .map(|f| {
            f.parse::<Fallback>()
                .map_err(|e| ApiError::invalid(format!("`{}`: {e}", field("fallback"))))
        })
        .transpose()?;
    req = req.with_label_rule(tau, fallback);
    for (k, v) in &b.metadata {
        if k.is_empty() || k.len() > 64 || v.len() > 4096 {
            return Err(ApiError::invalid(format!(
                "`{}`: keys are 1 to 64 bytes and values at most 4096 bytes",
                field("metadata")
            )));
        }
        req = req.with_meta(k, v);
    }
    Ok(req)
}

/// A SHA-256 in hex.
pub fn parse_hash(s: &str, field: &str) -> ApiResult<Hash256> {
    let t = s.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::invalid(format!(
            "`{field}`: expected the 64 hexadecimal characters of a SHA-256"
        )));
    }
    t.to_ascii_lowercase()
        .parse::<Hash256>()
        .map_err(|e| ApiError::invalid(format!("`{field}`: {e}")))
}

/// Refuses (as "not found") any id that is not in the log or not within the caller's scopes.
pub async fn check_readable(state: &AppState, caller: &Caller, ids: Vec<EntryId>) -> ApiResult<()> {
    if readable_remembered(state, caller, &ids)? {
        return Ok(());
    }
    let (caller, scopes) = (caller.clone(), state.clone());
    state
        .read(move |mem| readable_in(mem, &scopes.entry_scopes, &caller, &ids))
        .await
}

/// The check of [`check_readable`] from the scopes the service remembers, without the store:
/// `Ok(true)` when every id is remembered and readable, an error for the first id (in order)
/// that is remembered and not readable, `Ok(false)` once an id is not remembered (the rest is
/// then checked by [`readable_in`], in the same order, so the same id is named either way).
pub fn readable_remembered(state: &AppState, caller: &Caller, ids: &[EntryId]) -> ApiResult<bool> {
    for id in ids {
        match state.entry_scopes.get(id) {
            Some(scope) if caller.may_read(&scope) => {}
            Some(_) => return Err(caller.hidden(id)),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// [`check_readable`] on the handle, for a caller already on a library thread (the gate
/// checks its context in the same call that decides, one hop instead of two). Entries are
/// read only when their scope is not remembered.
pub fn readable_in(
    mem: &crate::state::Mem,
    scopes: &EntryScopes,
    caller: &Caller,
    ids: &[EntryId],
) -> ApiResult<()> {
    for id in ids {
        let scope = match scopes.get(id) {
            Some(scope) => scope,
            None => match mem.get(id) {
                Ok(v) => {
                    let scope = &v.entry.body().scope;
                    scopes.remember(*id, scope);
                    scope.clone()
                }
                Err(memlineage::Error::NotFound(_)) => return Err(caller.hidden(id)),
                Err(e) => return Err(e.into()),
            },
        };
        if !caller.may_read(&scope) {
            return Err(caller.hidden(id));
        }
    }
    Ok(())
}

/// Read one entry, verified (signer, signature, content hash, inclusion proof).
#[utoipa::path(get, path = "/v1/entries/{id}", tag = "entries",
    params(("id" = String, Path, description = "entry id: 64 hex, or a unique prefix of at least 8 within the token's scopes")),
    security(("bearer" = [])),
    responses((status = 200, body = GetOut), (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)))]
pub async fn get(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<axum::Json<GetOut>> {
    let id = super::path_id::resolve(&state, &caller, &id).await?;
    let out = state
        .read(move |mem| {
            let view = match mem.get(&id) {
                Ok(v) => v,
                Err(memlineage::Error::NotFound(_)) => return Err(caller.hidden(&id)),
                Err(e) => return Err(e.into()),
            };
            if !caller.may_read(&view.entry.body().scope) {
                return Err(caller.hidden(&id));
            }
            let mut problems = Vec::new();
            let body = view.entry.body();
            let signer = mem.registry().map_err(|e| e.to_string()).and_then(|r| {
                let (_, key) = r
                    .signer_at(&body.writer, &body.key_id, view.index)
                    .map_err(|e| e.to_string())?;
                view.entry.verify_signature(key).map_err(|e| e.to_string())
            });
            if let Err(e) = signer {
                problems.push(format!("signature: {e}"));
            }
            if let Some(c) = &view.content
                && Hash256::of(c) != body.content_hash
            {
                problems.push("content does not match the signed content hash".to_string());
            }
            let proof = match mem.prove_inclusion(&id, None) {
                Ok(p) => Some(InclusionOut::from(&p)),
                Err(e) => {
                    problems.push(format!("inclusion proof: {e}"));
                    None
                }
            };
            Ok(GetOut {
                entry: EntryOut::from(&view),
                inclusion_proof: proof,
                verified: problems.is_empty(),
                problems,
            })
        })
        .await?;
    Ok(axum::Json(out))
}

/// Entries in log order (a token without the operator role sees only its scopes).
#[utoipa::path(get, path = "/v1/log", tag = "entries", params(LogQuery),
    security(("bearer" = [])),
    responses((status = 200, body = LogOut), (status = 400, body = crate::error::ErrorBody)))]
pub async fn log(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(q): ApiQuery<LogQuery>,
) -> ApiResult<axum::Json<LogOut>> {
    let from = q.from.unwrap_or(0);
    let limit = q.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_LOG_PAGE {
        return Err(ApiError::invalid(format!(
            "`limit` must be between 1 and {MAX_LOG_PAGE}"
        )));
    }
    let out = state
        .read(move |mem| {
            let size = mem.size()?;
            let views = mem.log(from, limit)?;
            let entries = views
                .iter()
                .filter(|v| caller.may_read(&v.entry.body().scope))
                .map(|v| {
                    let b = v.entry.body();
                    LogItem {
                        index: v.index,
                        id: v.entry.id().to_hex(),
                        kind: b.kind.as_str().to_string(),
                        writer: b.writer.clone(),
                        label: v.label.as_str().to_string(),
                        effective_label: v.effective_label.as_str().to_string(),
                        scope: b.scope.as_str().to_string(),
                        created_at_ms: b.created_at_ms,
                        forgotten: v.forgotten_by.is_some(),
                        erased: v.content.is_none(),
                    }
                })
                .collect();
            Ok(LogOut {
                size,
                from,
                entries,
            })
        })
        .await?;
    Ok(axum::Json(out))
}
