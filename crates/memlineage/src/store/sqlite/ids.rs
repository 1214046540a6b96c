//! Finding an entry's leaf index by its id (schema version 3, `docs/store.md`, "Id index").
//!
//! An id is a SHA-256 hash, so a B-tree ordered by id puts every new entry on a leaf page of
//! its own once the index outgrows a group commit: SQLite writes each dirtied 4 KiB page to the
//! WAL at the commit and again into the database file at the checkpoint. As the unique index
//! on `entries.id` (versions 1 and 2) that was about two fifths of the pages a small store's
//! group commit wrote, and a larger share the larger the store. So the ids of the entries
//! appended since the last merge are found in `entries` itself (ordered by index, through the
//! handle's copy of the tail, `value_tail.rs`), and the merge of the value index's tail
//! (`values.rs`, `merge_slices.rs`) also inserts those entries' ids into `entry_ids` in sorted
//! passes, which dirty each of its leaf pages at most once for thousands of entries. The merge
//! point is the value index's: `entry_ids` holds every entry below it (and during a merge in
//! slices some above it, which the tail holds too).
//!
//! A store made by version 1 or 2 keeps its unique index on `entries.id`: upgraded, it gains
//! `entry_ids` (filled in the upgrade's transaction) and is read like a new one; opened
//! read-only without upgrading, its ids are found through that index.

use super::buckets;
use super::read::index_from;
use super::to_i64;
use super::value_tail::{Located, Tail};
use crate::error::{Error, IntegrityCheck};
use memlineage_core::EntryId;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashSet;

/// Reads the entries `ids` (in the order asked, duplicates allowed; `None`: not in the
/// snapshot) through `read`, which reads rows by leaf index in the order asked and returns
/// each with its id. An index the handle's copy holds is tried first without a lookup: entries
/// never move, so a held index names where the entry is if the snapshot has it (the copy may be
/// ahead of it); the rest, and any the copy named wrongly, are looked up in the snapshot.
pub(super) fn read_by_id<T>(
    conn: &Connection,
    tail: &Tail,
    ids: &[EntryId],
    read: impl Fn(&[u64]) -> Result<Vec<Option<(EntryId, T)>>, Error>,
) -> Result<Vec<Option<T>>, Error> {
    let mut found: Vec<Option<T>> = ids.iter().map(|_| None).collect();
    let (mut guessed, mut missing): (Vec<(usize, u64)>, Vec<usize>) = (Vec::new(), Vec::new());
    for (at, id) in ids.iter().enumerate() {
        match tail.cached_index(id) {
            Some(index) => guessed.push((at, index)),
            None => missing.push(at),
        }
    }
    if !guessed.is_empty() {
        let indices: Vec<u64> = guessed.iter().map(|&(_, i)| i).collect();
        for (&(at, _), row) in guessed.iter().zip(read(&indices)?) {
            match row {
                Some((id, value)) if id == ids[at] => found[at] = Some(value),
                _ => missing.push(at),
            }
        }
    }
    if missing.is_empty() {
        return Ok(found);
    }
    missing.sort_unstable();
    let asked: Vec<EntryId> = missing.iter().map(|&at| ids[at]).collect();
    let indices = indices_in_snapshot(conn, tail, &asked)?;
    let located: Vec<(usize, u64)> = missing
        .iter()
        .zip(&indices)
        .filter_map(|(&at, i)| i.map(|i| (at, i)))
        .collect();
    let wanted: Vec<u64> = located.iter().map(|&(_, i)| i).collect();
    for (&(at, index), row) in located.iter().zip(read(&wanted)?) {
        match row {
            Some((id, value)) if id == ids[at] => found[at] = Some(value),
            Some(_) => return Err(mismatch(&ids[at], index)),
            // The row is gone (deleted behind the program's back; `verify` names the gap):
            // the entry is not in the log, as without the index.
            None => {}
        }
    }
    Ok(found)
}

