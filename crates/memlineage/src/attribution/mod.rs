//! Attribution: the weight of each derivation edge (paper §M4, "attribution").
//!
//! Given a child (the text of a new entry, or a tool call) and its candidate parents (the
//! entries in the writer's context), an [`Attributor`] returns one weight in [0, 1] per parent
//! and names the algorithm, which is recorded in the entry's `attribution` field. Three
//! algorithms:
//!
//! * [`Coarse`] — weight 1 for every parent that was in the context (the paper's baseline, and
//!   what every other algorithm falls back to when it cannot answer);
//! * [`LmSelfEval`] — an LLM judge scores each parent, over a [`JudgeBackend`]: an
//!   OpenAI-compatible Chat Completions endpoint ([`judge::openai`], feature `openai`), the local
//!   SmolLM2 judge ([`local::LocalJudge`], feature `models`), or a record/replay file
//!   ([`judge::replay::ReplayJudge`]) so evaluations are deterministic and need no model. The
//!   judge is hardened against prompt injection and **fails closed**: any reply that is not
//!   exactly the expected JSON gives coarse weights (see [`judge`]);
//! * `AttnAttr` — white-box attention of the local open-weight model ([`local::AttnAttr`],
//!   feature `models`).
//!
//! [`select::attributor`] builds one by name (`coarse`, `lm-self-eval` with a
//! [`JudgeChoice`], `attn-attr`), for the command line's `attribute` and
//! `write --attribution`; an algorithm this build lacks is [`AttributionError::Unavailable`].
//!
//! Weights leave this module as [`Weight`]s (basis points): floats are rounded with
//! [`Weight::from_unit_f64`] before anything is signed. `docs/attribution.md` has the measured
//! quality and cost of each algorithm.

use memlineage_core::EntryId;
use memlineage_core::label::Weight;

mod coarse;
pub mod judge;
#[cfg(feature = "models")]
pub mod local;
pub mod select;

pub use coarse::Coarse;
pub use judge::{JudgeBackend, LmSelfEval};
#[cfg(feature = "models")]
pub use local::{AttnAttr, JudgeDecoding, LocalJudge};
pub use select::{Algorithm, JudgeChoice, Selection, attributor};

/// A candidate parent: its entry id and its (verified) content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParentText<'a> {
    /// The parent's entry id.
    pub id: EntryId,
    /// The parent's content, as it was in the writer's context.
    pub text: &'a str,
}

/// Why an attributor fell back to coarse weights instead of answering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    /// What failed, for logs and reports (e.g. "reply is not valid JSON: …").
    pub reason: String,
}

/// The weights and how they were obtained.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attribution {
    /// One weight per parent, in the order given.
    pub weights: Vec<Weight>,
    /// `Some` when the algorithm could not answer and the weights are the coarse fallback
    /// (1 for every parent): the failure closed, never open.
    pub fell_back: Option<Fallback>,
    /// The attribution name to record for these weights, when this answer knows it more
    /// precisely than [`Attributor::name`] did before the call: LmSelfEval over a judge with
    /// several request modes names the mode that answered (`…+json-schema`, `…+prompt`).
    /// `None`: record [`Attributor::name`].
    pub name: Option<String>,
}

impl Attribution {
    /// Weights computed normally.
    pub fn answered(weights: Vec<Weight>) -> Attribution {
        Attribution {
            weights,
            fell_back: None,
            name: None,
        }
    }

    /// The coarse fallback for `n` parents, with the reason.
    pub fn fallback(n: usize, reason: impl Into<String>) -> Attribution {
        Attribution {
            weights: coarse_weights(n),
            fell_back: Some(Fallback {
                reason: reason.into(),
            }),
            name: None,
        }
    }

    /// Whether the weights are the coarse fallback.
    pub fn fell_back(&self) -> bool {
        self.fell_back.is_some()
    }
}

/// Weighted parents, the algorithm that weighed them, and whether it fell back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttributedParents {
    /// One parent per requested id, in the order given.
    pub parents: Vec<memlineage_core::entry::Parent>,
    /// The attributor's name: pass it as the attribution of the write.
    pub attribution: memlineage_core::AttributionName,
    /// `Some` when the attributor fell back to coarse weights.
    pub fell_back: Option<Fallback>,
    /// Parents whose content could not be read (forgotten or erased): they were not shown to
    /// the attributor and weigh 1 (fail closed).
    pub unread: Vec<EntryId>,
}

