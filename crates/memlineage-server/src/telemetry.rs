//! Observability: one JSON log line per request (tracing), Prometheus metrics (`/metrics`:
//! requests and their latencies by route and status, writes by result, gate decisions by
//! outcome, group-commit sizes and durations), request ids, and the JSON answer of a panic.

use crate::error::ApiError;
use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use tower_http::request_id::{MakeRequestId, RequestId};

/// Latency buckets (seconds): 100 µs to 10 s.
const LATENCY_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];
/// Group sizes (entries per commit).
const GROUP_BUCKETS: [f64; 11] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

static PROMETHEUS: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// The process's Prometheus recorder (installed on first use; `None` when another recorder
/// was installed first).
pub fn prometheus() -> Option<&'static PrometheusHandle> {
    PROMETHEUS
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), &LATENCY_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full("memlineage_commit_group_entries".into()),
                        &GROUP_BUCKETS,
                    )
                })
                .ok()?;
            builder.install_recorder().ok()
        })
        .as_ref()
}

/// `GET /metrics`: the Prometheus text exposition.
pub async fn metrics_text() -> Response {
    match prometheus() {
        Some(h) => (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            h.render(),
        )
            .into_response(),
        None => ApiError::unavailable("no metrics recorder in this process").into_response(),
    }
}

/// Times every request, counts it, and logs one line with its route, status, latency, the id
/// of the token presented (never the token) and the request id.
pub async fn observe(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().as_str().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let token = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' ').map(|(_, t)| t.trim()))
        .and_then(crate::tokens::token_id)
        .map(str::to_string);
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .and_then(|r| r.header_value().to_str().ok())
        .map(str::to_string);
    let resp = next.run(req).await;
    let seconds = started.elapsed().as_secs_f64();
    let status = resp.status().as_u16().to_string();
    metrics::histogram!("memlineage_http_request_duration_seconds",
        "route" => route.clone(), "method" => method.clone(), "status" => status.clone())
    .record(seconds);
    tracing::info!(
        target: "memlineage_server::http",
        method = %method,
        route = %route,
        status = %status,
        latency_us = (seconds * 1e6) as u64,
        token = token.as_deref().unwrap_or("-"),
        request_id = request_id.as_deref().unwrap_or("-"),
        "request"
    );
    resp
}

/// Request ids: a per-process counter (`x-request-id`, kept when the client sent one).
#[derive(Clone, Default)]
pub struct Counter(std::sync::Arc<AtomicU64>);

impl MakeRequestId for Counter {
    fn make_request_id<B>(&mut self, _req: &axum::http::Request<B>) -> Option<RequestId> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        HeaderValue::from_str(&format!("req-{n}"))
            .ok()
            .map(RequestId::new)
    }
}

/// A panic inside a handler: a JSON 500 (the process goes on).
pub fn panic_response(err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    let what = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "a panic".into());
    tracing::error!("handler panicked: {what}");
    ApiError::internal("the service failed on this request (a bug: the log has the details); nothing was acknowledged").into_response()
}

/// Installs the log subscriber: JSON lines (default) or text, on stderr, filtered by
/// `RUST_LOG` (default `info`).
pub fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}
