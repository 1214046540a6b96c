//! Transparency that survives a hostile operator (`docs/merkle-and-checkpoints.md`): readers
//! that hold a checkpoint and refuse a store that rolled back or forked ([`client`]),
//! witnesses that cosign only consistent checkpoints ([`witness`]), reached in their
//! directories or over HTTP ([`WitnessTransports`]), and an offline monitor
//! ([`monitor`]). The decisions are in `memlineage_core::{witness, monitor}`; these modules
//! add the files, locks and store reads around them.

pub mod client;
mod files;
#[cfg(feature = "witness-http")]
mod http_witness;
pub mod monitor;
mod transports;
pub mod witness;

pub use client::{Held, ReaderTrust, TrustedCheckpoint};
pub use monitor::{MonitorDir, MonitorReport};
#[cfg(feature = "witness-http")]
pub use transports::HttpWitness;
pub use transports::{HttpTimeouts, WitnessRoots, WitnessTransports};
pub use witness::{FileWitness, WitnessTransport};
