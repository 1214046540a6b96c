//! The exact top-k: block-max MaxScore over the posting blocks (see the module docs of
//! [`super`] for the idea and the papers).
//!
//! Documents are visited in ascending order, so a later document never displaces an earlier
//! one of equal score: a document enters a full top-k only with a score strictly above the
//! k-th, and a block is skipped when its bound is no more than the k-th score. Bounds are
//! compared with a small slack (relative 1e-9), so that summation order cannot skip a document
//! whose exact score would have entered.

use super::block::Posting;
use super::bm25::Collection;
use super::index::{LexicalIndex, PostingList};
use super::tokens::query_terms;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One result: a document and its BM25 score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The document (leaf index).
    pub doc: u64,
    /// Its score (higher is better).
    pub score: f64,
}

/// What one query did, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TopKStats {
    /// Blocks decoded.
    pub blocks_decoded: u64,
    /// Documents fully scored.
    pub docs_scored: u64,
    /// Postings in the query terms' lists (what a full ranking would score).
    pub postings: u64,
    /// Postings decoded into vectors (the windowed top-k's runs; bounded by a multiple of the
    /// windows whatever the query's length).
    pub postings_decoded: u64,
    /// Whether the windowed top-k ranked in two passes (documents of several terms first,
    /// then each window alone) rather than by a merge of the terms' postings.
    pub two_pass: bool,
}

/// A query term's cursor over its posting list: the block it is in (shallow), the postings of
/// that block once decoded, and its position there.
struct Cursor<'a> {
    list: &'a PostingList,
    /// Position of the term in the query (scores add in this order).
    slot: usize,
    idf: f64,
    /// The list's bound.
    ub: f64,
    block: usize,
    decoded: Option<usize>,
    postings: Vec<Posting>,
    pos: usize,
    /// Documents below this are never candidates from this term (its window); they are still
    /// scored exactly when another term proposes them.
    floor: u64,
    /// The block last decoded for a probe below the cursor, its postings, and where the
    /// last probe in it ended (probes ascend: the next one mostly starts there).
    probed: Option<usize>,
    probe_postings: Vec<Posting>,
    probe_pos: usize,
    /// The block last asked for a bound below the window, and that bound.
    probe_bound: Option<(usize, f64)>,
    /// The bound of the block last asked for ([`Cursor::block_bound`]), by block position.
    bound_of: Option<(usize, f64)>,
}

