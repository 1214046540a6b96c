//! Semantic retrieval at a size whose embedding this machine cannot afford (issue 17's target:
//! semantic retrieve + verify + render of 8 ≤ 15 ms p50 at 10^6 entries, query embedding
//! included; vector index ≤ 2 GiB).
//!
//! ```text
//! cargo run --release -p memlineage-bench --features models --example semantic_scale -- \
//!     [N (1000000)] [REAL (2000)] [OUT_DIR (target/semantic-scale)]
//! ```
//!
//! **What is real and what is not.** Embedding 10^6 entries with all-MiniLM-L6-v2 takes about
//! 13 hours on this 2-core CPU (21.6 entries/s), so the store's vectors are made in two parts:
//! the first `REAL` embeddable entries are embedded by the model, and every other entry gets a
//! *synthetic* vector — a seeded random mix of three of those model vectors plus a little
//! Gaussian noise, normalised — so that the index holds vectors distributed like the model's
//! (clustered on the same unit sphere), not uniform noise, which is the worst case of an HNSW
//! graph. Each row is bound to its entry exactly as the handle binds its own
//! (`search::stored::row`) and stored through the backend. Everything measured afterwards is
//! the product path: a handle opened on the store with the real model attached
//! (`Memory::with_embedder`) checks every stored row's binding and shape and builds its HNSW
//! index from them (`build`), then each retrieval embeds the query with the model, searches
//! the index, and verifies and renders the 8 entries (`Memory::search_with`, `Semantic`). What
//! the synthetic part cannot tell is retrieval *quality*: that is measured on real vectors by
//! `memlineage-retrieval-eval` (`docs/retrieval.md`, "Quality, measured").
//!
//! The generated store (`memlineage bench --scale`'s, cached) is copied to `OUT_DIR` first: the
//! cached store stays as the scale run expects it (no embeddings table rows). At the end the
//! index is saved (`Memory::save_vector_index`) and a handle opened with it
//! (`Memory::with_embedder_saved`): the time of that open beside the build's.

use memlineage::search::SearchMode;
use memlineage::search::embedder::load_default_embedder;
use memlineage::search::stored;
use memlineage::{Memory, SqliteStore};
use memlineage_bench::stats::{Budget, measure};
use memlineage_bench::{cached_store, default_cache_dir, fixtures, fmt_ns};
use memlineage_core::entry::Scope;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Entries read, vectors made and rows saved at a time.
const CHUNK: u64 = 8_192;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: u64 = args.first().map_or(Ok(1_000_000), |s| s.parse())?;
    let real: usize = args.get(1).map_or(Ok(2_000), |s| s.parse())?;
    let out = args
        .get(2)
        .map_or_else(|| PathBuf::from("target/semantic-scale"), PathBuf::from);
    let embedder = load_default_embedder()?;
    let model = embedder.model_id().to_string();
    let g = cached_store(&default_cache_dir(), n, 1, &mut |l| eprintln!("{l}"))?;
    std::fs::create_dir_all(&out)?;
    let path = out.join(format!("store-n{n}-real{real}.sqlite"));
    if !path.exists() {
        let t = Instant::now();
        let part = path.with_extension("partial");
        std::fs::copy(&g.path, &part)?;
        fill(&part, &*embedder, &model, real)?;
        std::fs::rename(&part, &path)?;
        eprintln!("vectors stored in {:.1} s", t.elapsed().as_secs_f64());
    }
    let rss_before = memlineage_bench::sys::rss_kib().unwrap_or(0);
    let t = Instant::now();
    let mem = Memory::open(SqliteStore::open(&path)?)?.with_embedder(embedder)?;
    let build_s = t.elapsed().as_secs_f64();
    let status = mem.vector_index_status().ok_or("no vector index")?;
    let scope = Scope::new(memlineage_bench::SCOPE)?;
    let queries = fixtures::queries();
    let mut qi = 0usize;
    let semantic = measure(&Budget::new(3_000, 100, 5_000), || {
        qi = (qi + 1) % queries.len();
        black_box(
            mem.search_with(&queries[qi], &scope, 8, SearchMode::Semantic)
                .map(|r| r.entries.len()),
        )
        .ok();
    });
    let found = mem
        .search_with(&queries[0], &scope, 8, SearchMode::Semantic)?
        .entries
        .len();
    let index_bytes = mem.vector_index_bytes().unwrap_or(0);
    let rss = memlineage_bench::sys::peak_rss_kib().unwrap_or(0);
    // The saved index (`Memory::with_embedder_saved`): saving it, then opening with it.
    let vectors = out.join(format!("vectors-n{n}-real{real}"));
    let t = Instant::now();
    mem.save_vector_index(&vectors)?;
    let save_s = t.elapsed().as_secs_f64();
    drop(mem);
    let t = Instant::now();
    let reopened = Memory::open(SqliteStore::open(&path)?)?
        .with_embedder_saved(load_default_embedder()?, &vectors)?;
    let load_s = t.elapsed().as_secs_f64();
    let note = reopened
        .vector_index_status()
        .and_then(|s| s.snapshot)
        .unwrap_or_default();
    let again = reopened
        .search_with(&queries[0], &scope, 8, SearchMode::Semantic)?
        .entries
        .len();
    println!(
        "n {n}: {} vectors indexed ({} loaded from the store, {} embedded, {} refused), \
         {real} of them from the model; build {build_s:.1} s",
        status.indexed,
        status.loaded,
        status.embedded,
        status.rejected.len()
    );
    println!(
        "semantic retrieve + verify + render of 8 (query embedding included): p50 {}  p99 {}  \
         ({} samples; {found} entries returned)",
        fmt_ns(semantic.median_ns),
        fmt_ns(semantic.p99_ns),
        semantic.samples
    );
    println!(
        "vector index {:.0} MiB; process peak RSS {:.0} MiB (before the handle: {:.0} MiB)",
        index_bytes as f64 / 1048576.0,
        rss as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    println!(
        "saved index: saved in {save_s:.1} s; an open with it took {load_s:.1} s against \
         {build_s:.1} s building ({note}; {again} entries returned)"
    );
    Ok(())
}

