//! A signed entry: body, Ed25519 signature, and the derived id and leaf bytes.

use super::fields::{Fields, map};
use super::{EntryBody, EntryError, field_err};
use crate::canonical::{self, Value};
use crate::hash::{EntryId, Hash256};
use crate::keys::{self, Domain};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};

/// An entry with its signature. Construct with [`SignedEntry::sign`] or decode with
/// [`SignedEntry::from_leaf`]; either way the id and canonical bytes are computed once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SignedEntry {
    body: EntryBody,
    body_bytes: Vec<u8>,
    signature: Signature,
    id: EntryId,
}

impl SignedEntry {
    /// Validates, encodes and signs `body` with `key`. The body's `key_id` must be `key`'s.
    pub fn sign(body: EntryBody, key: &SigningKey) -> Result<SignedEntry, EntryError> {
        let body_bytes = Self::checked_bytes(&body, &key.verifying_key())?;
        let signature = keys::sign(key, Domain::EntryV1, &body_bytes);
        Ok(Self::assemble(body, body_bytes, signature))
    }

    /// Validates, encodes and signs `body` with `sign`, a signer that holds the secret of `key`
    /// in this process (another implementation of Ed25519 than this crate's, chosen for speed:
    /// `memlineage`'s file keys). `sign` gets the exact message [`SignedEntry::sign`] signs
    /// (the domain prefix and the canonical body). Ed25519 is deterministic (RFC 8032
    /// §5.1.6), so a correct signer makes the entry byte for byte; the signature is not
    /// verified here — the caller proves its signer equal to [`SignedEntry::sign`] once per key
    /// (`memlineage`'s `file_key.rs`), and the log verifies every entry it reads.
    pub fn sign_by(
        body: EntryBody,
        key: &VerifyingKey,
        sign: impl FnOnce(&[u8]) -> Signature,
    ) -> Result<SignedEntry, EntryError> {
        let body_bytes = Self::checked_bytes(&body, key)?;
        let signature = sign(&Domain::EntryV1.message(&body_bytes));
        Ok(Self::assemble(body, body_bytes, signature))
    }

    /// Validates `body`, checks that its key id is `key`'s, and encodes it canonically.
    fn checked_bytes(body: &EntryBody, key: &VerifyingKey) -> Result<Vec<u8>, EntryError> {
        body.validate()?;
        if body.key_id != keys::key_id(key) {
            return Err(field_err(
                "key",
                "the key id does not match the signing key",
            ));
        }
        Ok(body.canonical_bytes())
    }

    /// The entry of a checked body, its canonical bytes and its signature (the id derived).
    fn assemble(body: EntryBody, body_bytes: Vec<u8>, signature: Signature) -> SignedEntry {
        let id = EntryId(Hash256::of(&body_bytes));
        SignedEntry {
            body,
            body_bytes,
            signature,
            id,
        }
    }

    /// The exact message [`SignedEntry::sign`] signs for `body`: the domain prefix and the
    /// canonical body (`docs/formats.md`). An external signer signs these bytes.
    pub fn signing_message(body: &EntryBody) -> Vec<u8> {
        Domain::EntryV1.message(&body.canonical_bytes())
    }

    /// An entry signed elsewhere (an external signer): validates and encodes `body`, checks
    /// that its key id is `key`'s and that `signature` verifies strictly over
    /// [`SignedEntry::signing_message`]. Ed25519 is deterministic (RFC 8032 §5.1.6), so the
    /// result is byte for byte the entry [`SignedEntry::sign`] makes with the secret key.
    pub fn with_signature(
        body: EntryBody,
        key: &VerifyingKey,
        signature: Signature,
    ) -> Result<SignedEntry, EntryError> {
        let body_bytes = Self::checked_bytes(&body, key)?;
        keys::verify(key, Domain::EntryV1, &body_bytes, &signature)
            .map_err(|_| field_err("signature", "the signature does not verify under the key"))?;
        Ok(Self::assemble(body, body_bytes, signature))
    }

