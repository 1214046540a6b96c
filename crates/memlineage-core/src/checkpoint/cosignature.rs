//! Witness cosignatures of checkpoints: C2SP tlog-cosignature, Ed25519 `cosignature/v1`
//! (<https://c2sp.org/tlog-cosignature>).
//!
//! A cosignature is one more signature line on a checkpoint note,
//! `— <witness name> base64(key ID || timestamp || signature)`, by which a witness states that,
//! as of `timestamp` (POSIX seconds, 8 bytes big-endian), the largest consistent tree it has
//! seen for the log named by the origin line has this root. The key ID is
//! `SHA-256(name || 0x0A || 0x04 || public key)[:4]` (signature type `0x04`), and the Ed25519
//! signature covers
//!
//! ```text
//! cosignature/v1\n
//! time <timestamp in decimal>\n
//! <the whole checkpoint body, with its final newline>
//! ```
//!
//! The message does not name the witness, so one key must serve one witness only (the spec's
//! rule). golang.org/x/mod/sumdb/note verifies notes but knows only key type `0x01`; the
//! interop test verifies cosignatures with Go's crypto/ed25519 over this message, through
//! `note.Open` with a verifier written for it (`docs/merkle-and-checkpoints.md`).

use super::error::CheckpointError;
use super::note::{SIGNATURE_PREFIX, check_no_control, parse_note, validate_key_name};
use super::vkey::{checked_key, format_vkey, parse_vkey, typed_key_id};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::fmt;
use std::str::FromStr;

/// The signature type byte of timestamped Ed25519 cosignatures (C2SP signed-note §Signature
/// types, `0x04`).
pub const COSIGNATURE_TYPE: u8 = 0x04;

/// The header line of the signed message (domain separation).
pub const COSIGNATURE_HEADER: &str = "cosignature/v1\n";

/// The largest timestamp a cosignature may carry (`2^63 - 1`, C2SP tlog-cosignature §Format).
pub const MAX_TIMESTAMP: u64 = (1 << 63) - 1;

/// The exact bytes a `cosignature/v1` signature covers: the header line, the timestamp line
/// and the checkpoint body (the note text, with its final newline, without signature lines).
pub fn cosignature_message(body: &str, timestamp: u64) -> Vec<u8> {
    let mut m = Vec::with_capacity(body.len() + 40);
    m.extend_from_slice(COSIGNATURE_HEADER.as_bytes());
    m.extend_from_slice(format!("time {timestamp}\n").as_bytes());
    m.extend_from_slice(body.as_bytes());
    m
}

/// A witness's public key: name, key ID (type `0x04`) and Ed25519 key.
///
/// Parsed from and printed as a verifier key `<name>+<hex id>+<base64(0x04 || key)>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CosignatureVerifier {
    name: String,
    id: [u8; 4],
    key: VerifyingKey,
}

impl CosignatureVerifier {
    /// A verifier for the witness `name` with public key `key`.
    pub fn new(name: &str, key: VerifyingKey) -> Result<Self, CheckpointError> {
        let key = checked_key(name, key)?;
        Ok(CosignatureVerifier {
            name: name.to_owned(),
            id: typed_key_id(name, COSIGNATURE_TYPE, &key),
            key,
        })
    }

    /// Parses a verifier key of type `0x04`.
    pub fn parse(vkey: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_vkey(vkey, COSIGNATURE_TYPE)?;
        Self::new(&name, key)
    }

    /// The witness name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The 4-byte key ID.
    pub fn key_id(&self) -> [u8; 4] {
        self.id
    }

    /// The Ed25519 public key.
    pub fn key(&self) -> &VerifyingKey {
        &self.key
    }

    /// The verifier key string.
    pub fn to_vkey(&self) -> String {
        self.to_string()
    }

    /// Verifies the cosignature lines of `note` from this witness and returns the newest
    /// timestamp among them.
    ///
    /// Lines from other keys are ignored; every line from this key must verify (one failing
    /// line rejects the note, as for log signatures) and at least one is required. The note's
    /// other signatures are not checked here: open it with the log's key as well.
    pub fn verify(&self, note: &str) -> Result<u64, CheckpointError> {
        let parsed = parse_note(note)?;
        let mut newest: Option<u64> = None;
        for sig in &parsed.signatures {
            if sig.name != self.name || sig.key_id != self.id {
                continue;
            }
            let invalid = || CheckpointError::InvalidSignature {
                name: self.name.clone(),
                key_id: hex::encode(self.id),
            };
            let Some((ts, sig_bytes)) = split_timestamped(&sig.signature) else {
                return Err(invalid());
            };
            if ts > MAX_TIMESTAMP {
                return Err(invalid());
            }
            self.key
                .verify_strict(
                    &cosignature_message(&parsed.body, ts),
                    &Signature::from_bytes(&sig_bytes),
                )
                .map_err(|_| invalid())?;
            newest = Some(newest.map_or(ts, |n| n.max(ts)));
        }
        newest.ok_or_else(|| CheckpointError::NoVerifiedSignature {
            name: self.name.clone(),
            key_id: hex::encode(self.id),
            found: parsed.signatures.len(),
        })
    }
}

