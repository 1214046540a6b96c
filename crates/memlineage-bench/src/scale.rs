//! The scale run: the cost of each operation as the log grows from 10^3 to 10^6 entries,
//! printed as a table and drawn as a deterministic SVG.

use crate::error::BenchError;
use crate::fixtures::{self, OPERATOR, PRINCIPALS, Workload, principal_key};
use crate::generate::{self, REGISTRY_RECORDS, SCOPE};
use crate::stats::{Budget, Stats, measure, summarize};
use crate::sys;
use crate::table::fmt_ns;
use memlineage::store::StoreRead;
use memlineage::{Memory, SqliteStore};
use memlineage_core::entry::{Scope, SignedEntry};
use memlineage_core::merkle;
use memlineage_core::{EntryId, Hash256};
use serde::Serialize;
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// Sizes and budgets of a scale run.
#[derive(Clone, Debug)]
pub struct ScaleOptions {
    /// Quick mode; recorded for display only.
    pub quick: bool,
    /// Seed of keys, content and workload.
    pub seed: u64,
    /// Where generated stores are cached (default [`generate::default_cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Store sizes, ascending.
    pub sizes: Vec<u64>,
    /// Sampling budget of each timed operation.
    pub budget: Budget,
    /// Timed write batches (of 256) per size, after one warm-up batch.
    pub write_batches: usize,
}

impl Default for ScaleOptions {
    fn default() -> Self {
        ScaleOptions::new(false)
    }
}

impl ScaleOptions {
    /// 10^3 … 10^6 entries (quick: up to 10^5).
    pub fn new(quick: bool) -> ScaleOptions {
        let mut sizes = vec![1_000, 10_000, 100_000];
        if !quick {
            sizes.push(1_000_000);
        }
        ScaleOptions {
            quick,
            seed: 1,
            cache_dir: None,
            sizes,
            budget: if quick {
                Budget::new(250, 30, 2_000)
            } else {
                Budget::new(1_000, 100, 10_000)
            },
            write_batches: if quick { 4 } else { 12 },
        }
    }

    /// Tiny sizes, for tests of the scale run itself.
    pub fn tiny(cache_dir: PathBuf) -> ScaleOptions {
        ScaleOptions {
            quick: true,
            seed: 1,
            cache_dir: Some(cache_dir),
            sizes: vec![100, 400],
            budget: Budget::new(2, 3, 10),
            write_batches: 1,
        }
    }
}

/// The costs at one store size (medians and p99s in ns per operation).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScalePoint {
    /// Entries in the store.
    pub n: u64,
    /// Store file size, bytes.
    pub store_bytes: u64,
    /// `Memory::write_batch` of 256, per entry: median.
    pub write_ns: f64,
    /// Same, p99 over batches.
    pub write_p99_ns: f64,
    /// `Memory::prove_inclusion` of a random entry: median.
    pub inclusion_ns: f64,
    /// Same, p99.
    pub inclusion_p99_ns: f64,
    /// Mean inclusion proof length, in hashes (≈ log2 n).
    pub inclusion_hashes: f64,
    /// `Memory::prove_consistency` from a random older size: median.
    pub consistency_ns: f64,
    /// Same, p99.
    pub consistency_p99_ns: f64,
    /// `Memory::search` of 8 (full-text search, verify, render): median.
    pub retrieve_8_ns: f64,
    /// Same, p99.
    pub retrieve_8_p99_ns: f64,
    /// `Memory::recall` of the same 8 by id (verify, render; no search): median.
    pub recall_8_ns: f64,
    /// Signature + inclusion proof verification of one entry (proof from the store): median.
    pub entry_verify_ns: f64,
    /// Same, p99.
    pub entry_verify_p99_ns: f64,
    /// Peak RSS while measuring this size (`VmHWM`, reset before each size), KiB.
    pub peak_rss_kib: Option<u64>,
}

/// The result of a scale run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScaleReport {
    /// The machine, in words.
    pub machine: String,
    /// The seed.
    pub seed: u64,
    /// Whether peak RSS was reset between sizes (else it is the process peak so far).
    pub rss_reset: bool,
    /// One point per size, ascending.
    pub points: Vec<ScalePoint>,
}

