//! `memlineage mcp serve` and `memlineage mcp gateway` (docs/mcp.md): MemLineage over the Model
//! Context Protocol, built on the crate `memlineage-mcp` (feature `mcp`, on by default).

use super::{open, parse_name, parse_scope};
use crate::Ctx;
use crate::output::{CliError, Outcome};
use clap::{Args, Subcommand};
use memlineage_core::entry::Scope;
use memlineage_mcp::{DEFAULT_MAX_MESSAGE, GatewayOptions, Listen, ServeOptions};
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;

/// `memlineage mcp …`.
#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// Serve memory tools (remember, recall, lineage, forget) to an agent over MCP.
    Serve(ServeArgs),
    /// Stand between an agent and its MCP tool servers: record results, gate sensitive calls.
    Gateway(GatewayArgs),
}

/// How the server talks to its client.
#[derive(Args, Debug)]
pub struct ListenArgs {
    /// Serve Streamable HTTP on this address (path /mcp) instead of stdio, e.g. 127.0.0.1:8765.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The largest message accepted from the client, in bytes.
    #[arg(long, default_value_t = DEFAULT_MAX_MESSAGE, value_name = "BYTES")]
    max_message_bytes: usize,
}

impl ListenArgs {
    fn listen(&self) -> Listen {
        match self.http {
            Some(a) => Listen::Http(a),
            None => Listen::Stdio,
        }
    }
}

/// `memlineage mcp serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// The principal the agent writes as; the model cannot choose another.
    #[arg(long = "as", default_value = "agent", value_parser = parse_name, value_name = "NAME")]
    principal: memlineage::PrincipalName,
    /// The (trusted) principal of the user's requests, when the client passes them in
    /// `_meta["io.memlineage/user_request"]`.
    #[arg(long, value_parser = parse_name, value_name = "NAME")]
    user: Option<memlineage::PrincipalName>,
    /// The trusted principal that signs session records (default: the store's operator).
    #[arg(long, value_parser = parse_name, value_name = "NAME")]
    recorder: Option<memlineage::PrincipalName>,
    /// The session of requests that name none in `_meta["io.memlineage/session"]`.
    #[arg(long, default_value = "default", value_name = "KEY")]
    session: String,
    /// Write and search in this scope.
    #[arg(long, value_parser = parse_scope)]
    scope: Option<Scope>,
    /// Let `forget` erase content too.
    #[arg(long)]
    allow_erase: bool,
    /// Recall by meaning (`mode` hybrid by default, semantic or lexical): attach the
    /// embedding model all-MiniLM-L6-v2 — `default` (scripts/fetch-embedding-model.sh's
    /// place, or $MEMLINEAGE_EMBEDDING_MODEL) or its directory. A background thread indexes
    /// the log; the index is saved beside the store. Needs the cargo feature `models`.
    #[arg(long, value_name = "default|DIR")]
    embedding_model: Option<PathBuf>,
    #[command(flatten)]
    listen: ListenArgs,
}

/// `memlineage mcp gateway`.
#[derive(Args, Debug)]
pub struct GatewayArgs {
    /// The gateway configuration (TOML; docs/mcp.md).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    /// The session of requests that name none (overrides the configuration's).
    #[arg(long, value_name = "KEY")]
    session: Option<String>,
    #[command(flatten)]
    listen: ListenArgs,
}

/// Runs `memlineage mcp …`.
pub fn run(c: McpCommand, ctx: &Ctx) -> Result<Outcome, CliError> {
    match c {
        McpCommand::Serve(a) => {
            // A long-lived handle: `recall` ranks with the handle's own lexical index, and by
            // meaning with an embedding model indexed in the background.
            let mut mem = open(&ctx.paths)?.with_lexical_index();
            let vectors_saved_in = match &a.embedding_model {
                Some(model) => {
                    let options = memlineage::search::VectorIndexOptions {
                        saved_in: Some(ctx.paths.vectors_dir()),
                        indexing: memlineage::search::VectorIndexing::Background,
                    };
                    mem = mem.with_vector_index(super::embedding_model(model)?, options)?;
                    Some(ctx.paths.vectors_dir())
                }
                None => None,
            };
            let listen = a.listen.listen();
            memlineage_mcp::serve(
                mem,
                ServeOptions {
                    principal: a.principal.to_string(),
                    user: a.user.map(|u| u.to_string()),
                    recorder: a.recorder.map(|r| r.to_string()),
                    session: a.session,
                    scope: a.scope.unwrap_or_default(),
                    listen,
                    max_message: a.listen.max_message_bytes,
                    allow_erase: a.allow_erase,
                    vectors_saved_in,
                },
            )
            .map_err(CliError::failed)?;
            Ok(Outcome::ok(json!({"ok": true}), ""))
        }
        McpCommand::Gateway(a) => {
            let mem = open(&ctx.paths)?;
            let listen = a.listen.listen();
            memlineage_mcp::gateway(
                mem,
                GatewayOptions {
                    config: a.config,
                    listen,
                    max_message: a.listen.max_message_bytes,
                    session: a.session,
                },
            )
            .map_err(CliError::failed)?;
            Ok(Outcome::ok(json!({"ok": true}), ""))
        }
    }
}
