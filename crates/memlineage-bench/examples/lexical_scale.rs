//! The lexical top-k alone, as the index grows: an in-memory `LexicalIndex` of the benchmark
//! workload's texts (Zipf words, ~180 bytes each) at 10^3 … 10^6 documents, and the top 8 of
//! the scale run's queries (two mid-frequency words). Prints, per size, the median of the exact
//! top-k, the median and p99 of the windowed one (`CANDIDATE_WINDOW`), how many of the exact
//! top-8 documents the windowed top-8 also returns (over all queries), the blocks it decoded
//! and the documents it scored against the postings a full ranking would score, the index's
//! build time and its size.
//!
//! ```text
//! cargo run --release -p memlineage-bench --example lexical_scale [MAX_N]
//! ```
//!
//! `MEMLINEAGE_LEXICAL_WINDOW=<postings>` ranks with another window than `CANDIDATE_WINDOW`.
//! `MEMLINEAGE_LEXICAL_LOOP=<seconds>` instead runs the windowed top-k alone at `MAX_N` for
//! that long once the index is built, for a sampling profiler (`perf record`);
//! `MEMLINEAGE_LEXICAL_FREQUENT=<n>` replaces the queries by one of the workload's `n` most
//! frequent words (documents of several query terms are then the rule, not the exception).
//! `MEMLINEAGE_LEXICAL_QUERIES=<count>` runs that many queries and prints the time per query
//! the thread spent on a CPU (`/proc/thread-self/schedstat`) beside the wall time: on a
//! machine shared with other builds the scheduler inflates the wall time, not the time on
//! the CPU.

use memlineage::search::lexical::{CANDIDATE_WINDOW, LexicalIndex};
use memlineage_bench::fixtures::{Workload, queries};
use memlineage_bench::fmt_ns;
use memlineage_bench::stats::{Budget, measure};
use std::hint::black_box;
use std::time::Instant;

fn main() {
    let max: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let qs = match std::env::var("MEMLINEAGE_LEXICAL_FREQUENT")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
    {
        Some(n) => vec![
            (0..n)
                .map(memlineage_bench::fixtures::word)
                .collect::<Vec<_>>()
                .join(" "),
        ],
        None => queries(),
    };
    let window: usize = std::env::var("MEMLINEAGE_LEXICAL_WINDOW")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CANDIDATE_WINDOW);
    let mut ix = LexicalIndex::new();
    let mut w = Workload::new(1);
    let mut n = 0u64;
    let mut build_ns = 0u128;
    println!(
        "{:>8}  {:>9}  {:>9}  {:>9}  {:>9}  {:>14}  {:>12}  {:>10}  {:>8}  {:>9}",
        "n",
        "exact",
        "windowed",
        "p99",
        "overlap",
        "blocks decoded",
        "docs scored",
        "postings",
        "build",
        "memory"
    );
    for target in [1_000u64, 10_000, 100_000, 1_000_000] {
        if target > max {
            break;
        }
        let t = Instant::now();
        while n < target {
            let (_, text) = w.next_entry(1024);
            ix.insert(n, &text);
            n += 1;
        }
        build_ns += t.elapsed().as_nanos();
        if let Some(count) = std::env::var("MEMLINEAGE_LEXICAL_QUERIES")
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        {
            if n < max {
                continue;
            }
            let (cpu, wall) = (on_cpu_ns(), Instant::now());
            for i in 0..count {
                black_box(ix.top_k_within(&qs[i % qs.len()], 8, window, |_| true));
            }
            let per = |ns: u128| fmt_ns(ns as f64 / count.max(1) as f64);
            println!(
                "{n}: {count} windowed top-8 queries, per query {} on the CPU, {} wall",
                per(on_cpu_ns().saturating_sub(cpu)),
                per(wall.elapsed().as_nanos())
            );
            return;
        }
        if let Some(secs) = std::env::var("MEMLINEAGE_LEXICAL_LOOP")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            if n < max {
                continue;
            }
            let until = Instant::now() + std::time::Duration::from_secs(secs);
            let mut i = 0usize;
            while Instant::now() < until {
                i = (i + 1) % qs.len();
                black_box(ix.top_k_within(&qs[i], 8, window, |_| true));
            }
            return;
        }
        let mut i = 0usize;
        let exact = measure(&Budget::new(1_000, 200, 20_000), || {
            i = (i + 1) % qs.len();
            black_box(ix.top_k(&qs[i], 8, |_| true));
        });
        let s = measure(&Budget::new(1_000, 200, 20_000), || {
            i = (i + 1) % qs.len();
            black_box(ix.top_k_within(&qs[i], 8, window, |_| true));
        });
        let (mut blocks, mut scored, mut postings) = (0u64, 0u64, 0u64);
        // How many of the exact top-8 the windowed top-8 also returns (the price of the
        // bounded candidate sets), over all queries.
        let (mut shared, mut wanted) = (0usize, 0usize);
        for q in &qs {
            let (hits, st) = ix.top_k_with_stats(q, 8, window, |_| true);
            blocks += st.blocks_decoded;
            scored += st.docs_scored;
            postings += st.postings;
            let exact = ix.top_k(q, 8, |_| true);
            wanted += exact.len();
            shared += exact
                .iter()
                .filter(|e| hits.iter().any(|h| h.doc == e.doc))
                .count();
        }
        let m = qs.len() as u64;
        println!(
            "{:>8}  {:>9}  {:>9}  {:>9}  {:>6}/{:<3}  {:>14}  {:>12}  {:>10}  {:>6.1} s  {:>5.1} MiB",
            n,
            fmt_ns(exact.median_ns),
            fmt_ns(s.median_ns),
            fmt_ns(s.p99_ns),
            shared,
            wanted,
            blocks / m,
            scored / m,
            postings / m,
            build_ns as f64 / 1e9,
            ix.memory_bytes() as f64 / (1024.0 * 1024.0)
        );
    }
}

/// Nanoseconds this thread has run on a CPU (the first field of its `schedstat`; 0 where
/// unavailable).
fn on_cpu_ns() -> u128 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
