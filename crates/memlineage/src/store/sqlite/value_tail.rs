//! The handle's copy of the tail (`values.rs`, `ids.rs`): the entries appended since the last
//! merge, whose value keys are in `value_keys_tail` (ordered by entry index) and whose ids are
//! in `entries` alone (not yet in `entry_ids`). Finding a key or an id there directly means
//! scanning; instead each store value keeps the tail's keys and ids in memory and, on each
//! lookup, reads only the rows appended since its last one — inside the lookup's own snapshot,
//! so the copy never answers for rows the snapshot cannot see, nor misses rows it can.
//!
//! Consistency, per lookup (a snapshot of `size` entries whose tail was merged below
//! `below`):
//! - `below` equals the copy's: the copy is extended with the tail rows from where it stopped
//!   up to `size`, and answers with its rows under `size` (another thread may have extended
//!   it further from a newer snapshot);
//! - `below` is newer than the copy's: a merge moved every row under it into `value_keys` and
//!   `entry_ids`, so the copy drops those rows (keeping the ones above `below` it holds, or
//!   starting again at `below`) and is extended as above;
//! - `below` is older (a snapshot begun before a merge that another lookup already saw): the
//!   copy no longer holds the rows this snapshot's tail still has, so the tail is scanned in
//!   the snapshot instead — slower, never wrong.
//!
//! A store written by schema version 1 has no value tail, and one written by version 1 or 2 no
//! `entry_ids`, until it is opened for writing; a lookup through a read-only handle on one
//! finds its keys in `value_keys` and its ids through the unique index those versions keep on
//! `entries.id` (`ids.rs`).

use super::logged_ids::{LoggedIds, Merged};
use super::read::{id_from, index_from};
use super::to_i64;
use crate::error::Error;
use crate::store::rows::EntryRow;
use crate::store::{BackendRead, LoggedIdsSummary};
use memlineage_core::EntryId;
use memlineage_core::gate::ValueKey;
use rusqlite::{Connection, params};
use std::collections::HashMap;

/// The copy's maps, hashed with a per-process random key (`ahash`): the committer updates them
/// for every value key and id it appends, where SipHash was ≈ 1.5 % of its time; keyed, because
/// writers choose the values (and so, with enough tries, the low bits of their keys).
type KeyedMap<K, V> = HashMap<K, V, ahash::RandomState>;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// What one step of a merge moves: `(id, index)` and `(value key, index)` rows, sorted.
pub(super) type MergeRows = (Vec<(EntryId, u64)>, Vec<(ValueKey, u64)>);

/// The copy of one store's tail.
#[derive(Default)]
pub(crate) struct Tail {
    state: Mutex<Copy>,
    /// The value tail table was seen (a version-1 store opened read-only lacks it).
    present: AtomicBool,
    /// The `entry_ids` table was seen (a version-1 or 2 store opened read-only lacks it).
    ids_present: AtomicBool,
    /// The rows of the merge in progress, sorted ([`Tail::merge_rows`]).
    merging: Mutex<Option<Merging>>,
    /// The owner asked for a filter of the merged ids (`logged_ids.rs`): appends build it
    /// when the copy has none, and keep it.
    keep_logged: AtomicBool,
}

/// The rows a merge of the entries in `[below, upto)` moves, sorted.
struct Merging {
    below: u64,
    upto: u64,
    ids: Vec<(EntryId, u64)>,
    keys: Vec<(ValueKey, u64)>,
}

#[derive(Default)]
struct Copy {
    /// The merge point the rows belong to.
    below: u64,
    /// Rows of entries with index < `next` (and ≥ `below`) are held.
    next: u64,
    /// Leaf indices by key, ascending.
    keys: KeyedMap<ValueKey, Vec<u64>>,
    /// Leaf index by id (empty when the store has no `entry_ids`).
    ids: KeyedMap<EntryId, u64>,
    /// The merged ids' filter, when the owner keeps one: the ids this copy drops at a merge
    /// go into it.
    logged: Option<LoggedIds>,
}

