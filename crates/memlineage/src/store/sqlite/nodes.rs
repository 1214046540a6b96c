//! The Merkle nodes of the log: where each is stored, and reading many in one SQL statement.
//!
//! **Where.** Since schema version 4 a node's row key is its *position in append order*
//! ([`position`]), so the nodes a group commit completes — its leaves and the subtrees they
//! close, at every level — go to the end of one B-tree. Versions 1 to 3 keyed them by
//! `(level, index)`: each level its own run of the B-tree, so a commit dirtied the last leaf
//! page of about twenty runs, ≈ 20 of the ≈ 55 pages it wrote to the WAL (`docs/store.md`,
//! "Merkle nodes"). A store of those versions is moved to positions when it is opened for
//! writing ([`move_to_positions`]) and read as it is through a read-only handle.
//!
//! **Reading many.** A proof needs O(log n) stored nodes, and a retrieval of eight entries
//! needs the nodes of eight proofs plus the root nodes of the checkpoint (about a hundred). One
//! statement per node costs a read lock, a step and a reset each (≈ 1.2 µs, more than the
//! B-tree lookup itself). Here the keys are bound into a `VALUES` list joined with the table's
//! key: one statement and one read lock, still one indexed lookup per distinct node, so the
//! rows read stay O(log n) per proof (`read_many_uses_the_key` checks the plans). The
//! statement texts are bucketed (`buckets.rs`).

use super::buckets::{self, MAX_BUCKET, pieces};
use super::to_i64;
use crate::error::{Error, InputError, IntegrityCheck};
use memlineage_core::Hash256;
use memlineage_core::merkle::{NodeId, completed_by_append};
use rusqlite::{Connection, OptionalExtension, params};
use std::sync::atomic::{AtomicBool, Ordering};

use crate::store::provided::missing_node as missing;

/// The row key of `node` in `merkle_nodes`: its position in append order
/// ([`NodeId::append_position`]). An `InputError` for a node whose position is beyond `i64`.
pub(super) fn position(node: NodeId) -> Result<i64, Error> {
    node.append_position()
        .and_then(|p| i64::try_from(p).ok())
        .ok_or_else(|| InputError::OutOfRange(node.index).into())
}

/// Which key a store's nodes are found by, learned from the file and remembered by the
/// handle: once `merkle_nodes` is seen it is used for good (an upgrade never goes back).
#[derive(Default)]
pub(crate) struct NodeTable {
    by_position: AtomicBool,
}

impl NodeTable {
    /// Whether the snapshot `conn` is in keeps its nodes by position (`merkle_nodes`, version
    /// 4) rather than by level and index (`nodes`, versions 1 to 3).
    fn by_position(&self, conn: &Connection) -> Result<bool, Error> {
        if self.by_position.load(Ordering::Acquire) {
            return Ok(true);
        }
        let found: i64 = conn
            .prepare_cached(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'merkle_nodes'",
            )?
            .query_row([], |r| r.get(0))?;
        if found > 0 {
            self.by_position.store(true, Ordering::Release);
        }
        Ok(found > 0)
    }
}

/// Inserts the nodes an append completed (`merkle_nodes`, version 4).
pub(super) fn insert<'a>(
    tx: &Connection,
    nodes: impl IntoIterator<Item = (&'a NodeId, &'a Hash256)>,
) -> Result<(), Error> {
    let mut ins = tx.prepare_cached(
        "INSERT INTO merkle_nodes (pos, level, idx, hash) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (node, hash) in nodes {
        ins.execute(params![
            position(*node)?,
            node.level,
            to_i64(node.index)?,
            hash.0.as_slice()
        ])?;
    }
    Ok(())
}

