//! Runs the evaluation into a directory and prints the headline and the time per stage:
//! `cargo run -p memlineage-eval --example quick -- OUT [EPISODES] [THREADS]`.
fn main() {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "/tmp/mleval".into());
    let mut opts = memlineage_eval::EvalOptions::new(out);
    opts.episodes = args.next().and_then(|n| n.parse().ok()).filter(|n| *n > 0);
    opts.threads = args.next().and_then(|n| n.parse().ok());
    let t = std::time::Instant::now();
    let mut stage = String::new();
    let mut cb = |s: &str, done: u64, total: u64| {
        if s != stage {
            eprintln!("{:>8.2?} {s} ({done}/{total})", t.elapsed());
            stage = s.to_string();
        }
    };
    match memlineage_eval::run(&opts, &mut cb) {
        Ok(s) => print!("{}", s.headline()),
        Err(e) => eprintln!("error: {e}"),
    }
    eprintln!("{:?}", t.elapsed());
}