/// Runs the scale benchmark. Stores are generated (and cached) first, outside the
/// measurements; peak RSS is reset before each size where the kernel allows it.
pub fn scale(
    opts: &ScaleOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<ScaleReport, BenchError> {
    let cache = opts
        .cache_dir
        .clone()
        .unwrap_or_else(generate::default_cache_dir);
    let mut sizes = opts.sizes.clone();
    sizes.sort_unstable();
    sizes.dedup();
    let mut points = Vec::new();
    let mut rss_reset = true;
    for n in sizes {
        let g = generate::cached_store(&cache, n, opts.seed, progress)?;
        progress(&format!("scale: measuring at n = {n}"));
        rss_reset &= sys::reset_peak_rss();
        let mut p = measure_at(&g.path, &cache, n, opts)?;
        p.store_bytes = g.bytes;
        p.peak_rss_kib = sys::peak_rss_kib();
        points.push(p);
    }
    Ok(ScaleReport {
        machine: sys::machine(),
        seed: opts.seed,
        rss_reset,
        points,
    })
}

fn random_ids(
    mem: &Memory<SqliteStore>,
    workload: &mut Workload,
    count: usize,
) -> Result<Vec<(EntryId, SignedEntry)>, BenchError> {
    let size = mem.size()?;
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let idx = REGISTRY_RECORDS + workload.below(size - REGISTRY_RECORDS);
        let stored = mem
            .store()
            .entry_by_index(idx)?
            .ok_or_else(|| BenchError::Invalid(format!("entry {idx} is missing")))?;
        let entry = SignedEntry::from_leaf(&stored.leaf).map_err(BenchError::core)?;
        out.push((stored.id, entry));
    }
    Ok(out)
}

fn measure_at(
    path: &std::path::Path,
    cache: &std::path::Path,
    n: u64,
    opts: &ScaleOptions,
) -> Result<ScalePoint, BenchError> {
    let budget = &opts.budget;
    let mem = Memory::open(SqliteStore::open(path)?)?;
    let size = mem.size()?;
    let mut workload = Workload::new(opts.seed ^ n);
    let picked = random_ids(&mem, &mut workload, 64)?;

    // Inclusion proofs.
    let mut hashes = 0usize;
    for (id, _) in &picked {
        hashes += mem.prove_inclusion(id, Some(size))?.path.len();
    }
    let mut k = 0usize;
    let incl = measure(budget, || {
        k = (k + 1) % picked.len();
        black_box(mem.prove_inclusion(&picked[k].0, Some(size)).is_ok());
    });

    // Consistency proofs.
    let olds: Vec<u64> = (0..64).map(|_| 1 + workload.below(size - 1)).collect();
    let cons = measure(budget, || {
        k = (k + 1) % olds.len();
        black_box(mem.prove_consistency(olds[k], size).is_ok());
    });

    // Retrieval and recall of 8.
    let scope = Scope::new(SCOPE).map_err(BenchError::core)?;
    let queries = fixtures::queries();
    let mut qi = 0usize;
    let retrieve = measure(budget, || {
        qi = (qi + 1) % queries.len();
        black_box(mem.search(&queries[qi], &scope, 8).is_ok());
    });
    let mut id_sets = Vec::new();
    for q in &queries {
        let ids: Vec<EntryId> = mem
            .search(q, &scope, 8)?
            .entries
            .iter()
            .map(|v| v.entry.id())
            .collect();
        if !ids.is_empty() {
            id_sets.push(ids);
        }
    }
    let recall = if id_sets.is_empty() {
        summarize(&[], 1)
    } else {
        measure(budget, || {
            qi = (qi + 1) % id_sets.len();
            black_box(mem.recall(&id_sets[qi]).is_ok());
        })
    };

    // Entry verification with proofs from the store.
    let mut checks = Vec::with_capacity(picked.len());
    for (id, entry) in &picked {
        let proof = mem.prove_inclusion(id, Some(size))?;
        let key = principal_key(opts.seed, &entry.body().writer).verifying_key();
        let path: Vec<Hash256> = proof.path.iter().map(|h| h.0).collect();
        checks.push((entry.clone(), proof.index, path, proof.root.0, key));
    }
    let verify_one = |j: usize| {
        let (entry, index, path, root, key) = &checks[j];
        let lh = merkle::leaf_hash(&entry.to_leaf());
        merkle::verify_inclusion(&lh, *index, size, path, root).is_ok()
            && entry.verify_signature(key).is_ok()
    };
    if !(0..checks.len()).all(verify_one) {
        return Err(BenchError::Core(format!(
            "an entry of the store of {n} does not verify"
        )));
    }
    let mut j = 0usize;
    let verify = measure(budget, || {
        j = (j + 1) % checks.len();
        black_box(verify_one(black_box(j)));
    });
    drop(mem);

    let write = write_at(path, cache, opts)?;
    Ok(ScalePoint {
        n,
        store_bytes: 0,
        write_ns: write.median_ns,
        write_p99_ns: write.p99_ns,
        inclusion_ns: incl.median_ns,
        inclusion_p99_ns: incl.p99_ns,
        inclusion_hashes: hashes as f64 / picked.len().max(1) as f64,
        consistency_ns: cons.median_ns,
        consistency_p99_ns: cons.p99_ns,
        retrieve_8_ns: retrieve.median_ns,
        retrieve_8_p99_ns: retrieve.p99_ns,
        recall_8_ns: recall.median_ns,
        entry_verify_ns: verify.median_ns,
        entry_verify_p99_ns: verify.p99_ns,
        peak_rss_kib: None,
    })
}

