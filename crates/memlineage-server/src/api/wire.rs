//! JSON shapes shared by several routes, and the parsers of ids, weights and labels that turn
//! malformed fields into 400s naming the field.

use crate::error::{ApiError, ApiResult};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use memlineage::EntryView;
use memlineage::memory::InclusionProof;
use memlineage_core::EntryId;
use memlineage_core::label::Weight;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A weight or τ: a decimal in [0, 1] with at most four decimals, as a string (`"0.9"`) or a
/// JSON number (`0.9`); stored as basis points, never rounded.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum WeightIn {
    /// `"0.9"`.
    Text(String),
    /// `0.9`.
    #[schema(value_type = f64)]
    Number(serde_json::Number),
}

impl WeightIn {
    /// The weight, or a 400 naming `field`.
    pub fn parse(&self, field: &str) -> ApiResult<Weight> {
        let text = match self {
            WeightIn::Text(s) => s.clone(),
            WeightIn::Number(n) => n.to_string(),
        };
        text.parse::<Weight>()
            .map_err(|e| ApiError::invalid(format!("`{field}`: {e}")))
    }
}

/// An entry id: 64 lowercase or uppercase hex digits.
pub fn parse_id(s: &str, field: &str) -> ApiResult<EntryId> {
    let t = s.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::invalid(format!(
            "`{field}`: `{}` is not an entry id (expected 64 hexadecimal characters)",
            t.chars().take(80).collect::<String>()
        )));
    }
    t.to_ascii_lowercase()
        .parse::<EntryId>()
        .map_err(|e| ApiError::invalid(format!("`{field}`: {e}")))
}

/// The ids of a list, each parsed.
pub fn parse_ids(ids: &[String], field: &str) -> ApiResult<Vec<EntryId>> {
    ids.iter().map(|s| parse_id(s, field)).collect()
}

/// The result of a write.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct WrittenOut {
    /// The new entry's id.
    pub id: String,
    /// Its leaf index in the log.
    pub index: u64,
    /// Its signed label.
    pub label: String,
}

impl From<&memlineage::Written> for WrittenOut {
    fn from(w: &memlineage::Written) -> WrittenOut {
        WrittenOut {
            id: w.id.to_hex(),
            index: w.index,
            label: w.label.as_str().to_string(),
        }
    }
}

/// A parent edge.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct ParentOut {
    /// The parent's id.
    pub id: String,
    /// The attribution weight.
    pub weight: String,
}

/// An RFC 9162 inclusion proof.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct InclusionOut {
    /// Leaf index.
    pub index: u64,
    /// Tree size the proof is for.
    pub size: u64,
    /// The leaf hash (hex).
    pub leaf_hash: String,
    /// The root of the tree of `size` leaves (hex).
    pub root: String,
    /// The audit path, bottom up (hex).
    pub path: Vec<String>,
}

impl From<&InclusionProof> for InclusionOut {
    fn from(p: &InclusionProof) -> InclusionOut {
        InclusionOut {
            index: p.index,
            size: p.size,
            leaf_hash: p.leaf_hash.0.to_hex(),
            root: p.root.0.to_hex(),
            path: p.path.iter().map(|h| h.0.to_hex()).collect(),
        }
    }
}

/// A whole entry: its signed fields, content and labels.
#[derive(Clone, Debug, Serialize, ToSchema)]
pub struct EntryOut {
    /// The id (SHA-256 of the signed body).
    pub id: String,
    /// Leaf index.
    pub index: u64,
    /// `user_input`, `tool_output`, `observation`, `derived`, `gate_decision`, or a control
    /// kind (`registry`, `tombstone`, `distrust`).
    pub kind: String,
    /// Scope.
    pub scope: String,
    /// The writer principal.
    pub writer: String,
    /// The id of the key that signed it.
    pub key_id: String,
    /// Creation time, ms since the Unix epoch.
    pub created_at_ms: u64,
    /// The content: text when UTF-8 (`content_encoding: "utf8"`), base64 otherwise or for a
    /// control record, null once erased.
    pub content: Option<String>,
    /// `utf8`, `base64`, or null once erased.
    pub content_encoding: Option<String>,
    /// SHA-256 of the content (hex).
    pub content_hash: String,
    /// Content length in bytes.
    pub content_len: u64,
    /// h_src (hex).
    pub source_hash: Option<String>,
    /// h_ctx (hex).
    pub context_hash: Option<String>,
    /// Parents with their weights.
    pub parents: Vec<ParentOut>,
    /// The attribution algorithm that weighed the parents.
    pub attribution: String,
    /// τ of the entry's label rule.
    pub tau: String,
    /// `strict` or `permissive`.
    pub fallback: String,
    /// The label as signed.
    pub label: String,
    /// The label after retroactive distrust (≥ `label`).
    pub effective_label: String,
    /// The tombstone that forgot it.
    pub forgotten_by: Option<String>,
    /// Free metadata, signed.
    pub metadata: BTreeMap<String, String>,
    /// The Ed25519 signature (hex).
    pub signature: String,
}

impl From<&EntryView> for EntryOut {
    fn from(view: &EntryView) -> EntryOut {
        let b = view.entry.body();
        let (content, encoding) = match &view.content {
            None => (None, None),
            Some(c) if b.kind.is_control() => (Some(STANDARD.encode(c)), Some("base64")),
            Some(c) => match std::str::from_utf8(c) {
                Ok(s) => (Some(s.to_string()), Some("utf8")),
                Err(_) => (Some(STANDARD.encode(c)), Some("base64")),
            },
        };
        EntryOut {
            id: view.entry.id().to_hex(),
            index: view.index,
            kind: b.kind.as_str().to_string(),
            scope: b.scope.as_str().to_string(),
            writer: b.writer.clone(),
            key_id: b.key_id.to_hex(),
            created_at_ms: b.created_at_ms,
            content,
            content_encoding: encoding.map(str::to_string),
            content_hash: b.content_hash.to_hex(),
            content_len: b.content_len,
            source_hash: b.source_hash.map(|h| h.to_hex()),
            context_hash: b.context_hash.map(|h| h.to_hex()),
            parents: b
                .parents
                .iter()
                .map(|p| ParentOut {
                    id: p.id.to_hex(),
                    weight: p.weight.to_string(),
                })
                .collect(),
            attribution: b.attribution.clone(),
            tau: b.tau.to_string(),
            fallback: b.fallback.as_str().to_string(),
            label: view.label.as_str().to_string(),
            effective_label: view.effective_label.as_str().to_string(),
            forgotten_by: view.forgotten_by.map(|t| t.to_hex()),
            metadata: b.metadata.clone(),
            signature: hex::encode(view.entry.signature().to_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_ids() {
        assert_eq!(WeightIn::Text("0.9".into()).parse("w").unwrap().bp(), 9000);
        let n: WeightIn = serde_json::from_str("0.25").unwrap();
        assert_eq!(n.parse("w").unwrap().bp(), 2500);
        for bad in ["1.5", "0.12345", "-1", "x"] {
            assert!(WeightIn::Text(bad.into()).parse("w").is_err(), "{bad}");
        }
        assert!(parse_id(&"A".repeat(64), "id").is_ok());
        assert!(parse_id("abc", "id").is_err());
        assert!(parse_id(&"g".repeat(64), "id").is_err());
    }
}
