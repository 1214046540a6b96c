//! Hand-written SVG plots: integer coordinates, fixed fonts and colours, sorted input, so the
//! text is identical from run to run.

use crate::SafeTau;
use crate::ablation::Ablation;
use crate::rate::{Rate, bp_decimal};
use std::fmt::Write as _;

/// Cell colours (colour-blind safe palette).
const COLOURS: [&str; 4] = ["#d55e00", "#e69f00", "#0072b2", "#009e73"];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Grouped bars: one group per workload, one bar per cell.
pub(crate) fn asr_bars(
    title: &str,
    cells: &[&str],
    workloads: &[String],
    rate: &dyn Fn(&str, &str) -> Rate,
) -> String {
    let (left, top, plot_h, bottom) = (60, 50, 240, 70);
    let bar_w = 18;
    let group_w = bar_w * cells.len() as i64 + 36;
    let width = left + group_w * workloads.len() as i64 + 20;
    let height = top + plot_h + bottom + 24;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"11\">"
    );
    let _ = writeln!(
        s,
        "<rect width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"24\" font-size=\"15\" text-anchor=\"middle\">{}</text>",
        width / 2,
        esc(title)
    );
    for i in 0..=4 {
        let y = top + plot_h - plot_h * i / 4;
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"#dddddd\"/>",
            width - 20
        );
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 6,
            y + 4,
            bp_decimal((2500 * i) as u16, 2)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">attack success rate</text>",
        top + plot_h / 2,
        top + plot_h / 2
    );
    for (wi, w) in workloads.iter().enumerate() {
        let gx = left + 18 + group_w * wi as i64;
        for (ci, c) in cells.iter().enumerate() {
            let r = rate(c, w);
            let h = (plot_h as u64 * r.bp() / 10_000) as i64;
            let x = gx + bar_w * ci as i64;
            let y = top + plot_h - h;
            let _ = writeln!(
                s,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{h}\" fill=\"{}\"><title>{} / {}: {} ({}/{})</title></rect>",
                bar_w - 2,
                COLOURS[ci % COLOURS.len()],
                esc(c),
                esc(w),
                r.decimal(),
                r.successes,
                r.total
            );
        }
        let cx = gx + bar_w * cells.len() as i64 / 2;
        let _ = writeln!(
            s,
            "<text x=\"{cx}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            top + plot_h + 16,
            esc(w)
        );
    }
    let _ = writeln!(
        s,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#000000\"/>",
        top + plot_h,
        width - 20,
        top + plot_h
    );
    let ly = top + plot_h + 40;
    let mut lx = left;
    for (ci, c) in cells.iter().enumerate() {
        let _ = writeln!(
            s,
            "<rect x=\"{lx}\" y=\"{}\" width=\"12\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
            ly - 10,
            COLOURS[ci % COLOURS.len()],
            lx + 16,
            ly,
            esc(c)
        );
        lx += 30 + 8 * c.len() as i64;
    }
    s.push_str("</svg>\n");
    s
}

/// The τ×K heatmap (permissive fallback): one panel per weight model.
pub(crate) fn tau_k_heatmap(ab: &Ablation) -> String {
    let cell = 14i64;
    let cols = ab.taus.len() as i64;
    let rows = i64::from(ab.max_k);
    let panel_w = 40 + cell * cols + 20;
    let panel_h = 40 + cell * rows + 40;
    let width = panel_w * ab.models.len() as i64 + 20;
    let height = panel_h + 90;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"10\">"
    );
    let _ = writeln!(
        s,
        "<rect width=\"{width}\" height=\"{height}\" fill=\"#ffffff\"/>"
    );
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"20\" font-size=\"14\" text-anchor=\"middle\">Does EXTERNAL reach the tip of a K-chain? (permissive fallback)</text>",
        width / 2
    );
    for (mi, m) in ab.models.iter().enumerate() {
        let ox = 20 + panel_w * mi as i64;
        let oy = 40;
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{} weights</text>",
            ox + 40 + cell * cols / 2,
            oy + 10,
            m.name
        );
        let gx = ox + 40;
        let gy = oy + 20;
        let grid = m.grid.get("permissive");
        let safe = m.safe.get("permissive");
        for k in 0..rows {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">K={}</text>",
                gx - 4,
                gy + cell * k + 11,
                k + 1
            );
            for t in 0..cols {
                let (fill, tip) = match (&m.edges, grid) {
                    (Some(_), Some(g)) => {
                        if g[k as usize][t as usize] {
                            ("#d62728", "EXTERNAL reaches the tip")
                        } else {
                            ("#c7e9c0", "laundered: the tip is trusted")
                        }
                    }
                    _ => ("#dddddd", "not measured"),
                };
                let best = safe
                    .and_then(|m| m.get(&(k as u32 + 1)))
                    .is_some_and(|s| *s == SafeTau::Tau(ab.taus[t as usize]));
                let stroke = if best {
                    "stroke=\"#000000\" stroke-width=\"2\""
                } else {
                    "stroke=\"#ffffff\" stroke-width=\"1\""
                };
                let _ = writeln!(
                    s,
                    "<rect x=\"{}\" y=\"{}\" width=\"{cell}\" height=\"{cell}\" fill=\"{fill}\" {stroke}><title>K={} τ={}: {tip}</title></rect>",
                    gx + cell * t,
                    gy + cell * k,
                    k + 1,
                    bp_decimal(ab.taus[t as usize], 2)
                );
            }
        }
        for t in (0..cols).step_by(4) {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                gx + cell * t + cell / 2,
                gy + cell * rows + 12,
                bp_decimal(ab.taus[t as usize], 2)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">τ</text>",
            gx + cell * cols / 2,
            gy + cell * rows + 26
        );
        if m.edges.is_none() {
            let _ = writeln!(
                s,
                "<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">not measured</text>",
                gx + cell * cols / 2,
                gy + cell * rows / 2 + 4
            );
        }
    }
    let ly = panel_h + 50;
    let _ = writeln!(
        s,
        "<rect x=\"20\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#d62728\"/><text x=\"36\" y=\"{ly}\">EXTERNAL reaches the tip (safe)</text>",
        ly - 10
    );
    let _ = writeln!(
        s,
        "<rect x=\"230\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#c7e9c0\"/><text x=\"246\" y=\"{ly}\">laundered: the tip is trusted</text>",
        ly - 10
    );
    let _ = writeln!(
        s,
        "<rect x=\"430\" y=\"{}\" width=\"12\" height=\"12\" fill=\"#ffffff\" stroke=\"#000000\" stroke-width=\"2\"/><text x=\"446\" y=\"{ly}\">largest safe τ for K</text>",
        ly - 10
    );
    s.push_str("</svg>\n");
    s
}
