//! `memlineage-retrieval-eval`: the retrieval quality measurement.
//!
//! ```text
//! memlineage-retrieval-eval generate             # rewrite data/retrieval/memory_queries.json
//! memlineage-retrieval-eval run [--out DIR] [--doc docs/retrieval.md]
//! memlineage-retrieval-eval tune [--seed N]    # hybrid's fusion weights on a tuning set
//! ```
//!
//! `run` (feature `models`: it embeds with all-MiniLM-L6-v2, `scripts/fetch-embedding-model.sh`)
//! writes `quality.json` and `ranks.tsv` into DIR (default `results/retrieval`) and, with
//! `--doc`, replaces the table of that document. CI runs it into a fresh directory and
//! compares with the committed `results/retrieval` byte for byte.

use memlineage_retrieval_eval::EvalError;
use memlineage_retrieval_eval::dataset::{Dataset, SEED};
#[cfg(feature = "models")]
use memlineage_retrieval_eval::report;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const DATASET: &str = "data/retrieval/memory_queries.json";

#[cfg(feature = "models")]
fn read(path: &Path) -> Result<String, EvalError> {
    std::fs::read_to_string(path).map_err(|source| EvalError::Io {
        path: path.display().to_string(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), EvalError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| EvalError::Io {
            path: dir.display().to_string(),
            source,
        })?;
    }
    std::fs::write(path, text).map_err(|source| EvalError::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(feature = "models")]
fn run(out: &Path, doc: Option<&Path>) -> Result<(), EvalError> {
    let ds = Dataset::parse(&read(Path::new(DATASET))?)?;
    if ds != Dataset::generate(ds.seed) {
        return Err(EvalError::Data(format!(
            "{DATASET} is not what the generator makes (run `memlineage-retrieval-eval generate`)"
        )));
    }
    let embedder =
        memlineage_models::Embedder::load_default().map_err(|e| EvalError::Run(e.to_string()))?;
    let mut embed = |texts: &[&str]| {
        embedder
            .embed(texts)
            .map_err(|e| EvalError::Run(e.to_string()))
    };
    let r = report::measure(&ds, embedder.model_id(), &mut embed)?;
    write(&out.join("quality.json"), &r.to_json())?;
    write(&out.join("ranks.tsv"), &r.ranks_tsv())?;
    if let Some(doc) = doc {
        let text = read(doc)?;
        write(doc, &report::splice_doc(&text, &r.doc_table())?)?;
    }
    eprintln!("{}", r.doc_table());
    Ok(())
}

/// Prints hybrid's recall@8 and MRR under a grid of fusion weights, on the labelled set of
/// `seed` (by default the tuning seed, not the reported set's): how `fusion::HYBRID` was chosen.
#[cfg(feature = "models")]
fn tune(seed: u64) -> Result<(), EvalError> {
    use memlineage::search::fusion::HybridFusion;
    let ds = Dataset::generate(seed);
    let embedder =
        memlineage_models::Embedder::load_default().map_err(|e| EvalError::Run(e.to_string()))?;
    let mut embed = |texts: &[&str]| {
        embedder
            .embed(texts)
            .map_err(|e| EvalError::Run(e.to_string()))
    };
    let rankings = report::rankings(&ds, &mut embed)?;
    let base = rankings.ranks(&ds, memlineage::search::fusion::HYBRID);
    let of = |pick: fn(&report::QueryRanks) -> Option<usize>| {
        memlineage_retrieval_eval::metrics::metrics(&base.iter().map(pick).collect::<Vec<_>>())
    };
    let (lex, sem) = (of(|r| r.lexical), of(|r| r.semantic));
    println!(
        "seed {seed}: lexical recall@8 {} MRR {}; semantic recall@8 {} MRR {}",
        lex.recall_at_8, lex.mrr, sem.recall_at_8, sem.mrr
    );
    println!("k\tlexical weight\trecall@8\tMRR");
    let mut grid = Vec::new();
    for k in [5, 10, 20, 60] {
        for lexical in [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1.0] {
            grid.push(HybridFusion {
                k,
                lexical,
                semantic: 1.0,
            });
        }
    }
    for (f, m) in report::tune(&ds, &rankings, &grid) {
        println!("{}\t{}\t{}\t{}", f.k, f.lexical, m.recall_at_8, m.mrr);
    }
    Ok(())
}

#[cfg(not(feature = "models"))]
fn tune(_: u64) -> Result<(), EvalError> {
    Err(EvalError::Run(
        "tuning needs the embedding model: build with `--features models`".into(),
    ))
}

#[cfg(not(feature = "models"))]
fn run(_: &Path, _: Option<&Path>) -> Result<(), EvalError> {
    Err(EvalError::Run(
        "the semantic and hybrid rankings need the embedding model: build with `--features models`"
            .into(),
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("generate") => write(Path::new(DATASET), &Dataset::generate(SEED).to_json()),
        Some("run") => {
            let mut out = PathBuf::from("results/retrieval");
            let mut doc = None;
            let mut it = args[1..].iter();
            let mut bad = None;
            while let Some(a) = it.next() {
                match (a.as_str(), it.next()) {
                    ("--out", Some(v)) => out = PathBuf::from(v),
                    ("--doc", Some(v)) => doc = Some(PathBuf::from(v)),
                    _ => bad = Some(a.clone()),
                }
            }
            match bad {
                Some(a) => Err(EvalError::Run(format!("unexpected argument `{a}`"))),
                None => run(&out, doc.as_deref()),
            }
        }
        Some("tune") => match args.get(1..) {
            Some([flag, n]) if flag == "--seed" => n
                .parse()
                .map_err(|_| EvalError::Run(format!("--seed wants a number, not `{n}`")))
                .and_then(tune),
            Some([]) => tune(memlineage::search::fusion::TUNING_SEED),
            _ => Err(EvalError::Run("usage: memlineage-retrieval-eval tune [--seed N]".into())),
        },
        _ => Err(EvalError::Run(
            "usage: memlineage-retrieval-eval generate | run [--out DIR] [--doc FILE] | tune [--seed N]"
                .into(),
        )),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
