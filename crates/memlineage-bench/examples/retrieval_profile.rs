//! The scale run's retrieval rows at chosen sizes, alone (no writes, no whole-store verify):
//!
//! ```text
//! cargo run --release -p memlineage-bench --example retrieval_profile -- 1000 1000000
//! ```
//!
//! For each size (a generated store, cached like the scale run's), prints the lexical top-8
//! alone, the lexical retrieve + verify + render of 8 by a handle that remembers what it
//! verified (median and p99), and the same by a handle that remembers nothing (`cold`).

use memlineage_bench::stats::Budget;
use memlineage_bench::{cached_store, default_cache_dir, fmt_ns, measure_retrieval};

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
            println!(
                "n {:>8}  top-8 {:>9}  lexical 8 {:>9} (p99 {:>9})  cold {:>9}",
                n,
                fmt_ns(p.lexical_topk_ns),
                fmt_ns(p.lexical_8_ns),
                fmt_ns(p.lexical_8_p99_ns),
                fmt_ns(p.lexical_8_cold_ns)
            );
            Ok(())
        };
        if let Err(e) = run() {
            eprintln!("error at n = {n}: {e}");
            std::process::exit(1);
        }
    }
}
