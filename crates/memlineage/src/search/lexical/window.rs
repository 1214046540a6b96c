//! The windowed top-k ([`LexicalIndex::top_k_within`]): each query term's postings from the
//! lowest candidate on, decoded once into a vector, and one merge over them in document order.
//!
//! **Why decode first.** Over a window the work is fixed by the window: about `window`
//! postings per term propose candidates, and each candidate must be looked up in the other
//! terms' postings, including older ones when it lies below their windows. What cost the time
//! was the price per candidate: a loop that kept a reader in place on each term's current
//! block, asked every term for its block and bound per candidate and re-entered blocks paid
//! about 14 ns per posting it passed (≈ 60 µs for the ≈ 4,200 postings of a two-word query at
//! 10^6 entries, issue 17). Here each term's blocks that can meet a candidate are decoded in
//! one pass ([`Block::decode_extend`]: fixed-width fields, no dependent loads), and the merge
//! steps through plain vectors: a candidate costs a comparison per term and, when a term holds
//! it, one score.
//!
//! **Which postings are decoded.** The lowest candidate is the lowest window floor. Besides
//! its windows, a query may decode [`DECODE_RATIO`] times as many postings as they hold: terms
//! are decoded from the lowest candidate on, fewest postings first, while that budget lasts; a
//! term beyond it — much more frequent than the others, or one of many in a long query — has
//! only its window decoded, and a candidate below it *probes* the one older block that may
//! hold it (a block's bound first, its postings only when the candidate can still enter the
//! top k). So the decoded postings are bounded by a multiple of the windows, whatever the
//! store's size and the query's length (64 frequent terms decode ≈ 5× their windows, not 4×
//! per term).
//!
//! **MaxScore over the windows** (Turtle & Flood 1995, with the block bounds of Ding & Suel
//! 2011): once the top k is full, a term whose window's best block bound, added to the other
//! skipped terms' and to the list bounds of the terms whose windows start later, stays under
//! the k-th score stops proposing candidates ([`skip_proposers`]): a document only it proposes
//! cannot enter. Its postings are then only stepped over, to answer the others' candidates.
//!
//! A candidate is dropped as soon as a bound keeps it out of the top k: the exact scores of the
//! terms that hold it among the decoded postings plus the bounds of the blocks still to probe;
//! then after each probe. A candidate that passes is scored exactly, term by term in query
//! order, each term with its own posting's length (the same bits as a full ranking), and
//! enters as in the MaxScore loop of [`super::topk`]: strictly above the k-th score (documents
//! ascend, so ties go to the lower document), live, and accepted by the caller's filter.

use super::block::{Block, Posting, Reader};
use super::bm25::Collection;
use super::index::{LexicalIndex, PostingList};
use super::topk::{Hit, Norms, TopKStats, Weakest, slack};
use super::two_pass::two_pass_fits;
use std::collections::BinaryHeap;

/// The postings a query may decode besides its windows, in multiples of the windows' postings
/// (the candidates): the terms that do not fit keep only their windows decoded and are probed
/// below them.
const DECODE_RATIO: usize = 4;

/// The first block of a list's window: the trailing blocks that hold at least `window`
/// postings.
fn window_start(blocks: &[Block], window: usize) -> usize {
    let mut held = 0usize;
    for (i, b) in blocks.iter().enumerate().rev() {
        if held >= window {
            return i + 1;
        }
        held += b.count as usize;
    }
    0
}

/// The first document after block `at - 1` (0 for the first block): no document between it and
/// block `at`'s first holds the term.
pub(super) fn floor_at(blocks: &[Block], at: usize) -> u64 {
    at.checked_sub(1)
        .and_then(|i| blocks.get(i))
        .map_or(0, |b| b.last.saturating_add(1))
}

/// Which loop ranks the candidates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loop {
    /// [`super::two_pass`] when every term's region covers the candidate range and the terms
    /// meet rarely, else the merge.
    TwoPass,
    /// The merge of this module.
    #[cfg_attr(not(test), allow(dead_code))] // Chosen by the tests, which run both loops.
    Merge,
    /// [`super::two_pass`] whenever every term's region covers the candidate range, however
    /// often the terms meet (the tests, so that the two-pass loop ranks every case).
    #[cfg_attr(not(test), allow(dead_code))]
    TwoPassAlways,
}

