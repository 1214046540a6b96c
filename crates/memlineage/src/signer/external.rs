//! An external signer under a deadline, failing closed.
//!
//! A hardware token or a remote signer can hang; a write must not. Every call runs on a
//! helper thread and is waited for at most [`ExternalSigner::timeout`]: past it the write
//! fails with [`SignerProblem::TimedOut`] (the helper thread is left to finish or hang on its
//! own; it holds nothing the write needs). Every signature is verified under the key it was
//! asked for before it is used, so a signer that answers with the wrong key, a corrupted
//! signature or a non-Ed25519 scheme fails the write instead of writing an entry that would
//! not verify.

use super::{Signer, SignerFailure, SignerProblem};
use crate::error::Error;
use ed25519_dalek::{Signature, VerifyingKey};
use memlineage_core::{Hash256, PrincipalName, keys};
use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A [`Signer`] outside this process's memory, called under a deadline.
pub struct ExternalSigner {
    inner: Arc<dyn Signer>,
    timeout: Duration,
    /// The public keys last listed per principal (asked again when a key is not among them).
    listed: Mutex<HashMap<PrincipalName, Vec<VerifyingKey>>>,
}

impl ExternalSigner {
    /// How long a signature may take by default.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// `inner`, each call waited for at most `timeout`.
    pub fn new(inner: Arc<dyn Signer>, timeout: Duration) -> ExternalSigner {
        ExternalSigner {
            inner,
            timeout,
            listed: Mutex::new(HashMap::new()),
        }
    }

    /// The same signer under another deadline.
    pub fn with_timeout(&self, timeout: Duration) -> ExternalSigner {
        ExternalSigner::new(Arc::clone(&self.inner), timeout)
    }

    /// The deadline of each call.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The signer's name, for messages.
    pub fn describe(&self) -> String {
        self.inner.describe()
    }

    /// The public keys the signer holds for `principal`.
    pub fn public_keys(&self, principal: &PrincipalName) -> Result<Vec<VerifyingKey>, Error> {
        let (inner, who) = (Arc::clone(&self.inner), principal.clone());
        self.call(principal, move || inner.public_keys(&who))
    }

    /// The key the signer holds for `principal` whose key id is `want` (the only or first key,
    /// for `None`); `None` when it holds no such key. Lists the keys once and again only when
    /// the wanted key is not among those listed (a key added to the token since).
    pub fn key_for(
        &self,
        principal: &PrincipalName,
        want: Option<Hash256>,
    ) -> Result<Option<VerifyingKey>, Error> {
        let pick = |keys: &[VerifyingKey]| {
            keys.iter()
                .find(|k| want.is_none_or(|w| keys::key_id(k) == w))
                .copied()
        };
        let cached = self
            .listed
            .lock()
            .ok()
            .and_then(|m| m.get(principal).and_then(|k| pick(k)));
        if cached.is_some() {
            return Ok(cached);
        }
        let keys = self.public_keys(principal)?;
        let found = pick(&keys);
        if let Ok(mut m) = self.listed.lock() {
            m.insert(principal.clone(), keys);
        }
        Ok(found)
    }

    /// Signs `message` as `principal` with the key `key`, and checks the signature (strict
    /// Ed25519 verification) before returning it.
    pub fn sign(
        &self,
        principal: &PrincipalName,
        key: &VerifyingKey,
        message: &[u8],
    ) -> Result<Signature, Error> {
        let (inner, who, k, m) = (
            Arc::clone(&self.inner),
            principal.clone(),
            *key,
            message.to_vec(),
        );
        let sig = self.call(principal, move || inner.sign(&who, &k, &m))?;
        key.verify_strict(message, &sig)
            .map_err(|_| self.failure(principal, SignerProblem::BadSignature))?;
        Ok(sig)
    }

    /// The failure of a call as `principal`.
    pub fn failure(&self, principal: &PrincipalName, problem: SignerProblem) -> Error {
        SignerFailure {
            principal: principal.to_string(),
            signer: self.describe(),
            problem,
        }
        .into()
    }

    fn call<T: Send + 'static>(
        &self,
        principal: &PrincipalName,
        f: impl FnOnce() -> Result<T, SignerProblem> + Send + 'static,
    ) -> Result<T, Error> {
        let (tx, rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("memlineage-signer".into())
            .spawn(move || {
                let _ = tx.send(f());
            })
            .map_err(|e| {
                self.failure(
                    principal,
                    SignerProblem::Failed(format!("cannot start a signer thread: {e}")),
                )
            })?;
        match rx.recv_timeout(self.timeout) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(problem)) => Err(self.failure(principal, problem)),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(self.failure(principal, SignerProblem::TimedOut(self.timeout)))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(self.failure(
                principal,
                SignerProblem::Failed("the signer thread ended without an answer".into()),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Keyring;
    use ed25519_dalek::SigningKey;

    fn agent() -> PrincipalName {
        PrincipalName::new("agent").unwrap()
    }

    /// A signer that is slow: the deadline's own logic is what is tested here (the PKCS#11
    /// token is tested against SoftHSM2 in `tests/pkcs11.rs`).
    struct Slow(Keyring, Duration);
    impl Signer for Slow {
        fn describe(&self) -> String {
            "a slow signer".into()
        }
        fn public_keys(&self, p: &PrincipalName) -> Result<Vec<VerifyingKey>, SignerProblem> {
            self.0.public_keys(p)
        }
        fn sign(
            &self,
            p: &PrincipalName,
            k: &VerifyingKey,
            m: &[u8],
        ) -> Result<Signature, SignerProblem> {
            std::thread::sleep(self.1);
            self.0.sign(p, k, m)
        }
    }

    #[test]
    fn signatures_are_checked_and_deadlines_fail_closed() {
        let ring = Keyring::new();
        let key = SigningKey::from_bytes(&[7; 32]);
        ring.insert(&agent(), key.clone());
        let public = key.verifying_key();
        let fast =
            ExternalSigner::new(Arc::new(Slow(ring, Duration::ZERO)), Duration::from_secs(5));
        let sig = fast.sign(&agent(), &public, b"m").unwrap();
        assert_eq!(sig, ed25519_dalek::Signer::sign(&key, b"m"));
        assert_eq!(fast.public_keys(&agent()).unwrap(), vec![public]);
        // Another key than the one the signer holds: no such key, named.
        let other = SigningKey::from_bytes(&[8; 32]).verifying_key();
        let err = fast.sign(&agent(), &other, b"m").unwrap_err();
        assert!(
            matches!(&err, Error::Signer(f) if f.problem == SignerProblem::NoKey && f.principal == "agent" && f.signer == "a slow signer"),
            "{err}"
        );
        let slow = fast.with_timeout(Duration::from_millis(1));
        let slow = ExternalSigner::new(
            Arc::new(Slow(Keyring::new(), Duration::from_millis(500))),
            slow.timeout(),
        );
        let err = slow.sign(&agent(), &public, b"m").unwrap_err();
        assert!(
            matches!(&err, Error::Signer(f) if matches!(f.problem, SignerProblem::TimedOut(_))),
            "{err}"
        );
        assert!(err.to_string().contains("`agent`") && err.to_string().contains("a slow signer"));
    }
}
