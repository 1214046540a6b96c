//! Bucketed `VALUES` lists: reading many rows by key in one SQL statement.
//!
//! One statement per row costs a read lock, a step and a reset each (≈ 1.2 µs, more than the
//! B-tree lookup itself). Binding the keys into a `VALUES` list joined with the table's key
//! reads them all in one statement and one read lock, still one indexed lookup per key. The
//! statement texts are bucketed to powers of two between [`MIN_BUCKET`] and [`MAX_BUCKET`]
//! keys, the tail padded, so at most five texts per query are prepared and cached; longer
//! lists are read in chunks of [`MAX_BUCKET`]. Used for Merkle nodes (`nodes.rs`) and for
//! entries by index or id (`entries.rs`).

/// The smallest `VALUES` list prepared (shorter lists are padded to it).
pub(super) const MIN_BUCKET: usize = 8;
/// The largest `VALUES` list prepared (longer lists are read in chunks of it).
pub(super) const MAX_BUCKET: usize = 128;

/// The most padding lookups a statement takes rather than being split.
pub(super) const MAX_PADDING: usize = 4;

/// Every bucket size, smallest first.
pub(super) fn sizes() -> impl Iterator<Item = usize> {
    std::iter::successors(Some(MIN_BUCKET), |b| (*b < MAX_BUCKET).then_some(b * 2))
}

/// The position of the bucket of `keys` keys in [`sizes`].
pub(super) fn slot(keys: usize) -> usize {
    (keys.max(MIN_BUCKET) / MIN_BUCKET).trailing_zeros() as usize
}

/// The bucket a list of `len` distinct keys is read with (`len` ≤ [`MAX_BUCKET`]).
pub(super) fn bucket(len: usize) -> usize {
    len.next_power_of_two().clamp(MIN_BUCKET, MAX_BUCKET)
}

/// How a list of `len` distinct keys is cut into statements: `(keys, bucket)` per statement,
/// `bucket` ≥ `keys`. A statement costs about as much as a few lookups, so a piece is padded up
/// to its bucket when that adds at most [`MAX_PADDING`] lookups, and otherwise split (81 keys:
/// 64 + 17 padded to 32 would pad 15, so 64 + 16 + 1 padded to 8).
pub(super) fn pieces(mut len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    while len > 0 {
        let b = bucket(len);
        if len >= MAX_BUCKET {
            out.push((MAX_BUCKET, MAX_BUCKET));
            len -= MAX_BUCKET;
        } else if b - len <= MAX_PADDING || b == MIN_BUCKET {
            out.push((len, b));
            len = 0;
        } else {
            out.push((b / 2, b / 2));
            len -= b / 2;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cover_every_key_with_little_padding() {
        assert_eq!(pieces(0), vec![]);
        assert_eq!(pieces(3), vec![(3, 8)]);
        assert_eq!(pieces(14), vec![(14, 16)]);
        assert_eq!(pieces(81), vec![(64, 64), (16, 16), (1, 8)]);
        assert_eq!(
            pieces(300),
            vec![(128, 128), (128, 128), (32, 32), (12, 16)]
        );
        for len in 0..600 {
            let p = pieces(len);
            assert_eq!(p.iter().map(|(l, _)| l).sum::<usize>(), len);
            assert!(
                p.iter()
                    .all(|(l, b)| l <= b && b - l <= MAX_PADDING.max(MIN_BUCKET))
            );
        }
        assert_eq!(bucket(1), MIN_BUCKET);
        assert_eq!(bucket(9), 16);
        assert_eq!(bucket(MAX_BUCKET), MAX_BUCKET);
        let all: Vec<usize> = sizes().collect();
        assert_eq!(all, [8, 16, 32, 64, 128]);
        for (i, b) in all.iter().enumerate() {
            assert_eq!(slot(*b), i);
        }
    }
}
