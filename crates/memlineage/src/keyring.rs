//! Secret keys: held in memory by principal name, stored one file per principal, readable only
//! by their owner (mode 0600 in a 0700 directory on Unix).

use crate::error::{Error, InputError};
use ed25519_dalek::SigningKey;
use memlineage_core::keys;
use memlineage_core::{Hash256, PrincipalName};
use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

mod file_key;
pub(crate) use file_key::FileKey;

/// The secret keys this process can sign with, each with its key id (computed once: the write
/// path names the key id in every entry) and its fast signer ([`FileKey`]).
#[derive(Default)]
pub struct Keyring {
    keys: RwLock<HashMap<PrincipalName, Arc<FileKey>>>,
}

impl Keyring {
    /// An empty keyring.
    pub fn new() -> Keyring {
        Keyring::default()
    }

    /// Adds or replaces the key of `name`.
    pub fn insert(&self, name: &PrincipalName, key: SigningKey) {
        let key = Arc::new(FileKey::new(key));
        if let Ok(mut k) = self.keys.write() {
            k.insert(name.clone(), key);
        }
    }

    /// The key of `name`.
    pub fn get(&self, name: &PrincipalName) -> Result<SigningKey, Error> {
        self.get_with_id(name).map(|(key, _)| key)
    }

    /// The key of `name` and its key id.
    pub fn get_with_id(&self, name: &PrincipalName) -> Result<(SigningKey, Hash256), Error> {
        self.file_key(name).map(|k| (k.key().clone(), k.id()))
    }

    /// The key of `name`, ready to sign entries.
    pub(crate) fn file_key(&self, name: &PrincipalName) -> Result<Arc<FileKey>, Error> {
        self.keys
            .read()
            .ok()
            .and_then(|k| k.get(name.as_str()).cloned())
            .ok_or_else(|| Error::NoKey(name.clone()))
    }

    /// True when a key for `name` is loaded.
    pub fn contains(&self, name: &PrincipalName) -> bool {
        self.keys
            .read()
            .is_ok_and(|k| k.contains_key(name.as_str()))
    }

    /// Loads every `NAME.key` file of `dir` (32 raw seed bytes, hex-encoded on one line) whose
    /// `NAME` is a principal name (other files are not keys of this store's principals).
    pub fn load_dir(&self, dir: &Path) -> Result<usize, Error> {
        let read = match fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(source) => return Err(io_err(dir, source)),
        };
        let mut n = 0;
        for item in read {
            let item = item.map_err(|source| io_err(dir, source))?;
            let path = item.path();
            let (Some(stem), Some("key")) = (
                path.file_stem().and_then(|s| s.to_str()),
                path.extension().and_then(|s| s.to_str()),
            ) else {
                continue;
            };
            let Ok(name) = PrincipalName::new(stem) else {
                continue;
            };
            let text = fs::read_to_string(&path).map_err(|source| io_err(&path, source))?;
            let key_file = |problem: String| InputError::KeyFile {
                path: path.display().to_string(),
                problem,
            };
            let bytes =
                hex::decode(text.trim()).map_err(|_| key_file("not a hex-encoded key".into()))?;
            let key = keys::secret_from_bytes(&bytes).map_err(|e| key_file(e.to_string()))?;
            self.insert(&name, key);
            n += 1;
        }
        Ok(n)
    }
}

/// The path of `name`'s key file in `dir`.
pub fn key_path(dir: &Path, name: &PrincipalName) -> PathBuf {
    file_in(dir, name.as_str())
}

fn file_in(dir: &Path, stem: &str) -> PathBuf {
    dir.join(format!("{stem}.key"))
}

/// Writes `key` to `dir/NAME.key`, creating `dir` (0700) and the file (0600) first, so the
/// secret is never readable by others even for a moment. Refuses to overwrite.
pub fn save_key(dir: &Path, name: &PrincipalName, key: &SigningKey) -> Result<PathBuf, Error> {
    write_new(dir, name.as_str(), key)
}

fn write_new(dir: &Path, stem: &str, key: &SigningKey) -> Result<PathBuf, Error> {
    create_private_dir(dir)?;
    let path = file_in(dir, stem);
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&path).map_err(|source| io_err(&path, source))?;
    f.write_all(hex::encode(key.to_bytes()).as_bytes())
        .and_then(|()| f.write_all(b"\n"))
        .and_then(|()| f.sync_all())
        .map_err(|source| io_err(&path, source))?;
    Ok(path)
}

/// Replaces `name`'s key file (after a rotation), atomically via a temporary file and rename.
pub fn replace_key(dir: &Path, name: &PrincipalName, key: &SigningKey) -> Result<PathBuf, Error> {
    // `NAME.rotating.key` would load as the principal `NAME.rotating`: the stem is not a
    // principal name (`+` is not allowed), so a leftover file is never loaded.
    let tmp_stem = format!("{name}+rotating");
    let tmp = file_in(dir, &tmp_stem);
    let _ = fs::remove_file(&tmp);
    write_new(dir, &tmp_stem, key)?;
    let path = key_path(dir, name);
    fs::rename(&tmp, &path).map_err(|source| io_err(&path, source))?;
    Ok(path)
}

fn create_private_dir(dir: &Path) -> Result<(), Error> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        b.mode(0o700);
    }
    b.create(dir).map_err(|source| io_err(dir, source))
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn save_load_and_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let kdir = dir.path().join("keys");
        let key = keys::generate(&mut ChaCha20Rng::seed_from_u64(1));
        let agent = PrincipalName::new("agent").unwrap();
        let path = save_key(&kdir, &agent, &key).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let dmode = fs::metadata(&kdir).unwrap().permissions().mode() & 0o777;
            assert_eq!(dmode, 0o700);
        }
        assert!(save_key(&kdir, &agent, &key).is_err(), "never overwrites");
        let other = keys::generate(&mut ChaCha20Rng::seed_from_u64(2));
        replace_key(&kdir, &agent, &other).unwrap();
        fs::write(kdir.join("Not A Name.key"), "zz").unwrap();
        let ring = Keyring::new();
        assert_eq!(ring.load_dir(&kdir).unwrap(), 1);
        assert_eq!(ring.get(&agent).unwrap().to_bytes(), other.to_bytes());
        fs::write(kdir.join("bad.key"), "zz").unwrap();
        assert!(ring.load_dir(&kdir).is_err());
    }
}
