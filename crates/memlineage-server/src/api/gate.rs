//! The sensitive-action gate (paper §M6): may this tool call be dispatched? The decision —
//! allow, deny (with the offending entry and its lineage path), or repair (the arguments
//! replaced by values of trusted provenance) — is answered once its signed `gate_decision`
//! record is durable in the log, group-committed with other requests' writes.
//!
//! Policies, calls and decisions pass through as JSON the library defines (`docs/gate.md`):
//! the service adds no schema of its own to them, so the gate can grow without the service
//! changing.

use super::wire::{WeightIn, WrittenOut, parse_id, parse_ids};
use crate::auth::Caller;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::state::AppState;
use axum::extract::State;
use memlineage::GateRequest;
use memlineage_core::gate::ToolCall;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// `POST /v1/gate`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GateBody {
    /// The policy as TOML text (`docs/gate.md`). Give this or `policy_name`.
    pub policy: Option<String>,
    /// A policy the service was started with (`memlineage serve --policy NAME=FILE`).
    pub policy_name: Option<String>,
    /// The tool call as the model produced it: `{"name": …, "arguments": {…}}` (OpenAI's
    /// wrapper and Anthropic's `input` are accepted too).
    #[schema(value_type = Object)]
    pub call: serde_json::Value,
    /// The entries in the prompt, the user's request included, in prompt order; within the
    /// token's scopes.
    pub context: Vec<String>,
    /// Explicit citations: parameter → ids of context entries.
    #[serde(default)]
    pub citations: BTreeMap<String, Vec<String>>,
    /// Attribution weights the caller computed: parameter → context entries with weights.
    #[serde(default)]
    pub attribution: BTreeMap<String, Vec<AttributedIn>>,
    /// Where context entries were read from, as the agent that made the tool calls recorded
    /// it: entry id → the document's name (the tool call's argument that named it). A call
    /// denied only by values from a document the user's trusted request names is then a
    /// `confirm`, when the policy allows it (`docs/gate.md`, "Confirm"). Every id must be in
    /// `context`.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Repair a call that would be denied with values of trusted provenance.
    #[serde(default)]
    pub repair: bool,
    /// The query for repair candidates from the store (default: the user's request).
    pub repair_query: Option<String>,
    /// The scope of the repair search and of the decision record (default: the token's first
    /// scope); within the token's scopes.
    pub scope: Option<String>,
}

/// One attributed context entry.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AttributedIn {
    /// The context entry.
    pub id: String,
    /// Its weight in [0, 1].
    pub weight: WeightIn,
}

/// The decision, as the library serialises it, and its log record.
/// (Written by [`answer`] from the record's decision bytes; this type is its schema and the
/// reference its test compares with.)
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct GateOut {
    /// `decision` (allow, deny, repair, confirm), `tool`, `mode`, `dispatched`, `summary`,
    /// `reasons`, `arguments` (to dispatch), `repairs`, and for a confirm `confirm` (per failing
    /// value: `param`, `carrier`, `source`, `document`, `named_by`, `path`) — see `docs/gate.md`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub decision: serde_json::Value,
    /// The id of the signed `gate_decision` entry.
    pub record: String,
    /// The record's index, id and label.
    pub record_entry: WrittenOut,
}

/// Decide whether a tool call may be dispatched; the decision is logged before it is answered.
#[utoipa::path(post, path = "/v1/gate", tag = "gate", request_body = GateBody,
    security(("bearer" = [])),
    responses((status = 200, body = GateOut, description = "allow, deny, repair or confirm (a deny is an answer, not an error; a confirm is not dispatched until the user approves)"),
        (status = 400, body = crate::error::ErrorBody), (status = 404, body = crate::error::ErrorBody),
        (status = 422, body = crate::error::ErrorBody, description = "the call cannot be judged: do not dispatch it")))]
