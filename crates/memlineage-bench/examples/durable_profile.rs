//! Durable batch-256 writes into a copy of a generated store of N entries, as the scale run
//! measures them, for a profiler (the store is generated and cached first if needed):
//!
//! ```text
//! cargo build --profile profiling -p memlineage-bench --example durable_profile
//! perf record --call-graph dwarf target/profiling/examples/durable_profile 1000000 40
//! ```

use memlineage_bench::{cached_store, default_cache_dir, fmt_ns, write_at};

fn main() {
    let arg = |i: usize, default: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (n, batches) = (arg(1, 100_000), arg(2, 40));
    let cache = default_cache_dir();
    let seed = 1;
    let batches = usize::try_from(batches).unwrap_or(40);
    let result = cached_store(&cache, n, seed, &mut |l| eprintln!("{l}"))
        .and_then(|g| write_at(&g.path, &cache, seed, batches));
    match result {
        Ok(s) => println!(
            "n = {n}: {} batches of 256, per entry median {} p99 {}",
            s.samples,
            fmt_ns(s.median_ns),
            fmt_ns(s.p99_ns)
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
