//! Posting blocks: a term's occurrences in up to [`BLOCK`] documents, in document order, with
//! the two facts its score bound needs (largest term frequency, shortest document).
//!
//! Postings are stored as LEB128 varints — the gap to the previous document (the first one
//! relative to [`Block::first`]), then the term frequency — so a block of a common term takes
//! about two bytes per posting, and one encoding serves memory and a store's blob alike.

/// Postings per block (as in Lucene and tantivy: large enough that headers are few, small
/// enough that a skipped block saves real work).
pub const BLOCK: usize = 128;

/// One block of a posting list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// The first document.
    pub first: u64,
    /// The last document.
    pub last: u64,
    /// Postings in the block.
    pub count: u32,
    /// The largest term frequency in the block.
    pub max_tf: u32,
    /// The shortest document (in terms) in the block, when it was added.
    pub min_len: u32,
    /// `(gap, tf)` varint pairs.
    pub bytes: Vec<u8>,
}

impl Block {
    /// A block of one posting.
    pub fn new(doc: u64, tf: u32, len: u32) -> Block {
        let mut b = Block {
            first: doc,
            last: doc,
            count: 0,
            max_tf: tf,
            min_len: len,
            bytes: Vec::with_capacity(16),
        };
        b.push_encoded(0, tf);
        b
    }

    /// Whether the block has room for another posting.
    pub fn is_full(&self) -> bool {
        self.count as usize >= BLOCK
    }

    /// Appends a posting of a document after [`Block::last`].
    pub fn push(&mut self, doc: u64, tf: u32, len: u32) {
        debug_assert!(doc > self.last);
        let gap = doc - self.last;
        self.last = doc;
        self.max_tf = self.max_tf.max(tf);
        self.min_len = self.min_len.min(len);
        self.push_encoded(gap, tf);
    }

    fn push_encoded(&mut self, gap: u64, tf: u32) {
        put_varint(&mut self.bytes, gap);
        put_varint(&mut self.bytes, u64::from(tf));
        self.count += 1;
    }

    /// Decodes the postings into `out` (cleared first) as `(document, tf)`.
    pub fn decode_into(&self, out: &mut Vec<(u64, u32)>) {
        out.clear();
        let mut at = 0usize;
        let mut doc = self.first;
        while at < self.bytes.len() {
            let (gap, n) = get_varint(&self.bytes[at..]);
            at += n;
            let (tf, n) = get_varint(&self.bytes[at..]);
            at += n;
            doc = doc.saturating_add(gap);
            out.push((doc, u32::try_from(tf).unwrap_or(u32::MAX)));
        }
    }

    /// A block of `postings` (ascending documents; at least one).
    pub fn from_postings(postings: &[(u64, u32)], len_of: impl Fn(u64) -> u32) -> Option<Block> {
        let (&(doc, tf), rest) = postings.split_first()?;
        let mut b = Block::new(doc, tf, len_of(doc));
        for &(d, tf) in rest {
            b.push(d, tf, len_of(d));
        }
        Some(b)
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A varint and its length; a truncated one ends at the end of the input.
fn get_varint(bytes: &[u8]) -> (u64, usize) {
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return (v, i + 1);
        }
    }
    (v, bytes.len().clamp(1, 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn postings_round_trip(
            first in 0u64..u64::MAX / 4,
            gaps in proptest::collection::vec((1u64..1_000_000, 1u32..100_000), 0..200),
        ) {
            let mut postings = vec![(first, 3u32)];
            for (gap, tf) in gaps {
                let doc = postings[postings.len() - 1].0 + gap;
                postings.push((doc, tf));
            }
            let b = Block::from_postings(&postings, |d| (d % 97) as u32 + 1).unwrap();
            let mut out = Vec::new();
            b.decode_into(&mut out);
            proptest::prop_assert_eq!(&out, &postings);
            proptest::prop_assert_eq!(b.count as usize, postings.len());
            proptest::prop_assert_eq!(b.max_tf, postings.iter().map(|p| p.1).max().unwrap());
            proptest::prop_assert_eq!(
                b.min_len,
                postings.iter().map(|p| (p.0 % 97) as u32 + 1).min().unwrap()
            );
            proptest::prop_assert_eq!((b.first, b.last), (first, postings[postings.len() - 1].0));
        }
    }

    #[test]
    fn truncated_varints_do_not_panic() {
        let b = Block {
            first: 1,
            last: 1,
            count: 1,
            max_tf: 1,
            min_len: 1,
            bytes: vec![0x80, 0x80],
        };
        let mut out = Vec::new();
        b.decode_into(&mut out);
        assert_eq!(out.len(), 1);
    }
}
