//! # memlineage-server
//!
//! `memlineage serve`: the MemLineage memory service over HTTP. Every library operation —
//! principals, writes (single and batch), reads, the log, proofs, checkpoints, forget,
//! distrust, verified search and recall, lineage, the gate with repair, verify as a background
//! job — as JSON over HTTP (axum on tokio), with bearer tokens bound to a principal and scopes,
//! TLS (rustls), request limits, structured logs, Prometheus metrics, an OpenAPI 3.1 document,
//! group commit across concurrent requests and a graceful shutdown that loses no acknowledged
//! write. See `docs/service.md`.
//!
//! `memlineage witness serve` is here too: a witness over the HTTP interface of C2SP
//! tlog-witness ([`witness`], `docs/merkle-and-checkpoints.md` §9).
//!
//! The library (`memlineage`) and the CLI's other commands stay free of an async runtime: the
//! runtime lives here, behind the CLI's default `server` feature.
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::unwrap_used, clippy::expect_used))]

pub mod api;
pub mod auth;
pub mod bench;
pub mod committer;
pub mod config;
pub mod deadline;
pub mod entry_scopes;
pub mod error;
pub mod extract;
pub mod jobs;
pub mod keys;
pub mod library_threads;
pub mod loadgen;
pub mod log_writer;
pub mod openapi;
pub mod policies;
pub mod server;
pub mod state;
pub mod telemetry;
pub mod token_cache;
pub mod tokens;
pub mod witness;

pub use config::{Config, Limits, SemanticSearch, TlsFiles};
pub use error::ApiError;
pub use keys::{FileKeys, KeyStore};
pub use server::run;
pub use witness::{WitnessConfig, run_witness};
