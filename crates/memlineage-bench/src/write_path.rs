//! The library's write path in memory: [`Memory::write`] on a [`MemoryStore`], the operation
//! behind the `write_hot_path_mem` row.
//!
//! Each write is a typical derived entry: `agent` writes about 180 bytes of text in a
//! four-segment scope, with a context hash, one metadata pair and two parents (weights 0.7
//! and 0.2) drawn from a pool of 256 root entries (`user` and `web`/`email` mixed, so labels
//! vary). [`Memory::write`] does everything it does on any store: registry refresh, key and
//! registry checks, the parents' effective labels from the store, label propagation, content
//! hash, canonical encoding, the Ed25519 signature, then the guarded append (re-checks in the
//! transaction), the leaf, the Merkle nodes it completes, the edge, writer and search indexes.

use crate::error::BenchError;
use crate::fixtures::{START_MS, TYPICAL_SCOPE, Workload, fresh_memory_on, name};
use memlineage::store::MemoryStore;
use memlineage::{AttributionName, Memory, PrincipalName, WriteRequest, Written};
use memlineage_core::entry::{EntryKind, Parent, Scope};
use memlineage_core::label::Weight;
use memlineage_core::{EntryId, Hash256};

/// Texts cycled through by the writes.
const TEXTS: usize = 64;

/// `Memory::write` of typical derived entries to an in-memory store.
pub struct MemWrite {
    mem: Memory,
    pool: Vec<EntryId>,
    texts: Vec<String>,
    scope: Scope,
    agent: PrincipalName,
    n: u64,
}

impl MemWrite {
    /// A fresh in-memory store with the fixture principals and 256 root entries.
    pub fn new(seed: u64) -> Result<MemWrite, BenchError> {
        let (mem, pool, _) = fresh_memory_on(MemoryStore::new(), seed, 256)?;
        let mut w = Workload::new(seed ^ 0x3177);
        let texts = (0..TEXTS).map(|_| w.next_entry(0).1).collect();
        Ok(MemWrite {
            mem,
            pool,
            texts,
            scope: Scope::new(TYPICAL_SCOPE).map_err(BenchError::core)?,
            agent: name("agent")?,
            n: 0,
        })
    }

    /// The next request: a derived entry with two parents from the pool.
    pub fn request(&mut self) -> WriteRequest {
        self.n += 1;
        let n = self.n as usize;
        let len = self.pool.len().max(1);
        let pick = |k: usize| self.pool.get(k % len).copied();
        let weight = |bp: u16| Weight::from_bp(bp).unwrap_or(Weight::ONE);
        let parents: Vec<Parent> = [(pick(n * 7), 7000), (pick(n * 13 + 1), 2000)]
            .into_iter()
            .filter_map(|(id, bp)| {
                id.map(|id| Parent {
                    id,
                    weight: weight(bp),
                })
            })
            .collect();
        let text = &self.texts[n % self.texts.len()];
        WriteRequest::new(&self.agent, EntryKind::Derived, text.as_bytes())
            .with_scope(self.scope.clone())
            .with_context(Hash256::of(&(START_MS + self.n).to_le_bytes()))
            .with_parents(parents, AttributionName::EXPLICIT)
            .with_meta("session", "s42")
    }

    /// Writes one entry with [`Memory::write`].
    pub fn write_one(&mut self) -> Result<Written, BenchError> {
        let req = self.request();
        Ok(self.mem.write(req)?)
    }

    /// The memory handle (for checks).
    pub fn memory(&self) -> &Memory {
        &self.mem
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_real_signed_entries() {
        let mut w = MemWrite::new(3).unwrap();
        let before = w.memory().size().unwrap();
        let mut labels = std::collections::HashSet::new();
        for _ in 0..40 {
            let out = w.write_one().unwrap();
            labels.insert(out.label);
            let view = w.memory().get(&out.id).unwrap();
            assert_eq!(view.entry.body().parents.len(), 2);
        }
        assert_eq!(w.memory().size().unwrap(), before + 40);
        assert!(labels.len() >= 2, "{labels:?}");
        let report = w.memory().verify(&mut |_, _| {}).unwrap();
        assert!(report.ok(), "{:?}", report.problems);
    }
}
