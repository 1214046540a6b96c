//! # memlineage
//!
//! The [`Memory`] handle agents use: signed, lineage-labelled memory on a pluggable storage
//! backend chosen at run time ([`StoreLocation`]: an embedded SQLite file by default,
//! `memory:`, or PostgreSQL). The handle is the only way in: every append, relabel and
//! deletion goes through its checks. See the crate README and `docs/architecture.md`.
//!
//! Features: `sqlite` (default; the embedded store), `postgres` (the PostgreSQL store), `openai` (an OpenAI-compatible judge),
//! `models` (the local model), `unchecked-store-access` (raw store access for the evaluation,
//! benchmarks and tamper tests; **not for production**, see [`unchecked`]).
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod attribution;
pub mod clock;
pub mod error;
pub mod keyring;
pub mod memory;
pub mod search;
pub mod signer;
pub mod store;
pub mod transparency;
#[cfg(feature = "unchecked-store-access")]
pub mod unchecked;

pub use clock::{Clock, StepClock, SystemClock};
pub use error::{Error, ErrorKind};
pub use keyring::Keyring;
pub use memlineage_core::entry::Scope;
pub use memlineage_core::{AttributionName, PrincipalName};
pub use memory::{AtRisk, RollbackWindow, VerifierKeyRecord, WitnessAnswer, WitnessRound};
pub use memory::{
    AuditReport, CopyReport, Direction, EntryView, GateOutcome, GateRecord, GateRequest,
    GateTicket, IdPrefix, IntoBackend, Memory, RejectedEmbedding, Settings, SignedWrites,
    UnrecordedGate, VectorIndexStatus, WriteRequest, Written,
};
pub use signer::{ExternalSigner, Signer, SignerFailure, SignerProblem};
#[cfg(feature = "postgres")]
pub use store::PostgresStore;
#[cfg(feature = "sqlite")]
pub use store::SqliteStore;
pub use store::{Backend, BackendRead, MemoryStore, OpenMode, StoreLocation};

#[cfg(test)]
mod tests {
    /// The handle and its errors cross threads (the HTTP service, the Python bindings).
    #[test]
    fn the_handle_and_errors_are_send_and_sync() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<crate::Memory>();
        send_sync::<crate::Error>();
        send_sync::<crate::StoreLocation>();
        send_sync::<Box<dyn crate::Backend>>();
    }
}
