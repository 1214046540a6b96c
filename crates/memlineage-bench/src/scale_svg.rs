//! The scale run's SVG plot: deterministic, no dependencies.

use crate::scale::{ScalePoint, ScaleReport};
use crate::table::fmt_ns;
use std::fmt::Write as _;

const SERIES: [(&str, &str); 7] = [
    ("write / entry (batch 256)", "#1f77b4"),
    ("inclusion proof", "#ff7f0e"),
    ("consistency proof", "#2ca02c"),
    ("retrieve 8 (search)", "#d62728"),
    ("recall 8 (by id)", "#9467bd"),
    ("entry verify", "#8c564b"),
    ("verify store / entry", "#e377c2"),
];

fn series_values(p: &ScalePoint) -> [f64; 7] {
    [
        p.write_ns,
        p.inclusion_ns,
        p.consistency_ns,
        p.retrieve_8_ns,
        p.recall_8_ns,
        p.entry_verify_ns,
        if p.verify_store_per_second > 0.0 {
            1e9 / p.verify_store_per_second
        } else {
            f64::NAN
        },
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
    let mib = |k: Option<u64>| k.map_or(0.0, |k| k as f64 / 1024.0);
    let rss: Vec<f64> = pts.iter().map(|p| mib(p.peak_rss_kib)).collect();
    let verify_rss: Vec<f64> = pts.iter().map(|p| mib(p.verify_peak_rss_kib)).collect();
    let rss_top = {
        let m = rss
            .iter()
            .chain(&verify_rss)
            .copied()
            .fold(0.0, f64::max)
            .max(1.0);
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
    for (k, (values, colour, name)) in [
        (&rss, "#17becf", "proofs, retrieval, verify one"),
        (&verify_rss, "#bcbd22", "whole-store verify"),
    ]
    .into_iter()
    .enumerate()
    {
        let coords: Vec<(f64, f64)> = pts
            .iter()
            .zip(values)
            .map(|(p, v)| (xmap(p.n.max(1) as f64, r0, r1), rmap(*v)))
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
        let ly = H - 50.0 + 16.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{r0:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-width="2"/><text x="{:.1}" y="{ly:.1}">{name}</text>"#,
            ly - 4.0,
            r0 + 18.0,
            ly - 4.0,
            r0 + 24.0
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::tests::{point, report_of};

    #[test]
    fn svg_is_deterministic_and_well_formed() {
        let report = report_of(vec![point(1_000, 1.0), point(1_000_000, 2.0)]);
        let a = scale_svg(&report);
        assert_eq!(a, scale_svg(&report.clone()));
        assert!(a.starts_with("<svg") && a.trim_end().ends_with("</svg>"));
        assert_eq!(a.matches("<polyline").count(), 9);
        assert!(a.contains(">1k<") && a.contains(">1M<"));
        assert!(scale_svg(&report_of(Vec::new())).contains("</svg>"));
    }
}