/// The tail as one snapshot sees it: through the copy, or (for a snapshot older than the
/// copy's merge point) by scanning the tables.
enum View<'a> {
    Copy {
        copy: MutexGuard<'a, Copy>,
        size: u64,
    },
    Scan {
        below: u64,
        size: u64,
    },
}

impl Tail {
    /// The copy brought up to the snapshot `conn` is in (the caller holds a read
    /// transaction), or where that snapshot is older than the copy, the bounds to scan.
    fn view(&self, conn: &Connection) -> Result<View<'_>, Error> {
        let below = super::values::merged_below(conn)?;
        // The snapshot's log size, read as every other read of the store reads it.
        let size = BackendRead::size(&super::read::Reader(conn, self, &Default::default()))?;
        let ids = self.ids_present(conn)?;
        let mut copy = self
            .state
            .lock()
            .map_err(|_| Error::internal("tail mutex poisoned by a panic in another thread"))?;
        if below < copy.below {
            return Ok(View::Scan { below, size });
        }
        if below > copy.below {
            if below <= copy.next {
                // A merge (`merge_slices.rs`) moved the rows under `below`: the copy keeps the
                // ones above it, which are still the tail, and hands the others' ids to the
                // filter when the filter reaches them.
                let copy = &mut *copy;
                if let Some(logged) = copy.logged.as_mut()
                    && logged.covered() >= copy.below
                {
                    for (id, _) in copy.ids.iter().filter(|&(_, &i)| i < below) {
                        logged.add(id);
                    }
                    logged.cover(below);
                }
                copy.keys.retain(|_, at| {
                    at.retain(|&i| i >= below);
                    !at.is_empty()
                });
                copy.ids.retain(|_, i| *i >= below);
            } else {
                // Emptied, not replaced: the maps keep their capacity for the next tail, which
                // grows to the same size (rehashing a map of ≈ 100,000 keys as it grew from
                // empty was ≈ 1 % of the committer's time per write).
                copy.next = below;
                copy.keys.clear();
                copy.ids.clear();
            }
            copy.below = below;
        }
        if copy.next < size {
            let copy = &mut *copy;
            tail_keys(conn, copy.next, size, |key, index| {
                copy.keys.entry(key).or_default().push(index);
            })?;
            if ids {
                tail_ids(conn, copy.next, size, |id, index| {
                    copy.ids.insert(id, index);
                })?;
            }
            copy.next = size;
        }
        Ok(View::Copy { copy, size })
    }

    /// The tail's carriers of `key` with index ≥ `from`, ascending, as the snapshot `conn` is
    /// in sees them (the caller holds a read transaction).
    pub(super) fn carriers(
        &self,
        conn: &Connection,
        key: &ValueKey,
        from: u64,
    ) -> Result<Vec<u64>, Error> {
        if !self.present(conn)? {
            return Ok(Vec::new());
        }
        match self.view(conn)? {
            View::Scan { .. } => scan(conn, key, from),
            View::Copy { copy, size } => Ok(copy
                .keys
                .get(key)
                .map(|v| {
                    v.iter()
                        .copied()
                        .filter(|&i| i >= from && i < size)
                        .collect()
                })
                .unwrap_or_default()),
        }
    }

    /// The indices of the tail's entries `ids` (`None`: not in the tail) as the snapshot
    /// `conn` is in sees them (the caller holds a read transaction and has checked
    /// [`Tail::ids_present`]).
    pub(super) fn indices_of(
        &self,
        conn: &Connection,
        ids: &[EntryId],
    ) -> Result<Vec<Option<u64>>, Error> {
        match self.view(conn)? {
            View::Copy { copy, size } => Ok(ids
                .iter()
                .map(|id| copy.ids.get(id).copied().filter(|&i| i < size))
                .collect()),
            View::Scan { below, size } => {
                let mut stmt = conn.prepare_cached(
                    "SELECT idx FROM entries WHERE idx >= ?1 AND idx < ?2 AND id = ?3",
                )?;
                let mut found = Vec::with_capacity(ids.len());
                for id in ids {
                    let at: Option<i64> = rusqlite::OptionalExtension::optional(stmt.query_row(
                        params![to_i64(below)?, to_i64(size)?, id.as_bytes().as_slice()],
                        |r| r.get(0),
                    ))?;
                    found.push(at.map(index_from).transpose()?);
                }
                Ok(found)
            }
        }
    }

    /// For an append, whose write transaction `conn` is in (its snapshot is the newest):
    /// whether each of `ids` is in the tail, or may be or surely is not in `entry_ids`, by the
    /// filter of merged ids (`logged_ids.rs`), built or brought up to the snapshot's merge
    /// point first. `None` when the owner keeps no filter, the store has no `entry_ids`, or the
    /// log's merge point went back (a store replaced behind the handle: the filter is dropped,
    /// to be built again).
    pub(super) fn locate_for_append(
        &self,
        conn: &Connection,
        ids: &[EntryId],
    ) -> Result<Option<Vec<Located>>, Error> {
        if !self.keep_logged.load(Ordering::Acquire) || !self.ids_present(conn)? {
            return Ok(None);
        }
        let (mut copy, size) = match self.view(conn)? {
            View::Copy { copy, size } => (copy, size),
            View::Scan { .. } => {
                if let Ok(mut copy) = self.state.lock() {
                    copy.logged = None;
                }
                return Ok(None);
            }
        };
        let copy = &mut *copy;
        let logged = logged_up_to(&mut copy.logged, conn, copy.below)?;
        Ok(Some(
            ids.iter()
                .map(|id| match copy.ids.get(id) {
                    Some(&i) if i < size => Located::Tail,
                    _ => match logged.merged(id) {
                        Merged::Maybe => Located::MaybeMerged,
                        Merged::No => Located::Absent,
                    },
                })
                .collect(),
        ))
    }

    /// From now on, keeps a filter of the merged ids for this store value's appends
    /// (`logged_ids.rs`), built here in the snapshot `conn` is in (the caller holds a read
    /// transaction) when the copy can be brought up to it; `None` when the store has no
    /// `entry_ids` (a version-1 or 2 store opened read-only).
    pub(super) fn keep_logged(&self, conn: &Connection) -> Result<Option<LoggedIdsSummary>, Error> {
        if !self.ids_present(conn)? {
            return Ok(None);
        }
        self.keep_logged.store(true, Ordering::Release);
        match self.view(conn)? {
            View::Copy { mut copy, .. } => {
                let copy = &mut *copy;
                Ok(Some(
                    logged_up_to(&mut copy.logged, conn, copy.below)?.summary(),
                ))
            }
            // An older snapshot than the copy's: the next append builds it.
            View::Scan { .. } => Ok(None),
        }
    }

    /// The tail rows of the entries in `[below, upto)` whose id's (key's) first byte is in
    /// `[from, to)`, in id (key, index) order: what a merge moves into `entry_ids` and
    /// `value_keys` (`merge_slices.rs`). Called inside the append transaction before the
    /// batch's rows are written. The merge's rows are gathered and sorted once, at its first
    /// step through this store value, and each step takes its slices from them (gathering them
    /// at every step would walk the whole copy once per slice).
    pub(super) fn merge_rows(
        &self,
        conn: &Connection,
        below: u64,
        upto: u64,
        from: u16,
        to: u16,
    ) -> Result<MergeRows, Error> {
        let mut merging = self
            .merging
            .lock()
            .map_err(|_| Error::internal("tail mutex poisoned by a panic in another thread"))?;
        let sorted = match merging.take() {
            Some(m) if m.below == below && m.upto == upto => m,
            _ => self.gather(conn, below, upto)?,
        };
        let ids = in_slices(&sorted.ids, |id| id.as_bytes()[0], from, to);
        let keys = in_slices(&sorted.keys, |key| key.as_bytes()[0], from, to);
        *merging = Some(sorted);
        Ok((ids, keys))
    }

    /// Drops the sorted rows of a merge that moved its last slice (if its transaction does not
    /// commit, the next step gathers them again).
    pub(super) fn merge_done(&self) {
        if let Ok(mut merging) = self.merging.lock() {
            *merging = None;
        }
    }

    /// Every tail row of the entries in `[below, upto)`, sorted: from the copy, brought up to
    /// the snapshot (inside the append transaction it holds every committed tail row), or
    /// from the tables if it cannot be.
    fn gather(&self, conn: &Connection, below: u64, upto: u64) -> Result<Merging, Error> {
        let within = |i: u64| i >= below && i < upto;
        let (mut ids, mut keys) = (Vec::new(), Vec::new());
        match self.view(conn)? {
            View::Copy { copy, .. } if copy.below == below && copy.next >= upto => {
                ids.extend(
                    copy.ids
                        .iter()
                        .filter(|&(_, &i)| within(i))
                        .map(|(id, &i)| (*id, i)),
                );
                for (key, at) in &copy.keys {
                    keys.extend(at.iter().filter(|&&i| within(i)).map(|&i| (*key, i)));
                }
            }
            _ => {
                tail_ids(conn, below, upto, |id, index| ids.push((id, index)))?;
                tail_keys(conn, below, upto, |key, index| keys.push((key, index)))?;
            }
        }
        ids.sort_unstable();
        keys.sort_unstable();
        Ok(Merging {
            below,
            upto,
            ids,
            keys,
        })
    }

    /// The index the copy holds for `id`, without reading anything: entries never move, so a
    /// held index is the entry's whatever the caller's snapshot (which may not yet hold it).
    pub(super) fn cached_index(&self, id: &EntryId) -> Option<u64> {
        self.state.lock().ok()?.ids.get(id).copied()
    }

    /// The tail's ids ≥ `from`, ascending, at most `limit`, as the snapshot `conn` is in sees
    /// them (the caller holds a read transaction and has checked [`Tail::ids_present`]).
    pub(super) fn ids_from(
        &self,
        conn: &Connection,
        from: &EntryId,
        limit: usize,
    ) -> Result<Vec<EntryId>, Error> {
        let mut found: Vec<EntryId> = match self.view(conn)? {
            View::Copy { copy, size } => copy
                .ids
                .iter()
                .filter(|&(id, &i)| i < size && id >= from)
                .map(|(id, _)| *id)
                .collect(),
            View::Scan { below, size } => {
                let mut stmt =
                    conn.prepare_cached("SELECT id FROM entries WHERE idx >= ?1 AND idx < ?2")?;
                let rows = stmt.query_map(params![to_i64(below)?, to_i64(size)?], |r| {
                    r.get::<_, Vec<u8>>(0)
                })?;
                let mut ids = Vec::new();
                for bytes in rows {
                    let id = id_from(bytes?, "entry id")?;
                    if id >= *from {
                        ids.push(id);
                    }
                }
                ids
            }
        };
        found.sort_unstable();
        found.truncate(limit);
        Ok(found)
    }

    /// After this store value's append of `entries` (in index order) committed without a
    /// merge: when the copy held every tail row below the first of them, it now holds theirs
    /// too — the rows the append inserted, which the next lookup would otherwise read back
    /// from the tables (the committer's next append first of all, `ids.rs`). A copy that
    /// stopped elsewhere (rows another process appended, not yet read) is left to catch up
    /// by reading, as before.
    pub(super) fn note_appended(&self, entries: &[EntryRow]) {
        let Some(first) = entries.first().map(|e| e.index) else {
            return;
        };
        let Ok(mut copy) = self.state.lock() else {
            return;
        };
        if copy.next != first || first < copy.below {
            return;
        }
        let ids = self.ids_present.load(Ordering::Acquire);
        for e in entries {
            for key in &e.values {
                let at = copy.keys.entry(*key).or_default();
                // `INSERT OR IGNORE`: a key twice in one entry is one row.
                if at.last() != Some(&e.index) {
                    at.push(e.index);
                }
            }
            if ids {
                copy.ids.insert(e.id, e.index);
            }
        }
        if let Some(last) = entries.last() {
            copy.next = last.index + 1;
        }
    }

    /// Drops the copy: the next lookup reads the tail again from the tables.
    pub(super) fn forget(&self) {
        if let Ok(mut copy) = self.state.lock() {
            *copy = Copy::default();
        }
        if let Ok(mut merging) = self.merging.lock() {
            *merging = None;
        }
    }

    fn present(&self, conn: &Connection) -> Result<bool, Error> {
        table_seen(conn, &self.present, "value_keys_tail")
    }

    /// Whether the store has `entry_ids` (schema version 3): if not, ids are found through the
    /// unique index on `entries.id` that versions 1 and 2 keep.
    pub(super) fn ids_present(&self, conn: &Connection) -> Result<bool, Error> {
        table_seen(conn, &self.ids_present, "entry_ids")
    }
}

