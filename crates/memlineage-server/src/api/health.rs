//! Liveness (`/healthz`: the process answers), readiness (`/readyz`: the store answers and
//! the service is not shutting down), and `GET /v1/whoami` (what a token grants).

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

/// Health.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct HealthOut {
    /// `ok` or `ready`.
    pub status: String,
    /// Entries in the log (readiness only).
    pub size: Option<u64>,
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/healthz", tag = "health", responses((status = 200, body = HealthOut)))]
pub async fn healthz() -> axum::Json<HealthOut> {
    axum::Json(HealthOut {
        status: "ok".into(),
        size: None,
    })
}

/// Readiness: the store answers and the service takes requests.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, body = HealthOut), (status = 503, body = crate::error::ErrorBody)))]
pub async fn readyz(State(state): State<AppState>) -> ApiResult<axum::Json<HealthOut>> {
    if !state.is_ready() {
        return Err(ApiError::unavailable("the service is shutting down"));
    }
    let size = state
        .read(|mem| {
            mem.size()
                .map_err(|e| ApiError::unavailable(format!("the store does not answer: {e}")))
        })
        .await?;
    Ok(axum::Json(HealthOut {
        status: "ready".into(),
        size: Some(size),
    }))
}

/// What a token grants.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct WhoamiOut {
    /// The token's id.
    pub token_id: String,
    /// The principal it writes and gates as.
    pub principal: String,
    /// The scopes it may read and write.
    pub scopes: Vec<String>,
    /// Whether it holds the operator role.
    pub operator: bool,
}

/// What the presented token grants.
#[utoipa::path(get, path = "/v1/whoami", tag = "health", security(("bearer" = [])),
    responses((status = 200, body = WhoamiOut), (status = 401, body = crate::error::ErrorBody)))]
pub async fn whoami(caller: Caller) -> axum::Json<WhoamiOut> {
    let g = caller.0;
    axum::Json(WhoamiOut {
        token_id: g.token_id,
        principal: g.principal.to_string(),
        scopes: g.scopes.iter().map(|s| s.as_str().to_string()).collect(),
        operator: g.operator,
    })
}
