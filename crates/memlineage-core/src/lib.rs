//! # memlineage-core
//!
//! The pure logic of MemLineage (arXiv 2605.14421): the entry record (M1), its canonical CBOR
//! encoding and Ed25519 binding (M2), the RFC 6962 Merkle log and signed checkpoints (M3), the
//! trust lattice and lineage (M4), prompt rendering (M5) and the sensitive-action gate (M6).
//!
//! This crate does no file, network or clock access: callers move bytes in and out, pass the
//! current time, and supply randomness. That keeps every decision reproducible and testable, in
//! the manner of rustls' I/O-free core.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod canonical;
pub mod checkpoint;
pub mod entry;
pub mod error;
#[doc(hidden)]
pub mod fuzz_checks;
pub mod gate;
pub mod hash;
pub mod keys;
pub mod label;
pub mod lineage;
pub mod merkle;
pub mod names;
pub mod principal;
pub mod records;
pub mod render;
pub mod rule;
pub mod trust;

pub use error::Error;
pub use hash::{EntryId, Hash256};
pub use names::{AttributionName, PrincipalName};
