//! Criterion benches of verification and reads on a generated store (10^5 entries by default;
//! set `MEMLINEAGE_BENCH_N` for another size): entry verification with proofs from the store,
//! retrieval of 8 (from a store of 4096), and proof generation. Stores are cached like the
//! runner's.

use criterion::{Criterion, criterion_group, criterion_main};
use memlineage::{Memory, SqliteStore};
use memlineage_bench::fixtures::{Workload, queries};
use memlineage_bench::{
    REGISTRY_RECORDS, StoreVerify, cached_store, default_cache_dir, sample_entries,
};
use memlineage_core::entry::Scope;
use std::hint::black_box;
use std::time::Duration;

fn size() -> u64 {
    std::env::var("MEMLINEAGE_BENCH_N")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000)
}

fn read(c: &mut Criterion) {
    let n = size();
    let cache = default_cache_dir();
    let small = cached_store(&cache, 4096, 1, &mut |l| eprintln!("{l}")).expect("store");
    let mem = Memory::open(SqliteStore::open(&small.path).expect("open")).expect("memory");
    let scope = Scope::new("acme").expect("scope");
    let qs = queries();
    let mut q = 0;
    c.bench_function("retrieve_verify_render_8", |b| {
        b.iter(|| {
            q = (q + 1) % qs.len();
            mem.search(&qs[q], &scope, 8).expect("search")
        })
    });
    drop(mem);

    let big = cached_store(&cache, n, 1, &mut |l| eprintln!("{l}")).expect("store");
    let mem = Memory::open(SqliteStore::open(&big.path).expect("open")).expect("memory");
    let size = mem.size().expect("size");
    let mut w = Workload::new(7);
    let picked = sample_entries(&mem, &mut w, 64).expect("sample");
    let fx = StoreVerify::new(&mem, 1, &picked).expect("proofs");
    let mut j = 0;
    c.bench_function("entry_verify", |b| {
        b.iter(|| {
            j += 1;
            fx.check(black_box(j))
        })
    });
    let ids: Vec<_> = (0..256)
        .map(|_| {
            let idx = REGISTRY_RECORDS + w.below(size - REGISTRY_RECORDS);
            mem.log(idx, 1)
                .expect("read")
                .pop()
                .expect("entry")
                .entry
                .id()
        })
        .collect();
    let mut k = 0;
    c.bench_function("inclusion_proof_gen", |b| {
        b.iter(|| {
            k = (k + 1) % ids.len();
            mem.prove_inclusion(&ids[k], Some(size)).expect("proof")
        })
    });
    let olds: Vec<u64> = (0..256).map(|_| 1 + w.below(size - 1)).collect();
    c.bench_function("consistency_proof_gen", |b| {
        b.iter(|| {
            k = (k + 1) % olds.len();
            mem.prove_consistency(olds[k], size).expect("proof")
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = read
}
criterion_main!(benches);
