//! The tool call: a name and JSON arguments, parsed from the shapes LLM APIs produce.

use super::error::GateError;
use super::param_type::json_type;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// A tool call as the model produced it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool (function) name.
    pub name: String,
    /// The arguments, a JSON object.
    pub arguments: Map<String, Value>,
}

const CALL_KEYS: [&str; 7] = [
    "name",
    "arguments",
    "input",
    "id",
    "type",
    "call_id",
    "index",
];
const WRAPPER_KEYS: [&str; 4] = ["function", "id", "type", "index"];
const FUNCTION_KEYS: [&str; 2] = ["name", "arguments"];

fn call_err(msg: impl Into<String>) -> GateError {
    GateError::Call(msg.into())
}

fn check_keys(obj: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<(), GateError> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(call_err(format!(
            "unknown key {k:?} in {what} (expected {})",
            allowed.join(", ")
        ))),
        None => Ok(()),
    }
}

impl ToolCall {
    /// A call of `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments,
        }
    }

    /// Parses one tool call from JSON text. Accepted shapes:
    ///
    /// - `{"name": "send_money", "arguments": {...}}` (also with `id`, `type`, `call_id`,
    ///   `index`; `input` instead of `arguments`, as Anthropic's `tool_use` blocks have it);
    /// - the same with `arguments` as a string holding a JSON object, as OpenAI sends it (an
    ///   empty string, or no `arguments` at all, is an empty object);
    /// - OpenAI's wrapper `{"id": ..., "type": "function", "function": {"name": ..., "arguments": ...}}`.
    ///
    /// Duplicate object keys are rejected at any depth: the gate and the tool must not read two
    /// different values from one call.
    pub fn from_openai_json(text: &str) -> Result<ToolCall, GateError> {
        let v = parse_strict(text).map_err(|e| call_err(format!("not valid JSON: {e}")))?;
        ToolCall::from_json_value(v)
    }

    /// As [`from_openai_json`](Self::from_openai_json), from a parsed JSON value.
    pub fn from_json_value(v: Value) -> Result<ToolCall, GateError> {
        let Value::Object(mut obj) = v else {
            return Err(call_err(format!(
                "expected a JSON object with `name` and `arguments`, found {}",
                json_type(&v)
            )));
        };
        if let Some(function) = obj.remove("function") {
            check_keys(&obj, &WRAPPER_KEYS, "the tool call wrapper")?;
            if let Some(t) = obj.get("type")
                && t.as_str() != Some("function")
            {
                return Err(call_err(format!(
                    "the wrapper's `type` must be \"function\", found {t}"
                )));
            }
            let Value::Object(inner) = function else {
                return Err(call_err(format!(
                    "`function` must be an object, found {}",
                    json_type(&function)
                )));
            };
            check_keys(&inner, &FUNCTION_KEYS, "`function`")?;
            obj = inner;
        } else {
            check_keys(&obj, &CALL_KEYS, "the tool call")?;
        }
        let name = match obj.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(Value::String(_)) => return Err(call_err("`name` is empty")),
            Some(other) => {
                return Err(call_err(format!(
                    "`name` must be a string, found {}",
                    json_type(other)
                )));
            }
            None => return Err(call_err("the tool call has no `name`")),
        };
        let args = match (obj.remove("arguments"), obj.remove("input")) {
            (Some(_), Some(_)) => {
                return Err(call_err("the tool call has both `arguments` and `input`"));
            }
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => Value::Object(Map::new()),
        };
        let arguments = match args {
            Value::Object(m) => m,
            Value::String(s) if s.trim().is_empty() => Map::new(),
            Value::String(s) => match parse_strict(&s) {
                Ok(Value::Object(m)) => m,
                Ok(other) => {
                    return Err(call_err(format!(
                        "`arguments` must encode a JSON object, found {}",
                        json_type(&other)
                    )));
                }
                Err(e) => {
                    return Err(call_err(format!(
                        "`arguments` is a string but not valid JSON: {e}"
                    )));
                }
            },
            other => {
                return Err(call_err(format!(
                    "`arguments` must be a JSON object or a string holding one, found {}",
                    json_type(&other)
                )));
            }
        };
        Ok(ToolCall { name, arguments })
    }
}

/// Parses JSON like `serde_json::from_str::<Value>`, but rejects duplicate object keys.
pub(crate) fn parse_strict(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let v = StrictValue.deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

struct StrictValue;

impl<'de> DeserializeSeed<'de> for StrictValue {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Value, E> {
        serde_json::Number::from_f64(n)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut v = Vec::new();
        while let Some(x) = seq.next_element_seed(StrictValue)? {
            v.push(x);
        }
        Ok(Value::Array(v))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut m = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            if m.contains_key(&k) {
                return Err(de::Error::custom(format!("duplicate key {k:?}")));
            }
            let v = map.next_value_seed(StrictValue)?;
            m.insert(k, v);
        }
        Ok(Value::Object(m))
    }
}
