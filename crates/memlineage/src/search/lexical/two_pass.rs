//! The windowed top-k in two passes ([`LexicalIndex::two_pass_top_k`]), for a query whose
//! terms are all decoded over the whole candidate range: first the documents that hold two
//! or more query terms, then each term's window alone, block by block.
//!
//! **Why.** The merge of [`super::window`] walks the terms' postings together in document
//! order, and on text whose terms are spread evenly almost every step is a branch the
//! processor cannot predict (which term holds the next document, whether another term holds
//! it): ≈ 19 ns per candidate, ≈ 1,250 candidates per two-word query at 10^6 entries (issue
//! 17). But the documents that can enter the top k once it holds a few good ones are mostly
//! those that hold several query terms, and on such text they are few (≈ 1 % of a window).
//! So they are found first without a merge — the terms, from the fewest postings to the most,
//! mark their documents over the candidate range in a bitmap, and a posting whose bit is
//! already set is a document of two terms (the last term only looks) — and scored exactly:
//! the last term's parts were read as it looked, the others' by one walk over their postings
//! against the few documents found. The top k they fill gives a cut under which whole blocks
//! of a window are passed on their bound alone (Ding & Suel 2011, block-max indexes), and the
//! rest of each window is a straight walk where a document costs a load and a comparison.
//! Every step is a load, a bit operation or a branch that is almost always taken the same way:
//! at 10^6 the top-8 of a two-word query takes ≈ 8.5 µs instead of ≈ 28 µs
//! (docs/performance.md, "Two passes instead of a merge").
//!
//! **Same answer.** The candidates are the same (a document in some term's window), split in
//! two disjoint sets: those that two or more terms hold (every term's postings over the
//! candidate range are decoded, so the bitmap knows them all) and those that one term holds
//! (its score is that term's alone). Scores are summed in query order as the merge sums them,
//! and the top k keeps the higher score, then the lower document, whatever order documents
//! arrive in. The property tests compare both loops with a full ranking of the candidates.

use super::block::Posting;
use super::bm25::Collection;
use super::index::LexicalIndex;
use super::topk::{Hit, Norms, TopKStats, Weakest, slack};
use super::window::Term;
use std::cell::RefCell;
use std::collections::BinaryHeap;

/// The most bitmap words per decoded posting (plus [`SPARSE_WORDS`]) for which the two-pass
/// loop runs: past it the candidate range is mostly empty (a rare term's window reaching far
/// back) and clearing the bitmap would cost more than the merge.
const WORDS_PER_POSTING: u64 = 8;
/// See [`WORDS_PER_POSTING`].
const SPARSE_WORDS: u64 = 1024;

/// The largest bitmap a thread keeps between queries (512 KiB); a larger one (a long query of
/// frequent terms) is allocated for its query alone.
const KEPT_WORDS: usize = 1 << 16;

thread_local! {
    /// The bitmap over the candidate range, kept between queries of a thread so that a query
    /// clears it instead of asking the allocator for fresh pages.
    static BITS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Marks the documents of `postings` (at or after `lowest`) in `bits`, a bitmap that starts
/// at `lowest`, and adds to `multi` those already marked (by another term).
fn mark_seen(postings: &[Posting], bits: &mut [u64], lowest: u64, multi: &mut Vec<u64>) {
    for p in postings {
        let off = p.doc.wrapping_sub(lowest);
        let b = 1u64 << (off & 63);
        // The word fits a usize: the caller sized the bitmap from the same documents.
        if let Some(x) = bits.get_mut((off >> 6) as usize) {
            if *x & b != 0 {
                multi.push(p.doc);
            }
            *x |= b;
        }
    }
}

/// A term's posting in a document of several query terms.
struct Part {
    doc: u64,
    /// The term's place in the query.
    term: usize,
    tf: u32,
    len: u32,
}

/// Membership in a sorted list of documents, asked in ascending order: a comparison with
/// the next one, which is almost always larger.
struct Ascending<'a> {
    docs: &'a [u64],
    at: usize,
}

