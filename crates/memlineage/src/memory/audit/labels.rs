//! The labels the audit needs of earlier entries — a child's signed label is checked against
//! its parents' signed labels, its effective label recomputed from theirs — in memory that
//! does not grow with the ids of the log.
//!
//! Labels are kept by leaf index, one byte per entry (signed label and effective label, a
//! nibble each). A parent is named by id, so the id must be turned into an index: ids of the
//! last [`WINDOW`] entries are held in a map (parents are nearly always recent); an older
//! parent is looked up in the store by id and *authenticated* before its label is used: the
//! index the store names must be earlier than the child, pass 1 must have decoded an entry
//! there, the leaf the store returns must hash to the id named, and its leaf hash must equal
//! the stored leaf node that pass 1 compared with the leaf it read at that index. So a store
//! that answers with the wrong entry is never believed: the parent is then "not earlier in the
//! log", as when no entry has that id. Entries whose indexed id is not their body's id (pass 1
//! reports each) are kept apart by body id, so they are found as they were before.
//!
//! Memory: one byte per entry plus a fixed window (≈ 6 MiB), instead of a hash map of every
//! id (≈ 350 MiB at 10^6 entries with the maps it replaced).

use crate::error::Error;
use crate::store::BackendRead;
use memlineage_core::EntryId;
use memlineage_core::entry::SignedEntry;
use memlineage_core::label::TrustLabel;
use memlineage_core::merkle::{self, NodeId};
use std::collections::{HashMap, HashSet};

/// Ids of this many most recent entries are kept in memory (a few in unit tests, so that
/// they exercise the look-ups of older parents).
pub(super) const WINDOW: usize = if cfg!(test) { 16 } else { 1 << 16 };

/// Where a parent was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Found {
    /// Its leaf index.
    pub(super) index: u64,
    /// Its signed label.
    pub(super) signed: TrustLabel,
    /// Its effective label, when the derived-state audit computed one (entries whose leaf
    /// does not decode to their indexed id have none).
    pub(super) effective: Option<TrustLabel>,
}

fn code(label: TrustLabel) -> u8 {
    TrustLabel::ALL
        .iter()
        .position(|l| *l == label)
        .map_or(0, |p| p as u8 + 1)
}

fn label(code: u8) -> Option<TrustLabel> {
    TrustLabel::ALL
        .get(usize::from(code.checked_sub(1)?))
        .copied()
}

/// Labels by index, and ids to indices.
#[derive(Debug)]
pub(super) struct Labels {
    /// Low nibble: signed label code (0: no decoded entry); high nibble: effective label code.
    by_index: Vec<u8>,
    /// Body id → index, for the entries of the window.
    recent: HashMap<EntryId, u64>,
    /// The window's ids by `index % WINDOW`, to evict the oldest.
    ring: Vec<Option<EntryId>>,
    /// One past the highest index noted: while it is at most the ring's length, nothing has
    /// been evicted and the map holds every decoded entry.
    noted_end: u64,
    /// Body id → index of entries whose indexed id differs (found by the store under another id).
    misindexed: HashMap<EntryId, u64>,
    /// Leaves below this index had their stored leaf node compared with the leaf read.
    nodes_checked: u64,
    /// Indices whose stored leaf node was missing or differed.
    bad_nodes: HashSet<u64>,
}

impl Labels {
    /// Room for a log of `total` entries.
    pub(super) fn new(total: u64) -> Labels {
        Labels::with_window(total, WINDOW)
    }

    fn with_window(total: u64, window: usize) -> Labels {
        let cap = usize::try_from(total).unwrap_or(0);
        Labels {
            by_index: Vec::with_capacity(cap),
            recent: HashMap::with_capacity(window.min(cap)),
            ring: vec![None; window.min(cap.max(1))],
            noted_end: 0,
            misindexed: HashMap::new(),
            nodes_checked: 0,
            bad_nodes: HashSet::new(),
        }
    }

    fn slot(&mut self, index: u64) -> Option<&mut u8> {
        let i = usize::try_from(index).ok()?;
        if self.by_index.len() <= i {
            self.by_index.resize(i + 1, 0);
        }
        self.by_index.get_mut(i)
    }

