//! The strict parser of judge replies.
//!
//! Accepted, and nothing else:
//!
//! ```text
//! reply  = ws [ fence-open ws ] object ws [ fence-close ws ]
//! object = {"weights": {ID: number, ...}}       exactly one key, "weights"
//! ```
//!
//! * the `weights` object has exactly the expected ids, each once (a duplicate key is an error,
//!   not "last one wins");
//! * each value is a JSON number (not a string, `null` or `true`) in [0, 1]; `NaN` and
//!   `Infinity` are not JSON and fail;
//! * `fence-open` is ```` ```json ```` or ```` ``` ```` on its own line, and `fence-close` is
//!   ```` ``` ````, both or neither;
//! * anything else before or after the object — prose, a second object, a second fence — fails.

use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// Why a reply was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("judge reply rejected: {0}")]
pub struct ReplyError(pub String);

/// Parses `reply` and returns one weight per expected id, in the order of `ids`.
pub fn parse_reply(reply: &str, ids: &[String]) -> Result<Vec<f64>, ReplyError> {
    let body = strip_fence(reply.trim())?;
    let parsed: Reply =
        serde_json::from_str(body).map_err(|e| ReplyError(format!("not the reply schema: {e}")))?;
    let mut weights = parsed.0;
    let mut out = Vec::with_capacity(ids.len());
    let mut missing = Vec::new();
    for id in ids {
        match weights.remove(id) {
            Some(w) => out.push(w),
            None => missing.push(id.clone()),
        }
    }
    if !missing.is_empty() || !weights.is_empty() {
        let extra: Vec<&String> = weights.keys().collect();
        return Err(ReplyError(format!(
            "ids do not match the envelope (missing {missing:?}, unexpected {})",
            shorten(&format!("{extra:?}"))
        )));
    }
    Ok(out)
}

/// Strips one Markdown code fence, if the reply is fenced.
fn strip_fence(s: &str) -> Result<&str, ReplyError> {
    if !s.starts_with("```") {
        return Ok(s);
    }
    let (first, rest) = s
        .split_once('\n')
        .ok_or_else(|| ReplyError("unterminated code fence".into()))?;
    if first.trim_end() != "```json" && first.trim_end() != "```" {
        return Err(ReplyError(format!(
            "unexpected code fence {}",
            shorten(first)
        )));
    }
    let inner = rest
        .trim_end()
        .strip_suffix("```")
        .ok_or_else(|| ReplyError("unterminated code fence".into()))?;
    Ok(inner.trim())
}

fn shorten(s: &str) -> String {
    let mut out: String = s.chars().take(60).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// `{"weights": {...}}` with exactly that one key.
struct Reply(BTreeMap<String, f64>);

impl<'de> de::Deserialize<'de> for Reply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(ReplyVisitor)
    }
}

struct ReplyVisitor;

impl<'de> Visitor<'de> for ReplyVisitor {
    type Value = Reply;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(r#"an object {"weights": {...}}"#)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Reply, A::Error> {
        let mut weights = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != "weights" {
                return Err(de::Error::custom(format!(
                    "unexpected key {}",
                    shorten(&format!("{key:?}"))
                )));
            }
            if weights.is_some() {
                return Err(de::Error::custom("duplicate key \"weights\""));
            }
            weights = Some(map.next_value::<Weights>()?.0);
        }
        weights
            .map(Reply)
            .ok_or_else(|| de::Error::custom("missing key \"weights\""))
    }
}

/// `{ID: number in [0,1], ...}` with no duplicate id.
struct Weights(BTreeMap<String, f64>);

impl<'de> de::Deserialize<'de> for Weights {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(WeightsVisitor)
    }
}

struct WeightsVisitor;

impl<'de> Visitor<'de> for WeightsVisitor {
    type Value = Weights;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of id: number")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Weights, A::Error> {
        let mut out = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            // `Number` accepts JSON numbers only: a string, bool or null is an error.
            let n: serde_json::Number = map.next_value()?;
            let w = n
                .as_f64()
                .ok_or_else(|| de::Error::custom("weight is not a finite number"))?;
            if !w.is_finite() || !(0.0..=1.0).contains(&w) {
                return Err(de::Error::custom(format!("weight {n} is outside [0, 1]")));
            }
            if out.insert(key.clone(), w).is_some() {
                return Err(de::Error::custom(format!(
                    "duplicate id {}",
                    shorten(&format!("{key:?}"))
                )));
            }
        }
        Ok(Weights(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> Vec<String> {
        vec!["pa1b2c3d4".into(), "p00ff00ff".into()]
    }

    #[test]
    fn accepts_the_schema_in_id_order() {
        let r = r#"{"weights": {"p00ff00ff": 0.25, "pa1b2c3d4": 1}}"#;
        assert_eq!(parse_reply(r, &ids()), Ok(vec![1.0, 0.25]));
        let r = "  \n```json\n{\"weights\":{\"pa1b2c3d4\":0,\"p00ff00ff\":1e-1}}\n```\n ";
        assert_eq!(parse_reply(r, &ids()), Ok(vec![0.0, 0.1]));
        let r = "```\n{\"weights\":{\"pa1b2c3d4\":0.5,\"p00ff00ff\":1.0}}```";
        assert_eq!(parse_reply(r, &ids()), Ok(vec![0.5, 1.0]));
        assert_eq!(parse_reply(r#"{"weights":{}}"#, &[]), Ok(vec![]));
    }

    #[test]
    fn rejects_everything_else() {
        for bad in [
            "",
            "0.5",
            "[]",
            r#"{}"#,
            r#"{"weights": {"pa1b2c3d4": 1}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 1, "pdeadbeef": 0}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 1.5}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": -0.1}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": NaN}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": Infinity}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 1e400}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": "0.5"}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": null}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": true}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": [0]}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0, "p00ff00ff": 1}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0}, "note": "x"}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0}, "weights": {}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0}} Hope this helps!"#,
            r#"Sure: {"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0}}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0}}{"weights": {}}"#,
            r#"{"weights": [1, 0]}"#,
            r#"{"weights": {"pa1b2c3d4": 1, "p00ff00ff": 0,}}"#,
            "```python\n{\"weights\": {\"pa1b2c3d4\": 1, \"p00ff00ff\": 0}}\n```",
            "```json\n{\"weights\": {\"pa1b2c3d4\": 1, \"p00ff00ff\": 0}}",
            "```json\n{\"weights\": {\"pa1b2c3d4\": 1, \"p00ff00ff\": 0}}\n```\nmore",
            "```json\n```json\n{\"weights\": {\"pa1b2c3d4\": 1, \"p00ff00ff\": 0}}\n```\n```",
        ] {
            assert!(parse_reply(bad, &ids()).is_err(), "accepted {bad:?}");
        }
    }
}