/// Coarse weights: 1 for each of `n` parents.
pub fn coarse_weights(n: usize) -> Vec<Weight> {
    vec![Weight::ONE; n]
}

/// An attribution algorithm.
pub trait Attributor: Send + Sync {
    /// The algorithm name recorded in the entry's `attribution` field: `coarse`,
    /// `lm-self-eval:<judge model id>`, `attn-attr:<model id>`.
    fn name(&self) -> String;

    /// One weight in [0, 1] per parent, in the same order.
    fn attribute(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Vec<Weight>, AttributionError>;

    /// Like [`Attributor::attribute`], and says whether the algorithm fell back to coarse
    /// weights (and why). The default implementation never falls back.
    fn attribute_detailed(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Attribution, AttributionError> {
        self.attribute(child, parents).map(Attribution::answered)
    }
}

/// Forwards [`Attributor`] through a pointer type, so that `&A`, `Box<A>` and `Arc<A>` can be
/// passed wherever an attributor is expected.
macro_rules! forward_attributor {
    ($($ptr:ty),+) => {$(
        impl<A: Attributor + ?Sized> Attributor for $ptr {
            fn name(&self) -> String {
                (**self).name()
            }
            fn attribute(
                &self,
                child: &str,
                parents: &[ParentText<'_>],
            ) -> Result<Vec<Weight>, AttributionError> {
                (**self).attribute(child, parents)
            }
            fn attribute_detailed(
                &self,
                child: &str,
                parents: &[ParentText<'_>],
            ) -> Result<Attribution, AttributionError> {
                (**self).attribute_detailed(child, parents)
            }
        }
    )+};
}

forward_attributor!(&A, Box<A>, std::sync::Arc<A>);

/// Any error from an attributor or a judge backend.
///
/// [`LmSelfEval`] never returns these for a bad or missing judge reply: it falls back to coarse
/// weights and reports the reason in [`Attribution::fell_back`]. They reach callers from the
/// backends themselves and from algorithms that cannot fall back meaningfully (AttnAttr on an
/// input the model refuses).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AttributionError {
    /// The judge backend failed (transport, HTTP status, malformed response envelope).
    #[error("judge backend {backend}: {message}")]
    Backend {
        /// Which backend.
        backend: String,
        /// What failed.
        message: String,
    },
    /// Replay mode, and the store has no reply for this request.
    #[error(
        "no recorded judge reply for key {key} in {path} (replay mode never calls the model; \
         re-record with the model to add it)"
    )]
    ReplayMiss {
        /// The request key (hex SHA-256).
        key: String,
        /// The replay file.
        path: String,
    },
    /// A replay file is malformed.
    #[error("replay file {path}, line {line}: {message}")]
    ReplayFormat {
        /// The replay file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A configuration the caller can fix (missing API key variable, bad URL …).
    #[error("attribution configuration: {0}")]
    Config(String),
    /// The local model failed or refused the input.
    #[error("local model: {0}")]
    Model(String),
    /// The input cannot be attributed (e.g. more parents than the algorithm takes).
    #[error("{0}")]
    Invalid(String),
    /// The algorithm or judge was asked for, but this build does not include it.
    #[error("{what} is not in this build: it needs the `{feature}` feature of memlineage")]
    Unavailable {
        /// What was asked for.
        what: String,
        /// The cargo feature that adds it (`models` or `openai`).
        feature: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributors_are_object_safe_and_shareable() {
        fn assert_send_sync<T: Send + Sync + ?Sized>() {}
        assert_send_sync::<dyn Attributor>();
        assert_send_sync::<AttributionError>();
        let boxed: Box<dyn Attributor> = Box::new(Coarse);
        assert_eq!(boxed.name(), "coarse");
    }

    #[test]
    fn fallback_is_coarse() {
        let a = Attribution::fallback(3, "why");
        assert_eq!(a.weights, vec![Weight::ONE; 3]);
        assert!(a.fell_back());
        assert_eq!(a.fell_back.map(|f| f.reason), Some("why".to_string()));
    }
}
