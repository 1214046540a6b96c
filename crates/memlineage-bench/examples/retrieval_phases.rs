//! Where a warm lexical retrieval's time goes, at chosen sizes (issue 17):
//!
//! ```text
//! cargo run --release -p memlineage-bench --example retrieval_phases -- 1000 1000000
//! ```
//!
//! On the cached generated store of each size, by a handle that keeps its own lexical index
//! and remembers what it verified (as `retrieval_profile`'s `lexical 8`), prints the medians of
//! `Memory::search` of 8 (the whole row), of `Memory::lexical_top` (snapshot, catch-up, the
//! bounded top-8), of `Memory::retrieve_indices` of the 8 found (snapshot, reads, checks,
//! render; also by a second handle without its own index), and of the in-memory top-8 alone
//! over the same texts (`LexicalIndex`, with the documents it scored; also at windows 128 to
//! 1024). `MEMLINEAGE_PHASE_LOOP=<phase>` (`search`, `top`, `bare`: the in-memory top-8,
//! `retrieve`, `plain`: `retrieve` by the handle without an index) instead runs that phase
//! alone for 20 s, for a sampling profiler (`perf record -D 20000 …`).

use memlineage::search::lexical::{CANDIDATE_WINDOW, LexicalIndex};
use memlineage::{Memory, SqliteStore};
use memlineage_bench::stats::{Budget, measure};
use memlineage_bench::{cached_store, default_cache_dir, fixtures, fmt_ns};
use memlineage_core::entry::Scope;
use std::hint::black_box;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![1_000, 1_000_000]
    } else {
        sizes
    };
    let budget = Budget::new(2_000, 50, 100_000);
    let queries = fixtures::queries();
    let scope = Scope::new(memlineage_bench::SCOPE)?;
    for n in sizes {
        let g = cached_store(&default_cache_dir(), n, 1, &mut |l| eprintln!("{l}"))?;
        let mem = Memory::open(SqliteStore::open(&g.path)?)?.with_lexical_index();
        let found: Vec<Vec<u64>> = queries
            .iter()
            .map(|q| mem.lexical_top(q, &scope, 8))
            .collect::<Result<_, _>>()?;
        for (q, f) in queries.iter().zip(&found) {
            black_box(mem.search(q, &scope, 8)?);
            black_box(mem.retrieve_indices(f.clone(), &scope)?);
        }
        // The same ranking on an index of the same texts, without the handle.
        let mut index = LexicalIndex::new();
        let read = SqliteStore::open(&g.path)?;
        let phase = std::env::var("MEMLINEAGE_PHASE_LOOP").ok();
        let mut at = if phase.as_deref().is_none_or(|p| p == "bare") {
            0
        } else {
            u64::MAX / 2
        };
        loop {
            use memlineage::store::BackendRead;
            let chunk = read.entries(at, 4096)?;
            let Some(last) = chunk.last().map(|e| e.index) else {
                break;
            };
            for e in &chunk {
                if let Some(text) = e
                    .content
                    .as_deref()
                    .and_then(|c| std::str::from_utf8(c).ok())
                {
                    index.insert(e.index, text);
                }
            }
            at = last + 1;
        }
        // A handle without its own index (no index build in this process's heap).
        let plain = Memory::open(SqliteStore::open(&g.path)?)?;
        for f in &found {
            black_box(plain.retrieve_indices(f.clone(), &scope)?);
        }
        if let Some(phase) = phase {
            let until = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut qi = 0usize;
            while std::time::Instant::now() < until {
                qi = (qi + 1) % queries.len();
                match phase.as_str() {
                    "top" => drop(black_box(mem.lexical_top(&queries[qi], &scope, 8)?)),
                    "bare" => drop(black_box(index.top_k_within(
                        &queries[qi],
                        8,
                        CANDIDATE_WINDOW,
                        |_| true,
                    ))),
                    "retrieve" => drop(black_box(mem.retrieve_indices(found[qi].clone(), &scope)?)),
                    _ => drop(black_box(mem.search(&queries[qi], &scope, 8)?)),
                }
            }
            continue;
        }
        let mut qi = 0usize;
        let search = measure(&budget, || {
            qi = (qi + 1) % queries.len();
            black_box(mem.search(&queries[qi], &scope, 8).is_ok());
        });
        let top = measure(&budget, || {
            qi = (qi + 1) % queries.len();
            black_box(mem.lexical_top(&queries[qi], &scope, 8).is_ok());
        });
        let retrieve = measure(&budget, || {
            qi = (qi + 1) % queries.len();
            black_box(mem.retrieve_indices(found[qi].clone(), &scope).is_ok());
        });
        let plain_retrieve = measure(&budget, || {
            qi = (qi + 1) % queries.len();
            black_box(plain.retrieve_indices(found[qi].clone(), &scope).is_ok());
        });
        let bare = measure(&budget, || {
            qi = (qi + 1) % queries.len();
            black_box(index.top_k_within(&queries[qi], 8, CANDIDATE_WINDOW, |_| true));
        });
        let (mut scored, mut decoded, mut postings) = (0u64, 0u64, 0u64);
        for q in &queries {
            let (_, s) = index.top_k_with_stats(q, 8, CANDIDATE_WINDOW, |_| true);
            scored += s.docs_scored;
            decoded += s.blocks_decoded;
            postings += s.postings;
        }
        let nq = queries.len() as u64;
        // The same at other windows (what a smaller bounded candidate set would cost).
        for window in [128usize, 256, 512, 1024] {
            let m = measure(&budget, || {
                qi = (qi + 1) % queries.len();
                black_box(index.top_k_within(&queries[qi], 8, window, |_| true));
            });
            println!(
                "n {n:>8}  top-k alone, window {window:>4}: {:>9}",
                fmt_ns(m.median_ns)
            );
        }
        println!(
            "n {:>8}  search 8 {:>9}  lexical_top {:>9}  retrieve_indices {:>9} (handle without index {:>9})  top-k alone {:>9} (scored {}, blocks {}, postings {} per query)",
            n,
            fmt_ns(search.median_ns),
            fmt_ns(top.median_ns),
            fmt_ns(retrieve.median_ns),
            fmt_ns(plain_retrieve.median_ns),
            fmt_ns(bare.median_ns),
            scored / nq,
            decoded / nq,
            postings / nq,
        );
    }
    Ok(())
}
