//! A file key ready to sign entries fast: the ed25519-dalek key the rest of the library uses
//! (public key, key id, checkpoints) and the same secret as an AWS-LC key pair, which signs an
//! entry in about 0.55 of dalek's time on this project's machines (8.5–8.9 µs against
//! 15.1–16.1 µs for a 400-byte message; `docs/performance.md`, "Entries signed with AWS-LC").
//! Every signed write and gate decision record pays one signature, so the service's throughput
//! follows it.
//!
//! Ed25519 is deterministic (RFC 8032 §5.1.6): both implementations make the same signature
//! for the same key and message, so records do not depend on which one signed. The AWS-LC
//! pair is made once per key, and kept only if it proves equal to dalek on that key — the
//! same public key, and the same signature on a probe message; otherwise (it cannot be made,
//! or differs) the key signs with dalek, as before.

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use memlineage_core::Hash256;
use memlineage_core::entry::{EntryBody, EntryError, SignedEntry};
use memlineage_core::keys;

/// A secret key with its key id and, when it proved equal, its AWS-LC twin.
pub(crate) struct FileKey {
    key: SigningKey,
    id: Hash256,
    fast: Option<aws_lc_rs::signature::Ed25519KeyPair>,
}

/// The message both implementations sign when a key is loaded, to prove them equal on it.
const PROBE: &[u8] = b"memlineage/file-key-probe/v1\0";

impl FileKey {
    /// Prepares `key` (one AWS-LC key derivation and two probe signatures: tens of µs, once).
    pub(crate) fn new(key: SigningKey) -> FileKey {
        let id = keys::key_id(&key.verifying_key());
        let fast = aws_lc_rs::signature::Ed25519KeyPair::from_seed_unchecked(key.as_bytes())
            .ok()
            .filter(|pair| agrees(&key, pair));
        FileKey { key, id, fast }
    }

    /// The dalek key.
    pub(crate) fn key(&self) -> &SigningKey {
        &self.key
    }

    /// The public key.
    pub(crate) fn public(&self) -> VerifyingKey {
        self.key.verifying_key()
    }

    /// The key id entries name.
    pub(crate) fn id(&self) -> Hash256 {
        self.id
    }

    /// Whether entries are signed with AWS-LC (false: with dalek).
    #[cfg(test)]
    pub(crate) fn is_fast(&self) -> bool {
        self.fast.is_some()
    }

    /// Signs an entry body: the bytes [`SignedEntry::sign`] makes with the dalek key.
    pub(crate) fn sign_entry(&self, body: EntryBody) -> Result<SignedEntry, EntryError> {
        match &self.fast {
            Some(pair) => {
                SignedEntry::sign_by(body, &self.public(), |message| signature_of(pair, message))
            }
            None => SignedEntry::sign(body, &self.key),
        }
    }
}

/// AWS-LC's signature of `message`, as dalek's type.
fn signature_of(pair: &aws_lc_rs::signature::Ed25519KeyPair, message: &[u8]) -> Signature {
    // An Ed25519 signature is 64 bytes; any other length becomes zeros, which never verify
    // (and `agrees` already refused such a pair).
    let bytes = <[u8; 64]>::try_from(pair.sign(message).as_ref()).unwrap_or([0; 64]);
    Signature::from_bytes(&bytes)
}

/// Whether `pair` is `key`: the same public key and the same signature on [`PROBE`].
fn agrees(key: &SigningKey, pair: &aws_lc_rs::signature::Ed25519KeyPair) -> bool {
    use aws_lc_rs::signature::KeyPair;
    pair.public_key().as_ref() == key.verifying_key().as_bytes()
        && signature_of(pair, PROBE).to_bytes() == key.sign(PROBE).to_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::Signer;

    #[test]
    fn aws_lc_signs_byte_for_byte_as_dalek() {
        // 200 seeds, each with a message of 3n bytes (0 to 597), from a fixed pseudo-random
        // sequence (SHA-256 chained).
        for n in 0u32..200 {
            let seed = Hash256::of(&n.to_le_bytes()).0;
            let key = SigningKey::from_bytes(&seed);
            let file = FileKey::new(key.clone());
            assert!(file.is_fast(), "AWS-LC refused seed {n}");
            let mut message = Vec::new();
            while message.len() < (n as usize * 3) {
                message.extend_from_slice(&Hash256::of(&message).0);
            }
            message.truncate(n as usize * 3);
            let pair = file.fast.as_ref().unwrap();
            assert_eq!(
                signature_of(pair, &message).to_bytes(),
                key.sign(&message).to_bytes(),
                "seed {n}"
            );
        }
    }

    #[test]
    fn rfc8032_test_1_signs_as_published() {
        // RFC 8032 §7.1, TEST 1 (empty message).
        let secret =
            hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
                .unwrap();
        let expected = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
        let file = FileKey::new(SigningKey::from_bytes(&secret.try_into().unwrap()));
        let pair = file.fast.as_ref().unwrap();
        assert_eq!(hex::encode(signature_of(pair, b"").to_bytes()), expected);
    }
}
