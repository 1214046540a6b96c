//! The error type of the memory handle and its store.

use memlineage_core::EntryId;

/// Any error from the memory handle.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A core error (encoding, keys, registry).
    #[error(transparent)]
    Core(#[from] memlineage_core::Error),
    /// An entry failed to decode or verify.
    #[error(transparent)]
    Entry(#[from] memlineage_core::entry::EntryError),
    /// The registry refused a signer or a change.
    #[error(transparent)]
    Registry(#[from] memlineage_core::principal::RegistryError),
    /// A Merkle proof could not be built or verified.
    #[error(transparent)]
    Merkle(#[from] memlineage_core::merkle::MerkleError),
    /// A checkpoint could not be built, parsed or verified.
    #[error(transparent)]
    Checkpoint(#[from] memlineage_core::checkpoint::CheckpointError),
    /// The SQLite store failed.
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// No entry with this id.
    #[error("no entry with id {0}")]
    NotFound(EntryId),
    /// A parent named in a write is not in the log.
    #[error("parent {0} is not in the log (parents must be written before their children)")]
    UnknownParent(EntryId),
    /// The store is not initialised, or was made by an incompatible version.
    #[error("{0}")]
    Store(String),
    /// The stored data is inconsistent (tampering or corruption).
    #[error("store integrity: {0}")]
    Integrity(String),
    /// A request the caller can fix.
    #[error("{0}")]
    Invalid(String),
    /// An entry's label, computed before its transaction, is lower than its parents' effective
    /// labels (or its writer's distrust) imply as of the transaction: a distrust record was
    /// committed in between. The write path re-labels and retries; this reaches the caller
    /// only when the labels kept changing.
    #[error(
        "the label of entry {id} rose from {signed} to {required} while it was being written (a distrust record was committed meanwhile, or the batch distrusts its own parents or writer); nothing was written: write it again"
    )]
    StaleLabel {
        /// The entry as drafted.
        id: EntryId,
        /// The label it was signed with.
        signed: memlineage_core::label::TrustLabel,
        /// The label the transaction requires.
        required: memlineage_core::label::TrustLabel,
    },
    /// The gate could not judge a tool call (a malformed call, citation or parameter value):
    /// the call must not be dispatched.
    #[error("gate: {0}")]
    Gate(#[from] memlineage_core::gate::GateError),
    /// The store's history contradicts a checkpoint the reader holds (a rollback or a fork):
    /// nothing is read from it.
    #[error(
        "refusing the store: {0} (the reader holds a checkpoint this store contradicts; compare with a witness or `memlineage monitor` before trusting it)"
    )]
    History(memlineage_core::monitor::Finding),
    /// No secret key is loaded for this principal.
    #[error(
        "no secret key for principal `{0}` (keys live in the store's key directory; is this the right store?)"
    )]
    NoKey(String),
}

impl From<memlineage_core::canonical::CanonicalError> for Error {
    fn from(e: memlineage_core::canonical::CanonicalError) -> Self {
        Error::Core(e.into())
    }
}

impl From<memlineage_core::keys::KeyError> for Error {
    fn from(e: memlineage_core::keys::KeyError) -> Self {
        Error::Core(e.into())
    }
}