/// The indices of entries `ids` in the snapshot `conn` is in, or in one begun here (`None`:
/// not in it): `entry_ids` below the merge point, the tail above it, read in one snapshot so
/// that a merge committed between the two reads cannot hide an entry from both.
pub(super) fn indices_in_snapshot(
    conn: &Connection,
    tail: &Tail,
    ids: &[EntryId],
) -> Result<Vec<Option<u64>>, Error> {
    super::values::in_read_transaction(conn, |conn| {
        if !tail.ids_present(conn)? {
            return ids.iter().map(|id| legacy(conn, id)).collect();
        }
        let mut found = merged_indices(conn, ids)?;
        if found.iter().any(Option::is_none) {
            let in_tail = tail.indices_of(conn, ids)?;
            for (slot, t) in found.iter_mut().zip(in_tail) {
                if slot.is_none() {
                    *slot = t;
                }
            }
        }
        Ok(found)
    })
}

/// The statement finding `keys` ids in `entry_ids`: the ids bound into a `VALUES` list that
/// drives one primary-key lookup each (`buckets.rs`; `merged_reads_use_the_key` checks the
/// plan). One statement instead of one per id: an append checks every id of its group, and a
/// statement's bind, step and reset cost about as much as the lookup. Padding is `NULL`, which
/// matches no row.
fn merged_sql(keys: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        buckets::SIZES
            .iter()
            .map(|&k| {
                let list: Vec<String> = (1..=k).map(|j| format!("(?{j})")).collect();
                format!(
                    "SELECT e.id, e.idx FROM (VALUES {}) AS v CROSS JOIN entry_ids e \
                     WHERE e.id = v.column1",
                    list.join(",")
                )
            })
            .collect()
    });
    texts.get(buckets::slot(keys)).map_or("", String::as_str)
}

/// The indices `entry_ids` holds for `ids` (in the order asked, duplicates allowed; `None`:
/// not there).
fn merged_indices(conn: &Connection, ids: &[EntryId]) -> Result<Vec<Option<u64>>, Error> {
    let mut unique: Vec<EntryId> = ids.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let mut at_unique: Vec<Option<u64>> = vec![None; unique.len()];
    let mut start = 0;
    for (len, bucket) in buckets::pieces(unique.len()) {
        let chunk = &unique[start..start + len];
        let args: Vec<Option<&[u8]>> = (0..bucket)
            .map(|j| chunk.get(j).map(|id| id.as_bytes().as_slice()))
            .collect();
        let mut stmt = conn.prepare_cached(merged_sql(bucket))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args))?;
        while let Some(row) = rows.next()? {
            let id = super::read::id_from(row.get(0)?, "entry id")?;
            let index = index_from(row.get(1)?)?;
            if let Ok(at) = chunk.binary_search(&id) {
                at_unique[start + at] = Some(index);
            }
        }
        start += len;
    }
    Ok(ids
        .iter()
        .map(|id| unique.binary_search(id).ok().and_then(|at| at_unique[at]))
        .collect())
}

/// A version-1 or 2 store opened read-only: its unique index on `entries.id`.
fn legacy(conn: &Connection, id: &EntryId) -> Result<Option<u64>, Error> {
    let found: Option<i64> = conn
        .prepare_cached("SELECT idx FROM entries WHERE id = ?1")?
        .query_row([id.as_bytes().as_slice()], |r| r.get(0))
        .optional()?;
    found.map(index_from).transpose()
}

/// Ids ≥ `from`, ascending, at most `limit` (prefix resolution): `entry_ids` and the tail,
/// in one snapshot.
pub(super) fn ids_from(
    conn: &Connection,
    tail: &Tail,
    from: &EntryId,
    limit: usize,
) -> Result<Vec<EntryId>, Error> {
    super::values::in_read_transaction(conn, |conn| {
        let table = if tail.ids_present(conn)? {
            "entry_ids"
        } else {
            "entries"
        };
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id FROM {table} WHERE id >= ?1 ORDER BY id LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![from.as_bytes().as_slice(), to_i64(limit as u64)?],
            |r| r.get::<_, Vec<u8>>(0),
        )?;
        let mut found = rows
            .map(|r| super::read::id_from(r?, "entry id"))
            .collect::<Result<Vec<_>, Error>>()?;
        if table == "entry_ids" {
            found.extend(tail.ids_from(conn, from, limit)?);
            found.sort_unstable();
            found.dedup();
            found.truncate(limit);
        }
        Ok(found)
    })
}

