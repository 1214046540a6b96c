//! Signed labels of entries the handle has written or looked up, so that labelling a child
//! need not ask the store for each parent (an indexed SQLite lookup, ≈ 4 µs, was a sixth of
//! a durable batch's drafting).
//!
//! Sound because a signed label never changes: it is part of the body the id hashes, and the
//! log is append-only, so an entry once appended (by this handle) or found in the log stays
//! there with that label. Only the *effective* label can change — raised by a distrust record,
//! possibly committed by another process — so the write path uses the cache only while the
//! log holds no distrust record at all (then effective = signed); the append guard re-checks
//! every label inside the transaction whenever a distrust record committed meanwhile
//! ([`super::relabel`]).

use memlineage_core::EntryId;
use memlineage_core::label::TrustLabel;
use std::collections::HashMap;
use std::sync::Mutex;

/// The most labels kept; the cache is emptied when it would grow beyond (recent parents
/// are soon cached again), so its memory stays bounded (≈ 3 MiB).
const MAX_LABELS: usize = 1 << 16;

/// Entry id → signed label, hashed with a per-process random key (`ahash`; ids are chosen by
/// whoever writes).
#[derive(Debug, Default)]
pub(super) struct LabelCache {
    labels: Mutex<HashMap<EntryId, TrustLabel, ahash::RandomState>>,
}

impl LabelCache {
    /// The signed label of `id`, when cached. A poisoned lock is a miss.
    pub(super) fn get(&self, id: &EntryId) -> Option<TrustLabel> {
        self.labels.lock().ok()?.get(id).copied()
    }

    /// Caches signed labels of entries that are in the log.
    pub(super) fn extend(&self, labels: impl IntoIterator<Item = (EntryId, TrustLabel)>) {
        let Ok(mut map) = self.labels.lock() else {
            return;
        };
        for (id, label) in labels {
            if map.len() >= MAX_LABELS {
                map.clear();
            }
            map.insert(id, label);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    #[test]
    fn caches_and_stays_bounded() {
        let cache = LabelCache::default();
        let id = |n: u32| EntryId(Hash256::of(&n.to_le_bytes()));
        assert_eq!(cache.get(&id(1)), None);
        cache.extend([(id(1), TrustLabel::External)]);
        assert_eq!(cache.get(&id(1)), Some(TrustLabel::External));
        cache.extend((0..MAX_LABELS as u32 + 10).map(|n| (id(n), TrustLabel::Trusted)));
        let len = cache.labels.lock().unwrap().len();
        assert!(len <= MAX_LABELS, "{len}");
        assert_eq!(
            cache.get(&id(MAX_LABELS as u32 + 9)),
            Some(TrustLabel::Trusted)
        );
    }
}