/// Durable writes of batches of 256 into a copy of the store: per-entry ns per batch.
fn write_at(
    path: &std::path::Path,
    cache: &std::path::Path,
    opts: &ScaleOptions,
) -> Result<Stats, BenchError> {
    let scratch = tempfile::Builder::new()
        .prefix("scratch-")
        .tempdir_in(cache)
        .map_err(|e| BenchError::io(cache, e))?;
    let copy = scratch.path().join("copy.sqlite");
    std::fs::copy(path, &copy).map_err(|e| BenchError::io(path, e))?;
    let mem = Memory::open(SqliteStore::open(&copy)?)?;
    for name in std::iter::once(OPERATOR).chain(PRINCIPALS.iter().map(|(n, _)| *n)) {
        mem.keys().insert(name, principal_key(opts.seed, name));
    }
    let mut workload = Workload::new(opts.seed ^ 0x77);
    let pool: Vec<EntryId> = random_ids(&mem, &mut workload, 256)?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let mut samples = Vec::new();
    for i in 0..=opts.write_batches.max(1) {
        let reqs: Vec<_> = (0..256).map(|_| workload.next_request(&pool)).collect();
        let t = Instant::now();
        mem.write_batch(reqs)?;
        if i > 0 {
            samples.push(t.elapsed().as_nanos() as f64 / 256.0);
        }
    }
    Ok(summarize(&samples, 256))
}

