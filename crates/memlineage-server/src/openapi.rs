//! The OpenAPI 3.1 document, generated from the handlers and their types (utoipa), served at
//! `/openapi.json` and printed by `memlineage serve --openapi`. CI checks it with
//! `openapi-spec-validator`, a validator this project did not write.

use crate::api;
use axum::response::{IntoResponse, Response};
use std::sync::OnceLock;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "MemLineage service",
        description = "Signed, lineage-labelled memory for LLM agents over HTTP: write, read, prove, search, lineage and the sensitive-action gate. Every `/v1` route takes `Authorization: Bearer <token>` (`memlineage token create`). Errors are `{\"error\": {\"status\", \"kind\", \"message\"}}`. See docs/service.md.",
        license(name = "Apache-2.0")
    ),
    paths(
        api::health::healthz,
        api::health::readyz,
        api::health::whoami,
        api::principals::list,
        api::principals::add,
        api::principals::rotate,
        api::principals::revoke,
        api::entries::write,
        api::entries::write_batch,
        api::entries::get,
        api::entries::log,
        api::proofs::inclusion,
        api::proofs::consistency,
        api::proofs::latest_checkpoint,
        api::proofs::sign_checkpoint,
        api::control::forget,
        api::control::distrust,
        api::retrieval::search,
        api::retrieval::search_status,
        api::retrieval::recall,
        api::lineage::lineage,
        api::gate::gate,
        api::verify::start,
        api::verify::status,
    ),
    modifiers(&Bearer, &Descriptions),
    tags(
        (name = "entries", description = "Write and read signed entries"),
        (name = "proofs", description = "RFC 9162 proofs and C2SP checkpoints"),
        (name = "retrieval", description = "Verifier-aware retrieval (paper §M5)"),
        (name = "lineage", description = "Lineage graphs (paper §M4)"),
        (name = "gate", description = "The sensitive-action gate (paper §M6)"),
        (name = "principals", description = "The principal registry"),
        (name = "control", description = "Forget and distrust"),
        (name = "verify", description = "Full audits as background jobs"),
        (name = "health", description = "Liveness, readiness, the caller's grant"),
    )
)]
pub struct ApiDoc;

struct Bearer;

impl Modify for Bearer {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("mlt_<id>_<secret>")
                    .build(),
            ),
        );
    }
}

/// OpenAPI requires a description on every response: a response declared without one gets its
/// status's reason phrase (the error body's schema says the rest).
struct Descriptions;

impl Modify for Descriptions {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        for item in doc.paths.paths.values_mut() {
            let ops = [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in ops.into_iter().flatten() {
                for (status, resp) in op.responses.responses.iter_mut() {
                    if let utoipa::openapi::RefOr::T(r) = resp
                        && r.description.is_empty()
                    {
                        r.description = status
                            .parse::<u16>()
                            .ok()
                            .and_then(|c| axum::http::StatusCode::from_u16(c).ok())
                            .and_then(|c| c.canonical_reason())
                            .unwrap_or("Answer")
                            .to_string();
                    }
                }
            }
        }
    }
}

/// The document as JSON text.
pub fn json() -> &'static str {
    static DOC: OnceLock<String> = OnceLock::new();
    DOC.get_or_init(|| {
        ApiDoc::openapi()
            .to_pretty_json()
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    })
}

/// `GET /openapi.json`.
pub async fn serve() -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        json(),
    )
        .into_response()
}
