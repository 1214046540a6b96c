//! Where a store lives, resolved the way the CLI resolves it (`docs/cli.md`, "Where the store
//! and the keys live"): the given location, else `MEMLINEAGE_STORE` when set and non-empty,
//! else `./.memlineage/store.db`. The text is a `memlineage::StoreLocation` (`PATH`,
//! `sqlite:PATH`, `memory:`, `postgres://…`); secret keys of a file store live in `keys/`
//! beside it.

use crate::errors::Fail;
use memlineage::StoreLocation;

/// The environment variable that names the store when no location is given (as for the CLI).
pub const STORE_ENV: &str = "MEMLINEAGE_STORE";
/// The default store, relative to the working directory (as for the CLI).
pub const DEFAULT_STORE: &str = ".memlineage/store.db";

/// Resolves `given`, then the environment, then the default.
pub fn resolve(given: Option<&str>) -> Result<StoreLocation, Fail> {
    let env = std::env::var(STORE_ENV).ok().filter(|v| !v.is_empty());
    let text = given
        .map(str::to_string)
        .or(env)
        .unwrap_or_else(|| DEFAULT_STORE.to_string());
    Ok(text.parse::<StoreLocation>()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn forms() {
        assert!(matches!(
            resolve(Some("memory:")),
            Ok(StoreLocation::Memory)
        ));
        let Ok(loc) = resolve(Some("sqlite:a/b/s.db")) else {
            panic!("a file location");
        };
        assert_eq!(loc.sqlite_file(), Some(PathBuf::from("a/b/s.db")));
        assert_eq!(loc.key_dir(), Some(PathBuf::from("a/b/keys")));
        assert!(resolve(Some("")).is_err());
    }
}