/// Inside the append transaction, before the batch's rows are written: refuses an id already
/// in the log or twice in `ids` (versions 1 and 2 had the unique index refuse it; `entry_ids`
/// refuses it only at the merge, too late for the batch that brought it).
pub(super) fn refuse_present<'a>(
    tx: &Connection,
    tail: &Tail,
    ids: impl IntoIterator<Item = &'a EntryId>,
) -> Result<(), Error> {
    let ids: Vec<EntryId> = ids.into_iter().copied().collect();
    let mut seen = HashSet::with_capacity(ids.len());
    let twice = ids.iter().find(|id| !seen.insert(**id));
    let logged = match tail.locate_for_append(tx, &ids)? {
        // Only the ids the filter of merged ids cannot rule out are looked up.
        Some(located) => {
            let maybe: Vec<EntryId> = ids
                .iter()
                .zip(&located)
                .filter(|&(_, l)| *l == Located::MaybeMerged)
                .map(|(id, _)| *id)
                .collect();
            let merged = merged_indices(tx, &maybe)?;
            ids.iter()
                .zip(&located)
                .find(|&(_, l)| *l == Located::Tail)
                .map(|(id, _)| *id)
                .or_else(|| {
                    maybe
                        .iter()
                        .zip(&merged)
                        .find(|(_, at)| at.is_some())
                        .map(|(id, _)| *id)
                })
        }
        None => {
            let present = indices_in_snapshot(tx, tail, &ids)?;
            ids.iter()
                .zip(&present)
                .find(|(_, at)| at.is_some())
                .map(|(id, _)| *id)
        }
    };
    match twice.copied().or(logged) {
        Some(id) => Err(crate::error::StorageError::new(
            "sqlite",
            format!("entry {id} is already in the log"),
        )
        .into()),
        None => Ok(()),
    }
}

/// Inside the upgrade's transaction, which merges the tail below `size`: the ids of the entries
/// from `below` to `size` go into `entry_ids` in id order (a plain insert: an id already there
/// fails the append, as the unique index did).
pub(super) fn merge(tx: &Connection, below: u64, size: u64) -> Result<(), Error> {
    tx.prepare_cached(
        "INSERT INTO entry_ids (id, idx) \
         SELECT id, idx FROM entries WHERE idx >= ?1 AND idx < ?2 ORDER BY id",
    )?
    .execute(params![to_i64(below)?, to_i64(size)?])?;
    Ok(())
}

/// The error for an index row that names an entry with another id (a store edited behind the
/// program's back).
pub(super) fn mismatch(id: &EntryId, index: u64) -> Error {
    Error::integrity(
        IntegrityCheck::EntryId,
        format!("the id index names entry {index} for {id}, which has another id"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use memlineage_core::Hash256;

    fn id(n: u64) -> EntryId {
        EntryId(Hash256::of(&n.to_be_bytes()))
    }

    #[test]
    fn merged_indices_find_every_id_in_order_with_duplicates_and_chunks() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::schema::CREATE_ENTRY_IDS)
            .unwrap();
        // Even numbers are in the table, at index n / 2.
        for n in (0..600u64).step_by(2) {
            conn.execute(
                "INSERT INTO entry_ids (id, idx) VALUES (?1, ?2)",
                params![id(n).as_bytes().as_slice(), (n / 2) as i64],
            )
            .unwrap();
        }
        // 0‥299 and 7 twice more: three statements of up to 128 ids.
        let asked: Vec<EntryId> = (0..300u64).chain([7, 8, 8]).map(id).collect();
        let found = merged_indices(&conn, &asked).unwrap();
        let expected: Vec<Option<u64>> = (0..300u64)
            .chain([7, 8, 8])
            .map(|n| (n % 2 == 0).then_some(n / 2))
            .collect();
        assert_eq!(found, expected);
        assert!(merged_indices(&conn, &[]).unwrap().is_empty());
    }

    #[test]
    fn merged_reads_use_the_key() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(super::super::schema::CREATE_ENTRY_IDS)
            .unwrap();
        for keys in [buckets::SIZES[0], buckets::MAX_BUCKET] {
            let args = vec![None::<Vec<u8>>; keys];
            let plan =
                buckets::query_plan(&conn, merged_sql(keys), rusqlite::params_from_iter(args));
            assert!(
                plan.iter()
                    .any(|p| p.contains("SEARCH e USING PRIMARY KEY (id=?)")),
                "{plan:?}"
            );
            assert!(!plan.iter().any(|p| p.starts_with("SCAN e")), "{plan:?}");
        }
    }
}
