//! Runs `Memory::write` on the in-memory store many times, for a profiler:
//!
//! ```text
//! cargo build --profile profiling -p memlineage-bench --example write_profile
//! valgrind --tool=callgrind target/profiling/examples/write_profile 2000
//! ```

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let mut w = match memlineage_bench::MemWrite::new(1) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let started = std::time::Instant::now();
    for _ in 0..n {
        if let Err(e) = w.write_one() {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
    let ns = started.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} writes, {:.1} µs per write", ns / 1e3);
}
