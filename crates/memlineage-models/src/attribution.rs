//! AttnAttr: turning attention probabilities into one weight per parent.
//!
//! See [`crate::LocalModel::attention_attribution`] for the sequence layout and
//! `docs/models.md` for the reasoning behind the defaults. This module holds the arithmetic,
//! which is independent of the model and unit-tested on hand-made attention matrices.

use std::ops::Range;

/// Which attention to read and how much text to feed.
#[derive(Debug, Clone, PartialEq)]
pub struct AttnAttrConfig {
    /// Layers whose attention is aggregated (all heads of each, averaged).
    /// `None` = the default band for the loaded model, see [`default_layers`].
    pub layers: Option<Vec<usize>>,
    /// Each parent is truncated to its first `parent_token_budget` tokens.
    pub parent_token_budget: usize,
    /// Total token budget over all parents; with many parents each one gets
    /// `min(parent_token_budget, total_parent_budget / n_parents)` tokens.
    pub total_parent_budget: usize,
    /// The child is truncated to its first `child_token_budget` tokens.
    pub child_token_budget: usize,
    /// At most this many parents per call.
    pub max_parents: usize,
}

impl Default for AttnAttrConfig {
    fn default() -> Self {
        Self {
            layers: None,
            parent_token_budget: 128,
            total_parent_budget: 512,
            child_token_budget: 96,
            max_parents: 16,
        }
    }
}

impl AttnAttrConfig {
    /// The token budget of each parent when there are `n_parents` of them.
    pub fn per_parent_budget(&self, n_parents: usize) -> usize {
        let share = self.total_parent_budget / n_parents.max(1);
        self.parent_token_budget.min(share).max(1)
    }
}

/// The default layers for a model of `n_layer` blocks: the upper-middle band
/// `2·n_layer/5 .. 5·n_layer/6` — layers 12..=24 of SmolLM2's 30.
///
/// Measured on a small labelled set (`layer_bands` in `tests/model/attribution.rs`, table in
/// `docs/models.md`): attention in the first half of the network is dominated by position
/// (the nearest parent, the previous tokens, the sink) and points at the *wrong* parent in most
/// single-source cases; from about 40 % depth on, the heads that look back at the earlier
/// occurrence of what is being written (retrieval / induction heads) carry the content signal
/// and every single-source case ranks its source first; the last few layers add little
/// (they serve next-token prediction) and skipping them saves a sixth of the compute, since
/// the forward pass stops after the last layer read.
pub fn default_layers(n_layer: usize) -> Vec<usize> {
    let lo = 2 * n_layer / 5;
    let hi = (5 * n_layer / 6).max(lo + 1).min(n_layer);
    (lo..hi).collect()
}

/// Aggregates attention into one weight per parent.
///
/// `rows[t][j]` is the attention (already averaged over the chosen layers and heads) from the
/// `t`-th child token to sequence position `j`; `spans[p]` the positions of parent `p`'s tokens.
///
/// For each child token, the mass on each parent span is divided by the mass on all parent
/// spans (so attention to the sink token, the template, the headers and the child itself does
/// not count, and the shares of one token sum to 1); child tokens that put (almost) no mass on
/// any parent are skipped. The shares are averaged over child tokens, then divided by the
/// largest average, so the most-attended parent gets 1.0 and every other parent its attention
/// relative to that one. Returns all zeros when no child token attends to any parent.
pub fn aggregate(rows: &[Vec<f32>], spans: &[Range<usize>]) -> Vec<f64> {
    let mut sums = vec![0f64; spans.len()];
    let mut counted = 0usize;
    for row in rows {
        let masses: Vec<f64> = spans
            .iter()
            .map(|s| {
                row.get(s.clone())
                    .map_or(0.0, |xs| xs.iter().map(|&x| f64::from(x)).sum())
            })
            .collect();
        let total: f64 = masses.iter().sum();
        if total.is_nan() || total <= 1e-9 {
            continue;
        }
        for (acc, m) in sums.iter_mut().zip(&masses) {
            *acc += m / total;
        }
        counted += 1;
    }
    if counted == 0 {
        return vec![0.0; spans.len()];
    }
    let means: Vec<f64> = sums.iter().map(|s| s / counted as f64).collect();
    let max = means.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return vec![0.0; spans.len()];
    }
    means.iter().map(|m| (m / max).clamp(0.0, 1.0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_band_is_upper_middle() {
        assert_eq!(default_layers(30), (12..25).collect::<Vec<_>>());
        assert_eq!(default_layers(4), vec![1, 2]);
        assert_eq!(default_layers(2), vec![0]);
        assert_eq!(default_layers(1), vec![0]);
    }

    #[test]
    fn per_parent_budget_shrinks_with_many_parents() {
        let c = AttnAttrConfig::default();
        assert_eq!(c.per_parent_budget(1), 128);
        assert_eq!(c.per_parent_budget(4), 128);
        assert_eq!(c.per_parent_budget(8), 64);
        assert_eq!(c.per_parent_budget(16), 32);
    }

    #[test]
    fn most_attended_parent_gets_one() {
        // positions: 0 sink, 1..3 parent A, 3..5 parent B, 5.. child
        let spans = [1..3, 3..5];
        let rows = vec![
            vec![0.5, 0.2, 0.2, 0.05, 0.05, 0.0],
            vec![0.6, 0.1, 0.1, 0.05, 0.05, 0.1],
        ];
        let w = aggregate(&rows, &spans);
        assert_eq!(w[0], 1.0);
        // token 1: A 0.8, B 0.2; token 2: A 2/3, B 1/3 → means 0.7333, 0.2667
        assert!((w[1] - 0.2667 / 0.7333).abs() < 1e-3, "{w:?}");
    }

    #[test]
    fn sink_and_self_attention_do_not_count() {
        let spans = [1..2, 2..3];
        // Token attends 0.9 to the sink: only the 0.1 split between parents matters.
        let rows = vec![vec![0.9, 0.05, 0.05]];
        assert_eq!(aggregate(&rows, &spans), vec![1.0, 1.0]);
    }

    #[test]
    fn no_parent_attention_gives_zeros() {
        let spans: Vec<Range<usize>> = vec![Range { start: 1, end: 2 }];
        assert_eq!(aggregate(&[vec![1.0, 0.0]], &spans), vec![0.0]);
        assert_eq!(aggregate(&[], &spans), vec![0.0]);
    }
}
