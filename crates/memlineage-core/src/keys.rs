//! Ed25519 keys, domain-separated signing and strict verification (paper §M2).
//!
//! Verification is strict everywhere: single signatures use `verify_strict` (RFC 8032 plus the
//! rejection of small-order keys and `R` values), and batch verification — which is cofactored and
//! would otherwise accept some signatures that single verification rejects — first rejects weak
//! keys and small-order `R` components. Public keys are additionally checked to be torsion-free
//! when they are registered, so a third party cannot produce a signature that passes one path and
//! fails the other. (The key holder can still craft an `R` with a torsion component that only the
//! cofactored batch equation accepts; that is malleability by the signer, not a forgery, and it
//! is documented in `docs/formats.md`.)

mod small_order;

use crate::hash::Hash256;
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand_core::CryptoRngCore;

pub use ed25519_dalek::{SigningKey as SecretKey, VerifyingKey as PublicKey};

/// What a signature is over: a fixed prefix naming the record type and version, then the bytes.
/// Domain separation keeps a signature on one record type from being replayed as another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// A log entry's canonical body (`docs/formats.md`).
    EntryV1,
}

impl Domain {
    /// The prefix bytes, ending with a NUL so that no prefix is a prefix of another.
    pub fn prefix(self) -> &'static [u8] {
        match self {
            Domain::EntryV1 => b"memlineage/entry/v1\0",
        }
    }

    /// The exact message that is signed: prefix ‖ bytes.
    pub fn message(self, bytes: &[u8]) -> Vec<u8> {
        let prefix = self.prefix();
        let mut m = Vec::with_capacity(prefix.len() + bytes.len());
        m.extend_from_slice(prefix);
        m.extend_from_slice(bytes);
        m
    }
}

/// Errors from key handling and signature verification.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The bytes are not a valid Ed25519 public key encoding.
    #[error("public key is not a valid Ed25519 point encoding")]
    InvalidPublicKey,
    /// The key has small order or a torsion component: signatures under it are forgeable.
    #[error("public key is weak (small order or with a torsion component) and is refused")]
    WeakPublicKey,
    /// A secret key file or blob has the wrong length.
    #[error("secret key must be 32 bytes, found {0}")]
    BadSecretKeyLength(usize),
    /// A signature has the wrong length.
    #[error("signature must be 64 bytes, found {0}")]
    BadSignatureLength(usize),
    /// The signature does not verify under the key.
    #[error("signature does not verify")]
    BadSignature,
    /// A batch failed; these positions (0-based) are the signatures that do not verify.
    #[error("batch verification failed for item(s) {0:?}")]
    BatchFailed(Vec<usize>),
}

/// The key id recorded in entries: SHA-256 of the 32-byte public key.
pub fn key_id(key: &VerifyingKey) -> Hash256 {
    Hash256::of(key.as_bytes())
}

/// Generates a new secret key from the caller's randomness (the core has no RNG of its own).
pub fn generate(rng: &mut impl CryptoRngCore) -> SigningKey {
    SigningKey::generate(rng)
}

/// Loads a secret key from its 32 seed bytes.
pub fn secret_from_bytes(bytes: &[u8]) -> Result<SigningKey, KeyError> {
    let seed: [u8; 32] = bytes
        .try_into()
        .map_err(|_| KeyError::BadSecretKeyLength(bytes.len()))?;
    Ok(SigningKey::from_bytes(&seed))
}

/// Parses a public key and refuses weak ones (small order, or not in the prime-order subgroup).
pub fn public_from_bytes(bytes: &[u8]) -> Result<VerifyingKey, KeyError> {
    let arr: [u8; 32] = bytes.try_into().map_err(|_| KeyError::InvalidPublicKey)?;
    let key = VerifyingKey::from_bytes(&arr).map_err(|_| KeyError::InvalidPublicKey)?;
    if key.is_weak() {
        return Err(KeyError::WeakPublicKey);
    }
    let point = CompressedEdwardsY(arr)
        .decompress()
        .ok_or(KeyError::InvalidPublicKey)?;
    if !point.is_torsion_free() {
        return Err(KeyError::WeakPublicKey);
    }
    Ok(key)
}

/// Parses a 64-byte signature.
pub fn signature_from_bytes(bytes: &[u8]) -> Result<Signature, KeyError> {
    let arr: [u8; 64] = bytes
        .try_into()
        .map_err(|_| KeyError::BadSignatureLength(bytes.len()))?;
    Ok(Signature::from_bytes(&arr))
}

/// Signs `bytes` in `domain`.
pub fn sign(key: &SigningKey, domain: Domain, bytes: &[u8]) -> Signature {
    key.sign(&domain.message(bytes))
}

/// Verifies one signature strictly.
pub fn verify(
    key: &VerifyingKey,
    domain: Domain,
    bytes: &[u8],
    sig: &Signature,
) -> Result<(), KeyError> {
    key.verify_strict(&domain.message(bytes), sig)
        .map_err(|_| KeyError::BadSignature)
}

