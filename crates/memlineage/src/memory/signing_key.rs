//! The key a record is signed with: a file key of the keyring, signing in process, or a key
//! held by the external signer (`signer/`), signing outside it. Both make byte-identical
//! records (pure Ed25519 over the same message), so nothing after signing knows which signed.

use super::Memory;
use crate::error::Error;
use crate::keyring::FileKey;
use crate::signer::{ExternalSigner, SignerProblem};
use ed25519_dalek::VerifyingKey;
use memlineage_core::checkpoint::{self, Checkpoint};
use memlineage_core::entry::{EntryBody, SignedEntry};
use memlineage_core::{Hash256, PrincipalName, keys};
use std::sync::Arc;

/// A principal's key, ready to sign.
#[derive(Clone)]
pub(crate) enum SigningKeyRef {
    /// A secret key of the file keyring.
    File(Arc<FileKey>),
    /// A key the external signer holds.
    External {
        signer: Arc<ExternalSigner>,
        principal: PrincipalName,
        /// Boxed: the file variant is one pointer.
        key: Box<VerifyingKey>,
    },
}

impl SigningKeyRef {
    /// The public key.
    pub(crate) fn public(&self) -> VerifyingKey {
        match self {
            SigningKeyRef::File(k) => k.public(),
            SigningKeyRef::External { key, .. } => **key,
        }
    }

    /// The key id entries name.
    pub(crate) fn key_id(&self) -> Hash256 {
        match self {
            SigningKeyRef::File(k) => k.id(),
            SigningKeyRef::External { key, .. } => keys::key_id(key),
        }
    }

    /// Signs an entry body.
    pub(crate) fn sign_entry(&self, body: EntryBody) -> Result<SignedEntry, Error> {
        match self {
            SigningKeyRef::File(k) => Ok(k.sign_entry(body)?),
            SigningKeyRef::External {
                signer,
                principal,
                key,
            } => {
                let message = SignedEntry::signing_message(&body);
                let signature = signer.sign(principal, key, &message)?;
                Ok(SignedEntry::with_signature(body, key, signature)?)
            }
        }
    }

    /// Signs a checkpoint as a C2SP signed note under `origin`.
    pub(crate) fn sign_checkpoint(&self, cp: &Checkpoint, origin: &str) -> Result<String, Error> {
        match self {
            SigningKeyRef::File(k) => Ok(checkpoint::sign_checkpoint(cp, origin, k.key())?),
            SigningKeyRef::External {
                signer,
                principal,
                key,
            } => {
                cp.validate()?;
                let signature = signer.sign(principal, key, cp.body().as_bytes())?;
                Ok(checkpoint::checkpoint_note_with_signature(
                    cp, origin, key, &signature,
                )?)
            }
        }
    }
}

impl Memory {
    /// Signs with `signer` every principal whose key the file keyring does not hold (or holds
    /// but not as the principal's current key).
    pub fn set_signer(&self, signer: Arc<ExternalSigner>) {
        if let Ok(mut s) = self.external.write() {
            *s = Some(signer);
        }
    }

    /// [`Memory::set_signer`], for building a handle.
    pub fn with_signer(self, signer: Arc<ExternalSigner>) -> Memory {
        self.set_signer(signer);
        self
    }

    /// The external signer, when one is set.
    pub fn signer(&self) -> Option<Arc<ExternalSigner>> {
        self.external.read().ok().and_then(|s| s.clone())
    }

    /// Whether this handle can sign as `name`: a file key, or a key the external signer holds
    /// (asked, under its deadline).
    pub fn can_sign(&self, name: &PrincipalName) -> bool {
        self.keys.contains(name)
            || self
                .signer()
                .is_some_and(|s| s.key_for(name, None).is_ok_and(|k| k.is_some()))
    }

    /// The key to sign as `name` with: the file key when it is the one `want` names (any, for
    /// `None`), else the external signer's key `want` names, else the file key (the caller's
    /// check then names the key that is not current). No key at all: [`Error::NoKey`], or the
    /// external signer's typed failure.
    pub(crate) fn signing_key(
        &self,
        name: &PrincipalName,
        want: Option<Hash256>,
    ) -> Result<SigningKeyRef, Error> {
        let file = self.keys.file_key(name).ok();
        if let Some(key) = &file
            && want.is_none_or(|w| w == key.id())
        {
            return Ok(SigningKeyRef::File(Arc::clone(key)));
        }
        if let Some(signer) = self.signer() {
            if let Some(key) = signer.key_for(name, want)? {
                return Ok(SigningKeyRef::External {
                    signer,
                    principal: name.clone(),
                    key: Box::new(key),
                });
            }
            if file.is_none() {
                return Err(signer.failure(name, SignerProblem::NoKey));
            }
        }
        match file {
            Some(key) => Ok(SigningKeyRef::File(key)),
            None => Err(Error::NoKey(name.clone())),
        }
    }
}
