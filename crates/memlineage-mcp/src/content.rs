//! What the agent reads in a tool result's content blocks, as text to record.
//!
//! Text blocks and embedded text resources are recorded as they are. Images, audio and binary
//! resources cannot be searched for values; they are recorded as a line naming their type and
//! the SHA-256 of their bytes as sent, so the lineage still shows that the agent was shown them
//! and by whom (a value the model reads out of an image has no carrier the gate can trace; the
//! label rule still applies to whatever the agent derives from it).

use rmcp::model::ContentBlock;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The text of one content block as it is recorded.
pub fn block_text(block: &ContentBlock) -> String {
    let Ok(mut v) = serde_json::to_value(block) else {
        return "[a content block that could not be serialised]".to_string();
    };
    if let Some(Value::String(t)) = v.get("text") {
        return t.clone();
    }
    if let Some(Value::String(t)) = v.get("resource").and_then(|r| r.get("text")) {
        return t.clone();
    }
    digest_field(&mut v, "data");
    if let Some(r) = v.get_mut("resource") {
        digest_field(r, "blob");
    }
    // Drop protocol metadata and annotations: they are not shown to the model as content.
    if let Value::Object(m) = &mut v {
        m.remove("_meta");
        m.remove("annotations");
    }
    v.to_string()
}

fn digest_field(v: &mut Value, key: &str) {
    if let Some(Value::String(data)) = v.get(key) {
        let digest = hex::encode(Sha256::digest(data.as_bytes()));
        let len = data.len();
        v[key] = Value::String(format!("<{len} bytes, sha256 {digest}>"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_as_they_are_binaries_by_digest() {
        assert_eq!(
            block_text(&ContentBlock::text("a \"quoted\" line")),
            "a \"quoted\" line"
        );
        assert_eq!(
            block_text(&ContentBlock::embedded_text("file:///x", "inside")),
            "inside"
        );
        let img = block_text(&ContentBlock::image("aGVsbG8=", "image/png"));
        assert!(img.contains("image/png"), "{img}");
        assert!(img.contains("sha256"), "{img}");
        assert!(!img.contains("aGVsbG8="), "{img}");
    }
}
