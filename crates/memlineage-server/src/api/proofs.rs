//! Proofs and checkpoints: RFC 9162 inclusion and consistency proofs (verified before they
//! are returned) and C2SP signed checkpoints of the tree.

use super::wire::InclusionOut;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use axum::extract::State;
use memlineage_core::checkpoint::{Checkpoint, parse_note};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// `GET /v1/entries/{id}/proof` parameters.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct InclusionQuery {
    /// The tree size to prove inclusion in (default: the current size).
    pub size: Option<u64>,
}

/// `GET /v1/consistency` parameters.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ConsistencyQuery {
    /// The older tree size.
    pub old: u64,
    /// The newer tree size (at most the log's size).
    pub new: u64,
}

/// An RFC 9162 consistency proof.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ConsistencyOut {
    /// Older size.
    pub old_size: u64,
    /// Newer size.
    pub new_size: u64,
    /// Root of the older tree (hex).
    pub old_root: String,
    /// Root of the newer tree (hex).
    pub new_root: String,
    /// The proof (hex).
    pub path: Vec<String>,
}

/// A signed checkpoint.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct CheckpointOut {
    /// The log's origin line.
    pub origin: String,
    /// Tree size.
    pub size: u64,
    /// Root hash (hex).
    pub root: String,
    /// The signed note (C2SP tlog-checkpoint in a signed note).
    pub note: String,
}

/// An inclusion proof of an entry (within the token's scopes).
#[utoipa::path(get, path = "/v1/entries/{id}/proof", tag = "proofs", params(("id" = String, Path, description = "entry id: 64 hex, or a unique prefix of at least 8 within the token's scopes"), InclusionQuery),
    security(("bearer" = [])),
    responses((status = 200, body = InclusionOut), (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)))]
pub async fn inclusion(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<InclusionQuery>,
) -> ApiResult<axum::Json<InclusionOut>> {
    let id = super::path_id::resolve(&state, &caller, &id).await?;
    let out = state
        .read(move |mem| {
            match mem.get(&id) {
                Ok(v) if caller.may_read(&v.entry.body().scope) => {}
                Ok(_) | Err(memlineage::Error::NotFound(_)) => return Err(caller.hidden(&id)),
                Err(e) => return Err(e.into()),
            }
            let size = mem.size()?;
            if let Some(s) = q.size
                && s > size
            {
                return Err(ApiError::invalid(format!(
                    "`size` {s} is larger than the log ({size} entries)"
                )));
            }
            Ok(InclusionOut::from(&mem.prove_inclusion(&id, q.size)?))
        })
        .await?;
    Ok(axum::Json(out))
}

/// A consistency proof between two tree sizes.
#[utoipa::path(get, path = "/v1/consistency", tag = "proofs", params(ConsistencyQuery),
    security(("bearer" = [])),
    responses((status = 200, body = ConsistencyOut), (status = 400, body = crate::error::ErrorBody)))]
pub async fn consistency(
    State(state): State<AppState>,
    _caller: Caller,
    ApiQuery(q): ApiQuery<ConsistencyQuery>,
) -> ApiResult<axum::Json<ConsistencyOut>> {
    if q.old > q.new {
        return Err(ApiError::invalid(format!(
            "`old` ({}) must not be larger than `new` ({})",
            q.old, q.new
        )));
    }
    let out = state
        .read(move |mem| {
            let (old_root, new_root, path) = mem.prove_consistency(q.old, q.new)?;
            Ok(ConsistencyOut {
                old_size: q.old,
                new_size: q.new,
                old_root: old_root.to_hex(),
                new_root: new_root.to_hex(),
                path: path.iter().map(|h| h.to_hex()).collect(),
            })
        })
        .await?;
    Ok(axum::Json(out))
}

fn checkpoint_out(note: String) -> ApiResult<CheckpointOut> {
    let cp = parse_note(&note)
        .and_then(|n| Checkpoint::parse_body(&n.body))
        .map_err(|e| ApiError::internal(format!("the signed checkpoint does not parse: {e}")))?;
    Ok(CheckpointOut {
        origin: cp.origin,
        size: cp.size,
        root: cp.root.to_hex(),
        note,
    })
}

/// The latest signed checkpoint, verified against the operator's keys and the stored tree.
#[utoipa::path(get, path = "/v1/checkpoint", tag = "proofs",
    security(("bearer" = [])),
    responses((status = 200, body = CheckpointOut), (status = 404, body = crate::error::ErrorBody)))]
pub async fn latest_checkpoint(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<axum::Json<CheckpointOut>> {
    let out = state
        .read(|mem| {
            // Verified (signature and tree) before it is returned.
            let (_, note) = mem.latest_checkpoint_verified()?.ok_or_else(|| {
                ApiError::not_found(
                    "no checkpoint was signed yet: POST /v1/checkpoint with an operator token",
                )
            })?;
            checkpoint_out(note)
        })
        .await?;
    Ok(axum::Json(out))
}

/// Sign a checkpoint of the current tree with the operator's key (operator role).
#[utoipa::path(post, path = "/v1/checkpoint", tag = "proofs",
    security(("bearer" = [])),
    responses((status = 200, body = CheckpointOut), (status = 403, body = crate::error::ErrorBody)))]
pub async fn sign_checkpoint(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<axum::Json<CheckpointOut>> {
    caller.require_operator("signing a checkpoint")?;
    let out = state
        .write_direct(|mem| checkpoint_out(mem.checkpoint()?))
        .await?;
    Ok(axum::Json(out))
}
