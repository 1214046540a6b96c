//! Principals and the registry replayed from the log (paper §M2, "per-principal keys").
//!
//! The registry is not a side table: it is the fold of the log's `registry` records, in log
//! order. Replaying it at any position tells which key each principal held then, so the whole key
//! history — additions, rotations, revocations — is auditable from the log alone.
//!
//! Rules (documented in `docs/formats.md`):
//! - the first record of a log (index 0) is the *genesis*: a self-signed `add` of a trusted
//!   principal, which becomes the operator;
//! - only the operator signs registry changes (with its key current at that position);
//! - `rotate` replaces a key: the old key is retired and refused for entries logged afterwards;
//! - `revoke` ends a principal: every entry it signs afterwards is refused;
//! - entries logged before a rotation or revocation stay valid (use a `distrust` record to taint
//!   what a compromised principal wrote before it was caught).

use crate::entry::{EntryKind, SignedEntry};
use crate::hash::Hash256;
use crate::keys;
use crate::label::TrustClass;
use crate::records::RegistryChange;
use ed25519_dalek::VerifyingKey;
use std::collections::{BTreeMap, HashMap};

/// Error for a malformed principal name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid principal name `{0}`: use 1 to 64 characters from a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit"
)]
pub struct NameError(pub String);

/// Checks a principal name: `[a-z0-9][a-z0-9._-]{0,63}`.
pub fn validate_name(name: &str) -> Result<(), NameError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && name.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        });
    if ok {
        Ok(())
    } else {
        Err(NameError(name.chars().take(64).collect()))
    }
}

/// One key a principal has held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRecord {
    /// The public key.
    pub key: VerifyingKey,
    /// Its id (SHA-256 of the key bytes).
    pub key_id: Hash256,
    /// Log index of the record that added it.
    pub added_at: u64,
    /// Log index of the record that retired it (rotation), if any.
    pub retired_at: Option<u64>,
}

/// A registered principal and its key history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Name.
    pub name: String,
    /// Trust class.
    pub class: TrustClass,
    /// Keys, oldest first; the last one is current unless revoked.
    pub keys: Vec<KeyRecord>,
    /// Log index of the revocation record, if revoked.
    pub revoked_at: Option<u64>,
    /// Why it was revoked.
    pub revoke_reason: Option<String>,
}

impl Principal {
    /// The current key, unless revoked.
    pub fn current_key(&self) -> Option<&KeyRecord> {
        if self.revoked_at.is_some() {
            return None;
        }
        self.keys.last()
    }
}

/// Why a signer is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// No registered principal holds this key.
    #[error("entry is signed by key {key_id} which is not registered to any principal")]
    UnknownKey {
        /// The key id from the entry.
        key_id: Hash256,
    },
    /// The key is registered, but to another principal than the entry names.
    #[error("entry names writer `{named}` but key {key_id} belongs to `{owner}`")]
    WrongPrincipal {
        /// The writer named in the entry.
        named: String,
        /// The key's owner.
        owner: String,
        /// The key id.
        key_id: Hash256,
    },
    /// The principal was revoked before this entry was logged.
    #[error("principal `{name}` was revoked at log index {revoked_at}")]
    Revoked {
        /// The principal.
        name: String,
        /// Where it was revoked.
        revoked_at: u64,
    },
    /// The key was rotated out before this entry was logged.
    #[error("key {key_id} of `{name}` was retired by a rotation at log index {retired_at}")]
    Retired {
        /// The principal.
        name: String,
        /// The key id.
        key_id: Hash256,
        /// Where it was retired.
        retired_at: u64,
    },
    /// The key was added after this entry's position (cannot happen in an honest log).
    #[error("key {key_id} was registered only at log index {added_at}")]
    NotYetRegistered {
        /// The key id.
        key_id: Hash256,
        /// Where it was added.
        added_at: u64,
    },
    /// A registry change that breaks the rules.
    #[error("registry change refused: {0}")]
    BadChange(String),
}

/// The principal registry as of some log position.
#[derive(Clone, Debug, Default)]
pub struct Registry {
    principals: BTreeMap<String, Principal>,
    by_key: HashMap<Hash256, (String, usize)>,
    operator: Option<String>,
}

impl Registry {
    /// An empty registry (before genesis).
    pub fn new() -> Registry {
        Registry::default()
    }

    /// The operator (the genesis principal), once genesis is applied.
    pub fn operator(&self) -> Option<&str> {
        self.operator.as_deref()
    }

    /// A principal by name.
    pub fn get(&self, name: &str) -> Option<&Principal> {
        self.principals.get(name)
    }

