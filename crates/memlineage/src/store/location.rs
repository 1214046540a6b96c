//! Where a store lives, as a user writes it (`--store`, `MEMLINEAGE_STORE`, a binding's
//! argument), and opening the backend there.
//!
//! | written | backend |
//! |---|---|
//! | `PATH`, `sqlite:PATH` | the embedded SQLite store in that file (a directory means `store.db` inside it); the default, no set-up |
//! | `memory:` | a fresh in-memory store, gone with the handle |
//! | `postgres://…`, `postgresql://…` | a PostgreSQL database (feature `postgres`) |
//!
//! Anything else is a path: a file literally named `memory:` is `./memory:`.

use super::backend::Backend;
use super::memory::MemoryStore;
use crate::error::{Error, InputError, StoreState};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The file name of a store given as a directory.
pub const STORE_FILE: &str = "store.db";

/// Where a store lives.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreLocation {
    /// An SQLite database file (a directory: `store.db` inside it).
    Sqlite(PathBuf),
    /// A fresh in-memory store.
    Memory,
    /// A PostgreSQL connection URL (`postgres://user:password@host:port/database?…`).
    Postgres(String),
}

/// Whether a store is opened or made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// The store must exist.
    Existing,
    /// The store must not exist yet (`init`).
    Create,
}

impl StoreLocation {
    /// The SQLite file a [`StoreLocation::Sqlite`] names: the path, or `store.db` inside it
    /// when it is an existing directory.
    pub fn sqlite_file(&self) -> Option<PathBuf> {
        match self {
            StoreLocation::Sqlite(p) if p.is_dir() => Some(p.join(STORE_FILE)),
            StoreLocation::Sqlite(p) => Some(p.clone()),
            _ => None,
        }
    }

    /// The directory the secret keys of an SQLite store live in: `keys/` beside the file.
    /// `None` for other backends, whose keys live wherever the caller keeps them.
    pub fn key_dir(&self) -> Option<PathBuf> {
        let file = self.sqlite_file()?;
        let dir = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Some(dir.join("keys"))
    }

    /// Opens the backend: an existing store, or a place for a new one.
    pub fn open(&self, mode: OpenMode) -> Result<Box<dyn Backend>, Error> {
        match self {
            StoreLocation::Sqlite(_) => {
                let file = self.sqlite_file().unwrap_or_default();
                open_sqlite(&file, mode, &self.to_string())
            }
            StoreLocation::Memory => match mode {
                OpenMode::Create => Ok(Box::new(MemoryStore::new())),
                OpenMode::Existing => Err(StoreState::Missing {
                    location: "memory: (an in-memory store holds nothing until it is initialised)"
                        .into(),
                }
                .into()),
            },
            StoreLocation::Postgres(url) => open_postgres(url, mode),
        }
    }
}

#[cfg(feature = "sqlite")]
fn open_sqlite(file: &Path, mode: OpenMode, shown: &str) -> Result<Box<dyn Backend>, Error> {
    match mode {
        OpenMode::Existing if !file.is_file() => Err(StoreState::Missing {
            location: shown.to_string(),
        }
        .into()),
        OpenMode::Create if file.exists() => Err(StoreState::Exists {
            location: shown.to_string(),
        }
        .into()),
        _ => Ok(Box::new(super::SqliteStore::open(file)?)),
    }
}

#[cfg(not(feature = "sqlite"))]
fn open_sqlite(_: &Path, _: OpenMode, shown: &str) -> Result<Box<dyn Backend>, Error> {
    Err(Error::Unavailable(format!(
        "{shown}: this build has no SQLite backend (rebuild with the `sqlite` feature)"
    )))
}

fn open_postgres(url: &str, _mode: OpenMode) -> Result<Box<dyn Backend>, Error> {
    Err(Error::Unavailable(format!(
        "{}: this build has no PostgreSQL backend (rebuild with the `postgres` feature)",
        redact(url)
    )))
}

/// A PostgreSQL URL with its password replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

