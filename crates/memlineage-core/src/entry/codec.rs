//! The canonical CBOR form of an entry body and of the signed leaf (`docs/formats.md`).

use super::fields::{Fields, map, opt_hash_value};
use super::{EntryBody, EntryError, EntryKind, FORMAT_VERSION, Parent, Scope, field_err, limits};
use crate::canonical::Value;
use crate::hash::{EntryId, Hash256};
use crate::label::{Fallback, TrustLabel, Weight};
use std::collections::BTreeMap;

impl EntryBody {
    /// The body as a CBOR value (all fields always present; absent hashes are null).
    pub fn to_value(&self) -> Value {
        let parents = self
            .parents
            .iter()
            .map(|p| {
                Value::Array(vec![
                    Value::Bytes(p.id.as_bytes().to_vec()),
                    Value::Uint(u64::from(p.weight.bp())),
                ])
            })
            .collect();
        let meta = self
            .metadata
            .iter()
            .map(|(k, v)| (Value::Text(k.clone()), Value::Text(v.clone())))
            .collect();
        map(vec![
            ("v", Value::Uint(FORMAT_VERSION)),
            ("scope", Value::Text(self.scope.as_str().to_string())),
            ("writer", Value::Text(self.writer.clone())),
            ("key", Value::Bytes(self.key_id.0.to_vec())),
            ("kind", Value::Text(self.kind.as_str().to_string())),
            ("content", Value::Bytes(self.content_hash.0.to_vec())),
            ("len", Value::Uint(self.content_len)),
            ("src", opt_hash_value(self.source_hash)),
            ("ctx", opt_hash_value(self.context_hash)),
            ("parents", Value::Array(parents)),
            ("attr", Value::Text(self.attribution.clone())),
            ("tau", Value::Uint(u64::from(self.tau.bp()))),
            ("fallback", Value::Text(self.fallback.as_str().to_string())),
            ("label", Value::Text(self.label.as_str().to_string())),
            ("time", Value::Uint(self.created_at_ms)),
            ("meta", Value::Map(meta)),
        ])
    }

    /// Reads a body from a decoded value, strictly: every field present, no unknown field,
    /// the version understood, parents sorted and unique.
    pub fn from_value(value: &Value) -> Result<EntryBody, EntryError> {
        let mut f = Fields::new("entry body", value)?;
        let version = f.uint("v")?;
        if version != FORMAT_VERSION {
            return Err(EntryError::UnknownVersion(version));
        }
        let scope = Scope::new(f.text("scope")?).map_err(|e| field_err("scope", e.to_string()))?;
        let writer = f.text("writer")?.to_string();
        let key_id = f.hash("key")?;
        let kind = f
            .text("kind")?
            .parse::<EntryKind>()
            .map_err(|e| field_err("kind", e.to_string()))?;
        let content_hash = f.hash("content")?;
        let content_len = f.uint("len")?;
        let source_hash = f.opt_hash("src")?;
        let context_hash = f.opt_hash("ctx")?;
        let parents = decode_parents(f.take("parents")?)?;
        let attribution = f.text("attr")?.to_string();
        let tau = weight("tau", f.uint("tau")?)?;
        let fallback = f
            .text("fallback")?
            .parse::<Fallback>()
            .map_err(|e| field_err("fallback", e.to_string()))?;
        let label = f
            .text("label")?
            .parse::<TrustLabel>()
            .map_err(|e| field_err("label", e.to_string()))?;
        let created_at_ms = f.uint("time")?;
        let metadata = decode_meta(f.take("meta")?)?;
        f.finish()?;
        let body = EntryBody {
            scope,
            writer,
            key_id,
            kind,
            content_hash,
            content_len,
            source_hash,
            context_hash,
            parents,
            attribution,
            tau,
            fallback,
            label,
            created_at_ms,
            metadata,
        };
        body.validate()?;
        Ok(body)
    }
}

fn weight(field: &'static str, n: u64) -> Result<Weight, EntryError> {
    u16::try_from(n)
        .ok()
        .and_then(Weight::from_bp)
        .ok_or_else(|| field_err(field, format!("{n} is above 10000 basis points")))
}

fn decode_parents(v: &Value) -> Result<Vec<Parent>, EntryError> {
    let Value::Array(items) = v else {
        return Err(field_err("parents", "expected an array"));
    };
    if items.len() > limits::MAX_PARENTS {
        return Err(field_err("parents", "too many parents"));
    }
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let pair = match item {
            Value::Array(pair) if pair.len() == 2 => pair,
            _ => return Err(field_err("parents", "each parent must be [id, weight]")),
        };
        let (Value::Bytes(id), Value::Uint(w)) = (&pair[0], &pair[1]) else {
            return Err(field_err("parents", "each parent must be [32 bytes, uint]"));
        };
        let id = Hash256::from_slice(id)
            .map(EntryId)
            .ok_or_else(|| field_err("parents", "a parent id is not 32 bytes"))?;
        out.push(Parent {
            id,
            weight: weight("parents", *w)?,
        });
    }
    Ok(out)
}

fn decode_meta(v: &Value) -> Result<BTreeMap<String, String>, EntryError> {
    let Value::Map(pairs) = v else {
        return Err(field_err("meta", "expected a map"));
    };
    let mut out = BTreeMap::new();
    for (k, v) in pairs {
        let (Value::Text(k), Value::Text(v)) = (k, v) else {
            return Err(field_err("meta", "keys and values must be text"));
        };
        out.insert(k.clone(), v.clone());
    }
    Ok(out)
}
