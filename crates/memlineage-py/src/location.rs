//! Where a store lives, resolved the way the CLI resolves it (`docs/cli.md`, "Where the store
//! and the keys live"): the given location, else `MEMLINEAGE_STORE` when set and non-empty,
//! else `./.memlineage/store.db`; a directory means `store.db` inside it; secret keys live in
//! `keys/` beside the store file. `memory:` is a store in RAM, gone when the handle is.

use crate::errors::Fail;
use std::path::{Path, PathBuf};

/// The environment variable that names the store when no location is given (as for the CLI).
pub const STORE_ENV: &str = "MEMLINEAGE_STORE";
/// The default store path, relative to the working directory (as for the CLI).
pub const DEFAULT_STORE: &str = ".memlineage/store.db";

/// A resolved store location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file, with its key directory.
    File {
        /// The database file.
        db: PathBuf,
        /// The directory of secret key files.
        keys: PathBuf,
    },
    /// A store in RAM (keys in the process only).
    InMemory,
}

impl Location {
    /// Resolves `given` (a path, `sqlite:PATH`, `memory:`), then the environment, then the
    /// default.
    pub fn resolve(given: Option<&str>) -> Result<Location, Fail> {
        let env = std::env::var(STORE_ENV).ok().filter(|v| !v.is_empty());
        let text = match (given, env.as_deref()) {
            (Some(g), _) => g.to_string(),
            (None, Some(e)) => e.to_string(),
            (None, None) => DEFAULT_STORE.to_string(),
        };
        if text.is_empty() {
            return Err(Fail::Input(
                "the store location is empty: give a path, `sqlite:PATH` or `memory:`".into(),
            ));
        }
        if text == "memory:" || text == ":memory:" {
            return Ok(Location::InMemory);
        }
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            return Err(Fail::Unavailable(
                "a PostgreSQL location: this build of memlineage opens SQLite stores (`PATH`, \
                 `sqlite:PATH`) and `memory:`"
                    .into(),
            ));
        }
        let path = PathBuf::from(text.strip_prefix("sqlite:").unwrap_or(&text));
        Ok(Location::file(path))
    }

    fn file(path: PathBuf) -> Location {
        let db = if path.is_dir() {
            path.join("store.db")
        } else {
            path
        };
        let dir = match db.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Location::File {
            keys: dir.join("keys"),
            db,
        }
    }

    /// The location as a string a person reads (and `Memory.open` accepts back).
    pub fn describe(&self) -> String {
        match self {
            Location::File { db, .. } => db.display().to_string(),
            Location::InMemory => "memory:".to_string(),
        }
    }

    /// The key directory, for a file store.
    pub fn keys_dir(&self) -> Option<&Path> {
        match self {
            Location::File { keys, .. } => Some(keys),
            Location::InMemory => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(
            Location::resolve(Some("memory:")).ok(),
            Some(Location::InMemory)
        );
        let Ok(Location::File { db, keys }) = Location::resolve(Some("sqlite:a/b/s.db")) else {
            panic!("a file location");
        };
        assert_eq!(db, PathBuf::from("a/b/s.db"));
        assert_eq!(keys, PathBuf::from("a/b/keys"));
        let Ok(Location::File { keys, .. }) = Location::resolve(Some("s.db")) else {
            panic!("a file location");
        };
        assert_eq!(keys, PathBuf::from("./keys"));
        assert!(Location::resolve(Some("")).is_err());
        assert!(Location::resolve(Some("postgres://u:p@h/db")).is_err());
    }
}
