//! The early-terminating top-k against a full ranking.

use super::LexicalIndex;
use super::bm25::Collection;
use super::tokens::{each_term, query_terms};
use super::window::Loop;
use proptest::prelude::*;
use std::collections::HashMap;

/// Every live document that holds a query term, scored term by term in query order, sorted
/// best first (higher score, then lower document), filtered, cut to `k`.
fn full_ranking(
    texts: &[(u64, String)],
    removed: &[u64],
    query: &str,
    k: usize,
    accept: impl Fn(u64) -> bool,
) -> Vec<(u64, f64)> {
    let live: Vec<&(u64, String)> = texts.iter().filter(|(d, _)| !removed.contains(d)).collect();
    let terms_of = |t: &str| {
        let mut v = Vec::new();
        each_term(t, &mut String::new(), |x| v.push(x.to_string()));
        v
    };
    let total: u64 = live.iter().map(|(_, t)| terms_of(t).len() as u64).sum();
    let col = Collection::new(live.len() as u64, total);
    let q = query_terms(query);
    let df: Vec<u64> = q
        .iter()
        .map(|t| live.iter().filter(|(_, x)| terms_of(x).contains(t)).count() as u64)
        .collect();
    let mut out = Vec::new();
    for (doc, text) in &live {
        let terms = terms_of(text);
        let mut tf: HashMap<&str, u32> = HashMap::new();
        for t in &terms {
            *tf.entry(t.as_str()).or_default() += 1;
        }
        let mut score = 0.0;
        let mut matched = false;
        for (t, df) in q.iter().zip(&df) {
            if let Some(n) = tf.get(t.as_str()) {
                matched = true;
                score += col.term_score(col.idf(*df), *n, terms.len() as u32);
            }
        }
        if matched && accept(*doc) {
            out.push((*doc, score));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(k);
    out
}

fn text_strategy() -> impl Strategy<Value = String> {
    // A small vocabulary, so that terms repeat, documents tie, and lists span several blocks.
    let word = prop_oneof![
        8 => "[a-e]",
        2 => "[a-e]{2}",
        1 => "(rent|due|vault|Code|ÉTÉ)",
    ];
    proptest::collection::vec(word, 0..12).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn top_k_is_the_full_ranking(
        texts in proptest::collection::vec(text_strategy(), 1..400),
        removed in proptest::collection::vec(0usize..400, 0..40),
        query in "[a-e ]{0,3}( rent| vault| zz| code| été)?",
        k in 0usize..20,
        modulus in 1u64..5,
        shuffled in any::<bool>(),
    ) {
        let docs: Vec<(u64, String)> = texts.into_iter().enumerate().map(|(i, t)| (i as u64 * 3, t)).collect();
        let mut ix = LexicalIndex::new();
        let mut order: Vec<usize> = (0..docs.len()).collect();
        if shuffled {
            order.reverse();
        }
        for i in order {
            ix.insert(docs[i].0, &docs[i].1);
        }
        let removed: Vec<u64> = removed.iter().filter_map(|i| docs.get(*i).map(|d| d.0)).collect();
        for doc in &removed {
            let text = &docs.iter().find(|d| d.0 == *doc).unwrap().1;
            ix.remove(*doc, text);
        }
        let accept = |d: u64| (d / 3) % modulus != 1;
        let want = full_ranking(&docs, &removed, &query, k, accept);
        let got = ix.top_k(&query, k, accept);
        prop_assert_eq!(got.iter().map(|h| h.doc).collect::<Vec<_>>(), want.iter().map(|w| w.0).collect::<Vec<_>>());
        for (h, w) in got.iter().zip(&want) {
            prop_assert!((h.score - w.1).abs() <= 1e-12 * (1.0 + w.1.abs()));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// The windowed top-k is the full ranking of the documents that hold a query term among
    /// that term's last blocks of `window` postings, scored over every query term.
    #[test]
    fn windowed_top_k_is_the_full_ranking_of_its_candidates(
        texts in proptest::collection::vec(text_strategy(), 1..600),
        query in "[a-e ]{0,3}( rent| vault| code)?",
        k in 1usize..12,
        window in 1usize..400,
    ) {
        let docs: Vec<(u64, String)> = texts.into_iter().enumerate().map(|(i, t)| (i as u64, t)).collect();
        let mut ix = LexicalIndex::new();
        for (d, t) in &docs {
            ix.insert(*d, t);
        }
        // Each term's floor, as the index lays out its blocks.
        let floors: Vec<(String, u64)> = query_terms(&query)
            .into_iter()
            .filter_map(|t| {
                let list = ix.list(&t)?;
                let mut held = 0usize;
                let mut floor = 0u64;
                for b in list.blocks.iter().rev() {
                    if held >= window {
                        floor = b.last + 1;
                        break;
                    }
                    held += b.count as usize;
                }
                Some((t, floor))
            })
            .collect();
        let candidate = |d: u64| {
            let text = &docs[d as usize].1;
            let mut terms = Vec::new();
            each_term(text, &mut String::new(), |x| terms.push(x.to_string()));
            floors.iter().any(|(t, f)| d >= *f && terms.contains(t))
        };
        let want = full_ranking(&docs, &[], &query, k, candidate);
        let got = ix.top_k_within(&query, k, window, |_| true);
        prop_assert_eq!(got.iter().map(|h| h.doc).collect::<Vec<_>>(), want.iter().map(|w| w.0).collect::<Vec<_>>());
        for how in [Loop::Merge, Loop::TwoPassAlways] {
            let other = ix.windowed_top_k_by(&query_terms(&query), k, window, |_| true, how).0;
            prop_assert_eq!(&other, &got, "{:?}", how);
        }
    }
}

/// Each term's floor (the first document of its window), as the index lays out its blocks.
fn floors(ix: &LexicalIndex, query: &str, window: usize) -> Vec<(String, u64)> {
    query_terms(query)
        .into_iter()
        .filter_map(|t| {
            let list = ix.list(&t)?;
            let mut held = 0usize;
            let mut floor = 0u64;
            for b in list.blocks.iter().rev() {
                if held >= window {
                    floor = b.last + 1;
                    break;
                }
                held += b.count as usize;
            }
            Some((t, floor))
        })
        .collect()
}

/// The index of `texts` less the `removed` ones (positions), and the full ranking of the
/// windowed top-k's candidates for `query` that `accept` lets through: the documents that
/// hold a query term among its last blocks of `window` postings.
fn windowed_case(
    texts: Vec<String>,
    removed: &[usize],
    query: &str,
    k: usize,
    window: usize,
    accept: impl Fn(u64) -> bool,
) -> (LexicalIndex, Vec<(u64, f64)>) {
    let docs: Vec<(u64, String)> = texts
        .into_iter()
        .enumerate()
        .map(|(i, t)| (i as u64, t))
        .collect();
    let mut ix = LexicalIndex::new();
    for (d, t) in &docs {
        ix.insert(*d, t);
    }
    let removed: Vec<u64> = removed
        .iter()
        .filter_map(|i| docs.get(*i).map(|d| d.0))
        .collect();
    for doc in &removed {
        ix.remove(*doc, &docs[*doc as usize].1);
    }
    let floors = floors(&ix, query, window);
    let candidate = |d: u64| {
        let mut terms = Vec::new();
        each_term(&docs[d as usize].1, &mut String::new(), |x| {
            terms.push(x.to_string())
        });
        accept(d) && floors.iter().any(|(t, f)| d >= *f && terms.contains(t))
    };
    let want = full_ranking(&docs, &removed, query, k, candidate);
    (ix, want)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// With a window, removed documents are still never returned and the caller's filter
    /// still applies before the cut to `k`; scores are a full ranking's to the last bits.
    #[test]
    fn windowed_top_k_filters_and_skips_removed(
        texts in proptest::collection::vec(text_strategy(), 1..600),
        removed in proptest::collection::vec(0usize..600, 0..60),
        query in "[a-e ]{0,3}( rent| vault| code)?",
        k in 1usize..12,
        window in 1usize..400,
        modulus in 1u64..4,
    ) {
        let accept = |d: u64| d % modulus != 1;
        let (ix, want) = windowed_case(texts, &removed, &query, k, window, accept);
        let got = ix.top_k_within(&query, k, window, accept);
        prop_assert_eq!(got.iter().map(|h| h.doc).collect::<Vec<_>>(), want.iter().map(|w| w.0).collect::<Vec<_>>());
        for (h, w) in got.iter().zip(&want) {
            prop_assert_eq!(h.score.to_bits(), w.1.to_bits());
        }
        for how in [Loop::Merge, Loop::TwoPassAlways] {
            let other = ix.windowed_top_k_by(&query_terms(&query), k, window, accept, how).0;
            prop_assert_eq!(&other, &got, "{:?}", how);
        }
    }
}

/// Texts of a wider vocabulary (`w0` … `w59`, the low ones far more frequent), so that terms
/// hold few common documents, as on real text: the two-pass loop then finds few documents of
/// two terms and passes most of each window on its block bounds.
fn spread_text_strategy() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        6 => (0u32..4).prop_map(|w| format!("w{w}")),
        3 => (4u32..16).prop_map(|w| format!("w{w}")),
        1 => (16u32..60).prop_map(|w| format!("w{w}")),
    ];
    proptest::collection::vec(word, 0..10).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]

    /// Both loops of the windowed top-k give the full ranking of the candidates, with the
    /// same score bits, on text where documents of two query terms are rare, with removed
    /// documents and a filter.
    #[test]
    fn both_windowed_loops_rank_sparse_co_occurrences(
        texts in proptest::collection::vec(spread_text_strategy(), 1..1500),
        removed in proptest::collection::vec(0usize..1500, 0..40),
        query in proptest::collection::vec(0u32..60, 1..5),
        k in 1usize..12,
        window in 1usize..600,
        modulus in 1u64..4,
    ) {
        let query = query.iter().map(|w| format!("w{w}")).collect::<Vec<_>>().join(" ");
        let accept = |d: u64| d % modulus != 1;
        let (ix, want) = windowed_case(texts, &removed, &query, k, window, accept);
        let terms = query_terms(&query);
        for how in [Loop::TwoPass, Loop::Merge, Loop::TwoPassAlways] {
            let got = if ix.is_empty() {
                Vec::new()
            } else {
                ix.windowed_top_k_by(&terms, k, window, accept, how).0
            };
            prop_assert_eq!(got.iter().map(|h| h.doc).collect::<Vec<_>>(), want.iter().map(|w| w.0).collect::<Vec<_>>(), "{:?}", how);
            for (h, w) in got.iter().zip(&want) {
                prop_assert_eq!(h.score.to_bits(), w.1.to_bits());
            }
        }
    }
}

/// On a store-like corpus a two-word query is ranked by the two-pass loop, with the merge's
/// answer, scoring fewer documents; a long query whose frequent terms do not all fit the
/// decoding budget falls back to the merge.
#[test]
fn the_two_pass_loop_ranks_when_every_term_is_decoded() {
    let ix = zipf_corpus(60_000);
    let terms = query_terms("w300 w907");
    let (two, s2) = ix.windowed_top_k_by(&terms, 8, 1024, |_| true, Loop::TwoPass);
    let (merged, sm) = ix.windowed_top_k_by(&terms, 8, 1024, |_| true, Loop::Merge);
    assert_eq!(two.len(), 8);
    assert_eq!(two, merged);
    assert!(s2.two_pass && !sm.two_pass, "{s2:?} {sm:?}");
    // Words that meet in most documents: the merge ranks (its bounds skip most of them);
    // forced, the two-pass loop gives the same answer.
    let frequent = query_terms("w0 w1 w2");
    let (auto, sa) = ix.windowed_top_k_by(&frequent, 8, 1024, |_| true, Loop::TwoPass);
    let (merged, _) = ix.windowed_top_k_by(&frequent, 8, 1024, |_| true, Loop::Merge);
    let (forced, sf) = ix.windowed_top_k_by(&frequent, 8, 1024, |_| true, Loop::TwoPassAlways);
    assert_eq!(auto.len(), 8);
    assert_eq!(auto, merged);
    assert_eq!(forced, merged);
    assert!(!sa.two_pass && sf.two_pass, "{sa:?} {sf:?}");
    let mut long = zipf_corpus(40_000);
    long.insert(40_000, "zzunique w1");
    let query: Vec<String> = (0..48).map(|w| format!("w{w}")).collect();
    let terms = query_terms(&format!("zzunique {}", query.join(" ")));
    let (two, s2) = long.windowed_top_k_by(&terms, 8, 128, |_| true, Loop::TwoPass);
    let (merged, _) = long.windowed_top_k_by(&terms, 8, 128, |_| true, Loop::Merge);
    assert_eq!(two, merged);
    assert!(!s2.two_pass, "{s2:?}");
}

/// With a window, the work per query stays bounded as the index grows.
#[test]
fn a_window_bounds_the_work() {
    let ix = zipf_corpus(60_000);
    let (_, exact) = ix.top_k_with_stats("w300 w907", 8, usize::MAX, |_| true);
    let (hits, bounded) = ix.top_k_with_stats("w300 w907", 8, 128, |_| true);
    assert_eq!(hits.len(), 8);
    assert!(bounded.docs_scored <= 2 * 256 + 8, "{bounded:?}");
    assert!(
        bounded.docs_scored * 2 < exact.docs_scored,
        "{bounded:?} {exact:?}"
    );
}

/// A long query of frequent terms decodes a bounded multiple of its windows in all, not per
/// term, and still ranks its candidates as a full ranking of them would.
#[test]
fn a_long_query_decodes_a_bounded_number_of_postings() {
    let mut ix = zipf_corpus(40_000);
    // A term in one document: its window is its whole list, so the lowest candidate is the
    // first document and every other term could be decoded over the whole index.
    ix.insert(40_000, "zzunique w1");
    let query: Vec<String> = (0..48).map(|w| format!("w{w}")).collect();
    let query = format!("zzunique {}", query.join(" "));
    let window = 128;
    let (hits, stats) = ix.top_k_with_stats(&query, 8, window, |_| true);
    assert_eq!(hits.len(), 8);
    // Each window holds at most `window + 127` postings (whole blocks).
    let windows = 49 * (window as u64 + 127);
    assert!(
        stats.postings_decoded <= 5 * windows,
        "{stats:?}: more than five times the windows ({windows})"
    );
    assert!(stats.postings > 2 * stats.postings_decoded, "{stats:?}");
}

#[test]
fn removed_documents_are_never_returned() {
    let mut ix = LexicalIndex::new();
    ix.insert(0, "alpha beta");
    ix.insert(1, "alpha");
    ix.insert(2, "alpha gamma");
    ix.remove(1, "alpha");
    ix.remove(1, "alpha");
    ix.remove(7, "alpha");
    assert_eq!(ix.len(), 2);
    let docs: Vec<u64> = ix
        .top_k("alpha", 10, |_| true)
        .iter()
        .map(|h| h.doc)
        .collect();
    assert_eq!(docs, [0, 2]);
    // Inserting a live document again changes nothing.
    ix.insert(0, "something else");
    assert_eq!(ix.top_k("something", 10, |_| true), []);
    assert_eq!(ix.list("alpha").map(|l| l.df), Some(2));
}

/// A store-like corpus: `n` texts of 26–35 Zipf-distributed words `w0`, `w1`, … (as the
/// benchmark's workload), and every 50th text also holds `rare`.
fn zipf_corpus(n: u64) -> LexicalIndex {
    let mut ix = LexicalIndex::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let words = 4096u64;
    let h: f64 = (1..=words).map(|r| 1.0 / r as f64).sum();
    let cdf: Vec<f64> = (1..=words)
        .scan(0.0, |a, r| {
            *a += 1.0 / r as f64 / h;
            Some(*a)
        })
        .collect();
    for doc in 0..n {
        let len = 26 + next() % 10;
        let mut text: Vec<String> = (0..len)
            .map(|_| {
                let u = (next() >> 11) as f64 / (1u64 << 53) as f64;
                format!("w{}", cdf.partition_point(|c| *c < u))
            })
            .collect();
        if doc % 50 == 0 {
            text.push("rare".into());
        }
        ix.insert(doc, &text.join(" "));
    }
    ix
}

/// MaxScore: with a rare and a very common term, the common term's list is only probed for
/// the rare term's documents — most of its blocks are never decoded.
#[test]
fn a_common_term_is_only_probed() {
    let ix = zipf_corpus(40_000);
    let common = ix.list("w0").unwrap();
    let rare = ix.list("rare").unwrap();
    assert!(common.df > 10 * rare.df);
    let (hits, stats) = ix.top_k_with_stats("w0 rare", 8, usize::MAX, |_| true);
    assert_eq!(hits.len(), 8);
    assert!(stats.docs_scored <= rare.df + 8, "{stats:?}");
    let blocks = (common.blocks.len() + rare.blocks.len()) as u64;
    assert!(
        stats.blocks_decoded * 2 < blocks,
        "{stats:?} of {blocks} blocks"
    );
}

/// A caller's filter that searches again on the same thread (the two-pass loop keeps a bitmap
/// per thread) gets the same answers as without nesting.
#[test]
fn a_search_inside_the_filter_is_answered_alike() {
    let ix = zipf_corpus(30_000);
    let plain = ix.top_k_within("w300 w907", 8, 1024, |_| true);
    let inner = ix.top_k_within("w41 w77", 8, 1024, |_| true);
    let nested = ix.top_k_within("w300 w907", 8, 1024, |_| {
        assert_eq!(ix.top_k_within("w41 w77", 8, 1024, |_| true), inner);
        true
    });
    assert_eq!(nested, plain);
    assert_eq!(ix.top_k_within("w41 w77", 8, 1024, |_| true), inner);
}