impl<'a> Ascending<'a> {
    fn new(docs: &'a [u64]) -> Self {
        Ascending { docs, at: 0 }
    }

    #[inline]
    fn holds(&mut self, doc: u64) -> bool {
        while self.docs.get(self.at).is_some_and(|&d| d < doc) {
            self.at += 1;
        }
        self.docs.get(self.at) == Some(&doc)
    }
}

/// The best `k` so far: the higher score, then the lower document, in any arrival order.
struct Best {
    heap: BinaryHeap<Weakest>,
    k: usize,
    /// What a bound must reach for a document to possibly enter (the k-th score less the slack
    /// of a bound comparison); −∞ while the top k is not full.
    cut: f64,
}

impl Best {
    fn new(k: usize) -> Best {
        Best {
            heap: BinaryHeap::with_capacity(k.min(1024) + 1),
            k,
            cut: f64::NEG_INFINITY,
        }
    }

    /// Whether `hit` would enter: the top k is not full, or it beats the weakest.
    #[inline]
    fn would_enter(&self, hit: Hit) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|w| Weakest(hit) < *w)
    }

    fn push(&mut self, hit: Hit) {
        self.heap.push(Weakest(hit));
        if self.heap.len() > self.k {
            self.heap.pop();
        }
        if self.heap.len() == self.k
            && let Some(w) = self.heap.peek()
        {
            self.cut = w.0.score - slack(w.0.score);
        }
    }
}