pub async fn gate(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<GateBody>,
) -> ApiResult<axum::response::Response> {
    // Taken first: the decision never uses a look at the log older than this request.
    let ticket = state.gate_ticket();
    let policy = match (&body.policy, &body.policy_name) {
        (Some(text), None) => state.policies.inline(text).map_err(ApiError::invalid)?,
        (None, Some(name)) => state.policies.named(name).ok_or_else(|| {
            ApiError::invalid(format!(
                "no policy named `{}` (this service has: {})",
                name.chars().take(64).collect::<String>(),
                state.policies.names().join(", ")
            ))
        })?,
        _ => {
            return Err(ApiError::invalid(
                "give exactly one of `policy` (TOML text) and `policy_name`",
            ));
        }
    };
    let call = ToolCall::from_json_value(body.call).map_err(|e| {
        ApiError::new(
            axum::http::StatusCode::UNPROCESSABLE_ENTITY,
            "cannot_judge",
            format!("`call`: {e}; do not dispatch it"),
        )
    })?;
    if body.context.is_empty() || body.context.len() > state.limits.max_ids {
        return Err(ApiError::invalid(format!(
            "`context` must name 1 to {} entries (the prompt's entries, the user's request included)",
            state.limits.max_ids
        )));
    }
    if let Some(q) = &body.repair_query
        && q.len() > state.limits.max_query_bytes
    {
        return Err(ApiError::limit(format!(
            "`repair_query` is {} bytes: this service takes at most {}",
            q.len(),
            state.limits.max_query_bytes
        )));
    }
    let context = parse_ids(&body.context, "context")?;
    let mut citations = BTreeMap::new();
    for (param, ids) in &body.citations {
        citations.insert(param.clone(), parse_ids(ids, "citations")?);
    }
    let mut attribution = BTreeMap::new();
    for (param, items) in &body.attribution {
        let mut v = Vec::with_capacity(items.len());
        for a in items {
            v.push((
                parse_id(&a.id, "attribution")?,
                a.weight.parse("attribution")?,
            ));
        }
        attribution.insert(param.clone(), v);
    }
    if body.sources.len() > state.limits.max_ids {
        return Err(ApiError::invalid(format!(
            "`sources` names {} entries: this service takes at most {}",
            body.sources.len(),
            state.limits.max_ids
        )));
    }
    let mut sources = BTreeMap::new();
    for (id, document) in &body.sources {
        if document.len() > state.limits.max_query_bytes {
            return Err(ApiError::limit(format!(
                "a document name in `sources` is {} bytes: this service takes at most {}",
                document.len(),
                state.limits.max_query_bytes
            )));
        }
        sources.insert(parse_id(id, "sources")?, document.clone());
    }
    let scope = caller.scope_for_write(body.scope.as_deref())?;
    // The decision record is signed by the token's principal, and the library accepts
    // `gate_decision` records from trusted principals only: refuse before deciding.
    if state.class_of(caller.principal()).await? != memlineage_core::label::TrustClass::Trusted {
        return Err(ApiError::forbidden(format!(
            "principal `{}` is external: gate decisions are recorded by a trusted principal (the agent that dispatches the call); use a token of that principal",
            caller.principal()
        )));
    }
    let mut req = GateRequest::new(call, context, caller.principal());
    req.citations = citations;
    req.attribution = attribution;
    req.sources = sources;
    req.repair = body.repair;
    req.repair_query = body.repair_query;
    req.scope = scope;
    req.readable = caller.readable_scopes();
    // A token never gates on entries outside its scopes: every context entry must be readable
    // with it, checked before anything is decided — from the scopes the service remembers, or
    // else on the library thread, before the decision. Citations, attribution weights and
    // sources may only name context entries (the gate refuses any other as a call it cannot
    // judge), so this covers them too.
    let remembered = super::entries::readable_remembered(&state, &caller, &req.context)?;
    // Two decisions on the same call and context by the same principal in the same
    // millisecond would be the same signed entry (the same id): each decision is an event of
    // its own, so its record names the service request that made it.
    let arrival = Arrival {
        tag: state.next_request_tag(),
        ticket,
    };
    let way = state.on_its_way();
    let ((decision_json, decision), written) = state
        .sign_and_write(way, move |state, mem| {
            decide_and_sign(state, mem, &caller, remembered, &policy, &req, &arrival)
        })
        .await?;
    let kind = decision.as_str();
    let w = written
        .first()
        .ok_or_else(|| ApiError::internal("the decision record was not written"))?;
    metrics::counter!("memlineage_gate_decisions_total", "decision" => kind).increment(1);
    answer(&decision_json, &w.id.to_hex(), &WrittenOut::from(w))
}