/// The filter of merged ids covering every entry below `below` in the snapshot `conn` is in:
/// `held`, extended with the ids of the entries it lacks (read from `entries`: a merge the
/// copy did not see, committed by another process), or built from `entry_ids`.
fn logged_up_to<'a>(
    held: &'a mut Option<LoggedIds>,
    conn: &Connection,
    below: u64,
) -> Result<&'a mut LoggedIds, Error> {
    let logged = match held {
        Some(logged) => logged,
        None => held.insert(LoggedIds::build(conn, below)?),
    };
    if logged.covered() < below {
        tail_ids(conn, logged.covered(), below, |id, _| logged.add(&id))?;
        logged.cover(below);
    }
    Ok(logged)
}

/// Where an append's id may be ([`Tail::locate_for_append`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Located {
    /// In the tail: logged.
    Tail,
    /// Perhaps in `entry_ids`: look it up.
    MaybeMerged,
    /// Not in the log.
    Absent,
}

/// Whether the table `name` exists; once seen, remembered in `seen` (tables are never dropped).
fn table_seen(conn: &Connection, seen: &AtomicBool, name: &str) -> Result<bool, Error> {
    if seen.load(Ordering::Acquire) {
        return Ok(true);
    }
    let found: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1")?
        .query_row([name], |r| r.get(0))?;
    if found > 0 {
        seen.store(true, Ordering::Release);
    }
    Ok(found > 0)
}

