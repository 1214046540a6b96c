//! The CBOR data items MemLineage uses, and accessors for reading records.

/// A CBOR data item of the subset MemLineage uses (RFC 8949 §3.1, major types 0, 2, 3, 4, 5
/// and the simple values `false`, `true`, `null` of major type 7).
///
/// Negative integers, floats, tags and other simple values are left out on purpose: signed
/// records carry fixed-point integers, never floats (DESIGN.md, "No floats in signed data"),
/// and a smaller subset leaves fewer ways to encode the same record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// An unsigned integer (major type 0).
    Uint(u64),
    /// A byte string (major type 2).
    Bytes(Vec<u8>),
    /// A UTF-8 text string (major type 3).
    Text(String),
    /// `false` (0xf4) or `true` (0xf5).
    Bool(bool),
    /// `null` (0xf6).
    Null,
    /// An array (major type 4).
    Array(Vec<Value>),
    /// A map (major type 5) as key/value pairs.
    ///
    /// [`encode`](super::encode) accepts the entries in any order and writes them sorted
    /// canonically; [`decode`](super::decode) returns them in canonical order (sorted by the
    /// bytewise order of the keys' encodings, RFC 8949 §4.2.1).
    Map(Vec<(Value, Value)>),
}

impl Value {
    /// A short human-readable name of this item's type, for error messages
    /// ("expected a text string, found an array").
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Uint(_) => "unsigned integer",
            Value::Bytes(_) => "byte string",
            Value::Text(_) => "text string",
            Value::Bool(_) => "boolean",
            Value::Null => "null",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
        }
    }

    /// The integer, if this is a [`Value::Uint`].
    pub fn as_uint(&self) -> Option<u64> {
        match self {
            Value::Uint(n) => Some(*n),
            _ => None,
        }
    }

    /// The text, if this is a [`Value::Text`].
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes, if this is a [`Value::Bytes`].
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The boolean, if this is a [`Value::Bool`].
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Whether this is [`Value::Null`].
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The elements, if this is a [`Value::Array`].
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The entries, if this is a [`Value::Map`].
    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The value stored under the text key `key`, if this is a map that has one.
    ///
    /// A linear scan: records have a handful of fields. Returns `None` for non-maps.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_text() == Some(key))
            .map(|(_, v)| v)
    }
}

impl From<u64> for Value {
    fn from(n: u64) -> Self {
        Value::Uint(n)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Text(s.to_owned())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Text(s)
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Self {
        Value::Bytes(b)
    }
}

impl From<&[u8]> for Value {
    fn from(b: &[u8]) -> Self {
        Value::Bytes(b.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::Value;

    #[test]
    fn canonical_value_accessors_match_only_their_variant() {
        let all = [
            Value::Uint(7),
            Value::Bytes(vec![1]),
            Value::Text("t".into()),
            Value::Bool(true),
            Value::Null,
            Value::Array(vec![]),
            Value::Map(vec![]),
        ];
        for v in &all {
            assert_eq!(v.as_uint().is_some(), matches!(v, Value::Uint(_)));
            assert_eq!(v.as_bytes().is_some(), matches!(v, Value::Bytes(_)));
            assert_eq!(v.as_text().is_some(), matches!(v, Value::Text(_)));
            assert_eq!(v.as_bool().is_some(), matches!(v, Value::Bool(_)));
            assert_eq!(v.is_null(), matches!(v, Value::Null));
            assert_eq!(v.as_array().is_some(), matches!(v, Value::Array(_)));
            assert_eq!(v.as_map().is_some(), matches!(v, Value::Map(_)));
        }
        let names: Vec<_> = all.iter().map(Value::type_name).collect();
        assert_eq!(
            names,
            [
                "unsigned integer",
                "byte string",
                "text string",
                "boolean",
                "null",
                "array",
                "map"
            ]
        );
    }

    #[test]
    fn canonical_value_get_finds_text_keys() {
        let m = Value::Map(vec![
            (Value::Uint(1), Value::Null),
            (Value::from("a"), Value::from(5u64)),
        ]);
        assert_eq!(m.get("a"), Some(&Value::Uint(5)));
        assert_eq!(m.get("b"), None);
        assert_eq!(Value::Null.get("a"), None);
    }
}