/// Stores a vector for every embeddable entry of the store at `path`: the first `real` from
/// the model, the others synthetic (see the module docs).
fn fill(
    path: &std::path::Path,
    embedder: &dyn memlineage::search::TextEmbedder,
    model: &str,
    real: usize,
) -> Res<()> {
    let mem = Memory::open(SqliteStore::open(path)?)?;
    let backend = mem.unchecked().backend();
    let size = mem.size()?;
    let mut basis: Vec<Vec<f32>> = Vec::with_capacity(real);
    let mut rng = ChaCha20Rng::seed_from_u64(17);
    let mut start = 0u64;
    while start < size {
        let views = mem.log(start, CHUNK.min(size - start))?;
        let Some(last) = views.last().map(|v| v.index) else {
            break;
        };
        let items: Vec<_> = views
            .iter()
            .filter(|v| !v.entry.body().kind.is_control())
            .filter_map(|v| {
                let text = std::str::from_utf8(v.content.as_deref()?).ok()?;
                Some((v.index, v.entry.id(), v.entry.body().content_hash, text))
            })
            .collect();
        let mut rows = Vec::with_capacity(items.len());
        let wanted = real.saturating_sub(basis.len()).min(items.len());
        if wanted > 0 {
            let texts: Vec<&str> = items[..wanted].iter().map(|i| i.3).collect();
            for (i, v) in items[..wanted].iter().zip(embedder.embed(&texts)?) {
                rows.push(stored::row(i.0, model, &i.1, &i.2, &v));
                basis.push(v);
            }
            eprintln!("{} model vectors", basis.len());
        }
        if basis.is_empty() {
            return Err("no embeddable entry to take model vectors from".into());
        }
        for i in &items[wanted..] {
            let v = synthetic(&basis, &mut rng);
            rows.push(stored::row(i.0, model, &i.1, &i.2, &v));
        }
        backend.save_embeddings(&rows)?;
        start = last + 1;
        if start % (16 * CHUNK) < CHUNK {
            eprintln!("{start} of {size} entries");
        }
    }
    Ok(())
}

/// A unit vector near the model's: a random convex mix of three basis vectors plus Gaussian
/// noise of standard deviation 0.02 per component, normalised.
fn synthetic(basis: &[Vec<f32>], rng: &mut ChaCha20Rng) -> Vec<f32> {
    let pick = |rng: &mut ChaCha20Rng| &basis[(rng.next_u64() % basis.len() as u64) as usize];
    let (a, b, c) = (pick(rng), pick(rng), pick(rng));
    let w: [f32; 3] = [unit(rng), unit(rng), unit(rng)];
    let total = w.iter().sum::<f32>().max(f32::EPSILON);
    let mut v: Vec<f32> = (0..a.len())
        .map(|k| (w[0] * a[k] + w[1] * b[k] + w[2] * c[k]) / total + 0.02 * gaussian(rng))
        .collect();
    let norm = v
        .iter()
        .map(|x| x * x)
        .sum::<f32>()
        .sqrt()
        .max(f32::EPSILON);
    v.iter_mut().for_each(|x| *x /= norm);
    v
}

/// Uniform in (0, 1].
fn unit(rng: &mut ChaCha20Rng) -> f32 {
    ((rng.next_u64() >> 40) as f32 + 1.0) / (1u64 << 24) as f32
}

/// Standard normal (Box–Muller).
fn gaussian(rng: &mut ChaCha20Rng) -> f32 {
    let (u1, u2) = (unit(rng), unit(rng));
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}
