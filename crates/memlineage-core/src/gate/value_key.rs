//! Keys of typed values for the store's value index (issue 19, `docs/gate.md`, "Earliest
//! carrier").
//!
//! A writer may omit the lineage of what it writes, but the log still knows where a value
//! first appeared: at write time the handle extracts every typed value of an entry's content
//! (the types of [`INDEXED_TYPES`], with the gate's own extraction) and indexes the entry under
//! one key per value. A key is the value's [`ParamType::value_key`] — the letters and digits of
//! its skeleton, so two values a reader may confuse share it, the same keys the gate's
//! matching uses — hashed with its type under a domain-separation prefix. Only the hash is
//! kept: erasing an entry's content leaves its keys in the index (so erasure cannot launder a
//! value), and the index holds no value in the clear. (A hash of a low-entropy value — an
//! amount, a date — can be found by trying values; the index pseudonymises, it does not
//! anonymise.)
//!
//! Regex-typed values are not indexed: their type is a policy's, unknown at write time.

use super::param_type::{NormValue, ParamType, ParamValue};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::fmt;

/// The types whose values the index holds: every typed-value type but regex tokens.
pub const INDEXED_TYPES: [ParamType; 5] = [
    ParamType::Iban,
    ParamType::Amount,
    ParamType::Date,
    ParamType::Email,
    ParamType::Url,
];

/// The domain-separation prefix of a key's hash (version 1 of the key format).
const KEY_DOMAIN: &[u8] = b"memlineage value key v1\0";

/// The index key of one typed value: the first 16 bytes of
/// `SHA-256("memlineage value key v1\0" || type name || "\0" || value key)`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ValueKey(pub [u8; 16]);

impl ValueKey {
    /// The key of `v`, a value of type `kind`; `None` for a type the index does not hold
    /// (free text, regex tokens).
    pub fn of(kind: &ParamType, v: &NormValue) -> Option<ValueKey> {
        if !INDEXED_TYPES.iter().any(|t| t.name() == kind.name()) {
            return None;
        }
        let mut h = Sha256::new();
        h.update(KEY_DOMAIN);
        h.update(kind.name().as_bytes());
        h.update([0]);
        h.update(kind.value_key(v).as_bytes());
        let digest = h.finalize();
        let mut out = [0u8; 16];
        out.copy_from_slice(&digest[..16]);
        Some(ValueKey(out))
    }

    /// The keys of every reading of `pv` (two for an ambiguous date).
    pub fn of_readings(kind: &ParamType, pv: &ParamValue) -> Vec<ValueKey> {
        pv.iter().filter_map(|v| ValueKey::of(kind, v)).collect()
    }

    /// A key from its 16 bytes (as a store keeps it); `None` for another length.
    pub fn from_slice(bytes: &[u8]) -> Option<ValueKey> {
        <[u8; 16]>::try_from(bytes).ok().map(ValueKey)
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for ValueKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ValueKey({})", hex::encode(self.0))
    }
}

/// The keys of every typed value `text` carries exactly (the values the gate's extraction
/// finds in its reading) or hides (in tag characters or base64: `gate/hidden.rs`; where a value
/// first appeared includes where it was smuggled in), sorted, without duplicates: what the
/// handle indexes an entry under.
pub fn value_keys_of_text(text: &str) -> Vec<ValueKey> {
    let mut keys = BTreeSet::new();
    let hidden = super::hidden::hidden_texts(text);
    for t in std::iter::once(text).chain(hidden.iter().map(String::as_str)) {
        for kind in &INDEXED_TYPES {
            for v in kind.extract(t) {
                keys.extend(ValueKey::of(kind, &v));
            }
        }
    }
    keys.into_iter().collect()
}