    /// Decodes a log leaf strictly. The signature is *not* checked here (that needs the
    /// registry); call [`SignedEntry::verify_signature`].
    ///
    /// A valid leaf is read directly from its bytes (`entry/direct.rs`); anything else goes
    /// through the generic decoder, which names the fault. Both accept exactly the same
    /// leaves with the same entries (`fuzz_checks::entry_leaf`).
    pub fn from_leaf(leaf: &[u8]) -> Result<SignedEntry, EntryError> {
        match super::direct::decode_leaf(leaf) {
            Some(entry) => Ok(entry),
            None => Self::from_leaf_generic(leaf),
        }
    }

    /// The generic strict decoding of a leaf: the canonical CBOR tree, its fields, and the
    /// body re-encoded for the signed bytes. Every refusal of [`SignedEntry::from_leaf`] is
    /// this function's error.
    pub(crate) fn from_leaf_generic(leaf: &[u8]) -> Result<SignedEntry, EntryError> {
        let value = canonical::decode(leaf)?;
        let mut f = Fields::new("leaf", &value)?;
        let body_value = f.take("body")?;
        let sig = f.bytes("sig")?;
        f.finish()?;
        let signature =
            keys::signature_from_bytes(sig).map_err(|e| field_err("sig", e.to_string()))?;
        let body = EntryBody::from_value(body_value)?;
        let body_bytes = canonical::encode(body_value)?;
        Ok(Self::assemble(body, body_bytes, signature))
    }

    /// An entry from its already checked parts (the direct decoder's result).
    pub(super) fn from_parts(
        body: EntryBody,
        body_bytes: Vec<u8>,
        signature: Signature,
        id: EntryId,
    ) -> SignedEntry {
        SignedEntry {
            body,
            body_bytes,
            signature,
            id,
        }
    }

    /// The canonical leaf: `{"sig": signature, "body": body}` (see `docs/formats.md`).
    pub fn to_leaf(&self) -> Vec<u8> {
        // The body value re-encodes to exactly `body_bytes`; the leaf is built by concatenation
        // of the canonical map head, the two keys in canonical order, and the encoded values.
        let mut leaf = Vec::with_capacity(self.body_bytes.len() + 80);
        leaf.push(0xa2); // map(2)
        leaf.extend_from_slice(&[0x63, b's', b'i', b'g']); // "sig" (shorter key sorts first)
        leaf.extend_from_slice(&[0x58, 0x40]); // bytes(64)
        leaf.extend_from_slice(&self.signature.to_bytes());
        leaf.extend_from_slice(&[0x64, b'b', b'o', b'd', b'y']); // "body"
        leaf.extend_from_slice(&self.body_bytes);
        leaf
    }

    /// The leaf as a CBOR value (for tests and tools; [`to_leaf`](Self::to_leaf) is the fast path).
    pub fn to_leaf_value(&self) -> Result<Value, EntryError> {
        Ok(map(vec![
            ("sig", Value::Bytes(self.signature.to_bytes().to_vec())),
            ("body", canonical::decode(&self.body_bytes)?),
        ]))
    }

    /// Checks the signature under `key`, and that `key` is the one the body names.
    pub fn verify_signature(&self, key: &VerifyingKey) -> Result<(), EntryError> {
        if self.body.key_id != keys::key_id(key) {
            return Err(EntryError::Signature {
                id: self.id,
                problem: "signed by a different key than the one it names".to_string(),
            });
        }
        keys::verify(key, Domain::EntryV1, &self.body_bytes, &self.signature).map_err(|_| {
            EntryError::Signature {
                id: self.id,
                problem: "signature does not verify".to_string(),
            }
        })
    }

    /// The entry id: SHA-256 of the canonical body.
    pub fn id(&self) -> EntryId {
        self.id
    }
    /// The body.
    pub fn body(&self) -> &EntryBody {
        &self.body
    }
    /// The canonical body bytes (what is signed, after the domain prefix).
    pub fn body_bytes(&self) -> &[u8] {
        &self.body_bytes
    }
    /// The signature.
    pub fn signature(&self) -> &Signature {
        &self.signature
    }
}
