fn main() {
    let out = std::env::args().nth(1).unwrap_or_else(|| "/tmp/mleval".into());
    let mut opts = memlineage_eval::EvalOptions::new(out);
    if let Some(n) = std::env::args().nth(2) {
        opts.episodes = n.parse().ok();
    }
    let t = std::time::Instant::now();
    match memlineage_eval::run(&opts, &mut |_, _, _| {}) {
        Ok(s) => print!("{}", s.headline()),
        Err(e) => eprintln!("error: {e}"),
    }
    eprintln!("{:?}", t.elapsed());
}
