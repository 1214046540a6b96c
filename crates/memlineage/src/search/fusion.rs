//! Reciprocal rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009, "Reciprocal rank fusion
//! outperforms Condorcet and individual rank learning methods"): a document's fused score is
//! `Σ 1 / (K + rank)` over the rankings that hold it (ranks from 1), with `K = 60` as in the
//! paper. It needs no score calibration between BM25 and cosine similarity, which live on
//! unrelated scales.

/// The paper's constant.
pub const RRF_K: u32 = 60;

/// How many results of each ranking a hybrid search fuses: enough that an entry ranked well by
/// one mode and moderately by the other is found, few enough that the lexical top-k still stops
/// early.
pub const HYBRID_DEPTH: usize = 50;

/// Fuses `rankings` (each best first, without repeats) into one, best first: higher fused
/// score, then the better best rank, then the lower document. At most `limit` results.
pub fn reciprocal_rank_fusion(rankings: &[Vec<u64>], limit: usize) -> Vec<u64> {
    // (doc, fused score, best rank)
    let mut fused: Vec<(u64, f64, usize)> = Vec::new();
    let mut at: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    for ranking in rankings {
        for (r, doc) in ranking.iter().enumerate() {
            let add = 1.0 / f64::from(RRF_K + u32::try_from(r + 1).unwrap_or(u32::MAX - RRF_K));
            match at.get(doc) {
                Some(i) => {
                    fused[*i].1 += add;
                    fused[*i].2 = fused[*i].2.min(r);
                }
                None => {
                    at.insert(*doc, fused.len());
                    fused.push((*doc, add, r));
                }
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)).then(a.0.cmp(&b.0)));
    fused.truncate(limit);
    fused.into_iter().map(|(d, _, _)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_wins_over_one_first_place() {
        // 7 is second in both rankings; 1 and 9 are first in one only.
        let fused = reciprocal_rank_fusion(&[vec![1, 7, 3], vec![9, 7, 4]], 10);
        assert_eq!(fused[0], 7);
        // 1 and 9 tie on score and best rank: the lower document first.
        assert_eq!(&fused[1..3], &[1, 9]);
        assert_eq!(fused.len(), 5);
        assert_eq!(
            reciprocal_rank_fusion(&[vec![1, 7, 3], vec![9, 7, 4]], 2),
            [7, 1]
        );
    }

    #[test]
    fn one_ranking_is_kept_as_it_is() {
        assert_eq!(reciprocal_rank_fusion(&[vec![5, 2, 8]], 10), [5, 2, 8]);
        assert!(reciprocal_rank_fusion(&[vec![], vec![]], 10).is_empty());
    }
}
