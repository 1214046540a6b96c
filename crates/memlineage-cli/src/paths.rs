//! Where the store and its keys live.
//!
//! The store: `--store LOCATION`, then the `MEMLINEAGE_STORE` environment variable (when set and
//! non-empty), then `./.memlineage/store.db`. A location is a path or `sqlite:PATH` (the
//! embedded SQLite store; a path naming an existing directory means `store.db` inside it),
//! `memory:` (an in-memory store that lives as long as the command), or `postgres://…`
//! (`memlineage::StoreLocation`).
//!
//! The secret keys: `--keys DIR`, then `MEMLINEAGE_KEYS`, then `keys/` beside an SQLite store
//! file, else `./.memlineage/keys`.

use memlineage::StoreLocation;
use std::path::{Path, PathBuf};

/// The environment variable that names the store when `--store` is not given.
pub const STORE_ENV: &str = "MEMLINEAGE_STORE";
/// The environment variable that names the key directory when `--keys` is not given.
pub const KEYS_ENV: &str = "MEMLINEAGE_KEYS";
/// The default store path, relative to the working directory.
pub const DEFAULT_STORE: &str = ".memlineage/store.db";
/// The default key directory of a store that is not an SQLite file.
pub const DEFAULT_KEYS: &str = ".memlineage/keys";

/// The resolved location of a store and its keys.
#[derive(Clone, Debug)]
pub struct StorePaths {
    /// The store.
    pub location: StoreLocation,
    /// The SQLite database file, when the store is one.
    pub db: Option<PathBuf>,
    /// The directory of secret key files.
    pub keys: PathBuf,
    /// Where the location came from, for messages.
    pub origin: &'static str,
    /// What the reader requires of the store's history (`--trusted-checkpoint`,
    /// `--client-state`, `--require-witnesses`), applied whenever the store is opened.
    pub trust: memlineage::transparency::ReaderTrust,
    /// The external signer (`--signer`, `MEMLINEAGE_SIGNER`): principals whose keys are not in
    /// the key directory sign through it.
    pub signer: Option<String>,
    /// How long a call to the external signer may take (`--signer-timeout`).
    pub signer_timeout: std::time::Duration,
}

impl StorePaths {
    /// Resolves the store from the flag, the environment and the default, and the key
    /// directory from its flag, its environment variable, or the store.
    pub fn resolve(
        flag: Option<StoreLocation>,
        keys_flag: Option<&Path>,
    ) -> Result<StorePaths, memlineage::Error> {
        let env = std::env::var(STORE_ENV).ok().filter(|v| !v.is_empty());
        let (location, origin) = match (flag, env) {
            (Some(l), _) => (l, "--store"),
            (None, Some(e)) => (e.parse::<StoreLocation>()?, STORE_ENV),
            (None, None) => (StoreLocation::Sqlite(DEFAULT_STORE.into()), "default"),
        };
        let keys_env = std::env::var_os(KEYS_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let keys = keys_flag
            .map(Path::to_path_buf)
            .or(keys_env)
            .or_else(|| location.key_dir())
            .unwrap_or_else(|| PathBuf::from(DEFAULT_KEYS));
        Ok(StorePaths {
            db: location.sqlite_file(),
            location,
            keys,
            origin,
            trust: memlineage::transparency::ReaderTrust::default(),
            signer: None,
            signer_timeout: memlineage::ExternalSigner::DEFAULT_TIMEOUT,
        })
    }

    /// The directory the store file lives in (where `init` makes it), if it is a file.
    pub fn dir(&self) -> Option<PathBuf> {
        let db = self.db.as_ref()?;
        Some(match db.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        })
    }

    /// The directory of the log's own files beside its keys (the witness policy,
    /// `witnesses.policy`): the SQLite store file's directory, else the key directory's parent.
    pub fn config_dir(&self) -> PathBuf {
        self.dir().unwrap_or_else(|| match self.keys.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        })
    }

    /// Where the vector index of semantic search is saved (`Memory::with_embedder_saved`):
    /// `<store file>.vectors/` beside an SQLite file, else `vectors/` in [`Paths::config_dir`]
    /// (a PostgreSQL or in-memory store).
    pub fn vectors_dir(&self) -> PathBuf {
        match &self.db {
            Some(db) => {
                let mut name = db.as_os_str().to_owned();
                name.push(".vectors");
                PathBuf::from(name)
            }
            None => self.config_dir().join("vectors"),
        }
    }

    /// The store as shown: the SQLite file's path, else the location (no password).
    pub fn shown(&self) -> String {
        match &self.db {
            Some(db) => db.display().to_string(),
            None => self.location.to_string(),
        }
    }

    /// A human description: `./x/store.db (from MEMLINEAGE_STORE)`, `memory: (from --store)`.
    pub fn describe(&self) -> String {
        format!("{} (from {})", self.shown(), self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> StorePaths {
        StorePaths::resolve(Some(s.parse().unwrap()), None).unwrap()
    }

    #[test]
    fn file_directory_and_other_forms() {
        let p = at("a/b/s.db");
        assert_eq!(p.db, Some(PathBuf::from("a/b/s.db")));
        assert_eq!(p.keys, PathBuf::from("a/b/keys"));
        let p = at("sqlite:s.db");
        assert_eq!(p.keys, PathBuf::from("./keys"));
        let dir = tempfile::tempdir().unwrap();
        let p = at(&dir.path().display().to_string());
        assert_eq!(p.db, Some(dir.path().join(memlineage::store::STORE_FILE)));
        assert_eq!(p.keys, dir.path().join("keys"));
        let p = at("memory:");
        assert_eq!(p.db, None);
        assert_eq!(p.keys, PathBuf::from(DEFAULT_KEYS));
        assert_eq!(p.describe(), "memory: (from --store)");
        let p =
            StorePaths::resolve(Some("memory:".parse().unwrap()), Some(Path::new("k"))).unwrap();
        assert_eq!(p.keys, PathBuf::from("k"));
    }
}
