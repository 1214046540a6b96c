//! Parsing the values Python passes in (ids, weights, scopes, kinds, names, classes): each
//! failure is an `InputError` with the message the CLI gives for the same value.

use crate::errors::Fail;
use memlineage_core::entry::{EntryKind, Scope};
use memlineage_core::label::{Fallback, TrustClass, Weight};
use memlineage_core::{EntryId, Hash256, PrincipalName};

fn shown(s: &str) -> String {
    s.chars().take(80).collect()
}

/// A full entry id: 64 hexadecimal characters (either case).
pub fn id(s: &str) -> Result<EntryId, Fail> {
    let t = s.trim().to_ascii_lowercase();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Fail::Input(format!(
            "`{}` is not an entry id: expected 64 hexadecimal characters",
            shown(s)
        )));
    }
    t.parse::<EntryId>().map_err(|e| Fail::Input(e.to_string()))
}

/// Several ids.
pub fn ids(v: &[String]) -> Result<Vec<EntryId>, Fail> {
    v.iter().map(|s| id(s)).collect()
}

/// A weight or τ: a decimal in [0, 1] with at most four decimals (never rounded).
pub fn weight(s: &str) -> Result<Weight, Fail> {
    s.parse::<Weight>().map_err(|e| Fail::Input(e.to_string()))
}

/// A scope path.
pub fn scope(s: &str) -> Result<Scope, Fail> {
    Scope::new(s).map_err(|e| Fail::Input(e.to_string()))
}

/// `strict` or `permissive`.
pub fn fallback(s: &str) -> Result<Fallback, Fail> {
    s.parse::<Fallback>()
        .map_err(|e| Fail::Input(e.to_string()))
}

/// `trusted` or `external`.
pub fn class(s: &str) -> Result<TrustClass, Fail> {
    s.parse::<TrustClass>()
        .map_err(|e| Fail::Input(e.to_string()))
}

/// A principal name: 1 to 64 characters from `a-z 0-9 . _ -`.
pub fn name(s: &str) -> Result<PrincipalName, Fail> {
    s.parse::<PrincipalName>()
        .map_err(|e| Fail::Input(e.to_string()))
}

/// The kind of a content entry (control records are written by their own calls).
pub fn content_kind(s: &str) -> Result<EntryKind, Fail> {
    match s.parse::<EntryKind>() {
        Ok(k) if !k.is_control() => Ok(k),
        _ => Err(Fail::Input(format!(
            "invalid kind `{}`: expected user_input, tool_output, observation or derived",
            shown(s)
        ))),
    }
}

/// A context hash h_ctx: the 64 hexadecimal characters of a SHA-256.
pub fn context_hash(s: &str) -> Result<Hash256, Fail> {
    let t = s.trim();
    if t.len() != 64 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Fail::Input(format!(
            "`{}` is not a context hash: expected the 64 hexadecimal characters of a SHA-256 (the \
             `context_hash` that `memlineage search` prints)",
            shown(s)
        )));
    }
    t.to_ascii_lowercase()
        .parse::<Hash256>()
        .map_err(|e| Fail::Input(e.to_string()))
}

/// A metadata pair: a 1 to 64 byte key and a value of at most 4096 bytes.
pub fn meta(k: &str, v: &str) -> Result<(), Fail> {
    if k.is_empty() || k.len() > 64 || v.len() > 4096 {
        return Err(Fail::Input(format!(
            "invalid metadata `{}={}`: expected KEY=VALUE with a 1 to 64 byte key and a value of \
             at most 4096 bytes",
            shown(k),
            shown(v)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        assert!(id("abc").is_err());
        assert!(id(&"A".repeat(64)).is_ok());
        assert!(weight("0.12345").is_err());
        assert_eq!(weight("0.25").map(Weight::bp).ok(), Some(2500));
        assert!(scope("../bad").is_err());
        assert!(content_kind("tombstone").is_err());
        assert!(name("Bad Name").is_err());
        assert!(meta("", "x").is_err());
        assert!(context_hash("zz").is_err());
    }
}
