//! The last checkpoint note whose signature verified, so that retrieval does not re-verify an
//! unchanged note (one Ed25519 verification, ≈ 33 µs, on every call).
//!
//! Why this is sound: opening a note is a pure function of the note text, the origin (the
//! verifier's key name) and the public key. The cache remembers one successful
//! `open_checkpoint(note, NoteVerifier::new(origin, key))` and answers only a call with the
//! *same* three inputs, byte for byte: a changed note (a new checkpoint, or an edited one) or
//! another key is verified again. Everything that depends on the store rather than on the note
//! (the origin check, the size bound, the root against the stored tree) is still checked on
//! every call by the caller.

use memlineage_core::checkpoint::Checkpoint;
use std::sync::Mutex;

/// One verified note: its inputs and its parsed checkpoint.
#[derive(Clone, Debug)]
struct Verified {
    origin: String,
    key: [u8; 32],
    note: String,
    checkpoint: Checkpoint,
}

/// A one-entry cache of verified checkpoint notes, shared by the handle's threads.
#[derive(Debug, Default)]
pub(crate) struct VerifiedNote(Mutex<Option<Verified>>);

impl VerifiedNote {
    /// The checkpoint `note` opened to when it was verified under `origin` and `key`, if that
    /// exact verification succeeded before.
    pub(crate) fn get(
        &self,
        origin: &str,
        key: &ed25519_dalek::VerifyingKey,
        note: &str,
    ) -> Option<Checkpoint> {
        // A poisoned lock only loses the cache: the caller verifies instead.
        let guard = self.0.lock().ok()?;
        let v = guard.as_ref()?;
        (v.note == note && v.key == key.to_bytes() && v.origin == origin)
            .then(|| v.checkpoint.clone())
    }

    /// Remembers that `note` verified under `origin` and `key` and opened to `checkpoint`.
    pub(crate) fn put(
        &self,
        origin: &str,
        key: &ed25519_dalek::VerifyingKey,
        note: &str,
        checkpoint: &Checkpoint,
    ) {
        if let Ok(mut guard) = self.0.lock() {
            *guard = Some(Verified {
                origin: origin.to_string(),
                key: key.to_bytes(),
                note: note.to_string(),
                checkpoint: checkpoint.clone(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    #[test]
    fn answers_only_the_same_note_origin_and_key() {
        let k1 = ed25519_dalek::SigningKey::from_bytes(&[1; 32]).verifying_key();
        let k2 = ed25519_dalek::SigningKey::from_bytes(&[2; 32]).verifying_key();
        let cp = Checkpoint::new("example.com/log", 3, Hash256::of(b"root"));
        let cache = VerifiedNote::default();
        assert_eq!(cache.get("example.com/log", &k1, "note"), None);
        cache.put("example.com/log", &k1, "note", &cp);
        assert_eq!(cache.get("example.com/log", &k1, "note"), Some(cp.clone()));
        assert_eq!(cache.get("example.com/log", &k1, "note "), None);
        assert_eq!(cache.get("example.com/log", &k2, "note"), None);
        assert_eq!(cache.get("example.com/other", &k1, "note"), None);
        cache.put("example.com/log", &k2, "other note", &cp);
        assert_eq!(cache.get("example.com/log", &k1, "note"), None);
    }
}
