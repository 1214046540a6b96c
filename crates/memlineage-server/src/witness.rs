//! `memlineage witness serve`: a witness over the HTTP interface of C2SP tlog-witness
//! (<https://c2sp.org/tlog-witness>, §HTTP Interface), for logs to reach over the network.
//!
//! - `POST /add-checkpoint`: the request body goes unchanged to
//!   [`FileWitness::add_checkpoint`], whose status, `Content-Type` and body are copied onto the
//!   wire: `200` with the cosignature line, `400` malformed, `403` not signed by the log, `404`
//!   unknown origin, `409` with the latest cosigned size as `text/x.tlog.size`, `422`
//!   inconsistent. A body larger than [`MAX_REQUEST_BYTES`] is refused with `413` before it is
//!   read whole.
//! - `GET /<sha256(origin) in lowercase hex>/checkpoint`: the checkpoint cosigned last for that
//!   log, with the log's signature and the witness's (the spec's monitor retrieval); `404` if
//!   none.
//!
//! The submission and monitoring prefixes are the service's root. The witness's directory is
//! the only state: every request opens it (so `memlineage witness add-log` takes effect without
//! a restart) and the check-then-record step runs under its lock file, on a blocking thread, so
//! concurrent requests and other processes cannot roll its record back (the race the spec
//! describes). The record is written atomically (temporary file, fsync, rename) before the
//! answer is sent.

use crate::config::TlsFiles;
use crate::server::{bind, runtime, serve, signal, tls_config};
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Path as UrlPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum_server::Handle;
use memlineage::transparency::FileWitness;
use memlineage_core::witness::{MAX_REQUEST_BYTES, TEXT_CONTENT_TYPE, WitnessResponse};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// How a witness service runs.
#[derive(Clone, Debug)]
pub struct WitnessConfig {
    /// The witness's directory (`memlineage witness init`).
    pub dir: PathBuf,
    /// Where to listen (port 0: any free port).
    pub listen: SocketAddr,
    /// TLS, when given a certificate.
    pub tls: Option<TlsFiles>,
    /// How long a request may take before it is answered `503`.
    pub request_timeout: Duration,
    /// How long a client may take to send its request headers.
    pub header_timeout: Duration,
    /// How long shutdown waits for requests in flight.
    pub shutdown_grace: Duration,
}

impl WitnessConfig {
    /// The witness in `dir` on `listen`, without TLS: 30 s per request, 10 s for headers.
    pub fn new(dir: PathBuf, listen: SocketAddr) -> WitnessConfig {
        WitnessConfig {
            dir,
            listen,
            tls: None,
            request_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
        }
    }
}

/// The routes of a witness whose directory is `dir`.
pub fn witness_router(dir: PathBuf, request_timeout: Duration) -> Router {
    Router::new()
        .route("/add-checkpoint", post(add_checkpoint))
        .route("/{origin_hash}/checkpoint", get(latest_checkpoint))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(Arc::new(dir))
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(from_fn_with_state(request_timeout, timeout))
}

/// Serves the witness until a shutdown signal or `stop`; `on_listening` gets the bound address
/// and whether it speaks TLS. Refuses to start unless `config.dir` holds a witness.
pub async fn run_witness(
    config: WitnessConfig,
    on_listening: impl FnOnce(SocketAddr, bool),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    FileWitness::open(&config.dir).map_err(|e| e.to_string())?;
    let tls = config.tls.as_ref().map(tls_config).transpose()?;
    let (listener, addr) = bind(config.listen)?;
    let handle: Handle<SocketAddr> = Handle::new();
    {
        let handle = handle.clone();
        let grace = config.shutdown_grace;
        tokio::spawn(async move {
            tokio::select! {
                () = signal() => {}
                () = stop => {}
            }
            tracing::info!("witness shutting down: requests in flight finish");
            handle.graceful_shutdown(Some(grace));
        });
    }
    on_listening(addr, tls.is_some());
    tracing::info!(%addr, tls = tls.is_some(), dir = %config.dir.display(), "witness listening");
    let app = witness_router(config.dir.clone(), config.request_timeout);
    serve(listener, tls, handle, app, config.header_timeout).await
}

/// [`run_witness`] on a runtime of its own, until SIGTERM or Ctrl-C.
pub fn run_witness_blocking(
    config: WitnessConfig,
    on_listening: impl FnOnce(SocketAddr, bool),
) -> Result<(), String> {
    runtime()?.block_on(run_witness(config, on_listening, std::future::pending()))
}

async fn add_checkpoint(
    State(dir): State<Arc<PathBuf>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the request body is larger than {MAX_REQUEST_BYTES} bytes, the most an add-checkpoint request may carry (an old size line, at most 63 proof lines and a checkpoint)"
                ),
            );
        }
        Err(rejection) => {
            return text(
                rejection.status(),
                format!("cannot read the request body: {}", rejection.body_text()),
            );
        }
    };
    let answered = tokio::task::spawn_blocking(move || {
        FileWitness::open(&dir).and_then(|w| w.add_checkpoint(&body))
    })
    .await;
    match answered {
        Ok(Ok(r)) => {
            tracing::info!(status = r.status, "add-checkpoint");
            wire(r)
        }
        Ok(Err(e)) => {
            tracing::error!("add-checkpoint: the witness failed: {e}");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the witness failed on this request; nothing was cosigned: {e}"),
            )
        }
        Err(e) => {
            tracing::error!("add-checkpoint: the worker failed: {e}");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the witness failed on this request (a bug: the log has the details); nothing was cosigned".into(),
            )
        }
    }
}

async fn latest_checkpoint(
    State(dir): State<Arc<PathBuf>>,
    UrlPath(origin_hash): UrlPath<String>,
) -> Response {
    let found = tokio::task::spawn_blocking(move || {
        FileWitness::open(&dir).and_then(|w| w.latest_by_origin_hash(&origin_hash))
    })
    .await;
    match found {
        Ok(Ok(Some(note))) => text(StatusCode::OK, note),
        Ok(Ok(None)) => text(
            StatusCode::NOT_FOUND,
            "this witness has not cosigned a checkpoint of that log (the path is the SHA-256 of the origin, in lowercase hex)".into(),
        ),
        Ok(Err(e)) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the witness cannot read its state: {e}"),
        ),
        Err(_) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the witness failed on this request (a bug: the log has the details)".into(),
        ),
    }
}

async fn not_found() -> Response {
    text(
        StatusCode::NOT_FOUND,
        "no such route: a witness serves POST /add-checkpoint and GET /<sha256(origin)>/checkpoint (C2SP tlog-witness)".into(),
    )
}

async fn method_not_allowed() -> Response {
    text(
        StatusCode::METHOD_NOT_ALLOWED,
        "method not allowed: add-checkpoint is a POST, checkpoint retrieval a GET".into(),
    )
}

/// Answers `503` for a request that takes longer than the limit. A checkpoint may have been
/// cosigned and recorded meanwhile: the log's next request then gets `409` with its size.
async fn timeout(State(limit): State<Duration>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the request took longer than {} ms; ask again (a 409 names the size recorded meanwhile)",
                limit.as_millis()
            ),
        ),
    }
}

/// The witness's answer, on the wire as it is.
fn wire(r: WitnessResponse) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = (status, r.body).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(r.content_type),
    );
    resp
}

fn text(status: StatusCode, body: String) -> Response {
    let body = if body.ends_with('\n') {
        body
    } else {
        body + "\n"
    };
    wire(WitnessResponse {
        status: status.as_u16(),
        content_type: TEXT_CONTENT_TYPE,
        body,
    })
}
