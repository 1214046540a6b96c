//! The routes, and the layers every request passes through: request id, panic → JSON 500,
//! logging and metrics, the request timeout and the body limit. Unknown routes and methods get
//! the service's JSON error too.

pub mod control;
pub mod entries;
pub mod gate;
pub mod health;
pub mod lineage;
pub mod path_id;
pub mod principals;
pub mod proofs;
pub mod retrieval;
pub mod verify;
pub mod wire;

use crate::deadline::{self, Ticket};
use crate::error::ApiError;
use crate::state::AppState;
use crate::telemetry;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{Next, from_fn, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::request_id::{PropagateRequestIdLayer, SetRequestIdLayer};

/// The service's router over `state`.
pub fn router(state: AppState) -> Router {
    let limit = state.limits.max_body_bytes;
    Router::new()
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(telemetry::metrics_text))
        .route("/openapi.json", get(crate::openapi::serve))
        .route("/v1/whoami", get(health::whoami))
        .route(
            "/v1/principals",
            get(principals::list).post(principals::add),
        )
        .route("/v1/principals/{name}/rotate", post(principals::rotate))
        .route("/v1/principals/{name}/revoke", post(principals::revoke))
        .route("/v1/entries", post(entries::write))
        .route("/v1/entries/batch", post(entries::write_batch))
        .route("/v1/entries/{id}", get(entries::get))
        .route("/v1/entries/{id}/proof", get(proofs::inclusion))
        .route("/v1/entries/{id}/lineage", get(lineage::lineage))
        .route("/v1/entries/{id}/forget", post(control::forget))
        .route("/v1/log", get(entries::log))
        .route("/v1/consistency", get(proofs::consistency))
        .route(
            "/v1/checkpoint",
            get(proofs::latest_checkpoint).post(proofs::sign_checkpoint),
        )
        .route("/v1/distrust", post(control::distrust))
        .route("/v1/search", post(retrieval::search))
        .route("/v1/search/status", get(retrieval::search_status))
        .route("/v1/recall", post(retrieval::recall))
        .route("/v1/gate", post(gate::gate))
        .route("/v1/verify", post(verify::start))
        .route("/v1/verify/{job}", get(verify::status))
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(from_fn_with_state(state.limits.request_timeout, timeout))
        .layer(from_fn(telemetry::observe))
        .layer(CatchPanicLayer::custom(telemetry::panic_response))
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(
            telemetry::Counter::default(),
        ))
        .with_state(state)
}

async fn unknown_route(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "unknown_route",
        format!(
            "no route {} {}: see /openapi.json for the routes of this service",
            req.method(),
            req.uri().path().chars().take(200).collect::<String>()
        ),
    )
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not allowed on {}: see /openapi.json",
            req.method(),
            req.uri().path().chars().take(200).collect::<String>()
        ),
    )
}

/// How long a request whose write had begun when its time ran out is still waited for: a
/// group commit takes milliseconds; only a store or signer that hangs reaches this.
const COMMIT_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// Answers a request that takes longer than the configured timeout with 503 `timeout`,
/// keeping the promise of `deadline.rs`: a request answered so wrote nothing. A request whose
/// write had begun when the time ran out is waited for (up to [`COMMIT_GRACE`]) and answered
/// truthfully.
///
/// Its state is the timeout alone, not the service's state: that would be one more clone of the
/// shared handle per request, an atomic count every thread updates (`docs/performance.md`,
/// "Merkle nodes in append order, request lines at debug").
async fn timeout(State(limit): State<std::time::Duration>, req: Request, next: Next) -> Response {
    let ticket = Ticket::default();
    let run = ticket.clone().scope(next.run(req));
    tokio::pin!(run);
    if let Ok(resp) = tokio::time::timeout(limit, &mut run).await {
        return resp;
    }
    if ticket.abandon() {
        return deadline::timed_out_before_writing().into_response();
    }
    match tokio::time::timeout(limit.max(COMMIT_GRACE), &mut run).await {
        Ok(resp) => resp,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "the request's write was still being committed {} ms after the request timeout: it may be durable; look it up (search, log) before writing it again",
                limit.max(COMMIT_GRACE).as_millis()
            ),
        )
        .into_response(),
    }
}
