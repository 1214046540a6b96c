//! Where the store and its keys live.
//!
//! Resolution order: `--store PATH`, then the `MEMLINEAGE_STORE` environment variable (when set
//! and non-empty), then `./.memlineage/store.db`. A path naming an existing directory means
//! `store.db` inside it. Secret keys live beside the store, in `<store dir>/keys/NAME.key`.

use std::path::{Path, PathBuf};

/// The environment variable that names the store when `--store` is not given.
pub const STORE_ENV: &str = "MEMLINEAGE_STORE";
/// The default store path, relative to the working directory.
pub const DEFAULT_STORE: &str = ".memlineage/store.db";
/// The store file name used when the given path is a directory.
pub const STORE_FILE: &str = "store.db";

/// The resolved location of a store.
#[derive(Clone, Debug)]
pub struct StorePaths {
    /// The SQLite database file.
    pub db: PathBuf,
    /// The directory of secret key files.
    pub keys: PathBuf,
    /// Where the path came from, for messages.
    pub origin: &'static str,
    /// What the reader requires of the store's history (`--trusted-checkpoint`,
    /// `--client-state`, `--require-witnesses`), applied whenever the store is opened.
    pub trust: memlineage::transparency::ReaderTrust,
}

impl StorePaths {
    /// Resolves the store path from the flag, the environment and the default.
    pub fn resolve(flag: Option<&Path>) -> StorePaths {
        let env = std::env::var_os(STORE_ENV).filter(|v| !v.is_empty());
        let (path, origin) = match (flag, env) {
            (Some(p), _) => (p.to_path_buf(), "--store"),
            (None, Some(e)) => (PathBuf::from(e), STORE_ENV),
            (None, None) => (PathBuf::from(DEFAULT_STORE), "default"),
        };
        StorePaths::at(path, origin)
    }

    fn at(path: PathBuf, origin: &'static str) -> StorePaths {
        let db = if path.is_dir() {
            path.join(STORE_FILE)
        } else {
            path
        };
        let dir = match db.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        StorePaths {
            keys: dir.join("keys"),
            db,
            origin,
            trust: memlineage::transparency::ReaderTrust::default(),
        }
    }

    /// The directory holding the store file.
    pub fn dir(&self) -> PathBuf {
        self.keys
            .parent()
            .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
    }

    /// A human description: `./x/store.db (from MEMLINEAGE_STORE)`.
    pub fn describe(&self) -> String {
        format!("{} (from {})", self.db.display(), self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_and_directory_forms() {
        let p = StorePaths::at(PathBuf::from("a/b/s.db"), "--store");
        assert_eq!(p.db, PathBuf::from("a/b/s.db"));
        assert_eq!(p.keys, PathBuf::from("a/b/keys"));
        let p = StorePaths::at(PathBuf::from("s.db"), "--store");
        assert_eq!(p.keys, PathBuf::from("./keys"));
        let dir = tempfile::tempdir().unwrap();
        let p = StorePaths::at(dir.path().to_path_buf(), "--store");
        assert_eq!(p.db, dir.path().join(STORE_FILE));
        assert_eq!(p.keys, dir.path().join("keys"));
    }
}
