//! Entry verification against a real store: entries sampled from a generated log, each with
//! its inclusion proof as [`Memory::prove_inclusion`] builds it from the stored nodes. Behind
//! the `entry_verify` row and the scale run's entry-verification column.

use crate::error::BenchError;
use crate::fixtures::{Workload, principal_key};
use crate::generate::REGISTRY_RECORDS;
use ed25519_dalek::VerifyingKey;
use memlineage::Memory;
use memlineage_core::entry::SignedEntry;
use memlineage_core::merkle;
use memlineage_core::{EntryId, Hash256};

/// `count` content entries drawn uniformly from the log (registry records excluded), decoded.
pub fn sample_entries(
    mem: &Memory,
    workload: &mut Workload,
    count: usize,
) -> Result<Vec<(EntryId, SignedEntry)>, BenchError> {
    let size = mem.size()?;
    if size <= REGISTRY_RECORDS {
        return Err(BenchError::Invalid(format!(
            "the store has {size} entries: nothing to sample"
        )));
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let idx = REGISTRY_RECORDS + workload.below(size - REGISTRY_RECORDS);
        let stored = mem
            .log(idx, 1)?
            .pop()
            .ok_or_else(|| BenchError::Invalid(format!("entry {idx} is missing")))?;
        out.push((stored.entry.id(), stored.entry));
    }
    Ok(out)
}

/// One entry with everything a verifier holds: its proof, the root and the writer's key.
struct Check {
    entry: SignedEntry,
    index: u64,
    path: Vec<Hash256>,
    root: Hash256,
    key: VerifyingKey,
}

/// Sampled entries of a store with their inclusion proofs at the store's size.
pub struct StoreVerify {
    checks: Vec<Check>,
    size: u64,
}

impl StoreVerify {
    /// Proves each of `picked` in the tree of the whole store; the writers' keys come from
    /// the generator's seed. Fails if any of them does not verify.
    pub fn new(
        mem: &Memory,
        seed: u64,
        picked: &[(EntryId, SignedEntry)],
    ) -> Result<StoreVerify, BenchError> {
        let size = mem.size()?;
        let mut checks = Vec::with_capacity(picked.len());
        for (id, entry) in picked {
            let proof = mem.prove_inclusion(id, Some(size))?;
            checks.push(Check {
                entry: entry.clone(),
                index: proof.index,
                path: proof.path.iter().map(|h| h.0).collect(),
                root: proof.root.0,
                key: principal_key(seed, &entry.body().writer).verifying_key(),
            });
        }
        let fx = StoreVerify { checks, size };
        if fx.checks.is_empty() || !(0..fx.len()).all(|j| fx.check(j)) {
            return Err(BenchError::Core(format!(
                "a sampled entry of the store of {size} does not verify"
            )));
        }
        Ok(fx)
    }

    /// Number of sampled entries.
    pub fn len(&self) -> usize {
        self.checks.len()
    }

    /// Whether nothing was sampled (never, once built).
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// The tree size the proofs are for.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Mean proof length, in hashes.
    pub fn mean_path_len(&self) -> f64 {
        let total: usize = self.checks.iter().map(|c| c.path.len()).sum();
        total as f64 / self.checks.len().max(1) as f64
    }

    /// Verifies sampled entry `j` (modulo the number sampled) as a reader would: the leaf
    /// hash of its canonical leaf, the inclusion proof against the root, and the signature
    /// (key id, then `verify_strict`).
    pub fn check(&self, j: usize) -> bool {
        let Some(c) = self.checks.get(j % self.checks.len().max(1)) else {
            return false;
        };
        let lh = merkle::leaf_hash(&c.entry.to_leaf());
        merkle::verify_inclusion(&lh, c.index, self.size, &c.path, &c.root).is_ok()
            && c.entry.verify_signature(&c.key).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::cached_store;
    use memlineage::SqliteStore;

    #[test]
    fn store_proofs_verify_and_tampering_fails() {
        let dir = tempfile::tempdir().unwrap();
        let g = cached_store(dir.path(), 200, 4, &mut |_| {}).unwrap();
        let mem = Memory::open(SqliteStore::open(&g.path).unwrap()).unwrap();
        let picked = sample_entries(&mem, &mut Workload::new(1), 16).unwrap();
        let mut fx = StoreVerify::new(&mem, 4, &picked).unwrap();
        assert_eq!((fx.len(), fx.size()), (16, 200));
        assert!(fx.mean_path_len() >= 7.0 && fx.mean_path_len() <= 8.0);
        assert!((0..16).all(|j| fx.check(j)));
        fx.checks[3].root = Hash256::of(b"another root");
        assert!(!fx.check(3));
        // Keys of another seed do not verify.
        assert!(StoreVerify::new(&mem, 5, &picked).is_err());
    }
}