/// One item of a batch: key, signed bytes (without the domain prefix), signature.
#[derive(Clone, Copy, Debug)]
pub struct BatchItem<'a> {
    /// The signer's public key.
    pub key: &'a VerifyingKey,
    /// The signed bytes, without the domain prefix.
    pub bytes: &'a [u8],
    /// The signature.
    pub signature: &'a Signature,
}

/// Whether the signature's `R` encodes a point of small order, from its 32 bytes against the
/// fixed set of small-order encodings (`keys/small_order.rs`), without decompressing `R` (the
/// batch equation decompresses it anyway). An `R` that does not decompress at all is not
/// caught here: the batch equation then fails, and the item's own `verify_strict` refuses it,
/// so it is reported among the failing positions exactly as before.
fn r_is_small_order(sig: &Signature) -> bool {
    small_order::is_small_order_encoding(sig.r_bytes())
}

/// Verifies many signatures at once (about twice as fast per signature as one by one).
///
/// Weak keys and small-order `R` are rejected first, so that the cofactored batch equation cannot
/// accept a third-party forgery that `verify_strict` would refuse. When the batch fails, every
/// item is re-checked on its own and the failing positions are returned.
pub fn verify_batch(domain: Domain, items: &[BatchItem<'_>]) -> Result<(), KeyError> {
    if items.is_empty() {
        return Ok(());
    }
    let mut bad: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, it)| it.key.is_weak() || r_is_small_order(it.signature))
        .map(|(i, _)| i)
        .collect();
    if bad.is_empty() {
        let messages: Vec<Vec<u8>> = items.iter().map(|it| domain.message(it.bytes)).collect();
        let msg_refs: Vec<&[u8]> = messages.iter().map(Vec::as_slice).collect();
        let sigs: Vec<Signature> = items.iter().map(|it| *it.signature).collect();
        let keys: Vec<VerifyingKey> = items.iter().map(|it| *it.key).collect();
        if ed25519_dalek::verify_batch(&msg_refs, &sigs, &keys).is_ok() {
            return Ok(());
        }
    }
    for (i, it) in items.iter().enumerate() {
        if !bad.contains(&i) && verify(it.key, domain, it.bytes, it.signature).is_err() {
            bad.push(i);
        }
    }
    bad.sort_unstable();
    if bad.is_empty() {
        // The batch equation failed but every item verifies alone: cannot happen for honest
        // randomness, but never report success on a failed batch without a full re-check.
        return Ok(());
    }
    Err(KeyError::BatchFailed(bad))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn key(seed: u64) -> SigningKey {
        generate(&mut ChaCha20Rng::seed_from_u64(seed))
    }

    #[test]
    fn sign_and_verify_with_domain() {
        let k = key(1);
        let sig = sign(&k, Domain::EntryV1, b"hello");
        verify(&k.verifying_key(), Domain::EntryV1, b"hello", &sig).unwrap();
        assert!(verify(&k.verifying_key(), Domain::EntryV1, b"hellO", &sig).is_err());
        // Without the prefix the signature does not verify: domain separation is real.
        assert!(k.verifying_key().verify_strict(b"hello", &sig).is_err());
    }

    #[test]
    fn rfc8032_test_vector_1() {
        // RFC 8032 §7.1, TEST 1 (empty message).
        let sk = hex::decode("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
            .unwrap();
        let pk = hex::decode("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
            .unwrap();
        let k = secret_from_bytes(&sk).unwrap();
        assert_eq!(k.verifying_key().as_bytes().as_slice(), pk.as_slice());
        let sig = k.sign(b"");
        assert_eq!(
            hex::encode(sig.to_bytes()),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
    }

    #[test]
    fn weak_keys_are_refused() {
        // The identity point (small order) encoded as y = 1.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        assert_eq!(public_from_bytes(&identity), Err(KeyError::WeakPublicKey));
        assert_eq!(
            public_from_bytes(&[1, 2, 3]),
            Err(KeyError::InvalidPublicKey)
        );
        let good = key(2).verifying_key();
        assert_eq!(public_from_bytes(good.as_bytes()).unwrap(), good);
    }

    #[test]
    fn batch_verification_finds_the_bad_item() {
        let keys: Vec<SigningKey> = (0..8).map(key).collect();
        let pks: Vec<VerifyingKey> = keys.iter().map(|k| k.verifying_key()).collect();
        let msgs: Vec<Vec<u8>> = (0..8u8).map(|i| vec![i; 10]).collect();
        let mut sigs: Vec<Signature> = keys
            .iter()
            .zip(&msgs)
            .map(|(k, m)| sign(k, Domain::EntryV1, m))
            .collect();
        let items = |sigs: &[Signature]| -> Vec<(usize, Signature)> {
            sigs.iter().copied().enumerate().collect()
        };
        let check = |sigs: &[Signature]| {
            let owned = items(sigs);
            let batch: Vec<BatchItem<'_>> = owned
                .iter()
                .map(|(i, s)| BatchItem {
                    key: &pks[*i],
                    bytes: &msgs[*i],
                    signature: s,
                })
                .collect();
            verify_batch(Domain::EntryV1, &batch)
        };
        check(&sigs).unwrap();
        sigs[5] = sign(&keys[4], Domain::EntryV1, &msgs[5]);
        assert_eq!(check(&sigs), Err(KeyError::BatchFailed(vec![5])));
    }

    #[test]
    fn batch_filters_small_order_public_keys() {
        use curve25519_dalek::constants::ED25519_BASEPOINT_POINT;
        use curve25519_dalek::scalar::Scalar;
        // The identity point is a small-order public key A. For it, [k]A is the identity, so
        // (R = [s]B, s) satisfies the verification equation [s]B = R + [k]A for *any* message:
        // a forgery anyone can make. R = [s]B has large order, so only the weak-key filter can
        // stop it.
        let mut identity = [0u8; 32];
        identity[0] = 1;
        let weak = VerifyingKey::from_bytes(&identity).unwrap();
        assert!(weak.is_weak());
        let s = Scalar::from(0x1234_5678_9abc_def0u64);
        let r = (ED25519_BASEPOINT_POINT * s).compress();
        let mut bytes = [0u8; 64];
        bytes[..32].copy_from_slice(r.as_bytes());
        bytes[32..].copy_from_slice(s.as_bytes());
        let forged = Signature::from_bytes(&bytes);
        assert!(!r_is_small_order(&forged), "R has large order");
        let message = Domain::EntryV1.message(b"pay the attacker");
        // The unfiltered cofactored batch equation accepts the forgery.
        assert!(ed25519_dalek::verify_batch(&[&message[..]], &[forged], &[weak]).is_ok());
        // Ours refuses it, next to a good item, and names it.
        let good_key = key(3);
        let good_pk = good_key.verifying_key();
        let good_sig = sign(&good_key, Domain::EntryV1, b"fine");
        let items = [
            BatchItem {
                key: &good_pk,
                bytes: b"fine",
                signature: &good_sig,
            },
            BatchItem {
                key: &weak,
                bytes: b"pay the attacker",
                signature: &forged,
            },
        ];
        assert_eq!(
            verify_batch(Domain::EntryV1, &items),
            Err(KeyError::BatchFailed(vec![1]))
        );
        assert!(verify(&weak, Domain::EntryV1, b"pay the attacker", &forged).is_err());
    }

    #[test]
    fn batch_names_an_r_that_does_not_decompress() {
        // The byte check does not catch an `R` off the curve; the batch equation fails and the
        // item's own strict verification names it, next to a good item.
        let off_curve = (2u8..=255)
            .map(|y| {
                let mut e = [0u8; 32];
                e[0] = y;
                e
            })
            .find(|e| CompressedEdwardsY(*e).decompress().is_none())
            .unwrap();
        let k = key(10);
        let pk = k.verifying_key();
        let good = sign(&k, Domain::EntryV1, b"good");
        let mut bytes = sign(&k, Domain::EntryV1, b"m").to_bytes();
        bytes[..32].copy_from_slice(&off_curve);
        let bad = Signature::from_bytes(&bytes);
        assert!(!r_is_small_order(&bad));
        let items = [
            BatchItem {
                key: &pk,
                bytes: b"good",
                signature: &good,
            },
            BatchItem {
                key: &pk,
                bytes: b"m",
                signature: &bad,
            },
        ];
        assert_eq!(
            verify_batch(Domain::EntryV1, &items),
            Err(KeyError::BatchFailed(vec![1]))
        );
    }

    #[test]
    fn batch_rejects_small_order_r() {
        use curve25519_dalek::constants::EIGHT_TORSION;
        let k = key(9);
        let pk = k.verifying_key();
        let good = sign(&k, Domain::EntryV1, b"good");
        // Every small-order point as R (the identity first), with either sign bit, next to a
        // good item: refused before the batch equation, and named.
        for point in EIGHT_TORSION {
            for sign_bit in [0u8, 0x80] {
                let mut r = point.compress().to_bytes();
                r[31] ^= sign_bit;
                let mut bytes = sign(&k, Domain::EntryV1, b"m").to_bytes();
                bytes[..32].copy_from_slice(&r);
                let sig = Signature::from_bytes(&bytes);
                assert!(r_is_small_order(&sig), "{r:02x?}");
                let items = [
                    BatchItem {
                        key: &pk,
                        bytes: b"good",
                        signature: &good,
                    },
                    BatchItem {
                        key: &pk,
                        bytes: b"m",
                        signature: &sig,
                    },
                ];
                assert_eq!(
                    verify_batch(Domain::EntryV1, &items),
                    Err(KeyError::BatchFailed(vec![1]))
                );
            }
        }
    }
}
