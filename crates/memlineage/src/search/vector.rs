//! The approximate nearest-neighbour index of entry embeddings: an HNSW graph (Malkov &
//! Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
//! Navigable Small World graphs", TPAMI 2018) kept by USearch (`usearch` crate, Unum;
//! Apache-2.0), with vectors stored as IEEE half floats and compared by inner product (the
//! embeddings are unit length, so this is cosine similarity).
//!
//! It is an index, never an authority: keys are leaf indices, and whatever it answers is
//! re-read from the log and verified (signature, inclusion, label, signed scope) before it is
//! rendered. A tampered or stale index can therefore hide or misrank entries, never inject or
//! relabel one. Vectors are checked (dimension, finite values) before they are added.
//!
//! Parameters: connectivity 16 (32 neighbours at the base layer), expansion 128 when adding
//! and when searching (raised to `k` for larger `k`); `docs/retrieval.md` has the recall and
//! cost they give.

use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// Graph degree (HNSW's M).
pub const CONNECTIVITY: usize = 16;
/// Candidate list size while adding (HNSW's efConstruction).
pub const EXPANSION_ADD: usize = 128;
/// Candidate list size while searching (HNSW's ef), at least `k`.
pub const EXPANSION_SEARCH: usize = 128;

/// What went wrong in the vector index.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VectorError {
    /// A vector of the wrong dimension.
    #[error("a vector of {got} components was given to an index of dimension {want}")]
    Dimension {
        /// The index's dimension.
        want: usize,
        /// The vector's.
        got: usize,
    },
    /// A vector with a NaN or infinite component.
    #[error("a vector has a component that is not a finite number")]
    NotFinite,
    /// The index library refused an operation.
    #[error("vector index: {0}")]
    Index(String),
}

/// The index library's error, as ours.
fn lib(e: impl std::fmt::Display) -> VectorError {
    VectorError::Index(e.to_string())
}

/// Matches as neighbours, nearest first (ties by lower document).
fn ranked(m: &usearch::ffi::Matches) -> Vec<Neighbour> {
    let mut out: Vec<Neighbour> = m
        .keys
        .iter()
        .zip(&m.distances)
        .map(|(doc, d)| Neighbour {
            doc: *doc,
            similarity: 1.0 - d,
        })
        .collect();
    out.sort_by(|a, b| {
        b.similarity
            .total_cmp(&a.similarity)
            .then(a.doc.cmp(&b.doc))
    });
    out
}

/// One neighbour: a document (leaf index) and its cosine similarity to the query.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbour {
    /// The document.
    pub doc: u64,
    /// Cosine similarity (1 − the inner-product distance).
    pub similarity: f32,
}

/// The index.
pub struct VectorIndex {
    inner: Index,
    dim: usize,
}

impl std::fmt::Debug for VectorIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorIndex")
            .field("dim", &self.dim)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

fn options(dim: usize) -> IndexOptions {
    IndexOptions {
        dimensions: dim,
        metric: MetricKind::IP,
        quantization: ScalarKind::F16,
        connectivity: CONNECTIVITY,
        expansion_add: EXPANSION_ADD,
        expansion_search: EXPANSION_SEARCH,
        multi: false,
    }
}

impl VectorIndex {
    /// An empty index of vectors of `dim` components.
    pub fn new(dim: usize) -> Result<VectorIndex, VectorError> {
        if dim == 0 {
            return Err(VectorError::Dimension { want: 1, got: 0 });
        }
        Ok(VectorIndex {
            inner: Index::new(&options(dim)).map_err(lib)?,
            dim,
        })
    }

