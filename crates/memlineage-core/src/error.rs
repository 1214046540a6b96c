//! The crate's error type: one `#[non_exhaustive]` enum with typed sub-errors (as in rustls).

use crate::canonical::CanonicalError;
use crate::entry::EntryError;
use crate::keys::KeyError;
use crate::principal::RegistryError;

/// Any error from the core.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Canonical CBOR.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    /// An entry record.
    #[error(transparent)]
    Entry(#[from] EntryError),
    /// Keys and signatures.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// The principal registry.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}
