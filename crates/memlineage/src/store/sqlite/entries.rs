//! Reading many entries by leaf index in one SQL statement (by id: their indices first,
//! `ids.rs`).
//!
//! A retrieval of eight entries reads its eight results and the parents of each (for their
//! signed labels, about sixteen): one statement each cost a read lock, a step and a reset,
//! about a third of the reads' time. Here the keys are bound into a `VALUES` list (bucketed,
//! `buckets.rs`) that drives one lookup of the integer primary key per key
//! (`reads_use_the_keys` checks the plan) — with the same columns and joins as
//! [`BackendRead::entry_by_index`](crate::store::BackendRead), so each entry comes back exactly
//! as a single read returns it. Padding is `NULL`, which matches no row.

use super::buckets::{self, pieces};
use super::read::{ENTRY_COLUMNS, ENTRY_FROM, RawRow, row_to_entry};
use super::to_i64;
use crate::error::Error;
use crate::store::StoredEntry;
use rusqlite::{Connection, ToSql};
use std::sync::OnceLock;

/// The statement reading `keys` entries by leaf index.
fn build_sql(keys: usize) -> String {
    let mut list = String::with_capacity(keys * 6);
    for j in 1..=keys {
        if j > 1 {
            list.push(',');
        }
        list.push_str(&format!("(?{j})"));
    }
    // CROSS JOIN keeps the key list as the outer loop: one lookup per key.
    format!(
        "SELECT {ENTRY_COLUMNS} FROM (VALUES {list}) AS v CROSS JOIN {ENTRY_FROM} \
         WHERE e.idx = v.column1"
    )
}

fn by_index_sql(keys: usize) -> &'static str {
    static TEXTS: OnceLock<Vec<String>> = OnceLock::new();
    let texts = TEXTS.get_or_init(|| buckets::SIZES.iter().map(|&k| build_sql(k)).collect());
    texts.get(buckets::slot(keys)).map_or("", String::as_str)
}

/// The entries at `indices`, in the order asked (duplicates allowed).
pub(super) fn by_index(
    conn: &Connection,
    indices: &[u64],
) -> Result<Vec<Option<StoredEntry>>, Error> {
    let keys: Vec<i64> = indices
        .iter()
        .map(|i| to_i64(*i))
        .collect::<Result<_, _>>()?;
    read(conn, &keys, by_index_sql, |row, chunk| {
        chunk.binary_search(&row.index).ok()
    })
}

