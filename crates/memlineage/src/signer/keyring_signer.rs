//! The file keyring as a [`Signer`]: keys loaded from `keys/NAME.key`, signing in process.

use super::{Signer, SignerProblem};
use crate::Keyring;
use ed25519_dalek::{Signature, Signer as _, VerifyingKey};
use memlineage_core::PrincipalName;

impl Signer for Keyring {
    fn describe(&self) -> String {
        "the file keyring".into()
    }

    fn public_keys(&self, principal: &PrincipalName) -> Result<Vec<VerifyingKey>, SignerProblem> {
        Ok(self
            .get(principal)
            .map(|k| vec![k.verifying_key()])
            .unwrap_or_default())
    }

    fn sign(
        &self,
        principal: &PrincipalName,
        key: &VerifyingKey,
        message: &[u8],
    ) -> Result<Signature, SignerProblem> {
        match self.get(principal) {
            Ok(secret) if secret.verifying_key() == *key => Ok(secret.sign(message)),
            _ => Err(SignerProblem::NoKey),
        }
    }
}