/// The scale report as an aligned text table, with the growth of each cost between the
/// smallest and the largest size.
pub fn render_scale_table(report: &ScaleReport) -> String {
    let header = [
        "n",
        "store",
        "write/entry",
        "incl. proof",
        "hashes",
        "consistency",
        "retrieve 8",
        "recall 8",
        "entry verify",
        "peak RSS",
    ];
    let rows: Vec<Vec<String>> = report
        .points
        .iter()
        .map(|p| {
            vec![
                p.n.to_string(),
                format!("{:.0} MB", p.store_bytes as f64 / 1e6),
                fmt_ns(p.write_ns),
                fmt_ns(p.inclusion_ns),
                format!("{:.1}", p.inclusion_hashes),
                fmt_ns(p.consistency_ns),
                fmt_ns(p.retrieve_8_ns),
                fmt_ns(p.recall_8_ns),
                fmt_ns(p.entry_verify_ns),
                p.peak_rss_kib.map_or_else(
                    || "-".to_string(),
                    |k| format!("{:.0} MiB", k as f64 / 1024.0),
                ),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            s.push_str(&" ".repeat(w - c.chars().count()));
            s.push_str(c);
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&mut out, &header.map(str::to_string));
    line(
        &mut out,
        &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
    );
    for r in &rows {
        line(&mut out, r);
    }
    if let (Some(a), Some(b)) = (report.points.first(), report.points.last())
        && b.n > a.n
    {
        let g = |x: f64, y: f64| format!("×{:.2}", y / x);
        let _ = writeln!(
            out,
            "\nfrom n = {} to n = {}: log2 n {}, write {}, inclusion {}, consistency {}, retrieve 8 {}, recall 8 {}, entry verify {}",
            a.n,
            b.n,
            g((a.n as f64).log2(), (b.n as f64).log2()),
            g(a.write_ns, b.write_ns),
            g(a.inclusion_ns, b.inclusion_ns),
            g(a.consistency_ns, b.consistency_ns),
            g(a.retrieve_8_ns, b.retrieve_8_ns),
            g(a.recall_8_ns, b.recall_8_ns),
            g(a.entry_verify_ns, b.entry_verify_ns),
        );
    }
    if !report.rss_reset {
        out.push_str(
            "(peak RSS could not be reset between sizes: it is the process peak so far)\n",
        );
    }
    out
}

const SERIES: [(&str, &str); 6] = [
    ("write / entry (batch 256)", "#1f77b4"),
    ("inclusion proof", "#ff7f0e"),
    ("consistency proof", "#2ca02c"),
    ("retrieve 8 (search)", "#d62728"),
    ("recall 8 (by id)", "#9467bd"),
    ("entry verify", "#8c564b"),
];

fn series_values(p: &ScalePoint) -> [f64; 6] {
    [
        p.write_ns,
        p.inclusion_ns,
        p.consistency_ns,
        p.retrieve_8_ns,
        p.recall_8_ns,
        p.entry_verify_ns,
    ]
}

/// Whole decades from `a` to `b` (at most 24 of them).
fn decades(a: f64, b: f64) -> impl Iterator<Item = f64> {
    let (a, b) = (a.round() as i32, b.round() as i32);
    (a..=b.min(a.saturating_add(24))).map(f64::from)
}

fn fmt_count(n: f64) -> String {
    if n >= 1e6 {
        format!("{}M", n / 1e6)
    } else if n >= 1e3 {
        format!("{}k", n / 1e3)
    } else {
        format!("{n}")
    }
}

/// A deterministic SVG of the report: left, median cost per operation against n (both axes
/// log-scale); right, peak RSS against n (log-scale x). Same report, same bytes.
pub fn scale_svg(report: &ScaleReport) -> String {
    const W: f64 = 980.0;
    const H: f64 = 460.0;
    const TOP: f64 = 50.0;
    const BOTTOM: f64 = 380.0;
    let (l0, l1) = (80.0, 560.0);
    let (r0, r1) = (680.0, 940.0);
    let pts = &report.points;
    let ns: Vec<f64> = pts.iter().map(|p| p.n.max(1) as f64).collect();
    let lx_min = ns
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let lx_max = ns.iter().copied().fold(0.0, f64::max).log10().ceil();
    let (lx_min, lx_max) = if lx_min.is_finite() && lx_max.is_finite() && lx_max > lx_min {
        (lx_min, lx_max)
    } else if lx_min.is_finite() {
        (lx_min, lx_min + 1.0)
    } else {
        (3.0, 6.0)
    };
    let xmap = |n: f64, a: f64, b: f64| a + (n.log10() - lx_min) / (lx_max - lx_min) * (b - a);
    let vals: Vec<f64> = pts
        .iter()
        .flat_map(series_values)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    let ly_min = vals
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let ly_max = vals.iter().copied().fold(0.0, f64::max).log10().ceil();
    let (ly_min, ly_max) = if ly_min.is_finite() && ly_max.is_finite() && ly_max > ly_min {
        (ly_min, ly_max)
    } else {
        (3.0, 6.0)
    };
    let ymap = |v: f64| BOTTOM - (v.log10() - ly_min) / (ly_max - ly_min) * (BOTTOM - TOP);
    let rss: Vec<f64> = pts
        .iter()
        .map(|p| p.peak_rss_kib.map_or(0.0, |k| k as f64 / 1024.0))
        .collect();
    let rss_top = {
        let m = rss.iter().copied().fold(0.0, f64::max).max(1.0);
        let step = 10f64.powf(m.log10().floor());
        (m / step).ceil() * step
    };
    let rmap = |v: f64| BOTTOM - v / rss_top * (BOTTOM - TOP);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="24" font-size="15" text-anchor="middle">MemLineage: cost per operation as the log grows</text>"#,
        W / 2.0
    );
    // Axes and grids.
    for (a, b, title) in [
        (l0, l1, "median time per operation (log scale)"),
        (r0, r1, "peak RSS, MiB"),
    ] {
        let _ = writeln!(
            s,
            r##"<rect x="{a:.1}" y="{TOP:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#333"/>"##,
            b - a,
            BOTTOM - TOP
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{title}</text>"#,
            (a + b) / 2.0,
            TOP - 8.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">entries in the log, n (log scale)</text>"#,
            (a + b) / 2.0,
            BOTTOM + 36.0
        );
        for d in decades(lx_min, lx_max) {
            let x = xmap(10f64.powf(d), a, b);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{TOP:.1}" x2="{x:.1}" y2="{BOTTOM:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                BOTTOM + 16.0,
                fmt_count(10f64.powf(d))
            );
        }
    }
    for d in decades(ly_min, ly_max) {
        let y = ymap(10f64.powf(d));
        let _ = writeln!(
            s,
            r##"<line x1="{l0:.1}" y1="{y:.1}" x2="{l1:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
            l0 - 6.0,
            y + 4.0,
            fmt_ns(10f64.powf(d))
        );
    }
    for i in 0..=4 {
        let v = rss_top * f64::from(i) / 4.0;
        let y = rmap(v);
        let _ = writeln!(
            s,
            r##"<line x1="{r0:.1}" y1="{y:.1}" x2="{r1:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{v:.0}</text>"##,
            r0 - 6.0,
            y + 4.0
        );
    }
    // Series.
    for (si, (name, colour)) in SERIES.iter().enumerate() {
        let coords: Vec<(f64, f64)> = pts
            .iter()
            .filter_map(|p| {
                let v = series_values(p)[si];
                (v.is_finite() && v > 0.0).then(|| (xmap(p.n.max(1) as f64, l0, l1), ymap(v)))
            })
            .collect();
        let line: Vec<String> = coords
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"#,
            line.join(" ")
        );
        for (x, y) in &coords {
            let _ = writeln!(
                s,
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="3" fill="{colour}"/>"#
            );
        }
        let ly = H - 50.0 + 16.0 * (si / 3) as f64;
        let lx = l0 + 170.0 * (si % 3) as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{ly:.1}">{name}</text>"#,
            ly - 4.0,
            lx + 18.0,
            ly - 4.0,
            lx + 24.0
        );
    }
    let coords: Vec<String> = pts
        .iter()
        .zip(&rss)
        .map(|(p, v)| format!("{:.1},{:.1}", xmap(p.n.max(1) as f64, r0, r1), rmap(*v)))
        .collect();
    let _ = writeln!(
        s,
        r##"<polyline points="{}" fill="none" stroke="#17becf" stroke-width="2"/>"##,
        coords.join(" ")
    );
    for c in &coords {
        if let Some((x, y)) = c.split_once(',') {
            let _ = writeln!(s, r##"<circle cx="{x}" cy="{y}" r="3" fill="#17becf"/>"##);
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(n: u64, scale: f64) -> ScalePoint {
        ScalePoint {
            n,
            store_bytes: n * 1500,
            write_ns: 60_000.0,
            write_p99_ns: 70_000.0,
            inclusion_ns: 2_000.0 * scale,
            inclusion_p99_ns: 3_000.0 * scale,
            inclusion_hashes: (n as f64).log2(),
            consistency_ns: 3_000.0 * scale,
            consistency_p99_ns: 4_000.0 * scale,
            retrieve_8_ns: 500_000.0,
            retrieve_8_p99_ns: 600_000.0,
            recall_8_ns: 300_000.0,
            entry_verify_ns: 36_000.0,
            entry_verify_p99_ns: 40_000.0,
            peak_rss_kib: Some(20_000),
        }
    }

    #[test]
    fn svg_is_deterministic_and_well_formed() {
        let report = ScaleReport {
            machine: "test".into(),
            seed: 1,
            rss_reset: true,
            points: vec![point(1_000, 1.0), point(1_000_000, 2.0)],
        };
        let a = scale_svg(&report);
        assert_eq!(a, scale_svg(&report.clone()));
        assert!(a.starts_with("<svg") && a.trim_end().ends_with("</svg>"));
        assert_eq!(a.matches("<polyline").count(), 7);
        assert!(a.contains(">1k<") && a.contains(">1M<"));
        let t = render_scale_table(&report);
        assert!(t.contains("1000000") && t.contains("log2 n ×2.00"), "{t}");
        let empty = ScaleReport {
            points: Vec::new(),
            ..report
        };
        assert!(scale_svg(&empty).contains("</svg>"));
    }

    #[test]
    fn tiny_scale_run() {
        let dir = tempfile::tempdir().unwrap();
        let report = scale(&ScaleOptions::tiny(dir.path().to_path_buf()), &mut |_| {}).unwrap();
        assert_eq!(report.points.len(), 2);
        let (a, b) = (&report.points[0], &report.points[1]);
        assert_eq!((a.n, b.n), (100, 400));
        assert!(b.inclusion_hashes > a.inclusion_hashes);
        for p in &report.points {
            assert!(p.write_ns > 0.0 && p.inclusion_ns > 0.0 && p.entry_verify_ns > 0.0);
            assert!(p.store_bytes > 0);
        }
        assert!(scale_svg(&report).contains("<circle"));
    }
}
