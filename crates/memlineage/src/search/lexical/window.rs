//! The windowed top-k ([`LexicalIndex::top_k_within`]): one merge of the query terms'
//! windows, in document order, each candidate bounded before it costs anything.
//!
//! **Why not the MaxScore loop here.** Over a window the work is fixed by the window (about
//! `window` postings per term, plus the older postings of the other terms that a candidate
//! below their windows must be checked against); what differed was the cost per candidate.
//! The MaxScore loop of [`super::topk`] (kept for the exact, unwindowed top-k) seeks every
//! essential cursor, asks every list for a block bound and binary-searches decoded vectors
//! per candidate, and fully scored ≈ 1,200 of the ≈ 2,000 candidates of a two-word query at
//! 10^6 (issue 17). Here each term keeps a [`Reader`] in place on its current window block and
//! another on the block below its window that the last probe met; the next candidate is the
//! smallest head of the terms that still propose, and a candidate is dropped as soon as a
//! bound says it cannot enter the top k (Turtle & Flood 1995, MaxScore's test, applied per
//! candidate with the block bounds of Ding & Suel 2011):
//!
//! 1. from the bounds of the blocks the terms have there, without a division (a term whose
//!    window covers the candidate but has no posting of it is absent: zero; a term below its
//!    window whose blocks leave a gap at the candidate is absent too);
//! 2. from the exact scores of the terms read from the windows, plus the bounds of the others;
//! 3. after each probe of an older block.
//!
//! **MaxScore over the windows.** Once the top k is full, a term whose window's best block
//! bound, added to the other skipped terms' and to the list bounds of the terms whose windows
//! start later, stays under the k-th score stops proposing candidates ([`skip_proposers`]):
//! a document only it proposes cannot enter. Its reader then only seeks to the others'
//! candidates, over whole blocks without reading them. On the benchmark's two-word queries
//! the frequent term's window stops proposing once a few two-term documents are in the top
//! k, and only the rarer term's window is walked.
//!
//! A candidate that passes is scored exactly, term by term in query order, each term with its
//! own posting's length (the same bits as a full ranking), and enters as in the MaxScore loop:
//! strictly above the k-th score (documents ascend, so ties go to the lower document), live,
//! and accepted by the caller's filter.

use super::block::{Block, Reader};
use super::bm25::Collection;
use super::index::{LexicalIndex, PostingList};
use super::topk::{Hit, Norms, TopKStats, Weakest, slack};
use std::collections::BinaryHeap;

/// One query term: a reader over its window (the candidates it proposes) and one below it
/// (the probes of candidates older than its window).
struct Term<'a> {
    blocks: &'a [Block],
    idf: f64,
    /// Documents below this are never candidates from this term.
    floor: u64,
    /// The first block of the window (the blocks below it are probed).
    start: usize,
    /// The window block being read, its reader, its bound, and the reader's document
    /// (`u64::MAX` past the window).
    at: usize,
    reader: Reader<'a>,
    bound: f64,
    head: u64,
    /// The largest bound of the window's blocks, and the list's bound (which holds below the
    /// window too).
    window_bound: f64,
    list_bound: f64,
    /// Whether the term has stopped proposing candidates (see [`skip_proposers`]): its
    /// reader then only seeks to the candidates of the others.
    skipped: bool,
    /// Below the window: the block of the last probe, its bound (once asked), and a reader in
    /// it (once a probe needs its postings).
    below: usize,
    below_bound: Option<f64>,
    below_reader: Option<Reader<'a>>,
}

/// What a candidate is known to get from a term.
#[derive(Clone, Copy)]
enum Known {
    /// Not in the candidate.
    Absent,
    /// In the candidate, from the window's head.
    Present,
    /// Below the window, in a block whose bound is this: a probe tells.
    Unknown(f64),
}

impl<'a> Term<'a> {
    fn new(list: &'a PostingList, col: &Collection, window: usize, stats: &mut TopKStats) -> Self {
        let blocks = &list.blocks[..];
        // The window: the trailing blocks that hold at least `window` postings.
        let mut held = 0usize;
        let mut start = 0usize;
        for (i, b) in blocks.iter().enumerate().rev() {
            if held >= window {
                start = i + 1;
                break;
            }
            held += b.count as usize;
        }
        let floor = start
            .checked_sub(1)
            .and_then(|i| blocks.get(i))
            .map_or(0, |b| b.last.saturating_add(1));
        let idf = col.idf(list.df);
        let window_bound = blocks
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .map(|b| col.bound(idf, b.max_tf, b.min_len))
            .fold(0.0, f64::max);
        let mut t = Term {
            blocks,
            idf,
            window_bound,
            list_bound: col.bound(idf, list.max_tf, list.min_len),
            skipped: false,
            floor,
            start,
            at: start,
            reader: Reader::empty(),
            bound: 0.0,
            head: u64::MAX,
            below: 0,
            below_bound: None,
            below_reader: None,
        };
        t.enter(col, stats);
        t.settle(col, stats);
        t
    }

