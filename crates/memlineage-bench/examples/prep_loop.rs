use memlineage_core::gate::{GateInput, PreparedContext, decide};
fn main() {
    let (policy, call, ctx) = memlineage_bench::fixtures::gate_scenario().unwrap();
    let prepared = PreparedContext::new(&ctx);
    let input = GateInput::new(
        &call,
        &ctx,
        memlineage_core::label::Weight::from_bp(5000).unwrap(),
    )
    .with_prepared(&prepared);
    let t = std::time::Instant::now();
    let n = 2_000_000;
    for _ in 0..n {
        std::hint::black_box(
            decide(std::hint::black_box(&policy), std::hint::black_box(&input)).is_ok(),
        );
    }
    println!("{} ns", t.elapsed().as_nanos() / n);
}