    /// All principals, sorted by name.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.principals.values()
    }

    /// Finds who signed with `key_id` and checks that the key was valid at log index `index`.
    /// Returns the principal and the key to verify the signature with.
    pub fn signer_at(
        &self,
        writer: &str,
        key_id: &Hash256,
        index: u64,
    ) -> Result<(&Principal, &VerifyingKey), RegistryError> {
        let (owner, slot) = self
            .by_key
            .get(key_id)
            .ok_or(RegistryError::UnknownKey { key_id: *key_id })?;
        let principal = self
            .principals
            .get(owner)
            .ok_or(RegistryError::UnknownKey { key_id: *key_id })?;
        if owner != writer {
            return Err(RegistryError::WrongPrincipal {
                named: writer.chars().take(64).collect(),
                owner: owner.clone(),
                key_id: *key_id,
            });
        }
        let rec = principal
            .keys
            .get(*slot)
            .ok_or(RegistryError::UnknownKey { key_id: *key_id })?;
        if rec.added_at > index {
            return Err(RegistryError::NotYetRegistered {
                key_id: *key_id,
                added_at: rec.added_at,
            });
        }
        if let Some(revoked_at) = principal.revoked_at.filter(|r| *r < index) {
            return Err(RegistryError::Revoked {
                name: principal.name.clone(),
                revoked_at,
            });
        }
        if let Some(retired_at) = rec.retired_at.filter(|r| *r < index) {
            return Err(RegistryError::Retired {
                name: principal.name.clone(),
                key_id: *key_id,
                retired_at,
            });
        }
        Ok((principal, &rec.key))
    }

    /// Verifies the signature of the registry record `entry` logged at `index`, which makes
    /// `change`: the genesis record (before any operator) by the key it registers, every later
    /// record by its signer's key valid at `index` (`docs/formats.md`, "Control records"). Call
    /// it before [`Registry::apply`]; the write path, `verify` and the monitor share it.
    pub fn verify_record_signature(
        &self,
        index: u64,
        entry: &SignedEntry,
        change: &RegistryChange,
    ) -> Result<(), crate::Error> {
        let key = match (&self.operator, change) {
            (None, RegistryChange::Add { key, .. }) => key,
            _ => {
                let body = entry.body();
                self.signer_at(&body.writer, &body.key_id, index)?.1
            }
        };
        Ok(entry.verify_signature(key)?)
    }

    /// Applies the registry record `entry` (already signature-checked) logged at `index`.
    ///
    /// The genesis record must be at index 0 and self-signed; every later change must be signed
    /// by the operator's key that is current at `index`.
    pub fn apply(
        &mut self,
        index: u64,
        entry: &SignedEntry,
        change: &RegistryChange,
    ) -> Result<(), RegistryError> {
        let body = entry.body();
        if body.kind != EntryKind::Registry {
            return Err(RegistryError::BadChange("not a registry record".into()));
        }
        if body.writer != change.name() || self.operator.is_some() {
            // Not genesis: must come from the operator.
            let operator = self.operator.clone().ok_or_else(|| {
                RegistryError::BadChange(
                    "the first record of a log must be the operator registering itself".into(),
                )
            })?;
            if body.writer != operator {
                return Err(RegistryError::BadChange(format!(
                    "only the operator `{operator}` may change the registry, not `{}`",
                    body.writer
                )));
            }
            self.signer_at(&body.writer, &body.key_id, index)?;
        }
        match change {
            RegistryChange::Add { name, class, key } => {
                if self.operator.is_none() {
                    if index != 0 || *class != TrustClass::Trusted {
                        return Err(RegistryError::BadChange(
                            "genesis must be a trusted principal adding itself at index 0".into(),
                        ));
                    }
                    if keys::key_id(key) != body.key_id || body.writer != *name {
                        return Err(RegistryError::BadChange(
                            "genesis must be signed by the key it registers".into(),
                        ));
                    }
                    self.operator = Some(name.clone());
                }
                if self.principals.contains_key(name) {
                    return Err(RegistryError::BadChange(format!(
                        "principal `{name}` already exists (names are never reused)"
                    )));
                }
                let key_id = keys::key_id(key);
                if self.by_key.contains_key(&key_id) {
                    return Err(RegistryError::BadChange(format!(
                        "key {key_id} is already registered"
                    )));
                }
                self.by_key.insert(key_id, (name.clone(), 0));
                self.principals.insert(
                    name.clone(),
                    Principal {
                        name: name.clone(),
                        class: *class,
                        keys: vec![KeyRecord {
                            key: *key,
                            key_id,
                            added_at: index,
                            retired_at: None,
                        }],
                        revoked_at: None,
                        revoke_reason: None,
                    },
                );
            }
            RegistryChange::Rotate { name, key } => {
                let key_id = keys::key_id(key);
                if self.by_key.contains_key(&key_id) {
                    return Err(RegistryError::BadChange(format!(
                        "key {key_id} is already registered"
                    )));
                }
                let p = self.live_principal(name)?;
                if let Some(last) = p.keys.last_mut() {
                    last.retired_at = Some(index);
                }
                p.keys.push(KeyRecord {
                    key: *key,
                    key_id,
                    added_at: index,
                    retired_at: None,
                });
                let slot = p.keys.len() - 1;
                self.by_key.insert(key_id, (name.clone(), slot));
            }
            RegistryChange::Revoke { name, reason } => {
                if self.operator.as_deref() == Some(name.as_str()) {
                    return Err(RegistryError::BadChange(
                        "the operator cannot revoke itself; rotate its key instead".into(),
                    ));
                }
                let p = self.live_principal(name)?;
                p.revoked_at = Some(index);
                p.revoke_reason = Some(reason.clone());
            }
        }
        Ok(())
    }

    fn live_principal(&mut self, name: &str) -> Result<&mut Principal, RegistryError> {
        let p = self
            .principals
            .get_mut(name)
            .ok_or_else(|| RegistryError::BadChange(format!("no principal named `{name}`")))?;
        if p.revoked_at.is_some() {
            return Err(RegistryError::BadChange(format!(
                "principal `{name}` is revoked"
            )));
        }
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::{EntryBody, Scope};
    use crate::label::{Fallback, TrustLabel, Weight};
    use ed25519_dalek::SigningKey;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn key(seed: u64) -> SigningKey {
        keys::generate(&mut ChaCha20Rng::seed_from_u64(seed))
    }

    fn record(writer: &str, signer: &SigningKey, change: &RegistryChange) -> SignedEntry {
        let content = change.to_content();
        let body = EntryBody {
            scope: Scope::default(),
            writer: writer.into(),
            key_id: keys::key_id(&signer.verifying_key()),
            kind: EntryKind::Registry,
            content_hash: Hash256::of(&content),
            content_len: content.len() as u64,
            source_hash: None,
            context_hash: None,
            parents: vec![],
            attribution: "none".into(),
            tau: Weight::from_bp(5000).unwrap(),
            fallback: Fallback::Strict,
            label: TrustLabel::Trusted,
            created_at_ms: 0,
            metadata: Default::default(),
        };
        SignedEntry::sign(body, signer).unwrap()
    }

    #[test]
    fn genesis_rotation_and_revocation() {
        let op = key(1);
        let agent = key(2);
        let agent2 = key(3);
        let mut reg = Registry::new();
        let genesis = RegistryChange::Add {
            name: "operator".into(),
            class: TrustClass::Trusted,
            key: op.verifying_key(),
        };
        reg.apply(0, &record("operator", &op, &genesis), &genesis)
            .unwrap();
        assert_eq!(reg.operator(), Some("operator"));

        let add = RegistryChange::Add {
            name: "agent".into(),
            class: TrustClass::Trusted,
            key: agent.verifying_key(),
        };
        // A non-operator cannot change the registry.
        assert!(reg.apply(1, &record("agent", &agent, &add), &add).is_err());
        reg.apply(1, &record("operator", &op, &add), &add).unwrap();
        let kid = keys::key_id(&agent.verifying_key());
        assert!(reg.signer_at("agent", &kid, 2).is_ok());
        assert!(matches!(
            reg.signer_at("operator", &kid, 2),
            Err(RegistryError::WrongPrincipal { .. })
        ));

        let rot = RegistryChange::Rotate {
            name: "agent".into(),
            key: agent2.verifying_key(),
        };
        reg.apply(5, &record("operator", &op, &rot), &rot).unwrap();
        assert!(
            reg.signer_at("agent", &kid, 4).is_ok(),
            "old entries stay valid"
        );
        assert!(matches!(
            reg.signer_at("agent", &kid, 6),
            Err(RegistryError::Retired { retired_at: 5, .. })
        ));
        let kid2 = keys::key_id(&agent2.verifying_key());
        assert!(reg.signer_at("agent", &kid2, 6).is_ok());

        let rev = RegistryChange::Revoke {
            name: "agent".into(),
            reason: "compromised".into(),
        };
        reg.apply(9, &record("operator", &op, &rev), &rev).unwrap();
        assert!(matches!(
            reg.signer_at("agent", &kid2, 10),
            Err(RegistryError::Revoked { revoked_at: 9, .. })
        ));
        assert!(reg.signer_at("agent", &kid2, 8).is_ok());
        let unknown = keys::key_id(&key(77).verifying_key());
        assert!(matches!(
            reg.signer_at("agent", &unknown, 10),
            Err(RegistryError::UnknownKey { .. })
        ));
    }

    #[test]
    fn genesis_must_be_self_signed_at_zero() {
        let op = key(1);
        let other = key(2);
        let genesis = RegistryChange::Add {
            name: "operator".into(),
            class: TrustClass::Trusted,
            key: op.verifying_key(),
        };
        let mut reg = Registry::new();
        assert!(
            reg.apply(0, &record("operator", &other, &genesis), &genesis)
                .is_err()
        );
        assert!(
            reg.apply(3, &record("operator", &op, &genesis), &genesis)
                .is_err()
        );
    }

    #[test]
    fn names() {
        for good in ["a", "agent-1", "web.fetch", "x_y"] {
            validate_name(good).unwrap();
        }
        for bad in ["", "A", "-a", "a b", "é", &"a".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
