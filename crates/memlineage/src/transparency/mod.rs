//! Transparency that survives a hostile operator (`docs/merkle-and-checkpoints.md`): readers
//! that hold a checkpoint and refuse a store that rolled back or forked ([`client`]),
//! witnesses that cosign only consistent checkpoints ([`witness`]), and an offline monitor
//! ([`monitor`]). The decisions are in `memlineage_core::{witness, monitor}`; these modules
//! add the files, locks and store reads around them.

pub mod client;
mod files;
pub mod monitor;
pub mod witness;

pub use client::{Held, ReaderTrust, TrustedCheckpoint};
pub use monitor::{MonitorDir, MonitorReport};
pub use witness::{FileWitness, WitnessTransport};
