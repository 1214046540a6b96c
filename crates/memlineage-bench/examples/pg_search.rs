//! Where a verified retrieval on PostgreSQL spends its time: the generated store of 4096
//! entries copied into a throwaway cluster (`memlineage-pgtest`), then `Memory::search` of 8
//! (the `retrieve_verify_render_8` row) run many times by one handle, with
//! `pg_stat_statements` on: the median and p99 per retrieval, then every statement the
//! retrievals ran — calls per retrieval, mean time — so that round trips can be counted.
//!
//! ```text
//! cargo run --release -p memlineage-bench --features postgres --example pg_search -- [CALLS]
//! ```
//!
//! `CALLS` (default 300) retrievals are timed after 30 untimed ones (the handle as an agent
//! holds it: what it verified before is remembered, `docs/store.md`, "What a handle
//! remembers").

use memlineage::{Memory, SqliteStore, StoreLocation};
use memlineage_bench::fixtures::queries;
use memlineage_bench::{cached_store, default_cache_dir, fmt_ns};
use memlineage_core::entry::Scope;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("pg_search: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let calls: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 300,
    };
    let cluster = memlineage_pgtest::Cluster::start().ok_or("PostgreSQL is not installed")?;
    let mut admin = cluster.admin();
    admin.batch_execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")?;
    cluster.restart("fast");
    let url = cluster.database();
    let mut db = postgres::Client::connect(&url, postgres::NoTls)?;
    db.batch_execute("CREATE EXTENSION pg_stat_statements")?;
    let small = cached_store(&default_cache_dir(), 4096, 1, &mut |l| eprintln!("{l}"))
        .map_err(|e| format!("generating the store: {e}"))?;
    let sqlite = Memory::open(SqliteStore::open(&small.path)?)?;
    let (pg, report) = sqlite.copy_to(&StoreLocation::Postgres(url), &mut |_, _, _| {})?;
    println!("copied {} entries to PostgreSQL", report.entries);
    let scope = Scope::new("acme")?;
    let qs = queries();
    for q in qs.iter().cycle().take(30) {
        pg.search(q, &scope, 8)?;
    }
    db.batch_execute("SELECT pg_stat_statements_reset()")?;
    let mut times = Vec::with_capacity(calls);
    let mut returned = 0usize;
    for q in qs.iter().cycle().take(calls) {
        let t = Instant::now();
        returned += pg.search(q, &scope, 8)?.entries.len();
        times.push(t.elapsed().as_nanos());
    }
    times.sort_unstable();
    let at = |q: f64| times[((q * times.len() as f64).ceil() as usize).clamp(1, times.len()) - 1];
    println!(
        "{calls} retrievals: median {} p99 {} ({:.1} entries returned each)",
        fmt_ns(at(0.5) as f64),
        fmt_ns(at(0.99) as f64),
        returned as f64 / calls as f64
    );
    let rows = db.query(
        "SELECT calls, total_exec_time, mean_exec_time, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) \
         FROM pg_stat_statements WHERE calls > 0 AND query NOT LIKE '%pg_stat_statements%' \
         ORDER BY total_exec_time DESC",
        &[],
    )?;
    let mut statements = 0i64;
    println!("  per retrieval  mean ms  statement");
    for r in &rows {
        let (n, mean, query): (i64, f64, String) = (r.get(0), r.get(2), r.get(3));
        statements += n;
        println!(
            "  {:>13.2}  {:>7.3}  {query}",
            n as f64 / calls as f64,
            mean
        );
    }
    println!(
        "  {:.1} statements per retrieval",
        statements as f64 / calls as f64
    );
    Ok(())
}