impl LexicalIndex {
    /// The windowed top-k in two passes (see the module docs), or `None` when a term is not
    /// decoded over the whole candidate range from `lowest` (it is probed below its region:
    /// the merge handles that) or the range is too sparse for a bitmap.
    pub(super) fn two_pass_top_k(
        &self,
        ts: &mut [Term<'_>],
        col: &Collection,
        lowest: u64,
        k: usize,
        accept: &mut impl FnMut(u64) -> bool,
        stats: &mut TopKStats,
    ) -> Option<Vec<Hit>> {
        if ts.iter().any(|t| t.region_start > lowest) {
            return None;
        }
        // Each term's postings from the lowest candidate on.
        let from: Vec<usize> = ts
            .iter()
            .map(|t| t.postings.partition_point(|p| p.doc < lowest))
            .collect();
        let end = ts
            .iter()
            .filter_map(|t| t.postings.last())
            .map(|p| p.doc)
            .max()?;
        let decoded: u64 = ts
            .iter()
            .zip(&from)
            .map(|(t, f)| (t.postings.len() - f) as u64)
            .sum();
        let words = (end.checked_sub(lowest)? >> 6) + 1;
        if words > WORDS_PER_POSTING.saturating_mul(decoded) + SPARSE_WORDS {
            return None;
        }
        let words = usize::try_from(words).ok()?;
        stats.two_pass = true;
        if words > KEPT_WORDS {
            let mut bits = vec![0u64; words];
            return Some(self.two_pass_in(ts, &from, col, lowest, k, accept, stats, &mut bits));
        }
        BITS.with(|cell| {
            let mut bits = cell.borrow_mut();
            if bits.len() < words {
                bits.resize(words, 0);
            }
            let bits = &mut bits[..words];
            Some(self.two_pass_in(ts, &from, col, lowest, k, accept, stats, bits))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn two_pass_in(
        &self,
        ts: &mut [Term<'_>],
        from: &[usize],
        col: &Collection,
        lowest: u64,
        k: usize,
        accept: &mut impl FnMut(u64) -> bool,
        stats: &mut TopKStats,
        bits: &mut [u64],
    ) -> Vec<Hit> {
        // 1. The documents of two or more terms: the terms from the fewest postings to the
        // most, each marking its documents in the bitmap and finding those already marked by
        // an earlier one; the last only looks (and keeps its part of what it finds).
        // (A query of one term has none: its window is all there is.)
        let mut order: Vec<usize> = if ts.len() > 1 {
            (0..ts.len()).collect()
        } else {
            Vec::new()
        };
        order.sort_by_key(|&i| ts.get(i).map_or(0, |t| t.postings.len()));
        if !order.is_empty() {
            bits.fill(0);
        }
        let mut multi: Vec<u64> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        if let Some((&last, marking)) = order.split_last() {
            for &i in marking {
                mark_seen(
                    ts[i].postings.get(from[i]..).unwrap_or(&[]),
                    bits,
                    lowest,
                    &mut multi,
                );
            }
            for p in ts[last].postings.get(from[last]..).unwrap_or(&[]) {
                let off = p.doc.wrapping_sub(lowest);
                // The word fits a usize: the bitmap was sized from these documents.
                if bits
                    .get((off >> 6) as usize)
                    .is_some_and(|x| x & (1u64 << (off & 63)) != 0)
                {
                    multi.push(p.doc);
                    parts.push(Part {
                        doc: p.doc,
                        term: last,
                        tf: p.tf,
                        len: p.len,
                    });
                }
            }
            multi.sort_unstable();
            multi.dedup();
            // The other terms' parts of those documents.
            for &i in marking {
                let mut several = Ascending::new(&multi);
                for p in ts[i].postings.get(from[i]..).unwrap_or(&[]) {
                    if several.holds(p.doc) {
                        parts.push(Part {
                            doc: p.doc,
                            term: i,
                            tf: p.tf,
                            len: p.len,
                        });
                    }
                }
            }
        }
        let mut norms = Norms::new();
        let mut best = Best::new(k);
        if !parts.is_empty() {
            self.score_multi(ts, col, parts, &mut norms, &mut best, accept, stats);
        }
        // 2. Each window alone: a document that only this term holds scores this term's score.
        for t in ts.iter_mut() {
            // Taken out while the term keeps its scores; put back below.
            let postings = std::mem::take(&mut t.postings);
            let mut several = Ascending::new(&multi);
            let mut at = t.window_at;
            for b in t.window_blocks {
                let n = b.count as usize;
                let span = at..at + n;
                at += n;
                if best.heap.len() == k && col.bound(t.idf, b.max_tf, b.min_len) < best.cut {
                    continue;
                }
                let Some(ps) = postings.get(span) else {
                    break;
                };
                for &Posting { doc, tf, len } in ps {
                    if several.holds(doc) {
                        continue;
                    }
                    let score = t.score(col, &mut norms, tf, len);
                    stats.docs_scored += 1;
                    let hit = Hit { doc, score };
                    // Removed (a forgotten entry): never returned.
                    if best.would_enter(hit) && self.doc(doc).is_some() && accept(doc) {
                        best.push(hit);
                    }
                }
            }
            t.postings = postings;
        }
        let mut hits: Vec<Hit> = best.heap.into_iter().map(|w| w.0).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        hits
    }

    /// Scores the documents of two or more terms from their terms' `parts` (those that are
    /// candidates: in some term's window), summing in query order, and offers them to `best`.
    #[allow(clippy::too_many_arguments)]
    fn score_multi(
        &self,
        ts: &mut [Term<'_>],
        col: &Collection,
        mut parts: Vec<Part>,
        norms: &mut Norms,
        best: &mut Best,
        accept: &mut impl FnMut(u64) -> bool,
        stats: &mut TopKStats,
    ) {
        // By document, and within one in query order (the order scores add in).
        parts.sort_unstable_by_key(|p| (p.doc, p.term));
        for group in parts.chunk_by(|a, b| a.doc == b.doc) {
            let Some(doc) = group.first().map(|p| p.doc) else {
                continue;
            };
            if !group
                .iter()
                .any(|p| ts.get(p.term).is_some_and(|t| doc >= t.floor))
            {
                // Below every window of the terms that hold it: no candidate.
                continue;
            }
            let mut score = 0.0;
            for p in group {
                if let Some(t) = ts.get_mut(p.term) {
                    score += t.score(col, norms, p.tf, p.len);
                }
            }
            stats.docs_scored += 1;
            let hit = Hit { doc, score };
            if best.would_enter(hit) && self.doc(doc).is_some() && accept(doc) {
                best.push(hit);
            }
        }
    }
}
