//! The gateway's connection to one downstream server, as an MCP client (rmcp): a child process
//! over stdio, or a Streamable HTTP endpoint.
//!
//! The connection is made on first use and made again after it breaks (a crashed child is
//! started anew on the next call): the call that found it broken fails with a message saying
//! so, and nothing of it is recorded.

use super::config::{ServerSpec, Transport};
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{Peer, RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{ConfigureCommandExt, StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use std::sync::Arc;
use tokio::sync::Mutex;

/// One downstream server.
pub struct Downstream {
    /// Its configuration.
    pub spec: Arc<ServerSpec>,
    conn: Mutex<Option<RunningService<RoleClient, ()>>>,
}

/// Why a downstream call gave no result.
#[derive(Debug)]
pub enum CallError {
    /// The agent cancelled the call.
    Cancelled,
    /// Anything else, said in words.
    Failed(String),
}

impl Downstream {
    /// Not connected yet.
    pub fn new(spec: Arc<ServerSpec>) -> Downstream {
        Downstream {
            spec,
            conn: Mutex::new(None),
        }
    }

    async fn connect(&self) -> Result<RunningService<RoleClient, ()>, String> {
        let name = &self.spec.name;
        let connecting = async {
            match &self.spec.transport {
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                } => {
                    let cmd = tokio::process::Command::new(command).configure(|c| {
                        c.args(args).envs(env).current_dir(cwd);
                    });
                    let transport = TokioChildProcess::new(cmd)
                        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
                    ().serve(transport).await.map_err(|e| e.to_string())
                }
                Transport::Http {
                    url,
                    bearer_token_env,
                    ca,
                } => {
                    let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                    if let Some(var) = bearer_token_env {
                        config = config.auth_header(bearer_token(var)?);
                    }
                    let mut client = reqwest::Client::builder();
                    if let Some(ca) = ca {
                        // Exactly these roots: a private CA is trusted for this server alone,
                        // and no public CA can stand in for it.
                        client = client.tls_certs_only(ca.certificates()?);
                    }
                    let client = client
                        .build()
                        .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    ().serve(transport).await.map_err(|e| e.to_string())
                }
            }
        };
        match tokio::time::timeout(self.spec.timeout, connecting).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(format!(
                "downstream server `{name}` did not start an MCP session: {e}"
            )),
            Err(_) => Err(format!(
                "downstream server `{name}` did not start an MCP session within {} s",
                self.spec.timeout.as_secs()
            )),
        }
    }

    /// The peer, connecting first if needed.
    async fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let mut conn = self.conn.lock().await;
        if let Some(c) = conn.as_ref()
            && !c.is_transport_closed()
        {
            return Ok(c.peer().clone());
        }
        let c = self.connect().await?;
        let peer = c.peer().clone();
        *conn = Some(c);
        Ok(peer)
    }

    /// Drops a broken connection so the next call makes a new one.
    async fn reset(&self) {
        if let Some(c) = self.conn.lock().await.take() {
            let _ = c.cancel().await;
        }
    }

    /// The server's tools.
    pub async fn list_tools(&self) -> Result<Vec<Tool>, String> {
        let peer = self.peer().await?;
        let listed = tokio::time::timeout(self.spec.timeout, peer.list_all_tools()).await;
        match listed {
            Ok(Ok(tools)) => Ok(tools),
            Ok(Err(e)) => {
                let msg = self.describe(&e);
                if is_broken(&e) {
                    self.reset().await;
                }
                Err(msg)
            }
            Err(_) => Err(format!(
                "downstream server `{}` did not list its tools within {} s",
                self.spec.name,
                self.spec.timeout.as_secs()
            )),
        }
    }

    /// Calls `params` on the server; stops waiting (and cancels the call downstream) when
    /// `cancel` fires or the server's timeout passes.
    pub async fn call(
        &self,
        params: CallToolRequestParams,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let peer = self.peer().await.map_err(CallError::Failed)?;
        let tool = params.name.to_string();
        // Dropping the request future sends `notifications/cancelled` downstream.
        let outcome = tokio::select! {
            r = tokio::time::timeout(self.spec.timeout, peer.call_tool(params)) => r,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
        };
        match outcome {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => {
                let msg = format!("`{tool}`: {}", self.describe(&e));
                if is_broken(&e) {
                    self.reset().await;
                }
                Err(CallError::Failed(msg))
            }
            Err(_) => Err(CallError::Failed(format!(
                "downstream server `{}` did not answer `{tool}` within {} s",
                self.spec.name,
                self.spec.timeout.as_secs()
            ))),
        }
    }

    fn describe(&self, e: &ServiceError) -> String {
        let name = &self.spec.name;
        match e {
            ServiceError::McpError(err) => format!(
                "downstream server `{name}` answered with an error ({}): {}",
                err.code.0, err.message
            ),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => format!(
                "the connection to downstream server `{name}` broke (it may have crashed); it is reconnected on the next call"
            ),
            ServiceError::UnexpectedResponse => format!(
                "downstream server `{name}` answered with something that is not a tool result"
            ),
            other => format!("downstream server `{name}`: {other}"),
        }
    }
}

fn is_broken(e: &ServiceError) -> bool {
    matches!(
        e,
        ServiceError::TransportClosed | ServiceError::TransportSend(_)
    )
}

/// The bearer token of a Streamable HTTP downstream, from the environment variable the
/// configuration names: a missing or empty one fails the connection (and so every call to that
/// server) with the variable's name, rather than connecting without credentials.
fn bearer_token(var: &str) -> Result<String, String> {
    match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        Ok(_) => Err(format!(
            "the environment variable {var} (`bearer_token_env`) is empty"
        )),
        Err(_) => Err(format!(
            "the environment variable {var} (`bearer_token_env`) is not set, or not UTF-8"
        )),
    }
}
