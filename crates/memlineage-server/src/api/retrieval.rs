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
use memlineage::search::SearchMode;
use memlineage_core::entry::Scope;
use memlineage_core::render::prompt;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How a search ranks (`memlineage::search::SearchMode`). Every hit is verified the same way
/// whatever the mode: an index can only choose and order candidates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchModeIn {
    /// BM25 over the words of the query.
    #[default]
    Lexical,
    /// Cosine similarity of embeddings (all-MiniLM-L6-v2): finds paraphrases. Needs a service
    /// started with an embedding model.
    Semantic,
    /// Both, fused by reciprocal rank fusion. Needs an embedding model too.
    Hybrid,
}

impl From<SearchModeIn> for SearchMode {
    fn from(m: SearchModeIn) -> SearchMode {
        match m {
            SearchModeIn::Lexical => SearchMode::Lexical,
            SearchModeIn::Semantic => SearchMode::Semantic,
            SearchModeIn::Hybrid => SearchMode::Hybrid,
        }
    }
}

/// `POST /v1/search`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    /// Free text: the words of a lexical search (BM25; never parsed as query syntax), the
    /// meaning of a semantic one.
    pub query: String,
    /// Search this scope and below (default: the token's first scope); within the token's
    /// scopes.
    pub scope: Option<String>,
    /// At most this many entries (default 8, at most the service's `max_ids`).
    pub limit: Option<usize>,
    /// `lexical` (default), `semantic` or `hybrid`.
    pub mode: Option<SearchModeIn>,
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
    /// The ranking used (search only).
    pub mode: Option<SearchModeIn>,
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
        mode: None,
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

/// Search within a scope — by words (lexical), by meaning (semantic) or both (hybrid) —
/// verified, labelled and rendered.
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
    let mode = body.mode.unwrap_or_default();
    let r = state
        .read(move |mem| {
            if mode != SearchModeIn::Lexical && mem.embedding_model().is_none() {
                return Err(no_model(mode));
            }
            let r = mem.search_with(&body.query, &scope, limit, mode.into())?;
            let mut o = out(&r, Some(body.query), Some(scope.as_str().to_string()));
            o.mode = Some(mode);
            Ok(o)
        })
        .await?;
    metrics::counter!("memlineage_searches_total", "mode" => SearchMode::from(mode).as_str())
        .increment(1);
    Ok(axum::Json(r))
}

/// The answer to a semantic or hybrid search on a service without an embedding model: a
/// client error (asking again does not help), naming how the operator turns it on.
fn no_model(mode: SearchModeIn) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "semantic_search_off",
        format!(
            "`mode: {}` needs an embedding model, and this service was started without one: \
             search with `mode: lexical`, or ask the operator to start it with \
             `memlineage serve --embedding-model default` (docs/service.md, \"Semantic search\")",
            SearchMode::from(mode).as_str()
        ),
    )
}

/// `GET /v1/search/status`: what the service's search can do, and how far the vector index
/// has got.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct SearchStatusOut {
    /// The modes this service answers.
    pub modes: Vec<SearchModeIn>,
    /// Entries in the log.
    pub log_size: u64,
    /// The vector index, when an embedding model is attached.
    pub vector_index: Option<VectorIndexOut>,
}

/// The vector index of semantic search.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct VectorIndexOut {
    /// The embedding model's id (name and weights digest).
    pub model: String,
    /// Entries in the index.
    pub indexed: u64,
    /// Entries of the log the indexer has considered.
    pub considered: u64,
    /// Entries it has not reached yet (found by lexical and hybrid search meanwhile).
    pub pending: u64,
    /// Vectors read from the store (binding checked) and computed by the model, since start.
    pub loaded: u64,
    /// Vectors computed by the model since start.
    pub embedded: u64,
    /// Stored vectors refused (their binding did not check; embedded again).
    pub rejected: usize,
    /// Whether the saved index was loaded at start, or why it was rebuilt.
    pub snapshot: Option<String>,
    /// The indexer's last failure, if its last step failed.
    pub last_error: Option<String>,
}

/// What search can do here, and how far the vector index has got.
#[utoipa::path(get, path = "/v1/search/status", tag = "retrieval", security(("bearer" = [])),
    responses((status = 200, body = SearchStatusOut), (status = 401, body = crate::error::ErrorBody)))]
pub async fn search_status(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<axum::Json<SearchStatusOut>> {
    let out = state
        .read(|mem| {
            let log_size = mem.size()?;
            let vector_index = mem.vector_index_status().map(|s| VectorIndexOut {
                pending: log_size.saturating_sub(s.considered),
                model: s.model,
                indexed: s.indexed,
                considered: s.considered,
                loaded: s.loaded,
                embedded: s.embedded,
                rejected: s.rejected.len(),
                snapshot: s.snapshot,
                last_error: s.last_error,
            });
            let modes = if vector_index.is_some() {
                vec![
                    SearchModeIn::Lexical,
                    SearchModeIn::Semantic,
                    SearchModeIn::Hybrid,
                ]
            } else {
                vec![SearchModeIn::Lexical]
            };
            Ok(SearchStatusOut {
                modes,
                log_size,
                vector_index,
            })
        })
        .await?;
    Ok(axum::Json(out))
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
