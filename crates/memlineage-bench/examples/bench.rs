//! Runs the bench runner or the scale run without the CLI:
//!
//! ```text
//! cargo run --release -p memlineage-bench --example bench -- [--quick] [--json]
//! cargo run --release -p memlineage-bench --example bench -- --scale [--quick] [--svg FILE] [--json]
//! cargo run --release -p memlineage-bench --example bench -- --generate N --out FILE [--seed S]
//! ```

use memlineage_bench::{
    BenchOptions, ScaleOptions, generate_store, render_scale_table, render_table, run, scale,
    scale_svg, sys,
};
use std::io::Write;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let value = |f: &str| {
        args.iter()
            .position(|a| a == f)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let mut progress = |line: &str| {
        eprintln!(
            "[{:>7.1} s] {line}",
            START.with(|s| s.elapsed().as_secs_f64())
        );
    };
    let quick = flag("--quick");
    let json = flag("--json");
    let result: Result<(), memlineage_bench::BenchError> = (|| {
        if let Some(n) = value("--generate") {
            let n: u64 = n.parse().map_err(|_| bad("--generate N"))?;
            let out = value("--out").ok_or_else(|| bad("--out FILE"))?;
            let seed = value("--seed").and_then(|s| s.parse().ok()).unwrap_or(1);
            let g = generate_store(std::path::Path::new(&out), n, seed, &mut progress)?;
            println!(
                "{} entries in {:.1} s, {} bytes",
                g.entries, g.seconds, g.bytes
            );
        } else if flag("--scale") {
            let report = scale(&ScaleOptions::new(quick), &mut progress)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                );
            } else {
                println!("{}\n{}", report.machine, render_scale_table(&report));
            }
            if let Some(svg) = value("--svg") {
                std::fs::write(&svg, scale_svg(&report))
                    .map_err(|e| memlineage_bench::BenchError::Invalid(format!("{svg}: {e}")))?;
            }
        } else {
            let opts = BenchOptions::new(quick);
            let rows = run(&opts, &mut progress)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&rows).unwrap_or_default()
                );
            } else {
                println!("{}\n{}", sys::machine(), render_table(&rows));
                for r in &rows {
                    if let Some(note) = &r.note {
                        println!("{}: {note}", r.name);
                    }
                }
            }
        }
        Ok(())
    })();
    let _ = std::io::stdout().flush();
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn bad(what: &str) -> memlineage_bench::BenchError {
    memlineage_bench::BenchError::Invalid(format!("expected {what}"))
}

thread_local! {
    static START: std::time::Instant = std::time::Instant::now();
}
