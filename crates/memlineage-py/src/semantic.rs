//! Semantic and hybrid search for Python: attaching the embedding model when a store is opened
//! (`Memory.open(embedder=...)`), where its vector index is saved, the search mode, and the
//! index's status as plain Python values.
//!
//! The model is all-MiniLM-L6-v2 on candle (`memlineage-models`, cargo feature `models`; the
//! wheel is built with it). The HNSW index of a file store is saved in `<store file>.vectors/`
//! — the directory the CLI's `search --mode semantic|hybrid` uses — so a Python process and the
//! CLI load each other's index instead of rebuilding it; a store in RAM keeps it in memory only.
//! The index only proposes candidates: every hit is verified by the library as a lexical one
//! is (`docs/retrieval.md`, "The trust path"), so a tampered index directory can hide or
//! misrank entries, never inject or relabel one.

use crate::errors::Fail;
use memlineage::VectorIndexStatus;
use memlineage::search::SearchMode;
use memlineage::{Memory as Mem, StoreLocation};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::path::PathBuf;

/// The search mode named by `s` (`lexical`, `semantic`, `hybrid`), or an `InputError` naming
/// the three.
pub fn mode(s: &str) -> Result<SearchMode, Fail> {
    s.parse::<SearchMode>()
        .map_err(|e| Fail::Input(e.to_string()))
}

/// The error of a semantic or hybrid search on a handle opened without a model: it says how
/// to open one with it.
pub fn no_embedder(mode: SearchMode) -> Fail {
    Fail::Input(format!(
        "search mode `{mode}` needs the embedding model, and this Memory was opened without it: \
         open the store with Memory.open(..., embedder=\"default\") (the model that \
         scripts/fetch-embedding-model.sh installs, or $MEMLINEAGE_EMBEDDING_MODEL) or \
         embedder=\"/path/to/all-MiniLM-L6-v2\"; mode=\"lexical\" needs no model"
    ))
}

/// Where the vector index of the store at `loc` is saved: `<store file>.vectors/` for a file
/// store (as the CLI keeps it), none for a store in RAM.
pub fn vectors_dir(loc: &StoreLocation) -> Option<PathBuf> {
    let mut name = loc.sqlite_file()?.into_os_string();
    name.push(".vectors");
    Some(PathBuf::from(name))
}

/// Attaches the embedding model to `mem`: the default one (`dir` = `None`: the lookup of
/// `memlineage_models::Embedder::locate`) or the one in `dir`. With `vectors`, the index is
/// loaded from that directory when it checks and saved there (`Memory::with_embedder_saved`),
/// else built in memory from the stored embeddings.
#[cfg(feature = "models")]
pub fn attach(mem: Mem, dir: Option<&str>, vectors: Option<&PathBuf>) -> Result<Mem, Fail> {
    use memlineage_models::Embedder;
    let explicit = dir.map(std::path::Path::new);
    let embedder = Embedder::locate(explicit)
        .and_then(|d| Embedder::load(&d))
        .map_err(|e| Fail::Unavailable(e.to_string()))?;
    let embedder: std::sync::Arc<dyn memlineage::search::TextEmbedder> =
        std::sync::Arc::new(embedder);
    Ok(match vectors {
        Some(v) => mem.with_embedder_saved(embedder, v)?,
        None => mem.with_embedder(embedder)?,
    })
}

/// Without the feature `models` there is no model to attach: say how to get a build with it.
#[cfg(not(feature = "models"))]
pub fn attach(mem: Mem, _dir: Option<&str>, _vectors: Option<&PathBuf>) -> Result<Mem, Fail> {
    drop(mem);
    Err(Fail::Unavailable(
        "this build of the memlineage package has no embedding model (the cargo feature \
         `models` of crates/memlineage-py): install it with `pip install ./crates/memlineage-py` \
         (its wheel has the feature) or build it with `maturin build --features models`"
            .into(),
    ))
}

/// The vector index's status and its size in bytes, read without the GIL (a search that is
/// embedding holds the index's lock meanwhile).
pub fn read_status(
    py: Python<'_>,
    mem: &Mem,
) -> PyResult<Option<(VectorIndexStatus, Option<usize>)>> {
    crate::guard::detached(py, || {
        Ok(mem
            .vector_index_status()
            .map(|s| (s, mem.vector_index_bytes())))
    })
}

/// The vector index's status as a dict (`None` without a model): `model`, `indexed`,
/// `loaded`, `embedded`, `rejected` (`[(index, reason)]`), `last_error`, `snapshot`, `bytes`
/// and `directory` (where it is saved, `None` for a store in RAM).
pub fn status<'py>(
    py: Python<'py>,
    read: Option<(VectorIndexStatus, Option<usize>)>,
    vectors: Option<&PathBuf>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let Some((s, bytes)) = read else {
        return Ok(None);
    };
    let d = PyDict::new(py);
    d.set_item("model", &s.model)?;
    d.set_item("indexed", s.indexed)?;
    d.set_item("loaded", s.loaded)?;
    d.set_item("embedded", s.embedded)?;
    let rejected = PyList::empty(py);
    for r in &s.rejected {
        rejected.append((r.index, r.reason.as_str()))?;
    }
    d.set_item("rejected", rejected)?;
    d.set_item("last_error", s.last_error.as_deref())?;
    d.set_item("snapshot", s.snapshot.as_deref())?;
    d.set_item("bytes", bytes)?;
    d.set_item("directory", vectors.map(|v| v.display().to_string()))?;
    Ok(Some(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_unknown_ones_are_input_errors() {
        assert!(matches!(mode("hybrid"), Ok(SearchMode::Hybrid)));
        let Err(Fail::Input(m)) = mode("fuzzy") else {
            panic!("an unknown mode is bad input");
        };
        assert!(m.contains("`lexical`, `semantic` or `hybrid`"), "{m}");
        let Fail::Input(m) = no_embedder(SearchMode::Semantic) else {
            panic!("a missing model is the caller's to fix");
        };
        assert!(m.contains("embedder=\"default\"") && m.contains("fetch-embedding-model.sh"));
    }

    #[test]
    fn a_file_store_saves_its_index_beside_the_file_and_ram_nowhere() {
        let Ok(loc) = "sqlite:a/b/s.db".parse::<StoreLocation>() else {
            panic!("a file location");
        };
        assert_eq!(vectors_dir(&loc), Some(PathBuf::from("a/b/s.db.vectors")));
        let Ok(ram) = "memory:".parse::<StoreLocation>() else {
            panic!("a RAM location");
        };
        assert_eq!(vectors_dir(&ram), None);
    }
}
