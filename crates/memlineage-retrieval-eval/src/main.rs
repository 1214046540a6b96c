//! `memlineage-retrieval-eval`: the retrieval quality measurement.
//!
//! ```text
//! memlineage-retrieval-eval generate             # rewrite data/retrieval/memory_queries.json
//! memlineage-retrieval-eval run [--out DIR] [--doc docs/retrieval.md]
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
        _ => Err(EvalError::Run(
            "usage: memlineage-retrieval-eval generate | run [--out DIR] [--doc FILE]".into(),
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