/// Calls `each` with every `value_keys_tail` row of the entries in `[from, to)`, in index
/// order (a key's indices ascending), as the snapshot `conn` is in sees them.
fn tail_keys(
    conn: &Connection,
    from: u64,
    to: u64,
    mut each: impl FnMut(ValueKey, u64),
) -> Result<(), Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx, key FROM value_keys_tail WHERE idx >= ?1 AND idx < ?2 ORDER BY idx",
    )?;
    let mut rows = stmt.query(params![to_i64(from)?, to_i64(to)?])?;
    while let Some(row) = rows.next()? {
        let index = index_from(row.get(0)?)?;
        each(key_from(row.get(1)?, index)?, index);
    }
    Ok(())
}

/// Calls `each` with the id and index of every entry in `[from, to)`, in index order, as the
/// snapshot `conn` is in sees them.
fn tail_ids(
    conn: &Connection,
    from: u64,
    to: u64,
    mut each: impl FnMut(EntryId, u64),
) -> Result<(), Error> {
    let mut stmt = conn
        .prepare_cached("SELECT idx, id FROM entries WHERE idx >= ?1 AND idx < ?2 ORDER BY idx")?;
    let mut rows = stmt.query(params![to_i64(from)?, to_i64(to)?])?;
    while let Some(row) = rows.next()? {
        let index = index_from(row.get(0)?)?;
        each(id_from(row.get(1)?, "entry id")?, index);
    }
    Ok(())
}

