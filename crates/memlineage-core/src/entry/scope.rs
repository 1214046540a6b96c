//! Scopes: namespace paths such as `acme/assistant/alice/s42` that restrict retrieval.

use std::fmt;
use std::str::FromStr;

/// A validated namespace path: 1 to 8 segments of 1 to 64 characters from `[A-Za-z0-9._@-]`,
/// joined by `/`, none of them `.` or `..` (so a scope never reads as a relative path that
/// climbs out of a namespace). A scope contains itself and every scope below it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Scope(String);

/// Error for a malformed scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid scope `{input}`: {problem}")]
pub struct ScopeError {
    /// The offending input (truncated).
    pub input: String,
    /// What is wrong.
    pub problem: &'static str,
}

impl Scope {
    /// Parses and validates a scope path.
    pub fn new(s: &str) -> Result<Scope, ScopeError> {
        let err = |problem| ScopeError {
            input: s.chars().take(80).collect(),
            problem,
        };
        let segments: Vec<&str> = s.split('/').collect();
        if segments.len() > 8 {
            return Err(err("at most 8 segments separated by `/`"));
        }
        for seg in segments {
            if seg.is_empty() || seg.len() > 64 {
                return Err(err(
                    "each segment must be 1 to 64 characters (no empty segments)",
                ));
            }
            if seg == "." || seg == ".." {
                return Err(err(
                    "`.` and `..` are not scope segments (a scope is a name, not a relative path)",
                ));
            }
            if !seg
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'))
            {
                return Err(err(
                    "segments may only use letters, digits, `.`, `_`, `@` and `-`",
                ));
            }
        }
        Ok(Scope(s.to_string()))
    }

    /// The path as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `other` is this scope or lies below it.
    pub fn contains(&self, other: &Scope) -> bool {
        other.0 == self.0
            || (other.0.len() > self.0.len()
                && other.0.starts_with(&self.0)
                && other.0.as_bytes().get(self.0.len()) == Some(&b'/'))
    }
}

impl Default for Scope {
    fn default() -> Self {
        Scope("default".to_string())
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for Scope {
    type Err = ScopeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scope::new(s)
    }
}

impl AsRef<str> for Scope {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// A scope serialises as its path.
impl serde::Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// A scope deserialises from its path, validated like [`Scope::new`].
impl<'de> serde::Deserialize<'de> for Scope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        Scope::new(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containment() {
        let a = Scope::new("acme/bot").unwrap();
        assert!(a.contains(&Scope::new("acme/bot").unwrap()));
        assert!(a.contains(&Scope::new("acme/bot/alice").unwrap()));
        assert!(!a.contains(&Scope::new("acme/bots").unwrap()));
        assert!(!a.contains(&Scope::new("acme").unwrap()));
    }

    #[test]
    fn serialises_as_its_path_and_validates_on_the_way_in() {
        let a = Scope::new("acme/bot").unwrap();
        assert_eq!(serde_json::to_string(&a).unwrap(), "\"acme/bot\"");
        assert_eq!(serde_json::from_str::<Scope>("\"acme/bot\"").unwrap(), a);
        assert!(serde_json::from_str::<Scope>("\"../x\"").is_err());
    }

    #[test]
    fn rejects_bad_scopes() {
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "a b",
            "a/b/c/d/e/f/g/h/i",
            "é",
            "../bad",
            "a/./b",
            "a/..",
            ".",
        ] {
            assert!(Scope::new(bad).is_err(), "{bad:?}");
        }
        assert!(Scope::new(&"x".repeat(65)).is_err());
        let e = Scope::new("../bad").unwrap_err();
        assert!(e.to_string().contains("`..`"), "{e}");
        // Dots inside a segment are fine.
        for good in ["a.b", "...", "v1.2/x", ".hidden"] {
            assert!(Scope::new(good).is_ok(), "{good:?}");
        }
    }
}
