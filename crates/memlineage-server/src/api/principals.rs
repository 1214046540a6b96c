//! The principal registry: list (any token), add, rotate, revoke (operator role). The service
//! makes and keeps the keys ([`KeyStore`](crate::keys::KeyStore)); a new or rotated key is
//! loaded into every handle, so the principal can write at once.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath};
use crate::state::AppState;
use axum::extract::State;
use axum::http::StatusCode;
use memlineage::PrincipalName;
use memlineage_core::keys;
use memlineage_core::label::TrustClass;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// One key of a principal.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct KeyOut {
    /// Key id (hex).
    pub key_id: String,
    /// Log index of the record that added it.
    pub added_at: u64,
    /// Log index of the record that retired it.
    pub retired_at: Option<u64>,
    /// Whether it is the current key.
    pub current: bool,
}

/// A principal as replayed from the log.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PrincipalOut {
    /// Name.
    pub name: String,
    /// `trusted` or `external`.
    pub class: String,
    /// Whether it is the store's operator.
    pub operator: bool,
    /// Whether it was revoked.
    pub revoked: bool,
    /// Log index of the revocation.
    pub revoked_at: Option<u64>,
    /// Why it was revoked.
    pub revoke_reason: Option<String>,
    /// Its keys, oldest first.
    pub keys: Vec<KeyOut>,
    /// Whether this service holds its current secret key (it can write as it).
    pub service_holds_key: bool,
}

/// The registry.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct PrincipalsOut {
    /// The operator principal.
    pub operator: Option<String>,
    /// Every principal, by name.
    pub principals: Vec<PrincipalOut>,
}

/// `POST /v1/principals`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddBody {
    /// 1–64 characters from `a-z 0-9 . _ -`; never reused.
    pub name: String,
    /// `trusted` or `external`.
    pub class: String,
}

/// `POST /v1/principals/{name}/revoke`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeBody {
    /// Why (signed into the record).
    pub reason: String,
}

/// A registry change.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct RegistryOut {
    /// The principal.
    pub name: String,
    /// Its class (for an add).
    pub class: Option<String>,
    /// Its new current key id (add, rotate).
    pub key_id: Option<String>,
    /// Where the service keeps its key.
    pub key_location: Option<String>,
    /// The registry record's id.
    pub id: String,
    /// The record's log index.
    pub index: u64,
}

/// Every principal: class, keys, revocation.
#[utoipa::path(get, path = "/v1/principals", tag = "principals",
    security(("bearer" = [])), responses((status = 200, body = PrincipalsOut)))]
pub async fn list(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<axum::Json<PrincipalsOut>> {
    let out = state
        .read(|mem| {
            let registry = mem.registry()?;
            let operator = registry.operator().map(str::to_string);
            let principals = registry
                .principals()
                .map(|p| {
                    let current = p.current_key().map(|k| k.key_id);
                    let held = p.name.parse::<PrincipalName>().ok().and_then(|n| {
                        mem.keys()
                            .get(&n)
                            .ok()
                            .map(|k| keys::key_id(&k.verifying_key()))
                            .filter(|id| Some(*id) == current)
                            .or_else(|| {
                                let signer = mem.signer()?;
                                signer.key_for(&n, current).ok()?.map(|k| keys::key_id(&k))
                            })
                    });
                    PrincipalOut {
                        name: p.name.clone(),
                        class: p.class.as_str().to_string(),
                        operator: operator.as_deref() == Some(p.name.as_str()),
                        revoked: p.revoked_at.is_some(),
                        revoked_at: p.revoked_at,
                        revoke_reason: p.revoke_reason.clone(),
                        keys: p
                            .keys
                            .iter()
                            .map(|k| KeyOut {
                                key_id: k.key_id.to_hex(),
                                added_at: k.added_at,
                                retired_at: k.retired_at,
                                current: Some(k.key_id) == current,
                            })
                            .collect(),
                        service_holds_key: held.is_some() && held == current,
                    }
                })
                .collect();
            Ok(PrincipalsOut {
                operator,
                principals,
            })
        })
        .await?;
    Ok(axum::Json(out))
}

/// Register a principal with a fresh key kept by the service (operator role).
#[utoipa::path(post, path = "/v1/principals", tag = "principals", request_body = AddBody,
    security(("bearer" = [])),
    responses((status = 201, body = RegistryOut), (status = 403, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody)))]
