//! The full-text index of the in-memory store: an inverted index ranked by BM25.
//!
//! Tokens are the maximal runs of alphanumeric characters, lowercased (the same split the
//! SQLite store applies to queries). A query matches every live document that contains at
//! least one of its distinct terms (at most the first 64), and documents are ranked by Okapi
//! BM25 with the parameters of SQLite FTS5's `bm25()` — `k1 = 1.2`, `b = 0.75`,
//! `idf = ln((N − n + 0.5) / (n + 0.5))`, floored at `1e-6` — best score first, ties by leaf
//! index. For ASCII text this is the ranking of the SQLite store; unlike FTS5's `unicode61`
//! tokenizer it does not fold diacritics (`é` and `e` are different terms).

use std::collections::HashMap;

/// BM25 term-frequency saturation (FTS5 default).
const K1: f64 = 1.2;
/// BM25 length normalisation (FTS5 default).
const B: f64 = 0.75;
/// The largest scratch buffer [`SearchIndex::insert`] keeps between calls (elements).
const SCRATCH_KEEP: usize = 4096;
use crate::store::text::SearchTerms;
#[cfg(test)]
use crate::store::text::tokens;

/// Calls `f` with each term of `text`, in order: the terms of
/// [`tokens`](crate::store::text::tokens), without allocating
/// one string per term (`lower` is scratch space for the terms that need folding).
fn each_token(text: &str, lower: &mut String, mut f: impl FnMut(&str)) {
    let ascii = text.is_ascii();
    for raw in text.split(|c: char| !c.is_alphanumeric()) {
        if raw.is_empty() {
            continue;
        }
        let token = if !(ascii || raw.is_ascii()) {
            lower.clear();
            lower.extend(raw.chars().flat_map(char::to_lowercase));
            lower.as_str()
        } else if raw.bytes().any(|b| b.is_ascii_uppercase()) {
            // An ASCII letter lowercases to its ASCII lowercase.
            lower.clear();
            lower.push_str(raw);
            lower.make_ascii_lowercase();
            lower.as_str()
        } else {
            raw
        };
        f(token);
    }
}

/// One occurrence list entry: a document and how often the term occurs in it.
#[derive(Clone, Copy, Debug)]
struct Posting {
    doc: u64,
    tf: u32,
}

/// A live document: its length in tokens and its distinct terms (to remove it again).
#[derive(Clone, Debug)]
struct Doc {
    len: u32,
    terms: Vec<u32>,
}

/// The inverted index. Documents are leaf indices (dense, so they index a vector); each
/// posting list is in index order.
#[derive(Debug, Default)]
pub struct SearchIndex {
    /// Keyed hashing (`ahash`): the terms come from stored texts, which writers choose.
    term_ids: HashMap<String, u32, ahash::RandomState>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<Option<Doc>>,
    live: usize,
    total_len: u64,
    /// Scratch space of [`SearchIndex::insert`] (term ids, folded term), kept between calls
    /// so that indexing a text allocates only the document's own term list.
    scratch_ids: Vec<u32>,
    scratch_lower: String,
}

impl SearchIndex {
    /// The slot of document `doc`, grown to fit; `None` for an index beyond memory.
    fn slot(&mut self, doc: u64) -> Option<&mut Option<Doc>> {
        let i = usize::try_from(doc).ok()?;
        if self.docs.len() <= i {
            self.docs.resize_with(i + 1, || None);
        }
        self.docs.get_mut(i)
    }

    /// Live document `doc`.
    fn doc(&self, doc: u64) -> Option<&Doc> {
        self.docs.get(usize::try_from(doc).ok()?)?.as_ref()
    }

    /// The id of `token`, interning it if it is new.
    fn intern(&mut self, token: &str) -> u32 {
        if let Some(id) = self.term_ids.get(token) {
            return *id;
        }
        let id = u32::try_from(self.postings.len()).unwrap_or(u32::MAX);
        self.term_ids.insert(token.to_string(), id);
        self.postings.push(Vec::new());
        id
    }

    /// Indexes `text` as document `doc` (replacing an earlier text of the same document).
    pub fn insert(&mut self, doc: u64, text: &str) {
        self.remove(doc);
        let mut ids = std::mem::take(&mut self.scratch_ids);
        let mut lower = std::mem::take(&mut self.scratch_lower);
        ids.clear();
        each_token(text, &mut lower, |token| ids.push(self.intern(token)));
        let len = u32::try_from(ids.len()).unwrap_or(u32::MAX);
        ids.sort_unstable();
        let mut terms: Vec<u32> = Vec::with_capacity(ids.len());
        let mut at = 0;
        while at < ids.len() {
            let t = ids[at];
            let run = ids[at..].iter().take_while(|x| **x == t).count();
            at += run;
            terms.push(t);
            let tf = u32::try_from(run).unwrap_or(u32::MAX);
            if let Some(list) = self.postings.get_mut(t as usize) {
                // Documents arrive in index order, so a push keeps the list sorted; an
                // out-of-order insert falls back to a sorted insert.
                match list.last() {
                    Some(last) if last.doc > doc => {
                        let pos = list.partition_point(|p| p.doc < doc);
                        list.insert(pos, Posting { doc, tf });
                    }
                    _ => list.push(Posting { doc, tf }),
                }
            }
        }
        self.total_len += u64::from(len);
        if let Some(slot) = self.slot(doc) {
            *slot = Some(Doc { len, terms });
            self.live += 1;
        }
        // Kept for the next text, unless a long one grew them (memory stays small).
        if ids.capacity() <= SCRATCH_KEEP {
            self.scratch_ids = ids;
        }
        if lower.capacity() <= SCRATCH_KEEP {
            self.scratch_lower = lower;
        }
    }