impl<'a> Cursor<'a> {
    fn new(list: &'a PostingList, slot: usize, c: &Collection, window: usize) -> Cursor<'a> {
        let idf = c.idf(list.df);
        // The window: the trailing blocks that hold at least `window` postings.
        let mut held = 0usize;
        let mut floor = 0u64;
        for b in list.blocks.iter().rev() {
            if held >= window {
                floor = b.last.saturating_add(1);
                break;
            }
            held += b.count as usize;
        }
        Cursor {
            floor,
            bound_of: None,
            probed: None,
            probe_postings: Vec::new(),
            probe_pos: 0,
            probe_bound: None,
            list,
            slot,
            idf,
            ub: c.bound(idf, list.max_tf, list.min_len),
            block: 0,
            decoded: None,
            postings: Vec::new(),
            pos: 0,
        }
    }

    /// Moves to the first block whose last document is at least `target`, without decoding.
    fn shallow(&mut self, target: u64) {
        let blocks = &self.list.blocks;
        if self.block < blocks.len() && blocks[self.block].last < target {
            self.block += blocks[self.block..].partition_point(|b| b.last < target);
        }
    }

    /// The current block's bound and last document (`None` when exhausted). The bound is
    /// computed once per block and query.
    fn block_bound(&mut self, c: &Collection) -> Option<(f64, u64)> {
        let b = self.list.blocks.get(self.block)?;
        let bound = match self.bound_of {
            Some((at, bound)) if at == self.block => bound,
            _ => {
                let bound = c.bound(self.idf, b.max_tf, b.min_len);
                self.bound_of = Some((self.block, bound));
                bound
            }
        };
        Some((bound, b.last))
    }

    /// The term frequency of `doc` and its length, by random access (the cursor does not
    /// move): for a document below the cursor's window. `(0, _)` when the term is not in `doc`.
    fn probe(&mut self, doc: u64, stats: &mut TopKStats) -> (u32, u32) {
        let blocks = &self.list.blocks;
        // The block decoded last for a probe, when it covers `doc` (candidates ascend, so
        // consecutive probes mostly fall in one block).
        let at = match self.probed.and_then(|at| Some((at, blocks.get(at)?))) {
            Some((at, b)) if b.first <= doc && doc <= b.last => at,
            _ => blocks.partition_point(|b| b.last < doc),
        };
        match blocks.get(at) {
            Some(b) if b.first <= doc => {
                if self.probed != Some(at) {
                    b.decode_into(&mut self.probe_postings);
                    self.probed = Some(at);
                    self.probe_pos = 0;
                    stats.blocks_decoded += 1;
                }
                // From where the last probe ended, a few steps forward, else a binary search.
                let ps = &self.probe_postings;
                let mut i = self.probe_pos.min(ps.len());
                if ps.get(i).is_some_and(|p| p.doc > doc) {
                    i = 0;
                }
                let mut steps = 0;
                while steps < 4 && ps.get(i).is_some_and(|p| p.doc < doc) {
                    i += 1;
                    steps += 1;
                }
                if steps == 4 {
                    i += ps
                        .get(i..)
                        .map_or(0, |rest| rest.partition_point(|p| p.doc < doc));
                }
                self.probe_pos = i;
                match ps.get(i) {
                    Some(p) if p.doc == doc => (p.tf, p.len),
                    _ => (0, 0),
                }
            }
            _ => (0, 0),
        }
    }

    /// The bound of this term's contribution to `doc`, below the window (the cursor may be
    /// past `doc`, so the blocks are looked up directly), and how far it holds: the bound of
    /// the block that covers `doc`, or zero up to the next block when `doc` falls between
    /// blocks; never past the window's start.
    fn bound_below(&mut self, doc: u64, c: &Collection) -> (f64, u64) {
        let blocks = &self.list.blocks;
        let last = self.floor - 1;
        let at = match self
            .probe_bound
            .and_then(|(at, _)| Some((at, blocks.get(at)?)))
        {
            Some((at, b)) if b.first <= doc && doc <= b.last => at,
            _ => blocks.partition_point(|b| b.last < doc),
        };
        match blocks.get(at) {
            Some(b) if b.first <= doc => {
                let bound = match self.probe_bound {
                    Some((was, bound)) if was == at => bound,
                    _ => {
                        let bound = c.bound(self.idf, b.max_tf, b.min_len);
                        self.probe_bound = Some((at, bound));
                        bound
                    }
                };
                (bound, b.last.min(last))
            }
            Some(b) => (0.0, (b.first - 1).min(last)),
            None => (0.0, last),
        }
    }

    /// The term frequency of `doc`, the candidate being scored (documents arrive in ascending
    /// order), and its length: from the cursor when `doc` is in its window, else by a probe.
    /// `(0, _)` when the term is not in `doc`.
    fn tf_at(&mut self, doc: u64, stats: &mut TopKStats) -> (u32, u32) {
        if doc < self.floor {
            return self.probe(doc, stats);
        }
        match self.seek(doc, stats) {
            Some(p) if p.doc == doc => (p.tf, p.len),
            _ => (0, 0),
        }
    }

    /// The bound of this term's contribution to `doc`, and how far that bound holds.
    fn bound_at(&mut self, doc: u64, c: &Collection) -> Option<(f64, u64)> {
        if doc < self.floor {
            return Some(self.bound_below(doc, c));
        }
        self.shallow(doc);
        self.block_bound(c)
    }

    /// The first posting at or after `target` (decoding its block), or `None`.
    fn seek(&mut self, target: u64, stats: &mut TopKStats) -> Option<Posting> {
        // Candidates ascend one by one, so the posting wanted is nearly always the current one
        // or the next: no block lookup and no binary search then (both are above it in a
        // block whose last document is at least the posting's, so `shallow` would not move).
        if self.decoded == Some(self.block) {
            match self.postings.get(self.pos) {
                Some(p) if p.doc >= target => return Some(*p),
                Some(_) => {
                    if let Some(p) = self.postings.get(self.pos + 1)
                        && p.doc >= target
                    {
                        self.pos += 1;
                        return Some(*p);
                    }
                }
                None => {}
            }
        }
        loop {
            self.shallow(target);
            let b = self.list.blocks.get(self.block)?;
            if self.decoded != Some(self.block) {
                b.decode_into(&mut self.postings);
                self.decoded = Some(self.block);
                self.pos = 0;
                stats.blocks_decoded += 1;
            }
            // Candidates ascend, so the next posting is mostly the one wanted: a binary
            // search only when the cursor must move.
            if self.postings.get(self.pos).is_some_and(|p| p.doc < target) {
                let rest = &self.postings[self.pos..];
                self.pos += rest.partition_point(|p| p.doc < target);
            }
            match self.postings.get(self.pos) {
                Some(p) => return Some(*p),
                // Only when the block's last document is below `target`, which `shallow`
                // rules out; move on rather than trust it.
                None => self.block += 1,
            }
        }
    }
}

/// A top-k entry ordered so that the heap's greatest is the weakest result: the lowest
/// score, then the highest document.
#[derive(Clone, Copy, Debug)]
pub(super) struct Weakest(pub(super) Hit);

impl PartialEq for Weakest {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Weakest {}
impl PartialOrd for Weakest {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Weakest {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .0
            .score
            .total_cmp(&self.0.score)
            .then(self.0.doc.cmp(&other.0.doc))
    }
}

/// The length norms of the document lengths a query meets ([`Collection::length_norm`]),
/// each computed once: a candidate's terms all share its length, and lengths repeat across
/// candidates, so most scores then take one division instead of two.
pub(super) struct Norms {
    /// By length; NaN until computed (a norm is never NaN).
    table: [f64; 256],
}

impl Norms {
    pub(super) fn new() -> Norms {
        Norms {
            table: [f64::NAN; 256],
        }
    }