    /// Opens window block `at` (if any).
    fn enter(&mut self, col: &Collection, stats: &mut TopKStats) {
        if let Some(b) = self.blocks.get(self.at) {
            self.reader = b.reader();
            self.bound = col.bound(self.idf, b.max_tf, b.min_len);
            stats.blocks_decoded += 1;
        }
    }

    /// Sets `head` to the reader's posting, moving to the next window block when this one is
    /// read.
    fn settle(&mut self, col: &Collection, stats: &mut TopKStats) {
        loop {
            if let Some(doc) = self.reader.doc() {
                self.head = doc;
                return;
            }
            if self.at >= self.blocks.len() {
                self.head = u64::MAX;
                return;
            }
            self.at += 1;
            self.reader = Reader::empty();
            self.enter(col, stats);
        }
    }

    /// Past the head (the candidate it proposed has been dealt with).
    fn advance(&mut self, col: &Collection, stats: &mut TopKStats) {
        self.reader.advance();
        self.settle(col, stats);
    }

    /// Moves the window's reader to its first posting at or after `doc`, over whole blocks
    /// that end before it without reading them (only a term that stopped proposing lags).
    fn seek_window(&mut self, doc: u64, col: &Collection, stats: &mut TopKStats) {
        if self.head >= doc {
            return;
        }
        let blocks: &'a [Block] = self.blocks;
        if blocks.get(self.at).is_some_and(|b| b.last < doc) {
            let skip = blocks
                .get(self.at..)
                .map_or(0, |rest| rest.partition_point(|b| b.last < doc));
            self.at += skip;
            self.reader = Reader::empty();
            self.enter(col, stats);
            self.settle(col, stats);
        }
        while self.head < doc {
            self.reader.seek(doc);
            self.settle(col, stats);
        }
    }

    /// What `doc` (the candidate; candidates ascend) gets from this term, without reading a
    /// block below the window.
    fn known(&mut self, doc: u64, col: &Collection, stats: &mut TopKStats) -> Known {
        if doc >= self.floor {
            self.seek_window(doc, col, stats);
            // The head is the first window posting at or after `doc`.
            return if self.head == doc {
                Known::Present
            } else {
                Known::Absent
            };
        }
        let blocks: &'a [Block] = self.blocks;
        let below = &blocks[..self.start.min(blocks.len())];
        if below.get(self.below).is_some_and(|b| b.last < doc) {
            let skip = below
                .get(self.below..)
                .map_or(0, |rest| rest.partition_point(|b| b.last < doc));
            self.below += skip;
            self.below_bound = None;
            self.below_reader = None;
        }
        match below.get(self.below) {
            Some(b) if b.first <= doc => {
                let idf = self.idf;
                Known::Unknown(
                    *self
                        .below_bound
                        .get_or_insert_with(|| col.bound(idf, b.max_tf, b.min_len)),
                )
            }
            _ => Known::Absent,
        }
    }

    /// The term frequency and length of `doc` in the block below the window that
    /// [`Term::known`] found for it (`(0, 0)` when the term is not in `doc`).
    fn probe(&mut self, doc: u64, stats: &mut TopKStats) -> (u32, u32) {
        let blocks: &'a [Block] = self.blocks;
        let Some(b) = blocks.get(self.below) else {
            return (0, 0);
        };
        let r = self.below_reader.get_or_insert_with(|| {
            stats.blocks_decoded += 1;
            b.reader()
        });
        match r.seek(doc) {
            Some(d) if d == doc => r.tf_len(),
            _ => (0, 0),
        }
    }
}