impl FromStr for StoreLocation {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |problem: &str| -> Error {
            InputError::Location {
                input: redact(s).chars().take(200).collect(),
                problem: problem.to_string(),
            }
            .into()
        };
        if s.is_empty() {
            return Err(bad(
                "empty (give a path, sqlite:PATH, memory: or postgres://…)",
            ));
        }
        if s == "memory:" {
            return Ok(StoreLocation::Memory);
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            return Ok(StoreLocation::Postgres(s.to_string()));
        }
        if let Some(path) = s.strip_prefix("sqlite:") {
            if path.is_empty() {
                return Err(bad("`sqlite:` needs a path (sqlite:PATH)"));
            }
            return Ok(StoreLocation::Sqlite(PathBuf::from(path)));
        }
        Ok(StoreLocation::Sqlite(PathBuf::from(s)))
    }
}

/// `sqlite:PATH`, `memory:`, or the PostgreSQL URL with its password hidden.
impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::Sqlite(p) => write!(f, "sqlite:{}", p.display()),
            StoreLocation::Memory => f.write_str("memory:"),
            StoreLocation::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

/// As [`Display`](fmt::Display): the password never reaches a log.
impl fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StoreLocation({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let p = |s: &str| s.parse::<StoreLocation>().unwrap();
        assert_eq!(p("a/b.db"), StoreLocation::Sqlite("a/b.db".into()));
        assert_eq!(p("sqlite:a/b.db"), StoreLocation::Sqlite("a/b.db".into()));
        assert_eq!(p("sqlite:memory:"), StoreLocation::Sqlite("memory:".into()));
        assert_eq!(p("memory:"), StoreLocation::Memory);
        assert_eq!(p("./memory:"), StoreLocation::Sqlite("./memory:".into()));
        assert_eq!(
            p("postgres://u:pw@h:5432/db"),
            StoreLocation::Postgres("postgres://u:pw@h:5432/db".into())
        );
        assert!(matches!(p("postgresql://h/db"), StoreLocation::Postgres(_)));
        for bad in ["", "sqlite:"] {
            let e = bad.parse::<StoreLocation>().unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn prints_without_the_password() {
        let shown = |s: &str| s.parse::<StoreLocation>().unwrap().to_string();
        assert_eq!(shown("x.db"), "sqlite:x.db");
        assert_eq!(shown("memory:"), "memory:");
        assert_eq!(
            shown("postgres://me:secret@db.example:5432/log?sslmode=require"),
            "postgres://me:***@db.example:5432/log?sslmode=require"
        );
        assert_eq!(shown("postgres://me@h/db"), "postgres://me@h/db");
        let debug = format!(
            "{:?}",
            "postgres://a:b@c/d".parse::<StoreLocation>().unwrap()
        );
        assert!(!debug.contains(":b@"), "{debug}");
    }

    #[test]
    fn a_directory_means_store_db_inside_and_keys_live_beside() {
        let dir = tempfile::tempdir().unwrap();
        let loc = StoreLocation::Sqlite(dir.path().to_path_buf());
        assert_eq!(loc.sqlite_file().unwrap(), dir.path().join(STORE_FILE));
        assert_eq!(loc.key_dir().unwrap(), dir.path().join("keys"));
        assert_eq!(
            StoreLocation::Sqlite("s.db".into()).key_dir().unwrap(),
            PathBuf::from("./keys")
        );
        assert_eq!(StoreLocation::Memory.key_dir(), None);
    }

    #[test]
    fn existing_and_new_stores_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let loc = StoreLocation::Sqlite(dir.path().join("s.db"));
        let e = loc.open(OpenMode::Existing).err().unwrap();
        assert_eq!(e.kind(), crate::ErrorKind::NotFound);
        assert!(e.to_string().contains("no store at sqlite:"), "{e}");
        drop(loc.open(OpenMode::Create).unwrap());
        assert!(loc.open(OpenMode::Existing).is_ok());
        assert_eq!(
            loc.open(OpenMode::Create).err().unwrap().kind(),
            crate::ErrorKind::Conflict
        );
        assert_eq!(
            StoreLocation::Memory
                .open(OpenMode::Existing)
                .err()
                .unwrap()
                .kind(),
            crate::ErrorKind::NotFound
        );
        let pg = "postgres://x@127.0.0.1:1/db"
            .parse::<StoreLocation>()
            .unwrap();
        assert!(pg.open(OpenMode::Existing).is_err());
    }
}
