//! `memlineage mcp gateway`: an MCP server to the agent and an MCP client to each configured
//! downstream server, with MemLineage in between.
//!
//! For every session (`sessions.rs`) the gateway
//!
//! - lists the downstream tools as its own, named `SERVER__TOOL`, and records each server's
//!   tool list as an entry of that server's principal (the agent reads the descriptions);
//! - records each tool result before the agent sees it, each author's part as an entry of that
//!   author (`authors.rs`), and keeps what the agent has seen as the context of its next calls;
//! - gates every call of a tool its server's policy names (paper §M6) against that context:
//!   a deny is returned as a tool error with the reason and lineage path and the call is not
//!   forwarded; a repair forwards the repaired arguments; every decision is in the log;
//! - fails closed: a call the gate cannot judge is not forwarded, and a result that cannot be
//!   recorded is not shown.
//!
//! The gateway's own messages (a denial, a repair note) are not recorded as something the agent
//! saw: they quote the offending value, and a trusted-looking copy of it would justify it.

pub mod config;
pub mod downstream;
mod record;

use crate::handle::{self, Judged};
use crate::sessions::Sessions;
use crate::tool_args::request_meta;
use config::{GatewayConfig, SEPARATOR};
use downstream::{CallError, Downstream};
use memlineage_core::gate::ToolCall;
use memlineage_core::label::TrustClass;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ResultType, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// `_meta` key of a result: the ids of the entries that recorded it.
pub const RECORDED_KEY: &str = "io.memlineage/recorded";
/// `_meta` key of a result or error: the gate's decision on the call, as logged.
pub const DECISION_KEY: &str = "io.memlineage/decision";

struct State {
    sessions: Arc<Sessions>,
    servers: Vec<Downstream>,
    classes: BTreeMap<String, TrustClass>,
    max_result: usize,
}

/// The gateway: cheap to clone, one per HTTP session, all sharing one state.
#[derive(Clone)]
pub struct Gateway {
    state: Arc<State>,
}

impl Gateway {
    /// A gateway over `sessions` for the servers of `config`; `classes` holds the trust class
    /// of every principal the configuration names.
    pub fn new(
        sessions: Arc<Sessions>,
        config: &GatewayConfig,
        classes: BTreeMap<String, TrustClass>,
    ) -> Gateway {
        Gateway {
            state: Arc::new(State {
                sessions,
                servers: config
                    .servers
                    .iter()
                    .map(|s| Downstream::new(Arc::new(s.clone())))
                    .collect(),
                classes,
                max_result: config.max_result_bytes,
            }),
        }
    }

    fn route(&self, name: &str) -> Option<(&Downstream, String)> {
        let (server, tool) = name.split_once(SEPARATOR)?;
        let ds = self.state.servers.iter().find(|d| d.spec.name == server)?;
        (!tool.is_empty()).then(|| (ds, tool.to_string()))
    }

    fn class_of(&self, principal: &str) -> TrustClass {
        // Unknown principals cannot occur (all are checked at start-up); count them external.
        self.state
            .classes
            .get(principal)
            .copied()
            .unwrap_or(TrustClass::External)
    }

    async fn gate(
        &self,
        ds: &Downstream,
        tool: &str,
        arguments: &Map<String, Value>,
        context: handle::SeenContext,
    ) -> Result<Option<Judged>, String> {
        let Some(policy) = ds.spec.policy.clone() else {
            return Ok(None);
        };
        if !policy.is_sensitive(tool) {
            return Ok(None);
        }
        let call = ToolCall::new(tool, arguments.clone());
        let recorder = self.state.sessions.recorder().to_string();
        let scope = self.state.sessions.scope().clone();
        let repair = ds.spec.repair;
        handle::blocking(self.state.sessions.mem(), move |mem| {
            handle::gate(mem, &policy, call, context, &recorder, &scope, repair)
        })
        .await
        .map(Some)
        .map_err(|e| e.0)
    }
}

