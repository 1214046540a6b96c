//! The content of control records: registry changes, tombstones and distrust records.
//!
//! Control records are ordinary signed entries whose content is itself canonical CBOR, so the
//! principal registry, forgetting and retroactive distrust are all auditable from the log alone.

use crate::canonical::{self, Value};
use crate::entry::EntryError;
use crate::hash::{EntryId, Hash256};
use crate::label::TrustClass;
use ed25519_dalek::VerifyingKey;

// Reuse the strict field reader of the entry codec.
use crate::entry::fields_api::{Fields, map};

fn field_err(field: &'static str, problem: impl Into<String>) -> EntryError {
    EntryError::Field {
        field,
        problem: problem.into(),
    }
}

/// A change to the principal registry (content of a `registry` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryChange {
    /// Registers a new principal with its first key. The first record of every log is the
    /// operator adding itself (genesis).
    Add {
        /// Principal name.
        name: String,
        /// Trust class.
        class: TrustClass,
        /// Public key.
        key: VerifyingKey,
    },
    /// Replaces a principal's key; entries signed afterwards with the old key are refused.
    Rotate {
        /// Principal name.
        name: String,
        /// The new public key.
        key: VerifyingKey,
    },
    /// Revokes a principal: every entry it signs after this record is refused.
    Revoke {
        /// Principal name.
        name: String,
        /// Why (free text, for auditors).
        reason: String,
    },
}

impl RegistryChange {
    /// The principal this change is about.
    pub fn name(&self) -> &str {
        match self {
            RegistryChange::Add { name, .. }
            | RegistryChange::Rotate { name, .. }
            | RegistryChange::Revoke { name, .. } => name,
        }
    }

    /// Canonical CBOR content bytes.
    pub fn to_content(&self) -> Vec<u8> {
        let v = match self {
            RegistryChange::Add { name, class, key } => map(vec![
                ("op", Value::Text("add".into())),
                ("name", Value::Text(name.clone())),
                ("class", Value::Text(class.as_str().into())),
                ("key", Value::Bytes(key.as_bytes().to_vec())),
            ]),
            RegistryChange::Rotate { name, key } => map(vec![
                ("op", Value::Text("rotate".into())),
                ("name", Value::Text(name.clone())),
                ("key", Value::Bytes(key.as_bytes().to_vec())),
            ]),
            RegistryChange::Revoke { name, reason } => map(vec![
                ("op", Value::Text("revoke".into())),
                ("name", Value::Text(name.clone())),
                ("reason", Value::Text(reason.clone())),
            ]),
        };
        encode_known(&v)
    }

    /// Decodes content bytes strictly.
    pub fn from_content(bytes: &[u8]) -> Result<RegistryChange, EntryError> {
        let v = canonical::decode(bytes)?;
        let mut f = Fields::new("registry change", &v)?;
        let op = f.text("op")?;
        let name = f.text("name")?.to_string();
        crate::principal::validate_name(&name).map_err(|e| field_err("name", e.to_string()))?;
        let change = match op {
            "add" => {
                let class = f
                    .text("class")?
                    .parse::<TrustClass>()
                    .map_err(|e| field_err("class", e.to_string()))?;
                let key = public_key(f.bytes("key")?)?;
                RegistryChange::Add { name, class, key }
            }
            "rotate" => {
                let key = public_key(f.bytes("key")?)?;
                RegistryChange::Rotate { name, key }
            }
            "revoke" => {
                let reason = f.text("reason")?.to_string();
                RegistryChange::Revoke { name, reason }
            }
            other => {
                return Err(field_err(
                    "op",
                    format!("unknown registry operation `{}`", truncate(other)),
                ));
            }
        };
        f.finish()?;
        Ok(change)
    }
}

fn public_key(bytes: &[u8]) -> Result<VerifyingKey, EntryError> {
    crate::keys::public_from_bytes(bytes).map_err(|e| field_err("key", e.to_string()))
}

fn truncate(s: &str) -> String {
    s.chars().take(64).collect()
}

fn encode_known(v: &Value) -> Vec<u8> {
    // Maps built here have distinct text keys, so canonical encoding cannot fail; an empty
    // vector would fail every later strict decode loudly rather than silently.
    canonical::encode(v).unwrap_or_default()
}

fn entry_id(field: &'static str, bytes: &[u8]) -> Result<EntryId, EntryError> {
    Hash256::from_slice(bytes)
        .map(EntryId)
        .ok_or_else(|| field_err(field, "expected a 32-byte entry id"))
}

