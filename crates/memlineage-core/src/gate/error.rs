//! Errors of the gate: a malformed call, citation, attribution or parameter value.
//!
//! A deny is not an error: it is a [`GateDecision`](super::GateDecision). An error means the
//! input could not be judged at all, and the caller must not dispatch the call.

use super::policy::PolicyError;
use crate::hash::EntryId;

/// Why the gate could not decide.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The tool call is not well-formed JSON of an accepted shape.
    #[error("malformed tool call: {0}")]
    Call(String),
    /// An explicit citation names an entry that is not in the active context.
    #[error("the citation for parameter `{param}` names entry {id}, which is not in the context")]
    UnknownCitation {
        /// The cited parameter.
        param: String,
        /// The entry that is not in the context.
        id: EntryId,
    },
    /// An attribution weight names an entry that is not in the active context.
    #[error(
        "the attribution for parameter `{param}` names entry {id}, which is not in the context"
    )]
    UnknownAttribution {
        /// The parameter.
        param: String,
        /// The entry that is not in the context.
        id: EntryId,
    },
    /// A source names an entry that is not in the active context.
    #[error("the source {document:?} is given for entry {id}, which is not in the context")]
    UnknownSource {
        /// The entry that is not in the context.
        id: EntryId,
        /// The document named for it.
        document: String,
    },
    /// A checked parameter's value is not of its policy type.
    #[error("parameter `{param}` of tool `{tool}`: {problem}")]
    Value {
        /// The tool.
        tool: String,
        /// The parameter.
        param: String,
        /// What is wrong with the value.
        problem: String,
    },
    /// The policy file is invalid.
    #[error(transparent)]
    Policy(#[from] PolicyError),
}
