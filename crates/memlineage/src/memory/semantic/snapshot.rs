//! A saved vector index: the HNSW graph with its vectors, and what the handle needs beside it
//! to go on from where it was saved, so that opening a large store with a model attached does
//! not rebuild the graph (inserting 10^6 vectors one by one takes ~21 min on two cores,
//! `docs/performance.md`, "Semantic retrieval at 10^6"; loading the saved graph takes seconds).
//!
//! Two files in a directory of the caller's choice: [`INDEX_FILE`] (USearch's own format) and
//! [`META_FILE`] (JSON, below). Saving writes both under temporary names, flushes them to disk
//! and renames the index, then the description, so a crash leaves either the old pair, the new
//! pair, or a new index with the old description — whose digest no longer matches, so it is
//! not used.
//!
//! A snapshot is used only when everything it claims checks: the format, the model and the
//! dimension; the log prefix it covers (its size and the Merkle root of the log at that size,
//! RFC 6962 §2.1 — a snapshot of another store, of a log rewritten behind the program's back,
//! or of a longer log than this one is refused); the SHA-256 of the index file (a truncated or
//! altered file is never handed to USearch); and the number of vectors. Otherwise the index is
//! rebuilt from the stored embeddings, as without a snapshot, and the reason is reported
//! ([`crate::VectorIndexStatus::snapshot`]). Even a snapshot that passes is an index, never an
//! authority: every hit is verified before it is rendered (`retrieve.rs`), so a snapshot forged
//! with a matching digest can hide or misrank entries, never inject or relabel one.

use super::State;
use crate::error::Error;
use crate::search::vector::VectorIndex;
use memlineage_core::Hash256;
use memlineage_core::entry::Scope;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The index file in a snapshot directory.
pub const INDEX_FILE: &str = "vectors.usearch";
/// The description file in a snapshot directory.
pub const META_FILE: &str = "vectors.json";
/// The format written.
const FORMAT: u32 = 1;

/// What a snapshot says of its index file.
#[derive(serde::Serialize, serde::Deserialize)]
struct Meta {
    format: u32,
    model: String,
    dim: usize,
    /// Entries below this leaf index were considered.
    next: u64,
    /// Tombstones below this leaf index were applied.
    tombstones_next: u64,
    /// The log's root at size `next`, hex.
    root: String,
    /// SHA-256 of the index file, hex.
    index_sha256: String,
    /// Vectors in the index.
    vectors: u64,
    /// The indexed entries' scopes, by id.
    scopes: Vec<String>,
    /// Each indexed entry's leaf index and scope id.
    scope_of: Vec<(u64, u32)>,
}

/// The paths of a snapshot in `dir`.
fn paths(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join(INDEX_FILE), dir.join(META_FILE))
}

/// SHA-256 of the file at `path`, read in blocks.
fn digest(path: &Path) -> std::io::Result<Hash256> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Hash256(h.finalize().into()))
}

fn io(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::internal(format!("vector snapshot: {what} {}: {e}", path.display()))
}

/// Writes `bytes` to `path` and flushes them to disk.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut f = std::fs::File::create(path).map_err(|e| io("creating", path, e))?;
    f.write_all(bytes).map_err(|e| io("writing", path, e))?;
    f.sync_all().map_err(|e| io("flushing", path, e))
}

/// Flushes the file at `path` to disk.
fn sync(path: &Path) -> Result<(), Error> {
    std::fs::File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| io("flushing", path, e))
}

