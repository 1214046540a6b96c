//! Runs one read-path operation of `memlineage bench` many times on a cached generated store,
//! for a profiler (the store is generated and cached first if needed):
//!
//! ```text
//! cargo build --profile profiling -p memlineage-bench --example read_profile
//! perf record --call-graph dwarf target/profiling/examples/read_profile search 4096 2000
//! perf record --call-graph dwarf target/profiling/examples/read_profile inclusion 1000000 20000
//! ```
//!
//! Arguments: the operation, the store size (default 4096), the number of calls (default
//! 5000). Operations: `search` (the `retrieve_verify_render_8` row), `recall`
//! (`recall_verify_render_8`), `inclusion` (`inclusion_proof_gen`), `consistency`
//! (`consistency_proof_gen`), and parts of a retrieval on their own: `fts` (the store's
//! full-text search alone), `verify8` (the batch signature check of 8 results alone),
//! `checkpoint` (`Memory::latest_checkpoint`).

use memlineage::store::SearchTerms;
use memlineage::{Memory, SqliteStore};
use memlineage_bench::fixtures::queries;
use memlineage_bench::{REGISTRY_RECORDS, cached_store, default_cache_dir};
use memlineage_core::EntryId;
use memlineage_core::entry::Scope;
use memlineage_core::keys::{self, BatchItem, Domain};
use std::hint::black_box;

/// The scope the generated store writes under (`generate::SCOPE`).
const SCOPE: &str = "acme/assistant/alice";

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let op = args.get(1).map_or("search", String::as_str).to_string();
    let arg = |i: usize, default: u64| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default);
    let (n, iters) = (arg(2, 4096), arg(3, 5000));
    if let Err(e) = run(&op, n, iters) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(op: &str, n: u64, iters: u64) -> Result<(), Box<dyn std::error::Error>> {
    let g = cached_store(&default_cache_dir(), n, 1, &mut |l| eprintln!("{l}"))?;
    let mem = Memory::open(SqliteStore::open(&g.path)?)?;
    let scope = Scope::new(SCOPE)?;
    let qs = queries();
    let size = mem.size()?;
    // Pseudo-random but fixed picks (a 64-bit LCG).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut below = |m: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % m.max(1)
    };
    // The results of each query (for `recall`), and 256 random entries (for `inclusion`).
    let id_sets: Vec<Vec<EntryId>> = qs
        .iter()
        .map(|q| mem.search(q, &scope, 8))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .map(|r| r.entries.iter().map(|v| v.entry.id()).collect::<Vec<_>>())
        .filter(|ids| !ids.is_empty())
        .collect();
    if id_sets.is_empty() {
        return Err("no query returned anything: the store is too small".into());
    }
    let mut ids = Vec::with_capacity(256);
    for _ in 0..256 {
        let idx = REGISTRY_RECORDS + below(size - REGISTRY_RECORDS);
        if let Some(e) = mem.log(idx, 1)?.pop() {
            ids.push(e.entry.id());
        }
    }
    // The first query's results and their signers' keys (for `verify8`).
    let views = mem.search(&qs[0], &scope, 8)?.entries;
    let registry = mem.registry()?;
    let signers: Vec<ed25519_dalek::VerifyingKey> = views
        .iter()
        .map(|v| {
            let b = v.entry.body();
            registry
                .signer_at(&b.writer, &b.key_id, v.index)
                .map(|(_, k)| *k)
        })
        .collect::<Result<_, _>>()?;
    let started = std::time::Instant::now();
    for k in 0..iters as usize {
        match op {
            "search" => {
                black_box(mem.search(&qs[k % qs.len()], &scope, 8)?);
            }
            "recall" => {
                black_box(mem.recall(&id_sets[k % id_sets.len()])?);
            }
            "inclusion" => {
                black_box(mem.prove_inclusion(&ids[k % ids.len()], Some(size))?);
            }
            "consistency" => {
                black_box(mem.prove_consistency(1 + below(size - 1), size)?);
            }
            "fts" => {
                let terms = SearchTerms::parse(&qs[k % qs.len()]);
                let backend = mem.unchecked().backend();
                black_box(backend.text_index().search(&terms, &scope, 8)?);
            }
            "verify8" => {
                let items: Vec<BatchItem<'_>> = views
                    .iter()
                    .zip(&signers)
                    .map(|(v, key)| BatchItem {
                        key,
                        bytes: v.entry.body_bytes(),
                        signature: v.entry.signature(),
                    })
                    .collect();
                keys::verify_batch(Domain::EntryV1, &items)?;
            }
            "checkpoint" => {
                black_box(mem.latest_checkpoint()?);
            }
            other => return Err(format!("unknown operation `{other}`").into()),
        }
    }
    let ns = started.elapsed().as_nanos() as f64 / iters as f64;
    println!(
        "{op} on n = {n}: {iters} calls, {:.1} µs per call",
        ns / 1e3
    );
    Ok(())
}
