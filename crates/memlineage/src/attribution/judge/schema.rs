//! The JSON Schema of a judge reply, for servers that decode under a schema ("structured
//! outputs": OpenAI's `response_format: {"type": "json_schema", …}`, vLLM, llama.cpp).
//!
//! For the envelope ids `p1, p2, …` (in envelope order):
//!
//! ```json
//! {"type":"object",
//!  "properties":{"weights":{"type":"object",
//!                           "properties":{"p1":{"type":"number"},"p2":{"type":"number"}},
//!                           "required":["p1","p2"],"additionalProperties":false}},
//!  "required":["weights"],"additionalProperties":false}
//! ```
//!
//! Exactly the reply [`super::parse::parse_reply`] accepts, except the range: the schema
//! stays inside the subset every strict implementation takes (every property required,
//! `additionalProperties: false`, no numeric bounds — OpenAI's strict mode long refused
//! `minimum`/`maximum`, and llama.cpp's grammar converter ignores them on numbers), and the
//! strict parser rejects a number outside [0, 1] as before. A schema is a decoding aid, never
//! a reason to trust a reply: every reply is still parsed strictly and fails closed.
//!
//! The properties are serialised in envelope order (a hand-written [`Serialize`]; a
//! `serde_json::Value` would sort them), because grammar-based servers emit the keys in
//! schema order, and a small model judges better when the reply follows the parents' order.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// The `name` of the schema in an OpenAI `json_schema` response format.
pub const SCHEMA_NAME: &str = "attribution_weights";

/// The reply schema for the envelope ids `ids` (see the module documentation).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct ReplySchema<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: Outer<'a>,
    required: [&'static str; 1],
    #[serde(rename = "additionalProperties")]
    additional_properties: bool,
}

impl<'a> ReplySchema<'a> {
    /// The schema of a reply naming exactly `ids`.
    pub fn new(ids: &'a [String]) -> ReplySchema<'a> {
        ReplySchema {
            kind: "object",
            properties: Outer {
                weights: Weights {
                    kind: "object",
                    properties: Ids(ids),
                    required: ids,
                    additional_properties: false,
                },
            },
            required: ["weights"],
            additional_properties: false,
        }
    }

    /// The schema as one line of JSON, properties in envelope order.
    pub fn to_json(&self) -> String {
        // Serialising strings and booleans cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }
}

#[derive(Clone, Copy, Debug, Serialize)]
struct Outer<'a> {
    weights: Weights<'a>,
}

#[derive(Clone, Copy, Debug, Serialize)]
struct Weights<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: Ids<'a>,
    required: &'a [String],
    #[serde(rename = "additionalProperties")]
    additional_properties: bool,
}

/// `{"<id>": {"type": "number"}, …}` in the given order.
#[derive(Clone, Copy, Debug)]
struct Ids<'a>(&'a [String]);

#[derive(Serialize)]
struct Number {
    #[serde(rename = "type")]
    kind: &'static str,
}

impl Serialize for Ids<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for id in self.0 {
            map.serialize_entry(id, &Number { kind: "number" })?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_exactly_the_ids_in_order() {
        let ids = vec!["pffff0000".to_string(), "p0000ffff".to_string()];
        let text = ReplySchema::new(&ids).to_json();
        assert_eq!(
            text,
            r#"{"type":"object","properties":{"weights":{"type":"object","properties":{"pffff0000":{"type":"number"},"p0000ffff":{"type":"number"}},"required":["pffff0000","p0000ffff"],"additionalProperties":false}},"required":["weights"],"additionalProperties":false}"#
        );
        // Envelope order, not sorted order.
        assert!(text.find("pffff0000") < text.find("p0000ffff"));
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(v["properties"]["weights"]["required"][1], "p0000ffff");
    }

    #[test]
    fn no_ids_is_an_empty_weights_object() {
        let text = ReplySchema::new(&[]).to_json();
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(
            v["properties"]["weights"]["properties"],
            serde_json::json!({})
        );
        assert_eq!(
            v["properties"]["weights"]["required"],
            serde_json::json!([])
        );
    }
}
