//! `verify` as a background job (operator role): a full audit of the store — every leaf,
//! signature, signer, label, Merkle node and checkpoint — on its own handle that does not
//! trust the registry to open the store, with progress.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::jobs::{JobView, Jobs};
use crate::state::{AppState, open_audit_handle};
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

/// A started job.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct StartedOut {
    /// The job id.
    pub job: u64,
    /// Where to follow it.
    pub status_url: String,
}

/// Start a full audit of the store (operator role); one runs at a time.
#[utoipa::path(post, path = "/v1/verify", tag = "verify",
    security(("bearer" = [])),
    responses((status = 202, body = StartedOut), (status = 403, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody)))]
pub async fn start(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, axum::Json<StartedOut>)> {
    caller.require_operator("verify")?;
    let job = state.jobs.start().map_err(|running| {
        ApiError::new(
            StatusCode::CONFLICT,
            "conflict",
            format!("verify job {running} is still running: follow GET /v1/verify/{running}"),
        )
    })?;
    let id = Jobs::id(&job);
    let store = state.store.clone();
    std::thread::Builder::new()
        .name(format!("memlineage-verify-{id}"))
        .spawn(move || {
            let result = open_audit_handle(&store)
                .and_then(|mem| mem.verify(&mut |done, total| job.progress(done, total)));
            job.finish(result.map_err(|e| e.to_string()));
        })
        .map_err(|e| ApiError::internal(format!("cannot start the verify job: {e}")))?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(StartedOut {
            job: id,
            status_url: format!("/v1/verify/{id}"),
        }),
    ))
}

/// A verify job's progress and, once done, its report (operator role).
#[utoipa::path(get, path = "/v1/verify/{job}", tag = "verify",
    params(("job" = u64, Path, description = "job id")),
    security(("bearer" = [])),
    responses((status = 200, body = JobView), (status = 404, body = crate::error::ErrorBody)))]
pub async fn status(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(job): ApiPath<u64>,
) -> ApiResult<axum::Json<JobView>> {
    caller.require_operator("verify")?;
    state.jobs.view(job).map(axum::Json).ok_or_else(|| {
        ApiError::not_found(format!(
            "no verify job {job} (jobs are kept until 16 newer ones ran, and not across restarts)"
        ))
    })
}
