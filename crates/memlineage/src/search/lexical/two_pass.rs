//! The windowed top-k in two passes ([`LexicalIndex::two_pass_top_k`]), for a query whose
//! terms' regions all cover the candidate range ([`two_pass_fits`]): first the documents that
//! hold two or more query terms, then each term's window alone, block by block.
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
//! against the few documents found. These passes read the blocks in place, the documents
//! alone ([`Block::for_each_doc`]; a frequency and length only for a document found). The top k they fill gives a cut under which whole blocks
//! of a window are passed on their bound alone (Ding & Suel 2011, block-max indexes), and the
//! rest of each window is a straight walk over its decoded blocks where a document costs a
//! load and a comparison.
//! Every step is a load, a bit operation or a branch that is almost always taken the same way:
//! at 10^6 the top-8 of a two-word query takes ≈ 7 µs instead of ≈ 28 µs
//! (docs/performance.md, "Two passes instead of a merge").
//!
//! **When the merge ranks instead.** The first pass scores every document of several terms
//! without a bound, which pays only while such documents are few. Terms that meet often —
//! frequent words, words that go together — are handed to the merge, whose bounds skip most of
//! them: before the pass when terms spread independently over the range would already meet
//! too often ([`two_pass_fits`]), and during it when they turn out to ([`SEVERAL_PER_POSTINGS`];
//! the merge then decodes the regions). Measured at 10^6 on queries of the 2, 4, 8 and 16 most
//! frequent words, the two-pass loop alone took 3–7× the merge's time; with the hand-over,
//! the same as the merge.
//!
//! **Same answer.** The candidates are the same (a document in some term's window), split in
//! two disjoint sets: those that two or more terms hold (every term's postings over the
//! candidate range are read, so the bitmap knows them all) and those that one term holds
//! (its score is that term's alone). Scores are summed in query order as the merge sums them,
//! and the top k keeps the higher score, then the lower document, whatever order documents
//! arrive in. The property tests compare both loops with a full ranking of the candidates.

use super::block::{Block, Posting};
use super::bm25::Collection;
use super::index::{LexicalIndex, PostingList};
use super::topk::{Hit, Norms, TopKStats, Weakest, slack};
use super::window::{Term, floor_at};
use std::cell::RefCell;
use std::collections::BinaryHeap;

/// The most bitmap words per posting of the terms' regions (plus [`SPARSE_WORDS`]) for which
/// the two-pass loop runs: past it the candidate range is mostly empty (a rare term's window
/// reaching far back) and clearing the bitmap would cost more than the merge.
const WORDS_PER_POSTING: u64 = 8;
/// See [`WORDS_PER_POSTING`].
const SPARSE_WORDS: u64 = 1024;

/// Documents of several terms beyond one per this many of the terms' postings (and beyond
/// [`SEVERAL_AT_LEAST`]) hand the query to the merge: on text where query terms occur together
/// (frequent words) the first pass would score most candidates without a bound, where the
/// merge's bounds skip them (measured at 10^6 on queries of the 2 to 16 most frequent words:
/// the two-pass loop alone 3–7× slower than the merge there, ≈ 4× faster on the scale run's
/// queries, whose terms meet in ≈ 1 % of the candidates).
const SEVERAL_PER_POSTINGS: u64 = 16;
/// See [`SEVERAL_PER_POSTINGS`].
const SEVERAL_AT_LEAST: usize = 64;

/// The most documents of several terms the first pass takes for terms of `postings` postings
/// in their regions ([`SEVERAL_PER_POSTINGS`]).
fn several_limit(postings: u64) -> usize {
    usize::try_from(postings / SEVERAL_PER_POSTINGS)
        .unwrap_or(usize::MAX)
        .max(SEVERAL_AT_LEAST)
}

/// The largest bitmap a thread keeps between queries (512 KiB); a larger one (a long query of
/// frequent terms) is allocated for its query alone.
const KEPT_WORDS: usize = 1 << 16;

