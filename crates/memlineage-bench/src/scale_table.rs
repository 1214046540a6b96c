//! The scale run's text table.

use crate::scale::ScaleReport;
use crate::table::{fmt_ns, fmt_rate};
use std::fmt::Write as _;

fn mib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "-".to_string(),
        |k| format!("{:.0} MiB", k as f64 / 1024.0),
    )
}

/// The scale report as an aligned text table, with the growth of each cost between the
/// smallest and the largest size and the PASS/FAIL lines of the growth checks.
pub fn render_scale_table(report: &ScaleReport) -> String {
    let header = [
        "n",
        "store",
        "write/entry",
        "(mean)",
        "incl. proof",
        "hashes",
        "consistency",
        "retrieve 8",
        "recall 8",
        "earliest/key",
        "keys (hit)",
        "entry verify",
        "verify store",
        "peak RSS",
        "verify RSS",
    ];
    let rows: Vec<Vec<String>> = report
        .points
        .iter()
        .map(|p| {
            vec![
                p.n.to_string(),
                format!("{:.0} MB", p.store_bytes as f64 / 1e6),
                fmt_ns(p.write_ns),
                fmt_ns(p.write_mean_ns),
                fmt_ns(p.inclusion_ns),
                format!("{:.1}", p.inclusion_hashes),
                fmt_ns(p.consistency_ns),
                fmt_ns(p.retrieve_8_ns),
                fmt_ns(p.recall_8_ns),
                fmt_ns(p.earliest_per_key_ns),
                format!("{} ({})", p.earliest_keys.0, p.earliest_keys.1),
                fmt_ns(p.entry_verify_ns),
                fmt_rate(p.verify_store_per_second),
                mib(p.peak_rss_kib),
                mib(p.verify_peak_rss_kib),
            ]
        })
        .collect();
    let mut out = aligned(&header, &rows);
    if let (Some(a), Some(b)) = (report.points.first(), report.points.last())
        && b.n > a.n
    {
        let g = |x: f64, y: f64| format!("×{:.2}", y / x);
        let _ = writeln!(
            out,
            "\nfrom n = {} to n = {}: log2 n {}, write {} (mean {}), inclusion {}, consistency {}, retrieve 8 {}, recall 8 {}, earliest carrier per key {}, entry verify {}",
            a.n,
            b.n,
            g((a.n as f64).log2(), (b.n as f64).log2()),
            g(a.write_ns, b.write_ns),
            g(a.write_mean_ns, b.write_mean_ns),
            g(a.inclusion_ns, b.inclusion_ns),
            g(a.consistency_ns, b.consistency_ns),
            g(a.retrieve_8_ns, b.retrieve_8_ns),
            g(a.recall_8_ns, b.recall_8_ns),
            g(a.earliest_per_key_ns, b.earliest_per_key_ns),
            g(a.entry_verify_ns, b.entry_verify_ns),
        );
    }
    if !report.retrieval.is_empty() {
        out.push('\n');
        out.push_str(&retrieval_table(&report.retrieval));
    }
    if let Some(k) = report.write_peak_rss_kib {
        let _ = writeln!(
            out,
            "peak RSS during the durable writes (all sizes open at once): {}",
            mib(Some(k))
        );
    }
    if !report.checks.is_empty() {
        out.push('\n');
    }
    for c in &report.checks {
        let _ = writeln!(out, "{}  {}: {}", c.verdict(), c.name, c.detail);
    }
    if !report.rss_reset {
        out.push_str(
            "(peak RSS could not be reset between sizes: it is the process peak so far)\n",
        );
    }
    out
}

/// `rows` under `header`, right-aligned in columns, with a rule under the header.
fn aligned(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
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
            s.push_str(&" ".repeat(w.saturating_sub(c.chars().count())));
            s.push_str(c);
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(
        &mut out,
        &header.iter().map(|h| h.to_string()).collect::<Vec<_>>(),
    );
    line(
        &mut out,
        &widths.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
    );
    for r in rows {
        line(&mut out, r);
    }
    out
}

/// The retrieval rows (`scale_retrieval.rs`) as a second table.
fn retrieval_table(points: &[crate::RetrievalPoint]) -> String {
    let opt = |x: Option<f64>| x.map_or_else(|| "-".to_string(), fmt_ns);
    let bytes = |b: Option<u64>| mib(b.map(|b| b / 1024));
    let header = [
        "n",
        "lexical top-8",
        "lexical 8",
        "(p99)",
        "(cold)",
        "lex. index",
        "(build)",
        "semantic 8",
        "(p99)",
        "hybrid 8",
        "vector index",
        "(embed)",
    ];
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            vec![
                p.n.to_string(),
                fmt_ns(p.lexical_topk_ns),
                fmt_ns(p.lexical_8_ns),
                fmt_ns(p.lexical_8_p99_ns),
                fmt_ns(p.lexical_8_cold_ns),
                bytes(Some(p.lexical_index_bytes)),
                format!("{:.1} s", p.lexical_build_s),
                opt(p.semantic_8_ns),
                opt(p.semantic_8_p99_ns),
                opt(p.hybrid_8_ns),
                bytes(p.vector_index_bytes),
                p.embed_s
                    .map_or_else(|| "-".to_string(), |s| format!("{s:.0} s")),
            ]
        })
        .collect();
    aligned(&header, &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::tests::{point, report_of};

    #[test]
    fn table_has_growth_and_check_lines() {
        let t = render_scale_table(&report_of(vec![point(1_000, 1.0), point(1_000_000, 2.0)]));
        assert!(t.contains("1000000") && t.contains("log2 n ×2.00"), "{t}");
        assert!(t.contains("80,000/s") && t.contains("29 MiB"), "{t}");
        assert_eq!(
            t.lines().filter(|l| l.starts_with("PASS  ")).count(),
            5,
            "{t}"
        );
    }
}