/// Saves `state` (model `model`, the log's root at `state.next` being `root`) into `dir`,
/// made if missing.
pub(super) fn save(dir: &Path, model: &str, state: &State, root: &Hash256) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| io("making", dir, e))?;
    let (index_path, meta_path) = paths(dir);
    // Temporary names of this process's own: two processes saving at once never write into
    // each other's files (whichever pair is renamed last is used, or, mixed, refused).
    let pid = std::process::id();
    let index_tmp = dir.join(format!("{INDEX_FILE}.{pid}.tmp"));
    let meta_tmp = dir.join(format!("{META_FILE}.{pid}.tmp"));
    state
        .index
        .save(&index_tmp)
        .map_err(|e| io("writing", &index_tmp, e))?;
    sync(&index_tmp)?;
    let index_sha256 = digest(&index_tmp).map_err(|e| io("reading", &index_tmp, e))?;
    let mut scope_of: Vec<(u64, u32)> = state.scope_of.iter().map(|(k, v)| (*k, *v)).collect();
    scope_of.sort_unstable();
    let meta = Meta {
        format: FORMAT,
        model: model.to_string(),
        dim: state.index.dim(),
        next: state.next,
        tombstones_next: state.tombstones_next,
        root: root.to_hex(),
        index_sha256: index_sha256.to_hex(),
        vectors: state.index.len() as u64,
        scopes: state
            .scopes
            .all()
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
        scope_of,
    };
    let json =
        serde_json::to_vec(&meta).map_err(|e| Error::internal(format!("vector snapshot: {e}")))?;
    write_synced(&meta_tmp, &json)?;
    std::fs::rename(&index_tmp, &index_path).map_err(|e| io("renaming", &index_tmp, e))?;
    std::fs::rename(&meta_tmp, &meta_path).map_err(|e| io("renaming", &meta_tmp, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A snapshot read back and checked, ready to go on from.
pub(super) struct Loaded {
    pub(super) index: VectorIndex,
    pub(super) next: u64,
    pub(super) tombstones_next: u64,
    pub(super) scope_of: HashMap<u64, u32>,
    pub(super) scopes: Vec<Scope>,
}

/// Reads the snapshot in `dir` for `model` of dimension `dim`; `root_at` gives the log's root
/// at a size (an error when the log is shorter). `Err(reason)` when there is none or it does
/// not check — the caller rebuilds and reports the reason.
pub(super) fn load(
    dir: &Path,
    model: &str,
    dim: usize,
    root_at: impl Fn(u64) -> Result<Hash256, Error>,
) -> Result<Loaded, String> {
    let (index_path, meta_path) = paths(dir);
    let json = match std::fs::read(&meta_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("no snapshot in {}", dir.display()));
        }
        Err(e) => return Err(format!("reading {}: {e}", meta_path.display())),
    };
    let meta: Meta = serde_json::from_slice(&json)
        .map_err(|e| format!("{} is not a snapshot description: {e}", meta_path.display()))?;
    if meta.format != FORMAT {
        return Err(format!(
            "snapshot format {} (this build reads {FORMAT})",
            meta.format
        ));
    }
    if meta.model != model || meta.dim != dim {
        return Err(format!(
            "the snapshot is of model {} ({} dimensions), not {model} ({dim})",
            meta.model, meta.dim
        ));
    }
    // (`tombstones_next` may pass `next`: a tombstone appended during the catch-up that saved
    // it. A forged one can only leave forgotten entries' vectors in the index, and a retrieval
    // never returns a forgotten entry.)
    let root = root_at(meta.next).map_err(|e| {
        format!(
            "the snapshot covers {} entries, which this log does not have: {e}",
            meta.next
        )
    })?;
    if root.to_hex() != meta.root {
        return Err(format!(
            "the snapshot was made of another log (its root at size {} differs)",
            meta.next
        ));
    }
    let found =
        digest(&index_path).map_err(|e| format!("reading {}: {e}", index_path.display()))?;
    if found.to_hex() != meta.index_sha256 {
        return Err(format!(
            "{} does not match its description (SHA-256)",
            index_path.display()
        ));
    }
    let scopes = meta
        .scopes
        .iter()
        .map(|s| Scope::new(s).map_err(|e| format!("a scope of the snapshot: {e}")))
        .collect::<Result<Vec<Scope>, String>>()?;
    let mut scope_of = HashMap::with_capacity(meta.scope_of.len());
    for (index, scope) in meta.scope_of {
        if index >= meta.next || scope as usize >= scopes.len() {
            return Err(format!(
                "the snapshot names entry {index} or scope {scope}, out of range"
            ));
        }
        scope_of.insert(index, scope);
    }
    let index = VectorIndex::load(dim, &index_path)
        .map_err(|e| format!("loading {}: {e}", index_path.display()))?;
    if index.len() as u64 != meta.vectors || scope_of.len() as u64 != meta.vectors {
        return Err(format!(
            "the snapshot describes {} vectors; its index holds {} and its scopes {}",
            meta.vectors,
            index.len(),
            scope_of.len()
        ));
    }
    Ok(Loaded {
        index,
        next: meta.next,
        tombstones_next: meta.tombstones_next,
        scope_of,
        scopes,
    })
}
