//! `Memory::verify` of a generated store of N entries (generated and cached first if needed),
//! for a profiler:
//!
//! ```text
//! cargo build --profile profiling -p memlineage-bench --example verify_profile
//! perf record --call-graph dwarf target/profiling/examples/verify_profile 1000000
//! ```

use memlineage::{Memory, SqliteStore};
use memlineage_bench::{cached_store, default_cache_dir};

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let cache = default_cache_dir();
    let run = || -> Result<(u64, f64, u64), Box<dyn std::error::Error>> {
        let g = cached_store(&cache, n, 1, &mut |l| eprintln!("{l}"))?;
        let mem = Memory::open(SqliteStore::open(&g.path)?)?;
        let started = std::time::Instant::now();
        let report = mem.verify(&mut |_, _| {})?;
        Ok((
            report.entries,
            started.elapsed().as_secs_f64(),
            report.problem_count,
        ))
    };
    match run() {
        Ok((entries, secs, problems)) => println!(
            "n = {n}: {entries} entries in {secs:.2} s, {:.0} entries/s, {problems} problem(s)",
            entries as f64 / secs
        ),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
