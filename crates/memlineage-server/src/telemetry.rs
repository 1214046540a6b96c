//! Observability: one JSON log line per request (tracing), Prometheus metrics (`/metrics`:
//! requests and their latencies by route and status, writes by result, gate decisions by
//! outcome, group-commit sizes and durations), request ids, and the JSON answer of a panic.

use crate::error::ApiError;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::cell::RefCell;
use std::collections::HashMap;
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

/// A request answered successfully after this long is logged at `info` (`observe`).
const SLOW_REQUEST_SECONDS: f64 = 1.0;

/// Times every request, counts it, and logs one line with its route, status, latency, the id
/// of the token presented (never the token) and the request id: at `warn` for a server error,
/// `info` for a refused request (4xx) or a success slower than [`SLOW_REQUEST_SECONDS`], and
/// `debug` for the rest. Every request is counted and timed in the metrics either way; a line
/// per success at `info` cost ≈ 3 % of the service's gate decisions per second (formatting
/// and writing 20,000 JSON lines a second; `docs/performance.md`, "Merkle nodes in append
/// order, request lines at debug"). `RUST_LOG=info,memlineage_server::http=debug` logs them all.
///
/// It runs for every request, so it allocates nothing it need not: the route, method, token
/// header and request id are shared handles, read after the answer; the latency histogram of
/// each route, method and status is looked up once per thread ([`request_histogram`]).
pub async fn observe(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = req.method().clone();
    let route = req.extensions().get::<MatchedPath>().cloned();
    let authorization = req
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .cloned();
    let request_id = req.extensions().get::<RequestId>().cloned();
    let resp = next.run(req).await;
    let seconds = started.elapsed().as_secs_f64();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = method_label(&method);
    let status = resp.status();
    request_histogram(route, method, status).record(seconds);
    // Read only when the line is written (a disabled level evaluates no field).
    let token = || {
        authorization
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' ').map(|(_, t)| t.trim()))
            .and_then(crate::tokens::token_id)
    };
    let request_id = || {
        request_id
            .as_ref()
            .and_then(|r| r.header_value().to_str().ok())
    };
    macro_rules! request_line {
        ($level:expr) => {
            tracing::event!(
                target: "memlineage_server::http",
                $level,
                method = method,
                route = route,
                status = %status.as_u16(),
                latency_us = (seconds * 1e6) as u64,
                token = token().unwrap_or("-"),
                request_id = request_id().unwrap_or("-"),
                "request"
            )
        };
    }
    if status.is_server_error() {
        request_line!(tracing::Level::WARN);
    } else if status.is_client_error() || seconds >= SLOW_REQUEST_SECONDS {
        request_line!(tracing::Level::INFO);
    } else {
        request_line!(tracing::Level::DEBUG);
    }
    resp
}

/// The method as a metric label and log field: one of the standard methods, or `other`, so
/// that a client sending made-up methods cannot grow the metrics without bound.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const KNOWN: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
        (Method::TRACE, "TRACE"),
        (Method::CONNECT, "CONNECT"),
    ];
    KNOWN
        .iter()
        .find(|(m, _)| m == method)
        .map_or("other", |(_, s)| s)
}

/// Histograms this thread has recorded into, by route, then method and status.
type Histograms = HashMap<String, Vec<(&'static str, StatusCode, metrics::Histogram)>>;

thread_local! {
    static HISTOGRAMS: RefCell<Histograms> = RefCell::new(HashMap::new());
}

/// The latency histogram of `route`, `method` and `status`, kept by the thread once the
/// process's recorder is installed (routes are the router's, methods and statuses bounded, so
/// the table stays small); before that, looked up at every call, as the `metrics` macros do.
fn request_histogram(route: &str, method: &'static str, status: StatusCode) -> metrics::Histogram {
    let lookup = || {
        metrics::histogram!("memlineage_http_request_duration_seconds",
            "route" => route.to_string(), "method" => method, "status" => status.as_str().to_string())
    };
    if !matches!(PROMETHEUS.get(), Some(Some(_))) {
        return lookup();
    }
    HISTOGRAMS.with(|h| {
        let mut h = h.borrow_mut();
        if let Some(kept) = h
            .get(route)
            .and_then(|v| v.iter().find(|(m, s, _)| *m == method && *s == status))
        {
            return kept.2.clone();
        }
        let made = lookup();
        h.entry(route.to_string())
            .or_default()
            .push((method, status, made.clone()));
        made
    })
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
/// `RUST_LOG` (default `info`); the service's runtime threads write their lines in batches
/// (`log_writer.rs`).
pub fn init_logs(json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::log_writer::Stderr);
    let _ = if json {
        builder.json().flatten_event(true).try_init()
    } else {
        builder.try_init()
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use std::sync::{Arc, Mutex};
    use tower::ServiceExt;

    /// Log lines captured in memory.
    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Lines {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_request_line_is_logged_at_the_level_its_answer_calls_for() {
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_max_level(tracing::Level::TRACE)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let app = axum::Router::new()
            .route("/ok", axum::routing::get(|| async { "fine" }))
            .route(
                "/refused",
                axum::routing::get(|| async { (StatusCode::FORBIDDEN, "no") }),
            )
            .route(
                "/failed",
                axum::routing::get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "bug") }),
            )
            .layer(axum::middleware::from_fn(observe));
        for path in ["/ok", "/refused", "/failed", "/missing"] {
            let req = axum::http::Request::get(path)
                .body(axum::body::Body::empty())
                .unwrap();
            app.clone().oneshot(req).await.unwrap();
        }
        let text = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        let levels: Vec<(String, String)> = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["target"] == "memlineage_server::http")
            // No token or request id was sent: the fields say so.
            .inspect(|v| assert_eq!((&v["token"], &v["request_id"]), (&"-".into(), &"-".into())))
            .map(|v| {
                (
                    v["status"].to_string(),
                    v["level"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let expected = [
            ("200", "DEBUG"),
            ("403", "INFO"),
            ("500", "WARN"),
            ("404", "INFO"),
        ];
        assert_eq!(
            levels,
            expected.map(|(s, l)| (format!("\"{s}\""), l.to_string())),
            "{text}"
        );
    }
}