/// A request to forget an entry (content of a `tombstone` entry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tombstone {
    /// The entry forgotten.
    pub target: EntryId,
    /// Whether the content bytes were erased as well.
    pub erase: bool,
    /// Why (free text).
    pub reason: String,
}

impl Tombstone {
    /// Canonical CBOR content bytes.
    pub fn to_content(&self) -> Vec<u8> {
        encode_known(&map(vec![
            ("target", Value::Bytes(self.target.as_bytes().to_vec())),
            ("erase", Value::Bool(self.erase)),
            ("reason", Value::Text(self.reason.clone())),
        ]))
    }

    /// Decodes content bytes strictly.
    pub fn from_content(bytes: &[u8]) -> Result<Tombstone, EntryError> {
        let v = canonical::decode(bytes)?;
        let mut f = Fields::new("tombstone", &v)?;
        let target = entry_id("target", f.bytes("target")?)?;
        let erase = f.boolean("erase")?;
        let reason = f.text("reason")?.to_string();
        f.finish()?;
        Ok(Tombstone {
            target,
            erase,
            reason,
        })
    }
}

/// What a distrust record is against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DistrustTarget {
    /// One entry (and, through lineage, its strong descendants).
    Entry(EntryId),
    /// Every entry a principal ever wrote (a compromised key or agent).
    Principal(String),
}

/// A retroactive distrust (content of a `distrust` entry): beyond the paper.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Distrust {
    /// What is distrusted.
    pub target: DistrustTarget,
    /// Why (free text).
    pub reason: String,
}

impl Distrust {
    /// Canonical CBOR content bytes.
    pub fn to_content(&self) -> Vec<u8> {
        let target = match &self.target {
            DistrustTarget::Entry(id) => ("entry", Value::Bytes(id.as_bytes().to_vec())),
            DistrustTarget::Principal(p) => ("principal", Value::Text(p.clone())),
        };
        encode_known(&map(vec![
            target,
            ("reason", Value::Text(self.reason.clone())),
        ]))
    }

    /// Decodes content bytes strictly.
    pub fn from_content(bytes: &[u8]) -> Result<Distrust, EntryError> {
        let v = canonical::decode(bytes)?;
        let mut f = Fields::new("distrust", &v)?;
        let reason = f.text("reason")?.to_string();
        let target = if f.has("entry") {
            DistrustTarget::Entry(entry_id("entry", f.bytes("entry")?)?)
        } else {
            let p = f.text("principal")?.to_string();
            crate::principal::validate_name(&p)
                .map_err(|e| field_err("principal", e.to_string()))?;
            DistrustTarget::Principal(p)
        };
        f.finish()?;
        Ok(Distrust { target, reason })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn records_round_trip() {
        let key = crate::keys::generate(&mut ChaCha20Rng::seed_from_u64(3)).verifying_key();
        let changes = [
            RegistryChange::Add {
                name: "agent".into(),
                class: TrustClass::Trusted,
                key,
            },
            RegistryChange::Rotate {
                name: "agent".into(),
                key,
            },
            RegistryChange::Revoke {
                name: "agent".into(),
                reason: "lost laptop".into(),
            },
        ];
        for c in changes {
            assert_eq!(RegistryChange::from_content(&c.to_content()).unwrap(), c);
        }
        let t = Tombstone {
            target: EntryId(Hash256::of(b"x")),
            erase: true,
            reason: "gdpr".into(),
        };
        assert_eq!(Tombstone::from_content(&t.to_content()).unwrap(), t);
        for target in [
            DistrustTarget::Entry(EntryId(Hash256::of(b"y"))),
            DistrustTarget::Principal("mallory".into()),
        ] {
            let d = Distrust {
                target,
                reason: "compromised".into(),
            };
            assert_eq!(Distrust::from_content(&d.to_content()).unwrap(), d);
        }
    }

    #[test]
    fn unknown_op_and_fields_are_rejected() {
        let v = map(vec![
            ("op", Value::Text("promote".into())),
            ("name", Value::Text("a".into())),
        ]);
        let err = RegistryChange::from_content(&canonical::encode(&v).unwrap()).unwrap_err();
        assert!(err.to_string().contains("promote"), "{err}");
        let v = map(vec![
            ("target", Value::Bytes(vec![0; 32])),
            ("erase", Value::Bool(false)),
            ("reason", Value::Text(String::new())),
            ("extra", Value::Null),
        ]);
        let err = Tombstone::from_content(&canonical::encode(&v).unwrap()).unwrap_err();
        assert!(matches!(err, EntryError::UnknownField { .. }), "{err}");
    }
}
