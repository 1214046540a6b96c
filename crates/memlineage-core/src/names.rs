//! Validated names at the API: principal names and attribution algorithm names.
//!
//! Both travel inside signed entries as strings (`writer`, `attribution`; `docs/formats.md`),
//! and [`EntryBody::validate`](crate::entry::EntryBody::validate) checks them when an entry is
//! built or decoded. At the API of the handle they are these types instead, so a name is
//! checked once, where the caller made it, and a function that takes one cannot be handed an
//! arbitrary string. Both parse with [`FromStr`], print with [`Display`](fmt::Display) and
//! (de)serialise as their string, validated on the way in.

use crate::principal::{NameError, validate_name};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::fmt;
use std::str::FromStr;

/// A principal's name: `[a-z0-9][a-z0-9._-]{0,63}` (see
/// [`validate_name`](crate::principal::validate_name)).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PrincipalName(String);

impl PrincipalName {
    /// Parses and validates a name.
    pub fn new(name: &str) -> Result<PrincipalName, NameError> {
        validate_name(name)?;
        Ok(PrincipalName(name.to_string()))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PrincipalName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PrincipalName {
    type Err = NameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PrincipalName::new(s)
    }
}

impl TryFrom<&str> for PrincipalName {
    type Error = NameError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        PrincipalName::new(s)
    }
}

impl TryFrom<String> for PrincipalName {
    type Error = NameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        validate_name(&s)?;
        Ok(PrincipalName(s))
    }
}

impl AsRef<str> for PrincipalName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for PrincipalName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for PrincipalName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for PrincipalName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<PrincipalName> for String {
    fn from(n: PrincipalName) -> String {
        n.0
    }
}

impl Serialize for PrincipalName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for PrincipalName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        PrincipalName::try_from(s).map_err(serde::de::Error::custom)
    }
}

/// Error for a malformed attribution algorithm name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid attribution algorithm name `{0}`: use 1 to 128 printable ASCII characters, no spaces"
)]
pub struct AttributionNameError(pub String);

/// The name of the attribution algorithm that weighed an entry's parents, as recorded in its
/// signed `attribution` field: `none`, `explicit`, `coarse`, `lm-self-eval:<judge>`,
/// `attn-attr:<model>` … (1 to 128 printable ASCII characters, no spaces).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttributionName(Cow<'static, str>);

impl AttributionName {
    /// No parents, so no attribution (root entries).
    pub const NONE: AttributionName = AttributionName(Cow::Borrowed("none"));
    /// Weights given by the caller.
    pub const EXPLICIT: AttributionName = AttributionName(Cow::Borrowed("explicit"));
    /// Weight 1 for every parent (the paper's Coarse).
    pub const COARSE: AttributionName = AttributionName(Cow::Borrowed("coarse"));

    /// Parses and validates a name.
    pub fn new(name: &str) -> Result<AttributionName, AttributionNameError> {
        check_attribution(name)?;
        Ok(AttributionName(Cow::Owned(name.to_string())))
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The rule of the signed `attribution` field (`entry::limits::MAX_ATTRIBUTION`).
fn check_attribution(name: &str) -> Result<(), AttributionNameError> {
    if name.is_empty()
        || name.len() > crate::entry::limits::MAX_ATTRIBUTION
        || !name.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(AttributionNameError(name.chars().take(128).collect()));
    }
    Ok(())
}

impl fmt::Display for AttributionName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for AttributionName {
    type Err = AttributionNameError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AttributionName::new(s)
    }
}

impl TryFrom<String> for AttributionName {
    type Error = AttributionNameError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        check_attribution(&s)?;
        Ok(AttributionName(Cow::Owned(s)))
    }
}

impl AsRef<str> for AttributionName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for AttributionName {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for AttributionName {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl Serialize for AttributionName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for AttributionName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        AttributionName::try_from(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principal_names_parse_print_and_round_trip() {
        let n: PrincipalName = "agent-1.b_c".parse().unwrap();
        assert_eq!(n.as_str(), "agent-1.b_c");
        assert_eq!(n.to_string(), "agent-1.b_c");
        assert_eq!(n, "agent-1.b_c");
        for bad in ["", "Agent", "-x", "a b", "é", &"a".repeat(65)] {
            assert!(bad.parse::<PrincipalName>().is_err(), "{bad:?}");
        }
        let json = serde_json::to_string(&n).unwrap();
        assert_eq!(json, "\"agent-1.b_c\"");
        assert_eq!(serde_json::from_str::<PrincipalName>(&json).unwrap(), n);
        assert!(serde_json::from_str::<PrincipalName>("\"No\"").is_err());
    }

    #[test]
    fn attribution_names_parse_print_and_round_trip() {
        assert_eq!(AttributionName::EXPLICIT.as_str(), "explicit");
        assert_eq!(
            "explicit".parse::<AttributionName>().unwrap(),
            AttributionName::EXPLICIT
        );
        let n: AttributionName = "lm-self-eval:smollm2-135m".parse().unwrap();
        assert_eq!(n.to_string(), "lm-self-eval:smollm2-135m");
        for bad in ["", "a b", "tab\t", &"x".repeat(129), "é"] {
            assert!(bad.parse::<AttributionName>().is_err(), "{bad:?}");
        }
        let json = serde_json::to_string(&AttributionName::COARSE).unwrap();
        assert_eq!(json, "\"coarse\"");
        assert_eq!(
            serde_json::from_str::<AttributionName>(&json).unwrap(),
            AttributionName::COARSE
        );
        assert!(serde_json::from_str::<AttributionName>("\"a b\"").is_err());
    }
}