/// One query term.
pub(super) struct Term<'a> {
    pub(super) idf: f64,
    /// Documents below this are never candidates from this term (its window's floor).
    pub(super) floor: u64,
    /// The postings of the blocks from `region_start` on, decoded; those from `window_at` on
    /// are the window's.
    pub(super) postings: Vec<Posting>,
    pub(super) window_at: usize,
    /// The window's blocks (their postings are `postings[window_at..]`).
    pub(super) window_blocks: &'a [Block],
    /// The blocks from `region_start` on (decoded into `postings` for the merge; read in
    /// place by the two-pass loop, which leaves `postings` empty).
    pub(super) region_blocks: &'a [Block],
    /// The first decoded posting at or after the last document looked up (documents ascend).
    pos: usize,
    /// Documents at or after this are answered by `postings`; below it, by probing
    /// `below_blocks`.
    pub(super) region_start: u64,
    below_blocks: &'a [Block],
    /// The block below the region of the last probe, its bound (once asked), and a reader in
    /// it (once a probe needs its postings).
    below: usize,
    below_bound: Option<f64>,
    below_reader: Option<Reader<'a>>,
    /// The largest bound of the window's blocks, and the list's bound (which holds below the
    /// window too).
    window_bound: f64,
    list_bound: f64,
    /// Whether the term has stopped proposing candidates (see [`skip_proposers`]).
    skipped: bool,
    /// The term's scores by term frequency (below [`SCORED_TF`]) and length (below 256), NaN
    /// until computed: lengths and frequencies repeat across candidates, and a score from the
    /// table is one load where computing it is a division.
    scores: Vec<f64>,
}

/// Term frequencies below this have their scores kept ([`Term::score`]).
const SCORED_TF: u32 = 4;

/// What a candidate is known to get from a term.
#[derive(Clone, Copy)]
enum Known {
    /// Not in the candidate.
    Absent,
    /// In the candidate with this term frequency and length.
    Present(u32, u32),
    /// Below the decoded region, in a block whose bound is this: a probe tells.
    Unknown(f64),
}

impl<'a> Term<'a> {
    /// The term's window, its region from block `from` on (`from` is at most the window's
    /// start), decoded when `decode` (the merge's terms; the two-pass loop reads in place).
    fn new(
        list: &'a PostingList,
        col: &Collection,
        start: usize,
        from: usize,
        decode: bool,
        stats: &mut TopKStats,
    ) -> Self {
        let blocks = &list.blocks[..];
        let idf = col.idf(list.df);
        let floor = floor_at(blocks, start);
        let window_bound = blocks
            .get(start..)
            .unwrap_or(&[])
            .iter()
            .map(|b| col.bound(idf, b.max_tf, b.min_len))
            .fold(0.0, f64::max);
        let mut term = Term {
            idf,
            floor,
            postings: Vec::new(),
            window_at: 0,
            window_blocks: blocks.get(start..).unwrap_or(&[]),
            region_blocks: blocks.get(from..).unwrap_or(&[]),
            pos: 0,
            region_start: floor_at(blocks, from),
            below_blocks: blocks.get(..from).unwrap_or(&[]),
            below: 0,
            below_bound: None,
            below_reader: None,
            window_bound,
            list_bound: col.bound(idf, list.max_tf, list.min_len),
            skipped: false,
            scores: vec![f64::NAN; SCORED_TF as usize * 256],
        };
        if decode {
            term.decode_region(stats);
        }
        term
    }

    /// Decodes the term's region into `postings` (the merge's terms, and those made for the
    /// two-pass loop when it hands the query to the merge).
    fn decode_region(&mut self, stats: &mut TopKStats) {
        if !self.postings.is_empty() {
            return;
        }
        let decoded = self.region_blocks;
        self.postings
            .reserve_exact(decoded.iter().map(|b| b.count as usize).sum());
        for b in decoded {
            b.decode_extend(&mut self.postings);
        }
        stats.blocks_decoded += decoded.len() as u64;
        stats.postings_decoded += self.postings.len() as u64;
        self.window_at = self.postings.partition_point(|p| p.doc < self.floor);
    }

    /// The term's score in a document where it occurs `tf` times, of `len` terms: the same
    /// bits as [`Collection::term_score_normed`] with the document's norm.
    #[inline]
    pub(super) fn score(&mut self, col: &Collection, norms: &mut Norms, tf: u32, len: u32) -> f64 {
        let slot = (tf < SCORED_TF && len < 256).then_some((tf as usize) << 8 | len as usize);
        match slot.and_then(|i| self.scores.get_mut(i)) {
            Some(s) if !s.is_nan() => *s,
            Some(s) => {
                *s = col.term_score_normed(self.idf, tf, norms.get(col, len));
                *s
            }
            None => col.term_score_normed(self.idf, tf, norms.get(col, len)),
        }
    }

    /// The next document this term proposes (its first window posting not yet passed).
    #[inline]
    fn proposal(&self) -> Option<u64> {
        self.postings
            .get(self.pos.max(self.window_at))
            .map(|p| p.doc)
    }

