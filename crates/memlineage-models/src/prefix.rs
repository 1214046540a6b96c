//! A token sequence run through the model once, then continued several ways.
//!
//! [`LocalModel::prefix`] runs a prompt and keeps its key/value cache and the logits of the
//! next token. [`Prefix::extend`] forks that state and appends tokens, so scoring `n`
//! continuations of one long prompt costs one pass over the prompt plus `n` short passes
//! (the cache's tensors are shared, never copied). This is what the scored local judge needs:
//! the probability the model gives each possible answer, read instead of sampled
//! (`docs/models.md`, "Scored answers").

use crate::llama::{ForwardRequest, KvCache};
use crate::{LocalModel, ModelError};

/// A sequence the model has read: its cache and the logits of the token that would follow.
pub struct Prefix<'m> {
    model: &'m LocalModel,
    cache: KvCache,
    logits: Vec<f32>,
}

impl std::fmt::Debug for Prefix<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prefix")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Runs `tokens` (non-empty) and returns the state after them.
    pub fn prefix(&self, tokens: &[u32]) -> Result<Prefix<'_>, ModelError> {
        let mut cache = KvCache::default();
        let logits = self.step(tokens, &mut cache)?;
        Ok(Prefix {
            model: self,
            cache,
            logits,
        })
    }

    fn step(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, ModelError> {
        let out = self.llama.forward(
            tokens,
            cache,
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
}

impl<'m> Prefix<'m> {
    /// A new state: this one followed by `tokens` (this one is unchanged). Empty `tokens`
    /// gives a copy.
    pub fn extend(&self, tokens: &[u32]) -> Result<Prefix<'m>, ModelError> {
        let mut cache = self.cache.clone();
        let logits = if tokens.is_empty() {
            self.logits.clone()
        } else {
            self.model.step(tokens, &mut cache)?
        };
        Ok(Prefix {
            model: self.model,
            cache,
            logits,
        })
    }

    /// Number of tokens read so far.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether nothing was read (never true for a state built by [`LocalModel::prefix`]).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The logits of the next token (one per vocabulary entry).
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// The probability of each of `ids` as the next token (softmax over the whole
    /// vocabulary, computed in `f64`). An id outside the vocabulary is an error.
    pub fn probabilities(&self, ids: &[u32]) -> Result<Vec<f64>, ModelError> {
        let max = self
            .logits
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        if !max.is_finite() {
            return Err(ModelError::Compute {
                message: "the next-token logits are not finite".into(),
            });
        }
        let max = f64::from(max);
        let z: f64 = self
            .logits
            .iter()
            .map(|&l| (f64::from(l) - max).exp())
            .sum();
        ids.iter()
            .map(|&id| {
                let l = self
                    .logits
                    .get(id as usize)
                    .ok_or_else(|| ModelError::InvalidInput {
                        reason: format!(
                            "token id {id} is outside the vocabulary of {}",
                            self.logits.len()
                        ),
                    })?;
                Ok((f64::from(*l) - max).exp() / z)
            })
            .collect()
    }
}
