//! Lexical retrieval: BM25 over an inverted index of posting blocks, with an exact top-k that
//! stops early.
//!
//! **Ranking.** Okapi BM25 with FTS5's parameters ([`bm25`]): a document matches when it holds
//! at least one distinct query term (OR semantics, at most 64 terms), scores add over the
//! query terms in query order, and ties go to the lower leaf index — the order of the SQLite
//! store's `ORDER BY bm25(search), rowid`.
//!
//! **Why it stops early.** A full ranking scores every match: a two-word query matches ~2 % of
//! a store of random text (20 000 entries at 10^6), so its cost grows with the store. Here each
//! term's postings are kept in blocks of 128 ([`block`]) that record their largest term
//! frequency and shortest document, which bounds the score any of their documents can get from
//! that term. The top-k ([`topk`]) is *block-max MaxScore* (Turtle & Flood 1995, "Query
//! evaluation: strategies and optimizations", MaxScore; Ding & Suel 2011, "Faster top-k
//! document retrieval using block-max indexes"; the scorer Lucene and tantivy use): terms whose
//! bounds together cannot lift a document into the current top k are never iterated, only
//! probed for the documents the others surface, and a run of documents whose blocks' bounds
//! add up to no more than the k-th score is skipped block by block without being decoded. The
//! answer is exactly the full ranking's (a property test compares them).
//!
//! **Bounded candidates.** An exact top-k must find the documents that hold several query
//! terms, which on text whose terms are spread evenly means walking the shortest matching
//! list: its length grows with the store. [`LexicalIndex::top_k_within`] bounds that work: a
//! document is a candidate when a query term occurs in it among that term's most recent
//! [`CANDIDATE_WINDOW`] postings; candidates are scored exactly, over every query term, and
//! ranked as above. That top-k is its own loop (`window.rs`): one merge of the terms'
//! postings, decoded from the lowest candidate on, with MaxScore's test per candidate and per
//! window (a term whose window cannot lift a document into the top k stops proposing), so the
//! candidates that cost a score are a few dozen, not the window's thousands. When every term
//! is decoded over the candidate range, the candidates are ranked in two passes instead
//! (`two_pass.rs`): the documents of several terms, found with a bitmap, then each window
//! alone, block by block; same candidates, same scores, no merge. For terms in fewer entries
//! than the window (names, codes, rare words) the answer is the exact ranking of the whole
//! store; a frequent term proposes its recent entries (property tests check both loops
//! against a full ranking of the candidates).
//!
//! **Filtering.** The caller's `accept` (the scope pre-filter) runs on every document that
//! would enter the top k, so the answer is the best `k` among accepted documents, exactly as
//! filtering before ranking. Removed documents (forgotten entries) are never returned.

pub mod block;
pub mod bm25;
pub mod index;
pub mod tokens;
pub mod topk;
mod two_pass;
mod window;

pub use index::LexicalIndex;

/// The candidate window of a lexical search ([`LexicalIndex::top_k_within`]): the postings of
/// each query term that may propose candidates (its most recent ones). 1024 keeps the work of
/// a two-word query to a few thousand postings at any store size; a term in at most 1024
/// entries is searched over the whole store.
pub const CANDIDATE_WINDOW: usize = 1024;
pub use topk::{Hit, TopKStats};

#[cfg(test)]
mod tests;
