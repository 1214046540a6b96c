//! SHA-256 digests and entry identifiers, shown as lowercase hex.

use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// A SHA-256 digest (content hash, source hash, context hash, Merkle node).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Hash256(pub [u8; 32]);

impl Hash256 {
    /// SHA-256 of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Hash256(Sha256::digest(bytes).into())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Lowercase hex, 64 characters, on the stack: for writers (JSON, `Display`) that only
    /// need to read it — a decision's record names dozens of ids, each a `String` otherwise.
    pub fn hex(&self) -> Hex {
        let mut out = [0u8; 64];
        // 32 bytes always fit 64 hex digits.
        let _ = hex::encode_to_slice(self.0, &mut out);
        Hex(out)
    }

    /// Builds a digest from a slice that must be exactly 32 bytes long.
    pub fn from_slice(bytes: &[u8]) -> Option<Self> {
        <[u8; 32]>::try_from(bytes).ok().map(Hash256)
    }
}

/// Error for a malformed hex digest or entry id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a SHA-256 digest: expected 64 hexadecimal characters")]
pub struct ParseHashError {
    /// The input that failed to parse (truncated to 80 characters).
    pub input: String,
}

impl FromStr for Hash256 {
    type Err = ParseHashError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseHashError {
            input: s.chars().take(80).collect(),
        };
        if s.len() != 64 {
            return Err(err());
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(s, &mut out).map_err(|_| err())?;
        Ok(Hash256(out))
    }
}

impl fmt::Display for Hash256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for Hash256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash256({})", self.to_hex())
    }
}

/// The identifier of an entry: SHA-256 of the canonical encoding of its signed body
/// (see `docs/formats.md`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EntryId(pub Hash256);

impl EntryId {
    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0.0
    }
    /// Lowercase hex, 64 characters.
    pub fn to_hex(&self) -> String {
        self.0.to_hex()
    }
    /// Lowercase hex, 64 characters, on the stack ([`Hash256::hex`]).
    pub fn hex(&self) -> Hex {
        self.0.hex()
    }
    /// The first 12 hex characters, for tables and graphs meant for people.
    pub fn short(&self) -> String {
        hex::encode(&self.0.0[..6])
    }
}

impl FromStr for EntryId {
    type Err = ParseHashError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Hash256::from_str(s).map(EntryId)
    }
}

impl fmt::Display for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.hex().as_str())
    }
}

/// A digest's 64 lowercase hex digits, held on the stack ([`Hash256::hex`]).
#[derive(Clone, Copy)]
pub struct Hex([u8; 64]);

impl Hex {
    /// The digits.
    pub fn as_str(&self) -> &str {
        // Hex digits are ASCII: never empty in practice.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl fmt::Debug for EntryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EntryId({})", self.short())
    }
}

macro_rules! hex_serde {
    ($t:ty) => {
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.hex().as_str())
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
hex_serde!(Hash256);
hex_serde!(EntryId);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_on_the_stack_is_to_hex() {
        for bytes in [[0u8; 32], [0xff; 32], *Hash256::of(b"abc").as_bytes()] {
            let h = Hash256(bytes);
            assert_eq!(h.hex().as_str(), h.to_hex());
            assert_eq!(EntryId(h).hex().as_str(), EntryId(h).to_string());
        }
    }

    #[test]
    fn sha256_known_answer_empty() {
        // FIPS 180-4 / NIST example: SHA-256("").
        assert_eq!(
            Hash256::of(b"").to_hex(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn hex_round_trip_and_errors() {
        let h = Hash256::of(b"abc");
        assert_eq!(h.to_hex().parse::<Hash256>().unwrap(), h);
        assert!("zz".parse::<Hash256>().is_err());
        assert!("g".repeat(64).parse::<Hash256>().is_err());
    }
}
