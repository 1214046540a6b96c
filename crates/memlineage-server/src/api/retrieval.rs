//! Verifier-aware retrieval (paper §M5): search by text, or recall given ids; every entry is
//! verified (signer, signature, content hash, inclusion in the signed checkpoint, label)
//! before it is returned, labelled, and rendered as prompt blocks; failures are listed in
//! `dropped`, never rendered.

use super::wire::parse_ids;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use axum::extract::State;
use memlineage::memory::Retrieval;
use memlineage_core::entry::Scope;
use memlineage_core::render::prompt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/search`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// Free text; every word is a term (BM25 ranking). Never parsed as query syntax.
    pub query: String,
    /// Search this scope and below (default: the token's first scope); within the token's
    /// scopes.
    pub scope: Option<String>,
    /// At most this many entries (default 8, at most the service's `max_ids`).
    pub limit: Option<usize>,
}

/// `POST /v1/recall`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallBody {
    /// The entries to verify and render, in prompt order.
    pub ids: Vec<String>,
}

/// An entry dropped by retrieval.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct DroppedOut {
    /// Its id.
    pub id: String,
    /// Its leaf index.
    pub index: u64,
    /// What failed.
    pub reason: String,
}

/// A verified retrieval.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct RetrievalOut {
    /// The query (search only).
    pub query: Option<String>,
    /// The scope searched (search only).
    pub scope: Option<String>,
    /// The verified entries, best first (search) or in the order asked (recall): id, label,
    /// writer, kind, created_at_ms, strong_parents, content.
    #[schema(value_type = Vec<Object>)]
    pub entries: serde_json::Value,
    /// Entries that failed verification (never rendered).
    pub dropped: Vec<DroppedOut>,
    /// The prompt rendering: structural `<memory …>` blocks with escaped content.
    pub rendered: String,
    /// h_ctx: SHA-256 of exactly `rendered`; give it as `context_hash` of entries derived from
    /// this context.
    pub context_hash: String,
    /// The size of the signed checkpoint the proofs were checked against.
    pub checkpoint_size: Option<u64>,
}

fn out(r: &Retrieval, query: Option<String>, scope: Option<String>) -> RetrievalOut {
    RetrievalOut {
        query,
        scope,
        entries: prompt::render_json(&r.rendered_entries()),
        dropped: r
            .dropped
            .iter()
            .map(|d| DroppedOut {
                id: d.id.to_hex(),
                index: d.index,
                reason: d.reason.clone(),
            })
            .collect(),
        rendered: r.rendered.clone(),
        context_hash: r.context_hash.to_hex(),
        checkpoint_size: r.checkpoint.as_ref().map(|c| c.size),
    }
}

/// Search: full text within a scope, verified, labelled and rendered.
#[utoipa::path(post, path = "/v1/search", tag = "retrieval", request_body = SearchBody,
    security(("bearer" = [])),
    responses((status = 200, body = RetrievalOut), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 413, body = crate::error::ErrorBody)))]
pub async fn search(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<SearchBody>,
) -> ApiResult<axum::Json<RetrievalOut>> {
    if body.query.len() > state.limits.max_query_bytes {
        return Err(ApiError::limit(format!(
            "the query is {} bytes: this service takes at most {}",
            body.query.len(),
            state.limits.max_query_bytes
        )));
    }
    let limit = body.limit.unwrap_or(8);
    if limit == 0 || limit > state.limits.max_ids {
        return Err(ApiError::invalid(format!(
            "`limit` must be between 1 and {}",
            state.limits.max_ids
        )));
    }
    let scope = read_scope(&caller, body.scope.as_deref())?;
    let r = state
        .read(move |mem| {
            let r = mem.search(&body.query, &scope, limit)?;
            Ok(out(&r, Some(body.query), Some(scope.as_str().to_string())))
        })
        .await?;
    Ok(axum::Json(r))
}

/// The scope a read names (or the default), within the token's scopes unless operator.
pub fn read_scope(caller: &Caller, requested: Option<&str>) -> ApiResult<Scope> {
    let scope = match requested {
        Some(s) => Scope::new(s).map_err(|e| ApiError::invalid(e.to_string()))?,
        None => caller.default_scope()?,
    };
    if !caller.may_read(&scope) {
        return Err(ApiError::forbidden(format!(
            "scope `{scope}` is outside this token's scopes ({})",
            caller.scopes_text()
        )));
    }
    Ok(scope)
}

/// Recall: verify and render the given entries (an active context), in order.
#[utoipa::path(post, path = "/v1/recall", tag = "retrieval", request_body = RecallBody,
    security(("bearer" = [])),
    responses((status = 200, body = RetrievalOut), (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn recall(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<RecallBody>,
) -> ApiResult<axum::Json<RetrievalOut>> {
    if body.ids.is_empty() || body.ids.len() > state.limits.max_ids {
        return Err(ApiError::invalid(format!(
            "`ids` must name 1 to {} entries",
            state.limits.max_ids
        )));
    }
    let ids = parse_ids(&body.ids, "ids")?;
    super::entries::check_readable(&state, &caller, ids.clone()).await?;
    let r = state
        .read(move |mem| Ok(out(&mem.recall(&ids)?, None, None)))
        .await?;
    Ok(axum::Json(r))
}
