//! Signed checkpoints of the log (M3): C2SP tlog-checkpoint in a C2SP signed note.
//!
//! A checkpoint commits to the whole log at one size: its origin (the log's name), its tree
//! size and its RFC 6962 root hash ([`Checkpoint`], <https://c2sp.org/tlog-checkpoint>). The log
//! signs it as a signed note ([`sign_note`], <https://c2sp.org/signed-note>) with an Ed25519
//! key, so standard transparency-log verifiers and witnesses can check it, and a client that
//! holds two checkpoints can ask for a consistency proof between them
//! ([`crate::merkle::verify_consistency`]).
//!
//! This module does no I/O and reads no clock: callers pass note text in and get text out.
//! `docs/merkle-and-checkpoints.md` shows a checkpoint byte by byte.

mod body;
mod cosignature;
mod error;
mod note;
mod vkey;

pub use body::Checkpoint;
pub use cosignature::{
    COSIGNATURE_HEADER, COSIGNATURE_TYPE, CosignatureVerifier, MAX_TIMESTAMP, cosign,
    cosignature_message,
};
pub use error::CheckpointError;
pub use note::{
    ED25519_TYPE, MAX_SIGNATURES, NoteSignature, NoteVerifier, SIGNATURE_PREFIX, SignedNote,
    append_signatures, key_id, note_with_signature, open_note, parse_note, sign_note,
    validate_key_name,
};

use ed25519_dalek::SigningKey;

/// Validates `cp` and signs its body as a note from `key` under `name`.
///
/// The C2SP spec recommends that `name` equal `cp.origin`.
pub fn sign_checkpoint(
    cp: &Checkpoint,
    name: &str,
    key: &SigningKey,
) -> Result<String, CheckpointError> {
    cp.validate()?;
    sign_note(&cp.body(), name, key)
}

/// Validates `cp` and makes its signed note from `signature`, made elsewhere (an external
/// signer) by `key` over [`Checkpoint::body`]: the note [`sign_checkpoint`] makes with the
/// secret key. The caller verifies the signature before use.
pub fn checkpoint_note_with_signature(
    cp: &Checkpoint,
    name: &str,
    key: &ed25519_dalek::VerifyingKey,
    signature: &ed25519_dalek::Signature,
) -> Result<String, CheckpointError> {
    cp.validate()?;
    note_with_signature(&cp.body(), name, key, signature)
}

/// Verifies a signed checkpoint note against `verifier` ([`open_note`]) and parses its body
/// ([`Checkpoint::parse_body`]).
///
/// The caller decides what origin it expects: compare `origin` with the log it asked for.
pub fn open_checkpoint(note: &str, verifier: &NoteVerifier) -> Result<Checkpoint, CheckpointError> {
    Checkpoint::parse_body(&open_note(note, verifier)?)
}