    pub(super) fn get(&mut self, col: &Collection, len: u32) -> f64 {
        match self.table.get_mut(len as usize) {
            Some(n) if !n.is_nan() => *n,
            Some(n) => {
                *n = col.length_norm(len);
                *n
            }
            None => col.length_norm(len),
        }
    }
}

/// The slack of a bound comparison: bounds and scores are sums of the same terms in other
/// orders, which may differ in the last bits.
pub(super) fn slack(theta: f64) -> f64 {
    1e-9 * (1.0 + theta.abs())
}

impl LexicalIndex {
    /// The best `k` live documents for `query` among those `accept` lets through, best first
    /// (higher score, then lower document): the exact ranking.
    pub fn top_k(&self, query: &str, k: usize, accept: impl FnMut(u64) -> bool) -> Vec<Hit> {
        self.top_k_with_stats(query, k, usize::MAX, accept).0
    }

    /// The top-k over *bounded candidate sets*: a document is a candidate when it holds a
    /// query term among that term's last `window` postings (rounded up to whole blocks: its
    /// most recent occurrences); candidates are scored exactly (every query term, at any
    /// age) and ranked as [`LexicalIndex::top_k`] ranks. A term in at most `window` documents
    /// — a name, a code, a rare word — has every document in its window, so a query of such
    /// terms gets the exact ranking over the whole index; a frequent term contributes its
    /// recent documents. The work is bounded by `window` per query term, whatever the size of
    /// the index.
    pub fn top_k_within(
        &self,
        query: &str,
        k: usize,
        window: usize,
        accept: impl FnMut(u64) -> bool,
    ) -> Vec<Hit> {
        self.top_k_with_stats(query, k, window, accept).0
    }

