//! Running the service: bind, optional TLS (rustls with the ring provider), serve until
//! SIGTERM or Ctrl-C, then shut down gracefully.
//!
//! Shutdown loses no acknowledged write: a write is answered only after its group commit
//! returned, so every response with an id is already durable. On the signal the service stops
//! accepting connections and reports not ready; requests in flight finish (up to the grace
//! period); then the last handle on the committer is dropped and its thread commits whatever
//! is still queued before [`run`] returns.

use crate::api::router;
use crate::config::{Config, TlsFiles};
use crate::keys::KeyStore;
use crate::state::AppState;
use axum_server::Handle;
use axum_server::tls_rustls::RustlsConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::net::SocketAddr;
use std::sync::Arc;

/// Builds the TLS configuration from PEM files.
pub(crate) fn tls_config(tls: &TlsFiles) -> Result<RustlsConfig, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.cert)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("TLS certificate {}: {e}", tls.cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "TLS certificate {}: no certificate in the file",
            tls.cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(&tls.key)
        .map_err(|e| format!("TLS key {}: {e}", tls.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(RustlsConfig::from_config(Arc::new(config)))
}

/// Runs the service until a shutdown signal (or `stop` resolves). `on_listening` is called
/// with the bound address once the service accepts connections.
pub async fn run(
    config: Config,
    keys: Arc<dyn KeyStore>,
    on_listening: impl FnOnce(SocketAddr, bool),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let _ = crate::telemetry::prometheus();
    let tls = config.tls.as_ref().map(tls_config).transpose()?;
    let (state, workers) = AppState::open(&config, keys)?;
    let app = router(state.clone());
    let (listener, addr) = bind(config.listen)?;
    let handle: Handle<SocketAddr> = Handle::new();
    let grace = config.shutdown_grace;
    {
        let handle = handle.clone();
        let state = state.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = signal() => {}
                () = stop => {}
            }
            tracing::info!("shutting down: no new connections; requests in flight finish");
            state.begin_shutdown();
            handle.graceful_shutdown(Some(grace));
        });
    }
    on_listening(addr, tls.is_some());
    tracing::info!(%addr, tls = tls.is_some(), "listening");
    let served = serve(listener, tls, handle, app, config.limits.header_timeout).await;
    // Every request handler is done: dropping the last state handle closes the committer's
    // queue; it commits what is left, then its thread ends; then the vector indexer stops
    // after its step and its index is saved.
    drop(state);
    match tokio::task::spawn_blocking(move || workers.finish()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("the committer thread failed during shutdown".into()),
    }
    tracing::info!("stopped: every acknowledged write is durable");
    served
}

/// A listening socket on `listen` (port 0: any free port) and the address it got.
pub(crate) fn bind(listen: SocketAddr) -> Result<(std::net::TcpListener, SocketAddr), String> {
    let failed = |e: std::io::Error| format!("cannot listen on {listen}: {e}");
    let listener = std::net::TcpListener::bind(listen).map_err(failed)?;
    listener.set_nonblocking(true).map_err(failed)?;
    let addr = listener.local_addr().map_err(failed)?;
    Ok((listener, addr))
}

/// Serves `app` on `listener`, over TLS when given, until `handle` shuts it down; a client
/// gets `header_timeout` to send its request headers.
pub(crate) async fn serve(
    listener: std::net::TcpListener,
    tls: Option<RustlsConfig>,
    handle: Handle<SocketAddr>,
    app: axum::Router,
    header_timeout: std::time::Duration,
) -> Result<(), String> {
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot listen: {e}"))?;
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    let served = match tls {
        Some(tls) => {
            let mut server = axum_server::from_tcp_rustls(listener, tls)
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?
                .handle(handle);
            tune(server.http_builder(), header_timeout);
            server.serve(service).await
        }
        None => {
            let mut server = axum_server::from_tcp(listener)
                .map_err(|e| format!("cannot listen on {addr}: {e}"))?
                .handle(handle);
            tune(server.http_builder(), header_timeout);
            server.serve(service).await
        }
    };
    served.map_err(|e| format!("the server failed: {e}"))
}

fn tune(
    builder: &mut hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    header_timeout: std::time::Duration,
) {
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout);
}

/// SIGTERM or Ctrl-C.
pub(crate) async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// [`run`] on a runtime of its own, until SIGTERM or Ctrl-C (what `memlineage serve` calls).
pub fn run_blocking(
    config: Config,
    keys: Arc<dyn KeyStore>,
    on_listening: impl FnOnce(SocketAddr, bool),
) -> Result<(), String> {
    runtime()?.block_on(run(config, keys, on_listening, std::future::pending()))
}

/// The multi-threaded runtime a service runs on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("memlineage-http")
        // Request log lines wait in a buffer of the thread until it runs out of work
        // (`log_writer.rs`): one write for a burst of requests, not one per request.
        .on_thread_park(crate::log_writer::worker_parks)
        .on_thread_stop(crate::log_writer::flush_this_thread)
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}
