//! Criterion benches of the write path: `Memory::write` on the in-memory store, the core steps
//! alone (encode, label, sign, Merkle append), and durable appends to a file SQLite store in
//! batches of 1, 16 and 256.

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memlineage_bench::MemWrite;
use memlineage_bench::fixtures::{HotPath, fresh_memory};
use std::time::Duration;

fn write(c: &mut Criterion) {
    let mut mem_write = MemWrite::new(1).expect("memory store");
    c.bench_function("write_hot_path_mem", |b| {
        b.iter(|| mem_write.write_one().expect("writes"))
    });
    drop(mem_write);
    let mut core = HotPath::new(1).expect("hot path");
    c.bench_function("write_core_path", |b| {
        b.iter(|| core.write_one().expect("writes"))
    });

    let dir = tempfile::Builder::new()
        .prefix("memlineage-bench-")
        .tempdir_in(
            memlineage_bench::default_cache_dir()
                .parent()
                .unwrap_or(&std::env::temp_dir()),
        )
        .or_else(|_| tempfile::tempdir())
        .expect("temp dir");
    let mut g = c.benchmark_group("durable_append");
    for batch in [1usize, 16, 256] {
        let path = dir.path().join(format!("b{batch}.sqlite"));
        let (mem, pool, mut workload) = fresh_memory(&path, 1, 256).expect("store");
        g.throughput(Throughput::Elements(batch as u64));
        g.bench_function(format!("b{batch}"), |b| {
            b.iter_batched(
                || {
                    (0..batch)
                        .map(|_| workload.next_request(&pool).expect("request"))
                        .collect()
                },
                |reqs| mem.write_batch(reqs).expect("writes"),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = write
}
criterion_main!(benches);
