//! # memlineage-mcp
//!
//! MemLineage over the Model Context Protocol, on the official Rust SDK (`rmcp`):
//!
//! - [`serve`]: a memory server (`memlineage mcp serve`) with `remember`, `recall`, `lineage`
//!   and `forget` tools, the writer fixed by configuration;
//! - [`gateway`]: a gateway (`memlineage mcp gateway`) between an agent and its MCP tool
//!   servers that records what the tools return, keeps what the agent saw as the lineage of
//!   its next calls, and gates sensitive calls.
//!
//! The library `memlineage` stays free of an async runtime: this crate brings tokio, and runs
//! every memory operation on tokio's blocking pool. `docs/mcp.md` is the manual.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod authors;
mod content;
pub mod field_path;
pub mod gateway;
pub mod handle;
pub mod listen;
pub mod memory_server;
pub mod session;
pub mod sessions;
pub mod stdio;
mod tool_args;

pub use listen::{DEFAULT_MAX_MESSAGE, Listen};

use handle::{Mem, SharedMem};
use memlineage::memory::VectorIndexer;
use memlineage_core::entry::Scope;
use memlineage_core::label::TrustClass;
use sessions::Sessions;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// How `memlineage mcp serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The principal the agent writes as (fixed here, never chosen by the model).
    pub principal: String,
    /// The principal of the user's requests, when clients pass them in `_meta`.
    pub user: Option<String>,
    /// The trusted principal that signs session records (default: the store's operator).
    pub recorder: Option<String>,
    /// The session of requests that name none.
    pub session: String,
    /// The scope notes are written in and searched.
    pub scope: Scope,
    /// stdio or Streamable HTTP.
    pub listen: Listen,
    /// The largest message accepted from the client.
    pub max_message: usize,
    /// Whether `forget` may erase content.
    pub allow_erase: bool,
    /// Where the vector index of semantic recall is saved, when the handle has an embedding
    /// model (attached with `VectorIndexing::Background`: a thread of this server indexes).
    pub vectors_saved_in: Option<PathBuf>,
}

/// How `memlineage mcp gateway` runs.
#[derive(Clone, Debug)]
pub struct GatewayOptions {
    /// The configuration file.
    pub config: PathBuf,
    /// stdio or Streamable HTTP.
    pub listen: Listen,
    /// The largest message accepted from the client.
    pub max_message: usize,
    /// Overrides the configured default session.
    pub session: Option<String>,
}

/// Runs the memory server until its client leaves (stdio) or a signal stops it (HTTP).
pub fn serve(mem: Mem, opts: ServeOptions) -> Result<(), String> {
    let mem: SharedMem = Arc::new(mem);
    let recorder = resolve_recorder(&mem, opts.recorder.as_deref())?;
    check_signer(&mem, &opts.principal, None)?;
    if let Some(u) = &opts.user {
        check_signer(&mem, u, Some("the user"))?;
    }
    let sessions = Arc::new(Sessions::new(
        Arc::clone(&mem),
        &recorder,
        opts.user.as_deref(),
        opts.scope.clone(),
        &opts.session,
    )?);
    let config = memory_server::MemoryServerConfig {
        principal: opts.principal.clone(),
        allow_erase: opts.allow_erase,
    };
    let mut server = memory_server::MemoryServer::new(sessions, config);
    let indexer = match mem.embedding_model() {
        Some(_) => {
            let indexer = VectorIndexer::start(Arc::clone(&mem), opts.vectors_saved_in, |_| {})
                .map_err(|e| format!("cannot start the vector indexer thread: {e}"))?;
            server = server.with_vector_indexer(indexer.waker());
            Some(indexer)
        }
        None => None,
    };
    let served = run(async move {
        match opts.listen {
            Listen::Stdio => listen::stdio(server, opts.max_message).await,
            Listen::Http(addr) => {
                listen::http(move || server.clone(), addr, opts.max_message).await
            }
        }
    });
    // The indexer stops after its step and saves the index, whatever the transport did.
    let stopped = indexer.map_or(Ok(()), VectorIndexer::stop);
    served.and(stopped)
}

/// Runs the gateway until its client leaves (stdio) or a signal stops it (HTTP).
pub fn gateway(mem: Mem, opts: GatewayOptions) -> Result<(), String> {
    let mut config = gateway::config::GatewayConfig::load(&opts.config)?;
    if let Some(s) = &opts.session {
        session::validate_key(s)?;
        config.session = s.clone();
    }
    let mem: SharedMem = Arc::new(mem);
    let recorder = resolve_recorder(&mem, config.recorder.as_deref())?;
    if let Some(u) = &config.user {
        check_signer(&mem, u, Some("the user"))?;
    }
    let mut classes = BTreeMap::new();
    for s in &config.servers {
        for p in s.principals() {
            let class =
                check_signer(&mem, &p, None).map_err(|e| format!("[servers.{}]: {e}", s.name))?;
            classes.insert(p, class);
        }
    }
    let sessions = Arc::new(Sessions::new(
        Arc::clone(&mem),
        &recorder,
        config.user.as_deref(),
        config.scope.clone(),
        &config.session,
    )?);
    let gw = gateway::Gateway::new(sessions, &config, classes);
    run(async move {
        match opts.listen {
            Listen::Stdio => listen::stdio(gw, opts.max_message).await,
            Listen::Http(addr) => listen::http(move || gw.clone(), addr, opts.max_message).await,
        }
    })
}

/// Checks `name` can sign here; `trusted_role` names a role that must be trusted.
fn check_signer(mem: &Mem, name: &str, trusted_role: Option<&str>) -> Result<TrustClass, String> {
    let class = handle::signer(mem, name).map_err(|e| e.0)?;
    if let Some(role) = trusted_role
        && class != TrustClass::Trusted
    {
        return Err(format!(
            "principal `{name}` is {}, but {role} must be a trusted principal",
            class.as_str()
        ));
    }
    Ok(class)
}

/// The recorder: the given principal, else the store's operator; trusted, with its key.
fn resolve_recorder(mem: &Mem, given: Option<&str>) -> Result<String, String> {
    let name = match given {
        Some(n) => n.to_string(),
        None => handle::operator(mem).map_err(|e| e.0)?,
    };
    check_signer(
        mem,
        &name,
        Some("the recorder of session records and gate decisions"),
    )?;
    Ok(name)
}

/// Runs `fut` on a multi-threaded tokio runtime.
fn run(fut: impl Future<Output = Result<(), String>>) -> Result<(), String> {
    // rustls for Streamable HTTP downstream servers over https, with the ring provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let out = rt.block_on(fut);
    // A read of stdin cannot be cancelled: do not wait for it.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    out
}
