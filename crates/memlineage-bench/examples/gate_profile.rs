//! Runs the gate decision of the bench scenario in a loop, for a profiler:
//! `perf record --call-graph dwarf target/profiling/examples/gate_profile 200000 [--prepared]`.

use memlineage_core::gate::{GateInput, PreparedContext, decide};
use memlineage_core::label::Weight;
use std::hint::black_box;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let (policy, call, ctx) = memlineage_bench::fixtures::gate_scenario()?;
    let tau = Weight::from_bp(5000).ok_or("tau")?;
    let prepared = std::env::args().any(|a| a == "--prepared");
    let prep = PreparedContext::new(&ctx);
    let start = std::time::Instant::now();
    for _ in 0..n {
        let mut input = GateInput::new(&call, &ctx, tau);
        if prepared {
            input = input.with_prepared(&prep);
        }
        black_box(decide(&policy, &input)?);
    }
    let per = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{n} decisions (prepared: {prepared}), {per:.0} ns each");
    Ok(())
}