/// Inside the upgrade's transaction (`upgrade` in `mod.rs`): the rows of a version-1 to 3
/// store's `nodes`, keyed by `(level, index)`, are copied as they are to `merkle_nodes` and
/// `nodes` is dropped. The nodes of the log's `size` leaves are copied in append order (leaf by
/// leaf, each leaf's completed nodes after it: each insert at the end of the new B-tree); any
/// other row — a node of a leaf past the log's end, left by entries deleted behind the
/// program's back — after them. Nothing is checked or dropped here: a missing or malformed node
/// is as missing or malformed after the move, for `verify` and the reads to name. A row whose
/// level and index name no node fails the upgrade, naming it, and the store stays as it was.
pub(super) fn move_to_positions(tx: &Connection, size: u64) -> Result<(), Error> {
    use rusqlite::types::Value;
    tx.execute_batch(super::schema::CREATE_MERKLE_NODES)?;
    let insert =
        "INSERT OR IGNORE INTO merkle_nodes (pos, level, idx, hash) VALUES (?1, ?2, ?3, ?4)";
    let mut copied: i64 = 0;
    {
        let mut old = tx.prepare("SELECT hash FROM nodes WHERE level = ?1 AND idx = ?2")?;
        let mut ins = tx.prepare(insert)?;
        for leaf in 0..size {
            for node in std::iter::once(NodeId::leaf(leaf)).chain(completed_by_append(leaf)) {
                let index = to_i64(node.index)?;
                let hash: Option<Value> = old
                    .query_row(params![node.level, index], |r| r.get(0))
                    .optional()?;
                if let Some(hash) = hash {
                    copied += i64::try_from(ins.execute(params![
                        position(node)?,
                        node.level,
                        index,
                        hash
                    ])?)
                    .unwrap_or(0);
                }
            }
        }
    }
    let rows: i64 = tx.query_row("SELECT COUNT(*) FROM nodes", [], |r| r.get(0))?;
    if copied < rows {
        let mut all = tx.prepare("SELECT level, idx, hash FROM nodes")?;
        let mut ins = tx.prepare(insert)?;
        let mut each = all.query([])?;
        while let Some(row) = each.next()? {
            let (level, index): (i64, i64) = (row.get(0)?, row.get(1)?);
            let pos = match (u8::try_from(level), u64::try_from(index)) {
                (Ok(l), Ok(i)) => position(NodeId::new(l, i)).ok(),
                _ => None,
            }
            .ok_or_else(|| {
                Error::integrity(
                    IntegrityCheck::MerkleNode,
                    format!(
                        "the Merkle node row (level {level}, index {index}) names no node, so the \
                         store cannot be upgraded; audit it read-only (`memlineage verify`)"
                    ),
                )
            })?;
            ins.execute(params![pos, level, index, row.get::<_, Value>(2)?])?;
        }
    }
    tx.execute_batch("DROP TABLE nodes;")?;
    Ok(())
}

/// The statement for a `VALUES` list of `keys` keys, built once per bucket and table.
fn bucket_sql(by_position: bool, keys: usize) -> &'static str {
    static TEXTS: std::sync::OnceLock<[Vec<String>; 2]> = std::sync::OnceLock::new();
    let texts = TEXTS.get_or_init(|| {
        [false, true].map(|p| buckets::SIZES.iter().map(|&k| build_sql(p, k)).collect())
    });
    texts[usize::from(by_position)]
        .get(buckets::slot(keys))
        .map_or("", String::as_str)
}

/// Builds the statement for `keys` keys: positions (one parameter each) joined with
/// `merkle_nodes`, or (level, index) pairs (two) joined with the older `nodes`.
fn build_sql(by_position: bool, keys: usize) -> String {
    let mut sql = String::with_capacity(96 + keys * 16);
    if by_position {
        sql.push_str("SELECT n.pos, n.level, n.idx, n.hash FROM (VALUES ");
        for j in 0..keys {
            if j > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("(?{})", j + 1));
        }
        sql.push_str(") AS v JOIN merkle_nodes n ON n.pos = v.column1");
    } else {
        sql.push_str("SELECT n.level, n.idx, n.hash FROM (VALUES ");
        for j in 0..keys {
            if j > 0 {
                sql.push(',');
            }
            sql.push_str(&format!("(?{}, ?{})", 2 * j + 1, 2 * j + 2));
        }
        sql.push_str(") AS v JOIN nodes n ON n.level = v.column1 AND n.idx = v.column2");
    }
    sql
}

