//! Control records (operator role): forget an entry with a signed tombstone (optionally erasing
//! its content), distrust an entry or a principal. Both are signed by the token's principal,
//! which must be trusted (the library refuses control records from external principals).

use super::wire::parse_id;
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use memlineage::WriteRequest;
use memlineage_core::entry::EntryKind;
use memlineage_core::records::{Distrust, DistrustTarget, Tombstone};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/entries/{id}/forget`.
#[derive(Clone, Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetBody {
    /// Also erase the content bytes (the leaf and every proof still verify). Final.
    #[serde(default)]
    pub erase: bool,
    /// Why (signed into the tombstone).
    #[serde(default)]
    pub reason: String,
}

/// `POST /v1/distrust`: give exactly one of `entry` and `principal`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DistrustBody {
    /// The entry to distrust (its descendants' effective labels rise).
    pub entry: Option<String>,
    /// The principal whose every entry is distrusted (and whose later entries are EXTERNAL).
    pub principal: Option<String>,
    /// Why (signed into the record).
    #[serde(default)]
    pub reason: String,
}

/// A control record written.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ControlOut {
    /// The record's id.
    pub id: String,
    /// Its log index.
    pub index: u64,
    /// Who signed it.
    pub writer: String,
    /// What it names: `{"entry": id}` or `{"principal": name}`.
    #[schema(value_type = Object)]
    pub target: serde_json::Value,
    /// Whether the content was erased (forget).
    pub erased: Option<bool>,
    /// The reason.
    pub reason: String,
}

/// Forget an entry: a signed tombstone; retrieval never returns it again (operator role).
#[utoipa::path(post, path = "/v1/entries/{id}/forget", tag = "control",
    params(("id" = String, Path, description = "entry id: 64 hex, or a unique prefix of at least 8 within the token's scopes")), request_body = ForgetBody,
    security(("bearer" = [])),
    responses((status = 201, body = ControlOut), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody), (status = 409, body = crate::error::ErrorBody)))]
pub async fn forget(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiJson(body): ApiJson<ForgetBody>,
) -> ApiResult<(StatusCode, axum::Json<ControlOut>)> {
    caller.require_operator("forgetting an entry")?;
    let target = super::path_id::resolve(&state, &caller, &id).await?;
    super::entries::check_readable(&state, &caller, vec![target]).await?;
    let t = Tombstone {
        target,
        erase: body.erase,
        reason: body.reason.clone(),
    };
    let req = WriteRequest::new(caller.principal(), EntryKind::Tombstone, t.to_content());
    let w = one(state.write(vec![req]).await?)?;
    Ok((
        StatusCode::CREATED,
        axum::Json(ControlOut {
            id: w.id.to_hex(),
            index: w.index,
            writer: caller.principal().to_string(),
            target: serde_json::json!({ "entry": target.to_hex() }),
            erased: Some(body.erase),
            reason: body.reason,
        }),
    ))
}

/// Distrust an entry or a principal, retroactively (operator role).
#[utoipa::path(post, path = "/v1/distrust", tag = "control", request_body = DistrustBody,
    security(("bearer" = [])),
    responses((status = 201, body = ControlOut), (status = 400, body = crate::error::ErrorBody),
        (status = 403, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody)))]
pub async fn distrust(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<DistrustBody>,
) -> ApiResult<(StatusCode, axum::Json<ControlOut>)> {
    caller.require_operator("distrusting")?;
    let (target, json) = match (&body.entry, &body.principal) {
        (Some(e), None) => {
            let id = parse_id(e, "entry")?;
            super::entries::check_readable(&state, &caller, vec![id]).await?;
            (
                DistrustTarget::Entry(id),
                serde_json::json!({ "entry": id.to_hex() }),
            )
        }
        (None, Some(p)) => {
            let name = p.clone();
            state
                .read(move |mem| {
                    if mem.registry()?.get(&name).is_none() {
                        return Err(ApiError::not_found(format!(
                            "principal `{name}` is not registered"
                        )));
                    }
                    Ok(())
                })
                .await?;
            (
                DistrustTarget::Principal(p.clone()),
                serde_json::json!({ "principal": p }),
            )
        }
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of `entry` and `principal`",
            ));
        }
    };
    let d = Distrust {
        target,
        reason: body.reason.clone(),
    };
    let req = WriteRequest::new(caller.principal(), EntryKind::Distrust, d.to_content());
    let w = one(state.write(vec![req]).await?)?;
    Ok((
        StatusCode::CREATED,
        axum::Json(ControlOut {
            id: w.id.to_hex(),
            index: w.index,
            writer: caller.principal().to_string(),
            target: json,
            erased: None,
            reason: body.reason,
        }),
    ))
}

fn one(mut written: Vec<memlineage::Written>) -> ApiResult<memlineage::Written> {
    written
        .pop()
        .ok_or_else(|| ApiError::internal("the write returned nothing"))
}