/// The rows of `sorted` (ordered by their first member) whose first byte (`first`) is in
/// `[from, to)`.
fn in_slices<T: std::marker::Copy>(
    sorted: &[(T, u64)],
    first: impl Fn(&T) -> u8,
    from: u16,
    to: u16,
) -> Vec<(T, u64)> {
    let lo = sorted.partition_point(|(t, _)| u16::from(first(t)) < from);
    let hi = sorted.partition_point(|(t, _)| u16::from(first(t)) < to);
    sorted[lo..hi.max(lo)].to_vec()
}

fn key_from(bytes: Vec<u8>, index: u64) -> Result<ValueKey, Error> {
    ValueKey::from_slice(&bytes).ok_or_else(|| {
        Error::integrity(
            crate::error::IntegrityCheck::StoredValue,
            format!("value key of entry {index} is not 16 bytes"),
        )
    })
}

/// The tail's carriers of `key` read from the table itself (a scan of the tail from `from`).
fn scan(conn: &Connection, key: &ValueKey, from: u64) -> Result<Vec<u64>, Error> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx FROM value_keys_tail WHERE idx >= ?1 AND key = ?2 ORDER BY idx",
    )?;
    let rows = stmt.query_map(params![to_i64(from)?, key.as_bytes().as_slice()], |r| {
        r.get::<_, i64>(0)
    })?;
    rows.map(|idx| index_from(idx?)).collect()
}

