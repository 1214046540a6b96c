//! # memlineage
//!
//! The [`Memory`] handle agents use: signed, lineage-labelled memory on a pluggable store
//! (an embedded SQLite store by default). See the crate README and `docs/architecture.md`.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod attribution;
pub mod error;
pub mod store;

pub use error::Error;
pub mod clock;
pub mod keyring;
pub mod memory;
pub mod search;

pub use clock::{Clock, StepClock, SystemClock};
pub use keyring::Keyring;
pub use memory::{
    AuditReport, Direction, EntryView, GateOutcome, GateRequest, Memory, Settings, WriteRequest,
    Written,
};
pub use store::{SqliteStore, Store};