    /// Removes document `doc` (a forgotten entry); nothing happens if it is not indexed.
    pub fn remove(&mut self, doc: u64) {
        let Some(d) = self.slot(doc).and_then(Option::take) else {
            return;
        };
        self.live -= 1;
        self.total_len -= u64::from(d.len);
        for t in d.terms {
            if let Some(list) = self.postings.get_mut(t as usize) {
                let at = list.partition_point(|p| p.doc < doc);
                if list.get(at).is_some_and(|p| p.doc == doc) {
                    list.remove(at);
                }
            }
        }
    }

    /// The best `limit` documents for `query` among those `accept` lets through, best first.
    pub fn query(
        &self,
        query: &SearchTerms,
        limit: usize,
        accept: impl Fn(u64) -> bool,
    ) -> Vec<u64> {
        let mut terms: Vec<u32> = Vec::new();
        for token in query.terms() {
            if let Some(id) = self.term_ids.get(token)
                && !terms.contains(id)
            {
                terms.push(*id);
            }
        }
        if terms.is_empty() || limit == 0 || self.live == 0 {
            return Vec::new();
        }
        let n_docs = self.live as f64;
        let avg_len = (self.total_len as f64 / n_docs).max(f64::MIN_POSITIVE);
        let mut scores: HashMap<u64, f64> = HashMap::new();
        for t in terms {
            let Some(list) = self.postings.get(t as usize) else {
                continue;
            };
            let n = list.len() as f64;
            let idf = ((n_docs - n + 0.5) / (n + 0.5)).ln();
            let idf = if idf > 0.0 { idf } else { 1e-6 };
            for p in list {
                let len = self.doc(p.doc).map_or(0.0, |d| f64::from(d.len));
                let tf = f64::from(p.tf);
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / avg_len));
                *scores.entry(p.doc).or_insert(0.0) += s;
            }
        }
        let mut ranked: Vec<(u64, f64)> = scores.into_iter().filter(|(d, _)| accept(*d)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked.into_iter().map(|(d, _)| d).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Mixed and pure-ASCII texts (the two paths of `each_token`).
        #[test]
        fn indexed_terms_are_the_tokens(
            text in proptest::prop_oneof!["(\\PC|[A-Za-z0-9 ,.])*", "[ -~]*"],
        ) {
            let mut lower = String::new();
            let mut seen = Vec::new();
            each_token(&text, &mut lower, |t| seen.push(t.to_string()));
            proptest::prop_assert_eq!(seen, tokens(&text).collect::<Vec<_>>());
        }
    }

    #[test]
    fn bm25_prefers_rarer_terms_and_shorter_documents() {
        let mut ix = SearchIndex::default();
        ix.insert(0, "rent is due rent rent");
        ix.insert(1, "rent");
        ix.insert(2, "the vault code");
        ix.insert(3, "the vault is in Zurich and the code is secret");
        ix.insert(4, "weather today");
        // A single matching term: the shorter document with the term ranks first.
        assert_eq!(ix.query(&SearchTerms::parse("vault"), 10, |_| true), [2, 3]);
        // Term frequency counts, saturated: three "rent" in five tokens (score 1.51) beat one
        // in one token (1.45), with avgdl = 4.2 and idf = ln(3.5 / 2.5).
        assert_eq!(ix.query(&SearchTerms::parse("RENT"), 10, |_| true), [0, 1]);
        // OR semantics: the document with both terms (0.92) before the one with only the
        // common term (0.38); a short document with one rare term (1.40) beats both.
        assert_eq!(
            ix.query(&SearchTerms::parse("zurich vault"), 10, |_| true),
            [3, 2]
        );
        assert_eq!(
            ix.query(&SearchTerms::parse("zurich weather vault"), 10, |_| true),
            [4, 3, 2]
        );
        assert_eq!(
            ix.query(&SearchTerms::parse("zurich weather vault"), 2, |_| true),
            [4, 3]
        );
        // The filter is applied before the limit.
        assert_eq!(ix.query(&SearchTerms::parse("vault"), 1, |d| d != 2), [3]);
        assert!(
            ix.query(&SearchTerms::parse("nothing here"), 10, |_| true)
                .is_empty()
        );
        assert!(
            ix.query(&SearchTerms::parse(" ,; "), 10, |_| true)
                .is_empty()
        );
    }

    #[test]
    fn removed_documents_are_not_found_and_ties_go_by_index() {
        let mut ix = SearchIndex::default();
        ix.insert(7, "alpha beta");
        ix.insert(3, "alpha beta");
        ix.insert(9, "alpha beta");
        assert_eq!(
            ix.query(&SearchTerms::parse("alpha"), 10, |_| true),
            [3, 7, 9]
        );
        ix.remove(7);
        ix.remove(42);
        assert_eq!(ix.live, 2);
        assert_eq!(ix.query(&SearchTerms::parse("beta"), 10, |_| true), [3, 9]);
        ix.insert(3, "gamma");
        assert_eq!(ix.query(&SearchTerms::parse("alpha"), 10, |_| true), [9]);
        assert_eq!(ix.query(&SearchTerms::parse("gamma"), 10, |_| true), [3]);
    }
}