    fn at(&self, index: u64) -> u8 {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.by_index.get(i))
            .copied()
            .unwrap_or(0)
    }

    /// Notes the decoded entry `id` at `index` (indexed as `indexed`) and its signed label.
    pub(super) fn note_signed(
        &mut self,
        index: u64,
        id: EntryId,
        indexed: EntryId,
        signed: TrustLabel,
    ) {
        if let Some(s) = self.slot(index) {
            *s = (*s & 0xf0) | code(signed);
        }
        if id != indexed {
            self.misindexed.insert(id, index);
        }
        let len = self.ring.len().max(1);
        let pos = usize::try_from(index % len as u64).unwrap_or(0);
        if let Some(Some(old)) = self.ring.get(pos).copied()
            && self
                .recent
                .get(&old)
                .is_some_and(|i| *i + len as u64 <= index)
        {
            self.recent.remove(&old);
        }
        if let Some(r) = self.ring.get_mut(pos) {
            *r = Some(id);
        }
        self.recent.insert(id, index);
        self.noted_end = self.noted_end.max(index + 1);
    }

    /// Empties the window of ids (before the log is read again from the start); the labels by
    /// index stay.
    pub(super) fn reset_window(&mut self) {
        self.recent.clear();
        self.ring.iter_mut().for_each(|r| *r = None);
        self.noted_end = 0;
    }

    /// Notes the effective label the derived-state audit computed for the entry at `index`.
    pub(super) fn note_effective(&mut self, index: u64, effective: TrustLabel) {
        if let Some(s) = self.slot(index) {
            *s = (*s & 0x0f) | (code(effective) << 4);
        }
    }

    /// Forgets every effective label (before the derived state is audited again).
    pub(super) fn clear_effective(&mut self) {
        for s in &mut self.by_index {
            *s &= 0x0f;
        }
    }

    /// Notes that the stored leaf nodes of every leaf below `size` have been compared.
    pub(super) fn nodes_checked_to(&mut self, size: u64) {
        self.nodes_checked = self.nodes_checked.max(size);
    }

    /// Notes that the stored leaf node at `index` was missing or differed.
    pub(super) fn bad_node(&mut self, index: u64) {
        self.bad_nodes.insert(index);
    }

    fn found(&self, index: u64) -> Option<Found> {
        let c = self.at(index);
        Some(Found {
            index,
            signed: label(c & 0x0f)?,
            effective: label(c >> 4),
        })
    }

    /// The entry with body id `id` logged before `before`, if pass 1 decoded one.
    pub(super) fn find(
        &self,
        store: &dyn BackendRead,
        id: &EntryId,
        before: u64,
    ) -> Result<Option<Found>, Error> {
        if let Some(&i) = self.recent.get(id).or_else(|| self.misindexed.get(id)) {
            return Ok(self.found(i).filter(|f| f.index < before));
        }
        if self.noted_end <= self.ring.len() as u64 {
            // Nothing was evicted: every decoded entry is in the window.
            return Ok(None);
        }
        // Evicted, or never logged: ask the store, and believe it only if its answer is the
        // leaf pass 1 read at that index (an entry still in the window fails this too).
        let Some(stored) = store.entry_by_id(id)? else {
            return Ok(None);
        };
        let j = stored.index;
        if j >= before
            || j >= self.nodes_checked
            || self.bad_nodes.contains(&j)
            || self.found(j).is_none()
        {
            return Ok(None);
        }
        let authentic = store
            .nodes(&[NodeId::leaf(j)])
            .ok()
            .and_then(|h| h.first().copied())
            .is_some_and(|h| h == merkle::leaf_hash(&stored.leaf))
            && SignedEntry::from_leaf(&stored.leaf).is_ok_and(|e| e.id() == *id);
        Ok(if authentic { self.found(j) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    fn id(n: u64) -> EntryId {
        EntryId(Hash256::of(&n.to_le_bytes()))
    }

    #[test]
    fn codes_round_trip() {
        for l in TrustLabel::ALL {
            assert_eq!(label(code(l)), Some(l));
        }
        assert_eq!(label(0), None);
    }

    #[test]
    fn window_finds_recent_and_evicts_old() {
        let store = crate::store::MemoryStore::new();
        let mut labels = Labels::with_window(100, 4);
        for n in 0..10 {
            labels.note_signed(n, id(n), id(n), TrustLabel::External);
        }
        labels.note_effective(9, TrustLabel::External);
        let f = labels.find(&store, &id(9), 10).unwrap().unwrap();
        assert_eq!(
            (f.index, f.signed, f.effective),
            (9, TrustLabel::External, Some(TrustLabel::External))
        );
        assert_eq!(
            labels.find(&store, &id(8), 10).unwrap().unwrap().effective,
            None
        );
        // Not earlier than the child.
        assert_eq!(labels.find(&store, &id(9), 9).unwrap(), None);
        // Evicted, and the store has no such entry.
        assert_eq!(labels.find(&store, &id(2), 10).unwrap(), None);
        // A misindexed entry is found by its body id even after eviction.
        labels.note_signed(10, id(100), id(101), TrustLabel::Trusted);
        for n in 11..20 {
            labels.note_signed(n, id(n), id(n), TrustLabel::Trusted);
        }
        assert_eq!(
            labels.find(&store, &id(100), 20).unwrap().unwrap().index,
            10
        );
        labels.clear_effective();
        assert_eq!(
            labels.find(&store, &id(19), 20).unwrap().unwrap().effective,
            None
        );
    }
}