    /// [`LexicalIndex::top_k_within`], with what it did (`usize::MAX`: no window).
    pub fn top_k_with_stats(
        &self,
        query: &str,
        k: usize,
        window: usize,
        mut accept: impl FnMut(u64) -> bool,
    ) -> (Vec<Hit>, TopKStats) {
        let mut stats = TopKStats::default();
        let terms = query_terms(query);
        let col = self.collection();
        if k == 0 || self.is_empty() {
            return (Vec::new(), stats);
        }
        if window != usize::MAX {
            return self.windowed_top_k(&terms, k, window, accept);
        }
        // Cursors sorted by bound, ascending: the first `essential` of them are the
        // non-essential terms (their bounds together cannot make a document competitive).
        let mut cursors: Vec<Cursor<'_>> = terms
            .iter()
            .enumerate()
            .filter_map(|(slot, t)| Some(Cursor::new(self.list(t)?, slot, &col, window)))
            .filter(|c| c.list.df > 0)
            .collect();
        stats.postings = cursors.iter().map(|c| c.list.df).sum();
        cursors.sort_by(|a, b| a.ub.total_cmp(&b.ub).then(a.slot.cmp(&b.slot)));
        let prefix: Vec<f64> = std::iter::once(0.0)
            .chain(cursors.iter().scan(0.0, |acc, c| {
                *acc += c.ub;
                Some(*acc)
            }))
            .collect();
        // Per query slot: the term's frequency in the candidate and its score there (each
        // computed once, then added in query order).
        let mut tfs = vec![0u32; terms.len()];
        let mut contrib = vec![0.0f64; terms.len()];
        let mut idfs = vec![0.0f64; terms.len()];
        for c in &cursors {
            idfs[c.slot] = c.idf;
        }
        let mut norms = Norms::new();
        // Each cursor's bound at the candidate (by position in `cursors`).
        let mut bounds = vec![0.0f64; cursors.len()];
        let mut heap: BinaryHeap<Weakest> = BinaryHeap::with_capacity(k.min(1024) + 1);
        let mut theta = f64::NEG_INFINITY;
        let mut essential = 0usize;
        let mut target = 0u64;
        loop {
            // The next candidate: the smallest document of an essential list.
            let mut doc = u64::MAX;
            for c in &mut cursors[essential..] {
                if let Some(p) = c.seek(target.max(c.floor), &mut stats) {
                    doc = doc.min(p.doc);
                }
            }
            if doc == u64::MAX {
                break;
            }
            // Block-max: the bound of every list's block at `doc`, and how far those blocks
            // reach; when they cannot beat the k-th score, skip past the nearest block end.
            let bounded = heap.len() == k;
            if bounded {
                let mut bound = 0.0;
                let mut upto = u64::MAX;
                for (c, cb) in cursors.iter_mut().zip(bounds.iter_mut()) {
                    *cb = 0.0;
                    if let Some((b, last)) = c.bound_at(doc, &col) {
                        *cb = b;
                        bound += b;
                        upto = upto.min(last);
                    }
                }
                if bound < theta - slack(theta) {
                    if upto == u64::MAX {
                        break;
                    }
                    target = upto + 1;
                    continue;
                }
            }
            target = doc.saturating_add(1);
            // Scored from the postings alone (they carry the document's length): whether the
            // document is live (a random access into the document table, the costliest read
            // of a large index) is asked only when it would enter.
            tfs.iter_mut().for_each(|t| *t = 0);
            let mut partial = 0.0;
            let mut len = 0u32;
            // Whether every matching posting gave the same length (always, unless a removed
            // document was indexed again with other text): then the scores computed here are
            // the final ones.
            let mut one_len = true;
            for c in &mut cursors[essential..] {
                let (tf, l) = c.tf_at(doc, &mut stats);
                if tf > 0 {
                    one_len &= len == 0 || len == l;
                    tfs[c.slot] = tf;
                    len = l;
                    let s = col.term_score_normed(c.idf, tf, norms.get(&col, l));
                    contrib[c.slot] = s;
                    partial += s;
                }
            }
            // Non-essential terms, strongest first, while the bounds of their blocks at `doc`
            // can still make it competitive (bounds computed above when the top k is full).
            let mut rest = 0.0;
            for (i, c) in cursors[..essential].iter_mut().enumerate() {
                if !bounded {
                    bounds[i] = c.bound_at(doc, &col).map_or(0.0, |(b, _)| b);
                }
                rest += bounds[i];
            }
            let mut competitive = true;
            for i in (0..essential).rev() {
                if heap.len() == k && partial + rest < theta - slack(theta) {
                    competitive = false;
                    break;
                }
                rest -= bounds[i];
                let c = &mut cursors[i];
                let (tf, l) = c.tf_at(doc, &mut stats);
                if tf > 0 {
                    one_len &= len == 0 || len == l;
                    tfs[c.slot] = tf;
                    len = l;
                    let s = col.term_score_normed(c.idf, tf, norms.get(&col, l));
                    contrib[c.slot] = s;
                    partial += s;
                }
            }
            if !competitive {
                continue;
            }
            stats.docs_scored += 1;
            // The score in query order, as a full ranking adds it (with the last length seen
            // for every term, as before the scores were kept).
            let mut score = 0.0;
            if one_len {
                for (tf, s) in tfs.iter().zip(&contrib) {
                    if *tf > 0 {
                        score += *s;
                    }
                }
            } else {
                for (tf, idf) in tfs.iter().zip(&idfs) {
                    if *tf > 0 {
                        score += col.term_score(*idf, *tf, len);
                    }
                }
            }
            if heap.len() == k && score <= theta {
                continue;
            }
            // Removed (a forgotten entry): never returned.
            if self.doc(doc).is_none() {
                continue;
            }
            if !accept(doc) {
                continue;
            }
            heap.push(Weakest(Hit { doc, score }));
            if heap.len() > k {
                heap.pop();
            }
            if heap.len() == k {
                theta = heap.peek().map_or(theta, |w| w.0.score);
                while essential < cursors.len() && prefix[essential + 1] < theta - slack(theta) {
                    essential += 1;
                }
            }
        }
        let mut hits: Vec<Hit> = heap.into_iter().map(|w| w.0).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc)));
        (hits, stats)
    }
}