pub async fn add(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<AddBody>,
) -> ApiResult<(StatusCode, axum::Json<RegistryOut>)> {
    caller.require_operator("adding a principal")?;
    let name = parse_name(&body.name)?;
    let class = body
        .class
        .parse::<TrustClass>()
        .map_err(|e| ApiError::invalid(format!("`class`: {e}")))?;
    let st = state.clone();
    let out = state
        .write_direct(move |mem| {
            if mem.registry()?.get(name.as_str()).is_some() {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "conflict",
                    format!(
                        "principal `{}` already exists (names are never reused)",
                        body.name
                    ),
                ));
            }
            let key = st.keys.create(&name)?;
            let written = match mem.add_principal(&name, class, &key.verifying_key()) {
                Ok(w) => w,
                Err(e) => {
                    st.keys.discard(&name);
                    return Err(e.into());
                }
            };
            mem.keys().insert(&name, key.clone());
            Ok(RegistryOut {
                key_id: Some(keys::key_id(&key.verifying_key()).to_hex()),
                key_location: Some(st.keys.describe(&name)),
                class: Some(class.as_str().to_string()),
                name: name.to_string(),
                id: written.id.to_hex(),
                index: written.index,
            })
        })
        .await?;
    Ok((StatusCode::CREATED, axum::Json(out)))
}

/// A principal name from a request.
fn parse_name(s: &str) -> ApiResult<PrincipalName> {
    s.parse::<PrincipalName>()
        .map_err(|e| ApiError::invalid(format!("`name`: {e}")))
}

fn live(mem: &crate::state::Mem, name: &PrincipalName) -> ApiResult<()> {
    let registry = mem.registry()?;
    let p = registry
        .get(name.as_str())
        .ok_or_else(|| ApiError::not_found(format!("principal `{name}` is not registered")))?;
    if let Some(at) = p.revoked_at {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("principal `{name}` was revoked at log index {at}"),
        ));
    }
    Ok(())
}

/// Give a principal a new key; the old one is refused from now on (operator role).
#[utoipa::path(post, path = "/v1/principals/{name}/rotate", tag = "principals",
    params(("name" = String, Path, description = "principal name")),
    security(("bearer" = [])),
    responses((status = 200, body = RegistryOut), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn rotate(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<axum::Json<RegistryOut>> {
    caller.require_operator("rotating a key")?;
    let name = parse_name(&name)?;
    let st = state.clone();
    let out = state
        .write_direct(move |mem| {
            live(mem, &name)?;
            let key = st.keys.prepare_rotation(&name)?;
            let written = match mem.rotate_principal(&name, &key) {
                Ok(w) => w,
                Err(e) => {
                    st.keys.abort_rotation(&name);
                    return Err(e.into());
                }
            };
            st.keys.commit_rotation(&name, &key)?;
            mem.keys().insert(&name, key.clone());
            Ok(RegistryOut {
                key_id: Some(keys::key_id(&key.verifying_key()).to_hex()),
                key_location: Some(st.keys.describe(&name)),
                class: None,
                name: name.to_string(),
                id: written.id.to_hex(),
                index: written.index,
            })
        })
        .await?;
    Ok(axum::Json(out))
}

/// Revoke a principal: every entry it signs from now on is refused (operator role).
#[utoipa::path(post, path = "/v1/principals/{name}/revoke", tag = "principals",
    params(("name" = String, Path, description = "principal name")), request_body = RevokeBody,
    security(("bearer" = [])),
    responses((status = 200, body = RegistryOut), (status = 403, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody)))]
pub async fn revoke(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(body): ApiJson<RevokeBody>,
) -> ApiResult<axum::Json<RegistryOut>> {
    caller.require_operator("revoking a principal")?;
    let name = parse_name(&name)?;
    let out = state
        .write_direct(move |mem| {
            live(mem, &name)?;
            let written = mem.revoke_principal(&name, &body.reason)?;
            Ok(RegistryOut {
                name: name.to_string(),
                class: None,
                key_id: None,
                key_location: None,
                id: written.id.to_hex(),
                index: written.index,
            })
        })
        .await?;
    Ok(axum::Json(out))
}
