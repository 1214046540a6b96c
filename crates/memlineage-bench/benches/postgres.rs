//! Criterion benches of the PostgreSQL store beside the SQLite file store, in the same run
//! (feature `postgres`; `docs/performance.md`, "PostgreSQL"):
//!
//! - `pg_vs_sqlite/append_b{1,256}/{sqlite,postgres}`: durable `Memory::write_batch` of typical
//!   entries, one transaction per batch;
//! - `pg_vs_sqlite/retrieve_verify_render_8/{sqlite,postgres}`: a verified retrieval of 8 from
//!   the generated store of 4096 entries, and from its copy in PostgreSQL (`Memory::copy_to`);
//! - `pg_writers/4x_b256`: four handles on four threads (their own connections, as four
//!   processes would have) each appending a batch of 256 at once, into one log; after the
//!   group, the latency of every batch's `write_batch` in the same run (p50, p99) is printed.
//!   (Writer *processes* appending back to back: `examples/pg_writers.rs`.)
//!
//! The server is a throwaway cluster on this host (`memlineage-pgtest`, `fsync` and
//! `synchronous_commit` on). Without PostgreSQL the bench says so and measures nothing.
//!
//! `cargo bench -p memlineage-bench --features postgres --bench postgres`

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use memlineage::{Memory, OpenMode, SqliteStore, StoreLocation};
use memlineage_bench::fixtures::{
    PRINCIPALS, Workload, fresh_memory, fresh_memory_on, name, principal_key, queries,
};
use memlineage_bench::{cached_store, default_cache_dir};
use memlineage_core::EntryId;
use memlineage_core::entry::Scope;
use std::time::{Duration, Instant};

/// A handle on the store at `url` with every fixture key loaded.
fn writer_on(url: &str) -> Memory {
    let location: StoreLocation = url.parse().expect("location");
    let mem = Memory::open_at(&location).expect("open");
    for (n, _) in PRINCIPALS {
        mem.keys()
            .insert(&name(n).expect("name"), principal_key(1, n));
    }
    mem
}

fn bench_append(c: &mut Criterion, cluster: &memlineage_pgtest::Cluster, dir: &std::path::Path) {
    let mut g = c.benchmark_group("pg_vs_sqlite");
    for batch in [1usize, 256] {
        let sqlite = fresh_memory(&dir.join(format!("b{batch}.sqlite")), 1, 256).expect("sqlite");
        let pg_store = StoreLocation::Postgres(cluster.database())
            .open(OpenMode::Create)
            .expect("postgres");
        let pg = fresh_memory_on(pg_store, 1, 256).expect("postgres");
        g.throughput(Throughput::Elements(batch as u64));
        for (backend, (mem, pool, mut workload)) in [("sqlite", sqlite), ("postgres", pg)] {
            g.bench_function(format!("append_b{batch}/{backend}"), |b| {
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
    }
    g.finish();
}

fn bench_retrieve(c: &mut Criterion, cluster: &memlineage_pgtest::Cluster) {
    let cache = default_cache_dir();
    let small = cached_store(&cache, 4096, 1, &mut |l| eprintln!("{l}")).expect("store");
    let sqlite = Memory::open(SqliteStore::open(&small.path).expect("open")).expect("memory");
    let to = StoreLocation::Postgres(cluster.database());
    let (pg, report) = sqlite
        .copy_to(&to, &mut |_, _, _| {})
        .expect("copy to PostgreSQL");
    eprintln!("copied {} entries to PostgreSQL", report.entries);
    let scope = Scope::new("acme").expect("scope");
    let qs = queries();
    let mut g = c.benchmark_group("pg_vs_sqlite");
    for (backend, mem) in [("sqlite", &sqlite), ("postgres", &pg)] {
        let mut q = 0;
        g.bench_function(format!("retrieve_verify_render_8/{backend}"), |b| {
            b.iter(|| {
                q = (q + 1) % qs.len();
                mem.search(&qs[q], &scope, 8).expect("search")
            })
        });
    }
    g.finish();
}

/// Four writers append a batch of 256 each, at once; one iteration is the four batches.
fn bench_writers(c: &mut Criterion, cluster: &memlineage_pgtest::Cluster) {
    const WRITERS: usize = 4;
    const BATCH: usize = 256;
    let url = cluster.database();
    let store = StoreLocation::Postgres(url.clone())
        .open(OpenMode::Create)
        .expect("postgres");
    let (_, pool, _) = fresh_memory_on(store, 1, 256).expect("postgres");
    let pool: Vec<EntryId> = pool;
    let mut g = c.benchmark_group("pg_writers");
    g.throughput(Throughput::Elements((WRITERS * BATCH) as u64));
    let handles: Vec<(Memory, Workload)> = (0..WRITERS)
        .map(|i| (writer_on(&url), Workload::new(100 + i as u64)))
        .collect();
    let mut handles: Vec<std::sync::Mutex<(Memory, Workload)>> =
        handles.into_iter().map(std::sync::Mutex::new).collect();
    let latencies = std::sync::Mutex::new(Vec::<Duration>::new());
    g.bench_function("4x_b256", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let batches: Vec<Vec<_>> = handles
                    .iter_mut()
                    .map(|h| {
                        let (_, w) = h.get_mut().expect("lock");
                        (0..BATCH)
                            .map(|_| w.next_request(&pool).expect("request"))
                            .collect()
                    })
                    .collect();
                let started = Instant::now();
                let latencies = &latencies;
                std::thread::scope(|s| {
                    for (h, reqs) in handles.iter().zip(batches) {
                        s.spawn(move || {
                            let guard = h.lock().expect("lock");
                            let t = Instant::now();
                            guard.0.write_batch(reqs).expect("writes");
                            latencies.lock().expect("lock").push(t.elapsed());
                        });
                    }
                });
                total += started.elapsed();
            }
            total
        })
    });
    g.finish();
    let mut lat = latencies.into_inner().expect("lock");
    lat.sort_unstable();
    if !lat.is_empty() {
        let pct = |q: f64| lat[((q * lat.len() as f64).ceil() as usize).clamp(1, lat.len()) - 1];
        eprintln!(
            "pg_writers/4x_b256: {} batches of {BATCH} (warm-up included), per batch write_batch p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; load average {}",
            lat.len(),
            pct(0.5).as_secs_f64() * 1e3,
            pct(0.99).as_secs_f64() * 1e3,
            pct(1.0).as_secs_f64() * 1e3,
            std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .trim()
        );
    }
}

fn postgres(c: &mut Criterion) {
    let Some(cluster) = memlineage_pgtest::Cluster::start() else {
        eprintln!("no PostgreSQL: nothing measured");
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    bench_append(c, &cluster, dir.path());
    bench_retrieve(c, &cluster);
    bench_writers(c, &cluster);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = postgres
}
criterion_main!(benches);