thread_local! {
    /// The bitmap over the candidate range, kept between queries of a thread so that a query
    /// clears it instead of asking the allocator for fresh pages.
    static BITS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// The words of the bitmap over the candidate range from `lowest` when the two-pass loop can
/// rank these terms: every term's region (its blocks from `from`) starts at or below `lowest`
/// — so the region holds every posting of the term in a candidate — and the range is dense
/// enough. `None`: the merge ranks.
pub(super) fn two_pass_fits(
    lists: &[&PostingList],
    from: &[usize],
    lowest: u64,
    always: bool,
) -> Option<usize> {
    let mut end: Option<u64> = None;
    let mut postings = 0u64;
    // Σ p_i² of the terms' region postings, for the expected co-occurrences below.
    let mut squares = 0f64;
    for (l, &f) in lists.iter().zip(from) {
        if floor_at(&l.blocks, f) > lowest {
            return None;
        }
        let region = l.blocks.get(f..).unwrap_or(&[]);
        let held = region.iter().map(|b| u64::from(b.count)).sum::<u64>();
        postings += held;
        squares += (held as f64) * (held as f64);
        if let Some(b) = region.last() {
            end = Some(end.map_or(b.last, |e| e.max(b.last)));
        }
    }
    let span = end?.checked_sub(lowest)?;
    let words = (span >> 6) + 1;
    if words > WORDS_PER_POSTING.saturating_mul(postings) + SPARSE_WORDS {
        return None;
    }
    // Terms spread independently over the range would meet in Σ_{i<j} p_i p_j / range
    // documents; when that is already more than the first pass takes, the merge ranks
    // without the pass being tried (frequent words; terms that occur together meet more).
    let total = postings as f64;
    let expected = (total * total - squares) / 2.0 / (span as f64 + 1.0);
    if !always && expected > several_limit(postings) as f64 {
        return None;
    }
    usize::try_from(words).ok()
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

/// The blocks of `region` that hold documents at or after `lowest`.
fn from_lowest(region: &[Block], lowest: u64) -> &[Block] {
    let at = region.partition_point(|b| b.last < lowest);
    region.get(at..).unwrap_or(&[])
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

    fn full(&self) -> bool {
        self.heap.len() == self.k
    }

    /// Whether `hit` would enter: the top k is not full, or it beats the weakest.
    #[inline]
    fn would_enter(&self, hit: Hit) -> bool {
        self.heap.len() < self.k || self.heap.peek().is_some_and(|w| Weakest(hit) < *w)
    }

    /// Takes `hit` when it would enter and its document is live (a forgotten entry is never
    /// returned) and accepted by the caller's filter — asked only then, as the merge asks.
    fn offer(&mut self, hit: Hit, admit: impl FnOnce(u64) -> bool) {
        if self.would_enter(hit) && admit(hit.doc) {
            self.push(hit);
        }
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
    /// The windowed top-k in two passes (see the module docs) over terms whose regions reach
    /// `lowest` (read in place, not decoded), with a bitmap of `words` words
    /// ([`two_pass_fits`]); `None` when documents of several terms turn out to be common (more
    /// than one in [`SEVERAL_PER_POSTINGS`] of the terms' postings: terms that occur together,
    /// as frequent words do), which the merge ranks faster — its bounds skip most of them.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn two_pass_top_k(
        &self,
        ts: &mut [Term<'_>],
        col: &Collection,
        lowest: u64,
        words: usize,
        always: bool,
        k: usize,
        accept: &mut impl FnMut(u64) -> bool,
        stats: &mut TopKStats,
    ) -> Option<Vec<Hit>> {
        // The thread's bitmap is taken for the query and put back after it (one too large to
        // keep is the query's alone), so a caller's `accept` that searches again on this
        // thread finds none and makes its own.
        let kept = (words <= KEPT_WORDS)
            .then(|| {
                BITS.with(|cell| {
                    cell.try_borrow_mut()
                        .ok()
                        .map(|mut b| std::mem::take(&mut *b))
                })
            })
            .flatten();
        let mut bits = kept.unwrap_or_default();
        if bits.len() < words {
            bits.resize(words, 0);
        }
        let hits = self.two_pass_in(
            ts,
            col,
            lowest,
            always,
            k,
            accept,
            stats,
            bits.get_mut(..words).unwrap_or(&mut []),
        );
        if words <= KEPT_WORDS {
            // Back for the next query (in place of a nested search's, if any).
            BITS.with(|cell| {
                if let Ok(mut b) = cell.try_borrow_mut() {
                    *b = bits;
                }
            });
        }
        stats.two_pass = hits.is_some();
        hits
    }

    #[allow(clippy::too_many_arguments)]
    fn two_pass_in(
        &self,
        ts: &mut [Term<'_>],
        col: &Collection,
        lowest: u64,
        always: bool,
        k: usize,
        accept: &mut impl FnMut(u64) -> bool,
        stats: &mut TopKStats,
        bits: &mut [u64],
    ) -> Option<Vec<Hit>> {
        // Each term's blocks that hold candidates' postings.
        let regions: Vec<&[Block]> = ts
            .iter()
            .map(|t| from_lowest(t.region_blocks, lowest))
            .collect();
        // 1. The documents of two or more terms: the terms from the fewest postings to the
        // most, each marking its documents in the bitmap and finding those already marked by
        // an earlier one; the last only looks (and keeps its part of what it finds). A query
        // of one term has none: its window is all there is.
        let held: Vec<u64> = regions
            .iter()
            .map(|r| r.iter().map(|b| u64::from(b.count)).sum())
            .collect();
        let postings: u64 = held.iter().sum();
        let mut order: Vec<usize> = if ts.len() > 1 {
            (0..ts.len()).collect()
        } else {
            Vec::new()
        };
        order.sort_by_key(|&i| held.get(i).copied().unwrap_or(0));
        let mut multi: Vec<u64> = Vec::new();
        let mut parts: Vec<Part> = Vec::new();
        let too_many = if always {
            usize::MAX
        } else {
            several_limit(postings)
        };
        if let Some((&last, marking)) = order.split_last() {
            bits.fill(0);
            // A document below `lowest` wraps to a word far past the bitmap: no word.
            let slot = |doc: u64| {
                let off = doc.wrapping_sub(lowest);
                (
                    usize::try_from(off >> 6).unwrap_or(usize::MAX),
                    1u64 << (off & 63),
                )
            };
            for &i in marking {
                for b in regions[i] {
                    b.for_each_doc(|doc, _| {
                        let (w, bit) = slot(doc);
                        if let Some(x) = bits.get_mut(w) {
                            if *x & bit != 0 {
                                multi.push(doc);
                            }
                            *x |= bit;
                        }
                    });
                    if multi.len() > too_many {
                        return None;
                    }
                }
            }
            for b in regions[last] {
                b.for_each_doc(|doc, j| {
                    let (w, bit) = slot(doc);
                    if bits.get(w).is_some_and(|x| x & bit != 0) {
                        multi.push(doc);
                        let (tf, len) = b.tf_len_at(j);
                        parts.push(Part {
                            doc,
                            term: last,
                            tf,
                            len,
                        });
                    }
                });
                if multi.len() > too_many {
                    return None;
                }
            }
            multi.sort_unstable();
            multi.dedup();
            // The other terms' parts of those documents.
            for &i in marking {
                let mut several = Ascending::new(&multi);
                for b in regions[i] {
                    b.for_each_doc(|doc, j| {
                        if several.holds(doc) {
                            let (tf, len) = b.tf_len_at(j);
                            parts.push(Part {
                                doc,
                                term: i,
                                tf,
                                len,
                            });
                        }
                    });
                }
            }
        }
        let mut norms = Norms::new();
        let mut best = Best::new(k);
        if !parts.is_empty() {
            self.score_multi(ts, col, parts, &mut norms, &mut best, accept, stats);
        }
        // 2. Each window alone: a document that only this term holds scores this term's score.
        // A block that may hold an entering document is decoded whole (most of its postings
        // are then scored).
        let mut block: Vec<Posting> = Vec::with_capacity(128);
        for t in ts.iter_mut() {
            let mut several = Ascending::new(&multi);
            let window: &[Block] = t.window_blocks;
            for b in window {
                if best.full() && col.bound(t.idf, b.max_tf, b.min_len) < best.cut {
                    continue;
                }
                block.clear();
                b.decode_extend(&mut block);
                for &Posting { doc, tf, len } in &block {
                    if several.holds(doc) {
                        continue;
                    }
                    let score = t.score(col, &mut norms, tf, len);
                    stats.docs_scored += 1;
                    best.offer(Hit { doc, score }, |d| self.doc(d).is_some() && accept(d));
                }
            }
        }
        // What was read (in place), as the merge counts what it decodes.
        stats.blocks_decoded += regions.iter().map(|r| r.len() as u64).sum::<u64>();
        stats.postings_decoded += postings;
        let mut hits: Vec<Hit> = best.heap.into_iter().map(|w| w.0).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        Some(hits)
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
            best.offer(Hit { doc, score }, |d| self.doc(d).is_some() && accept(d));
        }
    }
}