/// The answer, a [`GateOut`], written from the decision's JSON as its record holds it (an
/// object with sorted keys) instead of encoding the decision again: the object's members,
/// then `record` and `record_entry` — the bytes `GateOut`'s own serialisation writes.
fn answer(
    decision: &serde_json::value::RawValue,
    record: &str,
    entry: &WrittenOut,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let members = decision
        .get()
        .strip_prefix('{')
        .and_then(|d| d.strip_suffix('}'))
        .ok_or_else(|| ApiError::internal("the decision is not a JSON object"))?;
    let encode = |e: serde_json::Error| ApiError::internal(format!("the answer: {e}"));
    let record = serde_json::to_string(record).map_err(encode)?;
    let entry = serde_json::to_string(entry).map_err(encode)?;
    let mut body = String::with_capacity(members.len() + record.len() + entry.len() + 32);
    body.push('{');
    body.push_str(members);
    if !members.is_empty() {
        body.push(',');
    }
    body.push_str("\"record\":");
    body.push_str(&record);
    body.push_str(",\"record_entry\":");
    body.push_str(&entry);
    body.push('}');
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            axum::http::HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response())
}

/// When a gate request arrived: the tag its record carries and its ticket for the gate's
/// shared look at the log.
struct Arrival {
    tag: String,
    ticket: memlineage::GateTicket,
}

/// The decision and its record, labelled and signed (on a library thread): the scope check of
/// context entries the service has not seen yet, then [`memlineage::Memory::gate_record_after`].
fn decide_and_sign(
    state: &AppState,
    mem: &crate::state::Mem,
    caller: &Caller,
    remembered: bool,
    policy: &memlineage_core::gate::Policy,
    req: &GateRequest,
    arrival: &Arrival,
) -> ApiResult<(
    (
        Box<serde_json::value::RawValue>,
        memlineage_core::gate::Decision,
    ),
    memlineage::SignedWrites,
)> {
    if !remembered {
        super::entries::readable_in(mem, &state.entry_scopes, caller, &req.context)?;
    }
    // The record is labelled and signed here, beside the decision, so that the committer
    // thread only appends it.
    let decided = mem
        .gate_record_after(policy, req, arrival.ticket)
        .and_then(|d| {
            let record = d.record.with_meta("request", &arrival.tag);
            mem.sign_writes(vec![record])
                .map(|signed| ((d.decision_json, d.decision), signed))
        });
    decided.map_err(|e| {
        metrics::counter!("memlineage_gate_decisions_total", "decision" => "error").increment(1);
        match e {
            memlineage::Error::Gate(g) => ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "cannot_judge",
                format!("the call cannot be judged: {g}; do not dispatch it"),
            ),
            other => other.into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_answer_is_the_gate_out_of_the_decision() {
        let decision = serde_json::json!({"arguments": {"a": "\u{202e}x", "b": [1.5, null]},
            "decision": "deny", "dispatched": false, "reasons": [{"message": "\"q\"\n"}],
            "summary": "é", "tool": "send_money"});
        let raw = serde_json::value::RawValue::from_string(decision.to_string()).expect("raw");
        let entry = WrittenOut {
            id: "ab".repeat(32),
            index: 7,
            label: "TRUSTED".into(),
        };
        let made = answer(&raw, &"cd".repeat(32), &entry).expect("answer");
        assert_eq!(
            made.headers().get(axum::http::header::CONTENT_TYPE),
            Some(&axum::http::HeaderValue::from_static("application/json"))
        );
        let body = axum::body::to_bytes(made.into_body(), usize::MAX)
            .await
            .expect("body");
        let expected = serde_json::to_string(&GateOut {
            decision,
            record: "cd".repeat(32),
            record_entry: entry,
        })
        .expect("encoded");
        assert_eq!(String::from_utf8(body.to_vec()).expect("utf-8"), expected);
        // Not an object: an error, not a malformed answer.
        let not_object = serde_json::value::RawValue::from_string("[1]".into()).expect("raw");
        assert!(
            answer(
                &not_object,
                "x",
                &WrittenOut {
                    id: String::new(),
                    index: 0,
                    label: String::new()
                }
            )
            .is_err()
        );
    }
}
