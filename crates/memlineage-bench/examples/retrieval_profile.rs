//! The scale run's retrieval rows at chosen sizes, alone (no writes, no whole-store verify):
//!
//! ```text
//! cargo run --release -p memlineage-bench --example retrieval_profile -- 1000 1000000
//! ```
//!
//! For each size (a generated store, cached like the scale run's), prints the lexical top-8
//! alone, the lexical retrieve + verify + render of 8 by a handle that keeps its own lexical
//! index and remembers what it verified (median and p99), the same by a handle that remembers
//! nothing (`cold`), and `Memory::search` of a handle without its own index (`backend`: the
//! store's FTS5 ranking, as the CLI's one-shot `search` runs).

use memlineage::{Memory, SqliteStore};
use memlineage_bench::stats::{Budget, measure};
use memlineage_bench::{cached_store, default_cache_dir, fixtures, fmt_ns, measure_retrieval};
use memlineage_core::entry::Scope;

fn main() {
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
    for n in sizes {
        let run = || -> Result<(), Box<dyn std::error::Error>> {
            let g = cached_store(&default_cache_dir(), n, 1, &mut |l| eprintln!("{l}"))?;
            let p = measure_retrieval(&g.path, n, &budget, None)?;
            let backend = {
                let mem = Memory::open(SqliteStore::open(&g.path)?)?;
                let scope = Scope::new(memlineage_bench::SCOPE)?;
                let queries = fixtures::queries();
                let mut qi = 0usize;
                measure(&budget, || {
                    qi = (qi + 1) % queries.len();
                    std::hint::black_box(mem.search(&queries[qi], &scope, 8).is_ok());
                })
            };
            println!(
                "n {:>8}  top-8 {:>9}  lexical 8 {:>9} (p99 {:>9})  cold {:>9}  backend {:>9}  index {:.1} MiB built in {:.2} s",
                n,
                fmt_ns(p.lexical_topk_ns),
                fmt_ns(p.lexical_8_ns),
                fmt_ns(p.lexical_8_p99_ns),
                fmt_ns(p.lexical_8_cold_ns),
                fmt_ns(backend.median_ns),
                p.lexical_index_bytes as f64 / (1024.0 * 1024.0),
                p.lexical_build_s
            );
            Ok(())
        };
        if let Err(e) = run() {
            eprintln!("error at n = {n}: {e}");
            std::process::exit(1);
        }
    }
}