/// Reads the distinct `keys` a bucket at a time with the statements of `sql`; `position`
/// finds a row's key in the chunk it was read for.
fn read<K: Ord + Copy + ToSql>(
    conn: &Connection,
    keys: &[K],
    sql: fn(usize) -> &'static str,
    position: impl Fn(&RawRow, &[K]) -> Option<usize>,
) -> Result<Vec<Option<StoredEntry>>, Error> {
    let mut unique = keys.to_vec();
    unique.sort_unstable();
    unique.dedup();
    let mut found: Vec<Option<StoredEntry>> = vec![None; unique.len()];
    let mut start = 0;
    for (len, bucket) in pieces(unique.len()) {
        let chunk = &unique[start..start + len];
        let args: Vec<Option<K>> = (0..bucket).map(|j| chunk.get(j).copied()).collect();
        let mut stmt = conn.prepare_cached(sql(bucket))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        while let Some(row) = rows.next()? {
            let raw = row_to_entry(row)?;
            // The join returns only rows equal to a bound key, so this always finds it.
            if let Some(at) = position(&raw, chunk) {
                found[start + at] = Some(raw.into_entry()?);
            }
        }
        start += len;
    }
    Ok(keys
        .iter()
        .map(|k| {
            unique
                .binary_search(k)
                .ok()
                .and_then(|u| found.get(u).cloned().flatten())
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::InputError;
    use crate::store::BackendRead;
    use crate::store::sqlite::SqliteStore;
    use crate::store::sqlite::read::Reader;
    use memlineage_core::{EntryId, Hash256};
    use rusqlite::params;

    /// A connection with the store's schema and `n` rows whose leaves are not real leaves (the
    /// reads never decode them).
    fn db(n: i64) -> SqliteStore {
        let store = SqliteStore::in_memory().unwrap();
        store
            .with_writer(|c| {
                for i in 0..n {
                    let id = Hash256::of(&i.to_be_bytes());
                    c.execute(
                        "INSERT INTO entries (idx, id, leaf, scope, writer, kind, label) \
                         VALUES (?1, ?2, ?3, 's', 'w', 'observation', 'trusted')",
                        params![i, id.0.as_slice(), vec![i as u8; 3]],
                    )?;
                    if i % 3 != 0 {
                        c.execute(
                            "INSERT INTO content (idx, bytes) VALUES (?1, ?2)",
                            params![i, vec![i as u8; 2]],
                        )?;
                    }
                    if i % 4 == 1 {
                        c.execute(
                            "INSERT INTO forgotten (id, tombstone, erased) VALUES (?1, ?2, 0)",
                            params![id.0.as_slice(), Hash256::of(b"t").0.as_slice()],
                        )?;
                    }
                    if i % 5 == 2 {
                        c.execute(
                            "INSERT INTO effective (id, label) VALUES (?1, 'EXTERNAL')",
                            params![id.0.as_slice()],
                        )?;
                    }
                }
                Ok(())
            })
            .unwrap();
        store
    }

    fn same(a: &Option<StoredEntry>, b: &Option<StoredEntry>) -> bool {
        match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => {
                (
                    a.index,
                    a.id,
                    &a.leaf,
                    &a.content,
                    a.forgotten_by,
                    a.effective_label,
                ) == (
                    b.index,
                    b.id,
                    &b.leaf,
                    &b.content,
                    b.forgotten_by,
                    b.effective_label,
                )
            }
            _ => false,
        }
    }

    #[test]
    fn many_reads_equal_single_reads_in_order() {
        let store = db(300);
        store
            .with_writer(|c| {
                let tail = super::super::value_tail::Tail::default();
                let r = Reader(c, &tail, &Default::default());
                // Out of order, duplicated, missing, and longer than one bucket.
                let indices: Vec<u64> = (0..290u64)
                    .map(|k| (k * 37) % 310)
                    .chain([5, 5, 299, 300, 1 << 40])
                    .collect();
                let many = by_index(c, &indices)?;
                assert_eq!(many.len(), indices.len());
                for (i, got) in indices.iter().zip(&many) {
                    assert!(same(got, &r.entry_by_index(*i)?), "index {i}");
                }
                let ids: Vec<EntryId> = indices
                    .iter()
                    .map(|i| EntryId(Hash256::of(&(*i as i64).to_be_bytes())))
                    .collect();
                let many = r.entries_by_id(&ids)?;
                for ((id, got), i) in ids.iter().zip(&many).zip(&indices) {
                    assert!(same(got, &r.entry_by_id(id)?), "id {id}");
                    assert!(same(got, &r.entry_by_index(*i)?), "id {id}");
                }
                assert!(by_index(c, &[])?.is_empty());
                assert!(r.entries_by_id(&[])?.is_empty());
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn a_malformed_row_fails_the_read_as_a_single_read_does() {
        let store = db(10);
        store
            .with_writer(|c| {
                c.execute(
                    "UPDATE effective SET label = 'nonsense' WHERE id = ?1",
                    [Hash256::of(&2i64.to_be_bytes()).0.as_slice()],
                )?;
                let err = by_index(c, &[1, 2, 3]).unwrap_err();
                let tail = super::super::value_tail::Tail::default();
                let single = Reader(c, &tail, &Default::default())
                    .entry_by_index(2)
                    .unwrap_err();
                assert_eq!(err.to_string(), single.to_string());
                assert!(by_index(c, &[1, 3]).is_ok());
                assert!(matches!(
                    by_index(c, &[u64::MAX]),
                    Err(Error::Input(InputError::OutOfRange(_)))
                ));
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn reads_use_the_keys() {
        let store = db(1);
        store
            .with_writer(|c| {
                let by_idx = "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)";
                for (keys, sql, wanted) in [
                    (8, by_index_sql(8), by_idx),
                    (128, by_index_sql(128), by_idx),
                ] {
                    let args = vec![None::<i64>; keys];
                    let plan = buckets::query_plan(c, sql, rusqlite::params_from_iter(args));
                    assert!(plan.iter().any(|p| p.contains(wanted)), "{plan:?}");
                    assert!(!plan.iter().any(|p| p.starts_with("SCAN e")), "{plan:?}");
                }
                Ok(())
            })
            .unwrap();
    }
}
