//! C2SP signed notes (<https://c2sp.org/signed-note>) with Ed25519 keys.
//!
//! A signed note is a UTF-8 text ending in a newline, a blank line, then one or more lines
//! `— <key name> <base64(key ID || signature)>` (em dash U+2014, space). The signature covers
//! the text including its final newline, not the blank line. A key is identified by its name
//! and a 4-byte key ID, `SHA-256(name || 0x0A || 0x01 || public key)[:4]` for Ed25519
//! (§Ed25519 signatures). A verifier is configured with a *verifier key* string
//! `<name>+<hex key ID>+<base64(0x01 || public key)>`, the format of golang.org/x/mod/sumdb/note
//! that transparency-log tooling uses.

use super::error::{CheckpointError, truncate};
use super::vkey::{checked_key, format_vkey, parse_vkey, typed_key_id};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use std::fmt;
use std::str::FromStr;

/// The signature type byte of Ed25519 in C2SP signed-note §Signature types.
pub const ED25519_TYPE: u8 = 0x01;

/// The prefix of every signature line: em dash (U+2014) and a space.
pub const SIGNATURE_PREFIX: &str = "\u{2014} ";

/// The most signature lines [`parse_note`] reads. The spec asks verifiers to accept at least
/// 16 and to bound the work an untrusted note can cause; 100 is golang.org/x/mod's limit.
pub const MAX_SIGNATURES: usize = 100;

/// The key ID of an Ed25519 key: `SHA-256(name || 0x0A || 0x01 || pubkey)[..4]`
/// (C2SP signed-note §Ed25519 signatures).
///
/// The ID only tells keys apart; it is not a security boundary (a colliding key still fails to
/// verify), so four bytes suffice.
pub fn key_id(name: &str, key: &VerifyingKey) -> [u8; 4] {
    typed_key_id(name, ED25519_TYPE, key)
}

/// Checks a key name: non-empty, no Unicode whitespace, no `+` (C2SP signed-note §Format).
///
/// `+` is excluded because it separates the fields of a verifier key; spaces because one ends
/// the name on a signature line.
pub fn validate_key_name(name: &str) -> Result<(), CheckpointError> {
    let reason = if name.is_empty() {
        "it is empty"
    } else if name.chars().any(char::is_whitespace) {
        "it contains whitespace"
    } else if name.contains('+') {
        "it contains '+'"
    } else if name.chars().any(char::is_control) {
        "it contains a control character"
    } else {
        return Ok(());
    };
    Err(CheckpointError::InvalidKeyName {
        name: truncate(name),
        reason,
    })
}

/// Rejects ASCII control characters other than newline (C2SP signed-note §Format).
pub(crate) fn check_no_control(text: &str) -> Result<(), CheckpointError> {
    match text
        .bytes()
        .enumerate()
        .find(|&(_, b)| b < 0x20 && b != b'\n')
    {
        Some((offset, byte)) => Err(CheckpointError::ControlCharacter { offset, byte }),
        None => Ok(()),
    }
}

/// A trusted Ed25519 note key: its name, key ID and public key.
///
/// Build it from a verifier key string with [`NoteVerifier::parse`] (or `str::parse`), or from
/// a name and key with [`NoteVerifier::new`]; format it with `Display` / [`to_vkey`](Self::to_vkey).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteVerifier {
    name: String,
    id: [u8; 4],
    key: VerifyingKey,
}

impl NoteVerifier {
    /// A verifier for `key` under `name`; the key ID is computed with [`key_id`].
    ///
    /// Rejects invalid names and weak (small-order) keys, for which `verify_strict` would
    /// reject every signature anyway.
    pub fn new(name: &str, key: VerifyingKey) -> Result<Self, CheckpointError> {
        let key = checked_key(name, key)?;
        Ok(NoteVerifier {
            name: name.to_owned(),
            id: key_id(name, &key),
            key,
        })
    }

    /// The verifier for the public half of `key` under `name`.
    pub fn from_signing_key(name: &str, key: &SigningKey) -> Result<Self, CheckpointError> {
        Self::new(name, key.verifying_key())
    }

    /// Parses `<name>+<8 lowercase hex digits>+<base64(0x01 || 32-byte key)>` and checks that
    /// the stated key ID matches the name and key.
    pub fn parse(vkey: &str) -> Result<Self, CheckpointError> {
        let (name, key) = parse_vkey(vkey, ED25519_TYPE)?;
        Self::new(&name, key)
    }

