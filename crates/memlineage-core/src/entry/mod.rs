//! The entry record (paper §M1) and its signed, canonical encoding (§M2).
//!
//! An entry carries provenance — who wrote it (principal and key id), what kind of record it is,
//! the hash of its content (the content itself is stored beside the entry so that it can be
//! erased while every proof still verifies), the hash of its source and of the exact context its
//! writer saw — and its lineage: parents with fixed-point attribution weights, the attribution
//! algorithm, τ and the fallback used, and the trust label computed from all of that.
//!
//! The byte format is specified in `docs/formats.md`.

mod body_bytes;
mod codec;
mod direct;
mod fields;
/// The strict field reader, shared with the control-record codecs.
pub(crate) mod fields_api {
    pub(crate) use super::fields::{Fields, map};
}
mod kind;
mod scope;
mod signed;

/// The direct leaf decoder, for the differential checks of `fuzz_checks`.
pub(crate) use direct::decode_leaf as decode_leaf_direct;
pub use kind::EntryKind;
pub use scope::Scope;
pub use signed::SignedEntry;

use crate::hash::{EntryId, Hash256};
use crate::label::{Fallback, TrustLabel, Weight};
use std::collections::BTreeMap;

/// The entry format version this library writes and accepts.
pub const FORMAT_VERSION: u64 = 1;

/// Limits that keep hostile records small; documented in `docs/formats.md`.
pub mod limits {
    /// Most parents an entry may have.
    pub const MAX_PARENTS: usize = 1024;
    /// Most metadata pairs.
    pub const MAX_METADATA: usize = 64;
    /// Longest metadata key, in bytes.
    pub const MAX_METADATA_KEY: usize = 64;
    /// Longest metadata value, in bytes.
    pub const MAX_METADATA_VALUE: usize = 4096;
    /// Longest attribution algorithm name, in bytes.
    pub const MAX_ATTRIBUTION: usize = 128;
}

/// One lineage edge: the parent entry and how strongly it shaped this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Parent {
    /// The parent's id; the parent must already be in the log.
    pub id: EntryId,
    /// The attribution weight, in [0, 1].
    pub weight: Weight,
}

/// Every field of an entry but the signature: exactly what is signed and hashed into the id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryBody {
    /// Namespace path (tenant/agent/user/session) that scopes retrieval.
    pub scope: Scope,
    /// The writer principal's name.
    pub writer: String,
    /// SHA-256 of the writer's public key at signing time (keys rotate; names stay).
    pub key_id: Hash256,
    /// What kind of record this is.
    pub kind: EntryKind,
    /// SHA-256 of the content bytes.
    pub content_hash: Hash256,
    /// Length of the content in bytes (so erased content still has a known size).
    pub content_len: u64,
    /// h_src: hash of the source the content came from (a URL, a document), if any.
    pub source_hash: Option<Hash256>,
    /// h_ctx: hash of the exact rendered context the writer saw, if any.
    pub context_hash: Option<Hash256>,
    /// Lineage edges, sorted by parent id, no duplicates.
    pub parents: Vec<Parent>,
    /// The attribution algorithm that produced the weights (`none`, `explicit`, `coarse`, ...).
    pub attribution: String,
    /// The threshold τ used for the label.
    pub tau: Weight,
    /// The fallback used for the label.
    pub fallback: Fallback,
    /// The trust label, computed at write time and recomputed by every verifier.
    pub label: TrustLabel,
    /// Creation time, milliseconds since the Unix epoch, passed in by the caller.
    pub created_at_ms: u64,
    /// Free metadata, sorted by key.
    pub metadata: BTreeMap<String, String>,
}

/// Errors building, encoding, decoding or verifying an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EntryError {
    /// The bytes are not canonical CBOR.
    #[error("entry is not canonical CBOR: {0}")]
    Canonical(#[from] crate::canonical::CanonicalError),
    /// A field is missing, of the wrong type, or not allowed.
    #[error("entry field `{field}`: {problem}")]
    Field {
        /// The field name as encoded.
        field: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// A map holds a key this format does not define.
    #[error("{record} has unknown field `{key}`")]
    UnknownField {
        /// The record type.
        record: &'static str,
        /// The unexpected key.
        key: String,
    },
    /// The format version is not one this library understands.
    #[error("unknown entry format version {0} (this library reads version 1)")]
    UnknownVersion(u64),
    /// The signature does not verify, or was made by another key.
    #[error("entry {id}: {problem}")]
    Signature {
        /// The entry id.
        id: EntryId,
        /// What is wrong.
        problem: String,
    },
}

pub(crate) fn field_err(field: &'static str, problem: impl Into<String>) -> EntryError {
    EntryError::Field {
        field,
        problem: problem.into(),
    }
}

impl EntryBody {
    /// Checks every invariant the encoding relies on (sorted unique parents, limits, names).
    pub fn validate(&self) -> Result<(), EntryError> {
        crate::principal::validate_name(&self.writer)
            .map_err(|e| field_err("writer", e.to_string()))?;
        if self.parents.len() > limits::MAX_PARENTS {
            return Err(field_err(
                "parents",
                format!("more than {} parents", limits::MAX_PARENTS),
            ));
        }
        if self.parents.windows(2).any(|w| w[0].id >= w[1].id) {
            return Err(field_err(
                "parents",
                "parents must be sorted by id with no duplicates",
            ));
        }
        if self.attribution.is_empty()
            || self.attribution.len() > limits::MAX_ATTRIBUTION
            || !self.attribution.bytes().all(|b| b.is_ascii_graphic())
        {
            return Err(field_err(
                "attr",
                "attribution name must be 1..=128 printable ASCII characters",
            ));
        }
        if self.metadata.len() > limits::MAX_METADATA {
            return Err(field_err(
                "meta",
                format!("more than {} metadata pairs", limits::MAX_METADATA),
            ));
        }
        for (k, v) in &self.metadata {
            if k.is_empty() || k.len() > limits::MAX_METADATA_KEY {
                return Err(field_err("meta", format!("key `{k}` must be 1..=64 bytes")));
            }
            if v.len() > limits::MAX_METADATA_VALUE {
                return Err(field_err(
                    "meta",
                    format!("value of `{k}` is longer than 4096 bytes"),
                ));
            }
        }
        Ok(())
    }

    /// Sorts and de-duplicates parents by id (keeping the highest weight of duplicates), the
    /// order the encoding requires.
    pub fn normalise_parents(parents: &mut Vec<Parent>) {
        parents.sort_by(|a, b| a.id.cmp(&b.id).then(b.weight.cmp(&a.weight)));
        parents.dedup_by(|later, earlier| later.id == earlier.id);
    }
}
