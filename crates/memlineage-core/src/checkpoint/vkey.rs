//! Verifier keys (C2SP signed-note §Verifier keys): `<name>+<hex key ID>+<base64(type || key)>`,
//! the format of golang.org/x/mod/sumdb/note that transparency-log tooling uses to configure
//! trust in logs (type `0x01`, Ed25519 note signatures) and in witnesses (type `0x04`,
//! timestamped Ed25519 cosignatures, C2SP tlog-cosignature).
//!
//! Both kinds share the layout and the key ID rule
//! `SHA-256(name || 0x0A || type || public key)[:4]`; only the type byte differs. This module
//! holds what they share, so that [`NoteVerifier`](super::NoteVerifier) and
//! [`CosignatureVerifier`](super::CosignatureVerifier) parse and print one way.

use super::error::{CheckpointError, truncate};
use super::note::validate_key_name;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

/// The key ID of an Ed25519 key of signature type `type_byte` under `name`:
/// `SHA-256(name || 0x0A || type || key)[..4]` (C2SP signed-note, tlog-cosignature).
pub(crate) fn typed_key_id(name: &str, type_byte: u8, key: &VerifyingKey) -> [u8; 4] {
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update([b'\n', type_byte]);
    h.update(key.as_bytes());
    let d = h.finalize();
    [d[0], d[1], d[2], d[3]]
}

/// A named Ed25519 key of one signature type, checked: a valid name, a valid point that is
/// not of small order.
pub(crate) fn checked_key(name: &str, key: VerifyingKey) -> Result<VerifyingKey, CheckpointError> {
    validate_key_name(name)?;
    if key.is_weak() {
        return Err(CheckpointError::InvalidPublicKey {
            reason: "it is a weak (small-order) key",
        });
    }
    Ok(key)
}

/// Parses `<name>+<8 lowercase hex digits>+<base64(type || 32-byte key)>` whose type byte must
/// be `want_type`, and checks that the stated key ID matches the name, type and key.
pub(crate) fn parse_vkey(
    vkey: &str,
    want_type: u8,
) -> Result<(String, VerifyingKey), CheckpointError> {
    let malformed = |reason: &str| CheckpointError::MalformedVerifierKey {
        reason: reason.to_owned(),
    };
    // The name cannot contain '+', the hex ID cannot either; the base64 part may.
    let (name, rest) = vkey
        .split_once('+')
        .ok_or_else(|| malformed("no '+' after the key name"))?;
    let (id_hex, key_b64) = rest
        .split_once('+')
        .ok_or_else(|| malformed("no '+' after the key ID"))?;
    validate_key_name(name)?;
    if id_hex.len() != 8
        || !id_hex
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(malformed("the key ID is not 8 lowercase hex digits"));
    }
    let mut stated = [0u8; 4];
    hex::decode_to_slice(id_hex, &mut stated)
        .map_err(|_| malformed("the key ID is not 8 lowercase hex digits"))?;
    let raw = STANDARD
        .decode(key_b64)
        .map_err(|e| malformed(&format!("the key is not standard base64 ({e})")))?;
    let Some((&type_byte, key_bytes)) = raw.split_first() else {
        return Err(malformed("the key is empty"));
    };
    if type_byte != want_type {
        return Err(CheckpointError::UnsupportedKeyType {
            type_byte,
            expected: want_type,
        });
    }
    let key_bytes: [u8; 32] = key_bytes.try_into().map_err(|_| {
        malformed(&format!(
            "an Ed25519 key is 32 bytes after the type byte, found {}",
            key_bytes.len()
        ))
    })?;
    let key =
        VerifyingKey::from_bytes(&key_bytes).map_err(|_| CheckpointError::InvalidPublicKey {
            reason: "the 32 bytes are not a valid Edwards point",
        })?;
    let key = checked_key(name, key)?;
    let computed = typed_key_id(name, type_byte, &key);
    if computed != stated {
        return Err(CheckpointError::KeyIdMismatch {
            name: truncate(name),
            stated: id_hex.to_owned(),
            computed: hex::encode(computed),
        });
    }
    Ok((name.to_owned(), key))
}

/// Writes the verifier key string of `key` under `name` with type `type_byte`.
pub(crate) fn format_vkey(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    type_byte: u8,
    id: [u8; 4],
    key: &VerifyingKey,
) -> std::fmt::Result {
    let mut raw = [0u8; 33];
    raw[0] = type_byte;
    raw[1..].copy_from_slice(key.as_bytes());
    write!(f, "{name}+{}+{}", hex::encode(id), STANDARD.encode(raw))
}
