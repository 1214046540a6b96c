//! Principals with their key files, as `memlineage principal add|rotate|revoke` keeps them: a
//! new key is saved before it is registered (a rotation's first to `keys/pending/NAME.key`,
//! moved over `keys/NAME.key` once the rotation is in the log), so a registered key is never
//! lost. A store in RAM keeps keys in the process only.

use crate::errors::Fail;
use memlineage::Written;
use memlineage::keyring::{key_path, replace_key, save_key};
use memlineage::{Memory as Mem, PrincipalName};
use memlineage_core::keys;
use memlineage_core::label::TrustClass;
use memlineage_core::principal::Principal;
use rand_core::OsRng;
use std::fs;
use std::path::Path;

/// A registered principal: the record and where its secret key was saved.
pub struct Registered {
    /// The registry record.
    pub written: Written,
    /// The new key's id.
    pub key_id: String,
    /// The key file, for a file store.
    pub key_file: Option<String>,
}

/// Registers `name` with a fresh key.
pub fn add(
    mem: &Mem,
    keys_dir: Option<&Path>,
    name: &PrincipalName,
    class: TrustClass,
) -> Result<Registered, Fail> {
    if mem.registry()?.get(name.as_str()).is_some() {
        return Err(Fail::Refused(format!(
            "principal `{name}` already exists (names are never reused; see `memlineage principal list`)"
        )));
    }
    let key = keys::generate(&mut OsRng);
    let file = match keys_dir {
        Some(dir) => Some(save_key(dir, name, &key).map_err(|e| {
            Fail::Refused(format!(
                "{e} (a key file for `{name}` already exists: move it away first)"
            ))
        })?),
        None => None,
    };
    let written = match mem.add_principal(name, class, &key.verifying_key()) {
        Ok(w) => w,
        Err(e) => {
            if let Some(f) = &file {
                let _ = fs::remove_file(f);
            }
            return Err(e.into());
        }
    };
    mem.keys().insert(name, key.clone());
    Ok(Registered {
        written,
        key_id: keys::key_id(&key.verifying_key()).to_hex(),
        key_file: file.map(|f| f.display().to_string()),
    })
}

/// A registered principal that is not revoked.
fn live(mem: &Mem, name: &PrincipalName) -> Result<Principal, Fail> {
    let registry = mem.registry()?;
    let p = registry.get(name.as_str()).cloned().ok_or_else(|| {
        Fail::Refused(format!(
            "principal `{name}` is not registered (see `memlineage principal list`)"
        ))
    })?;
    if let Some(at) = p.revoked_at {
        let reason = match p.revoke_reason.as_deref() {
            Some(r) if !r.is_empty() => format!(" (reason: {r})"),
            _ => String::new(),
        };
        return Err(Fail::Refused(format!(
            "principal `{name}` was revoked at log index {at}{reason}"
        )));
    }
    Ok(p)
}

/// Gives `name` a new key; the old one is refused for later entries.
pub fn rotate(
    mem: &Mem,
    keys_dir: Option<&Path>,
    name: &PrincipalName,
) -> Result<Registered, Fail> {
    live(mem, name)?;
    let key = keys::generate(&mut OsRng);
    let Some(dir) = keys_dir else {
        let written = mem.rotate_principal(name, &key)?;
        mem.keys().insert(name, key.clone());
        return Ok(Registered {
            written,
            key_id: keys::key_id(&key.verifying_key()).to_hex(),
            key_file: None,
        });
    };
    let pending_dir = dir.join("pending");
    let pending = key_path(&pending_dir, name);
    let _ = fs::remove_file(&pending);
    save_key(&pending_dir, name, &key)?;
    let written = match mem.rotate_principal(name, &key) {
        Ok(w) => w,
        Err(e) => {
            let _ = fs::remove_file(&pending);
            return Err(e.into());
        }
    };
    let file = replace_key(dir, name, &key).map_err(|e| {
        Fail::Store(format!(
            "the rotation is in the log, but saving the new key failed: {e}; the new key is in \
             {}: move it to {} by hand",
            pending.display(),
            key_path(dir, name).display()
        ))
    })?;
    let _ = fs::remove_file(&pending);
    let _ = fs::remove_dir(&pending_dir);
    mem.keys().insert(name, key.clone());
    Ok(Registered {
        written,
        key_id: keys::key_id(&key.verifying_key()).to_hex(),
        key_file: Some(file.display().to_string()),
    })
}

/// Revokes `name`: every entry it signs from now on is refused.
pub fn revoke(mem: &Mem, name: &PrincipalName, reason: &str) -> Result<Written, Fail> {
    live(mem, name)?;
    Ok(mem.revoke_principal(name, reason)?)
}
