//! Who signs: the [`Signer`] trait, behind which the principals' keys live.
//!
//! Two implementations: the file [`Keyring`](crate::Keyring) (32-byte seeds in `keys/NAME.key`,
//! signing in this process) and, with the `pkcs11` feature, [`Pkcs11Signer`]: a key in a
//! PKCS#11 token (an HSM, or SoftHSM2), which signs with `CKM_EDDSA` inside the token, so the
//! secret key never enters this process. Both sign the same bytes with pure Ed25519 (RFC 8032
//! §5.1.6), so an entry or checkpoint signed through either is byte for byte the same format
//! and verifies with the same public key; verifiers do not know or care which signed.
//!
//! A [`Memory`](crate::Memory) signs with the file keyring when it holds a key for the writer
//! and otherwise with the external signer given to
//! [`Memory::set_signer`](crate::Memory::set_signer). An external signer is called under a
//! deadline ([`ExternalSigner`]); a signer that fails, times out or answers with a signature
//! that does not verify fails the write closed with [`SignerFailure`], naming the principal
//! and the signer: nothing is written.

mod external;
mod keyring_signer;
#[cfg(feature = "pkcs11")]
mod pkcs11;
mod uri;

pub use external::ExternalSigner;
#[cfg(feature = "pkcs11")]
pub use pkcs11::Pkcs11Signer;
pub use uri::Pkcs11Uri;

use crate::error::Error;
use ed25519_dalek::{Signature, VerifyingKey};
use memlineage_core::PrincipalName;
use std::sync::Arc;
use std::time::Duration;

/// Holds principals' Ed25519 keys and signs with them.
pub trait Signer: Send + Sync {
    /// Names the signer in messages and logs; never a secret (no PIN).
    fn describe(&self) -> String;

    /// The public keys held for `principal` (empty: none).
    fn public_keys(&self, principal: &PrincipalName) -> Result<Vec<VerifyingKey>, SignerProblem>;

    /// Signs `message` exactly as given — pure Ed25519, no pre-hash, no context (RFC 8032
    /// §5.1.6) — with `principal`'s key whose public key is `key`.
    fn sign(
        &self,
        principal: &PrincipalName,
        key: &VerifyingKey,
        message: &[u8],
    ) -> Result<Signature, SignerProblem>;
}

/// What went wrong inside a signer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignerProblem {
    /// The signer holds no key for the principal (or not the one asked for).
    #[error("it holds no such key")]
    NoKey,
    /// The signer refused the login (a wrong or missing PIN, a locked token).
    #[error("login failed: {0}")]
    Login(String),
    /// The signer cannot be reached or failed (a module that does not load, a token removed,
    /// a device error).
    #[error("{0}")]
    Failed(String),
    /// The signer did not answer in time.
    #[error("no answer within {} ms", .0.as_millis())]
    TimedOut(Duration),
    /// The signer answered with a signature that does not verify under the key.
    #[error("its signature does not verify under the principal's key")]
    BadSignature,
    /// The signer is configured wrongly (a malformed URI, an unknown attribute).
    #[error("{0}")]
    Config(String),
}

/// A signer failed: the write (or checkpoint) it was signing was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("signing as `{principal}` with {signer} failed: {problem}; nothing was written")]
pub struct SignerFailure {
    /// The principal whose key was asked for.
    pub principal: String,
    /// The signer ([`Signer::describe`]).
    pub signer: String,
    /// What went wrong.
    pub problem: SignerProblem,
}

impl SignerFailure {
    /// Whether retrying later may succeed (a timeout or a failed device), as opposed to a
    /// key, PIN or configuration the operator must fix.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.problem,
            SignerProblem::Failed(_) | SignerProblem::TimedOut(_)
        )
    }
}

/// The signer a `--signer` / `MEMLINEAGE_SIGNER` value names: `pkcs11:…` (RFC 7512; the
/// `pkcs11` feature), under the default deadline.
pub fn open(spec: &str) -> Result<Arc<ExternalSigner>, Error> {
    open_with_timeout(spec, ExternalSigner::DEFAULT_TIMEOUT)
}

/// [`open`], each call to the signer waited for at most `timeout`.
pub fn open_with_timeout(spec: &str, timeout: Duration) -> Result<Arc<ExternalSigner>, Error> {
    let config = |problem: String| SignerFailure {
        principal: "-".into(),
        signer: spec.split('?').next().unwrap_or(spec).to_string(),
        problem: SignerProblem::Config(problem),
    };
    if spec.starts_with("pkcs11:") {
        let uri: Pkcs11Uri = spec.parse().map_err(config)?;
        #[cfg(feature = "pkcs11")]
        {
            let signer = Pkcs11Signer::open(&uri)?;
            Ok(Arc::new(ExternalSigner::new(Arc::new(signer), timeout)))
        }
        #[cfg(not(feature = "pkcs11"))]
        {
            let _ = (uri, timeout);
            Err(Error::Unavailable(
                "this build has no PKCS#11 signer: rebuild with the `pkcs11` feature".into(),
            ))
        }
    } else {
        Err(config(format!(
            "`{}` is not a signer: expected a PKCS#11 URI (`pkcs11:token=NAME?module-path=/usr/lib/softhsm/libsofthsm2.so&pin-source=FILE`)",
            spec.chars().take(80).collect::<String>()
        ))
        .into())
    }
}