/// A node's key in its table: `(position, 0)` in `merkle_nodes`, `(level, index)` in `nodes`.
fn key_of(by_position: bool, node: NodeId) -> Result<(i64, i64), Error> {
    if by_position {
        Ok((position(node)?, 0))
    } else {
        Ok((i64::from(node.level), to_i64(node.index)?))
    }
}

/// The hashes of `ids`, in the order asked (duplicates allowed), as the snapshot `conn` is in
/// holds them. A missing node, a stored hash that is not 32 bytes, or a row whose level and
/// index are not those of its position is an integrity error naming the node.
pub(super) fn read_many(
    conn: &Connection,
    table: &NodeTable,
    ids: &[NodeId],
) -> Result<Vec<Hash256>, Error> {
    let by_position = table.by_position(conn)?;
    // Distinct keys in key order (B-tree locality), and for each asked position its distinct
    // key.
    let keys = ids
        .iter()
        .map(|&n| key_of(by_position, n))
        .collect::<Result<Vec<_>, Error>>()?;
    let mut order: Vec<usize> = (0..ids.len()).collect();
    order.sort_unstable_by_key(|&i| keys[i]);
    let mut unique: Vec<((i64, i64), NodeId)> = Vec::with_capacity(ids.len());
    let mut slot = vec![0usize; ids.len()];
    for &i in &order {
        if unique.last().map(|u| u.0) != Some(keys[i]) {
            unique.push((keys[i], ids[i]));
        }
        slot[i] = unique.len() - 1;
    }
    let mut found: Vec<Option<Hash256>> = vec![None; unique.len()];
    let mut args: Vec<i64> = Vec::with_capacity(2 * MAX_BUCKET);
    let mut start = 0;
    for (len, bucket) in pieces(unique.len()) {
        let chunk = &unique[start..start + len];
        args.clear();
        for j in 0..bucket {
            let ((a, b), _) = chunk[j.min(len - 1)];
            args.push(a);
            if !by_position {
                args.push(b);
            }
        }
        let mut stmt = conn.prepare_cached(bucket_sql(by_position, bucket))?;
        let mut rows = stmt.query(rusqlite::params_from_iter(args.iter()))?;
        // Rows come back in `VALUES` order in practice; any other order is found by search.
        let mut next = 0;
        while let Some(row) = rows.next()? {
            let first = usize::from(by_position);
            let key = if by_position {
                (row.get(0)?, 0)
            } else {
                (row.get(0)?, row.get(1)?)
            };
            let at = if chunk.get(next).map(|c| c.0) == Some(key) {
                next
            } else {
                // The join returns only rows equal to a bound key, so this finds it (the
                // padding repeats the last one); a row that matched nothing is ignored.
                let Ok(at) = chunk.binary_search_by_key(&key, |c| c.0) else {
                    continue;
                };
                at
            };
            next = at + 1;
            let node = chunk[at].1;
            let (level, index): (i64, i64) = (row.get(first)?, row.get(first + 1)?);
            if (level, index) != (i64::from(node.level), to_i64(node.index)?) {
                return Err(Error::integrity(
                    IntegrityCheck::MerkleNode,
                    format!(
                        "the Merkle node row at position {} names (level {level}, index {index}), \
                         not (level {}, index {})",
                        key.0, node.level, node.index
                    ),
                ));
            }
            // A value that is not a blob reads as empty, and fails the length check below.
            let bytes = row.get_ref(first + 2)?.as_blob().unwrap_or_default();
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

    /// A table of `levels` × `per_level` nodes, in the layout of version 4 (`by_position`) or
    /// of versions 1 to 3.
    fn db(by_position: bool, levels: u8, per_level: u64) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(if by_position {
            super::super::schema::CREATE_MERKLE_NODES
        } else {
            "CREATE TABLE nodes (level INTEGER NOT NULL, idx INTEGER NOT NULL, hash BLOB NOT NULL, \
             PRIMARY KEY (level, idx)) WITHOUT ROWID;"
        })
        .unwrap();
        for level in 0..levels {
            for idx in 0..per_level {
                let h = Hash256::of(&[level, idx as u8]);
                let node = NodeId::new(level, idx);
                if by_position {
                    insert(&conn, [(&node, &h)]).unwrap();
                } else {
                    conn.execute(
                        "INSERT INTO nodes (level, idx, hash) VALUES (?1, ?2, ?3)",
                        params![level, idx as i64, h.0.as_slice()],
                    )
                    .unwrap();
                }
            }
        }
        conn
    }

    #[test]
    fn a_position_is_the_append_position_within_i64() {
        assert_eq!(position(NodeId::new(3, 0)).unwrap(), 14);
        assert_eq!(position(NodeId::new(0, 1 << 62)).unwrap(), i64::MAX);
        for far in [
            NodeId::new(0, (1 << 62) + 1),
            NodeId::new(0, u64::MAX),
            NodeId::new(64, 0),
        ] {
            assert!(matches!(position(far), Err(Error::Input(_))), "{far:?}");
        }
    }

    #[test]
    fn read_many_keeps_order_duplicates_and_chunks() {
        for by_position in [true, false] {
            let conn = db(by_position, 3, 100);
            // 300 ids: more than one chunk, out of order, with duplicates.
            let ids: Vec<NodeId> = (0..300u64)
                .map(|k| NodeId::new((k % 3) as u8, (k * 37) % 100))
                .chain([NodeId::new(1, 5), NodeId::new(1, 5)])
                .collect();
            let got = read_many(&conn, &NodeTable::default(), &ids).unwrap();
            assert_eq!(got.len(), ids.len());
            for (n, h) in ids.iter().zip(&got) {
                assert_eq!(*h, Hash256::of(&[n.level, n.index as u8]));
            }
            assert!(
                read_many(&conn, &NodeTable::default(), &[])
                    .unwrap()
                    .is_empty()
            );
        }
    }

    #[test]
    fn read_many_names_a_missing_misplaced_or_malformed_node() {
        for by_position in [true, false] {
            let table = if by_position { "merkle_nodes" } else { "nodes" };
            let conn = db(by_position, 2, 4);
            let t = NodeTable::default();
            let err = read_many(&conn, &t, &[NodeId::new(0, 1), NodeId::new(1, 9)]).unwrap_err();
            assert!(
                err.to_string().contains("(level 1, index 9) is missing"),
                "{err}"
            );
            conn.execute(
                &format!("UPDATE {table} SET hash = x'00' WHERE level = 0 AND idx = 2"),
                [],
            )
            .unwrap();
            let err = read_many(&conn, &t, &[NodeId::new(0, 2)]).unwrap_err();
            assert!(err.to_string().contains("is not 32 bytes"), "{err}");
            let err = read_many(&conn, &t, &[NodeId::new(0, u64::MAX)]).unwrap_err();
            assert!(matches!(err, Error::Input(_)), "{err}");
        }
        // A row moved to another node's position is not taken for that node.
        let conn = db(true, 1, 4);
        conn.execute_batch(
            "DELETE FROM merkle_nodes WHERE pos = 3; UPDATE merkle_nodes SET pos = 3 WHERE pos = 1;",
        )
        .unwrap();
        let err = read_many(&conn, &NodeTable::default(), &[NodeId::new(0, 2)]).unwrap_err();
        assert!(
            err.to_string()
                .contains("row at position 3 names (level 0, index 1), not (level 0, index 2)"),
            "{err}"
        );
    }

    #[test]
    fn an_older_table_of_nodes_moves_to_positions_whole_as_it_is() {
        let conn = db(false, 0, 0);
        for leaf in 0u64..37 {
            for node in std::iter::once(NodeId::leaf(leaf)).chain(completed_by_append(leaf)) {
                let hash = Hash256::of(&[node.level, node.index as u8]);
                conn.execute(
                    "INSERT INTO nodes (level, idx, hash) VALUES (?1, ?2, ?3)",
                    params![node.level, node.index as i64, hash.0.as_slice()],
                )
                .unwrap();
            }
        }
        let all: Vec<NodeId> = {
            let mut s = conn.prepare("SELECT level, idx FROM nodes").unwrap();
            s.query_map([], |r| {
                Ok(NodeId::new(r.get(0)?, r.get::<_, i64>(1)? as u64))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        let before = read_many(&conn, &NodeTable::default(), &all).unwrap();
        // Moved for a log of 30 leaves: the nodes of leaves 30‥36 are copied too, after them.
        move_to_positions(&conn, 30).unwrap();
        let t = NodeTable::default();
        assert!(t.by_position(&conn).unwrap());
        assert_eq!(read_many(&conn, &t, &all).unwrap(), before);
        let positions: Vec<i64> = conn
            .prepare("SELECT pos FROM merkle_nodes ORDER BY pos")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(positions, (0..all.len() as i64).collect::<Vec<_>>());
    }

    #[test]
    fn a_move_keeps_a_missing_or_malformed_node_as_it_is_and_refuses_a_row_naming_no_node() {
        let conn = db(false, 0, 0);
        for leaf in 0u64..8 {
            for node in std::iter::once(NodeId::leaf(leaf)).chain(completed_by_append(leaf)) {
                conn.execute(
                    "INSERT INTO nodes (level, idx, hash) VALUES (?1, ?2, ?3)",
                    params![
                        node.level,
                        node.index as i64,
                        Hash256::of(&[1]).0.as_slice()
                    ],
                )
                .unwrap();
            }
        }
        conn.execute_batch(
            "DELETE FROM nodes WHERE level = 1 AND idx = 2; \
             UPDATE nodes SET hash = 'text' WHERE level = 0 AND idx = 5; \
             INSERT INTO nodes (level, idx, hash) VALUES (300, 0, x'00');",
        )
        .unwrap();
        conn.execute_batch("BEGIN").unwrap();
        let err = move_to_positions(&conn, 9).unwrap_err();
        assert!(
            err.to_string()
                .contains("(level 300, index 0) names no node"),
            "{err}"
        );
        conn.execute_batch("ROLLBACK; DELETE FROM nodes WHERE level = 300;")
            .unwrap();
        // A log of 9 leaves whose ninth has no node: the move copies what there is.
        move_to_positions(&conn, 9).unwrap();
        let t = NodeTable::default();
        assert!(read_many(&conn, &t, &[NodeId::new(3, 0)]).is_ok());
        for (node, says) in [
            (NodeId::new(1, 2), "(level 1, index 2) is missing"),
            (NodeId::new(0, 8), "(level 0, index 8) is missing"),
            (NodeId::new(0, 5), "is not 32 bytes"),
        ] {
            let err = read_many(&conn, &t, &[node]).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn read_many_uses_the_key() {
        for (by_position, key) in [
            (true, "USING INTEGER PRIMARY KEY (rowid=?)"),
            (false, "USING PRIMARY KEY (level=? AND idx=?)"),
        ] {
            let conn = db(by_position, 1, 1);
            for keys in [buckets::SIZES[0], MAX_BUCKET] {
                let args = vec![0i64; if by_position { keys } else { 2 * keys }];
                let plan = buckets::query_plan(
                    &conn,
                    bucket_sql(by_position, keys),
                    rusqlite::params_from_iter(args),
                );
                assert!(
                    plan.iter()
                        .any(|p| p.contains("SEARCH n ") && p.contains(key)),
                    "{plan:?}"
                );
            }
            for keys in buckets::SIZES {
                assert_eq!(bucket_sql(by_position, keys), build_sql(by_position, keys));
            }
        }
    }
}
