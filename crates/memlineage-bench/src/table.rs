//! The text table of a run.

use crate::runner::BenchRow;
use std::fmt::Write as _;

/// A duration in ns, in the most readable unit (`812 ns`, `19.4 µs`, `3.21 ms`, `2.05 s`).
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        "-".to_string()
    } else if ns < 10.0 {
        format!("{ns:.2} ns")
    } else if ns < 1_000.0 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// A rate, with thousands separated by `,`.
pub fn fmt_rate(per_second: f64) -> String {
    if !per_second.is_finite() {
        return "-".to_string();
    }
    let n = per_second.round() as u64;
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out}/s")
}

fn pad(out: &mut String, cells: &[String], widths: &[usize]) {
    for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
        let len = c.chars().count();
        if i == 0 {
            out.push_str(c);
            out.push_str(&" ".repeat(w - len));
        } else {
            out.push_str("  ");
            out.push_str(&" ".repeat(w - len));
            out.push_str(c);
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out.push('\n');
}

/// Renders rows as an aligned text table: name, median, p99, entries/s, baseline, ratio, the
/// reference primitive and the ratio to it, paper, target and whether it is met.
pub fn render_table(rows: &[BenchRow]) -> String {
    let header: Vec<String> = [
        "operation",
        "median",
        "p99",
        "per second",
        "baseline",
        "ratio",
        "reference",
        "paper",
        "target",
        "met",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                fmt_ns(r.median_ns),
                fmt_ns(r.p99_ns),
                r.per_second.map_or_else(String::new, fmt_rate),
                r.baseline.clone().unwrap_or_default(),
                r.ratio.map_or_else(String::new, |x| format!("{x:.2}×")),
                match (&r.reference, r.reference_ratio) {
                    (Some(name), Some(x)) => format!("{x:.2}× {name}"),
                    _ => String::new(),
                },
                r.paper_ns.map_or_else(String::new, fmt_ns),
                r.target.clone().unwrap_or_default(),
                match r.meets_target {
                    Some(true) => "yes".to_string(),
                    Some(false) => "NO".to_string(),
                    None => String::new(),
                },
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &body {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    pad(&mut out, &header, &widths);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    pad(&mut out, &rule, &widths);
    for row in &body {
        pad(&mut out, row, &widths);
    }
    let _ = writeln!(
        out,
        "\nmedian and p99 per operation (durable_append_*: per batch commit; verify_store: per entry); ratio = per-entry median / baseline median, same run; reference = median / the reference primitive's median (durable rows: one commit in fdatasyncs)."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_rates() {
        assert_eq!(fmt_ns(3.456), "3.46 ns");
        assert_eq!(fmt_ns(812.4), "812 ns");
        assert_eq!(fmt_ns(19_420.0), "19.4 µs");
        assert_eq!(fmt_ns(3_214_000.0), "3.21 ms");
        assert_eq!(fmt_ns(2.05e9), "2.05 s");
        assert_eq!(fmt_rate(31_234.4), "31,234/s");
        assert_eq!(fmt_rate(999.0), "999/s");
        assert_eq!(fmt_rate(1_000_000.0), "1,000,000/s");
    }

    #[test]
    fn table_has_a_line_per_row() {
        let row = BenchRow {
            name: "raw_sign".into(),
            median_ns: 19_000.0,
            p99_ns: 21_000.0,
            baseline: None,
            ratio: None,
            paper_ns: None,
            per_second: None,
            reference: None,
            reference_ratio: None,
            target: None,
            meets_target: None,
            samples: 10,
            iters_per_sample: 1,
            n: None,
            note: None,
        };
        let slow = BenchRow {
            name: "write_hot_path_mem".into(),
            baseline: Some("raw_sign".into()),
            ratio: Some(1.5),
            target: Some("ratio ≤ 1.3".into()),
            meets_target: Some(false),
            ..row.clone()
        };
        let durable = BenchRow {
            name: "durable_append_b256".into(),
            reference: Some("raw_fdatasync".into()),
            reference_ratio: Some(21.5),
            ..row.clone()
        };
        let t = render_table(&[row, slow, durable]);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("operation"));
        assert!(lines[2].starts_with("raw_sign"));
        assert!(lines[3].contains("1.50×") && lines[3].ends_with("NO"));
        assert!(lines[2].contains("19.0 µs"));
        assert!(lines[4].contains("21.50× raw_fdatasync"), "{t}");
    }
}
