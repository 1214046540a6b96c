//! The signed labels of a retrieval's parents, their leaves read in one store call.
//!
//! Retrieval checks each returned entry's signed label against its parents' signed labels,
//! each read from the parent's leaf, decoded strictly, its body hashing to the parent id
//! (`retrieve.rs`). A result set of eight has about sixteen distinct parents; one store read
//! each was an eighth of a retrieval. [`ParentLabels::prefetch`] reads the leaves of all of
//! them at once (`BackendRead::entries_by_id`, one SQL statement), before the checks; each is
//! still decoded and checked when — and only if — a label check needs it, exactly as a single
//! read would be. A parent the batch did not cover (the read failed, or the list was longer
//! than [`PREFETCH_MAX`]) is read on its own when needed, so errors land where they did.
//!
//! Nothing else changes: a label is remembered once decoded (a parent shared by several
//! entries, or itself returned, is decoded once; and across retrievals by the handle's
//! [`VerifiedCache`], the label being part of the body that hashes to the id), and a parent
//! whose leaf fails to decode fails every entry that names it, with the same error.

use super::EntryView;
use super::verified_cache::VerifiedCache;
use crate::error::Error;
use crate::store::{BackendRead, StoredEntry};
use memlineage_core::EntryId;
use memlineage_core::label::TrustLabel;
use std::collections::HashMap;

/// The most parents read ahead in one retrieval: bounds the leaves held at once (a recall of
/// many entries with many parents reads the rest when it needs them).
const PREFETCH_MAX: usize = 256;

/// Signed labels by entry id, for one retrieval.
pub(super) struct ParentLabels<'s> {
    store: &'s dyn BackendRead,
    /// The signed labels this handle read before (`verified_cache.rs`).
    remembered: &'s VerifiedCache,
    /// Labels decoded so far (returned entries and parents).
    labels: HashMap<EntryId, TrustLabel>,
    /// Parents read ahead and not yet decoded (`None`: not in the log).
    read_ahead: HashMap<EntryId, Option<StoredEntry>>,
}

impl<'s> ParentLabels<'s> {
    pub(super) fn new(store: &'s dyn BackendRead, remembered: &'s VerifiedCache) -> Self {
        ParentLabels {
            store,
            remembered,
            labels: HashMap::new(),
            read_ahead: HashMap::new(),
        }
    }

    /// Remembers the signed label of an entry decoded elsewhere (a returned entry).
    pub(super) fn insert(&mut self, id: EntryId, label: TrustLabel) {
        self.labels.insert(id, label);
        self.remembered.remember_label(id, label);
    }

    /// Reads ahead, in one store call, the leaves of those of `ids` whose label is not known
    /// yet. A failed read is not an error here: each parent is then read when needed.
    pub(super) fn prefetch(&mut self, ids: impl IntoIterator<Item = EntryId>) {
        let mut wanted: Vec<EntryId> = ids
            .into_iter()
            .filter(|id| !self.labels.contains_key(id))
            .filter(|id| self.remembered.label(id).is_none())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        wanted.truncate(PREFETCH_MAX);
        if let Ok(all) = self.store.entries_by_id(&wanted)
            && all.len() == wanted.len()
        {
            self.read_ahead = wanted.into_iter().zip(all).collect();
        }
    }

    /// The signed label of the entry `id`, from its leaf (decoded strictly, its body hashing
    /// to `id`); a parent missing from the log is [`Error::UnknownParent`].
    pub(super) fn label_of(&mut self, id: &EntryId) -> Result<TrustLabel, Error> {
        if let Some(label) = self.labels.get(id) {
            return Ok(*label);
        }
        if let Some(label) = self.remembered.label(id) {
            self.labels.insert(*id, label);
            return Ok(label);
        }
        let stored = match self.read_ahead.remove(id) {
            Some(stored) => stored,
            None => self.store.entry_by_id(id)?,
        };
        let label = EntryView::from_stored(stored.ok_or(Error::UnknownParent(*id))?)?.label;
        self.labels.insert(*id, label);
        self.remembered.remember_label(*id, label);
        Ok(label)
    }
}
