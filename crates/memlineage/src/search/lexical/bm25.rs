//! Okapi BM25 with the parameters of SQLite FTS5's `bm25()` (`k1 = 1.2`, `b = 0.75`,
//! `idf = ln((N − n + 0.5) / (n + 0.5))` floored at `1e-6`; FTS5 documentation, "The bm25()
//! function"), and the score bound of a posting block.

/// Term-frequency saturation (FTS5's default).
pub const K1: f64 = 1.2;
/// Length normalisation (FTS5's default).
pub const B: f64 = 0.75;

/// The statistics a score depends on: live documents and their mean length in terms.
#[derive(Clone, Copy, Debug)]
pub struct Collection {
    /// Live documents.
    pub docs: f64,
    /// Mean length of a live document, in terms (never zero).
    pub avg_len: f64,
}

impl Collection {
    /// The statistics of `docs` live documents of `total_len` terms in all.
    pub fn new(docs: u64, total_len: u64) -> Collection {
        let n = docs as f64;
        Collection {
            docs: n,
            avg_len: (total_len as f64 / n.max(1.0)).max(f64::MIN_POSITIVE),
        }
    }

    /// The inverse document frequency of a term in `df` live documents.
    pub fn idf(&self, df: u64) -> f64 {
        let n = df as f64;
        let idf = ((self.docs - n + 0.5) / (n + 0.5)).ln();
        if idf > 0.0 { idf } else { 1e-6 }
    }

    /// The score of one term occurring `tf` times in a document of `len` terms.
    pub fn term_score(&self, idf: f64, tf: u32, len: u32) -> f64 {
        self.term_score_normed(idf, tf, self.length_norm(len))
    }

    /// The part of [`Collection::term_score`]'s denominator that depends on the document
    /// alone (`K1 · (1 − B + B · len / avg_len)`): a top-k computes it once per document and
    /// length, not once per term.
    pub fn length_norm(&self, len: u32) -> f64 {
        K1 * (1.0 - B + B * f64::from(len) / self.avg_len)
    }

    /// [`Collection::term_score`] from the document's [`Collection::length_norm`]: the same
    /// floating-point operations in the same order, so the same bits.
    pub fn term_score_normed(&self, idf: f64, tf: u32, norm: f64) -> f64 {
        let tf = f64::from(tf);
        idf * tf * (K1 + 1.0) / (tf + norm)
    }

    /// An upper bound of [`Collection::term_score`] over documents with `tf ≤ max_tf` and
    /// `len ≥ min_len`: the score grows with `tf` and falls with `len`, whatever the mean
    /// length, so a block that records its largest `tf` and smallest length keeps a valid
    /// bound as the collection changes.
    pub fn bound(&self, idf: f64, max_tf: u32, min_len: u32) -> f64 {
        self.term_score(idf, max_tf, min_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts5_parameters() {
        let c = Collection::new(5, 21);
        // idf = ln(3.5 / 2.5) for a term in 2 of 5 documents.
        assert!((c.idf(2) - (3.5f64 / 2.5).ln()).abs() < 1e-12);
        // A term in every document is floored, not negative.
        assert_eq!(c.idf(5), 1e-6);
        // Three occurrences in five terms beat one in one term (avgdl 4.2).
        assert!(c.term_score(1.0, 3, 5) > c.term_score(1.0, 1, 1));
    }

    proptest::proptest! {
        #[test]
        fn split_score_is_the_same_bits(
            docs in 1u64..10_000, total in 1u64..1_000_000, df in 1u64..10_000,
            tf in 1u32..50, len in 0u32..5000,
        ) {
            let c = Collection::new(docs, total);
            let idf = c.idf(df.min(docs));
            let whole = {
                // The formula written out in one expression, as FTS5 documents it.
                let t = f64::from(tf);
                idf * t * (K1 + 1.0) / (t + K1 * (1.0 - B + B * f64::from(len) / c.avg_len))
            };
            proptest::prop_assert_eq!(c.term_score(idf, tf, len).to_bits(), whole.to_bits());
        }

        #[test]
        fn bound_is_an_upper_bound(
            docs in 1u64..10_000, total in 1u64..1_000_000, df in 1u64..10_000,
            tf in 1u32..50, extra_tf in 0u32..50, len in 1u32..500, less in 0u32..500,
        ) {
            let c = Collection::new(docs, total);
            let idf = c.idf(df.min(docs));
            let (max_tf, min_len) = (tf + extra_tf, len.saturating_sub(less).max(1));
            proptest::prop_assert!(c.bound(idf, max_tf, min_len) >= c.term_score(idf, tf, len));
        }
    }
}
