//! Where the service keeps the principals' secret keys.
//!
//! The service signs every entry a client writes with the key of the client's principal, so
//! clients never hold keys. [`KeyStore`] is the seam: [`FileKeys`] keeps them as the CLI does
//! (`keys/NAME.key`, 0600 in a 0700 directory, written before the key is registered so a
//! registered key is never lost); another implementation can keep them elsewhere (a secrets
//! manager that hands out the seed at start-up) without the service changing. A signer whose
//! secret never enters the process (an HSM) needs the library's signing behind a trait too;
//! see `docs/service.md`, "Keys".

use ed25519_dalek::SigningKey;
use memlineage::PrincipalName;
use memlineage::keyring::{Keyring, key_path, replace_key, save_key};
use memlineage_core::keys;
use rand_core::OsRng;
use std::fs;
use std::path::PathBuf;

/// A place that holds the principals' secret keys.
pub trait KeyStore: Send + Sync {
    /// Loads every key it holds into `ring`.
    fn load_into(&self, ring: &Keyring) -> Result<(), memlineage::Error>;
    /// Makes and keeps a new key for a principal about to be registered (refuses to replace
    /// one). Returned so that it can be registered and loaded.
    fn create(&self, name: &PrincipalName) -> Result<SigningKey, memlineage::Error>;
    /// Forgets a key made by [`create`](Self::create) whose registration failed.
    fn discard(&self, name: &PrincipalName);
    /// Makes a key to rotate to, kept aside until [`commit_rotation`](Self::commit_rotation).
    fn prepare_rotation(&self, name: &PrincipalName) -> Result<SigningKey, memlineage::Error>;
    /// The rotation is in the log: the prepared key replaces the old one.
    fn commit_rotation(
        &self,
        name: &PrincipalName,
        key: &SigningKey,
    ) -> Result<(), memlineage::Error>;
    /// The rotation failed: drop the prepared key.
    fn abort_rotation(&self, name: &PrincipalName);
    /// Where a principal's key lives, for people.
    fn describe(&self, name: &PrincipalName) -> String;
}

/// Keys in files, one per principal: `DIR/NAME.key` (the CLI's layout).
pub struct FileKeys {
    dir: PathBuf,
}

impl FileKeys {
    /// Keys in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> FileKeys {
        FileKeys { dir: dir.into() }
    }

    fn pending_dir(&self) -> PathBuf {
        self.dir.join("pending")
    }
}

impl KeyStore for FileKeys {
    fn load_into(&self, ring: &Keyring) -> Result<(), memlineage::Error> {
        ring.load_dir(&self.dir).map(|_| ())
    }

    fn create(&self, name: &PrincipalName) -> Result<SigningKey, memlineage::Error> {
        let key = keys::generate(&mut OsRng);
        save_key(&self.dir, name, &key)?;
        Ok(key)
    }

    fn discard(&self, name: &PrincipalName) {
        let _ = fs::remove_file(key_path(&self.dir, name));
    }

    fn prepare_rotation(&self, name: &PrincipalName) -> Result<SigningKey, memlineage::Error> {
        let pending = key_path(&self.pending_dir(), name);
        let _ = fs::remove_file(&pending);
        let key = keys::generate(&mut OsRng);
        save_key(&self.pending_dir(), name, &key)?;
        Ok(key)
    }

    fn commit_rotation(
        &self,
        name: &PrincipalName,
        key: &SigningKey,
    ) -> Result<(), memlineage::Error> {
        replace_key(&self.dir, name, key).map_err(|e| memlineage::Error::Io {
            path: key_path(&self.dir, name).display().to_string(),
            source: std::io::Error::other(format!(
                "the rotation is in the log, but saving the new key failed: {e}; the new key is in {}: move it here by hand",
                key_path(&self.pending_dir(), name).display(),
            )),
        })?;
        self.abort_rotation(name);
        Ok(())
    }

    fn abort_rotation(&self, name: &PrincipalName) {
        let _ = fs::remove_file(key_path(&self.pending_dir(), name));
        let _ = fs::remove_dir(self.pending_dir());
    }

    fn describe(&self, name: &PrincipalName) -> String {
        key_path(&self.dir, name).display().to_string()
    }
}
