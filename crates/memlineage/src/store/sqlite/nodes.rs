//! Reading many Merkle nodes in one SQL statement.
//!
//! A proof needs O(log n) stored nodes, and a retrieval of eight entries needs the nodes of
//! eight proofs plus the root nodes of the checkpoint (about a hundred). One statement per
//! node costs a read lock, a step and a reset each (≈ 1.2 µs, more than the B-tree lookup
//! itself). Here the ids are bound into a `VALUES` list joined with the primary key of
//! `nodes`: one statement and one read lock, still one indexed lookup per distinct node, so
//! the rows read stay O(log n) per proof (`read_many_uses_the_primary_key` checks the plan).
//!
//! The statement texts are bucketed (`buckets.rs`).

use super::buckets::{self, MAX_BUCKET, pieces};
use super::to_i64;
use crate::error::{Error, IntegrityCheck};
use memlineage_core::Hash256;
use memlineage_core::merkle::NodeId;
use rusqlite::Connection;

/// The statement for a `VALUES` list of `pairs` (level, index) pairs, built once per bucket.
fn bucket_sql(pairs: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| buckets::SIZES.iter().map(|&k| build_sql(k)).collect());
    texts.get(buckets::slot(pairs)).map_or("", String::as_str)
}

/// Builds the statement for `pairs` pairs.
fn build_sql(pairs: usize) -> String {
    let mut sql = String::with_capacity(96 + pairs * 16);
    sql.push_str("SELECT n.level, n.idx, n.hash FROM (VALUES ");
    for j in 0..pairs {
        if j > 0 {
            sql.push(',');
        }
        sql.push_str(&format!("(?{}, ?{})", 2 * j + 1, 2 * j + 2));
    }
    sql.push_str(") AS v JOIN nodes n ON n.level = v.column1 AND n.idx = v.column2");
    sql
}

use crate::store::provided::missing_node as missing;

/// The hashes of `ids`, in the order asked (duplicates allowed). A missing node, or a stored
/// hash that is not 32 bytes, is an integrity error naming the node.
pub(super) fn read_many(conn: &Connection, ids: &[NodeId]) -> Result<Vec<Hash256>, Error> {
    // Distinct ids in key order (B-tree locality), and for each asked position its distinct id.
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_unstable_by_key(|&i| ids[i]);
    let mut unique: Vec<NodeId> = Vec::with_capacity(ids.len());
    let mut slot = vec![0usize; ids.len()];
    for &i in &order {
        if unique.last() != Some(&ids[i]) {
            unique.push(ids[i]);
        }
        slot[i] = unique.len() - 1;
    }
    let mut found: Vec<Option<Hash256>> = vec![None; unique.len()];
    let mut args: Vec<i64> = Vec::with_capacity(2 * MAX_BUCKET);
    let mut start = 0;
    for (len, pairs) in pieces(unique.len()) {
        let chunk = &unique[start..start + len];
        args.clear();
        for j in 0..pairs {
            let n = chunk[j.min(len - 1)];
            args.push(i64::from(n.level));
            args.push(to_i64(n.index)?);
        }
        let mut stmt = conn.prepare_cached(bucket_sql(pairs))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        // Rows come back in `VALUES` order in practice; any other order is found by search.
        let mut next = 0;
        while let Some(row) = rows.next()? {
            let (level, index): (i64, i64) = (row.get(0)?, row.get(1)?);
            let node = match (u8::try_from(level), u64::try_from(index)) {
                (Ok(level), Ok(index)) => NodeId::new(level, index),
                _ => {
                    return Err(Error::integrity(
                        IntegrityCheck::MerkleNode,
                        format!("Merkle node row (level {level}, index {index}) is out of range"),
                    ));
                }
            };
            let at = if chunk.get(next) == Some(&node) {
                next
            } else {
                // The join returns only rows equal to a bound id, so this finds it (the
                // padding repeats the last one); a row that matched nothing is ignored.
                let Ok(at) = chunk.binary_search(&node) else {
                    continue;
                };
                at
            };
            next = at + 1;
            // A value that is not a blob reads as empty, and fails the length check below.
            let bytes = row.get_ref(2)?.as_blob().unwrap_or_default();
            let hash = Hash256::from_slice(bytes).ok_or_else(|| {
                Error::integrity(
                    IntegrityCheck::MerkleNode,
                    format!(
                        "Merkle node (level {}, index {}) is not 32 bytes",
                        node.level, node.index
                    ),
                )
            })?;
            found[start + at] = Some(hash);
        }
        start += len;
    }
    ids.iter()
        .zip(&slot)
        .map(|(n, &u)| found[u].ok_or_else(|| missing(n)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::params;

    fn db(levels: u8, per_level: u64) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, \
             PRIMARY KEY (level, idx)) WITHOUT ROWID;",
        )
        .unwrap();
        for level in 0..levels {
            for idx in 0..per_level {
                let h = Hash256::of(&[level, idx as u8]);
                conn.execute(
                    "INSERT INTO nodes (level, idx, hash) VALUES (?1, ?2, ?3)",
                    params![level, idx as i64, h.0.as_slice()],
                )
                .unwrap();
            }
        }
        conn
    }

    #[test]
    fn read_many_keeps_order_duplicates_and_chunks() {
        let conn = db(3, 100);
        // 300 ids: more than one chunk, out of order, with duplicates.
        let ids: Vec<NodeId> = (0..300u64)
            .map(|k| NodeId::new((k % 3) as u8, (k * 37) % 100))
            .chain([NodeId::new(1, 5), NodeId::new(1, 5)])
            .collect();
        let got = read_many(&conn, &ids).unwrap();
        assert_eq!(got.len(), ids.len());
        for (n, h) in ids.iter().zip(&got) {
            assert_eq!(*h, Hash256::of(&[n.level, n.index as u8]));
        }
        assert!(read_many(&conn, &[]).unwrap().is_empty());
    }

    #[test]
    fn read_many_names_a_missing_or_malformed_node() {
        let conn = db(2, 4);
        let err = read_many(&conn, &[NodeId::new(0, 1), NodeId::new(1, 9)]).unwrap_err();
        assert!(
            err.to_string().contains("(level 1, index 9) is missing"),
            "{err}"
        );
        conn.execute(
            "UPDATE nodes SET hash = x'00' WHERE level = 0 AND idx = 2",
            [],
        )
        .unwrap();
        let err = read_many(&conn, &[NodeId::new(0, 2)]).unwrap_err();
        assert!(err.to_string().contains("is not 32 bytes"), "{err}");
        let err = read_many(&conn, &[NodeId::new(0, u64::MAX)]).unwrap_err();
        assert!(matches!(err, Error::Input(_)), "{err}");
    }

    #[test]
    fn read_many_uses_the_primary_key() {
        let conn = db(1, 1);
        for pairs in [buckets::SIZES[0], MAX_BUCKET] {
            let args = vec![0i64; 2 * pairs];
            let plan: Vec<String> = conn
                .prepare(&format!("EXPLAIN QUERY PLAN {}", bucket_sql(pairs)))
                .unwrap()
                .query_map(rusqlite::params_from_iter(args), |r| r.get::<_, String>(3))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert!(
                plan.iter()
                    .any(|p| p.contains("SEARCH n USING PRIMARY KEY (level=? AND idx=?)")),
                "{plan:?}"
            );
        }
        for pairs in buckets::SIZES {
            assert_eq!(bucket_sql(pairs), build_sql(pairs));
        }
    }
}
