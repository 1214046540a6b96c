//! Ranking for retrieval, apart from any store: which entries a query should surface, best
//! first. Nothing here decides trust — every hit is re-verified by the handle (`memory/
//! retrieve.rs`) before it is rendered, so an index can only hide or misrank an entry, never
//! inject or relabel one.
//!
//! - [`lexical`]: BM25 (the parameters of SQLite FTS5's `bm25()`) with an exact top-k that
//!   skips whole posting blocks whose score bound cannot enter the top k (block-max MaxScore),
//!   so the work per query follows the number of blocks that can matter, not the number of
//!   matches;
//! - [`vector`]: the approximate nearest-neighbour index of entry embeddings (HNSW);
//! - [`fusion`]: reciprocal rank fusion of several rankings (hybrid retrieval);
//! - [`stored`]: the stored form of entry embeddings and its binding to the entry;
//! - [`indexing`]: when the vector index runs the embedding model (at writes, or in the
//!   background).
//!
//! `docs/retrieval.md` describes the algorithms and their measurements.

pub mod embedder;
pub mod fusion;
pub mod indexing;
pub mod lexical;
pub mod mode;
pub mod stored;
pub mod vector;

pub use embedder::TextEmbedder;
pub use indexing::{VectorIndexOptions, VectorIndexProgress, VectorIndexing};
pub use mode::SearchMode;