    /// What `doc` (the candidate; candidates ascend) gets from this term, without reading a
    /// block below the decoded region. Passes the posting of `doc` when the term holds it.
    #[inline]
    fn lookup(&mut self, doc: u64, col: &Collection) -> Known {
        if doc >= self.region_start {
            let ps = &self.postings[..];
            let mut p = self.pos;
            while ps.get(p).is_some_and(|q| q.doc < doc) {
                p += 1;
            }
            return match ps.get(p) {
                Some(q) if q.doc == doc => {
                    self.pos = p + 1;
                    Known::Present(q.tf, q.len)
                }
                _ => {
                    self.pos = p;
                    Known::Absent
                }
            };
        }
        let below = self.below_blocks;
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

    /// The term frequency and length of `doc` in the block below the region that
    /// [`Term::lookup`] found for it (`(0, 0)` when the term is not in `doc`).
    fn probe(&mut self, doc: u64, stats: &mut TopKStats) -> (u32, u32) {
        let below: &'a [Block] = self.below_blocks;
        let Some(b) = below.get(self.below) else {
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
/// skipped stays skipped, and the postings it steps over were never candidates.
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
        accept: impl FnMut(u64) -> bool,
    ) -> (Vec<Hit>, TopKStats) {
        self.windowed_top_k_by(terms, k, window, accept, Loop::TwoPass)
    }

    /// [`LexicalIndex::windowed_top_k`] with the loop chosen (the tests run both).
    pub(super) fn windowed_top_k_by(
        &self,
        terms: &[String],
        k: usize,
        window: usize,
        mut accept: impl FnMut(u64) -> bool,
        how: Loop,
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
        let starts: Vec<usize> = lists
            .iter()
            .map(|l| window_start(&l.blocks, window))
            .collect();
        // The lowest candidate, and how many postings propose candidates.
        let Some(lowest) = lists
            .iter()
            .zip(&starts)
            .map(|(l, s)| floor_at(&l.blocks, *s))
            .min()
        else {
            return (Vec::new(), stats);
        };
        let held = |bs: &[Block]| bs.iter().map(|b| b.count as usize).sum::<usize>();
        let candidates: usize = lists
            .iter()
            .zip(&starts)
            .map(|(l, s)| held(l.blocks.get(*s..).unwrap_or(&[])))
            .sum();
        // Where each term is decoded from: from the lowest candidate on (its `reach`), fewest
        // postings first, while the budget lasts; else its window only.
        let reach: Vec<(usize, usize)> = lists
            .iter()
            .zip(&starts)
            .map(|(l, &start)| {
                let at = l.blocks.partition_point(|b| b.last < lowest).min(start);
                (at, held(l.blocks.get(at..).unwrap_or(&[])))
            })
            .collect();
        let mut from = starts.clone();
        let mut budget = DECODE_RATIO.saturating_mul(candidates);
        let mut by_spread: Vec<usize> = (0..lists.len()).collect();
        by_spread.sort_by_key(|&i| reach[i].1);
        for i in by_spread {
            let (at, spread) = reach[i];
            let own = held(lists[i].blocks.get(starts[i]..).unwrap_or(&[]));
            let extra = spread.saturating_sub(own);
            if extra <= budget {
                budget -= extra;
                from[i] = at;
            }
        }
        let always = how == Loop::TwoPassAlways;
        let words = (how != Loop::Merge)
            .then(|| two_pass_fits(&lists, &from, lowest, always))
            .flatten();
        let mut ts: Vec<Term<'_>> = lists
            .iter()
            .zip(starts.iter().zip(&from))
            .map(|(l, (&start, &from))| {
                Term::new(l, &col, start, from, words.is_none(), &mut stats)
            })
            .collect();
        if let Some(words) = words {
            if let Some(hits) = self.two_pass_top_k(
                &mut ts,
                &col,
                lowest,
                words,
                always,
                k,
                &mut accept,
                &mut stats,
            ) {
                return (hits, stats);
            }
            // Documents of several terms are common: the merge ranks, over decoded regions.
            for t in &mut ts {
                t.decode_region(&mut stats);
            }
        }
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
                .filter_map(Term::proposal)
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
            // The exact scores of the terms that hold it among the decoded postings, the
            // bounds of the others' older blocks.
            let mut partial = 0.0;
            let mut rest = 0.0;
            for (i, t) in ts.iter_mut().enumerate() {
                let kn = t.lookup(doc, &col);
                known[i] = kn;
                present[i] = false;
                match kn {
                    Known::Present(tf, len) => {
                        let s = t.score(&col, &mut norms, tf, len);
                        contrib[i] = s;
                        present[i] = true;
                        partial += s;
                    }
                    Known::Unknown(b) => rest += b,
                    Known::Absent => {}
                }
            }
            // The probes, each while the candidate can still enter.
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
                    let s = t.score(&col, &mut norms, tf, len);
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
