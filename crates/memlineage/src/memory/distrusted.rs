//! The distrust records of the log, replayed (retroactive distrust, beyond the paper; see
//! `docs/lineage.md`).
//!
//! The write path and retrieval keep this replay beside the principal registry, refreshed
//! from the log when another writer appended. It answers two questions from the signed log
//! alone, never from the store's derived `effective` table: was this entry distrusted, and was
//! this principal distrusted before a given log index (then everything it writes from there on
//! is labelled as an external writer's, `EXTERNAL`).

use crate::error::{Error, IntegrityCheck, IntegrityError};
use crate::store::{BackendRead, ControlRecord};
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::label::TrustClass;
use memlineage_core::principal::Registry;
use memlineage_core::records::{Distrust, DistrustTarget};
use memlineage_core::{EntryId, Hash256};
use std::collections::HashMap;

/// Distrust records replayed from the log, up to some log size.
#[derive(Clone, Debug, Default)]
pub(crate) struct DistrustLog {
    /// The next log index to replay from.
    next: u64,
    /// Distrusted entry → index of the first distrust record naming it.
    entries: HashMap<EntryId, u64>,
    /// Distrusted principal → index of the first distrust record naming it.
    principals: HashMap<String, u64>,
    /// Index of the latest distrust record replayed.
    latest: Option<u64>,
}

impl DistrustLog {
    /// Replays the distrust records with index ≥ the last one seen, the log's `size` having been
    /// read (by `reader`) before: a record appended after that read has an index at or above it
    /// and is found by the next catch-up, so advancing to it never skips one. Each record's
    /// content must match its signed content hash (the content is what names the target).
    pub(crate) fn catch_up_to(&mut self, reader: &dyn BackendRead, size: u64) -> Result<(), Error> {
        let records = reader.control_records(EntryKind::Distrust, self.next)?;
        self.apply_records(&records)?;
        self.next = self.next.max(size);
        Ok(())
    }

    /// The log index from which the next catch-up replays.
    pub(crate) fn next(&self) -> u64 {
        self.next
    }

    /// True when a distrust record at log index `from` or later has been replayed.
    pub(crate) fn any_since(&self, from: u64) -> bool {
        self.latest.is_some_and(|l| l >= from)
    }

    /// Replays records fetched with [`BackendRead::control_records`].
    pub(crate) fn apply_records(&mut self, records: &[ControlRecord]) -> Result<(), Error> {
        for rec in records {
            let broken = |detail: String| -> Error {
                IntegrityError::new(IntegrityCheck::ControlRecord, detail)
                    .at(rec.index)
                    .into()
            };
            let entry = SignedEntry::from_leaf(&rec.leaf).map_err(|e| {
                broken(format!(
                    "distrust record at index {} does not decode: {e}",
                    rec.index
                ))
            })?;
            if entry.body().kind != EntryKind::Distrust {
                return Err(broken(format!(
                    "the entry at index {} is indexed as a distrust record but its signed kind is {} (run `memlineage verify`)",
                    rec.index,
                    entry.body().kind
                )));
            }
            if Hash256::of(&rec.content) != entry.body().content_hash {
                return Err(broken(format!(
                    "distrust record at index {} does not match its signed content hash (run `memlineage verify`)",
                    rec.index
                )));
            }
            let d = Distrust::from_content(&rec.content)
                .map_err(|e| broken(format!("distrust record at index {}: {e}", rec.index)))?;
            self.apply(rec.index, &d);
        }
        Ok(())
    }

    /// Records one distrust record logged at `index`.
    pub(crate) fn apply(&mut self, index: u64, d: &Distrust) {
        match &d.target {
            DistrustTarget::Entry(id) => {
                self.entries.entry(*id).or_insert(index);
            }
            DistrustTarget::Principal(name) => {
                self.principals.entry(name.clone()).or_insert(index);
            }
        }
        self.next = self.next.max(index + 1);
        self.latest = Some(self.latest.map_or(index, |l| l.max(index)));
    }

    /// True when no distrust record has been seen.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.principals.is_empty()
    }

    /// True when a distrust record names this entry, or the principal that wrote it.
    pub(crate) fn targets(&self, id: &EntryId, writer: &str) -> bool {
        self.entries.contains_key(id) || self.principals.contains_key(writer)
    }

    /// The index of the distrust record that distrusted `writer` before log index `index`.
    pub(crate) fn principal_before(&self, writer: &str, index: u64) -> Option<u64> {
        self.principals
            .get(writer)
            .copied()
            .filter(|at| *at < index)
    }

    /// The class an entry by `writer` logged at `index` is labelled with: the writer's
    /// registered class, or `External` once a distrust record named the writer.
    pub(crate) fn class_at(&self, registry: &Registry, writer: &str, index: u64) -> TrustClass {
        match registry.get(writer) {
            Some(p) if self.principal_before(writer, index).is_none() => p.class,
            _ => TrustClass::External,
        }
    }

    /// The lowest log index an entry affected by some distrust record can have: entries logged
    /// before it are neither targets nor descendants of one, so their effective label is their
    /// signed label. `None` when nothing is distrusted.
    pub(crate) fn first_affected(
        &self,
        reader: &dyn BackendRead,
        registry: &Registry,
    ) -> Result<Option<u64>, Error> {
        let mut first: Option<u64> = None;
        let mut lower = |i: u64| first = Some(first.map_or(i, |f| f.min(i)));
        for id in self.entries.keys() {
            // A target that is not in the log cannot be an ancestor of anything in it.
            if let Some(e) = reader.entry_by_id(id)? {
                lower(e.index);
            }
        }
        for name in self.principals.keys() {
            // A principal's entries all follow its registration.
            let added = registry
                .get(name)
                .and_then(|p| p.keys.first())
                .map_or(0, |k| k.added_at);
            lower(added);
        }
        Ok(first)
    }
}
