//! Small additions for the `memlineage` command-line tool.

use super::Memory;
use crate::error::Error;
use crate::store::Store;

impl<S: Store> Memory<S> {
    /// Opens an initialised store for an audit: reads the settings but, unlike
    /// [`Memory::open`], does not replay the principal registry first. A store whose registry
    /// records were edited behind the program's back can then still be audited:
    /// [`Memory::verify`] replays and checks the registry itself and reports what is wrong
    /// instead of failing to open.
    pub fn open_for_audit(store: S) -> Result<Memory<S>, Error> {
        let settings = super::stored_settings(&store)?;
        Ok(Memory::from_parts(store, settings))
    }
}
