//! Small additions for the `memlineage` command-line tool.

use super::{Memory, Settings};
use crate::error::Error;
use crate::store::Store;
use memlineage_core::label::{Fallback, Weight};

impl<S: Store> Memory<S> {
    /// Opens an initialised store for an audit: reads the settings but, unlike
    /// [`Memory::open`], does not replay the principal registry first. A store whose registry
    /// records were edited behind the program's back can then still be audited:
    /// [`Memory::verify`] replays and checks the registry itself and reports what is wrong
    /// instead of failing to open.
    pub fn open_for_audit(store: S) -> Result<Memory<S>, Error> {
        let get = |k: &str| -> Result<String, Error> {
            store.setting(k)?.ok_or_else(|| {
                Error::Store(format!(
                    "the store is not initialised (setting `{k}` missing): run `memlineage init`"
                ))
            })
        };
        let origin = get("origin")?;
        let tau = get("tau")?
            .parse::<Weight>()
            .map_err(|e| Error::Integrity(format!("setting tau: {e}")))?;
        let fallback = get("fallback")?
            .parse::<Fallback>()
            .map_err(|e| Error::Integrity(format!("setting fallback: {e}")))?;
        Ok(Memory::from_parts(
            store,
            Settings {
                origin,
                tau,
                fallback,
            },
        ))
    }
}
