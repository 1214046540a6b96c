//! Serving a handler to the agent: over stdio (one client, the process that started us) or
//! Streamable HTTP (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http)
//! on an address, at the path `/mcp`.

use crate::stdio::LineTransport;
use rmcp::ServerHandler;
use rmcp::ServiceExt;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use std::net::SocketAddr;
use tokio_util::sync::CancellationToken;

/// Where the server listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Listen {
    /// stdin and stdout.
    Stdio,
    /// Streamable HTTP on this address, path `/mcp`.
    Http(SocketAddr),
}

/// The default limit on one message from the agent: 4 MiB.
pub const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Serves `handler` on stdin/stdout until the client closes them.
pub async fn stdio<H: ServerHandler>(handler: H, max_message: usize) -> Result<(), String> {
    let transport = LineTransport::new(
        tokio::io::BufReader::new(tokio::io::stdin()),
        tokio::io::stdout(),
        max_message,
    );
    let running = handler
        .serve(transport)
        .await
        .map_err(|e| format!("the MCP session did not start: {e}"))?;
    tokio::select! {
        r = running.waiting() => {
            r.map_err(|e| format!("the MCP session failed: {e}"))?;
        }
        () = shutdown_signal() => {}
    }
    Ok(())
}

/// Serves handlers made by `make` over Streamable HTTP on `addr` (one handler per MCP session)
/// until SIGINT or SIGTERM. Prints the address it listens on to stderr (useful with port 0).
pub async fn http<H, F>(make: F, addr: SocketAddr, max_message: usize) -> Result<(), String>
where
    H: ServerHandler,
    F: Fn() -> H + Send + Sync + 'static,
{
    let ct = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(ct.child_token())
        .with_max_request_body_bytes(max_message);
    let service = StreamableHttpService::new(
        move || Ok(make()),
        LocalSessionManager::default().into(),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    eprintln!("memlineage: MCP over Streamable HTTP at http://{bound}/mcp");
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            shutdown_signal().await;
            ct.cancel();
        })
        .await
        .map_err(|e| format!("the HTTP server failed: {e}"))
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
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
