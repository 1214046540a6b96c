//! The principal registry and the distrust records, replayed from the log and cached by the
//! handle (DESIGN.md: principals, rotations and revocations are signed log records).
//!
//! The cache is refreshed from the log whenever another writer appended. Operations take shared
//! `Arc` snapshots of it; a refresh copies only while such a snapshot is held. A refresh first
//! reads the log's size: when no entry was appended since the cache last looked, there is no
//! record to replay, and the two range reads of registry and distrust records are skipped (one
//! read per retrieval or gate step instead of three).
//!
//! **Lock order.** The cache's lock is never held while the backend is called: a refresh takes
//! the cached state, releases the lock, reads the new records (perhaps through a read snapshot
//! that holds a connection or a lock of the backend), and installs what it replayed only if it
//! is newer than what the cache holds by then. So a thread holding a snapshot and one holding
//! the cache can never wait for each other.

use super::Memory;
use super::distrusted::DistrustLog;
use crate::error::{Error, IntegrityCheck, IntegrityError};
use crate::store::BackendRead;
use memlineage_core::entry::{EntryKind, SignedEntry};
use memlineage_core::principal::Registry;
use memlineage_core::records::RegistryChange;
use std::sync::{Arc, Mutex};

/// The registry as of some log size, and the distrust records replayed beside it.
#[derive(Clone, Default)]
pub(super) struct Replayed {
    pub(super) registry: Arc<Registry>,
    /// The next log index the registry replays from.
    pub(super) next: u64,
    /// Every registry record below this log size is replayed (`next` is past the last one,
    /// which may lie far below).
    pub(super) checked_to: u64,
    pub(super) distrust: Arc<DistrustLog>,
}

/// The cached replay.
#[derive(Default)]
pub(super) struct RegistryCache(Mutex<Replayed>);

impl RegistryCache {
    /// The cached replay (shared, not copied).
    pub(super) fn get(&self) -> Result<Replayed, Error> {
        Ok(self.lock()?.clone())
    }

    /// Installs a replay that reaches further than the cached one (or as far, with the distrust
    /// records further).
    pub(super) fn offer(&self, replay: Replayed) -> Result<(), Error> {
        let mut cached = self.lock()?;
        if replay.next > cached.next {
            cached.registry = replay.registry;
            cached.next = replay.next;
        }
        // Replays are prefixes of one log: the one that reaches further in records covers
        // every record below either size checked.
        cached.checked_to = cached.checked_to.max(replay.checked_to);
        if replay.distrust.next() > cached.distrust.next() {
            cached.distrust = replay.distrust;
        }
        Ok(())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Replayed>, Error> {
        self.0
            .lock()
            .map_err(|_| Error::internal("registry cache poisoned by a panic in another thread"))
    }
}

impl Memory {
    /// The registry, caught up with the log (through the backend's own reads).
    pub(super) fn refresh_registry(&self) -> Result<Arc<Registry>, Error> {
        Ok(self.refresh_in(self.reads(), false)?.registry)
    }

    /// The registry and the distrust records, caught up with the log as `reader` sees it:
    /// snapshots shared with the cache, not copies.
    pub(super) fn refresh_registry_and_distrust(
        &self,
        reader: &dyn BackendRead,
    ) -> Result<Replayed, Error> {
        self.refresh_in(reader, true)
    }

    fn refresh_in(&self, reader: &dyn BackendRead, distrust: bool) -> Result<Replayed, Error> {
        let mut replay = self.cache.get()?;
        let before = (replay.next, replay.checked_to, replay.distrust.next());
        // Read first: a record appended after it has an index at or above it and is found by
        // the next refresh.
        let size = reader.size()?;
        if size <= replay.checked_to && (!distrust || size <= replay.distrust.next()) {
            // Nothing appended since the last look: nothing to replay.
            return Ok(replay);
        }
        let fresh = reader.control_records(EntryKind::Registry, replay.next)?;
        if !fresh.is_empty() {
            catch_up(
                &fresh,
                Arc::make_mut(&mut replay.registry),
                &mut replay.next,
            )?;
        }
        replay.checked_to = replay.checked_to.max(size);
        if distrust {
            Arc::make_mut(&mut replay.distrust).catch_up_to(reader, size)?;
        }
        if (replay.next, replay.checked_to, replay.distrust.next()) != before {
            self.cache.offer(replay.clone())?;
        }
        Ok(replay)
    }
}

/// Replays stored registry `records` into `registry`, advancing `next`. A record that does not
/// replay is an integrity error: every stored record passed the registry checks of the
/// handle that appended it.
pub(super) fn catch_up(
    records: &[crate::store::ControlRecord],
    registry: &mut Registry,
    next: &mut u64,
) -> Result<(), Error> {
    for rec in records {
        let index = rec.index;
        let broken = |detail: String| -> Error {
            IntegrityError::new(IntegrityCheck::ControlRecord, detail)
                .at(index)
                .into()
        };
        let entry = SignedEntry::from_leaf(&rec.leaf).map_err(|e| {
            broken(format!(
                "registry record at index {index} does not decode: {e}"
            ))
        })?;
        if entry.body().kind != EntryKind::Registry {
            return Err(broken(format!(
                "the entry at index {index} is indexed as a registry record but its signed kind is {} (run `memlineage verify`)",
                entry.body().kind
            )));
        }
        if memlineage_core::Hash256::of(&rec.content) != entry.body().content_hash {
            return Err(broken(format!(
                "registry record at index {index} does not match its signed content hash"
            )));
        }
        let replayed = RegistryChange::from_content(&rec.content)
            .map_err(Error::from)
            .and_then(|change| {
                registry.verify_record_signature(index, &entry, &change)?;
                registry.apply(index, &entry, &change)?;
                Ok(())
            });
        replayed.map_err(|e| broken(format!("registry record at index {index}: {e}")))?;
        *next = index + 1;
    }
    Ok(())
}