/// Every key a gate decision on these arguments may ask about: for every string or number in
/// them (at any depth), the keys of its readings under each indexed type it parses as, and the
/// keys of the typed values found inside it. A superset of the values the gate checks,
/// whatever the policy's parameter paths and types, so that the store is asked about every one
/// of them before the (pure) decision.
pub fn value_keys_of_arguments(arguments: &serde_json::Map<String, Value>) -> Vec<ValueKey> {
    let mut keys = BTreeSet::new();
    let mut stack: Vec<&Value> = arguments.values().collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                for kind in &INDEXED_TYPES {
                    if let Ok(pv) = kind.normalise_str(s) {
                        keys.extend(ValueKey::of_readings(kind, &pv));
                    }
                }
                keys.extend(value_keys_of_text(s));
            }
            Value::Number(_) => {
                if let Ok(pv) = ParamType::Amount.normalise(v) {
                    keys.extend(ValueKey::of_readings(&ParamType::Amount, &pv));
                }
                keys.extend(value_keys_of_text(&v.to_string()));
            }
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => stack.extend(map.values()),
            Value::Null | Value::Bool(_) => {}
        }
    }
    keys.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: ParamType, s: &str) -> ValueKey {
        let pv = kind.normalise_str(s).unwrap();
        ValueKey::of(&kind, &pv.primary).unwrap()
    }

    #[test]
    fn formatting_does_not_change_a_key() {
        let a = key(ParamType::Iban, "DE89 3704 0044 0532 0130 00");
        assert_eq!(a, key(ParamType::Iban, "de89370400440532013000"));
        // In a text, Cyrillic `Е` reads `E` and full-width digits read as digits.
        for text in [
            "pay D\u{415}89 3704 0044 0532 0130 00 now",
            "pay DE８９370400440532013000 now",
        ] {
            assert!(value_keys_of_text(text).contains(&a), "{text}");
        }
        let text = "rent now goes to DE89\u{200b}3704\u{a0}0044 0532 0130 00 monthly";
        assert!(value_keys_of_text(text).contains(&a));
    }

    #[test]
    fn hidden_values_are_keys_too() {
        use base64::Engine;
        let a = key(ParamType::Iban, "GB29 NWBK 6016 1331 9268 19");
        let encoded =
            base64::engine::general_purpose::STANDARD.encode("new account GB29NWBK60161331926819");
        let tags: String = "GB29NWBK60161331926819"
            .chars()
            .filter_map(|c| char::from_u32(0xE0000 + u32::from(c)))
            .collect();
        for text in [format!("decode: {encoded}"), format!("Thanks!{tags}")] {
            assert!(value_keys_of_text(&text).contains(&a), "{text}");
        }
    }

    #[test]
    fn the_type_is_part_of_the_key() {
        let amount = key(ParamType::Amount, "2024");
        let texts = value_keys_of_text("2024");
        assert!(texts.contains(&amount));
        let iban = key(ParamType::Iban, "DE89370400440532013000");
        assert_ne!(iban.0[..], amount.0[..]);
    }

    #[test]
    fn free_text_and_regex_are_not_indexed() {
        let pv = ParamType::FreeText.normalise_str("hello").unwrap();
        assert!(ValueKey::of(&ParamType::FreeText, &pv.primary).is_none());
        let re = ParamType::regex("[A-Z]{3}[0-9]{4}").unwrap();
        let pv = re.normalise_str("ABC1234").unwrap();
        assert!(ValueKey::of(&re, &pv.primary).is_none());
    }

    #[test]
    fn arguments_cover_every_checked_value() {
        let args: serde_json::Map<String, Value> = serde_json::from_str(
            r#"{"recipient": "DE89 3704 0044 0532 0130 00", "amount": 98.7,
                "when": "03/04/2025", "note": "also pay GB82WEST12345698765432",
                "items": [{"to": "a@example.org"}]}"#,
        )
        .unwrap();
        let keys = value_keys_of_arguments(&args);
        for k in [
            key(ParamType::Iban, "DE89370400440532013000"),
            key(ParamType::Amount, "98.70"),
            key(ParamType::Iban, "GB82WEST12345698765432"),
            key(ParamType::Email, "A@example.org"),
        ] {
            assert!(keys.contains(&k), "{k:?} missing");
        }
        // Both readings of an ambiguous date.
        let pv = ParamType::Date.normalise_str("03/04/2025").unwrap();
        for k in ValueKey::of_readings(&ParamType::Date, &pv) {
            assert!(keys.contains(&k));
        }
        assert_eq!(ValueKey::of_readings(&ParamType::Date, &pv).len(), 2);
    }

    #[test]
    fn known_answer() {
        // The key format is stored: it must not drift. SHA-256 over
        // "memlineage value key v1\0iban\0" and the IBAN's skeleton key, first 16 bytes.
        let k = key(ParamType::Iban, "DE89 3704 0044 0532 0130 00");
        assert_eq!(hex::encode(k.0), "0c7d4c4e78d39a918ec84e7d2fc5299b");
    }
}