#[cfg(test)]
mod tests {
    use crate::store::{BackendRead, SqliteStore};
    use crate::{Memory, PrincipalName, Settings, WriteRequest};
    use memlineage_core::EntryId;
    use memlineage_core::entry::EntryKind;
    use memlineage_core::gate::value_keys_of_text;
    use memlineage_core::label::TrustClass;

    const IBANS: [&str; 3] = [
        "GB33 BUKB 2020 1555 5555 55",
        "DE89 3704 0044 0532 0130 00",
        "GB29 NWBK 6016 1331 9268 19",
    ];

    /// The writer's own copy — extended by its appends without reading them back
    /// ([`super::Tail::note_appended`]) — answers every value and id lookup as a fresh store
    /// value reading the tables does, across merges; and an entry already appended is refused
    /// again (the id check reads the copy).
    #[test]
    fn the_writers_copy_extended_by_its_appends_answers_as_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("store.db");
        let operator: PrincipalName = "operator".parse().unwrap();
        let agent: PrincipalName = "agent".parse().unwrap();
        let key = |b: u8| ed25519_dalek::SigningKey::from_bytes(&[b; 32]);
        let mem = Memory::init(
            SqliteStore::open(&file).unwrap().value_tail(7),
            Settings::with_origin("test.local/value-tail"),
            &operator,
            key(1),
        )
        .unwrap();
        mem.add_principal(&agent, TrustClass::Trusted, &key(2).verifying_key())
            .unwrap();
        mem.keys().insert(&agent, key(2));
        let keys: Vec<_> = IBANS
            .iter()
            .flat_map(|i| value_keys_of_text(i))
            .chain(value_keys_of_text("amount 3.00"))
            .collect();
        let mut appended = Vec::new();
        let mut n = 0u64;
        for step in 0..30u64 {
            let reqs: Vec<WriteRequest> = (0..1 + step % 4)
                .map(|k| {
                    n += 1;
                    let iban = IBANS[((step + k) % 3) as usize];
                    let text = format!("note {n}: pay {iban}, amount {}.00", n % 5);
                    WriteRequest::new(&agent, EntryKind::Observation, text)
                })
                .collect();
            let writes = mem.sign_writes(reqs).unwrap();
            mem.append_signed(&writes).unwrap();
            appended.push(writes);
            let size = mem.size().unwrap();
            let fresh = SqliteStore::open(&file).unwrap();
            let (own, tables): (&dyn BackendRead, &dyn BackendRead) = (mem.reads(), &fresh);
            for k in &keys {
                for from in [0, size / 2, size.saturating_sub(2)] {
                    assert_eq!(
                        own.value_carriers(k, from, 1000).unwrap(),
                        tables.value_carriers(k, from, 1000).unwrap(),
                        "step {step}: carriers from {from}"
                    );
                }
            }
            let zero = EntryId(memlineage_core::Hash256([0; 32]));
            assert_eq!(
                own.ids_from(&zero, 1000).unwrap(),
                tables.ids_from(&zero, 1000).unwrap(),
                "step {step}: ids"
            );
            let again = &appended[(step as usize * 7) % appended.len()];
            let refused = mem.append_signed(again).unwrap_err();
            assert!(
                refused.to_string().contains("already in the log"),
                "step {step}: {refused}"
            );
        }
    }
}