    /// The dimension of its vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Vectors in the index.
    pub fn len(&self) -> usize {
        self.inner.size()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `doc` has a vector.
    pub fn contains(&self, doc: u64) -> bool {
        self.inner.contains(doc)
    }

    fn check(&self, v: &[f32]) -> Result<(), VectorError> {
        if v.len() != self.dim {
            return Err(VectorError::Dimension {
                want: self.dim,
                got: v.len(),
            });
        }
        if !v.iter().all(|x| x.is_finite()) {
            return Err(VectorError::NotFinite);
        }
        Ok(())
    }

    /// Adds the vector of `doc`; a document that already has one keeps it (an entry's
    /// embedding never changes).
    pub fn insert(&mut self, doc: u64, v: &[f32]) -> Result<(), VectorError> {
        self.check(v)?;
        if self.inner.contains(doc) {
            return Ok(());
        }
        if self.inner.size() >= self.inner.capacity() {
            let grown = (self.inner.capacity() * 2).max(1024);
            self.inner.reserve(grown).map_err(lib)?;
        }
        self.inner.add(doc, v).map_err(lib)?;
        Ok(())
    }

    /// Removes the vector of `doc` (a forgotten entry); nothing happens when it has none.
    pub fn remove(&mut self, doc: u64) -> Result<(), VectorError> {
        if self.inner.contains(doc) {
            self.inner.remove(doc).map_err(lib)?;
        }
        Ok(())
    }

    /// The `k` documents nearest to `query` among those `accept` lets through, nearest first
    /// (ties by lower document).
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        accept: impl Fn(u64) -> bool,
    ) -> Result<Vec<Neighbour>, VectorError> {
        self.check(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        if self.inner.expansion_search() < k {
            self.inner.change_expansion_search(k);
        }
        let m = self.inner.filtered_search(query, k, accept).map_err(lib)?;
        Ok(ranked(&m))
    }

    /// The exact `k` nearest (every vector compared): the reference the approximate search is
    /// measured against.
    pub fn exact_nearest(&self, query: &[f32], k: usize) -> Result<Vec<Neighbour>, VectorError> {
        self.check(query)?;
        if k == 0 || self.is_empty() {
            return Ok(Vec::new());
        }
        let m = self.inner.exact_search(query, k).map_err(lib)?;
        Ok(ranked(&m))
    }

    /// Bytes the index holds in memory (USearch's estimate, within 10 %).
    pub fn memory_bytes(&self) -> usize {
        self.inner.memory_usage()
    }

    /// Writes the index — its graph and vectors — to the file at `path` (USearch's format).
    pub fn save(&self, path: &std::path::Path) -> Result<(), VectorError> {
        let path = path
            .to_str()
            .ok_or_else(|| VectorError::Index(format!("{} is not UTF-8", path.display())))?;
        self.inner.save(path).map_err(lib)
    }

    /// Reads an index of vectors of `dim` components written by [`VectorIndex::save`]. The
    /// caller checks the file's integrity first (a digest it recorded): USearch parses it.
    pub fn load(dim: usize, path: &std::path::Path) -> Result<VectorIndex, VectorError> {
        let index = VectorIndex::new(dim)?;
        let shown = path
            .to_str()
            .ok_or_else(|| VectorError::Index(format!("{} is not UTF-8", path.display())))?;
        index.inner.load(shown).map_err(lib)?;
        if index.inner.dimensions() != dim {
            return Err(VectorError::Dimension {
                want: dim,
                got: index.inner.dimensions(),
            });
        }
        Ok(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    /// Unit vectors around a few centres (embeddings cluster by topic).
    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut unit = |scale: f32, base: Option<&Vec<f32>>| {
            let mut v: Vec<f32> = (0..dim)
                .map(|i| {
                    let u = (rng.next_u32() as f32 / u32::MAX as f32) - 0.5;
                    base.map_or(0.0, |b| b[i]) + scale * u
                })
                .collect();
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.iter_mut().for_each(|x| *x /= norm);
            v
        };
        let centres: Vec<Vec<f32>> = (0..8).map(|_| unit(1.0, None)).collect();
        (0..n).map(|i| unit(0.3, Some(&centres[i % 8]))).collect()
    }

    #[test]
    fn nearest_finds_what_exact_search_finds() {
        let data = vectors(3000, 24, 1);
        let mut ix = VectorIndex::new(24).unwrap();
        for (i, v) in data.iter().enumerate() {
            ix.insert(i as u64 * 2, v).unwrap();
        }
        assert_eq!(ix.len(), 3000);
        let queries = vectors(50, 24, 2);
        let mut found = 0usize;
        for q in &queries {
            let approx: Vec<u64> = ix
                .nearest(q, 8, |_| true)
                .unwrap()
                .iter()
                .map(|n| n.doc)
                .collect();
            let exact: Vec<u64> = ix
                .exact_nearest(q, 8)
                .unwrap()
                .iter()
                .map(|n| n.doc)
                .collect();
            found += approx.iter().filter(|d| exact.contains(d)).count();
        }
        let recall = found as f64 / (50.0 * 8.0);
        assert!(recall > 0.95, "recall {recall}");
    }

    #[test]
    fn filter_removal_and_bad_vectors() {
        let data = vectors(500, 16, 3);
        let mut ix = VectorIndex::new(16).unwrap();
        for (i, v) in data.iter().enumerate() {
            ix.insert(i as u64, v).unwrap();
        }
        // The filter holds: only odd documents.
        let hits = ix.nearest(&data[10], 8, |d| d % 2 == 1).unwrap();
        assert_eq!(hits.len(), 8);
        assert!(hits.iter().all(|n| n.doc % 2 == 1));
        // The vector itself is nearest, with similarity ~1.
        let hits = ix.nearest(&data[10], 1, |_| true).unwrap();
        assert_eq!(hits[0].doc, 10);
        assert!((hits[0].similarity - 1.0).abs() < 1e-2);
        // Removed documents are not found; removing twice is fine.
        ix.remove(10).unwrap();
        ix.remove(10).unwrap();
        assert!(!ix.contains(10));
        assert!(
            ix.nearest(&data[10], 20, |_| true)
                .unwrap()
                .iter()
                .all(|n| n.doc != 10)
        );
        // A second insert of a document keeps the first vector.
        ix.insert(11, &data[200]).unwrap();
        assert_eq!(ix.nearest(&data[11], 1, |_| true).unwrap()[0].doc, 11);
        // Wrong dimension, non-finite components, zero dimension.
        assert!(matches!(
            ix.insert(1, &[0.0; 3]),
            Err(VectorError::Dimension { want: 16, got: 3 })
        ));
        let mut nan = data[0].clone();
        nan[3] = f32::NAN;
        assert!(matches!(ix.insert(999, &nan), Err(VectorError::NotFinite)));
        assert!(matches!(
            ix.nearest(&nan, 3, |_| true),
            Err(VectorError::NotFinite)
        ));
        assert!(VectorIndex::new(0).is_err());
        assert!(ix.nearest(&data[0], 0, |_| true).unwrap().is_empty());
        assert!(ix.memory_bytes() > 500 * 16 * 2);
    }

    #[test]
    fn search_is_deterministic() {
        let data = vectors(800, 32, 4);
        let build = || {
            let mut ix = VectorIndex::new(32).unwrap();
            for (i, v) in data.iter().enumerate() {
                ix.insert(i as u64, v).unwrap();
            }
            ix
        };
        let (a, b) = (build(), build());
        for q in vectors(20, 32, 5) {
            assert_eq!(
                a.nearest(&q, 8, |_| true).unwrap(),
                b.nearest(&q, 8, |_| true).unwrap()
            );
        }
    }
}
