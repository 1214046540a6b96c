//! Lineage (paper §M4): the ancestors or descendants of an entry, with every edge's weight,
//! strong edges marked, and why the entry has its label — as JSON, Graphviz DOT, Mermaid or
//! text. Nodes outside the token's scopes keep their id, label and writer (what the gate's
//! reasons name too) but not their content.

use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, ApiQuery};
use crate::state::AppState;
use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use memlineage::Direction;
use memlineage_core::render::lineage as fmt;
use serde::Deserialize;
use utoipa::IntoParams;

/// What a hidden node's snippet reads.
const HIDDEN: &str = "(outside this token's scopes)";

/// The deepest walk a request may ask for.
const MAX_DEPTH: usize = 64;

/// `GET /v1/entries/{id}/lineage` parameters.
#[derive(Clone, Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct LineageQuery {
    /// `json` (default), `dot`, `mermaid` or `text`.
    pub format: Option<String>,
    /// `ancestors` (default) or `descendants`.
    pub direction: Option<String>,
    /// How many edges away to go (default 16, at most 64).
    pub depth: Option<usize>,
}

/// The lineage graph of an entry within the token's scopes.
#[utoipa::path(get, path = "/v1/entries/{id}/lineage", tag = "lineage",
    params(("id" = String, Path, description = "entry id: 64 hex, or a unique prefix of at least 8 within the token's scopes"), LineageQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "the graph: JSON, or DOT / Mermaid / text", content(
            (Object = "application/json"),
            (String = "text/vnd.graphviz"),
            (String = "text/plain"))),
        (status = 400, body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, body = crate::error::ErrorBody)))]
pub async fn lineage(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<LineageQuery>,
) -> ApiResult<Response> {
    let id = super::path_id::resolve(&state, &caller, &id).await?;
    let format = q.format.unwrap_or_else(|| "json".into());
    if !matches!(format.as_str(), "json" | "dot" | "mermaid" | "text") {
        return Err(ApiError::invalid(format!(
            "`format`: `{}` is not one of json, dot, mermaid, text",
            format.chars().take(40).collect::<String>()
        )));
    }
    let direction = match q.direction.as_deref() {
        None | Some("ancestors") => Direction::Ancestors,
        Some("descendants") => Direction::Descendants,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`direction`: `{}` is not ancestors or descendants",
                other.chars().take(40).collect::<String>()
            )));
        }
    };
    let depth = q.depth.unwrap_or(16);
    if depth > MAX_DEPTH {
        return Err(ApiError::invalid(format!("`depth` is at most {MAX_DEPTH}")));
    }
    let graph = state
        .read(move |mem| {
            match mem.get(&id) {
                Ok(v) if caller.may_read(&v.entry.body().scope) => {}
                Ok(_) | Err(memlineage::Error::NotFound(_)) => return Err(caller.hidden(&id)),
                Err(e) => return Err(e.into()),
            }
            let mut g = mem.lineage(&id, direction, depth)?;
            if !caller.is_operator() {
                for node in &mut g.nodes {
                    let visible = match mem.get(&node.id) {
                        Ok(v) => caller.may_read(&v.entry.body().scope),
                        Err(_) => false,
                    };
                    if !visible {
                        node.snippet = HIDDEN.to_string();
                    }
                }
            }
            Ok(g)
        })
        .await?;
    let resp = match format.as_str() {
        "json" => axum::Json(fmt::to_json(&graph)).into_response(),
        "dot" => ([(CONTENT_TYPE, "text/vnd.graphviz")], fmt::to_dot(&graph)).into_response(),
        "mermaid" => (
            [(CONTENT_TYPE, "text/plain; charset=utf-8")],
            fmt::to_mermaid(&graph),
        )
            .into_response(),
        _ => (
            [(CONTENT_TYPE, "text/plain; charset=utf-8")],
            fmt::to_text(&graph),
        )
            .into_response(),
    };
    Ok(resp)
}
