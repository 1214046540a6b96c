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

/// The size a `409 Conflict` body names: the decimal tree size of the witness's latest
/// cosigned checkpoint and a newline, nothing else (C2SP tlog-witness §add-checkpoint);
/// `None` for any other body.
pub fn parse_conflict_body(body: &str) -> Option<u64> {
    super::request::parse_decimal(body.strip_suffix('\n')?)
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_answer_is_the_size_and_a_newline_in_text_x_tlog_size() {
        let r = Refusal::Conflict {
            old_size: 3,
            latest: 20852014,
        }
        .response();
        assert_eq!((r.status, r.content_type), (409, "text/x.tlog.size"));
        assert_eq!(r.body, "20852014\n");
        assert_eq!(parse_conflict_body(&r.body), Some(20852014));
        for bad in [
            "",
            "7",
            "07\n",
            "7\n\n",
            " 7\n",
            "-1\n",
            "18446744073709551616\n",
        ] {
            assert_eq!(parse_conflict_body(bad), None, "{bad:?}");
        }
        assert_eq!(parse_conflict_body("0\n"), Some(0));
    }
}
