//! What a witness answers to `add-checkpoint`: HTTP status, content type and body, as C2SP
//! tlog-witness prescribes, so that an HTTP service only has to copy them onto the wire.

use std::fmt;

/// Why a witness refused to cosign, with the HTTP status C2SP tlog-witness assigns.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// The request body is malformed (`400 Bad Request`).
    Malformed(String),
    /// The checkpoint's origin is not a log this witness knows (`404 Not Found`).
    UnknownOrigin(String),
    /// No valid signature from a key the witness trusts for the origin, or a failing one
    /// (`403 Forbidden`).
    Unauthenticated(String),
    /// The old size is larger than the checkpoint's size (`400 Bad Request`).
    OldSizeBeyondCheckpoint {
        /// The old size sent.
        old_size: u64,
        /// The checkpoint's size.
        size: u64,
    },
    /// The old size is not the size of the checkpoint the witness cosigned last
    /// (`409 Conflict`, body: that size).
    Conflict {
        /// The old size sent.
        old_size: u64,
        /// The size the witness last cosigned for this origin.
        latest: u64,
    },
    /// The checkpoint is not consistent with what the witness cosigned before, or a size-0
    /// checkpoint has another root than the empty tree's (`422 Unprocessable Entity`).
    Inconsistent(String),
}

impl Refusal {
    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Malformed(_) | Refusal::OldSizeBeyondCheckpoint { .. } => 400,
            Refusal::Unauthenticated(_) => 403,
            Refusal::UnknownOrigin(_) => 404,
            Refusal::Conflict { .. } => 409,
            Refusal::Inconsistent(_) => 422,
        }
    }

    /// The response to send.
    pub fn response(&self) -> WitnessResponse {
        match self {
            Refusal::Conflict { latest, .. } => WitnessResponse {
                status: 409,
                content_type: SIZE_CONTENT_TYPE,
                body: format!("{latest}\n"),
            },
            other => WitnessResponse {
                status: other.status(),
                content_type: TEXT_CONTENT_TYPE,
                body: format!("{other}\n"),
            },
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Malformed(m) => write!(f, "malformed add-checkpoint request: {m}"),
            Refusal::UnknownOrigin(o) => write!(
                f,
                "unknown log origin `{o}`: this witness is not configured for it"
            ),
            Refusal::Unauthenticated(m) => write!(f, "checkpoint not signed by the log: {m}"),
            Refusal::OldSizeBeyondCheckpoint { old_size, size } => write!(
                f,
                "old size {old_size} is larger than the checkpoint's size {size}"
            ),
            Refusal::Conflict { old_size, latest } => write!(
                f,
                "old size {old_size} is not the size this witness last cosigned ({latest}): send a consistency proof from {latest}"
            ),
            Refusal::Inconsistent(m) => write!(f, "refusing to cosign: {m}"),
        }
    }
}

/// The content type of a `409` body (C2SP tlog-witness).
pub const SIZE_CONTENT_TYPE: &str = "text/x.tlog.size";
/// The content type of the other bodies.
pub const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// An HTTP response of the witness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WitnessResponse {
    /// The status code (200 with cosignature lines, or a [`Refusal`]'s).
    pub status: u16,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The body.
    pub body: String,
}

impl WitnessResponse {
    /// A `200` response carrying signature lines.
    pub fn cosigned(lines: String) -> WitnessResponse {
        WitnessResponse {
            status: 200,
            content_type: TEXT_CONTENT_TYPE,
            body: lines,
        }
    }
}
