//! Stored embeddings: the vector of an entry's content, kept by the backend beside the log
//! ([`EmbeddingRow`]) so that a process opening the store rebuilds its vector index from them
//! instead of running the model over every entry again.
//!
//! A stored vector is derived data, never signed into the entry (issue 17: "an index,
//! recomputable, audited like the other derived tables"). Each row carries a *binding*:
//! SHA-256 over a domain tag, the model id, the entry id, the entry's signed content hash and
//! the vector bytes, each length-prefixed. Before the handle uses a stored vector it
//! recomputes the binding from the entry as read from the log (whose id and content hash are
//! checked against the signed leaf) and checks the vector's shape (dimension, finite
//! components, unit length). A row that fails is not used: the entry is embedded again, the
//! row replaced, and the rejection reported ([`VectorIndexStatus::rejected`]).
//!
//! What that catches: a vector moved to another entry, a vector of another model, a vector
//! left from content that changed, bit rot, an edit that did not recompute the binding. What
//! it cannot catch — no unkeyed check can — is an edit that recomputes the binding for a
//! chosen vector; such a vector can only change which entries are candidates and their order:
//! every candidate is still verified like a lexical hit (`retrieve.rs`), so it never injects
//! or relabels an entry.

use crate::store::EmbeddingRow;
use memlineage_core::{EntryId, Hash256};

/// Domain separation of the binding hash.
const BINDING_DOMAIN: &[u8] = b"memlineage/embedding-binding/v1\0";

/// How far from 1 a stored vector's length may be (half-float rounding is ~1e-3 per
/// component; the model's vectors are normalised in f32).
const UNIT_SLACK: f32 = 1e-3;

/// The binding of `vector` (encoded) to `model` and the entry.
pub fn binding(model: &str, id: &EntryId, content_hash: &Hash256, vector: &[u8]) -> Hash256 {
    let mut msg = Vec::with_capacity(BINDING_DOMAIN.len() + model.len() + vector.len() + 80);
    msg.extend_from_slice(BINDING_DOMAIN);
    for part in [
        model.as_bytes(),
        id.as_bytes().as_slice(),
        content_hash.0.as_slice(),
        vector,
    ] {
        msg.extend_from_slice(&(part.len() as u64).to_be_bytes());
        msg.extend_from_slice(part);
    }
    Hash256::of(&msg)
}

/// The stored form of a vector: little-endian f32 components.
pub fn encode(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A row for `vector`, bound to the entry.
pub fn row(
    index: u64,
    model: &str,
    id: &EntryId,
    content_hash: &Hash256,
    vector: &[f32],
) -> EmbeddingRow {
    let bytes = encode(vector);
    EmbeddingRow {
        index,
        model: model.to_string(),
        binding: binding(model, id, content_hash, &bytes),
        vector: bytes,
    }
}

/// The vector of a stored row, when the row is bound to this entry and model and has the
/// shape of the model's vectors; else why not.
pub fn checked(
    row: &EmbeddingRow,
    model: &str,
    dim: usize,
    id: &EntryId,
    content_hash: &Hash256,
) -> Result<Vec<f32>, String> {
    if row.model != model {
        return Err(format!(
            "its model is `{}`, not the attached `{model}`",
            row.model
        ));
    }
    if binding(model, id, content_hash, &row.vector) != row.binding {
        return Err(
            "its binding does not match the entry's id and content hash (the vector was edited or moved)"
                .into(),
        );
    }
    if row.vector.len() != dim * 4 {
        return Err(format!(
            "it holds {} bytes, not the {} of a {dim}-dimensional vector",
            row.vector.len(),
            dim * 4
        ));
    }
    let vector: Vec<f32> = row
        .vector
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if vector.iter().any(|x| !x.is_finite()) {
        return Err("a component is not a finite number".into());
    }
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if (norm - 1.0).abs() > UNIT_SLACK {
        return Err(format!("its length is {norm}, not 1"));
    }
    Ok(vector)
}

/// What the vector index was built from, and which stored rows it refused.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct VectorIndexStatus {
    /// The attached model's id.
    pub model: String,
    /// Entries in the index.
    pub indexed: u64,
    /// Entries of the log the index has considered (leaf indices below this); the rest are
    /// not found by a semantic search yet (`search/indexing.rs`).
    pub considered: u64,
    /// Vectors taken from stored rows (their binding checked).
    pub loaded: u64,
    /// Vectors computed by the model in this process (no usable stored row).
    pub embedded: u64,
    /// Stored rows refused, by leaf index, with the reason (the entry was embedded again).
    pub rejected: Vec<RejectedEmbedding>,
    /// The last failure to embed or store the vectors of entries just written (the entries
    /// are logged; the next search embeds what is missing).
    pub last_error: Option<String>,
    /// With a saved index (`Memory::with_embedder_saved`): whether it was loaded, and from how
    /// many entries on the index was caught up, or why it was rebuilt instead.
    pub snapshot: Option<String>,
}

/// A stored embedding that failed its check.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RejectedEmbedding {
    /// Leaf index of the entry.
    pub index: u64,
    /// What failed.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(dim: usize, hot: usize) -> Vec<f32> {
        let mut v = vec![0.0; dim];
        v[hot] = 1.0;
        v
    }

    #[test]
    fn a_row_checks_only_for_its_entry_model_and_shape() {
        let (id, other) = (EntryId(Hash256::of(b"a")), EntryId(Hash256::of(b"b")));
        let h = Hash256::of(b"content");
        let r = row(3, "m@1", &id, &h, &unit(4, 2));
        assert_eq!(checked(&r, "m@1", 4, &id, &h).unwrap(), unit(4, 2));
        // Moved to another entry, or the content changed.
        assert!(
            checked(&r, "m@1", 4, &other, &h)
                .unwrap_err()
                .contains("binding")
        );
        assert!(checked(&r, "m@1", 4, &id, &Hash256::of(b"x")).is_err());
        // Another model.
        assert!(
            checked(&r, "m@2", 4, &id, &h)
                .unwrap_err()
                .contains("model")
        );
        // An edited component without a new binding.
        let mut edited = r.clone();
        edited.vector[8] ^= 1;
        assert!(
            checked(&edited, "m@1", 4, &id, &h)
                .unwrap_err()
                .contains("binding")
        );
        // Bound but of the wrong shape: dimension, NaN, not unit length.
        let wrong_dim = row(3, "m@1", &id, &h, &unit(3, 0));
        assert!(
            checked(&wrong_dim, "m@1", 4, &id, &h)
                .unwrap_err()
                .contains("bytes")
        );
        let nan = row(3, "m@1", &id, &h, &[f32::NAN, 0.0, 0.0, 1.0]);
        assert!(
            checked(&nan, "m@1", 4, &id, &h)
                .unwrap_err()
                .contains("finite")
        );
        let long = row(3, "m@1", &id, &h, &[1.0, 1.0, 0.0, 0.0]);
        assert!(
            checked(&long, "m@1", 4, &id, &h)
                .unwrap_err()
                .contains("length")
        );
    }

    #[test]
    fn the_binding_separates_its_fields() {
        let id = EntryId(Hash256::of(b"a"));
        let h = Hash256::of(b"c");
        assert_ne!(binding("ab", &id, &h, b"c"), binding("a", &id, &h, b"bc"));
    }
}
