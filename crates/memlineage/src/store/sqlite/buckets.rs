//! Bucketed `VALUES` lists: reading many rows by key in one SQL statement.
//!
//! One statement per row costs a read transaction, a step and a reset each (≈ 1.2 µs, more than
//! the B-tree lookup itself). Binding the keys into a `VALUES` list joined with the table's key
//! reads them all in one statement, still one indexed lookup per key. The statement texts are
//! bucketed to [`SIZES`], the tail padded, so at most nine texts per query are prepared and
//! cached; longer lists are read [`MAX_BUCKET`] keys at a time. Used for Merkle nodes
//! (`nodes.rs`) and for entries by index or id (`entries.rs`).
//!
//! Measured on the 84 distinct nodes of a retrieval's eight proofs (4096-entry store): one
//! statement of exactly 84 keys 19.8 µs, 96 keys (12 padded) 21.1 µs, 128 keys 25.6 µs, and the
//! same 84 keys as three statements of 64, 16 and 8 keys 28.1 µs. A statement costs about as
//! much as 30 padded lookups, so the sizes grow by half at most and a list up to
//! [`MAX_BUCKET`] keys is always one statement.

/// The sizes of the prepared `VALUES` lists, smallest first: each at most 1.5 times the one
/// before, so padding stays below a third of a statement's keys.
pub(super) const SIZES: [usize; 9] = [8, 12, 16, 24, 32, 48, 64, 96, 128];

/// The largest `VALUES` list prepared (longer lists are read in chunks of it).
pub(super) const MAX_BUCKET: usize = SIZES[SIZES.len() - 1];

/// The position in [`SIZES`] of the bucket a list of `keys` keys is read with (`keys` ≤
/// [`MAX_BUCKET`]; larger lists get the largest).
pub(super) fn slot(keys: usize) -> usize {
    SIZES
        .iter()
        .position(|&s| s >= keys)
        .unwrap_or(SIZES.len() - 1)
}

/// The bucket a list of `len` distinct keys is read with (`len` ≤ [`MAX_BUCKET`]).
pub(super) fn bucket(len: usize) -> usize {
    SIZES[slot(len)]
}

/// How a list of `len` distinct keys is cut into statements: `(keys, bucket)` per statement,
/// `bucket` ≥ `keys`: chunks of [`MAX_BUCKET`], the last one padded to its bucket.
pub(super) fn pieces(mut len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    while len > 0 {
        let take = len.min(MAX_BUCKET);
        out.push((take, bucket(take)));
        len -= take;
    }
    out
}

/// The plan SQLite makes for `sql` with `args` bound, one line per step (tests that check a
/// bucketed read looks each key up by its index).
#[cfg(test)]
pub(super) fn query_plan(
    conn: &rusqlite::Connection,
    sql: &str,
    args: impl rusqlite::Params,
) -> Vec<String> {
    conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap()
        .query_map(args, |r| r.get::<_, String>(3))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_key_with_little_padding() {
        assert_eq!(pieces(0), vec![]);
        assert_eq!(pieces(3), vec![(3, 8)]);
        assert_eq!(pieces(14), vec![(14, 16)]);
        assert_eq!(pieces(81), vec![(81, 96)]);
        assert_eq!(pieces(300), vec![(128, 128), (128, 128), (44, 48)]);
        for len in 0..600 {
            let p = pieces(len);
            assert_eq!(p.iter().map(|(l, _)| l).sum::<usize>(), len);
            assert!(
                p.iter()
                    .all(|(l, b)| l <= b && (*b == 8 || 3 * (b - l) < *b))
            );
            assert!(p.iter().rev().skip(1).all(|(l, _)| *l == MAX_BUCKET));
        }
        assert_eq!(bucket(1), 8);
        assert_eq!(bucket(9), 12);
        assert_eq!(bucket(MAX_BUCKET), MAX_BUCKET);
        for (i, b) in SIZES.iter().enumerate() {
            assert_eq!(slot(*b), i);
            assert_eq!(
                slot(b + 1).min(SIZES.len() - 1),
                (i + 1).min(SIZES.len() - 1)
            );
        }
    }
}
