//! Recall@k and mean reciprocal rank from the rank of each query's fact.
//!
//! A query's *rank* is the 1-based position of its (best-placed) answer in the mode's ranking, or `None` when
//! the fact is not among the first [`crate::DEPTH`] results. Recall@8 is the share of queries
//! with rank ≤ 8; MRR is the mean of `1 / rank` (0 when absent). Both are printed rounded to
//! three decimals, so that a float differing in the last bits on another machine moves a
//! metric only if it moves a rank.

use serde::Serialize;

/// Recall@8 and MRR of one mode over some queries.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Metrics {
    /// Queries measured.
    pub queries: usize,
    /// Share of queries whose fact is in the first 8.
    pub recall_at_8: f64,
    /// Mean reciprocal rank.
    pub mrr: f64,
}

/// Rounds to three decimals (what the report prints and stores).
pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The metrics of a list of ranks.
pub fn metrics(ranks: &[Option<usize>]) -> Metrics {
    let n = ranks.len().max(1) as f64;
    let hits = ranks.iter().filter(|r| r.is_some_and(|r| r <= 8)).count() as f64;
    let rr: f64 = ranks
        .iter()
        .map(|r| r.map_or(0.0, |r| 1.0 / r as f64))
        .sum();
    Metrics {
        queries: ranks.len(),
        recall_at_8: round3(hits / n),
        mrr: round3(rr / n),
    }
}

/// The best rank (1-based) of any of `answers` in `ranking`, if one is present.
pub fn rank_of(ranking: &[usize], answers: &[usize]) -> Option<usize> {
    ranking
        .iter()
        .position(|f| answers.contains(f))
        .map(|p| p + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recall_and_mrr() {
        let m = metrics(&[Some(1), Some(2), Some(9), None]);
        assert_eq!(m.queries, 4);
        assert_eq!(m.recall_at_8, 0.5);
        // (1 + 1/2 + 1/9 + 0) / 4 = 0.40277…
        assert_eq!(m.mrr, 0.403);
        assert_eq!(rank_of(&[5, 3, 9], &[9]), Some(3));
        assert_eq!(rank_of(&[5, 3, 9], &[9, 3]), Some(2));
        assert_eq!(rank_of(&[5, 3, 9], &[4]), None);
    }
}
