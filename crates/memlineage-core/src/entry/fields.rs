//! A strict reader over a decoded CBOR map with text keys: every field is taken exactly once,
//! and any key left over is an error naming it. Shared by every record decoder.

use super::{EntryError, field_err};
use crate::canonical::Value;
use crate::hash::Hash256;

/// Reads the fields of one record.
pub(crate) struct Fields<'a> {
    record: &'static str,
    entries: Vec<(&'a str, &'a Value)>,
}

impl<'a> Fields<'a> {
    /// Wraps `value`, which must be a map whose keys are all text.
    pub(crate) fn new(record: &'static str, value: &'a Value) -> Result<Self, EntryError> {
        let Value::Map(pairs) = value else {
            return Err(field_err(record, "expected a map"));
        };
        let mut entries = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match k {
                Value::Text(t) => entries.push((t.as_str(), v)),
                _ => return Err(field_err(record, "map keys must be text")),
            }
        }
        Ok(Fields { record, entries })
    }

    /// Removes and returns a required field.
    pub(crate) fn take(&mut self, key: &'static str) -> Result<&'a Value, EntryError> {
        let pos = self
            .entries
            .iter()
            .position(|(k, _)| *k == key)
            .ok_or_else(|| field_err(key, format!("missing from {}", self.record)))?;
        Ok(self.entries.swap_remove(pos).1)
    }

    pub(crate) fn uint(&mut self, key: &'static str) -> Result<u64, EntryError> {
        match self.take(key)? {
            Value::Uint(n) => Ok(*n),
            other => Err(type_err(key, "an unsigned integer", other)),
        }
    }

    pub(crate) fn text(&mut self, key: &'static str) -> Result<&'a str, EntryError> {
        match self.take(key)? {
            Value::Text(t) => Ok(t.as_str()),
            other => Err(type_err(key, "a text string", other)),
        }
    }

    pub(crate) fn bytes(&mut self, key: &'static str) -> Result<&'a [u8], EntryError> {
        match self.take(key)? {
            Value::Bytes(b) => Ok(b.as_slice()),
            other => Err(type_err(key, "a byte string", other)),
        }
    }

    pub(crate) fn boolean(&mut self, key: &'static str) -> Result<bool, EntryError> {
        match self.take(key)? {
            Value::Bool(b) => Ok(*b),
            other => Err(type_err(key, "a boolean", other)),
        }
    }

    pub(crate) fn hash(&mut self, key: &'static str) -> Result<Hash256, EntryError> {
        let b = self.bytes(key)?;
        Hash256::from_slice(b)
            .ok_or_else(|| field_err(key, format!("expected 32 bytes, found {}", b.len())))
    }

    /// A hash or null.
    pub(crate) fn opt_hash(&mut self, key: &'static str) -> Result<Option<Hash256>, EntryError> {
        match self.take(key)? {
            Value::Null => Ok(None),
            Value::Bytes(b) => Hash256::from_slice(b)
                .map(Some)
                .ok_or_else(|| field_err(key, format!("expected 32 bytes, found {}", b.len()))),
            other => Err(type_err(key, "32 bytes or null", other)),
        }
    }

    /// Fails if any field was not taken.
    pub(crate) fn finish(self) -> Result<(), EntryError> {
        match self.entries.first() {
            None => Ok(()),
            Some((k, _)) => Err(EntryError::UnknownField {
                record: self.record,
                key: (*k).chars().take(64).collect(),
            }),
        }
    }
}

fn type_err(key: &'static str, expected: &str, found: &Value) -> EntryError {
    field_err(
        key,
        format!("expected {expected}, found {}", found.type_name()),
    )
}

/// Builds a map value from text keys.
pub(crate) fn map(pairs: Vec<(&'static str, Value)>) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Value::Text(k.to_string()), v))
            .collect(),
    )
}

/// A hash or null.
pub(crate) fn opt_hash_value(h: Option<Hash256>) -> Value {
    match h {
        Some(h) => Value::Bytes(h.0.to_vec()),
        None => Value::Null,
    }
}

impl Fields<'_> {
    /// True when the field is present (not yet taken).
    pub(crate) fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| *k == key)
    }
}
