//! Tool arguments read strictly: each expected key with its type, and no other key — a typo or
//! an unexpected argument is an error the model can read, never silently ignored.

use memlineage_core::EntryId;
use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, JsonObject, Tool};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A tool definition with an object schema of `properties`, `required` keys and no others.
pub fn tool(
    name: &'static str,
    description: &'static str,
    properties: Value,
    required: &[&str],
) -> Tool {
    let schema = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    let obj: JsonObject = match schema {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    Tool::new(name, description, Arc::new(obj))
}

/// The request's `_meta`: the params' own, else the one rmcp extracted into the context.
pub fn request_meta(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Map<String, Value>> {
    if let Some(m) = &request.meta
        && !m.0.0.is_empty()
    {
        return Some(m.0.0.clone());
    }
    if context.meta.0.0.is_empty() {
        None
    } else {
        Some(context.meta.0.0.clone())
    }
}

/// The arguments of one call, consumed key by key.
pub struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// The arguments of a call.
    pub fn new(map: Map<String, Value>) -> Args {
        Args { map }
    }

    /// A required string.
    pub fn string(&mut self, key: &str) -> Result<String, String> {
        self.opt_string(key)?
            .ok_or_else(|| format!("missing argument `{key}` (a string)"))
    }

    /// An optional string.
    pub fn opt_string(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "argument `{key}` must be a string, not {}",
                kind(&other)
            )),
        }
    }

    /// An optional integer in `[min, max]`.
    pub fn opt_int(&mut self, key: &str, min: i64, max: i64) -> Result<Option<i64>, String> {
        match self.map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) if (min..=max).contains(&i) => Ok(Some(i)),
                _ => Err(format!(
                    "argument `{key}` must be an integer from {min} to {max}, not {n}"
                )),
            },
            Some(other) => Err(format!(
                "argument `{key}` must be an integer, not {}",
                kind(&other)
            )),
        }
    }

    /// An optional boolean.
    pub fn opt_bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.map.remove(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(format!(
                "argument `{key}` must be true or false, not {}",
                kind(&other)
            )),
        }
    }

    /// A required entry id (64 hexadecimal characters).
    pub fn entry_id(&mut self, key: &str) -> Result<EntryId, String> {
        let s = self.string(key)?;
        s.trim().to_ascii_lowercase().parse::<EntryId>().map_err(|_| {
            format!(
                "argument `{key}` is not an entry id: expected 64 hexadecimal characters, got {:?}",
                s.chars().take(80).collect::<String>()
            )
        })
    }

    /// Fails if any argument was not read.
    pub fn done(&self) -> Result<(), String> {
        match self.map.keys().next() {
            None => Ok(()),
            Some(k) => Err(format!(
                "unexpected argument `{}`",
                k.chars().take(80).collect::<String>()
            )),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