    /// The key name.
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

    /// The verifier key string `<name>+<hex id>+<base64(0x01 || key)>`.
    pub fn to_vkey(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for NoteVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_vkey(f, &self.name, ED25519_TYPE, self.id, &self.key)
    }
}

impl FromStr for NoteVerifier {
    type Err = CheckpointError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// One signature line of a note, parsed but not verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteSignature {
    /// The key name.
    pub name: String,
    /// The key ID (first four bytes of the decoded signature).
    pub key_id: [u8; 4],
    /// The signature bytes after the key ID (64 for Ed25519).
    pub signature: Vec<u8>,
}

/// A note split into its text and signature lines; nothing is verified yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedNote {
    /// The signed text, including its final newline.
    pub body: String,
    /// The signature lines, in order.
    pub signatures: Vec<NoteSignature>,
}

/// Splits a signed note into text and signature lines, checking the syntax of C2SP
/// signed-note §Format. Verifies nothing: use [`open_note`] for that.
pub fn parse_note(note: &str) -> Result<SignedNote, CheckpointError> {
    check_no_control(note)?;
    // The text ends at the last blank line; the text itself may contain blank lines.
    let split = note
        .rfind("\n\n")
        .ok_or(CheckpointError::MissingSignatureBlock)?;
    let (body, sigs) = (&note[..=split], &note[split + 2..]);
    if sigs.is_empty() {
        return Err(CheckpointError::MissingSignatureBlock);
    }
    let Some(sigs) = sigs.strip_suffix('\n') else {
        return Err(CheckpointError::MalformedSignatureLine {
            line: sigs.split('\n').count(),
            reason: "the last signature line does not end with a newline".to_owned(),
        });
    };
    let mut signatures = Vec::new();
    for (i, line) in sigs.split('\n').enumerate() {
        if i == MAX_SIGNATURES {
            return Err(CheckpointError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        signatures.push(parse_signature_line(i + 1, line)?);
    }
    Ok(SignedNote {
        body: body.to_owned(),
        signatures,
    })
}

impl NoteSignature {
    /// Parses one signature line (`— <name> <base64>`, without its newline), checking its
    /// syntax only: what a client needs to pick a witness's lines out of an `add-checkpoint`
    /// answer (C2SP tlog-witness: lines from unknown keys are ignored).
    pub fn parse_line(text: &str) -> Result<NoteSignature, CheckpointError> {
        parse_signature_line(1, text)
    }
}

fn parse_signature_line(line: usize, text: &str) -> Result<NoteSignature, CheckpointError> {
    let bad = |reason: String| CheckpointError::MalformedSignatureLine { line, reason };
    let rest = text.strip_prefix(SIGNATURE_PREFIX).ok_or_else(|| {
        bad(format!(
            "{:?} does not start with an em dash (U+2014) and a space",
            truncate(text)
        ))
    })?;
    let (name, b64) = rest
        .split_once(' ')
        .ok_or_else(|| bad("no space between key name and signature".to_owned()))?;
    validate_key_name(name).map_err(|e| bad(e.to_string()))?;
    let raw = STANDARD
        .decode(b64)
        .map_err(|e| bad(format!("the signature is not standard base64 ({e})")))?;
    if raw.len() < 5 {
        return Err(bad(format!(
            "the signature decodes to {} bytes; it needs a 4-byte key ID and a signature",
            raw.len()
        )));
    }
    let (id, sig) = raw.split_at(4);
    Ok(NoteSignature {
        name: name.to_owned(),
        key_id: [id[0], id[1], id[2], id[3]],
        signature: sig.to_vec(),
    })
}

/// Signs `body` as a C2SP signed note with one Ed25519 signature line from `key` under `name`.
///
/// `body` must end with a newline and contain no control characters other than newline.
/// Ed25519 is deterministic, so the same body, name and key always give the same note.
pub fn sign_note(body: &str, name: &str, key: &SigningKey) -> Result<String, CheckpointError> {
    note_with_signature(body, name, &key.verifying_key(), &key.sign(body.as_bytes()))
}

/// The signed note of `body` from `signature`, made elsewhere (an external signer) by `key`
/// over `body`'s bytes: the note [`sign_note`] makes with the secret key. The signature is
/// not checked here: the caller verifies it before use.
pub fn note_with_signature(
    body: &str,
    name: &str,
    key: &VerifyingKey,
    sig: &ed25519_dalek::Signature,
) -> Result<String, CheckpointError> {
    validate_key_name(name)?;
    check_no_control(body)?;
    if !body.ends_with('\n') {
        return Err(CheckpointError::MissingFinalNewline);
    }
    let verifier = NoteVerifier::new(name, *key)?;
    let mut raw = [0u8; 68];
    raw[..4].copy_from_slice(&verifier.id);
    raw[4..].copy_from_slice(&sig.to_bytes());
    let b64 = STANDARD.encode(raw);
    let mut out = String::with_capacity(body.len() + name.len() + b64.len() + 8);
    out.push_str(body);
    out.push('\n');
    out.push_str(SIGNATURE_PREFIX);
    out.push_str(name);
    out.push(' ');
    out.push_str(&b64);
    out.push('\n');
    Ok(out)
}

/// Adds the signature lines `lines` (each `— <name> <base64>` and a newline, as a witness
/// returns them) to the signed note `note`, leaving out lines the note already has.
///
/// Only the syntax of the lines is checked: the caller verifies the signatures it cares about
/// (a cosignature with [`CosignatureVerifier::verify`](super::CosignatureVerifier::verify)).
pub fn append_signatures(note: &str, lines: &str) -> Result<String, CheckpointError> {
    let parsed = parse_note(note)?;
    check_no_control(lines)?;
    let mut out = note.to_owned();
    let mut count = parsed.signatures.len();
    for (i, line) in lines.lines().enumerate() {
        parse_signature_line(i + 1, line)?;
        if note.lines().any(|l| l == line) || out[note.len()..].lines().any(|l| l == line) {
            continue;
        }
        count += 1;
        if count > MAX_SIGNATURES {
            return Err(CheckpointError::TooManySignatures {
                max: MAX_SIGNATURES,
            });
        }
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

/// Verifies `note` against the trusted `verifier` and returns its text (C2SP signed-note
/// §Signatures).
///
/// Signature lines from other keys (a different name or key ID) are ignored, as the spec
/// requires, so logs can rotate keys and witnesses can cosign. Every line from `verifier`'s
/// key must verify with `verify_strict` (which also rejects the small-order keys and `R` values
/// that plain Ed25519 verification accepts); one failing line rejects the whole note. At least one
/// line from `verifier` is required.
pub fn open_note(note: &str, verifier: &NoteVerifier) -> Result<String, CheckpointError> {
    let parsed = parse_note(note)?;
    let mut verified = 0usize;
    for sig in &parsed.signatures {
        if sig.name != verifier.name || sig.key_id != verifier.id {
            continue;
        }
        let invalid = || CheckpointError::InvalidSignature {
            name: verifier.name.clone(),
            key_id: hex::encode(verifier.id),
        };
        let bytes: [u8; 64] = sig.signature.as_slice().try_into().map_err(|_| invalid())?;
        verifier
            .key
            .verify_strict(parsed.body.as_bytes(), &Signature::from_bytes(&bytes))
            .map_err(|_| invalid())?;
        verified += 1;
    }
    if verified == 0 {
        return Err(CheckpointError::NoVerifiedSignature {
            name: verifier.name.clone(),
            key_id: hex::encode(verifier.id),
            found: parsed.signatures.len(),
        });
    }
    Ok(parsed.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn checkpoint_note_round_trip_and_vkey() {
        let k = key(7);
        let v = NoteVerifier::from_signing_key("example.com/log", &k).unwrap();
        let parsed: NoteVerifier = v.to_vkey().parse().unwrap();
        assert_eq!(parsed, v);
        let note = sign_note("hello\n\nworld\n", "example.com/log", &k).unwrap();
        assert_eq!(open_note(&note, &v).unwrap(), "hello\n\nworld\n");
    }

    #[test]
    fn checkpoint_key_names_are_validated() {
        for bad in ["", "a b", "a+b", "a\tb", "a\u{a0}b"] {
            assert!(validate_key_name(bad).is_err(), "{bad:?}");
        }
        assert!(validate_key_name("example.com/log-1").is_ok());
        assert!(sign_note("x\n", "a+b", &key(1)).is_err());
    }

    #[test]
    fn checkpoint_sign_rejects_bad_bodies() {
        assert_eq!(
            sign_note("no newline", "n", &key(1)),
            Err(CheckpointError::MissingFinalNewline)
        );
        assert_eq!(
            sign_note("a\rb\n", "n", &key(1)),
            Err(CheckpointError::ControlCharacter {
                offset: 1,
                byte: b'\r'
            })
        );
    }
}
