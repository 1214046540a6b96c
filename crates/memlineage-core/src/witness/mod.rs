//! Witnessing checkpoints (C2SP tlog-witness, tlog-cosignature, tlog-policy), without I/O.
//!
//! A log is only as trustworthy as the guarantee that it cannot show two histories. A
//! *witness* keeps, for every log it knows, the last checkpoint it cosigned, and cosigns a new
//! one only when given a consistency proof from that one ([`Cosigner`]); a *policy* says how
//! many witnesses a reader requires ([`Policy`]). A rollback or a fork then needs the witnesses
//! to collude, and a client that holds a witnessed checkpoint cannot be shown an older or
//! different tree.
//!
//! - [`AddCheckpoint`]: the `add-checkpoint` request body, parsed and written;
//! - [`Cosigner`]: the witness's checks, in the spec's order, and its cosignature;
//! - [`Refusal`], [`WitnessResponse`]: the HTTP status, content type and body to answer, so
//!   that a service mounts the logic unchanged;
//! - [`Policy`]: which witnesses, and how many, a checkpoint needs.
//!
//! `docs/merkle-and-checkpoints.md` describes the threat model and the rollback window.

mod cosigner;
mod policy;
mod request;
mod response;

pub use cosigner::{Cosigned, Cosigner, KnownLogs, Submission};
pub use policy::{MAX_POLICY_ITEMS, Policy, PolicyError, PolicyLog, PolicyWitness, QuorumCheck};
pub use request::{AddCheckpoint, MAX_PROOF_LINES, MAX_REQUEST_BYTES};
pub use response::{
    Refusal, SIZE_CONTENT_TYPE, TEXT_CONTENT_TYPE, WitnessResponse, parse_conflict_body,
};