fn tool_error(text: String, meta: Option<Map<String, Value>>) -> CallToolResponse {
    let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
    r.meta = meta.map(MetaObject);
    r.into()
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "memlineage-gateway",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Tools of several servers behind MemLineage: results are recorded with their authors, sensitive calls are checked against where their arguments came from, and a denied call says why.",
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let meta = request
            .as_ref()
            .and_then(|r| r.meta.as_ref())
            .map(|m| m.0.0.clone())
            .filter(|m| !m.is_empty())
            .or_else(|| (!context.meta.0.0.is_empty()).then(|| context.meta.0.0.clone()));
        let session = self
            .state
            .sessions
            .session(meta.as_ref())
            .await
            .map_err(|e| McpError::invalid_params(e, None))?;
        let mut tools: Vec<Tool> = Vec::new();
        let mut listings = Vec::new();
        for ds in &self.state.servers {
            match ds.list_tools().await {
                Ok(list) => {
                    listings.extend(record::listing_text(
                        &ds.spec.name,
                        &ds.spec.principal,
                        &list,
                    ));
                    for mut t in list {
                        t.name = format!("{}{SEPARATOR}{}", ds.spec.name, t.name).into();
                        tools.push(t);
                    }
                }
                Err(e) => tracing::warn!("{e}"),
            }
        }
        let mut s = session.lock().await;
        self.state
            .sessions
            .show_texts(&mut s, listings, None)
            .await
            .map_err(|e| {
                McpError::internal_error(
                    format!("the tool list could not be recorded, so it is not shown: {e}"),
                    None,
                )
            })?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let Some((ds, tool)) = self.route(&name) else {
            let servers: Vec<&str> = self
                .state
                .servers
                .iter()
                .map(|d| d.spec.name.as_str())
                .collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool `{}`: the gateway's tools are named SERVER{SEPARATOR}TOOL, with SERVER one of {} (see tools/list)",
                    name.chars().take(128).collect::<String>(),
                    servers.join(", ")
                ),
                None,
            ));
        };
        let meta = request_meta(&request, &context);
        let sessions = &self.state.sessions;
        let session = sessions
            .session(meta.as_ref())
            .await
            .map_err(|e| McpError::invalid_params(e, None))?;
        let seen = {
            let mut s = session.lock().await;
            if let Err(e) = sessions.user_request(&mut s, meta.as_ref()).await {
                return Ok(tool_error(format!("{name}: not forwarded: {e}"), None));
            }
            handle::SeenContext {
                ids: s.seen().to_vec(),
                sources: s.sources_of(s.seen()),
            }
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        let judged = match self.gate(ds, &tool, &arguments, seen).await {
            Ok(j) => j,
            Err(e) => {
                return Ok(tool_error(
                    format!(
                        "{name}: the gate could not judge this call, so it was not forwarded: {e}"
                    ),
                    None,
                ));
            }
        };
        let mut result_meta = Map::new();
        let mut notes = Vec::new();
        let mut forward = arguments;
        if let Some(j) = &judged {
            let decision = json!({"decision": j.json, "record": j.record});
            if !j.dispatched {
                let mut m = Map::new();
                m.insert(DECISION_KEY.into(), decision);
                let verdict = if j.decision == "confirm" {
                    // Not a dispatch: the user must approve the call first (docs/gate.md,
                    // "Confirm"); the agent asks them, and makes the call again once they have.
                    "needs the user's confirmation: its values come from a document the user's request names, so ask the user to approve this call (show them the values and where they come from) before making it again; it was not forwarded"
                } else {
                    "denied by the MemLineage gate; the call was not forwarded"
                };
                return Ok(tool_error(
                    format!("{name}: {verdict}.\n{}\nlogged as {}", j.text, j.record),
                    Some(m),
                ));
            }
            if j.decision == "repair" {
                notes.push(format!(
                    "MemLineage gate: the call was repaired before it was forwarded.\n{}\nlogged as {}",
                    j.text, j.record
                ));
            }
            forward = j.arguments.clone();
            result_meta.insert(DECISION_KEY.into(), decision);
        }
        // The document the result is read from: the configured argument of the call as it
        // is forwarded (a repaired call reads what its repaired arguments name).
        let source = ds
            .spec
            .source_arg(&tool)
            .and_then(|arg| forward.get(arg))
            .and_then(Value::as_str)
            .map(str::to_string);
        let params = CallToolRequestParams::new(tool.clone()).with_arguments(forward);
        let mut result = match ds.call(params, &context.ct).await {
            Ok(r) => r,
            Err(CallError::Cancelled) => {
                return Err(McpError::internal_error(
                    "the call was cancelled by the client",
                    None,
                ));
            }
            Err(CallError::Failed(e)) => return Ok(tool_error(format!("{name}: {e}"), None)),
        };
        let size = serde_json::to_vec(&result).map_or(usize::MAX, |v| v.len());
        if size > self.state.max_result {
            return Ok(tool_error(
                format!(
                    "{name}: the result is {size} bytes, over the gateway's limit of {} bytes (max_result_bytes); it is not shown",
                    self.state.max_result
                ),
                None,
            ));
        }
        let texts = record::result_texts(
            &ds.spec.name,
            &tool,
            &ds.spec.authors(&tool),
            &result,
            |p| self.class_of(p),
        );
        let ids = {
            let mut s = session.lock().await;
            match sessions.show_texts(&mut s, texts, source.as_deref()).await {
                Ok(ids) => ids,
                Err(e) => {
                    return Ok(tool_error(
                        format!(
                            "{name}: the result could not be recorded, so it is not shown: {e}"
                        ),
                        None,
                    ));
                }
            }
        };
        result_meta.insert(RECORDED_KEY.into(), json!(ids));
        // The downstream may speak an older revision, without `resultType`; the agent may
        // speak 2026-07-28, where it is required (rmcp drops it again for older agents).
        result.result_type = Some(ResultType::COMPLETE);
        let mut meta = result.meta.take().map(|m| m.0).unwrap_or_default();
        meta.extend(result_meta);
        result.meta = Some(MetaObject(meta));
        for n in notes {
            result.content.push(ContentBlock::text(n));
        }
        Ok(result.into())
    }
}