/// MaxScore over the windows (Turtle & Flood 1995): marks the terms that need no longer
/// propose candidates from `target` on. A document at or after `target` that no proposing term
/// holds gets at most the window bounds of the terms that stopped proposing plus the list
/// bounds of the terms whose windows it is below (the others do not hold it, or they would
/// propose it); while that sum stays under `cut`, the weakest window joins the skipped ones.
/// `cut` only rises and the sum only falls as `target` passes the floors, so a term once
/// skipped stays skipped, and the postings its reader steps over were never candidates.
fn skip_proposers(ts: &mut [Term<'_>], order: &[usize], target: u64, cut: f64) {
    let mut sum: f64 = ts
        .iter()
        .filter(|t| t.floor > target)
        .map(|t| t.list_bound)
        .sum();
    for &i in order {
        let t = &mut ts[i];
        if t.floor > target {
            continue;
        }
        if t.skipped {
            sum += t.window_bound;
            continue;
        }
        if sum + t.window_bound < cut {
            sum += t.window_bound;
            t.skipped = true;
        } else {
            break;
        }
    }
}

impl LexicalIndex {
    /// [`LexicalIndex::top_k_within`] for a window below `usize::MAX` (see the module docs):
    /// the best `k` of the candidates, exactly as a full ranking of them.
    pub(super) fn windowed_top_k(
        &self,
        terms: &[String],
        k: usize,
        window: usize,
        mut accept: impl FnMut(u64) -> bool,
    ) -> (Vec<Hit>, TopKStats) {
        let mut stats = TopKStats::default();
        let col = self.collection();
        // In query order: scores add in this order.
        let lists: Vec<&PostingList> = terms
            .iter()
            .filter_map(|t| self.list(t))
            .filter(|l| l.df > 0)
            .collect();
        stats.postings = lists.iter().map(|l| l.df).sum();
        let mut ts: Vec<Term<'_>> = lists
            .iter()
            .map(|l| Term::new(l, &col, window, &mut stats))
            .collect();
        let mut known = vec![Known::Absent; ts.len()];
        let mut contrib = vec![0.0f64; ts.len()];
        let mut present = vec![false; ts.len()];
        let mut norms = Norms::new();
        let mut heap: BinaryHeap<Weakest> = BinaryHeap::with_capacity(k.min(1024) + 1);
        let mut theta = f64::NEG_INFINITY;
        let mut cut = f64::NEG_INFINITY;
        // The terms by window bound, weakest first; the cut the skipped set was reckoned for,
        // and the next floor, where it must be reckoned again.
        let mut order: Vec<usize> = (0..ts.len()).collect();
        order.sort_by(|a, b| ts[*a].window_bound.total_cmp(&ts[*b].window_bound));
        let mut reckoned = f64::NEG_INFINITY;
        let mut next_floor = 0u64;
        loop {
            let doc = ts
                .iter()
                .filter(|t| !t.skipped)
                .map(|t| t.head)
                .min()
                .unwrap_or(u64::MAX);
            if doc == u64::MAX {
                break;
            }
            if cut > reckoned || doc >= next_floor {
                skip_proposers(&mut ts, &order, doc, cut);
                next_floor = ts
                    .iter()
                    .map(|t| t.floor)
                    .filter(|f| *f > doc)
                    .min()
                    .unwrap_or(u64::MAX);
                reckoned = cut;
                // The candidate again, among the terms that still propose.
                continue;
            }
            // 1. The blocks' bounds.
            let mut bound = 0.0;
            for (t, kn) in ts.iter_mut().zip(known.iter_mut()) {
                *kn = t.known(doc, &col, &mut stats);
                match *kn {
                    Known::Present => bound += t.bound,
                    Known::Unknown(b) => bound += b,
                    Known::Absent => {}
                }
            }
            if bound < cut {
                for t in ts.iter_mut().filter(|t| t.head == doc) {
                    t.advance(&col, &mut stats);
                }
                continue;
            }
            // 2. The window's exact scores, the others' bounds.
            let mut partial = 0.0;
            let mut rest = 0.0;
            for (i, t) in ts.iter_mut().enumerate() {
                present[i] = false;
                match known[i] {
                    Known::Present => {
                        let (tf, len) = t.reader.tf_len();
                        t.advance(&col, &mut stats);
                        if tf > 0 {
                            let s = col.term_score_normed(t.idf, tf, norms.get(&col, len));
                            contrib[i] = s;
                            present[i] = true;
                            partial += s;
                        }
                    }
                    Known::Unknown(b) => rest += b,
                    Known::Absent => {}
                }
            }
            // 3. The probes, each while the candidate can still enter.
            let mut competitive = partial + rest >= cut;
            for (i, t) in ts.iter_mut().enumerate() {
                if !competitive {
                    break;
                }
                let Known::Unknown(b) = known[i] else {
                    continue;
                };
                let (tf, len) = t.probe(doc, &mut stats);
                rest -= b;
                if tf > 0 {
                    let s = col.term_score_normed(t.idf, tf, norms.get(&col, len));
                    contrib[i] = s;
                    present[i] = true;
                    partial += s;
                }
                competitive = partial + rest >= cut;
            }
            if !competitive {
                continue;
            }
            stats.docs_scored += 1;
            // The score in query order, as a full ranking adds it.
            let mut score = 0.0;
            for (p, s) in present.iter().zip(&contrib) {
                if *p {
                    score += *s;
                }
            }
            if !present.iter().any(|p| *p) || (heap.len() == k && score <= theta) {
                continue;
            }
            // Removed (a forgotten entry): never returned.
            if self.doc(doc).is_none() || !accept(doc) {
                continue;
            }
            heap.push(Weakest(Hit { doc, score }));
            if heap.len() > k {
                heap.pop();
            }
            if heap.len() == k {
                theta = heap.peek().map_or(theta, |w| w.0.score);
                cut = theta - slack(theta);
            }
        }
        let mut hits: Vec<Hit> = heap.into_iter().map(|w| w.0).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        (hits, stats)
    }
}