/// `timestamp (8 bytes, big-endian) || signature (64 bytes)`, or `None` for another length.
fn split_timestamped(raw: &[u8]) -> Option<(u64, [u8; 64])> {
    if raw.len() != 72 {
        return None;
    }
    let (ts, sig) = raw.split_at(8);
    Some((
        u64::from_be_bytes(ts.try_into().ok()?),
        sig.try_into().ok()?,
    ))
}

impl fmt::Display for CosignatureVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_vkey(f, &self.name, COSIGNATURE_TYPE, self.id, &self.key)
    }
}

impl FromStr for CosignatureVerifier {
    type Err = CheckpointError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// Cosigns the checkpoint body `body` as witness `name` at `timestamp` (POSIX seconds) and
/// returns the signature line, `— <name> <base64>` and a newline, ready to append to the note.
///
/// The body must be note text (ending in a newline, no control characters but newline); the
/// caller checks that it is a checkpoint it has verified. Ed25519 is deterministic: the same
/// body, key and timestamp always give the same line.
pub fn cosign(
    body: &str,
    name: &str,
    key: &SigningKey,
    timestamp: u64,
) -> Result<String, CheckpointError> {
    validate_key_name(name)?;
    check_no_control(body)?;
    if !body.ends_with('\n') {
        return Err(CheckpointError::MissingFinalNewline);
    }
    if timestamp > MAX_TIMESTAMP {
        return Err(CheckpointError::TimestampTooLarge { timestamp });
    }
    let verifier = CosignatureVerifier::new(name, key.verifying_key())?;
    let sig = key.sign(&cosignature_message(body, timestamp));
    let mut raw = [0u8; 76];
    raw[..4].copy_from_slice(&verifier.id);
    raw[4..12].copy_from_slice(&timestamp.to_be_bytes());
    raw[12..].copy_from_slice(&sig.to_bytes());
    Ok(format!(
        "{SIGNATURE_PREFIX}{name} {}\n",
        STANDARD.encode(raw)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{NoteVerifier, open_note, sign_note};

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn cosignature_round_trip_beside_the_log_signature() {
        let body = "example.com/log\n3\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n";
        let note = sign_note(body, "example.com/log", &key(1)).unwrap();
        let line = cosign(body, "witness.example/w1", &key(2), 1_700_000_000).unwrap();
        let cosigned = format!("{note}{line}");
        let w = CosignatureVerifier::new("witness.example/w1", key(2).verifying_key()).unwrap();
        assert_eq!(w.verify(&cosigned), Ok(1_700_000_000));
        // The log's signature still opens; the cosignature line is ignored by it.
        let log = NoteVerifier::from_signing_key("example.com/log", &key(1)).unwrap();
        assert_eq!(open_note(&cosigned, &log).unwrap(), body);
        // The vkey round-trips with type 0x04, and is refused as a log key.
        assert_eq!(w.to_vkey().parse::<CosignatureVerifier>().unwrap(), w);
        assert!(matches!(
            NoteVerifier::parse(&w.to_vkey()),
            Err(CheckpointError::UnsupportedKeyType {
                type_byte: 4,
                expected: 1
            })
        ));
        // No cosignature: refused.
        assert!(matches!(
            w.verify(&note),
            Err(CheckpointError::NoVerifiedSignature { .. })
        ));
    }

    #[test]
    fn cosignature_binds_body_and_timestamp() {
        let body = "example.com/log\n3\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n";
        let w = CosignatureVerifier::new("w", key(2).verifying_key()).unwrap();
        let line = cosign(body, "w", &key(2), 5).unwrap();
        let other = "example.com/log\n4\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n";
        let moved = format!("{other}\n{line}");
        assert!(matches!(
            w.verify(&moved),
            Err(CheckpointError::InvalidSignature { .. })
        ));
        // Change the timestamp bytes: the signature no longer verifies.
        let b64 = line.trim_end().rsplit(' ').next().unwrap();
        let mut raw = STANDARD.decode(b64).unwrap();
        raw[11] ^= 1;
        let forged = format!("{body}\n— w {}\n", STANDARD.encode(&raw));
        assert!(matches!(
            w.verify(&forged),
            Err(CheckpointError::InvalidSignature { .. })
        ));
        assert!(cosign(body, "w", &key(2), MAX_TIMESTAMP + 1).is_err());
    }

    #[test]
    fn cosignature_message_layout() {
        assert_eq!(
            cosignature_message("o\n1\nr\n", 1679315147),
            b"cosignature/v1\ntime 1679315147\no\n1\nr\n".to_vec()
        );
    }
}
