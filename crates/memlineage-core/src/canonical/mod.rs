//! STUB — to be replaced by the canonical CBOR implementation (RFC 8949 §4.2.1).
#![allow(missing_docs)]

/// A CBOR data item of the subset MemLineage uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Uint(u64),
    Bytes(Vec<u8>),
    Text(String),
    Bool(bool),
    Null,
    Array(Vec<Value>),
    /// Map entries in any order; `encode` sorts them canonically.
    Map(Vec<(Value, Value)>),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CanonicalError {
    #[error("not implemented")]
    Todo,
}

pub fn encode(_v: &Value) -> Result<Vec<u8>, CanonicalError> {
    Err(CanonicalError::Todo)
}

pub fn decode(_bytes: &[u8]) -> Result<Value, CanonicalError> {
    Err(CanonicalError::Todo)
}
